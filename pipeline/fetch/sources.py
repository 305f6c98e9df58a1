"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.fetch.source import Source
from pipeline.forecast.sources.gfs import GfsSource

# "ecmwf", "cams-europe", "cams-global", ... join as they are written.
SOURCES: dict[str, Source] = {source.name: source for source in (GfsSource(),)}
