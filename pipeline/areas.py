"""Every area's builder, in the manifest's order (webcams after geocoding: it links to its
places); the build wiring iterates this one tuple."""

from __future__ import annotations

import contract
from pipeline.air_quality import BUILDER as AIR_QUALITY
from pipeline.forecast import BUILDER as FORECAST
from pipeline.geocoding import BUILDER as GEOCODING
from pipeline.webcams import BUILDER as WEBCAMS

BUILDERS = (GEOCODING, AIR_QUALITY, FORECAST, WEBCAMS)
assert tuple(builder.name for builder in BUILDERS) == contract.AREAS
