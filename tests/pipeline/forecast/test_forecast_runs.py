"""Runs as the fetchers hold them (datasets/forecast/<source>/<run>/ with run.json written
last): the marker, which runs and which model the build reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

import contract
from pipeline.forecast.sources import runs
from tests.pipeline.forecast.test_forecast_build import build, column, grid
from tests.pipeline.forecast.test_forecast_grib import failure
from tests.support import forecast_inputs as fi
from tests.support import grib

pytestmark = grib.NEEDS_REAL_GFS

HOUR = 3600


def iso(unix_s: int) -> str:
    return np.datetime_as_string(np.datetime64(unix_s, "s"), unit="s") + "Z"


def build_with(pipeline_cli, datasets, out, **env):
    """`python -m pipeline build --only forecast` with environment variables."""
    return pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", "forecast", **env)


def source(out) -> dict:
    return contract.read_manifest(contract.current_version_dir(out))["areas"]["forecast"]["source"]


def test_the_marker_lists_the_files_and_a_changed_file_is_refused(tmp_path):
    folder = runs.run_folder(tmp_path, "gfs", "2026112812")
    folder.mkdir(parents=True)
    (folder / "gfs.t12z.pgrb2.0p25.f000").write_bytes(b"x" * 10)
    (folder / "gfs.t12z.pgrb2.0p25.f001").write_bytes(b"y" * 20)
    (folder / ".gfs.t12z.pgrb2.0p25.f002.part").write_bytes(b"z")
    assert runs.held_runs(tmp_path, "gfs") == []  # no marker yet: incomplete
    held = runs.write_marker(folder, "gfs", "2026112812")
    assert json.loads((folder / runs.MARKER).read_text()) == {
        "source": "gfs",
        "run": "2026112812",
        "files": [
            {"name": "gfs.t12z.pgrb2.0p25.f000", "bytes": 10},
            {"name": "gfs.t12z.pgrb2.0p25.f001", "bytes": 20},
        ],
    }
    assert runs.held_runs(tmp_path, "gfs") == [held]
    assert held.run_s == fi.last_run(held.run_s) and iso(held.run_s) == "2026-11-28T12:00:00Z"
    (folder / "gfs.t12z.pgrb2.0p25.f001").write_bytes(b"y" * 19)
    with pytest.raises(runs.RunError, match=r"f001: has 19 bytes, run.json says 20"):
        runs.read_marker(folder)


def test_only_complete_runs_are_read_and_dot_files_ignored(pipeline_cli, tmp_path):
    old = fi.last_run() - 6 * HOUR
    grib.gfs_run(tmp_path / "d", old, range(25))
    # The next run is still being fetched: files in place, one still a .part, no marker.
    folder = grib.gfs_run(tmp_path / "d", old + 6 * HOUR, range(7), marker=False)
    (folder / ".gfs.t06z.pgrb2.2p50.f007.part").write_bytes(b"GRIB partial")
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    assert [r["run_time"] for r in source(tmp_path / "out")["runs"]] == [iso(old)]


@pytest.mark.parametrize("env, model", [(None, "gfs"), ("ecmwf", "ecmwf-ifs"), ("gfs", "gfs")])
def test_one_model_is_read_when_both_are_held(pipeline_cli, tmp_path, env, model):
    run = fi.last_run()
    grib.gfs_run(tmp_path / "d", run, range(13))
    grib.ecmwf_run(tmp_path / "d", run, range(0, 13, 3))
    result = build_with(
        pipeline_cli, tmp_path / "d", tmp_path / "out", **({runs.MODEL_ENV: env} if env else {})
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert source(tmp_path / "out")["model"] == model
    chosen = "ecmwf" if env == "ecmwf" else "gfs"
    other = "gfs" if chosen == "ecmwf" else "ecmwf"
    assert f"reading 1 complete {chosen} run(s)" in result.stderr
    assert f"{other} also held, not read ({runs.MODEL_ENV} chooses)" in result.stderr


def test_a_model_asked_for_but_not_held_fails_the_build(pipeline_cli, tmp_path):
    grib.gfs_run(tmp_path / "d", fi.last_run(), range(7))
    line = failure(
        build_with(pipeline_cli, tmp_path / "d", tmp_path / "out", **{runs.MODEL_ENV: "ecmwf"})
    )
    assert (
        f"{tmp_path / 'd' / 'forecast' / 'ecmwf'}: {runs.MODEL_ENV}=ecmwf but no complete "
        "ecmwf run is held here" in line
    )


def test_an_older_run_is_read_only_until_its_successor_takes_over(pipeline_cli, tmp_path):
    new = fi.last_run()
    old = new - 6 * HOUR
    warm = lambda v, la, lo: np.full(la.shape, 283.15)  # noqa: E731  10 °C in the old run
    grib.gfs_run(tmp_path / "d", old, range(31), values={"2t": warm})
    grib.gfs_run(tmp_path / "d", new, range(25))  # 20 °C, to old + 30 h
    result = build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    assert f"run {iso(old)[:13]}Z: read up to {iso(new + 6 * HOUR)[:13]}Z" in result.stderr
    found = source(tmp_path / "out")["runs"]
    assert [(r["run_time"], r["last_hour"]) for r in found] == [
        (iso(old), iso(new + 6 * HOUR)),
        (iso(new), iso(new + 24 * HOUR)),
    ]
    spec, values = grid(contract.current_version_dir(tmp_path / "out"))
    temperature = column(spec, values, "temperature_c")[:, 5, 5]
    np.testing.assert_allclose(temperature, [10.0] * 6 + [20.0] * 25, atol=1e-3)
