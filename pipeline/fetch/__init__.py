"""Following upstreams: `python -m pipeline fetch SOURCE` and the machinery every source shares."""
