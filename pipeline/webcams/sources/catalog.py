"""Real webcam catalog: DIR/webcams/webcams.csv, snapshots.csv (or .parquet) and images/.

webcams.csv: public_id, name, latitude, longitude, country_code, views, and optionally
location_public_id, timezone, status (active | inactive), snapshot_url (an owned camera's
image, which `fetch webcams` pulls; the build does not read it). snapshots: public_id,
captured_at (ISO 8601, UTC; an explicit offset is converted, a time without one is taken as
UTC), image (a path under images/, or else an object key on the CDN). Snapshot rows may come in
any order and repeat; snapshots of unknown or inactive webcams are left out and counted.

`fetch webcams` adds files of its own beside them, read with them: provider/<name>.csv, a
provider's catalog (webcams.csv's columns; its images are the provider's links, see
links.py), and owned/snapshots.csv, the owned cameras' snapshots it took (images under
images/owned/). Each file is checked alone; a public_id may appear in one catalog file only.
"""

from __future__ import annotations

import csv
import logging
import re
import zoneinfo
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from contract import Geocoding as G
from contract import Webcams as W
from pipeline.common import csv_check
from pipeline.common.io import InputError
from pipeline.webcams.sources.normalised import (
    ACTIVE,
    FILE,
    IMAGES_SCHEMA,
    INACTIVE,
    KEY,
    SOURCE_SCHEMA,
    SnapshotSeries,
    WebcamCatalog,
    series_from_sorted,
)

log = logging.getLogger("pipeline.webcams")
FOLDER = "webcams"
WEBCAMS_CSV = "webcams.csv"
SNAPSHOT_FILES = ("snapshots.parquet", "snapshots.csv")
PROVIDERS = "provider"  # provider/<name>.csv, written by fetch
OWNED_SNAPSHOTS = Path("owned") / "snapshots.csv"  # written by fetch
IMAGES = "images"
REQUIRED = ("public_id", "name", "latitude", "longitude", "country_code", "views")
OPTIONAL = ("location_public_id", "timezone", "status")
LOCATION_ID = re.compile(G.PUBLIC_ID)  # geocoding's public ids
OBJECT_KEY = re.compile(r"[A-Za-z0-9._~-]+(?:/[A-Za-z0-9._~-]+)*")
MAX_UNIX_S = 2**32 - 1


def present(datasets: Path) -> bool:
    """True when DIR/webcams/ exists (then it is the catalog; else the default is generated)."""
    return (datasets / FOLDER).is_dir()


def read(datasets: Path) -> WebcamCatalog:
    """Read and validate the catalog files; snapshots are read when the area asks for them."""
    folder = datasets / FOLDER
    providers = sorted((folder / PROVIDERS).glob("*.csv")) if (folder / PROVIDERS).is_dir() else []
    catalogs = (
        [folder / WEBCAMS_CSV] if (folder / WEBCAMS_CSV).exists() or not providers else []
    ) + providers
    webcams = _merge([(path, read_webcams(path)) for path in catalogs])
    paths = [
        p
        for p in [
            next((folder / n for n in SNAPSHOT_FILES if (folder / n).is_file()), None),
            folder / OWNED_SNAPSHOTS,
        ]
        if p is not None and p.is_file()
    ]
    if not paths and not providers:
        raise InputError(folder, f"no {' or '.join(SNAPSHOT_FILES)}")
    known = webcams.select("public_id", "status")

    def snapshots(served: pl.Series) -> SnapshotSeries:
        return read_snapshots(paths, folder / IMAGES, served, known)

    return WebcamCatalog(
        webcams=webcams,
        snapshots=snapshots,
        inputs=catalogs + paths,
        kind="real",
        notes=f"webcam catalog from {FOLDER}/ (operator-supplied"
        + (", and providers' catalogs" if providers else "")
        + ")",
    )


def _merge(frames: list[tuple[Path, pl.DataFrame]]) -> pl.DataFrame:
    """The catalog files as one frame; a public_id in two of them is refused."""
    seen: dict[str, Path] = {}
    for path, frame in frames:
        for public_id in frame["public_id"].to_list():
            if public_id in seen:
                raise InputError(path, f"public_id {public_id!r} is also in {seen[public_id]}")
            seen[public_id] = path
    return pl.concat([frame for _, frame in frames]) if len(frames) > 1 else frames[0][1]


def _csv(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise InputError(path, "missing")
    try:
        return pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as exc:
        # polars names no line: find it (and what is wrong) with the csv module; else its
        # message's first line.
        found = csv_check.problem(path) or str(exc).strip().splitlines()[0][:200]
        raise InputError(path, f"not a readable CSV file: {found}") from None


def where(path: Path, record: int) -> str:
    """ "line N" of a CSV data record (0-based; the header is line 1, and quoted fields may
    span lines), or "row N" (1-based) of a Parquet file."""
    if path.suffix == ".parquet":
        return f"row {record + 1}"
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        start = 1
        for index, _ in enumerate(reader):
            if index == record + 1:
                return f"line {start}"
            start = reader.line_num + 1
    return f"line {start}"


def _fail_first(path: Path, frame: pl.DataFrame, bad: pl.Expr, message: str) -> None:
    """Raise an InputError naming the first record where `bad` holds."""
    rows = frame.with_row_index("_row").filter(bad.fill_null(False))
    if rows.height:
        row = rows.row(0, named=True)
        raise InputError(path, f"{where(path, row['_row'])}: {message.format(**row)}")


def read_webcams(path: Path) -> pl.DataFrame:
    """webcams.csv as SOURCE_SCHEMA, every value checked."""
    raw = _csv(path)
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise InputError(path, f"missing column(s): {', '.join(missing)}")
    raw = raw.select(
        *REQUIRED,
        *(pl.col(c) if c in raw.columns else pl.lit(None, pl.String).alias(c) for c in OPTIONAL),
    )
    raw = raw.with_columns(pl.col(c).str.strip_chars().replace("", None) for c in raw.columns)
    for column in ("public_id", "name", "latitude", "longitude", "country_code", "views"):
        _fail_first(path, raw, pl.col(column).is_null(), f"{column} is empty")
    _fail_first(
        path,
        raw,
        ~pl.col("public_id").str.contains(f"^(?:{W.PUBLIC_ID})$")
        | pl.col("public_id").is_in(W.RESERVED_IDS),
        "public_id {public_id!r} must be 1-64 letters, digits, '.', '_' or '-' "
        f"(starting with a letter or digit), not one of {', '.join(W.RESERVED_IDS)}",
    )
    _fail_first(
        path,
        raw,
        pl.col("public_id").is_duplicated(),
        "public_id {public_id!r} appears more than once",
    )
    frame = raw.with_columns(
        latitude=pl.col("latitude").cast(pl.Float64, strict=False),
        longitude=pl.col("longitude").cast(pl.Float64, strict=False),
        views=pl.col("views").str.to_integer(strict=False),
        country_code=pl.col("country_code").str.to_uppercase(),
        status=pl.col("status").str.to_lowercase().fill_null(ACTIVE),
    )
    checks = [
        (
            pl.col("latitude").is_null() | ~pl.col("latitude").is_between(-90, 90),
            "latitude {latitude} is not a number in [-90, 90]",
        ),
        (
            pl.col("longitude").is_null() | ~pl.col("longitude").is_between(-180, 180),
            "longitude {longitude} is not a number in [-180, 180]",
        ),
        (
            pl.col("views").is_null() | (pl.col("views") < 0),
            "views must be a whole number of at least 0",
        ),
        (
            ~pl.col("country_code").is_in(sorted(W.COUNTRIES)),
            "country_code {country_code!r} is not an ISO 3166-1 alpha-2 code",
        ),
        (
            pl.col("location_public_id").is_not_null()
            & ~pl.col("location_public_id").str.contains(f"^(?:{LOCATION_ID.pattern})$"),
            "location_public_id {location_public_id!r} is not a location id (GeoNames digits or "
            "icao:XXXX)",
        ),
        (
            ~pl.col("status").is_in([ACTIVE, INACTIVE]),
            "status {status!r} must be active or inactive",
        ),
    ]
    for bad, message in checks:
        _fail_first(path, frame, bad, message)
    zones = zoneinfo.available_timezones()
    _fail_first(
        path,
        frame,
        pl.col("timezone").is_not_null() & ~pl.col("timezone").is_in(sorted(zones)),
        "timezone {timezone!r} is not an IANA timezone",
    )
    return frame.select(list(SOURCE_SCHEMA)).cast(SOURCE_SCHEMA)


def _read_snapshot_table(path: Path) -> pl.DataFrame:
    """The raw snapshot rows with captured_at as unix seconds (null where unparseable)."""
    if path.suffix == ".parquet":
        try:
            raw = pl.read_parquet(path)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise InputError(path, f"not a readable Parquet file ({type(exc).__name__})") from None
    else:
        raw = _csv(path)
    missing = [c for c in ("public_id", "captured_at", "image") if c not in raw.columns]
    if missing:
        raise InputError(path, f"missing column(s): {', '.join(missing)}")
    raw = raw.select("public_id", "captured_at", "image")
    captured = raw.schema["captured_at"]
    if isinstance(captured, pl.Datetime):
        stamp = pl.col("captured_at")
        if captured.time_zone is None:
            stamp = stamp.dt.replace_time_zone("UTC")
        seconds = stamp.dt.epoch("s")
    else:
        # Explicit formats per row: an inferred format comes from the first value, and then
        # rows written another way (with or without an offset) would count as invalid.
        text = pl.col("captured_at").cast(pl.String).str.strip_chars().str.replace(r"Z$", "+00:00")
        parsed = [
            text.str.to_datetime(f, strict=False, time_unit="us")
            for f in (
                "%Y-%m-%dT%H:%M:%S%.f%:z",
                "%Y-%m-%dT%H:%M:%S%:z",
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S",
            )
        ]
        seconds = pl.coalesce(
            *(p.dt.convert_time_zone("UTC") for p in parsed[:2]),
            *(p.dt.replace_time_zone("UTC") for p in parsed[2:]),
        ).dt.epoch("s")
    return raw.with_columns(
        pl.col("public_id").cast(pl.String).str.strip_chars(),
        pl.col("image").cast(pl.String).str.strip_chars().replace("", None),
        captured_s=seconds,
    )


def _checked_snapshots(path: Path) -> pl.DataFrame:
    """One snapshot file's rows, every value checked."""
    raw = _read_snapshot_table(path)
    _fail_first(
        path,
        raw,
        pl.col("captured_s").is_null(),
        "captured_at {captured_at!r} is not an ISO 8601 time",
    )
    _fail_first(
        path,
        raw,
        (pl.col("captured_s") < 0) | (pl.col("captured_s") > MAX_UNIX_S),
        "captured_at {captured_at!r} is outside 1970-2106",
    )
    _fail_first(path, raw, pl.col("image").is_null(), "image is empty")
    return raw


def read_snapshots(
    paths: list[Path], images_dir: Path, served: pl.Series, known: pl.DataFrame
) -> SnapshotSeries:
    """Snapshots of the served webcams (public ids in row order), sorted and deduplicated."""
    tables = [(path, _checked_snapshots(path)) for path in paths]
    if len(tables) == 1:
        raw = tables[0][1]
    elif tables:
        raw = pl.concat(
            [
                t.select("public_id", "captured_at", "image", "captured_s").with_columns(
                    pl.col("captured_at").cast(pl.String)
                )
                for _, t in tables
            ]
        )
    else:  # a provider's catalog alone: no snapshots of our own
        raw = pl.DataFrame(
            schema={
                "public_id": pl.String,
                "captured_at": pl.String,
                "image": pl.String,
                "captured_s": pl.Int64,
            }
        )
    rows = pl.DataFrame({"public_id": served, "row": np.arange(len(served), dtype=np.int32)})
    joined = raw.join(rows, on="public_id", how="left")
    status = joined.select("public_id").join(known, on="public_id", how="left")["status"]
    dropped = {
        "unknown_webcam": int(status.is_null().sum()),
        "inactive_webcam": int((status == INACTIVE).sum()),
    }
    kept = (
        joined.filter(pl.col("row").is_not_null())
        .select("row", "captured_s", "image")
        .sort("row", "captured_s", "image")
        .unique(["row", "captured_s"], keep="first", maintain_order=True)
    )
    dropped["duplicate"] = joined.filter(pl.col("row").is_not_null()).height - kept.height

    def locate(ref: str) -> str:
        path, table = next((p, t) for p, t in tables if (t["image"] == ref).any())
        line = where(path, _first_index(table, ref))
        return line if len(tables) == 1 else f"{path.name} {line}"

    images = classify_images(
        sorted(kept["image"].unique().to_list()),
        images_dir,
        paths[0] if len(paths) == 1 else images_dir.parent,
        locate,
    )
    ids = kept.join(
        images.select("image_id", "ref"),
        left_on="image",
        right_on="ref",
        how="left",
        maintain_order="left",
    )["image_id"]
    log.info(
        "%d snapshots of %d served webcams; left out: %s",
        kept.height,
        len(served),
        ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in dropped.items()) or "none",
    )
    return series_from_sorted(
        kept["captured_s"].to_numpy().astype(np.uint32),
        kept["row"].to_numpy(),
        len(served),
        ids.to_numpy().astype(np.int32),
        images,
        dropped,
    )


def _first_index(raw: pl.DataFrame, ref: str) -> int:
    """Record index of the first snapshot row naming image `ref`."""
    return int(raw.with_row_index("_row").filter(pl.col("image") == ref)["_row"][0])


def classify_images(
    refs: list[str], images_dir: Path, where_: Path, locate: Callable[[str], str]
) -> pl.DataFrame:
    """Each distinct image reference as a file under images/ (copied into the artifact) or an
    object key on the CDN; ids follow the sorted references. With an images/ folder, a
    reference that is not a file there but looks like one (no directory part, or a first part
    that exists in images/) is a mistake, not an object key: object keys go under a prefix of
    their own (keys/..., cdn/...)."""
    root = images_dir.resolve() if images_dir.is_dir() else None
    rows = []
    for image_id, ref in enumerate(refs):
        if not OBJECT_KEY.fullmatch(ref) or any(p in (".", "..") for p in ref.split("/")):
            raise InputError(
                where_,
                f"{locate(ref)}: image {ref!r} is neither a relative path "
                f"under {IMAGES}/ nor an object key ([A-Za-z0-9._~-] and "
                "'/')",
            )
        candidate = (images_dir / ref).resolve() if root else None
        if candidate and candidate.is_file() and candidate.is_relative_to(root):
            media = W.IMAGE_MEDIA_TYPES.get(candidate.suffix.lower())
            if media is None:
                raise InputError(
                    images_dir / ref,
                    f"unsupported image type (use {', '.join(sorted(W.IMAGE_MEDIA_TYPES))})",
                )
            rows.append((image_id, FILE, ref, media, str(candidate)))
            continue
        if root is not None and ("/" not in ref or (images_dir / ref.split("/")[0]).exists()):
            raise InputError(
                where_,
                f"{locate(ref)}: image {ref!r} is not a file under "
                f"{IMAGES}/ (object keys on a CDN need a prefix that is "
                f"not a name in {IMAGES}/, e.g. keys/{ref.split('/')[-1]})",
            )
        media = W.IMAGE_MEDIA_TYPES.get(Path(ref).suffix.lower())
        rows.append((image_id, KEY, ref, media, None))
    return pl.DataFrame(rows, schema=IMAGES_SCHEMA, orient="row")
