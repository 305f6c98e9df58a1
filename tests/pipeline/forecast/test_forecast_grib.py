"""GRIB2 model runs read directly: the real NOAA GFS file, and GFS-like runs cloned from it
(tests/support/grib.py) holding each variant of a field that real files hold, built with
`python -m pipeline build --only forecast` and read back from the artifacts."""

from __future__ import annotations

import shutil
from pathlib import Path

import eccodes
import numpy as np
import pytest

import contract
from contract import Forecast as F
from pipeline.forecast.sources import model_grib, runs
from tests.pipeline.forecast.test_forecast_build import build, column, grid
from tests.support import forecast_inputs as fi
from tests.support import grib

pytestmark = grib.NEEDS_REAL_GFS

REAL_RUN = "2011011012"
# Grid nodes of the 2.5° grid: (latitude, longitude).
NODES = [(50.0, 10.0), (-32.5, 150.0), (0.0, -177.5), (72.5, 0.0)]
# mm/h in the hour starting at each hour since the run (none in the others).
RAIN = {1: 1.0, 2: 2.0, 5: 0.5, 6: 4.0, 7: 1.0, 13: 3.0, 14: 3.0, 16: 2.0, 20: 0.25}
STEPS = list(range(13)) + [15, 18, 21, 24]  # hourly, then 3-hourly as after 120 h


def real_run(datasets: Path, data: bytes | None = None) -> runs.HeldRun:
    """The real file (or bytes made from it) as a complete run, as a fetcher holds it."""
    folder = runs.run_folder(datasets, "gfs", REAL_RUN)
    folder.mkdir(parents=True)
    target = folder / grib.REAL_GFS.name
    if data is None:
        shutil.copyfile(grib.REAL_GFS, target)
    else:
        target.write_bytes(data)
    return runs.write_marker(folder, "gfs", REAL_RUN)


def real_messages() -> list[tuple[bytes, str, str]]:
    """The real file's messages: (bytes, first field's shortName, typeOfLevel)."""
    data = grib.REAL_GFS.read_bytes()
    found, offset = [], 0
    while offset < len(data):
        assert data[offset : offset + 4] == b"GRIB"
        length = int.from_bytes(data[offset + 8 : offset + 16], "big")  # GRIB2 section 0
        message = data[offset : offset + length]
        handle = eccodes.codes_new_from_message(message)
        found.append(
            (
                message,
                eccodes.codes_get(handle, "shortName"),
                eccodes.codes_get(handle, "typeOfLevel"),
            )
        )
        eccodes.codes_release(handle)
        offset += length
    return found


def rain(valid_s: int, run_s: int):
    return lambda hour_s, la, lo: np.full(la.shape, RAIN.get((hour_s - run_s) // 3600, 0.0))


def expected_rates(steps: list[int]) -> list[float]:
    """Hourly rates as the steps resolve them: each hour of a step's interval gets its mean."""
    out = []
    for a, b in zip(steps, steps[1:]):
        out += [sum(RAIN.get(h, 0.0) for h in range(a, b)) / (b - a)] * (b - a)
    return out


def artifact(out: Path, name: str) -> np.ndarray:
    """One variable of the hourly grid at (2.5° node) 50N 10E, hour by hour."""
    spec, values = grid(contract.current_version_dir(out))
    row = int((50.0 - spec["lat0"]) / spec["dlat"])
    col = int((10.0 - spec["lon0"]) / spec["dlon"])
    return column(spec, values, name)[:, row, col]


def failure(result) -> str:
    """The one line a failed build prints."""
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


def test_the_real_gfs_file_is_read_with_its_units_and_values(tmp_path):
    held = real_run(tmp_path / "d")
    plan = model_grib.plan(held, model_grib.inventory_run(held))
    chosen = {f: (s.key, s.step_type, s.messages[0].units) for f, s in plan.series.items()}
    hag, sfc, flag = "heightAboveGround", "surface", "(Code table 4.222)"
    assert chosen == {
        "t2m": (("2t", hag), "instant", "K"),
        "r2": (("2r", hag), "instant", "%"),  # no 2d
        "u10": (("10u", hag), "instant", "m s**-1"),
        "v10": (("10v", hag), "instant", "m s**-1"),
        "msl": (("prmsl", "meanSea"), "instant", "Pa"),
        # the whole column's cloud (2011: level type 200), averaged; not a cloud layer's
        "tcc": (("tcc", "atmosphereSingleLayer"), "avg", "%"),
        "tp": (("tp", sfc), "accum", "kg m**-2"),  # so prate (avg) is not read
        "gust": (("gust", sfc), "instant", "m s**-1"),
        "cape": (("cape", sfc), "instant", "J kg**-1"),
        **{f: ((f, sfc), "avg", flag) for f in ("crain", "csnow", "cfrzr", "cicep")},
        "orog": (("orog", sfc), "instant", "m"),
    }
    # 10u and 10v are one GRIB2 message with two fields: ecCodes shows 10v only with
    # multi-field support, which the reader turns on.
    assert [plan.series[f].messages[0].label for f in ("u10", "v10")] == [
        "message 196",
        "message 196.2",
    ]
    assert [(m.start_s - m.run_s) // 3600 for m in plan.series["tp"].messages] == [114]
    # A one-file run has no total at 114 h for its 114-120 h bucket: the build refuses it
    # (next test); the other fields are read here.
    del plan.series["tp"]
    pieces = model_grib.decode(plan, tmp_path)
    independent = {
        (m["shortName"], m["typeOfLevel"]): m["values"] for m in grib.messages(grib.REAL_GFS)
    }
    si = {
        "t2m": lambda k: k - 273.15,
        "r2": lambda p: p / 100,
        "msl": lambda pa: pa / 100,
        "tcc": lambda p: p / 100,
    }
    for name, piece in pieces.items():
        values = piece.read(0, 73)[0]  # ascending rows, longitudes from -180
        raw = independent[plan.series[name].key]
        for lat, lon in NODES:
            here = values[int((lat + 90) / 2.5), int((lon + 180) / 2.5)]
            expected = si.get(name, lambda v: v)(raw[grib.REAL_GRID.index(lat, lon)])
            assert here == pytest.approx(expected, rel=1e-6, abs=1e-4), (name, lat, lon)
        # every point: the file's rows run north to south and its columns from 0°E
        whole = np.roll(raw.reshape(73, 144)[::-1], 72, axis=1)
        np.testing.assert_allclose(
            values, si.get(name, lambda v: v)(whole), rtol=1e-6, atol=1e-4, err_msg=name
        )


def test_a_build_from_the_real_file_alone_fails_naming_it(pipeline_cli, tmp_path):
    held = real_run(tmp_path / "d")
    line = failure(build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False))
    assert (
        f"{held.paths()[0]}: run 2011-01-10T12Z starts at step 120 h, not 0: its earlier "
        "files are missing" in line
    )


def test_a_run_lacking_required_fields_fails_in_one_line_naming_the_file_and_fields(
    pipeline_cli, tmp_path
):
    # The real file's bytes without its 10 m wind message (10u and 10v) and its total cloud.
    kept = [
        m
        for m, name, level in real_messages()
        if name != "10u" and (name, level) != ("tcc", "atmosphereSingleLayer")
    ]
    held = real_run(tmp_path / "d", b"".join(kept))
    line = failure(build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False))
    assert (
        f"{held.paths()[0]}: no 10u (10 m eastward wind), 10v (10 m northward wind), tcc "
        "(total cloud cover, entire atmosphere) in run 2011-01-10T12Z" in line
    )


def test_a_message_that_does_not_decode_names_the_file_and_message(pipeline_cli, tmp_path):
    messages = [m for m, _, _ in real_messages()]
    broken = messages[190][:-4] + b"7776"  # message 191 (2t) without its end
    held = real_run(tmp_path / "d", b"".join(messages[:190] + [broken] + messages[191:]))
    line = failure(build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False))
    assert f"{held.paths()[0]}: message 191 does not decode" in line


@pytest.mark.parametrize("apcp", [("total", "bucket"), ("bucket",)], ids=["both", "buckets"])
def test_apcp_totals_or_buckets_alone_give_the_hours_rain(pipeline_cli, tmp_path, apcp):
    # Today's GFS holds APCP twice (0-N h and the 6-hour bucket); the reader takes the total,
    # and a run of buckets alone adds each to the total at its start: the same hours.
    run = fi.last_run()
    grib.gfs_run(tmp_path / "d", run, STEPS, values={"precip": rain(0, run)}, variants={"tp": apcp})
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    rate = artifact(tmp_path / "out", F.PRECIP)
    np.testing.assert_allclose(rate[:24], expected_rates(STEPS), atol=2e-3)


def test_instantaneous_cloud_and_averaged_rates_are_read_when_both_are_held(pipeline_cli, tmp_path):
    # No APCP: the rate comes from PRATE. Its average over the bucket conserves the amounts
    # (its instantaneous value at the hour would not); the cloud cover at the hour is the
    # instantaneous value (the average over the bucket would lag).
    run = fi.last_run()
    cloud = lambda v, la, lo: np.full(la.shape, 10.0 + 5.0 * ((v - run) // 3600))  # noqa: E731
    fields = [f for f in grib.GFS if f != "tp"]
    grib.gfs_run(
        tmp_path / "d", run, STEPS, values={"precip": rain(0, run), "tcc": cloud}, fields=fields
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    np.testing.assert_allclose(
        artifact(tmp_path / "out", F.PRECIP)[:24], expected_rates(STEPS), atol=2e-3
    )
    np.testing.assert_allclose(
        artifact(tmp_path / "out", F.CLOUD)[:13], (10.0 + 5.0 * np.arange(13)) / 100, atol=1e-3
    )


def test_averages_alone_are_read_though_f000_lacks_them(pipeline_cli, tmp_path):
    # As in the 2011 files: cloud, rate and flags only as bucket averages, none at f000.
    run = fi.last_run()
    cloud = lambda v, la, lo: np.full(la.shape, 10.0 + 5.0 * ((v - run) // 3600))  # noqa: E731
    averaged = {f: ("avg",) for f in ("tcc", "prate") + grib.FLAGS}
    folder = grib.gfs_run(
        tmp_path / "d",
        run,
        STEPS,
        values={"precip": rain(0, run), "tcc": cloud},
        variants=averaged,
        fields=[f for f in grib.GFS if f != "tp"],
    )
    assert not [
        m
        for m in grib.messages(folder / grib.gfs_name(run, 0, grib.REAL_GRID))
        if m["shortName"] in ("tcc", "prate")
    ]
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    np.testing.assert_allclose(
        artifact(tmp_path / "out", F.PRECIP)[:24], expected_rates(STEPS), atol=2e-3
    )
    index = grib.REAL_GRID.index(50.0, 10.0)
    averages = [
        grib.value_at(folder / grib.gfs_name(run, h, grib.REAL_GRID), "tcc", index, "avg") / 100
        for h in range(1, 13)
    ]
    # Each average is taken at its bucket's end; the run's hour 0 holds the first one.
    np.testing.assert_allclose(
        artifact(tmp_path / "out", F.CLOUD)[:13], [averages[0]] + averages, atol=1e-3
    )


@pytest.mark.parametrize(
    "omit, file_hour, fields",
    [
        ({5: {"tcc"}}, 5, "tcc (total cloud cover, entire atmosphere)"),
        ({h: {"10v"} for h in STEPS}, 0, "10v (10 m northward wind)"),
        ({h: {"2d", "2r"} for h in STEPS}, 0, "2d or 2r (2 m dewpoint or 2 m relative humidity)"),
        ({12: {"tp"}}, 12, "tp (total precipitation)"),
    ],
    ids=["tcc-at-one-step", "10v", "humidity", "tp-at-one-step"],
)
def test_a_step_lacking_a_required_field_fails_naming_its_file(
    pipeline_cli, tmp_path, omit, file_hour, fields
):
    run = fi.last_run()
    folder = grib.gfs_run(tmp_path / "d", run, STEPS, omit=omit)
    line = failure(build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False))
    path = folder / grib.gfs_name(run, file_hour, grib.REAL_GRID)
    iso = np.datetime_as_string(np.datetime64(run, "s"), unit="h")
    assert f"{path}: no {fields} in run {iso}Z" in line


def test_visibility_gust_and_cape_stay_optional(pipeline_cli, tmp_path):
    run = fi.last_run()
    grib.gfs_run(
        tmp_path / "d", run, STEPS, fields=[f for f in grib.GFS if f not in ("vis", "gust", "cape")]
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    spec, _ = grid(contract.current_version_dir(tmp_path / "out"))
    assert spec["variables"] == list(F.REQUIRED)


@pytest.mark.parametrize(
    "case, problem",
    [
        ("another-run", "2t 3 h (message 1) is of run {other}, not of its folder's run {run}"),
        (
            "another-grid",
            "2t 3 h (message 1) is on another grid than 2t 0 h (message 1) of "
            "gfs.t{hh}z.pgrb2.2p50.f000; all fields must share one grid",
        ),
    ],
)
def test_a_file_of_another_run_or_grid_fails_naming_it(pipeline_cli, tmp_path, case, problem):
    run = fi.last_run()
    folder = grib.gfs_run(tmp_path / "d", run, range(4), marker=False)
    name = grib.gfs_name(run, 3, grib.REAL_GRID)
    if case == "another-run":  # the same step of the run before, under this run's name
        other = grib.gfs_run(tmp_path / "o", run - 6 * 3600, [3])
        shutil.copyfile(other / grib.gfs_name(run - 6 * 3600, 3, grib.REAL_GRID), folder / name)
    else:  # the same step on the 5° grid
        other = grib.gfs_run(tmp_path / "o", run, [3], grid=grib.Grid(5.0))
        shutil.copyfile(other / grib.gfs_name(run, 3, grib.Grid(5.0)), folder / name)
    runs.write_marker(folder, "gfs", runs.run_name(run))
    line = failure(build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False))
    iso = lambda t: np.datetime_as_string(np.datetime64(t, "s"), unit="h") + "Z"  # noqa: E731
    expected = problem.format(other=iso(run - 6 * 3600), run=iso(run), hh=f"{run // 3600 % 24:02d}")
    assert f"{folder / name}: {expected}" in line
