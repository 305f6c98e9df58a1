"""Air-quality area: CAMS runs -> point-major hourly grids."""

import contract
from pipeline.area import Builder
from pipeline.air_quality import build

BUILDER = Builder(contract.AirQuality.AREA, build.build, ("cams/europe", "cams/global"))
