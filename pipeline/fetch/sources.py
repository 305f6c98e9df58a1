"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.fetch.source import Source

# Filled as sources are added: "gfs", "ecmwf", "cams-europe", "cams-global", ...
SOURCES: dict[str, Source] = {}
