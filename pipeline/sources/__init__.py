"""One module per upstream source, each of the same shape: read, normalise, return tables."""
