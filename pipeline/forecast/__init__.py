"""Forecast area: model runs and alerts -> hourly grid, alert index."""

import contract
from pipeline.area import Builder
from pipeline.forecast import build

# The model runs and the alerts are separate parts: new alerts (every few minutes) rebuild the
# alerts artifacts only, over the previous version's grids.
BUILDER = Builder(
    contract.Forecast.AREA,
    build.build,
    ("forecast", "alerts"),
    parts=(("model", ("forecast",)), ("alerts", ("alerts",))),
    update=build.update,
)
