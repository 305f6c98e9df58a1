"""Air-quality area: CAMS runs -> point-major hourly grids."""

import contract
from pipeline.air_quality import build
from pipeline.area import Builder

BUILDER = Builder(contract.AirQuality.AREA, build.build, ("cams/europe", "cams/global"))
