"""Local stand-ins for the upstreams the fetch command follows (real HTTP servers)."""
