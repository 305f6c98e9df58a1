"""`python -m pipeline fetch cams-europe|cams-global` with the real cdsapi client against the
Atmosphere Data Store stand-in (tests/support/upstreams/ads.py): the requests sent, a queue,
runs not published yet, a licence not accepted, keys refused or missing, a download broken off,
corrupt deliveries, a bounded wait resumed, dry runs, held runs and pruning."""

from __future__ import annotations

import fcntl
import json
import re
import time
from pathlib import Path

import pytest

from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.air_quality.sources.cams_fetch import stamp
from pipeline.fetch import ads as ads_client
from tests.support.upstreams.ads import EUROPE, GLOBAL, AdsStandIn, Running

TOKEN = "a1b2c3d4-test-token-5e6f"  # distinctive: no output may contain it
DAY_S = 86400
TODAY = int(time.time() // DAY_S * DAY_S)
YESTERDAY = TODAY - DAY_S


def day(unix_s: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(unix_s))


@pytest.fixture
def ads(tmp_path):
    """A fresh stand-in that takes TOKEN."""
    (tmp_path / "ads").mkdir()
    with Running(AdsStandIn(tmp_path / "ads", tokens={TOKEN})) as stand_in:
        yield stand_in


@pytest.fixture
def fetch(tmp_path, pipeline_cli, ads):
    """Run the fetch command against the stand-in, with no ~/.cdsapirc of the runner's."""

    def run(source: str, *args: str, key: str | None = TOKEN, **env: str):
        env = {
            "WEATHERAPI_CAMS_BASE_URL": ads.url,
            "WEATHERAPI_CAMS_POLL_S": "0.02",
            "CDSAPI_RC": str(tmp_path / "no-cdsapirc"),
            "CDSAPI_KEY": key or "",
            "CDSAPI_URL": "",
            **env,
        }
        result = pipeline_cli("fetch", source, "--datasets", tmp_path / "datasets", *args, **env)
        assert TOKEN not in result.stdout + result.stderr
        return result

    return run


def europe_files(tmp_path: Path) -> list[str]:
    folder = tmp_path / "datasets" / "cams" / "europe"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_queued_then_successful_lands_the_day_s_runs_and_asks_nothing_twice(tmp_path, ads, fetch):
    ads.queue_polls, ads.run_polls = 3, 2
    result = fetch("cams-europe")
    assert result.returncode == 0, result.stderr
    assert "status has been updated to accepted" in result.stderr
    assert europe_files(tmp_path) == [
        f"cams-europe-analysis-{stamp(YESTERDAY)}.nc",
        f"cams-europe-forecast-{stamp(YESTERDAY)}.nc",
        f"cams-europe-forecast-{stamp(TODAY)}.nc",
    ]
    assert f"run {stamp(TODAY)}" in result.stderr
    # Exactly what the reader reads: every variable at the surface, 0-96 h, yesterday's analysis.
    sent = ads.submissions(EUROPE)
    assert [(s["type"], s["date"]) for s in sent] == [
        (["forecast"], [f"{day(YESTERDAY)}/{day(YESTERDAY)}"]),
        (["analysis"], [f"{day(YESTERDAY)}/{day(YESTERDAY)}"]),
        (["forecast"], [f"{day(TODAY)}/{day(TODAY)}"]),
    ]
    for request in sent:
        assert request["variable"] == [cams_europe.REQUEST_NAMES[v] for v in cams_europe.VARIABLES]
        assert request["level"] == ["0"] and request["model"] == ["ensemble"]
        assert request["data_format"] == "netcdf_zip"
    assert sent[0]["leadtime_hour"] == [str(h) for h in range(97)]
    assert sent[0]["time"] == ["00:00"]
    assert sent[1]["leadtime_hour"] == ["0"] and len(sent[1]["time"]) == 24
    polls = [r for r in ads.requests if r[1].endswith("?log=True&request=True")]
    assert len(polls) >= 3 * 6
    # Idempotent: the runs held are not requested again.
    again = fetch("cams-europe", key=None)  # nothing to ask: no key needed
    assert again.returncode == 0 and "nothing new" in again.stderr
    assert len(ads.submissions()) == 3


def test_global_requests_surface_hourly_and_model_level_137_three_hourly(tmp_path, ads, fetch):
    result = fetch("cams-global")
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "datasets" / "cams" / "global"
    assert sorted(p.name for p in folder.iterdir()) == [
        f"cams-global-{stamp(d)}-{part}.nc" for d in (YESTERDAY, TODAY) for part in ("ml", "sfc")
    ]
    surface, model_level = ads.submissions(GLOBAL)[:2]
    assert surface["variable"] == [
        "particulate_matter_2.5um",
        "particulate_matter_10um",
        "dust_aerosol_optical_depth_550nm",
    ]
    assert surface["leadtime_hour"] == [str(h) for h in range(121)]
    assert "model_level" not in surface
    assert model_level["variable"] == [
        "ozone",
        "nitrogen_dioxide",
        "sulphur_dioxide",
        "carbon_monoxide",
    ]
    assert model_level["model_level"] == ["137"]
    assert model_level["leadtime_hour"] == [str(h) for h in range(0, 121, 3)]
    assert cams_global.SOURCE.held_runs(tmp_path / "datasets") == [stamp(YESTERDAY), stamp(TODAY)]


def test_a_run_not_yet_published_is_a_retry_later_and_what_is_out_lands(tmp_path, ads, fetch):
    ads.unpublished = {(EUROPE, "forecast", day(TODAY))}
    result = fetch("cams-europe")
    assert result.returncode == 75, result.stderr
    assert errors(result) == [
        f"error: fetch cams-europe failed: CAMS Europe forecast of "
        f"{day(TODAY)} is not published on the ADS yet (No data found "
        "for this request)"
    ]
    assert europe_files(tmp_path) == [
        f"cams-europe-analysis-{stamp(YESTERDAY)}.nc",
        f"cams-europe-forecast-{stamp(YESTERDAY)}.nc",
    ]
    # Published later: only the missing run is asked for.
    ads.unpublished = set()
    assert fetch("cams-europe").returncode == 0
    assert len(ads.submissions()) == 4


def test_an_analysis_not_yet_published_is_only_a_note(tmp_path, ads, fetch):
    ads.unpublished = {(EUROPE, "analysis", day(YESTERDAY))}
    result = fetch("cams-europe")
    assert result.returncode == 0, result.stderr
    assert (
        f"cams-europe: CAMS Europe analysis of {day(YESTERDAY)} is not published" in result.stderr
    )
    assert not errors(result)
    assert len(europe_files(tmp_path)) == 2


def test_a_licence_not_accepted_is_one_line_saying_where_to_accept_it(tmp_path, ads, fetch):
    ads.licences_accepted = {GLOBAL}
    result = fetch("cams-europe")
    assert result.returncode == 1
    site = ads.url.removesuffix("/api")
    assert errors(result) == [
        f"error: fetch cams-europe failed: accept the licence of {EUROPE} at {site}/datasets/"
        f"{EUROPE}?tab=download#manage-licences (logged in as the key's owner), then fetch again"
    ]
    assert result.stderr.count("\n") < 10 and "Traceback" not in result.stderr
    assert europe_files(tmp_path) == []


@pytest.mark.parametrize(
    "key, expected",
    [
        (
            "wrong-token",
            "the ADS key was refused (Authentication failed): check CDSAPI_KEY or the "
            "key in ~/.cdsapirc",
        ),
        (None, "no ADS key: set CDSAPI_KEY or write 'key: <your token>' into"),
        ("12345:abcdef", "the ADS key has the old UID:KEY form"),
    ],
)
def test_a_key_refused_or_missing_is_one_line(tmp_path, ads, fetch, key, expected):
    result = fetch("cams-global", key=key)
    assert result.returncode == 1
    assert len(errors(result)) == 1 and expected in errors(result)[0], result.stderr
    assert (key or TOKEN) not in result.stdout + result.stderr
    assert not (tmp_path / "datasets" / "cams" / "global").exists()


def test_the_key_comes_from_the_cdsapirc_and_the_url_from_the_environment(tmp_path, ads, fetch):
    rc = tmp_path / "cdsapirc"
    rc.write_text(f"url: http://127.0.0.1:9/unused\nkey: {TOKEN}\n")
    result = fetch("cams-global", key=None, CDSAPI_RC=str(rc), CDSAPI_URL="http://127.0.0.1:9")
    assert result.returncode == 0, result.stderr  # WEATHERAPI_CAMS_BASE_URL comes first


def test_a_download_broken_off_mid_body_is_resumed(tmp_path, ads, fetch):
    ads.drop_after = 3_000_000  # of some 7 MB
    result = fetch("cams-europe", "--run", stamp(YESTERDAY))
    assert result.returncode == 0, result.stderr
    assert "Recovering from connection error" in result.stderr
    downloads = [r for r in ads.requests if r[0] == "GET" and r[1].startswith("/download/")]
    assert downloads[0][1] == downloads[1][1] and downloads[0][2] == ""
    # Resumed from what was written (cdsapi writes whole 1 MiB chunks: 2 of them here).
    assert downloads[1][2] == f"bytes={2 * 2**20}-"
    assert len(europe_files(tmp_path)) == 3


@pytest.mark.parametrize(
    "corrupt, says",
    [
        ("zip", "the delivered zip is corrupt"),
        ("netcdf", "the delivery is not usable"),
        ("html", "the delivery is neither a zip nor a NetCDF file"),
    ],
)
def test_a_corrupt_delivery_never_lands(tmp_path, ads, fetch, corrupt, says):
    ads.corrupt = corrupt
    result = fetch("cams-europe")
    assert result.returncode == 1
    assert len(errors(result)) == 1 and says in errors(result)[0], result.stderr
    assert not (tmp_path / "datasets" / "cams" / "europe").exists()
    work = tmp_path / "datasets" / "cams" / ".fetch"
    assert not [p for p in work.rglob("*") if p.suffix in (".nc", ".delivery")]


def test_a_long_queue_is_a_bounded_wait_and_the_next_fetch_resumes_the_job(tmp_path, ads, fetch):
    ads.queue_polls = 10**6
    result = fetch("cams-global", WEATHERAPI_CAMS_MAX_WAIT_S="0.3")
    assert result.returncode == 75
    [line] = errors(result)
    job = re.search(r"resumes request (\S+)$", line).group(1)
    assert "still 'accepted' on the ADS" in line
    assert [j.id for j in ads.jobs.values()] == [job]
    ads.queue_polls = 0
    result = fetch("cams-global")
    assert result.returncode == 0, result.stderr
    assert f"resuming ADS request {job}" in result.stderr
    assert len(ads.submissions()) == 4  # the first job was not asked again


@pytest.mark.parametrize(
    "failure, code, says",
    [
        ("The regional forecast backend is under maintenance", 75, "try again later"),
        (
            "Adaptor error: unexpected field",
            1,
            "the ADS job failed: Adaptor error: unexpected field",
        ),
    ],
)
def test_a_failed_job_says_why(ads, fetch, failure, code, says):
    ads.job_failure = failure
    result = fetch("cams-europe")
    assert result.returncode == code
    assert len(errors(result)) == 1 and says in errors(result)[0], result.stderr


def test_a_busy_or_unreachable_ads_is_a_retry_later(ads, fetch):
    ads.busy = 503
    result = fetch("cams-global")
    assert result.returncode == 75
    assert errors(result) == [
        "error: fetch cams-global failed: CAMS global forecast of "
        f"{day(YESTERDAY)} 00 UTC: the ADS answers 503 service "
        "unavailable; try again later"
    ]
    asked = [r for r in ads.requests if "/retrieve/v1/processes/" in r[1]]
    assert len(asked) == 5  # cdsapi's own tries
    closed = fetch("cams-global", WEATHERAPI_CAMS_BASE_URL="http://127.0.0.1:9/api")
    assert closed.returncode == 75
    assert "could not be reached or the transfer broke off" in errors(closed)[0]


def test_one_fetch_of_a_source_at_a_time(tmp_path, ads, fetch):
    work = tmp_path / "datasets" / "cams" / ".fetch"
    work.mkdir(parents=True)
    with open(work / "cams-europe.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        result = fetch("cams-europe")
    assert result.returncode == 75 and "another fetch of cams-europe is running" in result.stderr
    assert ads.submissions() == []


def test_a_pending_job_the_ads_no_longer_knows_is_asked_again(tmp_path, ads, fetch):
    unit = cams_global.unit(YESTERDAY)
    work = tmp_path / "datasets" / "cams" / ".fetch"
    work.mkdir(parents=True)
    key = ads_client.fingerprint(GLOBAL, unit.parts[0].request)
    (work / "cams-global-pending.json").write_text(json.dumps({key: "no-such-job"}))
    result = fetch("cams-global")
    assert result.returncode == 0, result.stderr
    assert "ADS request no-such-job is gone: asking again" in result.stderr
    assert len(ads.submissions()) == 4


def test_dry_run_says_what_would_be_requested_and_moves_nothing(tmp_path, ads, fetch):
    result = fetch("cams-europe", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and ads.requests == []
    assert lines[2].startswith(
        f"CAMS Europe forecast of {day(TODAY)}: POST {ads.url}/retrieve/"
        f'v1/processes/{EUROPE}/execution {{"inputs":'
    )
    assert lines[2].endswith(f"-> cams/europe/cams-europe-forecast-{stamp(TODAY)}.nc")
    assert "would fetch 3 file(s)" in result.stderr
    assert not (tmp_path / "datasets").exists() or europe_files(tmp_path) == []
    no_key = fetch("cams-global", "--dry-run", key=None)
    assert no_key.returncode == 0 and "a real fetch would fail: no ADS key" in no_key.stderr


def test_held_runs_and_prune(tmp_path, ads, fetch):
    datasets = tmp_path / "datasets"
    assert fetch("cams-europe").returncode == 0
    source = cams_europe.SOURCE
    assert source.held_runs(datasets) == [stamp(YESTERDAY), stamp(TODAY)]
    assert source.prune(datasets, keep=2) == []
    assert source.prune(datasets, keep=1) == [stamp(YESTERDAY)]
    assert europe_files(tmp_path) == [f"cams-europe-forecast-{stamp(TODAY)}.nc"]
    assert source.held_runs(datasets) == [stamp(TODAY)]


def test_the_requests_ask_for_what_the_readers_read():
    assert list(cams_europe.REQUEST_NAMES) == list(cams_europe.VARIABLES)
    assert set(cams_global.REQUEST_NAMES) == set(cams_global.VARIABLES)
    assert set(cams_global.SURFACE + cams_global.MODEL_LEVEL) == set(cams_global.VARIABLES)
