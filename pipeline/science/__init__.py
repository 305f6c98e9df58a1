"""Pure, vectorised computations of the pipeline (units in names, no I/O)."""
