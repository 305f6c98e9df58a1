"""pipeline.geocoding.sources.geonames on the hand-made fixture dump and on the real GeoNames files."""

from __future__ import annotations

import shutil
import struct
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.build import run_build
from pipeline.common.io import InputError
from pipeline.geocoding.sources import geonames

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "geonames"
# geonameids in tests/fixtures/geonames/cities500.txt
WINDHOEK, SWAKOPMUND = "3352136", "3352844"
ZURICH, ZURICH_ADM1, MATTERHORN, ZURICH_HB, ZURICH_AIRPORT = (
    "2657896",
    "2657895",
    "2658434",
    "6951076",
    "6296725",
)
ORANJESTAD, WEST_ISLAND, PALM_JUMEIRAH, PLYMOUTH = "3577154", "7304591", "6691113", "3578069"
DEN_BOSCH, MUNICH, SOVKHOZ, ZARYA = "2747351", "2867714", "9990001", "9990002"
DROPPED = {ZURICH_ADM1, MATTERHORN, ZURICH_HB}  # feature classes A, T and S (not AIRP)
KEPT = {
    WINDHOEK,
    SWAKOPMUND,
    ZURICH,
    ZURICH_AIRPORT,
    ORANJESTAD,
    WEST_ISLAND,
    PALM_JUMEIRAH,
    PLYMOUTH,
    DEN_BOSCH,
    MUNICH,
    SOVKHOZ,
    ZARYA,
}
SOVKHOZ_NAME = 'Sovkhoz "Krasnyy Oktyabr\'"'
ZARYA_NAME = '"Zarya" Sel\'khoz'


def rows_by_id(table: pa.Table) -> dict[str, dict]:
    return {row["id"]: row for row in table.to_pylist()}


def place_lines() -> list[str]:
    return (FIXTURE / "cities500.txt").read_text(encoding="utf-8").splitlines(keepends=True)


def set_field(line: str, column: str, value: str) -> str:
    fields = line.rstrip("\n").split("\t")
    fields[geonames.PLACE_COLUMNS.index(column)] = value
    return "\t".join(fields) + "\n"


@pytest.fixture(scope="module")
def gazetteer():
    """The fixture dump read in place (the reader never writes)."""
    return geonames.read(FIXTURE.parent)


@pytest.fixture(scope="module")
def places(gazetteer) -> dict[str, dict]:
    return rows_by_id(gazetteer.places)


# --- the fixture itself is in the real dump format ---------------------------------------


def test_fixture_is_in_dump_format():
    for line in place_lines():
        assert line.endswith("\n") and not line.endswith("\r\n")
        assert len(line.rstrip("\n").split("\t")) == 19, line
    info = (FIXTURE / "countryInfo.txt").read_text(encoding="utf-8").splitlines()
    assert info[0].startswith("#") and any(line.startswith("#ISO\tISO3\t") for line in info)
    assert [line.split("\t")[0] for line in info[-2:]] == ["CS", "AN"]
    for name in ("admin1CodesASCII.txt", "admin2Codes.txt"):
        for line in (FIXTURE / name).read_text(encoding="utf-8").splitlines():
            assert len(line.split("\t")) == 4, line


# --- read() on the fixture ------------------------------------------------------------------


def test_read_fixture(gazetteer):
    assert gazetteer.kind == "real"
    assert [p.name for p in gazetteer.inputs] == [
        "cities500.txt",
        "countryInfo.txt",
        "admin1CodesASCII.txt",
        "admin2Codes.txt",
    ]
    assert "cities500.txt" in gazetteer.notes
    assert "alternatenames" not in gazetteer.places.column_names
    # conformed() is what the builder calls: must not fail on the reader's output
    conformed = gazetteer.conformed()
    assert conformed.places.num_rows == len(KEPT)


def test_feature_class_filter_drops_non_p_and_keeps_airports(places):
    assert set(places) == KEPT
    assert not DROPPED & set(places)
    assert places[ZURICH_AIRPORT]["feature_code"] == "AIRP"
    assert places[ZURICH_AIRPORT]["name"] == "Zürich Airport"


def test_namibia_country_code_is_not_null(places, gazetteer):
    assert places[WINDHOEK]["country_code"] == "NA"
    assert places[SWAKOPMUND]["country_code"] == "NA"
    assert places[WINDHOEK]["admin1_name"] == "Khomas Region"
    countries = {r["code"]: r for r in gazetteer.countries.to_pylist()}
    assert countries["NA"]["name"] == "Namibia"
    assert countries["NA"]["iso3"] == "NAM"
    # "NA" is also the North America continent code
    assert countries["AW"]["continent"] == "NA"
    assert countries["MS"]["continent"] == "NA"


def test_admin1_code_00_and_empty_give_null_names(places):
    aruba = places[ORANJESTAD]
    assert aruba["admin1_code"] == "00"
    assert aruba["admin1_name"] is None and aruba["admin2_name"] is None
    cocos = places[WEST_ISLAND]
    assert cocos["admin1_code"] is None and cocos["admin1_name"] is None
    assert cocos["admin2_code"] is None and cocos["admin2_name"] is None


def test_admin_names_are_joined(places):
    assert (places[ZURICH]["admin1_name"], places[ZURICH]["admin2_name"]) == (
        "Zurich",
        "Bezirk Zürich",
    )
    assert (places[DEN_BOSCH]["admin1_name"], places[DEN_BOSCH]["admin2_name"]) == (
        "North Brabant",
        "Gemeente 's-Hertogenbosch",
    )
    assert places[DEN_BOSCH]["admin2_code"] == "0796"  # leading zero kept: codes are text
    assert places[SWAKOPMUND]["admin2_name"] == "Swakopmund Constituency"
    assert places[WINDHOEK]["admin2_code"] is None and places[WINDHOEK]["admin2_name"] is None
    # the airport has no admin2 code, so no admin2 name even though CH.ZH.112 exists
    assert places[ZURICH_AIRPORT]["admin2_name"] is None


def test_elevation_falls_back_to_dem_and_minus_9999_is_null(places, gazetteer):
    assert gazetteer.places.schema.field("elevation").type == pa.int32()
    assert places[WINDHOEK]["elevation"] == 1700  # elevation wins over dem 1656
    assert places[ZURICH]["elevation"] == 429  # empty elevation: dem
    assert places[PALM_JUMEIRAH]["elevation"] is None  # empty elevation, dem -9999
    assert places[ZURICH_AIRPORT]["elevation"] == 432


def test_population_zero_or_empty_is_null(places):
    assert places[PLYMOUTH]["population"] is None
    assert places[ZURICH_AIRPORT]["population"] is None
    assert places[ZARYA]["population"] is None
    assert places[WINDHOEK]["population"] == 268132
    assert places[MUNICH]["population"] == 1260391


def test_empty_timezone_is_null_in_the_reader(places):
    assert places[SWAKOPMUND]["timezone"] is None  # the builder fills it from coordinates
    assert places[WINDHOEK]["timezone"] == "Africa/Windhoek"


def test_names_with_quotes_survive_verbatim(places, gazetteer):
    assert places[SOVKHOZ]["name"] == SOVKHOZ_NAME
    assert places[ZARYA]["name"] == ZARYA_NAME  # a field starting with a double quote
    assert places[DEN_BOSCH]["name"] == "'s-Hertogenbosch"
    names = {(r["id"], r["name"]) for r in gazetteer.names.to_pylist()}
    assert (SOVKHOZ, "Krasnyy Oktyabr'") in names
    assert (SOVKHOZ, '"Oktyabr\'"') in names


def test_names_from_alternatenames_column(gazetteer):
    names = gazetteer.names.to_pylist()
    zurich = {r["name"] for r in names if r["id"] == ZURICH}
    # the ASCII name is added when it differs from the name
    assert zurich == {"Zuerich", "Zurich", "Zurigo", "ZRH", "Zueri"}
    assert all(r["language"] is None for r in names)
    assert not any(
        r["is_preferred"] or r["is_short"] or r["is_colloquial"] or r["is_historic"] for r in names
    )
    assert all(r["name"] for r in names)
    assert {r["id"] for r in names} <= KEPT
    assert WEST_ISLAND not in {r["id"] for r in names}


# --- read_country_info ---------------------------------------------------------------------


def test_read_country_info_fixture():
    table = geonames.read_country_info(FIXTURE / "countryInfo.txt")
    codes = table.column("code").to_pylist()
    assert codes == ["AE", "AW", "CC", "CH", "DE", "MS", "NA", "NL", "RU", "CS", "AN"]
    rows = {r["code"]: r for r in table.to_pylist()}
    assert rows["NA"]["population"] == 2448255
    assert rows["NA"]["capital"] == "Windhoek"
    assert table.schema.field("population").type == pa.int64()


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            lambda text: "".join(
                "\t".join(line.split("\t")[:10]) + "\n" if line.startswith("NA\t") else line
                for line in text.splitlines(keepends=True)
            ),
            "expected 19 tab-separated columns",
        ),
        (lambda text: text.replace("\t2448255\t", "\t2.4 million\t", 1), "population"),
        (
            lambda text: "".join(
                line for line in text.splitlines(keepends=True) if line.startswith("#")
            ),
            "no country rows",
        ),
    ],
    ids=["short-row", "non-numeric-population", "only-comments"],
)
def test_read_country_info_errors_name_the_file(tmp_path, change, problem):
    path = tmp_path / "countryInfo.txt"
    path.write_text(
        change((FIXTURE / "countryInfo.txt").read_text(encoding="utf-8")), encoding="utf-8"
    )
    with pytest.raises(InputError) as caught:
        geonames.read_country_info(path)
    assert caught.value.path == str(path)
    assert problem in caught.value.problem


def test_country_info_not_utf8_is_an_input_error(tmp_path):
    path = tmp_path / "countryInfo.txt"
    path.write_bytes(
        (FIXTURE / "countryInfo.txt")
        .read_text(encoding="utf-8")
        .replace("Namibia", "Namíbia")
        .encode("latin-1")
    )
    with pytest.raises(InputError) as caught:
        geonames.read_country_info(path)
    assert caught.value.path == str(path)


# --- choosing the places file ----------------------------------------------------------------


@pytest.mark.parametrize(
    "files, chosen",
    [
        (["cities500.txt"], "cities500.txt"),
        (["cities15000.zip"], "cities15000.zip"),
        (["cities15000.zip", "cities500.txt"], "cities500.txt"),  # the most places wins
        (["cities1000.zip", "cities15000.zip", "cities5000.zip", "cities500.zip"], "cities500.zip"),
        (["allCountries.zip", "cities500.txt", "cities15000.zip"], "allCountries.zip"),
    ],
)
def test_places_file_choice(tmp_path, files, chosen):
    for name in files + [
        "countryInfo.txt",
        "admin1CodesASCII.txt",
        "admin2Codes.txt",
        "alternateNamesV2.zip",
    ]:
        (tmp_path / name).touch()
    assert geonames.places_file(tmp_path) == tmp_path / chosen


def test_no_places_file_names_the_folder(tmp_path):
    (tmp_path / "countryInfo.txt").touch()
    with pytest.raises(InputError) as caught:
        geonames.places_file(tmp_path)
    assert caught.value.path == str(tmp_path)


@pytest.mark.parametrize("name", ["admin1CodesASCII.txt", "admin2Codes.txt", "countryInfo.txt"])
def test_missing_required_file_names_it(datasets, name):
    (datasets / "geonames" / name).unlink()
    with pytest.raises(InputError) as caught:
        geonames.read(datasets)
    assert caught.value.path == str(datasets / "geonames" / name)
    assert "missing" in caught.value.problem


# --- malformed places files ------------------------------------------------------------------


def write_places(folder: Path, lines: list[str]) -> Path:
    path = folder / "cities500.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "mutate",
    [
        lambda line: line.replace("\t2024-01-18\n", "\n"),  # 18 columns
        lambda line: line.replace("\n", "\textra\n"),  # 20 columns
    ],
    ids=["18-columns", "20-columns"],
)
def test_wrong_column_count_is_an_input_error(tmp_path, mutate):
    lines = place_lines()
    lines[0] = mutate(lines[0])
    path = write_places(tmp_path, lines)
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)
    assert "malformed row" in caught.value.problem
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "column, value, problem",
    [
        ("latitude", "abc", "column latitude"),
        ("longitude", "8,55", "column longitude"),
        ("population", "12k", "column population"),
        ("elevation", "high", "column elevation"),
        ("dem", "n/a", "column dem"),
        ("latitude", "95.0", "coordinates out of range"),
        ("longitude", "-180.5", "coordinates out of range"),
        ("latitude", "", "coordinates out of range"),
        ("latitude", "nan", "coordinates are not finite numbers (latitude nan"),
        ("longitude", "-inf", "coordinates are not finite numbers (latitude"),
        ("geonameid", "A123", "non-numeric id"),
    ],
)
def test_bad_values_are_input_errors(tmp_path, column, value, problem):
    lines = place_lines()
    lines[2] = set_field(lines[2], column, value)
    path = write_places(tmp_path, lines)
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)
    assert problem in caught.value.problem


def test_invalid_utf8_in_places_is_an_input_error(tmp_path):
    path = tmp_path / "cities500.txt"
    path.write_bytes(
        (FIXTURE / "cities500.txt")
        .read_bytes()
        .replace("Zürich Airport".encode(), "Zürich Airport".encode("latin-1"))
    )
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)


def test_no_populated_places_is_an_input_error(tmp_path):
    lines = [
        line
        for line in place_lines()
        if line.split("\t")[0] in (ZURICH_ADM1, MATTERHORN, ZURICH_HB)
    ]
    path = write_places(tmp_path, lines)
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)
    assert "no populated places" in caught.value.problem


def test_last_line_without_newline_is_read(tmp_path):
    lines = place_lines()
    lines[-1] = lines[-1].rstrip("\n")
    table = geonames.read_places(write_places(tmp_path, lines), {}, {})
    assert table.num_rows == len(KEPT)
    assert ZARYA in table.column("id").to_pylist()


def test_zip_places_file_is_read_like_the_txt(tmp_path, places):
    folder = tmp_path / "datasets" / "geonames"
    shutil.copytree(FIXTURE, folder)
    with zipfile.ZipFile(folder / "cities500.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(folder / "cities500.txt", "cities500.txt")
    (folder / "cities500.txt").unlink()
    gazetteer = geonames.read(folder.parent)
    assert gazetteer.inputs[0] == folder / "cities500.zip"
    assert rows_by_id(gazetteer.places) == places


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda data: data[: len(data) // 2], "not a valid zip archive"),
        (lambda data: b"", "not a valid zip archive"),
    ],
    ids=["truncated", "empty"],
)
def test_broken_zip_is_an_input_error(tmp_path, make, problem):
    path = tmp_path / "cities500.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(FIXTURE / "cities500.txt", "cities500.txt")
    path.write_bytes(make(path.read_bytes()))
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)
    assert problem in caught.value.problem


def test_corrupt_deflate_stream_is_an_input_error(tmp_path):
    path = tmp_path / "cities500.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(FIXTURE / "cities500.txt", "cities500.txt")
    data = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack("<2H", data[26:30])
    data[30 + name_len + extra_len] = 0x07  # first deflate block: reserved block type 3
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)


def test_zip_without_the_expected_member_is_an_input_error(tmp_path):
    path = tmp_path / "cities500.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(FIXTURE / "cities500.txt", "cities1000.txt")
    with pytest.raises(InputError) as caught:
        geonames.read_places(path, {}, {})
    assert caught.value.path == str(path)
    assert "no member cities500.txt" in caught.value.problem


# --- a malformed input makes the (in-process) build fail with an InputError --------------------


@pytest.mark.parametrize(
    "column, value",
    [
        (None, None),  # wrong column count
        ("latitude", "north"),  # non-numeric latitude
    ],
    ids=["wrong-column-count", "non-numeric-latitude"],
)
def test_build_fails_with_input_error_naming_the_file(datasets, tmp_path, column, value):
    lines = place_lines()
    if column is None:
        lines[2] = lines[2].replace("\t", "", 1)  # 18 columns
    else:
        lines[2] = set_field(lines[2], column, value)
    path = write_places(datasets / "geonames", lines)
    out = tmp_path / "out"
    with pytest.raises(InputError) as caught:
        run_build(datasets, out)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    assert not (out / "current").exists()
    assert list((out / "versions").iterdir()) == []  # the partial version was discarded


# --- alternateNamesV2.zip (generated at runtime, never committed) ----------------------------

ALTNAMES = [
    # alternatenameid geonameid isolanguage alternate_name pref short colloq hist from to
    ("1", WINDHOEK, "de", "Windhuk", "1", "", "", "", "", ""),
    ("2", WINDHOEK, "af", "Windhoek", "", "", "", "", "", ""),
    ("3", WINDHOEK, "iata", "WDH", "", "", "", "", "", ""),
    ("4", WINDHOEK, "link", "https://en.wikipedia.org/wiki/Windhoek", "", "", "", "", "", ""),
    ("5", WINDHOEK, "", "Ai-Gams", "", "", "", "1", "", ""),
    ("6", ZURICH, "it", "Zurigo", "1", "1", "", "", "", ""),
    ("7", ZURICH, "gsw", "Züri", "", "", "1", "", "", ""),
    ("8", ZURICH, "zh-Hant", "蘇黎世", "", "", "", "", "", ""),
    ("9", ZURICH, "post", "8001", "", "", "", "", "", ""),
    ("10", ZURICH, "fr_1793", "Zurich-la-Rouge", "", "", "", "", "", ""),
    ("11", MATTERHORN, "it", "Cervino", "", "", "", "", "", ""),  # dropped place
    ("12", SOVKHOZ, "ru", 'Совхоз "Красный Октябрь"', "", "", "", "", "", ""),
    ("13", "99999999", "en", "Nowhere", "", "", "", "", "", ""),  # unknown place
    ("14", ZURICH_AIRPORT, "iata", "ZRH", "", "", "", "", "", ""),  # an airport's codes:
    ("15", ZURICH_AIRPORT, "icao", "LSZH", "", "", "", "", "", ""),  # matched, not shown
    (
        "16",
        ZURICH_AIRPORT,
        "link",
        "https://en.wikipedia.org/wiki/Zurich_Airport",
        "",
        "",
        "",
        "",
        "",
        "",
    ),
]


def write_alternate_names(folder: Path) -> Path:
    path = folder / "alternateNamesV2.zip"
    text = "".join("\t".join(row) + "\n" for row in ALTNAMES)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("alternateNamesV2.txt", text)
        archive.writestr(
            "iso-languagecodes.txt",
            "ISO 639-3\tISO 639-2\tISO 639-1\tLanguage Name\ndeu\tger\tde\tGerman\n",
        )
    return path


def test_alternate_names_zip_replaces_the_column(datasets):
    path = write_alternate_names(datasets / "geonames")
    gazetteer = geonames.read(datasets)
    assert path in gazetteer.inputs
    names = {(r["id"], r["language"], r["name"]): r for r in gazetteer.names.to_pylist()}
    assert set(names) == {
        (WINDHOEK, "de", "Windhuk"),
        (WINDHOEK, "af", "Windhoek"),
        (WINDHOEK, None, "Ai-Gams"),
        (ZURICH, "it", "Zurigo"),
        (ZURICH, "gsw", "Züri"),
        (ZURICH, "zh-Hant", "蘇黎世"),
        (SOVKHOZ, "ru", 'Совхоз "Красный Октябрь"'),
        (ZURICH_AIRPORT, None, "ZRH"),
        (ZURICH_AIRPORT, None, "LSZH"),
    }
    assert names[(WINDHOEK, "de", "Windhuk")]["is_preferred"] is True
    assert names[(WINDHOEK, None, "Ai-Gams")]["is_historic"] is True
    assert names[(ZURICH, "it", "Zurigo")]["is_short"] is True
    assert names[(ZURICH, "gsw", "Züri")]["is_colloquial"] is True
    assert names[(ZURICH, "gsw", "Züri")]["is_preferred"] is False
    gazetteer.conformed()


def test_read_alternate_names_streams_in_small_blocks(tmp_path, monkeypatch):
    # Many Arrow blocks: the id filter and language filter apply per batch. (A plain Array of
    # ids: a ChunkedArray, which read() passes, hits the bug above.)
    monkeypatch.setattr(geonames, "BLOCK_BYTES", 64)
    path = write_alternate_names(tmp_path)
    table = geonames.read_alternate_names(path, pa.array([WINDHOEK, ZURICH, SOVKHOZ, WINDHOEK]))
    assert table.num_rows == 7
    with_airport = geonames.read_alternate_names(
        path, pa.array([ZURICH, ZURICH_AIRPORT]), pa.array([ZURICH_AIRPORT])
    )
    assert sorted((r["id"], r["language"], r["name"]) for r in with_airport.to_pylist()) == [
        (ZURICH, "gsw", "Züri"),
        (ZURICH, "it", "Zurigo"),
        (ZURICH, "zh-Hant", "蘇黎世"),
        (ZURICH_AIRPORT, None, "LSZH"),
        (ZURICH_AIRPORT, None, "ZRH"),
    ]
    assert table.column_names == list(geonames.empty_names().column_names)
    assert set(table.column("id").to_pylist()) == {WINDHOEK, ZURICH, SOVKHOZ}


# --- the real GeoNames dumps (skipped when ../shared/data/geonames is absent) ------------------


@pytest.fixture(scope="module")
def real(real_datasets):
    gazetteer = geonames.read(real_datasets)
    return gazetteer, rows_by_id(gazetteer.places)


def test_real_places_file_is_cities15000(real_datasets):
    assert geonames.places_file(real_datasets / "geonames").name == "cities15000.zip"


def test_real_every_row_is_read(real_datasets, real):
    gazetteer, places = real
    with zipfile.ZipFile(real_datasets / "geonames" / "cities15000.zip") as archive:
        with archive.open("cities15000.txt") as handle:
            raw = [line.rstrip(b"\n").split(b"\t") for line in handle]
    assert len(raw) == 32_847
    assert {len(fields) for fields in raw} == {19}
    # cities15000 holds feature class P only, so the filter keeps every row
    assert {fields[6] for fields in raw} == {b"P"}
    assert gazetteer.places.num_rows == 32_847
    assert len(places) == 32_847  # ids are unique
    assert "AIRP" not in set(gazetteer.places.column("feature_code").to_pylist())


def test_real_zurich(real):
    zurich = real[1]["2657896"]
    assert zurich["name"] == "Zürich"
    assert zurich["country_code"] == "CH"
    assert (zurich["admin1_code"], zurich["admin1_name"]) == ("ZH", "Zurich")
    assert (zurich["admin2_code"], zurich["admin2_name"]) == ("112", "Bezirk Zürich")
    assert zurich["elevation"] == 429  # empty elevation: dem
    assert zurich["timezone"] == "Europe/Zurich"


def test_real_windhoek_is_in_namibia(real):
    gazetteer, places = real
    windhoek = places["3352136"]
    assert windhoek["name"] == "Windhoek"
    assert windhoek["country_code"] == "NA"
    assert windhoek["admin1_name"] == "Khomas Region"
    assert windhoek["elevation"] == 1700
    namibians = [r for r in places.values() if r["country_code"] == "NA"]
    assert len(namibians) > 5
    assert gazetteer.places.column("country_code").null_count == 0


def test_real_admin1_00_and_empty_have_null_names(real):
    places = real[1].values()
    odd = [r for r in places if r["admin1_code"] in ("00", None)]
    assert len(odd) > 50
    # "00" joins like any code: only MC.00 (Monaco) is in admin1CodesASCII.txt
    assert {r["country_code"] for r in odd if r["admin1_name"] is not None} == {"MC"}
    assert all(r["admin1_name"] is None for r in odd if r["country_code"] != "MC")
    assert all(r["admin1_name"] is None for r in places if r["admin1_code"] is None)
    assert real[1]["3577154"]["admin1_code"] == "00"  # Oranjestad, Aruba
    assert real[1]["7304591"]["admin1_code"] is None  # West Island, Cocos Islands


def test_real_dem_minus_9999_and_population_zero_are_null(real):
    places = real[1]
    assert places["6691113"]["elevation"] is None  # The Palm Jumeirah, dem -9999
    assert places["3578069"]["population"] is None  # Plymouth, Montserrat: 0
    assert all(r["elevation"] != -9999 for r in places.values())
    assert all(r["population"] is None or r["population"] > 0 for r in places.values())


def test_real_names_with_apostrophes_survive(real):
    places = real[1]
    assert places["2239001"]["name"] == "N'zeto"
    assert places["2801154"]["name"] == "Braine-l'Alleud"


def test_real_country_info(real_datasets, real):
    table = geonames.read_country_info(real_datasets / "geonames" / "countryInfo.txt")
    codes = table.column("code").to_pylist()
    assert len(codes) == 252 and len(set(codes)) == 252
    assert codes[-2:] == ["CS", "AN"]
    assert "NA" in codes and None not in codes
    rows = {r["code"]: r for r in table.to_pylist()}
    assert rows["NA"]["name"] == "Namibia"
    assert rows["AG"]["continent"] == "NA"
    assert real[0].countries.num_rows == 252
