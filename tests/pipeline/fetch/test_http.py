"""The downloader against a real local HTTP server with injected faults."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import logging
import os
import random
import time
from pathlib import Path

import pytest

from pipeline.fetch import verify
from pipeline.fetch.http import Downloader, DownloadError, HttpConfig
from pipeline.fetch.pacing import RateLimit, backoff_s, retry_after_s
from tests.pipeline.fetch.conftest import QUICK
from tests.support.upstreams.base import (
    NOT_FOUND,
    Blob,
    Corrupt,
    Drop,
    IgnoreRange,
    Stall,
    Status,
    Truncate,
)

SIZE = 3_000_000
DATA = random.Random(24).randbytes(SIZE)
GRIB = (
    Path(__file__).resolve().parents[4]
    / "shared"
    / "data"
    / "gfs"
    / "gfs.t12z.pgrbf120.2p5deg.grib2"
)


def fetch(url: str, dest: Path, config: HttpConfig = QUICK, **kwargs):
    """One download with a fresh Downloader; returns (transfer, totals)."""

    async def go():
        async with Downloader(config) as http:
            return await http.download(url, dest, **kwargs), http.totals

    return asyncio.run(go())


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder)) if folder.exists() else []


def test_whole_file_lands_atomically_and_names_the_operator(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    seen: list[list[str]] = []
    stand_in.on_hit = lambda hit: seen.append(names(tmp_path))
    in_verify: list[list[str]] = []
    transfer, totals = fetch(
        stand_in.url + "/f", tmp_path / "f", verify=lambda p: in_verify.append(names(p.parent))
    )
    assert (tmp_path / "f").read_bytes() == DATA
    assert (transfer.changed, transfer.bytes, transfer.bytes_whole) == (True, SIZE, SIZE)
    assert (totals.files, totals.bytes, totals.bytes_whole) == (1, SIZE, SIZE)
    assert in_verify == [[".f.part"]] and names(tmp_path) == ["f"]
    assert all(name.startswith(".") and name.endswith(".part") for n in seen for name in n)
    agent = stand_in.hits("/f")[0].headers["User-Agent"]
    assert agent.startswith("weather-geodata-api/") and "(+ops@example.org)" in agent


def test_503_retry_after_seconds_is_honoured(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Status(503, retry_after="1"))
    fetch(stand_in.url + "/f", tmp_path / "f")
    first, second = stand_in.hits("/f")
    assert first.status == 503 and second.status == 200
    assert second.t - first.t >= 1.0
    assert (tmp_path / "f").read_bytes() == DATA


def test_429_retry_after_http_date_is_honoured(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    when = int(time.time()) + 2
    stand_in.fault("/f", Status(429, retry_after=email.utils.formatdate(when, usegmt=True)))
    fetch(stand_in.url + "/f", tmp_path / "f")
    first, second = stand_in.hits("/f")
    assert first.status == 429 and second.wall >= when
    assert (tmp_path / "f").read_bytes() == DATA


def test_a_long_retry_after_gives_up_at_once_for_later(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Status(503, retry_after="3600"))
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/f", tmp_path / "f")
    assert failure.value.retry_later and failure.value.status == 503
    assert len(stand_in.hits("/f")) == 1 and names(tmp_path) == []


def test_persistent_503_fails_for_later_after_its_attempts(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Status(503), always=True)
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/f", tmp_path / "f")
    assert failure.value.retry_later
    assert len(stand_in.hits("/f")) == QUICK.attempts and names(tmp_path) == []


@pytest.mark.parametrize(
    "fault", [Drop(after=1_000_000), Truncate(after=1_000_000)], ids=["dropped", "truncated"]
)
def test_a_cut_body_resumes_with_a_range_and_moves_only_the_rest(stand_in, tmp_path, fault):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", fault)
    seen: list[list[str]] = []
    stand_in.on_hit = lambda hit: seen.append(names(tmp_path))
    transfer, _ = fetch(stand_in.url + "/f", tmp_path / "f")
    first, second = stand_in.hits("/f")
    start = int(second.range.removeprefix("bytes=").rstrip("-"))
    assert 0 < start <= fault.after and second.status == 206
    assert second.headers["If-Range"] == stand_in.files["/f"].etag  # the same version
    assert second.sent == SIZE - start  # only the rest moved
    assert transfer.bytes == start + (SIZE - start)
    assert (tmp_path / "f").read_bytes() == DATA
    assert seen[1] == [".f.part"] and names(tmp_path) == ["f"]


def test_a_server_that_ignores_ranges_on_resume_is_read_past_what_is_held(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Truncate(after=500_000), IgnoreRange())
    transfer, _ = fetch(stand_in.url + "/f", tmp_path / "f")
    assert [h.status for h in stand_in.hits("/f")] == [200, 200]
    assert (tmp_path / "f").read_bytes() == DATA and transfer.bytes == 500_000 + SIZE


def test_a_file_replaced_upstream_mid_download_restarts_from_scratch(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    new = DATA[::-1]
    stand_in.fault("/f", Truncate(after=500_000))
    stand_in.on_hit = lambda hit: stand_in.put("/f", new) if len(stand_in.hits()) == 1 else None
    fetch(stand_in.url + "/f", tmp_path / "f")
    assert (tmp_path / "f").read_bytes() == new


@pytest.mark.skipif(not GRIB.is_file(), reason=f"real GFS sample not present: {GRIB}")
def test_a_body_that_does_not_decode_never_lands(stand_in, tmp_path):
    stand_in.put("/g", GRIB.read_bytes())
    stand_in.fault("/g", Corrupt(), always=True)
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/g", tmp_path / "g", verify=verify.grib())
    assert "no GRIB message" in str(failure.value) and not failure.value.retry_later
    assert len(stand_in.hits("/g")) == QUICK.attempts and names(tmp_path) == []
    stand_in.fault("/g", always=True)  # healthy again: it decodes, and lands
    transfer, _ = fetch(stand_in.url + "/g", tmp_path / "g", verify=verify.grib(307))
    assert transfer.bytes_written == GRIB.stat().st_size


def test_a_silent_server_times_out_and_is_retried(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Stall(2.0))
    config = dataclasses.replace(QUICK, read_timeout_s=0.3)
    fetch(stand_in.url + "/f", tmp_path / "f", config)
    first, second = stand_in.hits("/f")
    assert 0.3 <= second.t - first.t < 2.0  # gave up on the first well before it answered
    assert (tmp_path / "f").read_bytes() == DATA


def test_a_server_that_never_answers_fails_for_later(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Stall(5.0), always=True)
    config = dataclasses.replace(QUICK, read_timeout_s=0.2, attempts=2)
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/f", tmp_path / "f", config)
    assert failure.value.retry_later and names(tmp_path) == []


def test_404_fails_at_once_and_not_for_later(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", NOT_FOUND)
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/f", tmp_path / "f")
    assert failure.value.status == 404 and not failure.value.retry_later
    assert len(stand_in.hits("/f")) == 1 and names(tmp_path) == []


def test_ranges_are_merged_one_per_request_and_written_in_order(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    ranges = [(2_500_000, None), (100, 200), (200, 300), (1_000, 2_000), (1_500_000, 1_600_000)]
    transfer, totals = fetch(stand_in.url + "/f", tmp_path / "f", ranges=ranges)
    asked = [h.range for h in stand_in.hits("/f")]
    assert asked == ["bytes=100-1999", "bytes=1500000-1599999", "bytes=2500000-"]
    assert (tmp_path / "f").read_bytes() == (
        DATA[100:300] + DATA[1_000:2_000] + DATA[1_500_000:1_600_000] + DATA[2_500_000:]
    )
    assert transfer.bytes == 1900 + 100_000 + 500_000  # the 700-byte gap came along
    assert transfer.bytes_whole == SIZE == totals.bytes_whole


def test_a_range_cut_mid_way_resumes_within_that_range(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Drop(after=100_000))
    fetch(stand_in.url + "/f", tmp_path / "f", ranges=[(1_000_000, 1_400_000)])
    first, second = stand_in.hits("/f")
    start, end = map(int, second.range.removeprefix("bytes=").split("-"))
    assert first.range == "bytes=1000000-1399999" and 1_000_000 < start <= 1_100_000
    assert end == 1_399_999 and second.sent == 1_400_000 - start
    assert (tmp_path / "f").read_bytes() == DATA[1_000_000:1_400_000]


def test_a_range_past_the_end_fails(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    with pytest.raises(DownloadError) as failure:
        fetch(stand_in.url + "/f", tmp_path / "f", ranges=[(SIZE + 10, SIZE + 20)])
    assert failure.value.status == 416 and names(tmp_path) == []


def test_conditional_requests_keep_an_unchanged_file(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    dest = tmp_path / "f"
    fetch(stand_in.url + "/f", dest, conditional=True)
    assert names(tmp_path) == [".f.http-state", "f"]
    transfer, totals = fetch(stand_in.url + "/f", dest, conditional=True)
    revalidation = stand_in.hits("/f")[-1]
    assert revalidation.status == 304 and revalidation.headers["If-None-Match"]
    assert (transfer.changed, transfer.bytes, totals.files, totals.unchanged) == (False, 0, 0, 1)
    stand_in.put("/f", Blob.of(DATA[::-1], last_modified=time.time() + 60))
    transfer, _ = fetch(stand_in.url + "/f", dest, conditional=True)
    assert transfer.changed and dest.read_bytes() == DATA[::-1]


def test_if_modified_since_alone_is_honoured(stand_in, tmp_path):
    stand_in.put("/f", DATA)
    dest = tmp_path / "f"
    fetch(stand_in.url + "/f", dest, conditional=True)
    state = tmp_path / ".f.http-state"
    state.write_text(state.read_text().replace('"ETag"', '"Other"'))  # as if no ETag was sent
    transfer, _ = fetch(stand_in.url + "/f", dest, conditional=True)
    hit = stand_in.hits("/f")[-1]
    assert "If-None-Match" not in hit.headers and hit.status == 304 and not transfer.changed


def test_the_host_rate_limit_holds_on_the_server_clock(stand_in):
    stand_in.put("/i", b"x" * 100)
    per_s, burst = 10.0, 2
    host = stand_in.url.removeprefix("http://")
    config = dataclasses.replace(
        QUICK, concurrency=8, rate_limits={host: RateLimit(per_s * 60, burst)}
    )

    async def go():
        async with Downloader(config) as http:
            await asyncio.gather(*(http.get_bytes(stand_in.url + "/i") for _ in range(12)))

    asyncio.run(go())
    times = [h.t for h in stand_in.hits("/i")]
    assert len(times) == 12
    for k, t in enumerate(times):
        # A full bucket lets `burst` through at once, then one per 1/rate seconds; one
        # token of slack, as arrival times carry the first request's network and loop delay.
        assert t - times[0] >= (k - burst) / per_s
    assert times[-1] - times[0] < (12 - burst + 1) / per_s + 2.0  # and it does not crawl


def test_concurrency_is_bounded(stand_in, tmp_path):
    for i in range(6):
        stand_in.put(f"/f{i}", DATA[:10_000])
        stand_in.fault(f"/f{i}", Stall(0.2))
    config = dataclasses.replace(QUICK, concurrency=2)

    async def go():
        async with Downloader(config) as http:
            await asyncio.gather(
                *(http.download(stand_in.url + f"/f{i}", tmp_path / f"f{i}") for i in range(6))
            )

    asyncio.run(go())
    assert stand_in.max_active == 2 and len(names(tmp_path)) == 6


def test_credentials_in_urls_are_never_logged(stand_in, tmp_path, caplog):
    stand_in.put("/f", DATA)
    stand_in.fault("/f", Status(503), NOT_FOUND)
    url = stand_in.url.replace("http://", "http://user:hunter2@") + "/f?key=s3cret"
    caplog.set_level(logging.DEBUG)
    with pytest.raises(DownloadError) as failure:
        fetch(url, tmp_path / "f")
    text = caplog.text + str(failure.value)
    assert "/f" in text and "hunter2" not in text and "s3cret" not in text


def test_get_bytes_and_exists(stand_in):
    stand_in.put("/i", b"index")

    async def go():
        async with Downloader(QUICK) as http:
            return (
                await http.get_bytes(stand_in.url + "/i"),
                await http.get_bytes(stand_in.url + "/none", missing_ok=True),
                await http.exists(stand_in.url + "/i"),
                await http.exists(stand_in.url + "/none"),
            )

    assert asyncio.run(go()) == (b"index", None, True, False)
    assert [h.method for h in stand_in.hits()] == ["GET", "GET", "HEAD", "HEAD"]


def test_backoff_has_full_jitter_under_its_cap():
    draws = [backoff_s(attempt, 1.0, 8.0) for attempt in range(6) for _ in range(200)]
    assert min(draws) >= 0.0 and max(draws) <= 8.0
    assert max(backoff_s(0, 1.0, 8.0) for _ in range(200)) <= 1.0
    assert max(backoff_s(5, 1.0, 8.0) for _ in range(200)) > 4.0


def test_retry_after_reads_seconds_and_dates():
    assert retry_after_s("120") == 120.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_s("soon") is None and retry_after_s(None) is None


def test_a_netcdf_file_is_checked_by_opening_it(stand_in, tmp_path):
    import netCDF4
    import numpy as np

    source = tmp_path / "src.nc"
    with netCDF4.Dataset(source, "w") as dataset:
        dataset.createDimension("x", 3)
        dataset.createVariable("pm10", "f4", ("x",))[:] = np.arange(3)
    stand_in.put("/a.nc", source.read_bytes())
    stand_in.put("/b.nc", b"<html>not NetCDF</html>")
    transfer, _ = fetch(stand_in.url + "/a.nc", tmp_path / "out" / "a.nc", verify=verify.netcdf())
    assert transfer.bytes_written == source.stat().st_size
    with pytest.raises(DownloadError, match="does not open as NetCDF"):
        fetch(stand_in.url + "/b.nc", tmp_path / "out" / "b.nc", verify=verify.netcdf())
    assert names(tmp_path / "out") == ["a.nc"]


def test_a_missing_operator_contact_is_warned_about_once(stand_in, tmp_path, monkeypatch, caplog):
    from pipeline.fetch import useragent

    monkeypatch.delenv("WEATHERAPI_OPERATOR_CONTACT")
    useragent._warn_once.cache_clear()
    stand_in.put("/f", b"x")
    fetch(stand_in.url + "/f", tmp_path / "f")
    fetch(stand_in.url + "/f", tmp_path / "g")
    warnings = [r for r in caplog.records if "WEATHERAPI_OPERATOR_CONTACT" in r.getMessage()]
    assert len(warnings) == 1
    assert stand_in.hits("/f")[0].headers["User-Agent"].startswith("weather-geodata-api/")


def test_progress_bars_on_a_terminal_and_lines_otherwise(stand_in, tmp_path, capsys, caplog):
    stand_in.put("/f", DATA)
    caplog.set_level(logging.INFO, logger="pipeline.fetch")
    fetch(stand_in.url + "/f", tmp_path / "bar", dataclasses.replace(QUICK, progress=True))
    assert "bar" in capsys.readouterr().err  # tqdm's bar, named by the file
    assert not [r for r in caplog.records if "written" in r.getMessage()]
    fetch(stand_in.url + "/f", tmp_path / "line")
    lines = [r.getMessage() for r in caplog.records if "written" in r.getMessage()]
    assert lines == ["line: 3.0 MB written, 3.0 MB moved in " + lines[0].split(" in ")[1]]
