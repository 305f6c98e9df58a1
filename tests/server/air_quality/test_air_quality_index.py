"""The server's evaluation of the published AQI tables equals the pipeline's science, value for
value, on random concentrations (unknown values, table ends and huge values included)."""

from __future__ import annotations

import numpy as np
import pytest

from contract import AirQuality as AQ
from pipeline.air_quality import aqi
from server.air_quality.index import IndexTables


@pytest.mark.parametrize("variables", [AQ.EUROPE_VARIABLES, AQ.GLOBAL_VARIABLES])
def test_published_tables_evaluate_like_the_science(variables):
    rng = np.random.default_rng(11)
    tables = IndexTables(aqi.manifest_tables(), variables, ("eu", "us"))
    for rounding in (None, 1):
        scale = rng.choice([5.0, 50.0, 300.0, 3000.0], size=len(variables))
        block = np.abs(rng.normal(0.0, 1.0, (20_000, len(variables)))) * scale
        if rounding is not None:  # many values on table breakpoints
            block = np.round(block, rounding)
        block[rng.random(block.shape) < 0.01] = np.nan
        eu, us = tables.evaluate(block)
        columns = {name: block[:, i] for i, name in enumerate(variables)}
        np.testing.assert_array_equal(eu, aqi.european_aqi(columns))
        np.testing.assert_array_equal(us, aqi.us_aqi(columns))
        assert np.nanmax(us) == 500 and np.isnan(us).any()


def test_sulphur_dioxide_24h_mean_counts_only_where_the_hour_reaches_305_ppb():
    """The server's evaluation of the SO2 rule at its boundary (docs/api/air-quality.md#us-aqi)."""
    from tests.pipeline.air_quality.test_aqi import SO2_RULE

    variables = AQ.GLOBAL_VARIABLES
    column = {name: i for i, name in enumerate(variables)}
    tables = IndexTables(aqi.manifest_tables(), variables, ("eu", "us"))
    block = np.zeros((len(SO2_RULE), len(variables)))
    for row, (hour_ppb, day_ppb, _) in enumerate(SO2_RULE):
        block[row, column["so2_ugm3"]] = hour_ppb / aqi.ppb_per_ugm3("so2")
        block[row, column["so2_24h_ugm3"]] = day_ppb / aqi.ppb_per_ugm3("so2")
    _, us = tables.evaluate(block)
    assert us.tolist() == [expected for _, _, expected in SO2_RULE]


def test_a_gate_must_name_an_earlier_input():
    published = aqi.manifest_tables()
    published["us"] = [
        dict(t, only_above="no2_ugm3") if t["variable"] == "so2_24h_ugm3" else t
        for t in published["us"]
    ]
    with pytest.raises(ValueError, match="gated by no2_ugm3"):
        IndexTables(published, AQ.GLOBAL_VARIABLES, ("eu", "us"))
