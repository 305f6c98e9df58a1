"""Reading published artifacts: the version store, memory maps, grids."""
