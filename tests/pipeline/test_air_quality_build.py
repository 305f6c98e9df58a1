"""The air-quality build through the CLI on small real-format CAMS inputs: forecasts and
analyses stitched by precedence, a history too short for the 24-hour windows, grid coverage."""

from __future__ import annotations

import numpy as np

import contract
from contract import AirQuality as AQ
from pipeline.sources import cams
from tests.support import cams as known

RUN = 1_795_392_000                          # 2026-11-23 00 UTC
DAY_S = 86400


def built(out):
    """(version directory, air-quality manifest entry) of the published build."""
    version = contract.current_version_dir(out)
    return version, contract.read_manifest(version)["areas"][AQ.AREA]


def series_at(version, spec: dict, lat: float, lon: float, variable: str) -> np.ndarray:
    """The stored hourly series of one variable at the cell centre nearest to a point."""
    values = np.load(version / spec["file"], mmap_mode="r")
    i = round((lat - spec["lat0"]) / spec["dlat"])
    j = round((lon - spec["lon0"]) / spec["dlon"])
    return np.asarray(values[i, j, :, spec["variables"].index(variable)])


def test_an_analysis_takes_precedence_over_the_forecast_for_its_hours(tmp_path, pipeline_cli):
    datasets = known.write_known(tmp_path / "datasets", RUN)
    known.write_europe_analysis(datasets, RUN, RUN, west_pm25=33.0)
    known.write_europe_analysis(datasets, RUN - DAY_S, RUN, west_pm25=41.0)
    result = pipeline_cli("build", "--datasets", datasets, "--out", tmp_path / "out",
                          "--only", "air_quality")
    assert result.returncode == 0, result.stderr
    assert "US AQI is unknown" not in result.stderr
    version, entry = built(tmp_path / "out")
    domain = entry["source"]["domains"][AQ.EUROPE]
    assert domain["us_aqi_from"] == cams.iso(RUN)           # a day of history: complete
    assert domain["runs"] == [cams.iso(RUN), cams.iso(RUN - DAY_S)]
    assert domain["analyses"] == [cams.iso(RUN), cams.iso(RUN - DAY_S)]
    spec = entry["grids"][AQ.EUROPE]
    assert spec["time0"] == RUN                              # the newest forecast's time
    pm25 = series_at(version, spec, 45.5, 0.5, "pm25_ugm3")
    assert pm25[:24].tolist() == [33.0] * 24                 # today's analysis
    assert pm25[24:].tolist() == [known.WEST["pm25_ugm3"]] * (len(pm25) - 24)
    # yesterday's analysis (41) replaced yesterday's forecast (50) in the 24-hour history
    mean = series_at(version, spec, 45.5, 0.5, "pm25_24h_ugm3")
    assert mean[0] == np.float32((23 * 41.0 + 33.0) / 24)


def test_a_single_run_warns_and_the_manifest_names_the_first_hour_with_a_us_aqi(
        tmp_path, pipeline_cli):
    """One run gives no history: the 24-hour means need 18 of their hours, so the US AQI is
    known from the run's hour 17 (hours 0-17 are 18 hours)."""
    datasets = known.write_known(tmp_path / "datasets", RUN, days=(0,))
    result = pipeline_cli("build", "--datasets", datasets, "--out", tmp_path / "out",
                          "--only", "air_quality")
    assert result.returncode == 0, result.stderr
    _, entry = built(tmp_path / "out")
    for name in (AQ.EUROPE, AQ.GLOBAL):
        assert entry["source"]["domains"][name]["us_aqi_from"] == cams.iso(RUN + 17 * 3600)
        assert (f"{name}: the US AQI is unknown before {cams.iso(RUN + 17 * 3600)}: the runs "
                "give 0 hour(s) of history") in result.stderr
