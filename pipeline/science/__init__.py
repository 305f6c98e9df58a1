"""Pure, vectorised, table-driven science: no I/O, units in names."""
