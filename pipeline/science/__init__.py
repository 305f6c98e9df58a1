"""Pure, vectorised computations used by the pipeline's areas."""
