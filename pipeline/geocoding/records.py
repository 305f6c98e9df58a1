"""Pre-rendered Location JSON per place, so the server answers default-language requests by
slicing bytes out of a memory map instead of assembling objects field by field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pyarrow.parquet as pq

from contract import Geocoding as G
from pipeline.common.io import naming, write_npy

BATCH_ROWS = 100_000


def write(version: Path, country_names: dict[str, str], display_names: pl.DataFrame) -> list[str]:
    """Render every place of locations.parquet (rows in id order) into PLACE_JSON.

    Streams the table in batches so memory stays bounded at allCountries scale.
    `display_names` has (row, name) for places with a name in the default language."""
    source = pq.ParquetFile(version / G.LOCATIONS)
    total = source.metadata.num_rows
    offsets = np.zeros(total + 1, dtype=np.int64)
    splits = np.zeros(total, dtype=np.int32)
    display_names = display_names.with_columns(pl.col("row").cast(pl.Int64))
    start = 0
    with naming(version / G.PLACE_JSON), open(version / G.PLACE_JSON, "wb") as out:
        for batch in source.iter_batches(batch_size=BATCH_ROWS):
            frame = (
                pl.from_arrow(batch)
                .with_row_index("row", offset=start)
                .with_columns(pl.col("row").cast(pl.Int64))
                .update(display_names, on="row")
            )
            for i, row in enumerate(frame.iter_rows(named=True), start):
                item, detail = render(row, country_names)
                out.write(detail)
                splits[i] = len(item) - 1
                offsets[i + 1] = offsets[i] + len(detail)
            start += frame.height
    write_npy(offsets, version / G.PLACE_JSON_OFFSETS)
    write_npy(splits, version / G.PLACE_JSON_SPLIT)
    return [G.PLACE_JSON, G.PLACE_JSON_OFFSETS, G.PLACE_JSON_SPLIT]


def render(row: dict, country_names: dict[str, str]) -> tuple[bytes, bytes]:
    """(search item, detail) JSON of one place; the detail extends the item's bytes."""
    item = {
        "id": row["id"],
        "name": row["name"],
        "lat": round(row["lat"], 5),
        "lon": round(row["lon"], 5),
        "country_code": row["country_code"],
        "country_name": country_names.get(row["country_code"]),
        "admin1_name": row["admin1_name"],
        "timezone": row["timezone"],
        "population": row["population"],
        "feature_code": row["feature_code"],
    }
    detail = dict(item, admin2_name=row["admin2_name"], elevation=row["elevation"])
    return orjson.dumps(item), orjson.dumps(detail)
