"""`python -m pipeline fetch geonames` in-process against a GeoNames stand-in built from the real
dumps (tests/support/upstreams/geonames.py), with faults; the day is the source's clock."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import zipfile

import pytest

from pipeline.fetch.http import HttpConfig
from pipeline.fetch.source import FetchError, FetchOptions
from pipeline.geocoding.sources import geonames_updates as updates
from pipeline.geocoding.sources.geonames_fetch import GeoNamesConfig, GeoNamesSource
from tests.support.procs import SHARED_GEONAMES
from tests.support.upstreams.base import Blob, Corrupt, Drop, StandIn, Status, Truncate
from tests.support.upstreams.geonames import GeoNamesDumps, zipped

pytestmark = pytest.mark.skipif(
    not (SHARED_GEONAMES / "cities15000.zip").is_file(),
    reason=f"real GeoNames dumps not present: {SHARED_GEONAMES}",
)

QUICK = HttpConfig(
    backoff_base_s=0.01, backoff_cap_s=0.05, read_timeout_s=5.0, attempts=3, progress=False
)
CONFIG = GeoNamesConfig(dump="cities15000", http=QUICK)
TODAY = dt.date(2026, 11, 29)
DAY = dt.timedelta(days=1)
ZURICH, SITTEN, WETZIKON = "2657896", "2658576", "2658010"
DUMPS = ("cities15000.zip", "alternateNamesV2.zip")


@pytest.fixture(autouse=True)
def operator_contact(monkeypatch):
    monkeypatch.setenv("WEATHERAPI_OPERATOR_CONTACT", "ops@example.org")


@pytest.fixture
def geo():
    """Dumps written three days ago and the update files of the four days since the day
    before them (the first day a fetch asks for), Zürich moved, Sitten renamed, Wetzikon gone."""
    with StandIn() as server:
        dumps = GeoNamesDumps(server, written=TODAY - 3 * DAY)
        dumps.add_day(TODAY - 4 * DAY)
        dumps.add_day(
            TODAY - 3 * DAY, modified=[dumps.row(ZURICH, latitude="47.41", longitude="8.6")]
        )
        dumps.add_day(TODAY - 2 * DAY, modified=[dumps.row(SITTEN, name="Sion", asciiname="Sion")])
        dumps.add_day(TODAY - DAY, deleted=[WETZIKON])
        server.clear_hits()
        yield dumps


def fetch(
    geo: GeoNamesDumps, datasets, today: dt.date = TODAY, config: GeoNamesConfig = CONFIG, **options
):
    source = GeoNamesSource(
        config, clock=lambda: dt.datetime.combine(today, dt.time(6), dt.timezone.utc)
    )
    return asyncio.run(source.fetch(FetchOptions(datasets=datasets, base_url=geo.url, **options)))


def files(datasets) -> dict[str, bytes]:
    """Every file under DATASETS/geonames (dot-files too) and its bytes."""
    root = datasets / "geonames"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def day_names(datasets) -> list[str]:
    return [d.isoformat() for d in updates.held_days(datasets / "geonames")]


def test_first_fetch_takes_the_dumps_and_every_day_since(geo, tmp_path):
    report = fetch(geo, tmp_path)
    held = files(tmp_path)
    assert report.changed and report.run == (TODAY - DAY).isoformat()
    assert report.files == 3 + 2 + 4 * 4
    for name in ("countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt", *DUMPS):
        assert held[name] == geo.server.files[geo.path(name)].read(0, 10**9)
    assert day_names(tmp_path) == [(TODAY - k * DAY).isoformat() for k in (4, 3, 2, 1)]
    day = TODAY - DAY
    assert held[f"updates/{day}/deletes-{day}.txt"] == f"{WETZIKON}\tWetzikon\tduplicate\n".encode()
    assert not [name for name in held if name.endswith(".part") or "/." in name]
    assert report.bytes == geo.server.bytes_sent()


def test_a_second_fetch_moves_only_conditional_checks(geo, tmp_path):
    fetch(geo, tmp_path)
    before = files(tmp_path)
    geo.server.clear_hits()
    report = fetch(geo, tmp_path)
    hits = geo.server.hits()
    assert not report.changed and report.files == 0 and report.bytes == 0
    assert sorted(h.path.rsplit("/", 1)[1] for h in hits) == sorted(
        ["countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt"]
    )
    assert all(h.status == 304 and "If-None-Match" in h.headers for h in hits)
    assert geo.server.bytes_sent() == 0 and files(tmp_path) == before


def test_the_next_day_moves_only_that_day(geo, tmp_path):
    fetch(geo, tmp_path)
    geo.add_day(TODAY, modified=[geo.row(ZURICH, population="420000")])
    geo.server.clear_hits()
    report = fetch(geo, tmp_path, today=TODAY + DAY)
    hits = geo.server.hits()
    assert {h.path for h in hits if h.status == 200} == set(geo.day_paths(TODAY))
    assert {h.status for h in hits if h.path not in geo.day_paths(TODAY)} == {304}
    assert report.bytes == geo.server.bytes_sent() < 5_000 and report.run == TODAY.isoformat()
    assert day_names(tmp_path)[-1] == TODAY.isoformat()


def test_yesterday_not_published_yet_is_no_gap(geo, tmp_path):
    fetch(geo, tmp_path)
    geo.server.clear_hits()
    report = fetch(geo, tmp_path, today=TODAY + DAY)
    assert not report.changed and f"{TODAY}: updates not published yet" in report.notes
    assert not [h for h in geo.server.hits() if h.path.endswith(".zip")]


def test_a_gap_brings_new_dumps_and_drops_the_days_before_them(geo, tmp_path):
    fetch(geo, tmp_path)
    geo.drop_day(TODAY)  # GeoNames no longer serves it
    geo.add_day(TODAY + DAY)
    geo.renew(written=TODAY + 2 * DAY)
    geo.add_day(TODAY + 2 * DAY)
    report = fetch(geo, tmp_path, today=TODAY + 3 * DAY)
    assert any("no longer serves" in note for note in report.notes)
    assert files(tmp_path)["cities15000.zip"] == geo.server.files[geo.path("cities15000.zip")].read(
        0, 10**9
    )
    # the new dumps hold every change before them: from the day before them on, days apply
    assert day_names(tmp_path) == [(TODAY + DAY).isoformat(), (TODAY + 2 * DAY).isoformat()]


def test_a_gap_with_unchanged_dumps_stops_before_it(geo, tmp_path):
    fetch(geo, tmp_path)
    geo.drop_day(TODAY)
    geo.add_day(TODAY + DAY)
    geo.server.clear_hits()
    report = fetch(geo, tmp_path, today=TODAY + 2 * DAY)
    dumps = [h for h in geo.server.hits() if h.path.endswith(".zip")]
    assert [h.status for h in dumps] == [304, 304]
    assert any("unchanged" in note for note in report.notes)
    assert day_names(tmp_path)[-1] == (TODAY - DAY).isoformat()  # nothing after the gap


def test_dumps_older_than_the_limit_are_downloaded_again(geo, tmp_path):
    fetch(geo, tmp_path)
    geo.renew(written=TODAY)
    short = dataclasses.replace(CONFIG, max_update_days=2)
    report = fetch(geo, tmp_path, today=TODAY + DAY, config=short)
    assert report.changed
    assert updates.written_on(tmp_path / "geonames" / "cities15000.zip") == TODAY
    assert day_names(tmp_path) == [(TODAY - DAY).isoformat()]


def test_transient_failures_are_retried_and_a_drop_resumed(geo, tmp_path):
    dump, day = geo.path("cities15000.zip"), geo.day_paths(TODAY - DAY)[1]  # the deletes
    geo.server.fault(dump, Status(503, retry_after="0"), Drop(after=300_000))
    geo.server.fault(day, Status(429, retry_after="0"), Truncate(after=10))
    fetch(geo, tmp_path)
    held = files(tmp_path)
    assert held["cities15000.zip"] == geo.server.files[dump].read(0, 10**9)
    hits = geo.server.hits(dump)
    assert [h.status for h in hits] == [503, 200, 206]
    resumed_at = int(hits[2].range.removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= 300_000  # from where the connection broke, the same version:
    assert hits[2].headers.get("If-Range") == geo.server.files[dump].etag
    assert [h.status for h in geo.server.hits(day)] == [429, 200, 206]
    assert held[f"updates/{TODAY - DAY}/deletes-{TODAY - DAY}.txt"] == geo.server.files[day].read(
        0, 10**9
    )


def test_a_broken_dump_never_becomes_an_input(geo, tmp_path):
    good = geo.server.files[geo.path("cities15000.zip")].read(0, 10**9)
    geo.server.put(geo.path("cities15000.zip"), Blob.of(good[: len(good) // 2]))
    with pytest.raises(FetchError, match="not a whole zip archive"):
        fetch(geo, tmp_path)
    held = files(tmp_path)
    assert "cities15000.zip" not in held and not updates.held_days(tmp_path / "geonames")
    assert not [name for name in held if name.endswith(".part")]


def test_a_corrupt_or_cut_day_leaves_the_held_state_as_it_was(geo, tmp_path):
    fetch(geo, tmp_path)
    before = files(tmp_path)
    geo.add_day(TODAY)
    first, second = geo.day_paths(TODAY)[:2]
    geo.server.fault(first, Corrupt(), always=True)
    cut = geo.server.files[second].read(0, 10**9)
    geo.server.put(second, Blob.of(b"2658010\tWetzi"))  # cut mid-line upstream
    with pytest.raises(FetchError):
        fetch(geo, tmp_path, today=TODAY + DAY)
    after = files(tmp_path)
    assert after == before and cut is not None


def test_dry_run_lists_and_writes_nothing(geo, tmp_path):
    report = fetch(geo, tmp_path, dry_run=True)
    assert any("cities15000.zip" in line for line in report.planned)
    assert not (tmp_path / "geonames").exists()


def test_without_alternate_names_neither_the_dump_nor_its_days(geo, tmp_path):
    config = dataclasses.replace(CONFIG, alternate_names=False)
    fetch(geo, tmp_path, config=config)
    held = files(tmp_path)
    assert "alternateNamesV2.zip" not in held
    assert not [name for name in held if "alternateNames" in name]


def test_the_dump_is_dated_by_its_zip_member(tmp_path):
    path = tmp_path / "cities15000.zip"
    path.write_bytes(zipped("cities15000.txt", "", TODAY))
    assert updates.written_on(path) == TODAY and updates.first_day(path) == TODAY - DAY
    with zipfile.ZipFile(SHARED_GEONAMES / "cities15000.zip") as archive:
        written = dt.date(*archive.getinfo("cities15000.txt").date_time[:3])
    assert updates.written_on(SHARED_GEONAMES / "cities15000.zip") == written
