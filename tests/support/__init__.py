"""Helpers shared by the tests: run the real pipeline and the real server as users do."""
