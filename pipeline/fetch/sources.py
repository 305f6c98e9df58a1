"""Every fetchable source by the name `python -m pipeline fetch SOURCE` takes."""

from __future__ import annotations

from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.fetch.source import Source
from pipeline.forecast.sources import alerts_fetch, ecmwf, gfs
from pipeline.geocoding.sources import geonames_fetch
from pipeline.webcams.fetch import source as webcams

SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        gfs.SOURCE,
        ecmwf.SOURCE,
        alerts_fetch.SOURCE,
        cams_europe.SOURCE,
        cams_global.SOURCE,
        geonames_fetch.SOURCE,
        webcams.SOURCE,
    )
}
