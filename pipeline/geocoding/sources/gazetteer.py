"""The normalised gazetteer every geocoding source returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

PLACES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("lat", pa.float64()),
        ("lon", pa.float64()),
        ("country_code", pa.string()),
        ("admin1_code", pa.string()),
        ("admin1_name", pa.string()),
        ("admin2_code", pa.string()),
        ("admin2_name", pa.string()),
        ("timezone", pa.string()),
        ("population", pa.int64()),
        ("elevation", pa.int32()),
        ("feature_code", pa.string()),
        ("source", pa.string()),
    ]
)
NAMES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("language", pa.string()),
        ("is_preferred", pa.bool_()),
        ("is_short", pa.bool_()),
        ("is_colloquial", pa.bool_()),
        ("is_historic", pa.bool_()),
    ]
)
COUNTRIES_SCHEMA = pa.schema(
    [
        ("code", pa.string()),
        ("name", pa.string()),
        ("population", pa.int64()),
        ("continent", pa.string()),
        ("capital", pa.string()),
        ("iso3", pa.string()),
    ]
)


@dataclass(frozen=True)
class Gazetteer:
    """Places, their other names (language null = for matching only) and country facts."""

    places: pa.Table
    names: pa.Table
    countries: pa.Table
    inputs: list[Path]
    kind: str  # "real" (GeoNames dumps) or "packaged" (GeoNames extracts shipped on PyPI)
    notes: str

    def conformed(self) -> Gazetteer:
        """The same tables cast to the normalised schemas (column order and types)."""
        return Gazetteer(
            places=self.places.select(PLACES_SCHEMA.names).cast(PLACES_SCHEMA),
            names=self.names.select(NAMES_SCHEMA.names).cast(NAMES_SCHEMA),
            countries=self.countries.select(COUNTRIES_SCHEMA.names).cast(COUNTRIES_SCHEMA),
            inputs=self.inputs,
            kind=self.kind,
            notes=self.notes,
        )


def empty_names() -> pa.Table:
    """A names table with no rows."""
    return NAMES_SCHEMA.empty_table()
