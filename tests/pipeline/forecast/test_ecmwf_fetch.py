"""`python -m pipeline fetch ecmwf` against ECMWF open data's layout on the stand-in
(tests/support/upstreams/ecmwf.py): the newest complete run by its .index files, one byte
range per request (a list would be refused with 400), the oper and scda streams, a run with a
step missing passed over, the marker written last, dry runs, held runs and pruning."""

from __future__ import annotations

import fcntl
import json
import time

import pytest

from pipeline.forecast.sources import ecmwf, runs
from tests.support import grib
from tests.support.upstreams import ecmwf as upstream
from tests.support.upstreams.base import IgnoreRange, StandIn

pytestmark = grib.NEEDS_REAL_GFS

CYCLE_S = 6 * 3600
NEWEST = int(time.time()) // CYCLE_S * CYCLE_S
HORIZON = {"WEATHERAPI_ECMWF_HORIZON_H": "12"}  # steps 0, 3, 6, 9, 12
WANTED = {"2t", "2d", "10u", "10v", "msl", "tcc", "tp", "ptype", "10fg", "mucape"}


@pytest.fixture
def server():
    with StandIn() as stand_in:
        yield stand_in


@pytest.fixture
def fetch(tmp_path, pipeline_cli, server):
    def run(*args: str, **env: str):
        env = {
            "WEATHERAPI_ECMWF_BASE_URL": server.url + upstream.PREFIX,
            "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
            **HORIZON,
            **env,
        }
        return pipeline_cli("fetch", "ecmwf", "--datasets", tmp_path / "datasets", *args, **env)

    return run


def grib_hits(server):
    return [h for h in server.hits(prefix=upstream.PREFIX) if h.path.endswith(".grib2")]


def test_the_newest_complete_run_by_range_requests_one_range_each(tmp_path, server, fetch):
    # The newest cycle lacks its 6 h index (still being published): the one before is used.
    upstream.publish(server, tmp_path / "up", NEWEST, [0, 3, 6, 9, 12], omit_index={6})
    served = upstream.publish(server, tmp_path / "up", NEWEST - CYCLE_S, [0, 3, 6, 9, 12])
    result = fetch()
    assert result.returncode == 0, result.stderr
    run = runs.run_name(NEWEST - CYCLE_S)
    assert f"{runs.run_name(NEWEST)}: incomplete (no index for step(s) 6 h)" in result.stderr
    assert f"run {run}" in result.stderr and "saved by range requests" in result.stderr
    held = runs.read_marker(tmp_path / "datasets" / "forecast" / "ecmwf" / run)
    names = [ecmwf.file_name(NEWEST - CYCLE_S, s) for s in (0, 3, 6, 9, 12)]
    assert [f.name for f in held.files] == names
    assert all(f"-{ecmwf.stream(NEWEST - CYCLE_S)}-fc.grib2" in n for n in names)
    for name in names:
        got = grib.messages(held.folder / name)
        # Step 0: no gusts yet (a maximum since the previous step), the orography once; ecCodes
        # names the 3-hour gust 10fg3.
        gust = set() if name == names[0] else {"10fg3"}
        expected = WANTED - {"10fg"} | gust | ({"z"} if name == names[0] else set())
        assert {m["shortName"] for m in got} == expected
        # The bytes are upstream's messages, unchanged.
        assert (held.folder / name).read_bytes() == b"".join(
            data for data, param, _ in upstream.split(served / name) if param in expected
        )
    hits = grib_hits(server)
    assert hits and all(h.range and "," not in h.range and h.status == 206 for h in hits)
    assert len(hits) > 5 * 5  # padding between messages: several per file


def test_a_whole_file_for_a_range_request_is_cut_to_what_is_wanted(tmp_path, server, fetch):
    served = upstream.publish(server, tmp_path / "up", NEWEST, [0, 3, 6, 9, 12])
    name = ecmwf.file_name(NEWEST, 3)
    path = ecmwf.file_url(upstream.PREFIX, NEWEST, 3)
    server.fault(path, IgnoreRange(), always=True)
    result = fetch("--run", runs.run_name(NEWEST))
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "datasets" / "forecast" / "ecmwf" / runs.run_name(NEWEST)
    assert (folder / name).read_bytes() == (served / name).read_bytes()
    assert {h.status for h in server.hits(path)} == {200}


def test_06_and_18_utc_runs_are_the_scda_stream_to_90_hours(tmp_path, server, fetch):
    run_s = next(NEWEST - k * CYCLE_S for k in range(4) if (NEWEST - k * CYCLE_S) % 43200)
    assert ecmwf.stream(run_s) == "scda" and ecmwf.steps(run_s)[-1] == 90
    assert ecmwf.steps(run_s - CYCLE_S)[-1] == 240
    upstream.publish(server, tmp_path / "up", run_s, [0, 3, 6, 9, 12])
    result = fetch("--run", runs.run_name(run_s))
    assert result.returncode == 0, result.stderr
    paths = {h.path for h in grib_hits(server)}
    day, hour = time.strftime("%Y%m%d", time.gmtime(run_s)), time.gmtime(run_s).tm_hour
    assert paths == {
        f"{upstream.PREFIX}/{day}/{hour:02d}z/ifs/0p25/scda/{day}{hour:02d}0000-{s}h-scda-fc.grib2"
        for s in (0, 3, 6, 9, 12)
    }


def test_held_runs_are_not_fetched_again_and_dry_runs_move_nothing(tmp_path, server, fetch):
    upstream.publish(server, tmp_path / "up", NEWEST, [0, 3, 6, 9, 12])
    dry = fetch("--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert len(lines) == 5 and grib_hits(server) == []
    assert lines[1].startswith(f"GET {server.url}{ecmwf.file_url(upstream.PREFIX, NEWEST, 3)} ")
    assert "request(s), Range bytes=" in lines[1]
    assert not (tmp_path / "datasets").exists()
    assert fetch().returncode == 0
    server.clear_hits()
    again = fetch()
    assert again.returncode == 0 and "nothing new" in again.stderr
    assert grib_hits(server) == []


def test_no_complete_run_is_a_retry_later(tmp_path, server, fetch):
    upstream.publish(server, tmp_path / "up", NEWEST, [0, 3, 6, 9, 12], omit_index={12})
    result = fetch()
    assert result.returncode == 75, result.stderr
    assert "no complete ECMWF run" in result.stderr and "try again later" in result.stderr
    assert not (
        tmp_path / "datasets" / "forecast" / "ecmwf" / runs.run_name(NEWEST) / runs.MARKER
    ).exists()


def test_held_runs_and_prune(tmp_path, server, fetch):
    for k in (2, 1, 0):
        upstream.publish(server, tmp_path / "up", NEWEST - k * CYCLE_S, [0, 3, 6, 9, 12])
        assert fetch("--run", runs.run_name(NEWEST - k * CYCLE_S)).returncode == 0
    datasets = tmp_path / "datasets"
    names = [runs.run_name(NEWEST - k * CYCLE_S) for k in (2, 1, 0)]
    assert ecmwf.SOURCE.held_runs(datasets) == names
    assert ecmwf.SOURCE.prune(datasets, keep=1) == names[:2]
    assert (
        sorted(
            p.name
            for p in (datasets / "forecast" / "ecmwf").iterdir()
            if not p.name.startswith(".")
        )
        == names[2:]
    )  # .lock stays
    marker = json.loads((datasets / "forecast" / "ecmwf" / names[2] / runs.MARKER).read_text())
    assert marker["source"] == "ecmwf" and marker["run"] == names[2]


def test_the_forecast_build_reads_every_field_of_a_fetched_run(
    tmp_path, server, fetch, pipeline_cli
):
    upstream.publish(server, tmp_path / "up", NEWEST - CYCLE_S, [0, 3, 6, 9, 12])
    assert fetch().returncode == 0
    result = pipeline_cli(
        "build",
        "--datasets",
        tmp_path / "datasets",
        "--out",
        tmp_path / "out",
        "--only",
        "forecast",
        WEATHERAPI_FORECAST_MODEL="ecmwf",
    )
    assert result.returncode == 0, result.stderr
    assert "reading 1 complete ecmwf run(s)" in result.stderr
    # The reader logs the GRIB2 fields it read, by shortName (a statistic in brackets).
    [line] = [text for text in result.stderr.splitlines() if ": read " in text]
    read = {name.split(" (")[0] for name in line.split(": read ", 1)[1].split(", ")}
    assert read == {"2t", "2d", "10u", "10v", "msl", "tcc", "tp", "10fg3", "mucape", "ptype", "z"}


def test_one_fetch_at_a_time(tmp_path, server, fetch):
    lock = tmp_path / "datasets" / "forecast" / "ecmwf" / ".lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        result = fetch()
    assert result.returncode == 75 and "another fetch of ecmwf is running" in result.stderr
    assert server.hits() == []


def test_a_short_newest_run_brings_the_long_run_before_it_and_first_steps(tmp_path, server, fetch):
    # The newest complete run at 06/18 UTC is scda (90 h): the 00/12 UTC oper run before it
    # is fetched whole for the days after, and the cycle before that only for its first
    # steps (the hours before the newest run time). Horizon 12 h: steps 0-12 (history 0-6).
    scda = NEWEST if ecmwf.stream(NEWEST) == "scda" else NEWEST - CYCLE_S  # (newer: absent)
    oper, older = scda - CYCLE_S, scda - 2 * CYCLE_S
    for run_s in (scda, oper, older):
        upstream.publish(server, tmp_path / "up", run_s, [0, 3, 6, 9, 12])
    result = fetch("--run", "latest")
    assert result.returncode == 0, result.stderr
    root = tmp_path / "datasets" / "forecast" / "ecmwf"
    steps = {
        h.run: [f.name for f in h.files] for h in runs.held_runs(tmp_path / "datasets", "ecmwf")
    }
    assert steps[runs.run_name(scda)] == [ecmwf.file_name(scda, s) for s in (0, 3, 6, 9, 12)]
    assert steps[runs.run_name(oper)] == [ecmwf.file_name(oper, s) for s in (0, 3, 6, 9, 12)]
    assert steps[runs.run_name(older)] == [ecmwf.file_name(older, s) for s in (0, 3, 6)]
    assert "first steps fetched (history)" in result.stderr
    # Pruning keeps the newest, the long run it needs, and of the rest the first steps.
    assert ecmwf.SOURCE.prune(tmp_path / "datasets", keep=2) == [runs.run_name(older)]
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == sorted(
        [runs.run_name(oper), runs.run_name(scda)]
    )
    assert len(runs.read_marker(root / runs.run_name(oper)).files) == 5
