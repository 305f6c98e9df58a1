"""numba's compiled code: kernels more than one area runs (bilinear, json_numbers), numba's
on-disk cache and the warm-up that fills it."""
