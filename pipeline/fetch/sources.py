"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.fetch.source import Source
from pipeline.forecast.sources import ecmwf, gfs
from pipeline.geocoding.sources import geonames_fetch

SOURCES: dict[str, Source] = {source.name: source for source in (
    gfs.SOURCE, ecmwf.SOURCE, cams_europe.SOURCE, cams_global.SOURCE, geonames_fetch.SOURCE)}
