"""One module per API area: choose the source, derive the served tables and indexes, write them."""
