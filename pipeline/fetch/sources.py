"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.fetch.source import Source
from pipeline.forecast.sources import gfs
from pipeline.geocoding.sources import geonames_fetch

# Filled as sources are added: "gfs", "ecmwf", "cams-europe", "cams-global", ...
SOURCES: dict[str, Source] = {source.name: source for source in (gfs.SOURCE,
                                                                 geonames_fetch.SOURCE)}
