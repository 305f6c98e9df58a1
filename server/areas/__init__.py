"""One module per endpoint area."""
