"""The webcams area through `python -m pipeline build`: real-format inputs (known answers), the
generated default, bad inputs, determinism."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import shutil
import time
from pathlib import Path
from zoneinfo import ZoneInfo, available_timezones

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from tzfpy import get_tz

import contract
from contract import Webcams as W
from pipeline.common.io import InputError
from pipeline.webcams.sources import catalog as webcam_catalog
from tests.support import webcam_inputs as inputs

pytestmark = pytest.mark.slow  # they build with the pipeline

NOW = int(time.time())


def _build(pipeline_cli, datasets: Path, out: Path, *extra: str, **env: str) -> Path:
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *extra, **env)
    assert result.returncode == 0, result.stderr
    return contract.current_version_dir(out)


@pytest.fixture(scope="module")
def real(module_tmp, pipeline_cli):
    """The hand-made GeoNames dump and the real-format webcam inputs, built once."""
    root = module_tmp("webcams-real")
    inputs.write_inputs(root / "datasets", NOW)
    version = _build(
        pipeline_cli, root / "datasets", root / "out", "--only", "geocoding", "webcams"
    )
    return version, contract.read_manifest(version)["areas"]["webcams"]


def _webcams(version: Path) -> dict[str, dict]:
    return {r["public_id"]: r for r in pq.read_table(version / W.WEBCAMS).to_pylist()}


def test_manifest_says_real_and_counts(real):
    version, entry = real
    assert entry["source"]["kind"] == "real" and entry["source"]["generated"] is False
    assert entry["version"].startswith("webcams-")
    assert {i["path"] for i in entry["inputs"]} == {"webcams/webcams.csv", "webcams/snapshots.csv"}
    expected = inputs.expected_snapshots(NOW)
    assert entry["counts"]["webcams"] == len(inputs.WEBCAMS)
    assert entry["counts"]["served"] == len(inputs.SERVED)
    assert entry["counts"]["snapshots"] == sum(len(v) for v in expected.values())
    assert entry["dropped_snapshots"]["unknown_webcam"] == 1
    assert entry["dropped_snapshots"]["inactive_webcam"] == 1
    assert entry["dropped_snapshots"]["duplicate"] > 0
    assert entry["linked_to"] == "geocoding" and entry["rendered_images"] is False
    assert all((version / f).is_file() for f in entry["files"])
    on_disk = {str(f.relative_to(version)) for f in (version / "webcams").rglob("*") if f.is_file()}
    assert on_disk == set(entry["files"])


def test_catalog_is_normalised_and_linked(real):
    version, _ = real
    cams = _webcams(version)
    assert set(cams) == {w[0] for w in inputs.WEBCAMS}
    assert cams["old-cam"]["status"] == "inactive" and cams["mhorn"]["status"] == "active"
    assert cams["zrh-1"]["country_code"] == "CH"  # upper-cased
    assert cams["zrh-2"]["name"] == "Zurich, Hauptbahnhof"  # quoted CSV field
    assert cams["zrh-2"]["location_public_id"] == "2657896"  # given, kept
    assert cams["zrh-1"]["timezone"] == "Europe/Zurich"  # from the coordinate
    assert cams["kiri"]["timezone"] == "Pacific/Kiritimati"  # given, kept
    # Rounded to the 5 decimals the API shows: every filter and cluster uses those values.
    assert (cams["mhorn"]["latitude"], cams["mhorn"]["longitude"]) == (45.97654, 7.65877)
    places = [
        p
        for p in pq.read_table(version / contract.Geocoding.LOCATIONS).to_pylist()
        if p["feature_code"].startswith("PPL") and p["feature_code"] != "PPLX"
    ]
    for cam in cams.values():
        if cam["public_id"] == "zrh-2":
            continue
        nearest = min(
            places, key=lambda p: _km(cam["latitude"], cam["longitude"], p["lat"], p["lon"])
        )
        if _km(cam["latitude"], cam["longitude"], nearest["lat"], nearest["lon"]) > 50:
            nearest = {"id": None, "name": None}  # no populated place within 50 km
        assert cam["location_public_id"] == nearest["id"], cam["public_id"]
        assert cam["location_name"] == nearest["name"]
    assert (cams["zrh-1"]["location_public_id"], cams["zrh-1"]["location_name"]) == (
        "2657896",
        "Zürich",
    )
    # Far from every place of the small dump: no link rather than one thousands of km away.
    assert all(cams[c]["location_public_id"] is None for c in ("mhorn", "kiri", "pago", "lhi"))


def _km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371.0088 * math.asin(math.sqrt(a))


def test_snapshots_sorted_deduplicated_and_converted(real):
    version, _ = real
    table = pq.read_table(version / W.SNAPSHOTS).to_pylist()
    got: dict[str, list] = {}
    for row in table:
        got.setdefault(row["public_id"], []).append(
            (int(row["captured_at"].timestamp()), row["image"])
        )
    assert got == inputs.expected_snapshots(NOW)
    keys = [(r["public_id"], r["captured_at"]) for r in table]
    assert keys == sorted(keys)


def test_server_arrays_match_the_table(real):
    version, _ = real
    cams = feather.read_table(version / W.CAMS_ARROW).column("public_id").to_pylist()
    assert cams == inputs.SERVED
    times = np.load(version / W.SNAP_TIMES)
    offsets = np.load(version / W.SNAP_OFFSETS)
    last = np.load(version / W.LAST_TIME)
    expected = inputs.expected_snapshots(NOW)
    for row, public_id in enumerate(cams):
        series = times[offsets[row] : offsets[row + 1]].tolist()
        assert series == [t for t, _ in expected[public_id]]
        assert last[row] == series[-1]


def test_images_copied_and_indexed(real):
    version, _ = real
    images = feather.read_table(version / W.IMAGES_ARROW).to_pylist()
    by_ref = {i["ref"]: i for i in images}
    assert by_ref["keys/wdh.jpg"]["kind"] == "key" and by_ref["keys/wdh.jpg"]["file"] is None
    assert by_ref["cdn/zrh-1/x.jpg"]["kind"] == "key"
    for ref in ("zrh/a.png", "zrh/b.png", "mhorn.png"):
        image = by_ref[ref]
        assert image["kind"] == "file" and image["media_type"] == "image/png"
        copied = version / image["file"]
        assert copied.parent == version / W.IMAGES_DIR
        assert copied.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert ref.replace("/", "") not in copied.name  # named by id, not by input
    ids = np.load(version / W.SNAP_IMAGES)
    assert set(ids.tolist()) == {i["image_id"] for i in images}


def _brute_noon(times: list[int], zone: str) -> list[tuple[int, int]]:
    best: dict[int, tuple[int, int]] = {}
    for t in times:
        local = dt.datetime.fromtimestamp(t, ZoneInfo(zone))
        day = (local.date() - dt.date(1970, 1, 1)).days
        distance = abs(local.hour * 3600 + local.minute * 60 + local.second - 43_200)
        if day not in best or (distance, t) < best[day]:
            best[day] = (distance, t)
    return sorted((day, t) for day, (_, t) in best.items())


def test_daily_noon_picks_across_dst_and_far_timezones(real):
    version, _ = real
    cams = feather.read_table(version / W.CAMS_ARROW).to_pylist()
    times = np.load(version / W.SNAP_TIMES)
    offsets, daily = np.load(version / W.SNAP_OFFSETS), np.load(version / W.DAILY_OFFSETS)
    days, picks = np.load(version / W.DAILY_DAY), np.load(version / W.DAILY_INDEX)
    for row, cam in enumerate(cams):
        series = times[offsets[row] : offsets[row + 1]].tolist()
        got = [
            (int(d), int(times[i]))
            for d, i in zip(days[daily[row] : daily[row + 1]], picks[daily[row] : daily[row + 1]])
        ]
        assert got == _brute_noon(series, cam["timezone"]), cam["public_id"]
    # Known answers: local noon is 11:00Z on CET days and 10:00Z on CEST days.
    zrh1 = cams.index(next(c for c in cams if c["public_id"] == "zrh-1"))
    picked = [
        dt.datetime.fromtimestamp(int(times[i]), dt.timezone.utc).strftime("%m-%dT%H")
        for i in picks[daily[zrh1] : daily[zrh1 + 1]]
    ]
    assert picked == ["03-30T11", "03-31T10", "04-01T10"]
    zrh2 = zrh1 + 1
    picked = [
        dt.datetime.fromtimestamp(int(times[i]), dt.timezone.utc).strftime("%m-%dT%H")
        for i in picks[daily[zrh2] : daily[zrh2 + 1]]
    ]
    assert picked == ["10-26T10", "10-27T11", "10-28T11"]


def test_catalog_views_in_duckdb(real):
    version, _ = real
    con = duckdb.connect(str(version / contract.CATALOG), read_only=True)
    try:
        served = con.execute("select count(*) from webcams where status = 'active'").fetchone()
        snaps = con.execute(
            "select count(distinct public_id), count(*) from webcam_snapshots "
            "where image is not null"
        ).fetchone()
    finally:
        con.close()
    assert served == (len(inputs.SERVED),)
    expected = inputs.expected_snapshots(NOW)
    assert snaps == (len(expected), sum(len(v) for v in expected.values()))


def test_same_inputs_same_bytes(tmp_path, pipeline_cli):
    datasets = tmp_path / "datasets"
    inputs.write_inputs(datasets, NOW, parquet=True)
    first = _build(pipeline_cli, datasets, tmp_path / "a", "--only", "geocoding", "webcams")
    second = _build(pipeline_cli, datasets, tmp_path / "b", "--only", "geocoding", "webcams")

    def digests(version: Path) -> dict[str, str]:
        return {
            str(f.relative_to(version)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted((version / "webcams").rglob("*"))
            if f.is_file()
        }

    assert digests(first) == digests(second)
    m1 = contract.read_manifest(first)["areas"]["webcams"]
    m2 = contract.read_manifest(second)["areas"]["webcams"]
    assert m1["version"] == m2["version"]
    assert {i["path"] for i in m1["inputs"]} == {"webcams/webcams.csv", "webcams/snapshots.parquet"}
    # A renamed place changes the linked names, so the webcams version changes too.
    dump = datasets / "geonames" / "cities500.txt"
    dump.write_text(
        dump.read_text(encoding="utf-8").replace("2657896\tZürich\t", "2657896\tZürich City\t", 1),
        encoding="utf-8",
    )
    third = _build(pipeline_cli, datasets, tmp_path / "c", "--only", "geocoding", "webcams")
    m3 = contract.read_manifest(third)["areas"]["webcams"]
    assert m3["version"] != m1["version"]
    assert _webcams(third)["zrh-2"]["location_name"] == "Zürich City"
    assert m3["linked_with"][1].startswith("tzfpy ")


def test_generated_default_without_geocoding(tmp_path, pipeline_cli):
    (tmp_path / "empty").mkdir()
    version = _build(
        pipeline_cli,
        tmp_path / "empty",
        tmp_path / "out",
        "--only",
        "webcams",
        timeout=300,
        WEATHERAPI_WEBCAMS_SCALE="0.01",
    )
    entry = contract.read_manifest(version)["areas"]["webcams"]
    assert entry["source"]["kind"] == "generated" and entry["source"]["generated"] is True
    assert entry["linked_to"] == "packaged" and entry["rendered_images"] is True
    assert entry["counts"]["webcams"] == round(20_600 * 0.01)
    cams = pq.read_table(version / W.WEBCAMS).to_pylist()
    assert all(c["location_public_id"] and c["location_name"] and c["timezone"] for c in cams)
    assert not (version / W.SNAP_IMAGES).exists()


@pytest.mark.parametrize(
    "case, edit, message",
    [
        (
            "missing column",
            lambda d: _rewrite(d, "webcams.csv", "views", "hits"),
            "missing column(s): views",
        ),
        (
            "bad latitude",
            lambda d: _rewrite(d, "webcams.csv", "47.3600", "97.36"),
            "line 2: latitude 97.36 is not a number in [-90, 90]",
        ),
        (
            "nan longitude",
            lambda d: _rewrite(d, "webcams.csv", "8.5500", "nan"),
            "line 2: longitude",
        ),
        (
            "duplicate id",
            lambda d: _rewrite(d, "webcams.csv", "zrh-2,", "zrh-1,"),
            "public_id 'zrh-1' appears more than once",
        ),
        (
            "reserved id",
            lambda d: _rewrite(d, "webcams.csv", "mhorn,", "clusters,"),
            "not one of clusters, token, embed",
        ),
        (
            "bad timezone",
            lambda d: _rewrite(d, "webcams.csv", "Africa/Windhoek", "Mars/Olympus"),
            "timezone 'Mars/Olympus' is not an IANA timezone",
        ),
        (
            "not ISO 3166-1",
            lambda d: _rewrite(d, "webcams.csv", ",ch,", ",xx,"),
            "line 2: country_code 'XX' is not an ISO 3166-1 alpha-2 code",
        ),
        (
            "CLDR but not ISO 3166-1",
            lambda d: _rewrite(d, "webcams.csv", ",ch,", ",EU,"),
            "line 2: country_code 'EU' is not an ISO 3166-1 alpha-2 code",
        ),
        (
            "bad status",
            lambda d: _rewrite(d, "webcams.csv", ",inactive", ",retired"),
            "status 'retired' must be active or inactive",
        ),
        (
            "bad time",
            lambda d: _append(d, "mhorn,yesterday,mhorn.png"),
            "captured_at 'yesterday' is not an ISO 8601 time",
        ),
        (
            "path escape",
            lambda d: _append(d, "mhorn,2024-07-09T00:00:00Z,../webcams.csv"),
            "image '../webcams.csv' is neither a relative path",
        ),
        (
            "unsupported image",
            lambda d: _append(d, "mhorn,2024-07-09T00:00:00Z,notes.txt", "notes.txt"),
            "unsupported image type",
        ),
        (
            "typo in a local image",
            lambda d: _append(d, "mhorn,2024-07-09T00:00:00Z,zrh/c.png"),
            "image 'zrh/c.png' is not a file under images/",
        ),
        (
            "typo at the top of images/",
            lambda d: _append(d, "mhorn,2024-07-09T00:00:00Z,mhron.png"),
            "image 'mhron.png' is not a file under images/",
        ),
    ],
)
def test_bad_inputs_fail_with_a_clear_message(tmp_path, case, edit, message):
    datasets = tmp_path / "datasets"
    edit(inputs.write_inputs(datasets, NOW))
    with pytest.raises(InputError) as caught:
        catalog = webcam_catalog.read(datasets)
        served = catalog.webcams.filter(pl.col("status") == "active")["public_id"].sort()
        catalog.snapshots(served)
    assert message in str(caught.value), case


def test_a_failed_webcams_build_names_file_and_line(tmp_path, pipeline_cli):
    datasets = tmp_path / "datasets"
    folder = inputs.write_inputs(datasets, NOW)
    _rewrite(folder, "webcams.csv", "47.3600", "97.36")
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", "--only", "webcams"
    )
    assert result.returncode == 1
    assert (
        f"error: build failed: {folder / 'webcams.csv'}: line 2: latitude 97.36 is not a "
        "number in [-90, 90]; nothing is published"
    ) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def _latin1(folder: Path) -> None:
    path = folder / "webcams.csv"
    path.write_bytes(path.read_bytes().replace("Zürich".encode(), "Zürich".encode("latin-1")))


def _open_quote_at_the_end(folder: Path) -> None:
    with open(folder / "webcams.csv", "a", encoding="utf-8") as handle:
        handle.write('zz,"Open quote,1,1,CH,1,,,\n')


@pytest.mark.parametrize(
    "case, edit, message",
    [
        (
            "extra columns",
            lambda d: _rewrite(d, "webcams.csv", "Zurich,active", "Zurich,active,x,y"),
            "webcams.csv: not a readable CSV file: line 3: 11 fields where the header has 9",
        ),
        (
            "after a stray CR",
            lambda d: _rewrite(d, "webcams.csv", "Zurich,active", "Zurich,active\r,x,y"),
            "webcams.csv: not a readable CSV file: line 3: 11 fields where the header has 9",
        ),
        (
            "runs on",
            lambda d: _rewrite(d, "webcams.csv", 'Hauptbahnhof"', "Hauptbahnhof"),
            "webcams.csv: not a readable CSV file: line 3: a quoted field runs on to line 6 (a quote "
            "is missing or not doubled)",
        ),
        (
            "not closed",
            _open_quote_at_the_end,
            "webcams.csv: not a readable CSV file: line "
            "{webcams}: a quoted field is not closed before the end of the file",
        ),
        (
            "after the quote",
            lambda d: _rewrite(d, "webcams.csv", "Haupt", 'Haupt"x'),
            "webcams.csv: not a readable CSV file: line 3: text after the closing quote of a field "
            "(double the quotes inside a quoted field)",
        ),
        (
            "quote inside",
            lambda d: _rewrite(d, "webcams.csv", "Old camera", 'Old "camera'),
            "webcams.csv: not a readable CSV file: line 5: a quote inside a field that does not start "
            "with one (quote the whole field and double the quotes in it)",
        ),
        (
            "not UTF-8",
            _latin1,
            "webcams.csv: not a readable CSV file: line 2: the byte at offset "
            "{offset} (0xfc) is not UTF-8; save the file as UTF-8",
        ),
        (
            "extra snapshot field",
            lambda d: _append(d, "mhorn,2024-07-09T00:00:00Z,mhorn.png,x"),
            "snapshots.csv: not a readable CSV file: line {snapshots}: 4 fields where the header has "
            "3",
        ),
    ],
)
def test_an_unreadable_csv_says_what_is_wrong_and_where(tmp_path, case, edit, message):
    datasets = tmp_path / "datasets"
    folder = inputs.write_inputs(datasets, NOW)
    edit(folder)
    with pytest.raises(InputError) as caught:
        catalog = webcam_catalog.read(datasets)
        catalog.snapshots(catalog.webcams["public_id"])
    assert str(caught.value).endswith(
        message.format(
            webcams=(folder / "webcams.csv").read_bytes().count(b"\n"),
            snapshots=_lines(folder / "snapshots.csv"),
            offset=(folder / "webcams.csv").read_bytes().find(b"\xfc"),
        )
    ), case


def test_a_webcams_csv_that_is_not_utf8_fails_the_build_in_one_line(tmp_path, pipeline_cli):
    datasets = tmp_path / "datasets"
    folder = inputs.write_inputs(datasets, NOW)
    _latin1(folder)
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", "--only", "webcams"
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    offset = (folder / "webcams.csv").read_bytes().find(b"\xfc")
    assert (
        f"error: build failed: {folder / 'webcams.csv'}: not a readable CSV file: line 2: "
        f"the byte at offset {offset} (0xfc) is not UTF-8; save the file as UTF-8; nothing "
        "is published\n"
    ) in result.stderr, result.stderr


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_errors_name_the_physical_line_and_parquet_rows(tmp_path):
    datasets = tmp_path / "datasets"
    folder = inputs.write_inputs(datasets, NOW)
    # A quoted name spanning two lines: the bad latitude of the next camera is on line 4.
    _rewrite(folder, "webcams.csv", "\nzrh-2,", '\nzz-multi,"two\nlines",1,1,CH,1,,,\nzrh-2,')
    _rewrite(folder, "webcams.csv", "47.3780", "97.378")
    with pytest.raises(InputError, match=r"line 5: latitude 97.378"):
        webcam_catalog.read(datasets)
    shutil.rmtree(datasets)
    folder = inputs.write_inputs(datasets, NOW)
    _append(folder, "mhorn,2024-07-09T00:00:00Z,zrh/c.png")
    with pytest.raises(InputError, match=f"line {_lines(folder / 'snapshots.csv')}: image"):
        catalog = webcam_catalog.read(datasets)
        catalog.snapshots(catalog.webcams.filter(pl.col("status") == "active")["public_id"])
    shutil.rmtree(datasets)
    inputs.write_inputs(datasets, NOW, parquet=True)
    table = pq.read_table(datasets / "webcams" / "snapshots.parquet")
    bad = table.slice(0, 3).to_pylist()
    bad[2]["captured_at"] = "yesterday"
    pq.write_table(
        pa.Table.from_pylist(table.slice(3).to_pylist()[:5] + bad),
        datasets / "webcams" / "snapshots.parquet",
    )
    with pytest.raises(InputError, match="row 8: captured_at 'yesterday'"):
        catalog = webcam_catalog.read(datasets)
        catalog.snapshots(catalog.webcams.filter(pl.col("status") == "active")["public_id"])


def test_object_key_images_are_a_manifest_warning(real):
    _, entry = real
    assert entry["counts"]["object_key_images"] == 2
    assert any("WEATHERAPI_CDN_URL" in w for w in entry["warnings"])


def _rewrite(folder: Path, name: str, old: str, new: str) -> None:
    path = folder / name
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")


def _append(folder: Path, line: str, create: str | None = None) -> None:
    if create:
        (folder / "images" / create).write_text("not an image")
    with open(folder / "snapshots.csv", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def test_generated_catalog_is_plausible(default_build):
    """Named after, and linked to, the place it was placed near; mountain resort cameras are
    the most viewed; no link to a district or an airport unless it is an airport camera."""
    version = contract.current_version_dir(default_build)
    cams = pl.read_parquet(version / W.WEBCAMS)
    places = pl.read_parquet(version / contract.Geocoding.LOCATIONS, columns=["id", "feature_code"])
    assert (cams["name"].str.starts_with(cams["location_name"] + " – ")).all()
    alps = cams.filter(
        pl.col("latitude").is_between(45.8, 47.6)
        & pl.col("longitude").is_between(7.3, 12.5)
        & pl.col("name").str.contains("Ski|Summit|Glacier|Pass|Cable|Chairlift")
    )
    elsewhere = cams.filter(~pl.col("latitude").is_between(44.0, 47.8))
    assert alps["views"].median() > 3 * elsewhere["views"].median()
    mountain = "Ski|Summit|Glacier|Pass|Cable|Chairlift|Mountain|Slope"
    top = cams.sort("views", descending=True).head(200)
    assert (
        top["name"].str.contains(mountain).mean() > 2 * cams["name"].str.contains(mountain).mean()
    )
    linked = cams.join(places, left_on="location_public_id", right_on="id")
    airports = linked.filter(pl.col("feature_code") == "AIRP")
    assert airports["name"].str.contains("Airport|Runway").all()
    assert (linked["feature_code"] != "PPLX").all()


def test_generated_webcams_stand_in_their_places_timezone(default_build):
    """A camera named after a border town stands on the town's side (its country is the
    town's): the timezone of its coordinate, as built, is that of the town's coordinate."""
    version = contract.current_version_dir(default_build)
    cams = pl.read_parquet(version / W.WEBCAMS, columns=["location_public_id", "timezone"])
    places = pl.read_parquet(version / contract.Geocoding.LOCATIONS, columns=["id", "lat", "lon"])
    linked = cams.join(places, left_on="location_public_id", right_on="id")
    assert linked.height == cams.height
    zones = available_timezones()
    at_place = [
        z if z in zones else "UTC"
        for z in (get_tz(x, y) for x, y in zip(linked["lon"].to_list(), linked["lat"].to_list()))
    ]
    assert linked["timezone"].to_list() == at_place
