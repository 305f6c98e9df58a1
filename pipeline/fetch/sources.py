"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.fetch.source import Source
from pipeline.forecast.sources import ecmwf, gfs

# Filled as sources are added: "gfs", "ecmwf", "cams-europe", "cams-global", ...
SOURCES: dict[str, Source] = {source.name: source for source in (
    gfs.SOURCE, ecmwf.SOURCE, cams_europe.SOURCE, cams_global.SOURCE)}
