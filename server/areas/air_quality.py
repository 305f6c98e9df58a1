"""Air quality endpoint (interface 4.6): GET /air-quality/{lat},{lon}.

Inside the CAMS European domain (decisions rule 21) the European grid answers and records carry
dustAod (the global model's, regridded onto the European grid by the pipeline) and pollen;
elsewhere the global grid answers without them.
Values are bilinear at the point; both AQIs are evaluated from the interpolated concentrations
with the tables the pipeline published, so they agree with the concentrations served.
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

from contract import AirQuality as AQ
from server import params
from server.areas.air_quality_index import IndexTables, columns
from server.areas.air_quality_json import Numbers, Records
from server.errors import ApiError
from server.grid import PointGrid
from server.http import NOW, STORE, endpoint

AREA = AQ.AREA
HOUR_S = 3600
MAX_AGE_S = HOUR_S            # and never past the current hour (Endpoint.period_s)
STALE_RETRY_AFTER_S = 600
CONCENTRATION_DECIMALS = 1    # µg/m³ and grains/m³
AOD_DECIMALS = 3
POLLUTANTS = (("pm25", "pm25_ugm3"), ("pm10", "pm10_ugm3"), ("ozone", "o3_ugm3"),
              ("nitrogenDioxide", "no2_ugm3"), ("sulphurDioxide", "so2_ugm3"),
              ("carbonMonoxide", "co_ugm3"))
POLLEN = (("pollenBirch", "birch_pollen_grains_m3"), ("pollenGrass", "grass_pollen_grains_m3"),
          ("pollenOlive", "olive_pollen_grains_m3"),
          ("pollenRagweed", "ragweed_pollen_grains_m3"),
          ("pollenAlder", "alder_pollen_grains_m3"),
          ("pollenMugwort", "mugwort_pollen_grains_m3"))
INDICES = ("eu", "us")             # the manifest's tables of europeanAqi and usAqi
KEYS = ("time", "europeanAqi", "usAqi") + tuple(k for k, _ in POLLUTANTS)
EUROPE_KEYS = KEYS + ("dustAod",) + tuple(k for k, _ in POLLEN)
# Rendered numbers: indices (0-500), concentrations to 10,000.0 and AOD to 10.000 come from
# pre-rendered tables; larger values are rendered one by one.
NUMBERS = Numbers({0: int(AQ.INDEX_CAP) + 1, CONCENTRATION_DECIMALS: 100_001,
                   AOD_DECIMALS: 10_001})
RECORDS = {
    KEYS: Records(KEYS, (0, 0) + (CONCENTRATION_DECIMALS,) * len(POLLUTANTS), NUMBERS),
    EUROPE_KEYS: Records(EUROPE_KEYS, (0, 0) + (CONCENTRATION_DECIMALS,) * len(POLLUTANTS)
                         + (AOD_DECIMALS,) + (CONCENTRATION_DECIMALS,) * len(POLLEN), NUMBERS),
}


@dataclass(frozen=True)
class AirQualityQuery:
    lat: float
    lon: float


class Domain:
    """One grid with its index tables and the columns a record needs."""

    def __init__(self, version_dir: Path, spec: dict, tables: dict):
        self.grid = PointGrid(version_dir, spec)
        self.tables = IndexTables(tables, self.grid.variables, INDICES)
        column = self.grid.column
        self.pollutants = columns([column[v] for _, v in POLLUTANTS])
        self.pollen = (columns([column[v] for _, v in POLLEN])
                       if all(v in column for _, v in POLLEN) else None)
        self.dust = column.get(AQ.DUST_AOD)


class AirQualityData:
    """Both grids of a loaded version, memory-mapped."""

    def __init__(self, version_dir: Path, entry: dict):
        grids, tables = entry["grids"], entry[AQ.AQI_TABLES]
        self.europe = Domain(version_dir, grids[AQ.EUROPE], tables)
        self.world = Domain(version_dir, grids[AQ.GLOBAL], tables)
        if self.europe.dust is None or self.world.dust is None:
            raise ValueError("a grid has no dust AOD (built before it was regridded?)")
        box = AQ.EUROPE_BOX
        self.lat_range = (box["lat_min"], box["lat_max"])
        self.lon_range = (box["lon_min"], box["lon_max"])

    def in_europe(self, lat: float, lon: float) -> bool:
        """Decisions rule 21: the CAMS European domain, edges included."""
        return (self.lat_range[0] <= lat <= self.lat_range[1]
                and self.lon_range[0] <= lon <= self.lon_range[1])


def load(version_dir: Path, entry: dict) -> AirQualityData:
    """Loader for the store: map both grids."""
    return AirQualityData(version_dir, entry)


def parse(raw: str) -> AirQualityQuery:
    """`lat,lon`: finite numbers in range (decisions rule 2)."""
    lat, lon = params.coordinates(raw)
    return AirQualityQuery(lat, lon)


def _iso(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def answer(data: AirQualityData, query: AirQualityQuery, now_s: float) -> bytes:
    """The JSON envelope: current hour and every hour to the end of the forecast."""
    lat, lon = query.lat, query.lon
    europe = data.in_europe(lat, lon)
    domain = data.europe if europe and data.europe.grid.contains(lat, lon) else data.world
    grid = domain.grid
    hour = int(now_s // HOUR_S) * HOUR_S
    first = (hour - grid.time0) // HOUR_S
    if not 0 <= first < grid.ntime:
        raise ApiError(503, "air quality data is stale: it covers "
                            f"{_iso(grid.time0)} to {_iso(grid.time_end)}, not the current "
                            "hour", headers={"Retry-After": str(STALE_RETRY_AFTER_S)})
    block = grid.series(lat, lon, first)
    steps = block.shape[0]
    keys = EUROPE_KEYS if europe else KEYS
    values = np.empty((steps, len(keys) - 1))    # the record's columns after the time
    values[:, :2] = domain.tables.evaluate(block).T
    values[:, 2:8] = block[:, domain.pollutants]
    if europe:
        values[:, 8] = block[:, domain.dust]
        values[:, 9:] = block[:, domain.pollen] if domain.pollen is not None else np.nan
    current, hourly = RECORDS[keys].render(hour, values)
    return b'{"latitude":%b,"longitude":%b,"timezone":%b,"current":%b,"hourly":{"data":%b}}' % (
        orjson.dumps(round(lat, 5)), orjson.dumps(round(lon, 5)),
        orjson.dumps(get_tz(lon, lat) or "UTC"), current, hourly)


@endpoint(area=AREA, auth="key", max_age=MAX_AGE_S, period_s=HOUR_S)
async def air_quality(request: web.Request) -> web.Response:
    """GET /air-quality/{lat},{lon}."""
    query = parse(request.match_info["coordinates"])
    data: AirQualityData = request.app[STORE].require(AREA).data
    body = answer(data, query, request.get(NOW) or time.time())
    return web.Response(body=body, content_type="application/json")


def routes() -> list[web.RouteDef]:
    """The air-quality route."""
    return [web.get("/air-quality/{coordinates}", air_quality)]
