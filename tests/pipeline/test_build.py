"""`python -m pipeline build` end to end on the hand-made GeoNames dump, run as a user runs it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pyarrow.parquet as pq
import pytest

import contract

pytestmark = pytest.mark.slow  # they build with the pipeline

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "geonames"
TABLE_VIEWS = ("locations", "countries", "country_names", "place_names")
FIXTURE_ROWS = {"locations": 12, "countries": 9, "place_names": 22}
FIXTURE_COUNTRIES = ["AE", "AW", "CC", "CH", "DE", "MS", "NA", "NL", "RU"]
# These tests are about the build machinery on the geocoding fixture; the other areas have
# tests of their own (and would build their offline defaults in every test here).
GEOCODING = ("--only", "geocoding")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def artifact_hashes(version: Path) -> dict[str, str]:
    """sha256 of every Parquet table and every server index file of a version."""
    files = sorted(version.rglob("*.parquet")) + sorted((version / "geocoding" / "index").iterdir())
    return {str(f.relative_to(version)): sha256(f) for f in files}


def all_hashes(out: Path) -> dict[str, str]:
    """sha256 of every file under OUT/versions/ (for "left intact" checks)."""
    root = out / contract.VERSIONS
    return {str(f.relative_to(root)): sha256(f) for f in sorted(root.rglob("*")) if f.is_file()}


def version_dirs(out: Path) -> list[str]:
    return sorted(p.name for p in (out / contract.VERSIONS).iterdir())


def published(out: Path) -> Path:
    """The version `current` points to, checked to be a relative symlink into versions/."""
    pointer = out / contract.CURRENT
    assert pointer.is_symlink()
    target = Path(os.readlink(pointer))
    assert not target.is_absolute() and target.parent == Path(contract.VERSIONS)
    version = pointer.resolve(strict=True)
    assert version.parent == (out / contract.VERSIONS).resolve()
    assert contract.current_version_dir(out) == version
    return version


def duckdb_cli() -> str | None:
    """The duckdb CLI on PATH, else the one installed next to this Python (the dev extra)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), str(Path(sys.executable).parent)])
    return shutil.which("duckdb", path=search)


def copy_datasets(root: Path) -> Path:
    shutil.copytree(FIXTURE, root / "geonames")
    return root


@pytest.fixture(scope="module")
def built(module_tmp, pipeline_cli):
    """One successful fixture build, shared read-only by the tests that only inspect it."""
    root = module_tmp("built")
    datasets = copy_datasets(root / "datasets")
    out = root / "out"
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert result.returncode == 0, result.stderr
    version = published(out)
    return SimpleNamespace(
        datasets=datasets,
        out=out,
        result=result,
        version=version,
        manifest=contract.read_manifest(version),
    )


# --- a successful build ------------------------------------------------------------------------


def test_build_publishes_a_version(built):
    assert built.result.returncode == 0
    assert "published " + built.version.name in built.result.stderr
    assert version_dirs(built.out) == [built.version.name]
    assert (built.version / contract.MANIFEST).is_file()
    assert (built.version / contract.CATALOG).is_file()
    assert not (built.version / (contract.MANIFEST + ".tmp")).exists()
    leftovers = [p.name for p in built.out.iterdir() if p.name.startswith(".current")]
    assert leftovers == []


def test_manifest(built):
    manifest = built.manifest
    assert manifest["schema_version"] == contract.SCHEMA_VERSION
    assert manifest["build_id"] == built.version.name
    assert set(manifest["areas"]) == {"geocoding"}
    geo = manifest["areas"]["geocoding"]
    assert geo["version"].startswith("geocoding-") and len(geo["version"]) == len("geocoding-") + 12
    assert geo["schema_version"] == contract.SCHEMA_VERSION
    assert geo["source"]["kind"] == "real"
    assert geo["source"]["generated"] is False
    assert "GeoNames" in geo["source"]["licence"] and "CC BY 4.0" in geo["source"]["licence"]
    # inputs: paths relative to --datasets, sizes and checksums of the files actually read
    inputs = {i["path"]: i for i in geo["inputs"]}
    assert set(inputs) == {
        "geonames/cities500.txt",
        "geonames/countryInfo.txt",
        "geonames/admin1CodesASCII.txt",
        "geonames/admin2Codes.txt",
    }
    for rel, entry in inputs.items():
        assert entry["sha256"] == sha256(built.datasets / rel)
        assert entry["bytes"] == (built.datasets / rel).stat().st_size
    # tables: one entry per view, row counts matching the Parquet files
    assert set(geo["tables"]) == set(TABLE_VIEWS)
    for name, table in geo["tables"].items():
        assert table["file"] == contract.TABLES[name]
        assert table["rows"] == pq.ParquetFile(built.version / table["file"]).metadata.num_rows
    for name, rows in FIXTURE_ROWS.items():
        assert geo["tables"][name]["rows"] == rows
    assert geo["tables"]["country_names"]["rows"] > 1000  # every CLDR language
    # files: every listed file exists, and every file of the area is listed
    assert all((built.version / f).is_file() for f in geo["files"])
    on_disk = {
        str(f.relative_to(built.version))
        for f in (built.version / "geocoding").rglob("*")
        if f.is_file()
    }
    assert on_disk == set(geo["files"])
    check_coverage(geo["coverage"], built.version)


def check_coverage(coverage: dict, version) -> None:
    """Admin name shares recomputed from the locations table (GeoNames places only)."""
    rows = [
        r
        for r in pq.read_table(version / contract.TABLES["locations"]).to_pylist()
        if r["feature_code"] != "AIRP"
    ]
    named = [r for r in rows if r["admin2_name"] is not None]
    assert coverage["admin2_name"] == round(len(named) / len(rows), 4)
    divided = {(r["country_code"], r["admin1_code"]) for r in named}
    inside = [r for r in rows if (r["country_code"], r["admin1_code"]) in divided]
    assert coverage["admin2_name_where_divided"] == round(len(named) / len(inside), 4)


def test_built_tables_keep_the_hard_cases(built):
    locations = {
        r["id"]: r for r in pq.read_table(built.version / contract.Geocoding.LOCATIONS).to_pylist()
    }
    assert list(pq.read_schema(built.version / contract.Geocoding.LOCATIONS).names) == list(
        contract.Geocoding.LOCATION_COLUMNS
    )
    assert locations["3352136"]["country_code"] == "NA"  # Windhoek
    assert locations["3577154"]["admin1_code"] == "00"  # Oranjestad
    assert locations["3577154"]["admin1_name"] is None
    assert locations["7304591"]["admin1_code"] is None  # West Island
    assert locations["2657896"]["elevation"] == 429  # dem fallback
    assert locations["6691113"]["elevation"] is None  # dem -9999
    assert locations["3578069"]["population"] is None  # population 0
    assert locations["9990001"]["name"] == 'Sovkhoz "Krasnyy Oktyabr\'"'
    assert locations["9990002"]["name"] == '"Zarya" Sel\'khoz'
    assert locations["6296725"]["feature_code"] == "AIRP"  # airport kept
    assert not {"2657895", "2658434", "6951076"} & set(locations)  # non-P dropped
    assert locations["3352844"]["timezone"] == "Africa/Windhoek"  # filled by the build
    assert list(locations) == sorted(locations)  # id order
    countries = pq.read_table(built.version / contract.Geocoding.COUNTRIES).to_pylist()
    assert [c["code"] for c in countries] == FIXTURE_COUNTRIES  # no CS, no AN
    namibia = next(c for c in countries if c["code"] == "NA")
    assert (namibia["name"], namibia["flag"], namibia["timezone"]) == (
        "Namibia",
        "🇳🇦",
        "Africa/Windhoek",
    )


# --- the catalog, opened the way users open it ------------------------------------------------

CATALOG_SQL = """
select
  (select count(*) from locations) as locations,
  (select count(*) from countries) as countries,
  (select count(*) from country_names) as country_names,
  (select count(*) from place_names) as place_names,
  (select country_code from locations where id = '3352136') as windhoek_cc,
  (select string_agg(code, ',' order by code) from countries) as codes,
  (select name from country_names where code = 'NA' and language = 'de') as namibia_de,
  (select name from locations where id = '9990002') as zarya,
  (select count(*) from place_names where name = '"Oktyabr''"') as quoted_alias
"""


def check_catalog_row(row: dict, manifest: dict) -> None:
    tables = manifest["areas"]["geocoding"]["tables"]
    for view in TABLE_VIEWS:
        assert row[view] == tables[view]["rows"], view
    assert row["windhoek_cc"] == "NA"
    assert row["codes"] == ",".join(FIXTURE_COUNTRIES)
    assert row["namibia_de"] == "Namibia"
    assert row["zarya"] == '"Zarya" Sel\'khoz'
    assert row["quoted_alias"] == 1


def test_catalog_with_the_duckdb_cli(built, tmp_path):
    cli = duckdb_cli()
    if cli is None:
        pytest.skip("duckdb CLI not installed (pip install duckdb-cli, the dev extra)")
    catalog = built.out / contract.CURRENT / contract.CATALOG
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [cli, "-readonly", "-json", str(catalog), "-c", CATALOG_SQL],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 1
    check_catalog_row(rows[0], built.manifest)
    assert list(elsewhere.iterdir()) == []  # read-only: no WAL or temp files anywhere


def test_catalog_with_duckdb_python_from_another_cwd(built, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    catalog = built.out / contract.CURRENT / contract.CATALOG
    before = sorted(p.name for p in built.version.iterdir())
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        cursor = con.execute(CATALOG_SQL)
        columns = [d[0] for d in cursor.description]
        row = dict(zip(columns, cursor.fetchone()))
        views = {
            r[0]
            for r in con.execute(
                "select view_name from duckdb_views() where not internal"
            ).fetchall()
        }
    finally:
        con.close()
    check_catalog_row(row, built.manifest)
    assert views == set(TABLE_VIEWS)
    assert sorted(p.name for p in built.version.iterdir()) == before
    assert list(tmp_path.iterdir()) == []


# --- rebuilds, --only and argument errors --------------------------------------------------------


def test_rebuild_is_byte_identical(tmp_path, pipeline_cli):
    datasets = copy_datasets(tmp_path / "datasets")
    out = tmp_path / "out"
    first = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert first.returncode == 0, first.stderr
    v1 = published(out)
    # an unpublished leftover (e.g. from a killed build) is pruned by the next build
    leftover = out / contract.VERSIONS / "19990101T000000Z-dead00"
    (leftover / "geocoding").mkdir(parents=True)
    second = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert second.returncode == 0, second.stderr
    v2 = published(out)
    assert v2 != v1
    assert version_dirs(out) == sorted([v1.name, v2.name])  # previous kept, leftover gone
    h1, h2 = artifact_hashes(v1), artifact_hashes(v2)
    assert len(h1) == len(TABLE_VIEWS) + 25  # Parquet tables + index files
    assert h1 == h2
    m1, m2 = contract.read_manifest(v1), contract.read_manifest(v2)
    assert m1["build_id"] != m2["build_id"]
    assert m1["areas"]["geocoding"] == m2["areas"]["geocoding"]  # same data version


def test_only_geocoding(datasets, tmp_path, pipeline_cli):
    out = tmp_path / "out"
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", "geocoding")
    assert result.returncode == 0, result.stderr
    manifest = contract.read_manifest(published(out))
    assert set(manifest["areas"]) == {"geocoding"}
    assert manifest["areas"]["geocoding"]["tables"]["locations"]["rows"] == 12


@pytest.fixture(scope="module")
def rebuilds(module_tmp, pipeline_cli):
    """Four builds into one directory, as an operator makes them: geocoding and webcams, then
    `--only webcams` three times (webcams is the quick one on the fixture dump). The README:
    "Areas not rebuilt with --only are carried over from the previous version. The newest
    three versions are kept." Each version's manifest and file hashes are taken right after
    its build, before later builds prune it."""
    root = module_tmp("rebuilds")
    datasets = copy_datasets(root / "datasets")
    out = root / "out"
    builds = []
    for only in (("geocoding", "webcams"), ("webcams",), ("webcams",), ("webcams",)):
        result = pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", *only)
        assert result.returncode == 0, result.stderr
        version = published(out)
        builds.append(
            SimpleNamespace(
                version=version,
                manifest=contract.read_manifest(version),
                hashes=all_hashes(out),
                stderr=result.stderr,
            )
        )
    return SimpleNamespace(out=out, builds=builds)


def _in_version(hashes: dict[str, str], version: Path, area: str) -> dict[str, str]:
    """The entries of all_hashes() under VERSION/AREA/, by their path inside the version."""
    prefix = f"{version.name}/{area}/"
    return {
        rel.removeprefix(version.name + "/"): h
        for rel, h in hashes.items()
        if rel.startswith(prefix)
    }


def test_only_carries_the_other_areas_over_unchanged(rebuilds):
    first, second = rebuilds.builds[:2]
    assert second.manifest["build_id"] == second.version.name != first.manifest["build_id"]
    assert f"geocoding: carried over from {first.version.name}" in second.stderr
    # The carried entry is the previous one, saying where it came from; the rebuilt one not.
    carried = dict(second.manifest["areas"]["geocoding"])
    assert carried.pop("carried_over_from") == first.version.name
    assert carried == first.manifest["areas"]["geocoding"]
    assert "carried_over_from" not in second.manifest["areas"]["webcams"]
    # The same files (all the area's files, each listed) with the same bytes, in the new version.
    before = _in_version(first.hashes, first.version, "geocoding")
    after = _in_version(second.hashes, second.version, "geocoding")
    assert len(before) > len(TABLE_VIEWS) and set(before) == set(carried["files"])
    assert after == before
    # The new catalog reads the carried tables from the new version, whatever is pruned later.
    con = duckdb.connect(str(second.version / contract.CATALOG), read_only=True)
    try:
        for view in TABLE_VIEWS:
            (rows,) = con.execute(f"select count(*) from {view}").fetchone()
            assert rows == carried["tables"][view]["rows"], view
            (sql,) = con.execute(
                "select sql from duckdb_views() where view_name = ?", [view]
            ).fetchone()
            assert str(second.version.resolve()) in sql and first.version.name not in sql
    finally:
        con.close()


def test_the_newest_three_versions_are_kept(rebuilds):
    names = [b.version.name for b in rebuilds.builds]
    assert names == sorted(names) and len(set(names)) == 4
    # After each build: every version so far, up to the newest three.
    for count, build in enumerate(rebuilds.builds, start=1):
        kept = sorted({rel.split("/", 1)[0] for rel in build.hashes})
        assert kept == names[max(0, count - 3) : count], count
    assert version_dirs(rebuilds.out) == names[1:]
    assert published(rebuilds.out).name == names[-1]
    # The first version is gone; the geocoding area the newest carries from it (through the
    # versions in between) is intact, byte for byte.
    first, newest = rebuilds.builds[0], rebuilds.builds[-1]
    assert newest.manifest["areas"]["geocoding"]["carried_over_from"] == names[-2]
    expected = _in_version(first.hashes, first.version, "geocoding")
    assert expected and {rel: sha256(newest.version / rel) for rel in expected} == expected


@pytest.mark.parametrize("area, message", [("nowhere", "invalid choice")])
def test_unavailable_only_area_exits_2(tmp_path, pipeline_cli, area, message):
    out = tmp_path / "out"
    result = pipeline_cli("build", "--datasets", tmp_path, "--out", out, "--only", area)
    assert result.returncode == 2
    assert message in result.stderr and area in result.stderr
    assert not out.exists()


# --- failed builds leave the published version alone -------------------------------------------


def _zip_places(folder: Path, damage, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """Replace cities500.txt by cities500.zip, damaged by `damage(bytes) -> bytes`."""
    text = folder / "cities500.txt"
    path = folder / "cities500.zip"
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.write(text, "cities500.txt")
    text.unlink()
    path.write_bytes(damage(path.read_bytes()))
    return path


def _flip_stored_byte(data: bytes) -> bytes:
    """Corrupt one byte of a stored (uncompressed) member: the CRC check fails."""
    data = bytearray(data)
    name_len, extra_len = struct.unpack("<2H", data[26:30])
    start = 30 + name_len + extra_len
    size = struct.unpack("<L", data[18:22])[0]
    data[start + size // 2] ^= 0x01
    return bytes(data)


def _bad_deflate_block(data: bytes) -> bytes:
    """First deflate block header with the reserved block type 3: zlib raises on read."""
    data = bytearray(data)
    name_len, extra_len = struct.unpack("<2H", data[26:30])
    data[30 + name_len + extra_len] = 0x07
    return bytes(data)


def _rewrite(folder: Path, name: str, change) -> Path:
    path = folder / name
    path.write_bytes(change(path.read_bytes()))
    return path


def _short_namibia_row(data: bytes) -> bytes:
    lines = data.decode("utf-8").splitlines(keepends=True)
    return "".join(
        "\t".join(line.split("\t")[:8]) + "\n" if line.startswith("NA\t") else line
        for line in lines
    ).encode("utf-8")


def _latitude(value: str):
    def change(data: bytes) -> bytes:
        lines = data.decode("utf-8").splitlines(keepends=True)
        fields = lines[0].split("\t")
        fields[4] = value
        lines[0] = "\t".join(fields)
        return "".join(lines).encode("utf-8")

    return change


BROKEN = {
    "countryinfo-short-row": (lambda g: _rewrite(g, "countryInfo.txt", _short_namibia_row)),
    "countryinfo-bad-population": (
        lambda g: _rewrite(g, "countryInfo.txt", lambda d: d.replace(b"\t2448255\t", b"\t?\t"))
    ),
    "countryinfo-comments-only": (
        lambda g: _rewrite(
            g,
            "countryInfo.txt",
            lambda d: b"".join(
                line for line in d.splitlines(keepends=True) if line.startswith(b"#")
            ),
        )
    ),
    "countryinfo-not-utf8": (
        lambda g: _rewrite(
            g,
            "countryInfo.txt",
            lambda d: d.decode("utf-8").replace("Namibia", "Namíbia").encode("latin-1"),
        )
    ),
    "countryinfo-missing": (lambda g: (g / "countryInfo.txt").unlink() or g / "countryInfo.txt"),
    "cities-zip-truncated": (lambda g: _zip_places(g, lambda d: d[: len(d) // 2])),
    "cities-zip-bad-crc": (lambda g: _zip_places(g, _flip_stored_byte, zipfile.ZIP_STORED)),
    "cities-zip-corrupt-deflate": (lambda g: _zip_places(g, _bad_deflate_block)),
    "cities-wrong-column-count": (
        lambda g: _rewrite(g, "cities500.txt", lambda d: d.replace(b"\t2024-01-18\n", b"\n", 1))
    ),
    "cities-non-numeric-latitude": (lambda g: _rewrite(g, "cities500.txt", _latitude("S22"))),
    "cities-nan-latitude": (lambda g: _rewrite(g, "cities500.txt", _latitude("nan"))),
    "admin2-missing": (lambda g: (g / "admin2Codes.txt").unlink() or g / "admin2Codes.txt"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_failed_build_keeps_the_previous_version(built, datasets, tmp_path, pipeline_cli, case):
    out = tmp_path / "out"
    shutil.copytree(built.out, out, symlinks=True)
    previous = published(out)
    before = all_hashes(out)
    breaker = BROKEN[case]
    broken = breaker(datasets / "geonames")

    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)

    assert result.returncode != 0
    # `current` still points at the previous version, whose files are untouched,
    # and the failed build left no partial version directory behind
    assert published(out) == previous
    assert os.readlink(out / contract.CURRENT) == os.readlink(built.out / contract.CURRENT)
    assert version_dirs(out) == [previous.name]
    assert all_hashes(out) == before
    assert [p.name for p in out.iterdir() if p.name.startswith(".current")] == []
    # one clear line naming the broken file
    expected = f"error: build failed: {broken}: "
    assert expected in result.stderr, result.stderr
    assert f"{previous.name} is still published" in result.stderr
    assert "Traceback" not in result.stderr


def test_failed_first_build_publishes_nothing(datasets, tmp_path, pipeline_cli):
    (datasets / "geonames" / "admin1CodesASCII.txt").unlink()
    out = tmp_path / "out"
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert result.returncode == 1
    assert "admin1CodesASCII.txt" in result.stderr and "nothing is published" in result.stderr
    assert not (out / contract.CURRENT).exists() and not (out / contract.CURRENT).is_symlink()
    assert version_dirs(out) == []


# --- regressions: alternate names, quoting in paths -------------------------------------------


def test_build_with_alternate_names(datasets, tmp_path, pipeline_cli):
    rows = [
        ("1", "3352136", "de", "Windhuk", "1", "", "", "", "", ""),
        ("2", "3352136", "iata", "WDH", "", "", "", "", "", ""),
        ("3", "2657896", "it", "Zurigo", "1", "", "", "", "", ""),
    ]
    with zipfile.ZipFile(
        datasets / "geonames" / "alternateNamesV2.zip", "w", zipfile.ZIP_DEFLATED
    ) as archive:
        archive.writestr("alternateNamesV2.txt", "".join("\t".join(r) + "\n" for r in rows))
    out = tmp_path / "out"
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert result.returncode == 0, result.stderr
    version = published(out)
    geo = contract.read_manifest(version)["areas"]["geocoding"]
    assert "geonames/alternateNamesV2.zip" in {i["path"] for i in geo["inputs"]}
    names = pq.read_table(version / contract.Geocoding.PLACE_NAMES).to_pylist()
    assert {(r["id"], r["language"], r["name"]) for r in names} == {
        ("3352136", "de", "Windhuk"),
        ("2657896", "it", "Zurigo"),
    }


def test_out_dir_with_an_apostrophe(datasets, tmp_path, pipeline_cli):
    out = tmp_path / "o'brien" / "out"
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, *GEOCODING)
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(out / contract.CURRENT / contract.CATALOG), read_only=True)
    try:
        assert con.execute("select count(*) from locations").fetchone() == (12,)
    finally:
        con.close()
