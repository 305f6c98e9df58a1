"""Request-time science of the server: pure, vectorised (numpy and the standard library only)."""
