"""Real GeoNames dumps (download.geonames.org format): read streaming, normalise, return tables.

Files in DIR/geonames/: allCountries.zip or citiesNNN.zip/.txt, countryInfo.txt,
admin1CodesASCII.txt, admin2Codes.txt and optionally alternateNamesV2.zip, and the daily update
files held since the dumps were written (geonames_updates), overlaid while the dumps stream.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pipeline.common.io import InputError, Spill, fixed_width_bytes, release_arrow_memory
from pipeline.geocoding.sources import geonames_updates as updates
from pipeline.geocoding.sources.gazetteer import Gazetteer, empty_names

PLACE_COLUMNS = (
    "geonameid",
    "name",
    "asciiname",
    "alternatenames",
    "latitude",
    "longitude",
    "feature_class",
    "feature_code",
    "country_code",
    "cc2",
    "admin1_code",
    "admin2_code",
    "admin3_code",
    "admin4_code",
    "population",
    "elevation",
    "dem",
    "timezone",
    "modification_date",
)
ALTNAME_COLUMNS = (
    "alternatenameid",
    "geonameid",
    "isolanguage",
    "alternate_name",
    "is_preferred",
    "is_short",
    "is_colloquial",
    "is_historic",
    "from",
    "to",
)
COUNTRY_COLUMNS = (
    "iso",
    "iso3",
    "iso_numeric",
    "fips",
    "country",
    "capital",
    "area_km2",
    "population",
    "continent",
    "tld",
    "currency_code",
    "currency_name",
    "phone",
    "postal_format",
    "postal_regex",
    "languages",
    "geonameid",
    "neighbours",
    "equivalent_fips",
)
# Place columns the gazetteer does not use (never converted).
_UNUSED_COLUMNS = ("cc2", "admin3_code", "admin4_code", "modification_date")
# Language tags only: codes such as post, iata, icao, link, wkdt, unlc, abbr are not names.
LANGUAGE_TAG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
# But an airport's IATA and ICAO codes are what people search it by (the packaged default and
# the places file's alternatenames column list them among its names): kept for airports, as
# untagged names (matched, never shown).
AIRPORT_CODE_TAGS = pa.array(["iata", "icao"])
BLOCK_BYTES = 16 << 20


def present(datasets: Path) -> bool:
    """True when DIR/geonames/ holds a places file to build from."""
    return (datasets / "geonames").is_dir()


def read(datasets: Path) -> Gazetteer:
    """Read the dumps in DIR/geonames/ into the normalised gazetteer tables."""
    folder = datasets / "geonames"
    dump = places_file(folder)
    admin1 = _read_codes(_require(folder / "admin1CodesASCII.txt"))
    admin2 = _read_codes(_require(folder / "admin2Codes.txt"))
    countries_path = _require(folder / "countryInfo.txt")
    countries = read_country_info(countries_path)
    inputs = [dump, countries_path, folder / "admin1CodesASCII.txt", folder / "admin2Codes.txt"]
    alt_path = folder / "alternateNamesV2.zip"
    days = updates.applicable(folder, dump, updates.PLACE_KINDS)
    # Split the alternatenames column block by block (or skip it): it is the dump's largest.
    from_column = not alt_path.exists()
    with Spill() as place_spill, Spill() as name_spill:
        for block in iter_places(dump, admin1, admin2, alternatenames=from_column, days=days):
            if from_column:
                name_spill.append(_names_from_column(block))
                block = block.drop_columns(["alternatenames"])
            place_spill.append(block)
        places, column_names = place_spill.read(), name_spill.read()
    if alt_path.exists():
        airports = pc.equal(places.column("feature_code"), "AIRP")
        name_days = updates.applicable(folder, alt_path, updates.NAME_KINDS)
        names = read_alternate_names(
            alt_path, places.column("id"), places.column("id").filter(airports), days=name_days
        )
        inputs.append(alt_path)
        days = days + name_days
    else:
        names = column_names
    inputs += [path for day in days for path in day]
    held = f"; updates of {len(days)} day file pair(s) applied" if days else ""
    return Gazetteer(
        places=places,
        names=names,
        countries=countries,
        inputs=inputs,
        kind="real",
        notes=f"GeoNames dump files from {folder.name}/ ({dump.name}){held}",
    )


def _require(path: Path) -> Path:
    if not path.is_file():
        raise InputError(path, "required GeoNames file is missing")
    return path


def places_file(folder: Path) -> Path:
    """allCountries(.zip/.txt) if present, else the citiesNNN file with the most places."""
    for name in ("allCountries.zip", "allCountries.txt"):
        if (folder / name).is_file():
            return folder / name
    cities = sorted(folder.glob("cities*.zip")) + sorted(folder.glob("cities*.txt"))
    cities.sort(key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    if not cities:
        raise InputError(folder, "no allCountries.zip or citiesNNN.zip/.txt places file")
    return cities[0]


@contextmanager
def _open_text(path: Path) -> Iterator[IO[bytes]]:
    """Open a dump file, or the .txt member of its zip, as a binary stream."""
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                member = path.stem + ".txt"
                if member not in archive.namelist():
                    raise InputError(path, f"zip archive has no member {member}")
                with archive.open(member) as handle:
                    yield handle
        else:
            with open(path, "rb") as handle:
                yield handle
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(path, f"not a valid zip archive ({exc})") from None


def _batches(
    path: Path, columns: tuple[str, ...], include: tuple[str, ...] | None = None
) -> Iterator[pa.RecordBatch]:
    """Stream a tab-separated dump as string columns: no quoting, no null markers ("NA" is Namibia).

    Only the `include` columns (default: all) are converted; every row must still have them all.
    """
    with _open_text(path) as handle:
        try:
            reader = pacsv.open_csv(
                handle,
                read_options=pacsv.ReadOptions(column_names=list(columns), block_size=BLOCK_BYTES),
                parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in columns},
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                    include_columns=list(include or columns),
                ),
            )
            yield from reader
        except pa.ArrowInvalid as exc:
            raise InputError(path, f"malformed row: {str(exc)[:300]}") from None


def _to_number(path: Path, column: pa.Array, kind: pa.DataType, name: str) -> pa.Array:
    """Cast a text column to numbers, empty strings becoming null; bad text is an InputError."""
    column = pc.if_else(pc.equal(pc.utf8_trim_whitespace(column), ""), None, column)
    try:
        return pc.cast(column, kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(path, f"column {name}: {exc}") from None


def read_places(path: Path, admin1: dict[str, str], admin2: dict[str, str]) -> pa.Table:
    """Populated places (class P) and airports (AIRP) with admin names joined in."""
    return pa.concat_tables(list(iter_places(path, admin1, admin2)))


def iter_places(
    path: Path,
    admin1: dict[str, str],
    admin2: dict[str, str],
    alternatenames: bool = True,
    days: list[tuple[Path, Path]] = (),
) -> Iterator[pa.Table]:
    """read_places one block of the file at a time (never the whole raw dump in memory), with
    the update `days` (modifications, deletes) overlaid.

    Without `alternatenames`, that column (the largest) is not even converted.
    """
    codes1, codes2 = _code_arrays(admin1), _code_arrays(admin2)
    unused = set(_UNUSED_COLUMNS) | (set() if alternatenames else {"alternatenames"})
    include = tuple(c for c in PLACE_COLUMNS if c not in unused)
    overlay = _Overlay.of(days, PLACE_COLUMNS, include, "geonameid", 0)
    # A citiesNNN dump holds only some places: updates change those, never add others.
    whole = path.name.startswith("allCountries")
    found = False
    for batch in overlay.apply(_batches(path, PLACE_COLUMNS, include), whole):
        mask = pc.or_(
            pc.equal(batch.column("feature_class"), "P"),
            pc.equal(batch.column("feature_code"), "AIRP"),
        )
        raw = pa.Table.from_batches([batch.filter(mask)])
        del batch
        if raw.num_rows:
            found = True
            yield _normalise_places(path, raw, codes1, codes2)
        del raw
        release_arrow_memory()
    if not found:
        raise InputError(path, "no populated places (feature class P) or airports found")


@dataclass
class _Overlay:
    """Update days folded into one table: the rows of the ids they modified last (`rows`), and
    every id they touched (`touched`: the dump's rows of those ids give way)."""

    rows: pa.Table | None = None
    touched: _IdSet | None = None

    @classmethod
    def of(
        cls,
        days: list[tuple[Path, Path]],
        columns: tuple[str, ...],
        include: tuple[str, ...],
        key: str,
        deleted_field: int,
    ) -> _Overlay:
        """Read the days' modifications (`include` of `columns`) and deletes (the id is field
        `deleted_field`); later days win, and within a day a delete does."""
        if not days:
            return cls()
        parts = [pl.DataFrame(schema={**{c: pl.String for c in include}, "_order": pl.Int32})]
        for order, (modified, deleted) in enumerate(days):
            empty = modified.stat().st_size == 0  # a day without changes: Arrow refuses it
            for batch in () if empty else _batches(modified, columns, include):
                parts.append(pl.from_arrow(batch).with_columns(_order=pl.lit(2 * order)))
            parts.append(
                pl.DataFrame(
                    {key: _deleted_ids(deleted, deleted_field)}, schema={key: pl.String}
                ).with_columns(_order=pl.lit(2 * order + 1))
            )
        last = (
            pl.concat(parts, how="diagonal_relaxed")
            .sort(key, "_order", maintain_order=True)
            .unique(key, keep="last", maintain_order=True)
        )
        kept = last.filter(pl.col("_order") % 2 == 0).select(include)
        schema = pa.schema([(c, pa.string()) for c in include])
        return cls(
            pa.Table.from_pylist([], schema) if kept.is_empty() else kept.to_arrow().cast(schema),
            _IdSet(last[key].to_arrow()),
        )

    def apply(
        self, batches: Iterator[pa.RecordBatch], whole: bool, key: str = "geonameid"
    ) -> Iterator[pa.RecordBatch]:
        """The dump's batches without the touched ids, then the modified rows (only those of
        ids the dump held, unless it is `whole`)."""
        if self.touched is None:
            yield from batches
            return
        held = []
        for batch in batches:
            touched = self.touched.contains(batch.column(key))
            if pc.any(touched).as_py():
                held.append(batch.column(key).filter(touched))
                batch = batch.filter(pc.invert(touched))
            yield batch
        rows = self.rows
        if not whole:
            rows = rows.filter(
                pc.is_in(rows.column(key), pa.concat_arrays(held))
                if held
                else pa.array([False] * rows.num_rows)
            )
        yield from rows.to_batches()


def _deleted_ids(path: Path, field: int) -> list[str]:
    """The ids in field `field` of a deletes file (a comment may contain anything but a tab)."""
    ids = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 ({exc})") from None
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if not line.strip():
            continue
        if len(fields) <= field or not fields[field].isdigit():
            raise InputError(path, f"line {number}: no numeric id in column {field + 1}")
        ids.append(fields[field])
    return ids


def _normalise_places(path: Path, raw: pa.Table, admin1: tuple, admin2: tuple) -> pa.Table:
    lat = _to_number(path, raw["latitude"], pa.float64(), "latitude")
    lon = _to_number(path, raw["longitude"], pa.float64(), "longitude")
    _check_coordinates(path, raw["geonameid"], lat, lon)
    population = _to_number(path, raw["population"], pa.int64(), "population")
    population = pc.if_else(pc.greater(population, 0), population, None)
    elevation = _to_number(path, raw["elevation"], pa.int32(), "elevation")
    dem = _to_number(path, raw["dem"], pa.int32(), "dem")
    dem = pc.if_else(pc.equal(dem, -9999), None, dem)
    cc = raw["country_code"]
    a1 = raw["admin1_code"]
    a2 = raw["admin2_code"]
    key1 = pc.binary_join_element_wise(cc, a1, ".")
    key2 = pc.binary_join_element_wise(cc, a1, a2, ".")
    ids = raw["geonameid"]
    if pc.any(pc.invert(pc.match_substring_regex(ids, r"^[0-9]+$"))).as_py():
        raise InputError(path, "geonameid column holds a non-numeric id")
    return pa.table(
        {
            "id": ids,
            "name": raw["name"],
            "lat": lat,
            "lon": lon,
            "country_code": _empty_to_null(cc),
            "admin1_code": _empty_to_null(a1),
            "admin1_name": _lookup(key1, admin1),
            "admin2_code": _empty_to_null(a2),
            "admin2_name": _lookup(key2, admin2),
            "timezone": _empty_to_null(raw["timezone"]),
            "population": population,
            "elevation": pc.coalesce(elevation, dem),
            "feature_code": raw["feature_code"],
            "source": pa.repeat(pa.scalar("geonames"), raw.num_rows),
            **(
                {"alternatenames": _with_ascii_name(raw)}
                if "alternatenames" in raw.column_names
                else {}
            ),
        }
    )


def _check_coordinates(path: Path, ids, lat, lon) -> None:
    """InputError naming the first place whose coordinates are missing, not finite or out of
    range (a NaN passes every comparison, so finiteness is checked first)."""
    finite = pc.fill_null(pc.and_(pc.is_finite(lat), pc.is_finite(lon)), False)
    in_range = pc.fill_null(
        pc.and_(pc.less_equal(pc.abs(lat), 90), pc.less_equal(pc.abs(lon), 180)), False
    )
    bad = pc.invert(pc.and_(finite, in_range))
    if not pc.any(bad).as_py():
        return
    row = pc.index(bad, True).as_py()
    where = f"geonameid {ids[row]}: "
    if lat[row].is_valid and lon[row].is_valid and not finite[row].as_py():
        raise InputError(
            path,
            where + f"coordinates are not finite numbers (latitude "
            f"{lat[row]}, longitude {lon[row]})",
        )
    raise InputError(path, where + "coordinates out of range")


def _with_ascii_name(raw: pa.Table) -> pa.Array:
    """The alternatenames column, led by the ASCII name when that differs from the name."""
    return pc.if_else(
        pc.equal(raw["asciiname"], raw["name"]),
        raw["alternatenames"],
        pc.binary_join_element_wise(raw["asciiname"], raw["alternatenames"], ","),
    )


def _empty_to_null(column: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(column, ""), None, column)


def _code_arrays(mapping: dict[str, str]) -> tuple[pa.Array, pa.Array]:
    """A code -> name mapping as two aligned arrays, for _lookup."""
    return (
        pa.array(list(mapping.keys()), pa.string()),
        pa.array(list(mapping.values()), pa.string()),
    )


def _lookup(keys: pa.Array, mapping: tuple[pa.Array, pa.Array]) -> pa.Array:
    """Vectorised lookup of code keys to names (null when absent)."""
    codes, names = mapping
    return pc.take(names, pc.index_in(keys, value_set=codes))


def _read_codes(path: Path) -> dict[str, str]:
    """admin1CodesASCII / admin2Codes: code -> name (UTF-8 name column)."""
    codes = {}
    for batch in _batches(path, ("code", "name", "asciiname", "geonameid")):
        for code, name in zip(batch.column("code").to_pylist(), batch.column("name").to_pylist()):
            codes[code] = name
    return codes


def read_country_info(path: Path) -> pa.Table:
    """countryInfo.txt rows (comment lines start with '#', the header line too)."""
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 ({exc})") from None
    for number, line in enumerate(lines, 1):
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 17:
            raise InputError(
                path, f"line {number}: expected 19 tab-separated columns, got {len(fields)}"
            )
        rows.append(dict(zip(COUNTRY_COLUMNS, fields + [""] * (19 - len(fields)))))
    if not rows:
        raise InputError(path, "no country rows")
    try:
        population = [int(r["population"]) if r["population"] else None for r in rows]
    except ValueError as exc:
        raise InputError(path, f"population: {exc}") from None
    return pa.table(
        {
            "code": [r["iso"] for r in rows],
            "name": [r["country"] for r in rows],
            "population": pa.array(population, pa.int64()),
            "continent": [r["continent"] or None for r in rows],
            "capital": [r["capital"] or None for r in rows],
            "iso3": [r["iso3"] or None for r in rows],
        }
    )


def read_alternate_names(
    path: Path,
    ids: pa.Array | pa.ChunkedArray,
    airport_ids: pa.Array | pa.ChunkedArray | None = None,
    days: list[tuple[Path, Path]] = (),
) -> pa.Table:
    """alternateNamesV2 rows for the kept places, with the update `days` overlaid: language
    names, untagged names, and the airports' (`airport_ids`) IATA and ICAO codes as untagged
    names."""
    wanted = _IdSet(ids)
    airports = _IdSet(airport_ids if airport_ids is not None else pa.array([], pa.string()))
    unused = ("from", "to") if days else ("alternatenameid", "from", "to")
    used = tuple(c for c in ALTNAME_COLUMNS if c not in unused)
    overlay = _Overlay.of(days, ALTNAME_COLUMNS, used, "alternatenameid", 0)
    with Spill() as kept:
        for batch in overlay.apply(_batches(path, ALTNAME_COLUMNS, used), True, "alternatenameid"):
            batch, language = _name_rows(
                batch.filter(wanted.contains(batch.column("geonameid"))), airports
            )
            flag = lambda c: pc.equal(batch.column(c), "1")  # noqa: E731, B023, F821 (used at once)
            kept.append(
                pa.table(
                    {
                        "id": batch.column("geonameid"),
                        "name": batch.column("alternate_name"),
                        "language": language,
                        "is_preferred": flag("is_preferred"),
                        "is_short": flag("is_short"),
                        "is_colloquial": flag("is_colloquial"),
                        "is_historic": flag("is_historic"),
                    }
                )
            )
            del batch
            release_arrow_memory()
        names = kept.read()
    return empty_names() if names is None else names


def _name_rows(batch: pa.RecordBatch, airports: _IdSet) -> tuple[pa.RecordBatch, pa.Array]:
    """The rows that are names (a language tag or none, or an airport's IATA or ICAO code), and
    their language: null for untagged names and codes, which are matched but never shown."""
    lang = batch.column("isolanguage")
    code = pc.is_in(lang, value_set=AIRPORT_CODE_TAGS)
    keep = pc.or_(pc.equal(lang, ""), pc.match_substring_regex(lang, LANGUAGE_TAG.pattern))
    if pc.any(code).as_py():  # a batch without codes needs no id test
        keep = pc.or_(keep, pc.and_(code, airports.contains(batch.column("geonameid"))))
    kept = batch.filter(keep)
    untagged = pc.or_(pc.equal(lang, ""), code).filter(keep)
    return kept, pc.if_else(untagged, pa.scalar(None, pa.string()), kept.column("isolanguage"))


class _IdSet:
    """Membership in a fixed set of ids, by binary search in their sorted fixed-width bytes.

    Built once: pc.is_in would hash the millions of place ids again for every batch.
    """

    def __init__(self, ids: pa.Array | pa.ChunkedArray):
        self.width = max(1, pc.max(pc.binary_length(ids)).as_py() or 0)
        self.sorted = np.unique(fixed_width_bytes(ids, self.width))

    def contains(self, ids: pa.Array) -> pa.Array:
        """True for each id in the set."""
        if len(self.sorted) == 0:
            return pa.array(np.zeros(len(ids), dtype=bool))
        keys = fixed_width_bytes(ids, self.width)
        at = np.minimum(np.searchsorted(self.sorted, keys), len(self.sorted) - 1)
        fits = pc.less_equal(pc.binary_length(ids), self.width).to_numpy(zero_copy_only=False)
        return pa.array(fits & (self.sorted[at] == keys))


def _names_from_column(places: pa.Table) -> pa.Table:
    """Untagged alternate names from the places file's alternatenames column (matching only)."""
    split = pc.split_pattern(places["alternatenames"], ",")
    ids = pc.take(places["id"], pc.list_parent_indices(split))
    names = pc.list_flatten(split)
    keep = pc.not_equal(names, "")
    ids, names = ids.filter(keep), names.filter(keep)
    false = pa.repeat(pa.scalar(False), len(names))
    return pa.table(
        {
            "id": ids,
            "name": names,
            "language": pa.nulls(len(names), pa.string()),
            "is_preferred": false,
            "is_short": false,
            "is_colloquial": false,
            "is_historic": false,
        }
    )
