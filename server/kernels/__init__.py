"""numba's compiled code: its on-disk cache and the warm-up that fills it."""
