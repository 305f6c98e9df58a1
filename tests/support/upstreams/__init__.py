"""Local HTTP stand-ins for the upstreams the fetchers follow (see base.py)."""
