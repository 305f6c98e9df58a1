"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.fetch.source import Source
from pipeline.forecast.sources import alerts_fetch, gfs
from pipeline.webcams.fetch import source as webcams

# Filled as sources are added: "gfs", "ecmwf", "cams-europe", "cams-global", ...
SOURCES: dict[str, Source] = {source.name: source for source in (
    gfs.SOURCE, alerts_fetch.SOURCE, webcams.SOURCE)}
