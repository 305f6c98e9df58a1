"""Air quality endpoint (docs/api/air-quality.md): GET /air-quality/{lat},{lon}.

Inside the CAMS European domain (docs/api/air-quality.md#european-domain) the European grid
answers and records carry dustAod (the global model's, regridded onto the European grid by the
pipeline) and pollen; elsewhere the global grid answers without them. Values are bilinear at
the point; both AQIs are evaluated from the interpolated concentrations with the tables the
pipeline published, so they agree with the concentrations served. The per-request work
(interpolation, indices, the JSON of the records) is one compiled call (kernels).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import orjson
from aiohttp import web
from tzfpy import get_tz

from contract import HOUR_S, AreaEntry
from contract import AirQuality as AQ
from server.air_quality import kernels
from server.air_quality.index import IndexTables
from server.air_quality.records import Records
from server.artifacts.grid import PointGrid, point_lon
from server.http import params
from server.http.errors import ApiError
from server.http.middleware import NOW, STORE, endpoint
from server.kernels import bilinear

NAME = AQ.AREA
JSON_HEADERS = {"Content-Type": "application/json"}  # cheaper than content_type=...
MAX_AGE_S = HOUR_S  # and never past the current hour (Endpoint.period_s)
STALE_RETRY_AFTER_S = 600
CONCENTRATION_DECIMALS = 1  # µg/m³ and grains/m³
AOD_DECIMALS = 3
POLLUTANTS = (
    ("pm25", "pm25_ugm3"),
    ("pm10", "pm10_ugm3"),
    ("ozone", "o3_ugm3"),
    ("nitrogenDioxide", "no2_ugm3"),
    ("sulphurDioxide", "so2_ugm3"),
    ("carbonMonoxide", "co_ugm3"),
)
POLLEN = (
    ("pollenBirch", "birch_pollen_grains_m3"),
    ("pollenGrass", "grass_pollen_grains_m3"),
    ("pollenOlive", "olive_pollen_grains_m3"),
    ("pollenRagweed", "ragweed_pollen_grains_m3"),
    ("pollenAlder", "alder_pollen_grains_m3"),
    ("pollenMugwort", "mugwort_pollen_grains_m3"),
)
# The manifest's tables and the names of the columns after the grid's own that a point's
# block holds them in (the grids store no index: docs/data/air-quality.md#aqi-at-the-point).
INDICES = (("eu", "european_aqi"), ("us", "us_aqi"))
# Record fields after the time: (key, grid variable, decimals).
FIELDS = (("europeanAqi", "european_aqi", 0), ("usAqi", "us_aqi", 0)) + tuple(
    (k, v, CONCENTRATION_DECIMALS) for k, v in POLLUTANTS
)
EUROPE_FIELDS = (
    FIELDS
    + (("dustAod", AQ.DUST_AOD, AOD_DECIMALS),)
    + tuple((k, v, CONCENTRATION_DECIMALS) for k, v in POLLEN)
)
KEYS = ("time",) + tuple(k for k, _, _ in FIELDS)
EUROPE_KEYS = ("time",) + tuple(k for k, _, _ in EUROPE_FIELDS)


@dataclass(frozen=True)
class AirQualityQuery:
    lat: float
    lon: float


class Domain:
    """One grid with its index tables and record layouts, as the kernel takes them."""

    def __init__(self, version_dir: Path, spec: dict, tables: dict):
        self.grid = PointGrid(version_dir, spec)
        nvar = len(self.grid.variables)
        if any(v in self.grid.column for _, v in INDICES):
            raise ValueError("the grid stores AQI columns (built by an older pipeline)")
        column = self.grid.column | {v: nvar + k for k, (_, v) in enumerate(INDICES)}
        self.tables = IndexTables(tables, self.grid.variables, tuple(n for n, _ in INDICES))
        self.index_columns = np.arange(nvar, nvar + len(INDICES), dtype=np.int64)
        # Record fields by whether the point is in Europe (a variable the grid lacks is null).
        self.records = {
            europe: Records(
                keys, tuple(d for _, _, d in fields), tuple(column.get(v, -1) for _, v, _ in fields)
            )
            for europe, keys, fields in ((False, KEYS, FIELDS), (True, EUROPE_KEYS, EUROPE_FIELDS))
        }
        # The columns to interpolate: the indices' inputs and the records' values.
        read = {column[v] for _, v, _ in EUROPE_FIELDS if v in self.grid.column} | set(
            self.tables.columns.tolist()
        )
        self.columns = np.array(sorted(read), dtype=np.int64)
        self.dust = column.get(AQ.DUST_AOD)
        # kernel.answer's arguments after lat, lon and first, up to the time, by region
        self.arguments = {
            europe: (self.columns, *self.tables.arrays(self.index_columns), *records.arrays)
            for europe, records in self.records.items()
        }

    def records_at(
        self, lat: float, lon: float, first: int, europe: bool, time0: int
    ) -> tuple[bytes, bytes]:
        """(first record, JSON array of records) from step `first` to the grid's end."""
        # time0 is the time of step `first` (Unix s); the results are bytes-like.
        records = self.records[europe]
        out = records.buffer(self.grid.ntime - first)
        end, first_end = kernels.answer(
            *self.cell(lat, lon), first, *self.arguments[europe], time0, HOUR_S, out
        )
        if end >= 0:
            return records.split(out, end, first_end)
        # A number beyond the kernel's digits: the same values through orjson.
        return records.orjson(time0, self._block(lat, lon, first), HOUR_S)

    def _block(self, lat: float, lon: float, first: int) -> np.ndarray:
        """The point's values and indices (steps, nvar + 2), as kernel.answer computes them."""
        block = np.empty((self.grid.ntime - first, len(self.grid.variables) + len(INDICES)))
        bilinear.series(*self.cell(lat, lon), first, self.grid.ntime, self.columns, block)
        kernels.evaluate(block, *self.tables.arrays(self.index_columns))
        return block

    def cell(self, lat: float, lon: float) -> tuple[np.ndarray, tuple[float, ...]]:
        """The point's four cells (read) and their bilinear weights, as the kernel takes them."""
        c = self.grid.corners(lat, lon)
        return self.grid.block(c.i0, c.i1, c.j0, c.j1), c.weights

    def warm_up(self) -> None:
        """Compile (or load from the cache) the kernels for this grid's array types."""
        # The orjson path's included, so that no request waits for the compiler.
        grid = self.grid
        for europe in (False, True):
            self.records_at(grid.lat0, grid.lon0, 0, europe, grid.time0)
        self._block(grid.lat0, grid.lon0, grid.ntime - 1)


class AirQualityData:
    """Both grids of a loaded version."""

    def __init__(self, version_dir: Path, entry: AreaEntry):
        grids, tables = entry["grids"], entry[AQ.AQI_TABLES]
        self.europe = Domain(version_dir, grids[AQ.EUROPE], tables)
        self.world = Domain(version_dir, grids[AQ.GLOBAL], tables)
        if self.europe.dust is None or self.world.dust is None:
            raise ValueError("a grid has no dust AOD (built before it was regridded?)")
        check_coverage(self.europe.grid, self.world.grid)
        self.europe.warm_up()
        self.world.warm_up()
        box = AQ.EUROPE_BOX
        self.lat_range = (box["lat_min"], box["lat_max"])
        self.lon_range = (box["lon_min"], box["lon_max"])

    def in_europe(self, lat: float, lon: float) -> bool:
        """The CAMS European domain, edges included (docs/api/air-quality.md#european-domain)."""
        return (
            self.lat_range[0] <= lat <= self.lat_range[1]
            and self.lon_range[0] <= lon <= self.lon_range[1]
        )

    def covers(self, unix_s: float) -> bool:
        """True when both grids hold the hour of unix_s (else some answers are stale 503s)."""
        hour = unix_s // HOUR_S * HOUR_S
        return all(d.grid.time0 <= hour <= d.grid.time_end for d in (self.europe, self.world))


def check_coverage(europe: PointGrid, world: PointGrid) -> None:
    """Raise ValueError unless each grid holds its whole domain (no answer clamps to an edge)."""
    # The pipeline refuses such inputs; this keeps an artifact from elsewhere honest too.
    box = AQ.EUROPE_BOX
    for lat in (box["lat_min"], box["lat_max"]):
        for lon in (box["lon_min"], box["lon_max"]):
            if not europe.contains(lat, lon):
                raise ValueError(f"the European grid does not reach ({lat}, {lon})")
    if not (world.wraps and world.contains(90.0, 0.0) and world.contains(-90.0, 0.0)):
        raise ValueError("the global grid does not cover the globe")


def load(version_dir: Path, entry: AreaEntry) -> AirQualityData:
    """Loader for the store: map both grids."""
    return AirQualityData(version_dir, entry)


def parse(raw: str) -> AirQualityQuery:
    """`lat,lon`: finite numbers in range (docs/api/conventions.md#validation)."""
    lat, lon = params.coordinates(raw)
    return AirQualityQuery(lat, lon)


def _iso(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def answer(data: AirQualityData, query: AirQualityQuery, now_s: float) -> bytes:
    """The JSON envelope: current hour and every hour to the end of the forecast."""
    lat, lon = query.lat, point_lon(query.lat, query.lon)  # a pole is one point
    europe = data.in_europe(lat, lon)
    domain = data.europe if europe else data.world  # both cover their domain (loader)
    grid = domain.grid
    hour = int(now_s // HOUR_S) * HOUR_S
    first = (hour - grid.time0) // HOUR_S
    if not 0 <= first < grid.ntime:
        raise ApiError(
            503,
            "air quality data is stale: it covers "
            f"{_iso(grid.time0)} to {_iso(grid.time_end)}, not the current "
            "hour",
            headers={"Retry-After": str(STALE_RETRY_AFTER_S)},
        )
    current, hourly = domain.records_at(lat, lon, first, europe, hour)
    return b"".join(
        (
            b'{"latitude":',
            orjson.dumps(round(lat, 5) + 0.0),  # + 0.0: no -0.0
            b',"longitude":',
            orjson.dumps(round(query.lon, 5) + 0.0),
            b',"timezone":',
            orjson.dumps(get_tz(lon, lat) or "UTC"),
            b',"current":',
            current,
            b',"hourly":{"data":',
            hourly,
            b"}}",
        )
    )


@endpoint(area=NAME, auth="key", max_age=MAX_AGE_S, period_s=HOUR_S)
async def air_quality(request: web.Request) -> web.Response:
    """GET /air-quality/{lat},{lon}."""
    query = parse(request.match_info["coordinates"])
    data: AirQualityData = request.app[STORE].require(NAME).data
    body = answer(data, query, request.get(NOW) or time.time())
    return web.Response(body=body, headers=JSON_HEADERS)


def routes() -> list[web.RouteDef]:
    """The air-quality route."""
    return [web.get("/air-quality/{coordinates}", air_quality)]
