"""`python -m pipeline fetch gfs` against NOAA stand-ins (a bucket, a NOMADS) on local ports."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import re

import pytest

from pipeline.fetch.http import HttpConfig
from pipeline.fetch.pacing import RateLimit
from pipeline.fetch.source import FetchError, FetchOptions
from pipeline.forecast.sources import runs
from pipeline.forecast.sources.gfs import GfsConfig, GfsSource, file_name, recent_cycles
from tests.support import grib
from tests.support.upstreams.base import StandIn, Status
from tests.support.upstreams.noaa import NoaaLayout, file_path

pytestmark = pytest.mark.skipif(
    not grib.REAL_GFS.is_file(), reason=f"real GFS sample not present: {grib.REAL_GFS}"
)

SERVED = list(range(13))  # what the stand-ins publish per cycle
HOURS = [0, 1, 2, 3, 4, 5, 6, 9, 12]  # what the in-process source asks for
QUICK = HttpConfig(
    backoff_base_s=0.01, backoff_cap_s=0.05, read_timeout_s=5.0, attempts=3, progress=False
)
CONFIG = GfsConfig(
    horizon_h=12, hourly_until_h=6, step_h=3, fallback_url="", http=QUICK, history_cycles=0
)
NOMADS_PATH = "/pub/data/nccf/com/gfs/prod"


@pytest.fixture(autouse=True)
def operator_contact(monkeypatch):
    monkeypatch.setenv("WEATHERAPI_OPERATOR_CONTACT", "ops@example.org")


@pytest.fixture
def cycles():
    """The three newest cycles, newest first (the source's clock is the real one)."""
    return recent_cycles(dt.datetime.now(dt.timezone.utc), 3)


@pytest.fixture
def bucket(cycles):
    """The bucket: the newest cycle still being written (its last two hours 404), the two
    before it complete."""
    with StandIn() as server:
        noaa = NoaaLayout(server)
        noaa.add_run(cycles[0], SERVED, missing=(11, 12))
        noaa.add_run(cycles[1], SERVED)
        noaa.add_run(cycles[2], SERVED)
        server.clear_hits()
        yield noaa


def fetch(noaa: NoaaLayout, datasets, config: GfsConfig = CONFIG, **options):
    source = GfsSource(config)
    return asyncio.run(source.fetch(FetchOptions(datasets=datasets, base_url=noaa.url, **options)))


def name(cycle: dt.datetime) -> str:
    return f"{cycle:%Y%m%d%H}"


def contents(path) -> list[tuple[str, str, str]]:
    """(shortName, typeOfLevel, stepRange) of every message, decoded with ecCodes."""
    import eccodes

    out = []
    with open(path, "rb") as handle:
        while (gid := eccodes.codes_grib_new_from_file(handle)) is not None:
            out.append(
                tuple(
                    eccodes.codes_get(gid, k, ktype=str)
                    for k in ("shortName", "typeOfLevel", "stepRange")
                )
            )
            eccodes.codes_get_values(gid)
            eccodes.codes_release(gid)
    return out


def everything(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_latest_skips_the_cycle_being_written_and_takes_only_the_selection(
    bucket, cycles, tmp_path
):
    report = fetch(bucket, tmp_path)
    assert report.run == name(cycles[1]) and report.changed and report.files == len(HOURS)
    assert any(f"{name(cycles[0])}: incomplete" in note for note in report.notes)
    run_dir = tmp_path / "forecast" / "gfs" / name(cycles[1])
    marker = json.loads((run_dir / "run.json").read_text())
    assert marker["source"] == "gfs" and marker["run"] == name(cycles[1])
    assert [f["name"] for f in marker["files"]] == [file_name(cycles[1], h) for h in HOURS]
    assert all((run_dir / f["name"]).stat().st_size == f["bytes"] for f in marker["files"])
    assert [held.run for held in runs.held_runs(tmp_path, "gfs")] == [name(cycles[1])]
    assert not any(p.name.endswith(".part") for p in tmp_path.rglob("*"))
    # Nothing of the incomplete cycle was read but the probe of its last hour's .idx.
    newest = bucket.server.hits(prefix=f"/gfs.{cycles[0]:%Y%m%d}/{cycles[0]:%H}/")
    assert [(h.method, h.path.rsplit(".", 1)[-1]) for h in newest] == [("HEAD", "idx")]
    f000 = contents(run_dir / file_name(cycles[1], 0))
    f007 = contents(run_dir / file_name(cycles[1], 9))
    assert len(f000) == 15 and not any(short == "tp" for short, _, _ in f000)
    assert ("orog", "surface", "0") in f000 and not any(s == "orog" for s, _, _ in f007)
    assert len(f007) == 15 and ("tp", "surface", "0-9") in f007  # the running total
    assert ("crain", "surface", "9") in f007 and ("tcc", "atmosphere", "9") in f007
    assert {step for _, _, step in f007} == {"9", "0-9"}  # no bucket, no average


def test_range_requests_move_a_fraction_of_the_whole_files(bucket, cycles, tmp_path):
    config = dataclasses.replace(CONFIG, http=dataclasses.replace(QUICK, merge_gap=0))
    report = fetch(bucket, tmp_path, config)
    hits = bucket.server.hits()
    grib = [h for h in hits if h.method == "GET" and not h.path.endswith(".idx")]
    idx_bytes = sum(h.sent for h in hits if h.path.endswith(".idx"))
    run_dir = tmp_path / "forecast" / "gfs" / name(cycles[1])
    subset = sum((run_dir / file_name(cycles[1], h)).stat().st_size for h in HOURS)
    whole = bucket.whole_bytes(cycles[1], HOURS)
    assert report.bytes == bucket.server.bytes_sent() == subset + idx_bytes
    assert report.bytes_whole == whole and subset < 0.08 * whole  # 15 of ~205 messages
    assert all(h.range and "," not in h.range and h.status == 206 for h in grib)
    # Without gap merging adjacent messages still share a request: 15 messages in 10
    # requests per file (each flag's average and the 6-hour APCP bucket sit between them),
    # 15 in 6 at f000 (no averages there; HGT, the surface height, only there).
    assert len(grib) == 6 + 10 * (len(HOURS) - 1)


def test_dry_run_reads_inventories_and_moves_nothing_else(bucket, cycles, tmp_path):
    report = fetch(bucket, tmp_path, dry_run=True)
    assert report.run == name(cycles[1]) and report.files == len(HOURS)
    assert len(report.planned) == len(HOURS) and "messages in" in report.planned[0]
    gets = [h for h in bucket.server.hits() if h.method == "GET"]
    assert gets and all(h.path.endswith(".idx") for h in gets)
    assert everything(tmp_path) == []


def test_a_second_fetch_moves_nothing(bucket, cycles, tmp_path):
    fetch(bucket, tmp_path)
    before = everything(tmp_path)
    bucket.server.clear_hits()
    report = fetch(bucket, tmp_path)
    assert report.run == name(cycles[1]) and not report.changed and report.files == 0
    assert all(h.method == "HEAD" for h in bucket.server.hits()) and report.bytes == 0
    assert everything(tmp_path) == before


def test_an_interrupted_run_is_finished_by_the_next_fetch(bucket, cycles, tmp_path):
    broken = file_path(cycles[1], 4)
    bucket.server.fault(broken, Status(503), always=True)
    with pytest.raises(FetchError) as failure:
        fetch(bucket, tmp_path)
    assert failure.value.retry_later
    run_dir = tmp_path / "forecast" / "gfs" / name(cycles[1])
    assert not (run_dir / "run.json").exists() and runs.held_runs(tmp_path, "gfs") == []
    assert not (run_dir / file_name(cycles[1], 4)).exists()
    assert not any(p.name.endswith(".part") for p in tmp_path.rglob("*"))
    bucket.server.fault(broken, always=True)  # healthy again
    bucket.server.clear_hits()
    report = fetch(bucket, tmp_path)
    grib = {
        h.path for h in bucket.server.hits() if h.method == "GET" and not h.path.endswith(".idx")
    }
    assert grib == {broken} and report.files == 1 and (run_dir / "run.json").exists()


def test_nomads_is_used_only_for_a_run_the_bucket_lacks_and_paced(cycles, tmp_path):
    per_s, burst = 20.0, 3
    with StandIn() as bucket_server, StandIn() as nomads_server:
        bucket = NoaaLayout(bucket_server)
        nomads = NoaaLayout(nomads_server, NOMADS_PATH)
        bucket.add_run(cycles[0], SERVED, missing=(12,))
        bucket.add_run(cycles[1], SERVED, missing=(12,))  # not all on the bucket yet
        nomads.add_run(cycles[1], SERVED)
        config = dataclasses.replace(
            CONFIG, fallback_url=nomads.url, fallback_limit=RateLimit(per_s * 60, burst)
        )
        report = fetch(bucket, tmp_path, config)
        assert report.run == name(cycles[1])
        assert any("fetched from" in note and NOMADS_PATH in note for note in report.notes)
        assert not [h for h in bucket_server.hits() if h.method == "GET"]
        times = [h.t for h in nomads_server.hits()]
        assert len(times) > 20
        for k, t in enumerate(times):
            assert t - times[0] >= (k - burst) / per_s  # one token of slack: arrival jitter
        # With the run complete on the bucket, NOMADS is not asked at all.
        bucket.add_run(cycles[2], SERVED)
        nomads_server.clear_hits()
        fetch(bucket, tmp_path / "again", config, run=name(cycles[2]))
        assert nomads_server.hits() == []


def test_an_explicit_run(bucket, cycles, tmp_path):
    report = fetch(bucket, tmp_path, run=name(cycles[2]))
    assert report.run == name(cycles[2]) and report.files == len(HOURS)
    with pytest.raises(FetchError) as failure:
        fetch(bucket, tmp_path, run=name(cycles[0]))
    assert failure.value.retry_later and "not complete" in str(failure.value)
    with pytest.raises(FetchError) as failure:
        fetch(bucket, tmp_path, run="2026112813")
    assert "00, 06, 12 and 18" in str(failure.value)


def test_prune_keeps_the_newest_and_never_a_run_being_written(bucket, cycles, tmp_path):
    fetch(bucket, tmp_path, run=name(cycles[2]))
    fetch(bucket, tmp_path, run=name(cycles[1]))
    folder = tmp_path / "forecast" / "gfs"
    being_written = folder / name(cycles[0])
    being_written.mkdir()
    (being_written / file_name(cycles[0], 0)).write_bytes(b"GRIB")
    source = GfsSource(CONFIG)
    assert source.held_runs(tmp_path) == [name(cycles[2]), name(cycles[1])]
    assert source.prune(tmp_path, keep=1) == [name(cycles[2])]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [".lock", name(cycles[0]), name(cycles[1])]
    )
    assert source.prune(tmp_path, keep=0) == [name(cycles[1])]
    assert being_written.is_dir()


def test_the_first_hours_of_earlier_cycles_cover_this_morning(bucket, cycles, tmp_path):
    # A fresh install holds only the newest run: the cycle before it gives the hours before
    # its run time (its first 6), once; the one before that is not published here (a note).
    config = dataclasses.replace(CONFIG, history_cycles=2)
    report = fetch(bucket, tmp_path, config)
    assert report.run == name(cycles[1])
    assert report.files == len(HOURS) + 7 and report.changed
    held = runs.held_runs(tmp_path, "gfs")
    assert [h.run for h in held] == [name(cycles[2]), name(cycles[1])]
    assert [f.name for f in held[0].files] == [file_name(cycles[2], h) for h in range(7)]
    older = name(cycles[1] - dt.timedelta(hours=12))
    assert any(f"{older}: its first hours are not available" in n for n in report.notes)
    again = fetch(bucket, tmp_path, config)
    assert again.files == 0 and not again.changed
    # Pruning keeps the newest whole and of the others only what the reader reads of them.
    fetch(bucket, tmp_path, config, run=name(cycles[2]))  # now held whole
    assert len(runs.held_runs(tmp_path, "gfs")[0].files) == len(HOURS)
    GfsSource(config).prune(tmp_path, keep=2)
    first, newest = runs.held_runs(tmp_path, "gfs")
    assert [f.name for f in first.files] == [file_name(cycles[2], h) for h in range(7)]
    assert sorted(p.name for p in first.folder.iterdir()) == sorted(
        ["run.json", *(file_name(cycles[2], h) for h in range(7))]
    )
    assert len(newest.files) == len(HOURS)


# ---- the command line --------------------------------------------------------------------

CLI_ENV = {
    "WEATHERAPI_GFS_HORIZON_H": "12",
    "WEATHERAPI_GFS_FALLBACK_URL": "",
    "WEATHERAPI_GFS_HISTORY_CYCLES": "0",
    "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
}
SUMMARY = re.compile(
    r"^gfs: fetched (\d+) file\(s\), ([\d,]+) bytes in [\d.]+ s "
    r"\(([\d,]+) bytes saved by range requests\); run (\d{10})$",
    re.M,
)


def test_cli_fetches_then_has_nothing_new(bucket, cycles, tmp_path, pipeline_cli):
    args = ("fetch", "gfs", "--datasets", tmp_path, "--base-url", bucket.url)
    done = pipeline_cli(*args, **CLI_ENV)
    assert done.returncode == 0, done.stderr
    summary = SUMMARY.search(done.stderr)
    assert summary and summary[1] == "13" and summary[4] == name(cycles[1])
    moved, saved = int(summary[2].replace(",", "")), int(summary[3].replace(",", ""))
    whole = bucket.whole_bytes(cycles[1], SERVED)
    assert moved == bucket.server.bytes_sent() and moved + saved == whole
    assert moved < 0.25 * whole  # gaps under 256 KiB come along at 2.5°: see the figures
    again = pipeline_cli(*args, **CLI_ENV)
    assert again.returncode == 0 and again.stderr.rstrip().endswith("; nothing new")
    dry = pipeline_cli(*args, "--dry-run", "--run", name(cycles[2]), **CLI_ENV)
    assert dry.returncode == 0 and len(dry.stdout.splitlines()) == 13
    assert "gfs: would fetch 13 file(s)" in dry.stderr
    assert not (tmp_path / "forecast" / "gfs" / name(cycles[2])).exists()


def test_cli_exit_75_when_no_run_is_complete_yet(cycles, tmp_path, pipeline_cli):
    with StandIn() as server:
        noaa = NoaaLayout(server)
        noaa.add_run(cycles[0], SERVED, missing=(12,))
        done = pipeline_cli(
            "fetch", "gfs", "--datasets", tmp_path, "--base-url", noaa.url, **CLI_ENV
        )
    assert done.returncode == 75, done.stderr
    assert "error: fetch gfs failed: no complete GFS run" in done.stderr


def test_cli_exit_1_when_upstream_refuses(bucket, cycles, tmp_path, pipeline_cli):
    bucket.server.fault(file_path(cycles[1], 3), Status(403), always=True)
    done = pipeline_cli("fetch", "gfs", "--datasets", tmp_path, "--base-url", bucket.url, **CLI_ENV)
    assert done.returncode == 1, done.stderr
    assert "HTTP 403" in done.stderr
    assert not (tmp_path / "forecast" / "gfs" / name(cycles[1]) / "run.json").exists()
