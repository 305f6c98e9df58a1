"""Forecast area: model runs and alerts -> hourly grid, alert index."""

import contract
from pipeline.area import Builder
from pipeline.forecast import build

BUILDER = Builder(contract.Forecast.AREA, build.build, ("forecast", "alerts"))
