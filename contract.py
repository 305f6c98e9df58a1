"""The artifact contract between the pipeline (writer) and the server (reader); stdlib only.

A build directory looks like this::

    build/
      current -> versions/<build_id>        (symlink, swapped atomically on publish)
      versions/<build_id>/
        manifest.json                       (written last)
        catalog.duckdb                      (one view per Parquet table)
        geocoding/*.parquet, geocoding/index/*

Both sides import this module and nothing else of each other.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict

SCHEMA_VERSION = 1
AREAS = ("geocoding", "air_quality", "forecast", "webcams")

CURRENT = "current"
VERSIONS = "versions"
MANIFEST = "manifest.json"
CATALOG = "catalog.duckdb"
# The manifest's record of every other file of its version: {path: {"bytes", "sha256"}}, what
# a copy of the version (object storage, a replica's cache) is verified against.
CHECKSUMS = "checksums"
# Object storage (docs/operations/scaling.md): PREFIX/versions/<build_id>/<path> holds a
# version's files, PREFIX/current.json (a Pointer) names the published one.
POINTER = "current.json"
BUILD_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")

# Units both sides count in: times are Unix seconds (grids step by the hour), distances km.
HOUR_S = 3600
DAY_S = 86_400
# The Earth's mean radius (docs/api/geocoding.md#reverse). Both sides measure great circles
# with it: the pipeline builds indexes by distance (geocoding's nearest places within
# NEAREST_ELEVATED_KM), the server measures the places and webcams they list from the same
# unit vectors.
EARTH_RADIUS_KM = 6371.0088


class Geocoding:
    """File names and columns of the geocoding area (paths relative to the version directory)."""

    AREA = "geocoding"
    # Public ids of places: GeoNames ids, or icao:XXXX for airports (regex, unanchored).
    PUBLIC_ID = r"[0-9]{1,12}|icao:[A-Z0-9]{4}"
    # User-facing tables (Parquet, one DuckDB view each).
    LOCATIONS = "geocoding/locations.parquet"
    COUNTRIES = "geocoding/countries.parquet"
    COUNTRY_NAMES = "geocoding/country_names.parquet"
    PLACE_NAMES = "geocoding/place_names.parquet"
    # Server indexes (memory-mapped, shared between worker processes).
    PLACES_ARROW = "geocoding/index/places.arrow"
    XYZ = "geocoding/index/xyz.npy"
    IDS = "geocoding/index/ids.npy"
    KEYS = "geocoding/index/keys.npy"
    KEYS_ARROW = "geocoding/index/keys.arrow"
    KEY_ROW = "geocoding/index/key_row.npy"
    # The place's rank for keys of its own name (its preferred names in a language and an
    # airport's IATA/ICAO codes count as its own name); rank + the number of places for keys
    # that come only from alternate names (so own names sort first, and search ranks own-name
    # matches above alternate-name ones), unless the place outweighs by population every
    # place whose own name the key is (pipeline/geocoding/keys.py, OUTWEIGH_RATIO): Mumbai's
    # "Bombay" ranks as its own.
    KEY_RANK = "geocoding/index/key_rank.npy"
    UKEY_START = "geocoding/index/ukey_start.npy"
    TRIGRAMS = "geocoding/index/trigrams.npy"
    TRIGRAM_OFFSETS = "geocoding/index/trigram_offsets.npy"
    TRIGRAM_POSTINGS = "geocoding/index/trigram_postings.npy"
    # Nearest place (reverse geocoding, limit 1): a quadtree over NEAREST_TOP_DEG cells (top
    # cell c = lat row from -90 * columns + lon column from -180). Node n is a leaf listing
    # NEAREST_ROWS[a[n]:b[n]] when b[n] >= 0: every place that can be the nearest of a point
    # in it, in rank order; otherwise its four children are nodes a[n] + 2 * north + east.
    NEAREST_A = "geocoding/index/nearest_a.npy"
    NEAREST_B = "geocoding/index/nearest_b.npy"
    NEAREST_ROWS = "geocoding/index/nearest_rows.npy"
    NEAREST_TOP_DEG = 1.0
    # The same over the places that have an elevation (the forecast's elevation of a point),
    # for the nearest within NEAREST_ELEVATED_KM only: a leaf lists those that can be the
    # nearest of a point in it within that distance (none far from them all); its rows are
    # rows of all places.
    NEAREST_ELEVATED_A = "geocoding/index/nearest_elevated_a.npy"
    NEAREST_ELEVATED_B = "geocoding/index/nearest_elevated_b.npy"
    NEAREST_ELEVATED_ROWS = "geocoding/index/nearest_elevated_rows.npy"
    NEAREST_ELEVATED_KM = 5.0
    REGIONS_ARROW = "geocoding/index/regions.arrow"
    REGION_ROWS = "geocoding/index/region_rows.npy"
    LOCAL_NAMES_ARROW = "geocoding/index/local_names.arrow"
    # Each place's Location JSON in the default language, rendered once by the pipeline:
    # row r is PLACE_JSON[offsets[r]:offsets[r + 1]] (the detail object, admin2_name and
    # elevation last); its first split[r] bytes plus "}" are the search-result object.
    PLACE_JSON = "geocoding/index/place_json.bin"
    PLACE_JSON_OFFSETS = "geocoding/index/place_json_offsets.npy"
    PLACE_JSON_SPLIT = "geocoding/index/place_json_split.npy"
    DEFAULT_LANGUAGE = "en"
    COUNTRIES_ARROW = "geocoding/index/countries.arrow"
    COUNTRY_NAMES_ARROW = "geocoding/index/country_names.arrow"

    LOCATION_COLUMNS = (
        "id",
        "name",
        "lat",
        "lon",
        "country_code",
        "admin1_code",
        "admin1_name",
        "admin2_code",
        "admin2_name",
        "timezone",
        "population",
        "elevation",
        "feature_code",
        "source",
    )
    # places.arrow: the served fields plus ranking and region columns, rows in id order.
    PLACE_INDEX_COLUMNS = (
        "id",
        "name",
        "lat",
        "lon",
        "country_code",
        "admin1_name",
        "admin2_name",
        "timezone",
        "population",
        "elevation",
        "feature_code",
        "rank",
        "country_idx",
        "admin1_idx",
    )
    # Feature importance for ranking ties: capitals and admin seats first, airports last.
    FEATURE_ORDER = ("PPLC", "PPLA", "PPLG", "PPLA2", "PPLA3", "PPLA4", "PPLA5", "PPL")
    COUNTRY_COLUMNS = (
        "code",
        "name",
        "flag",
        "population",
        "continent",
        "capital",
        "timezone",
        "iso3",
    )
    # Width in bytes of the fixed-width, sorted search-key array; longer keys are
    # truncated there and verified against the full key in places.arrow.
    KEY_BYTES = 32
    ID_BYTES = 16
    TRIGRAM_BYTES = 12
    # Keys shorter than this are not in the trigram (typo) index.
    TRIGRAM_MIN_CHARS = 6


class Webcams:
    """File names and columns of the webcams area (paths relative to the version directory)."""

    AREA = "webcams"
    # User-facing tables (Parquet, one DuckDB view each).
    WEBCAMS = "webcams/webcams.parquet"  # the whole catalog, inactive cameras included
    SNAPSHOTS = "webcams/snapshots.parquet"  # snapshots of served webcams, sorted
    WEBCAM_COLUMNS = (
        "public_id",
        "name",
        "latitude",
        "longitude",
        "country_code",
        "views",
        "location_public_id",
        "location_name",
        "timezone",
        "status",
    )
    SNAPSHOT_COLUMNS = ("public_id", "captured_at", "image")
    TABLES = {"webcams": WEBCAMS, "webcam_snapshots": SNAPSHOTS}  # DuckDB view -> file
    # ISO 3166-1 alpha-2: the 249 officially assigned codes, and XK (Kosovo, user-assigned but
    # used by GeoNames and the EU). Fixed, so the country filter's 400s never depend on the data.
    COUNTRIES = frozenset(
        (
            "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ "
            "BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR "
            "CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR "
            "GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU "
            "ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ "
            "LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ "
            "MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF "
            "PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI "
            "SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR "
            "TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW"
        ).split()
    )
    # Served webcams (status active), one row each in public_id byte order.
    CAMS_ARROW = "webcams/index/webcams.arrow"
    CAM_COLUMNS = (
        "public_id",
        "name",
        "latitude",
        "longitude",
        "country_code",
        "views",
        "location_public_id",
        "location_name",
        "timezone",
    )
    # Row r's Webcam JSON object without its closing brace and without the fields that depend
    # on the request (image, last_updated, player): CAM_JSON[offsets[r]:offsets[r + 1]].
    CAM_JSON = "webcams/index/webcam_json.bin"
    CAM_JSON_OFFSETS = "webcams/index/webcam_json_offsets.npy"
    # Rows by views descending and by views ascending, ties by public_id (int32 permutations).
    ORDER_DESC = "webcams/index/order_views_desc.npy"
    ORDER_ASC = "webcams/index/order_views_asc.npy"
    # Per row: index into COUNTRY_CODES (int16) and into LOCATION_IDS (int32, -1 = none).
    ROW_COUNTRY = "webcams/index/row_country.npy"
    ROW_LOCATION = "webcams/index/row_location.npy"
    COUNTRY_CODES = "webcams/index/country_codes.npy"  # S2, sorted: every ISO 3166-1 code
    LOCATION_IDS = "webcams/index/location_ids.npy"  # S16, sorted distinct location ids
    # Snapshots: row r's capture times (unix seconds, uint32, ascending) are
    # SNAP_TIMES[SNAP_OFFSETS[r]:SNAP_OFFSETS[r + 1]]; LAST_TIME[r] is the newest (0 = none).
    SNAP_TIMES = "webcams/index/snap_times.npy"
    SNAP_OFFSETS = "webcams/index/snap_offsets.npy"
    # Every SNAP_STRIDE-th element of SNAP_TIMES: the server keeps this small index in memory
    # and reads only the few blocks of SNAP_TIMES a query needs (not mapped: its resident
    # memory stays small however many webcams are asked for).
    SNAP_SPARSE = "webcams/index/snap_times_sparse.npy"
    SNAP_STRIDE = 64
    LAST_TIME = "webcams/index/last_time.npy"
    # Image of each snapshot (int32 id into IMAGES_ARROW); absent when every image is rendered
    # on demand by the server's image host (the generated catalog).
    SNAP_IMAGES = "webcams/index/snap_images.npy"
    IMAGES_ARROW = "webcams/index/images.arrow"  # id, kind (file | key), ref, media_type
    # Webcams of a provider's catalog: their images are the provider's own links, which expire
    # (expires_at, unix seconds), never files here. One row per served webcam that has them
    # (row: its row above); absent when no webcam does. Rebuilt alone when only links changed.
    PROVIDER_LINKS = "webcams/index/provider_links.arrow"
    PROVIDER_LINK_COLUMNS = (
        "row",
        "provider",
        "image_url",
        "player_url",
        "page_url",
        "updated_at",
        "expires_at",
    )
    IMAGES_DIR = "webcams/images"  # copied image files, named by id
    # For each row and local calendar day (days since 1970-01-01 in the webcam's timezone), the
    # snapshot closest to 12:00 local time: DAILY_DAY/DAILY_INDEX/DAILY_TIME[DAILY_OFFSETS[r]:
    # DAILY_OFFSETS[r + 1]], days ascending; DAILY_INDEX points into SNAP_TIMES, DAILY_TIME is
    # its capture time (so 30d never touches the large SNAP_TIMES).
    DAILY_OFFSETS = "webcams/index/daily_offsets.npy"
    DAILY_DAY = "webcams/index/daily_day.npy"
    DAILY_INDEX = "webcams/index/daily_index.npy"
    DAILY_TIME = "webcams/index/daily_time.npy"
    # Map clusters: a Web Mercator grid of level zoom + CELL_LEVEL_OFFSET. CLUSTER_ROWS lists
    # rows in grid order; CELLS holds, for every zoom, its non-empty cells (zoom ascending, then
    # cell key) with the members' row range in CLUSTER_ROWS, count, centroid and bounding box;
    # CELL_ZOOM_OFFSETS[z - ZOOM_MIN] is the first cell of zoom z. CELL_JSON holds each cell's
    # cluster object followed by a comma; for a cell of one webcam it ends after `"webcam":`.
    CLUSTER_ROWS = "webcams/index/cluster_rows.npy"
    CELLS = "webcams/index/cells.arrow"
    CELL_COLUMNS = (
        "key",
        "start",
        "end",
        "count",
        "latitude",
        "longitude",
        "min_lat",
        "max_lat",
        "min_lon",
        "max_lon",
    )
    CELL_ZOOM_OFFSETS = "webcams/index/cell_zoom_offsets.npy"
    CELL_JSON = "webcams/index/cell_json.bin"
    CELL_JSON_OFFSETS = "webcams/index/cell_json_offsets.npy"
    ZOOM_MIN, ZOOM_MAX = 1, 18
    CELL_LEVEL_OFFSET = 2  # 4 x 4 cells per 256-pixel map tile: 64-pixel cells
    MAX_MERCATOR_LAT = 85.0511287798066

    # Public ids: what the pipeline accepts and the server's path pattern.
    PUBLIC_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
    RESERVED_IDS = ("clusters", "token", "embed")  # path words of /webcams/...
    ID_BYTES = 64
    LOCATION_ID_BYTES = 16
    IMAGE_MEDIA_TYPES = {
        ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg",
        ".png": "image/png",
        ".webp": "image/webp",
        ".gif": "image/gif",
        ".avif": "image/avif",
    }

    @staticmethod
    def tile_xy(lat: float, lon: float, level: int) -> tuple[int, int]:
        """Web Mercator tile column and row of a point at `level` (poles clamped)."""
        size = 1 << level
        phi = math.radians(max(-Webcams.MAX_MERCATOR_LAT, min(Webcams.MAX_MERCATOR_LAT, lat)))
        x = math.floor((lon + 180.0) / 360.0 * size)
        y = math.floor((1.0 - math.log(math.tan(phi) + 1.0 / math.cos(phi)) / math.pi) / 2.0 * size)
        return min(max(x, 0), size - 1), min(max(y, 0), size - 1)

    @staticmethod
    def morton(x: int, y: int) -> int:
        """Z-order key: the bits of x at even positions, those of y at odd positions."""

        def spread(v: int) -> int:
            v &= 0xFFFFFFFF
            for shift, mask in (
                (16, 0x0000FFFF0000FFFF),
                (8, 0x00FF00FF00FF00FF),
                (4, 0x0F0F0F0F0F0F0F0F),
                (2, 0x3333333333333333),
                (1, 0x5555555555555555),
            ):
                v = (v | (v << shift)) & mask
            return v

        return spread(x) | spread(y) << 1


class AirQuality:
    """Grids and variables of the air-quality area (CAMS Europe 0.1° and CAMS global 0.4°).

    Two contract.Grid grids, each hourly from its newest forecast run's reference time to the
    end of the forecast. Concentrations are µg/m³ (pollen grains/m³, dust AOD dimensionless);
    the window means are the trailing means that feed the US AQI (ending with the hour itself:
    hours h-23 ... h for 24 h). No AQI is stored: at a point the server evaluates the index
    tables the manifest entry publishes under "aqi" on the interpolated concentrations, so
    the index always matches the concentrations served (docs/data/air-quality.md#aqi-at-the-point).
    """

    AREA = "air_quality"
    EUROPE = "europe"
    GLOBAL = "global"
    GRID_FILES = {EUROPE: "air_quality/europe.npy", GLOBAL: "air_quality/global.npy"}
    # Inside this box (inclusive) the European-only fields are present
    # (docs/api/air-quality.md#european-domain).
    EUROPE_BOX = {"lat_min": 30.0, "lat_max": 72.0, "lon_min": -25.0, "lon_max": 45.0}

    POLLUTANTS = ("pm25_ugm3", "pm10_ugm3", "o3_ugm3", "no2_ugm3", "so2_ugm3", "co_ugm3")
    # (name, hourly source, window hours)
    WINDOWS = (
        ("pm25_24h_ugm3", "pm25_ugm3", 24),
        ("pm10_24h_ugm3", "pm10_ugm3", 24),
        ("o3_8h_ugm3", "o3_ugm3", 8),
        ("co_8h_ugm3", "co_ugm3", 8),
        ("so2_24h_ugm3", "so2_ugm3", 24),
    )
    POLLEN = (
        "alder_pollen_grains_m3",
        "birch_pollen_grains_m3",
        "grass_pollen_grains_m3",
        "mugwort_pollen_grains_m3",
        "olive_pollen_grains_m3",
        "ragweed_pollen_grains_m3",
    )
    DUST_AOD = "dust_aod"
    # The European grid's dust AOD is the global one regridded: bilinear on the global cells
    # at each European cell centre (so a European answer reads one grid).
    EUROPE_VARIABLES = POLLUTANTS + tuple(w[0] for w in WINDOWS) + (DUST_AOD,) + POLLEN
    GLOBAL_VARIABLES = POLLUTANTS + tuple(w[0] for w in WINDOWS) + (DUST_AOD,)
    # Manifest entry key of the index tables: {"us": [input, ...], "eu": [...]}, each input
    # {"variable", "scale", "decimals", "x", "y", "below", "above", "required", "only_above"}:
    # the concentration times scale, truncated to `decimals` (when not null), mapped through
    # the piecewise-linear table (x, y), `below`/`above` outside it (null: no index from this
    # input); an input whose `only_above` names the variable of an earlier input of the same
    # index counts only where that input's value lies above its table's last x (the 24-hour
    # SO2 mean only where the 1-hour value reaches 305 ppb); the index is the maximum over
    # the inputs that count, capped at INDEX_CAP, rounded half up, and unknown when a
    # required input is unknown.
    AQI_TABLES = "aqi"
    INDEX_CAP = 500.0
    # Truncation keeps values within this fraction of the last kept digit below a step on the
    # step (float32 storage of 35.4 must stay 35.4); half-up rounding treats values within
    # HALF_UP_SLACK below x.5 as x.5 (118.5 computed in binary is 118.49999999999999).
    TRUNCATION_SLACK = 1e-4
    HALF_UP_SLACK = 1e-9


class Grid:
    """A regular latitude/longitude grid of hourly series, stored point-major for point reads.

    The values file is a .npy array of shape (nlat, nlon, ntime, nvar): one cell's whole time
    series is one contiguous block, so a bilinear read touches four small blocks. Latitudes
    ascend from lat0 by dlat, longitudes from lon0 (in [-180, 180)) by dlon; `wraps` is true when
    the columns span all 360 degrees (the last column neighbours the first). Time k is
    time0 + k * dt_s (Unix seconds). Unknown values are NaN. An area's manifest entry lists its
    grids under "grids": {name: spec}, spec holding these keys.
    """

    SPEC_KEYS = (
        "file",
        "lat0",
        "dlat",
        "nlat",
        "lon0",
        "dlon",
        "nlon",
        "wraps",
        "time0",
        "dt_s",
        "ntime",
        "variables",
        "dtype",
    )
    # A pole is one point, whatever the longitude: the server reads it at this longitude, and
    # the forecast's pole rows (latitude ±90) hold its values there in every column, so that
    # points near a pole converge to the pole's answer.
    POLE_LON = 0.0


class Forecast:
    """Files, grids and variables of the forecast area (paths relative to the version directory).

    The "hourly" grid (contract.Grid) holds the model fields resampled to whole UTC hours, in SI
    units named in the variable; the "static" grid holds the model's surface height (one time
    step). Variables marked optional are present only when the inputs have them.
    """

    AREA = "forecast"
    HOURLY = "forecast/hourly.npy"
    STATIC = "forecast/static.npy"
    HOURLY_GRID, STATIC_GRID = "hourly", "static"
    # Each variable at the hour, except the precipitation ones, which describe the hour that
    # starts there (rate, probability, phase).
    TEMPERATURE = "temperature_c"  # 2 m air temperature
    DEWPOINT = "dewpoint_c"  # 2 m dewpoint
    WIND_U, WIND_V = "wind_u_ms", "wind_v_ms"  # 10 m wind components (towards east, north)
    PRESSURE = "pressure_hpa"  # mean sea-level pressure
    CLOUD = "cloud_cover_frac"  # total cloud cover, 0-1
    PRECIP = "precip_mmh"  # precipitation rate, liquid equivalent, mm/h
    PRECIP_PROBABILITY = "precip_probability_frac"  # neighbourhood probability of >= 0.1 mm/h
    SNOW = "snow_frac"  # share of the precipitation falling as snow
    SLEET = "sleet_frac"  # ... as sleet (ice pellets, freezing rain)
    VISIBILITY = "visibility_m"  # optional
    GUST = "gust_ms"  # optional
    CAPE = "cape_jkg"  # optional (thunderstorm icons and texts)
    REQUIRED = (
        TEMPERATURE,
        DEWPOINT,
        WIND_U,
        WIND_V,
        PRESSURE,
        CLOUD,
        PRECIP,
        PRECIP_PROBABILITY,
        SNOW,
        SLEET,
    )
    OPTIONAL = (VISIBILITY, GUST, CAPE)
    OROGRAPHY = "orography_m"  # static grid: model surface height
    # Threshold of the precipitation probability and the rate below which nothing falls.
    PROBABILITY_THRESHOLD_MMH = 0.1
    # Magnus coefficients (Alduchov and Eskridge 1996) linking dewpoint and relative humidity;
    # the pipeline derives a dewpoint from r2 with them and the server the humidity back.
    MAGNUS_A, MAGNUS_B_C = 17.625, 243.04

    # Alerts: a table in alert order (onset and expires in Unix seconds, expires null when
    # open-ended) plus the point-in-polygon index the server maps.
    ALERTS = "forecast/alerts.parquet"
    ALERTS_TABLE = "alerts"
    ALERT_COLUMNS = (
        "id",
        "title",
        "description",
        "severity",
        "onset",
        "expires",
        "regions",
        "uri",
        "source",
    )
    # Per alert [min_lat, min_lon, max_lat, max_lon] (float64, n x 4); rings of vertices
    # (lat, lon) with VERTICES[RING_START[r]:RING_START[r + 1]] the r-th ring, RING_PART[r]
    # the polygon (outer ring and holes, even-odd rule) and PART_ALERT[p] the alert it belongs to.
    ALERT_BOXES = "forecast/alert_boxes.npy"
    ALERT_VERTICES = "forecast/alert_vertices.npy"
    ALERT_RING_START = "forecast/alert_ring_start.npy"
    ALERT_RING_PART = "forecast/alert_ring_part.npy"
    ALERT_PART_ALERT = "forecast/alert_part_alert.npy"
    SEVERITIES = ("Extreme", "Severe", "Moderate", "Minor", "Unknown")


TABLES = {
    "locations": Geocoding.LOCATIONS,
    "countries": Geocoding.COUNTRIES,
    "country_names": Geocoding.COUNTRY_NAMES,
    "place_names": Geocoding.PLACE_NAMES,
}

# Characters NFKD does not decompose to ASCII but people type as ASCII.
_FOLD = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "đ": "d",
        "ð": "d",
        "þ": "th",
        "ł": "l",
        "ı": "i",
        "ħ": "h",
        "ŀ": "l",
        "ŧ": "t",
        "ſ": "s",
    }
)
_GERMAN = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue"})
_APOSTROPHES = re.compile(r"['’`ʻʼ‘]")
# Elisions, whose apostrophe also parts words ("Côte d'Ivoire" is typed "cote d ivoire" too):
# after one letter (d', l', O', N') or an Italian article or preposition (dell', sull',
# Sant'). Not other apostrophes (Bol'shaya, Ch'in: transliterations nobody types apart, "St.
# John's"), nor the ʻokina, a letter of Hawaiian and Uzbek names.
_SPACED_APOSTROPHES = re.compile(
    r"(?<!\w)([^\W\d_]|[dns]ell|dall|coll|pell|all|quell|sant|sull)['’`ʼ‘](?=\w)"
)
_NON_WORD = re.compile(r"[\W_]+")
# Words of names written either way (normalised): a name has a key for each spelling. Sankt
# is also abbreviated St. ("st polten" finds Sankt Pölten), but St. is not read as Sankt:
# GeoNames writes Sankt out in German names, and a sankt key for every English and French
# St. name would find nothing anyone types.
ABBREVIATIONS = {
    "st": ("saint",),
    "saint": ("st",),
    "ste": ("sainte",),
    "sainte": ("ste",),
    "mt": ("mount",),
    "mount": ("mt",),
    "ft": ("fort",),
    "fort": ("ft",),
    "sankt": ("st",),
}
# Words spelt both ways per name (2 ** 3 keys at most); names rarely have more than one.
_ABBREVIATED_WORDS = 3


def normalise(text: str) -> str:
    """Case-, accent- and punctuation-insensitive search key ("St. John’s" -> "st johns")."""
    s = _APOSTROPHES.sub("", text.casefold().translate(_FOLD))
    s = unicodedata.normalize("NFKD", s)
    # Invisible format characters (zero-width space and joiners, soft hyphen, BOM: category
    # Cf) sit inside words: dropped, not turned into word breaks as other non-word ones are.
    s = "".join(
        c
        for c in s
        if c < "\x80" or not (unicodedata.combining(c) or unicodedata.category(c) == "Cf")
    )
    return _NON_WORD.sub(" ", s).strip()


def name_keys(name: str) -> set[str]:
    """All search keys of one name: normalised, also with ae/oe/ue for ä/ö/ü, with apostrophes
    read as spaces, and with the other spelling of ABBREVIATIONS before the last word."""
    folded = name.casefold()
    spellings = {folded}
    if any(c in folded for c in "äöü"):
        spellings.add(folded.translate(_GERMAN))
    if _SPACED_APOSTROPHES.search(folded):
        spellings |= {_SPACED_APOSTROPHES.sub(r"\1 ", s) for s in spellings}
    keys = set()
    for spelling in spellings:
        keys.update(_spelt_both_ways(normalise(spelling)))
    keys.discard("")
    return keys


def _spelt_both_ways(key: str) -> list[str]:
    """The key with each abbreviated word (not the last: "Main St" is a street) either way."""
    words = key.split(" ")
    variants = [words]
    at = [i for i, w in enumerate(words[:-1]) if w in ABBREVIATIONS][:_ABBREVIATED_WORDS]
    for i in at:
        variants += [
            v[:i] + [other] + v[i + 1 :] for v in variants for other in ABBREVIATIONS[v[i]]
        ]
    return [" ".join(v) for v in variants]


def flag_emoji(code: str) -> str:
    """Flag emoji of an ISO 3166-1 alpha-2 code (two regional indicator symbols)."""
    return "".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in code.upper())


# manifest.json as pipeline.common.publish writes it and server.artifacts.store reads it. Types
# only: nothing checks them at run time (the store checks the shape it relies on).


class TableEntry(TypedDict):
    """A user-facing Parquet table of an area: one DuckDB view of the catalog."""

    file: str  # relative to the version directory
    rows: int


class GridSpec(TypedDict):
    """A Grid's spec (the keys are Grid.SPEC_KEYS)."""

    file: str
    lat0: float
    dlat: float
    nlat: int
    lon0: float
    dlon: float
    nlon: int
    wraps: bool
    time0: int
    dt_s: int
    ntime: int
    variables: list[str]
    dtype: str  # a numpy dtype string ("<f4")


class InputEntry(TypedDict):
    """An input file the area was built from."""

    path: str  # relative to the datasets directory, else the file's name
    bytes: int
    sha256: str
    domain: NotRequired[str]  # air quality: AirQuality.EUROPE or GLOBAL


class AqiInput(TypedDict):
    """One input of an index table (see AirQuality.AQI_TABLES)."""

    variable: str
    scale: float
    decimals: int | None
    x: list[float]
    y: list[float]
    below: float | None
    above: float | None
    required: bool
    only_above: str | None


class AreaEntry(TypedDict):
    """An area's entry under the manifest's "areas": the keys every area writes, then those of
    one area or another."""

    version: str  # the data's version: the same data, the same version
    schema_version: int
    source: dict[str, Any]  # kind, generated, licence, notes, ... (descriptive)
    inputs: list[InputEntry]
    files: list[str]  # every file of the area, relative to the version directory
    tables: NotRequired[dict[str, TableEntry]]  # DuckDB view name -> table
    grids: NotRequired[dict[str, GridSpec]]  # grid name -> spec
    carried_over_from: NotRequired[str]  # the build_id its files were linked from
    input_digest: NotRequired[str]  # its input folders' digest (refresh)
    input_digests: NotRequired[dict[str, str]]  # per part, for areas built in parts
    aqi: NotRequired[dict[str, list[AqiInput]]]  # air quality: index name -> its inputs
    next_version_expected_s: NotRequired[int]  # forecast: Unix seconds
    run_times: NotRequired[list[str]]  # forecast
    alerts: NotRequired[dict[str, Any]]  # forecast: kind, count, licence, ...
    coverage: NotRequired[dict[str, float]]  # geocoding, webcams: shares of rows
    counts: NotRequired[dict[str, int]]  # webcams
    linked_to: NotRequired[str]  # webcams: "geocoding" or "packaged"
    linked_with: NotRequired[list[str]]  # webcams: the gazetteer's and tzfpy's ids
    dropped_snapshots: NotRequired[dict[str, int]]  # webcams: reason -> rows left out
    rendered_images: NotRequired[bool]  # webcams
    images_sha256: NotRequired[str]  # webcams: when there are image files
    warnings: NotRequired[list[str]]  # webcams: for the operator


class Manifest(TypedDict):
    """A version's manifest.json."""

    schema_version: int
    build_id: str  # the version directory's name
    areas: dict[str, AreaEntry]  # area name -> entry, in AREAS order
    checksums: NotRequired[dict[str, FileSum]]  # CHECKSUMS: every file but the manifest


class FileSum(TypedDict):
    """One file's size and SHA-256 (hex) in the manifest's CHECKSUMS."""

    bytes: int
    sha256: str


class Pointer(TypedDict):
    """current.json in object storage: the published version and its manifest's digest."""

    build_id: str
    manifest_bytes: int
    manifest_sha256: str


def remote_key(build_id: str, rel: str) -> str:
    """The object key (under the prefix) of a version's file."""
    return f"{VERSIONS}/{build_id}/{rel}"


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def loopback_endpoint(env: Mapping[str, str]) -> bool:
    """True when the S3 endpoint of the environment is plain HTTP on this machine (a test
    or a local stand-in), the one case where HTTP is allowed without AWS_ALLOW_HTTP."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        if url := env.get(name):
            host = re.match(r"http://(\[[^]]*\]|[^/:]*)", url)
            return host is not None and host.group(1).strip("[]") in LOOPBACK
    return False


def read_manifest(version_dir: Path) -> Any:
    """Parse a version's manifest.json: JSON of any shape, for the reader to check (a
    Manifest when the pipeline wrote it)."""
    return json.loads((version_dir / MANIFEST).read_text(encoding="utf-8"))


def current_version_dir(build_dir: Path) -> Path | None:
    """Resolve the published version directory, or None when nothing is published."""
    pointer = build_dir / CURRENT
    try:
        target = pointer.resolve(strict=True)
    except (FileNotFoundError, RuntimeError, OSError):
        return None
    try:
        mode = os.stat(target / MANIFEST).st_mode
    except OSError as exc:
        # No manifest is nothing published; a manifest that cannot be looked up (EACCES, a
        # name too long) is an error, said by the caller. (Path.is_file hides that on newer
        # Pythons.)
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return None
        raise
    return target if stat.S_ISREG(mode) else None
