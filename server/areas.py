"""Every endpoint area, in the manifest's order: app.py, the OpenAPI document and the warm-up
iterate this one tuple."""

from __future__ import annotations

import contract
from server.air_quality import AREA as AIR_QUALITY
from server.area import Loader
from server.forecast import AREA as FORECAST
from server.geocoding import AREA as GEOCODING
from server.webcams import AREA as WEBCAMS

AREAS = (GEOCODING, AIR_QUALITY, FORECAST, WEBCAMS)
assert tuple(area.name for area in AREAS) == contract.AREAS


def loaders() -> dict[str, Loader[object]]:
    """area name -> its loader, as the store takes them."""
    return {area.name: area.load for area in AREAS}
