"""Catalog indexes the server maps: webcam rows, pre-rendered JSON, sort orders, filter keys."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import polars as pl

from contract import Webcams as W
from pipeline.common.io import fixed_width_bytes, write_arrow, write_bytes, write_npy

FILES = [
    W.CAMS_ARROW,
    W.CAM_JSON,
    W.CAM_JSON_OFFSETS,
    W.ORDER_DESC,
    W.ORDER_ASC,
    W.ROW_COUNTRY,
    W.ROW_LOCATION,
    W.COUNTRY_CODES,
    W.LOCATION_IDS,
]


def write(version: Path, served: pl.DataFrame) -> None:
    """Index files for the served webcams (rows in public_id byte order)."""
    write_arrow(served.select(W.CAM_COLUMNS).to_arrow(), version / W.CAMS_ARROW)
    _write_json(version, served)
    order = served.select("views", "public_id").with_row_index("row")
    desc = order.sort(["views", "public_id"], descending=[True, False])["row"]
    asc = order.sort(["views", "public_id"], descending=[False, False])["row"]
    write_npy(desc.to_numpy().astype(np.int32), version / W.ORDER_DESC)
    write_npy(asc.to_numpy().astype(np.int32), version / W.ORDER_ASC)
    codes = country_codes(served["country_code"].unique().to_list())
    write_npy(np.array([c.encode() for c in codes], dtype="S2"), version / W.COUNTRY_CODES)
    row_country = np.searchsorted(codes, served["country_code"].to_list()).astype(np.int16)
    write_npy(row_country, version / W.ROW_COUNTRY)
    locations = served["location_public_id"]
    ids = sorted(locations.drop_nulls().unique().to_list())
    encoded = fixed_width_bytes(pl.Series(ids, dtype=pl.String), W.LOCATION_ID_BYTES)
    write_npy(encoded, version / W.LOCATION_IDS)
    row_location = np.full(served.height, -1, dtype=np.int32)
    present = locations.is_not_null().to_numpy()
    row_location[present] = np.searchsorted(
        ids, locations.filter(locations.is_not_null()).to_list()
    )
    write_npy(row_location, version / W.ROW_LOCATION)


def country_codes(used: list[str]) -> list[str]:
    """The fixed ISO 3166-1 list (contract) the country filter indexes; sorted. Sources
    validate their codes against it, so a code outside it here is a bug."""
    unknown = sorted(set(used) - W.COUNTRIES)
    if unknown:
        raise ValueError(f"country codes outside ISO 3166-1: {', '.join(unknown)}")
    return sorted(W.COUNTRIES)


def _write_json(version: Path, served: pl.DataFrame) -> None:
    """Each row's Webcam object without its closing brace (the server appends the signed and
    time-dependent fields)."""
    blobs = []
    for row in served.select(
        "public_id",
        "name",
        "latitude",
        "longitude",
        "location_public_id",
        "location_name",
        "country_code",
        "views",
    ).iter_rows(named=True):
        row["latitude"] = round(row["latitude"], 5)
        row["longitude"] = round(row["longitude"], 5)
        blobs.append(orjson.dumps(row)[:-1])
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    write_bytes(b"".join(blobs), version / W.CAM_JSON)
    write_npy(offsets, version / W.CAM_JSON_OFFSETS)
