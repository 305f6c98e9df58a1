"""A provider's image links (datasets/webcam-links/<provider>.csv, written by `fetch webcams`)
-> webcams/index/provider_links.arrow, one row per served webcam that has them.

The links expire within minutes (a token in each): they are the webcams area's `links` part,
rebuilt alone, over the previous version's other files, when nothing else changed.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pyarrow as pa

from contract import Webcams as W
from pipeline.common.io import InputError, write_arrow

log = logging.getLogger("pipeline.webcams")
FOLDER = "webcam-links"
COLUMNS = (
    "public_id",
    "provider",
    "image_url",
    "thumbnail_url",
    "player_url",
    "page_url",
    "updated_at",
    "expires_at",
)
SCHEMA = pa.schema(
    [
        ("row", pa.int32()),
        ("provider", pa.string()),
        ("image_url", pa.string()),
        ("player_url", pa.string()),
        ("page_url", pa.string()),
        ("updated_at", pa.int64()),
        ("expires_at", pa.int64()),
    ]
)


def files(datasets: Path) -> list[Path]:
    folder = datasets / FOLDER
    return sorted(folder.glob("*.csv")) if folder.is_dir() else []


def write(version: Path, datasets: Path, public_ids: list[str]) -> list[str]:
    """Write the links of the served webcams (row order of `public_ids`) when any has them;
    the artifact files written (none or PROVIDER_LINKS)."""
    row_of = {public_id: row for row, public_id in enumerate(public_ids)}
    rows: dict[int, tuple] = {}
    for path in files(datasets):
        for line, record in enumerate(_records(path), start=2):
            row = row_of.get(record["public_id"])
            if row is None:
                continue  # a webcam not served (inactive, or not in the catalog)
            rows[row] = (
                row,
                record["provider"],
                _url(record, "image_url", path, line),
                _url(record, "player_url", path, line),
                _url(record, "page_url", path, line),
                _time(record, "updated_at", path, line),
                _time(record, "expires_at", path, line),
            )
    if not rows:
        return []
    ordered = [rows[row] for row in sorted(rows)]
    table = pa.table(
        {name: [r[i] for r in ordered] for i, name in enumerate(SCHEMA.names)}, schema=SCHEMA
    )
    write_arrow(table, version / W.PROVIDER_LINKS)
    log.info("%d webcams with provider links", len(ordered))
    return [W.PROVIDER_LINKS]


def _records(path: Path) -> list[dict]:
    import csv

    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(path, f"missing column(s): {', '.join(missing)}")
        return list(reader)


def _url(record: dict, column: str, path: Path, line: int) -> str | None:
    value = (record[column] or "").strip()
    if value and not value.startswith(("https://", "http://")):
        raise InputError(path, f"line {line}: {column} {value[:60]!r} is not an http(s) URL")
    return value or None


def _time(record: dict, column: str, path: Path, line: int) -> int | None:
    value = (record[column] or "").strip()
    if not value:
        if column == "expires_at":
            raise InputError(path, f"line {line}: expires_at is empty")
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(path, f"line {line}: {column} {value!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return int(parsed.timestamp())
