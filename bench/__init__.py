"""Benchmark harness: `python -m bench.run` (see bench/run.py)."""
