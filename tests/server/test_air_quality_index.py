"""The server's evaluation of the published AQI tables equals the pipeline's science, value for
value, on random concentrations (unknown values, table ends and huge values included)."""

from __future__ import annotations

import numpy as np
import pytest

from contract import AirQuality as AQ
from pipeline.science import aqi
from server.areas.air_quality_index import IndexTables


@pytest.mark.parametrize("variables", [AQ.EUROPE_VARIABLES, AQ.GLOBAL_VARIABLES])
def test_published_tables_evaluate_like_the_science(variables):
    rng = np.random.default_rng(11)
    tables = IndexTables(aqi.manifest_tables(), variables, ("eu", "us"))
    for rounding in (None, 1):
        scale = rng.choice([5.0, 50.0, 300.0, 3000.0], size=len(variables))
        block = np.abs(rng.normal(0.0, 1.0, (20_000, len(variables)))) * scale
        if rounding is not None:          # many values on table breakpoints
            block = np.round(block, rounding)
        block[rng.random(block.shape) < 0.01] = np.nan
        eu, us = tables.evaluate(block)
        columns = {name: block[:, i] for i, name in enumerate(variables)}
        np.testing.assert_array_equal(eu, aqi.european_aqi(columns))
        np.testing.assert_array_equal(us, aqi.us_aqi(columns))
        assert np.nanmax(us) == 500 and np.isnan(us).any()
