"""The forecast's input fields: one table of their quantities and names in every format read.

For each field: its quantity (a key of pipeline.forecast.units.CONVERSIONS, the unit coming
from the file), its NetCDF names (cfgrib, then wgrib2 -netcdf) and its GRIB2 messages as ecCodes
names them (shortName, typeOfLevel) for GFS and ECMWF open data, each list in order of
preference, and for GRIB2 which kinds of message (stepType) are read, also in order of
preference (see model_grib's docstring for why). Total cloud cover is only ever the whole
column: GFS writes it on level type 10 ('atmosphere'; in 2011 on 200, 'atmosphereSingleLayer',
"entire atmosphere considered as a single layer"), ECMWF on 1-8 ('entireAtmosphere'); the
low, middle, high, convective and boundary-layer cloud layers are other quantities.
"""

from __future__ import annotations

from dataclasses import dataclass

HAG = "heightAboveGround"


@dataclass(frozen=True)
class Field:
    """One input field of the forecast."""

    quantity: str
    netcdf: tuple[str, ...]
    grib: tuple[tuple[str, str], ...]
    what: str  # for messages: "2 m temperature"
    step_types: tuple[str, ...] = ("instant",)


def _flag(name: str, what: str) -> Field:
    return Field(
        "category",
        (name, f"{name.upper()}_surface"),
        ((name, "surface"),),
        what,
        ("instant", "avg"),
    )


FIELDS: dict[str, Field] = {
    "t2m": Field(
        "temperature_c", ("t2m", "2t", "TMP_2maboveground"), (("2t", HAG),), "2 m temperature"
    ),
    "d2m": Field(
        "temperature_c", ("d2m", "2d", "DPT_2maboveground"), (("2d", HAG),), "2 m dewpoint"
    ),
    "r2": Field(
        "fraction", ("r2", "2r", "RH_2maboveground"), (("2r", HAG),), "2 m relative humidity"
    ),
    "u10": Field(
        "speed_ms", ("u10", "10u", "UGRD_10maboveground"), (("10u", HAG),), "10 m eastward wind"
    ),
    "v10": Field(
        "speed_ms", ("v10", "10v", "VGRD_10maboveground"), (("10v", HAG),), "10 m northward wind"
    ),
    "msl": Field(
        "pressure_hpa",
        ("prmsl", "mslet", "msl", "PRMSL_meansealevel", "MSLET_meansealevel"),
        (("prmsl", "meanSea"), ("msl", "meanSea"), ("mslet", "meanSea")),
        "mean sea level pressure",
    ),
    "tcc": Field(
        "fraction",
        ("tcc", "TCDC_entireatmosphere", "TCDC_entireatmosphere_consideredasasinglelayer_"),
        (("tcc", "atmosphere"), ("tcc", "entireAtmosphere"), ("tcc", "atmosphereSingleLayer")),
        "total cloud cover, entire atmosphere",
        ("instant", "avg"),
    ),
    "prate": Field(
        "rate_mmh",
        ("prate", "PRATE_surface"),
        (("prate", "surface"),),
        "precipitation rate",
        ("avg", "instant"),
    ),
    "tp": Field(
        "amount_mm", ("tp", "APCP_surface"), (("tp", "surface"),), "total precipitation", ("accum",)
    ),
    "vis": Field("length_m", ("vis", "VIS_surface"), (("vis", "surface"),), "visibility"),
    "gust": Field(
        "speed_ms",
        ("gust", "i10fg", "GUST_surface"),
        (("gust", "surface"), ("i10fg", HAG), ("10fg", HAG), ("10fg3", HAG), ("10fg6", HAG)),
        "wind gust",
        ("instant", "max"),
    ),
    "cape": Field(
        "energy_jkg",
        ("cape", "CAPE_surface"),
        (("cape", "surface"), ("mucape", "mostUnstableParcel")),
        "convective available potential energy",
    ),
    "crain": _flag("crain", "categorical rain"),
    "csnow": _flag("csnow", "categorical snow"),
    "cfrzr": _flag("cfrzr", "categorical freezing rain"),
    "cicep": _flag("cicep", "categorical ice pellets"),
    "ptype": Field(
        "category", ("ptype", "PTYPE_surface"), (("ptype", "surface"),), "precipitation type"
    ),
    "orog": Field(
        "length_m",
        ("orog", "z", "HGT_surface"),
        (("orog", "surface"), ("z", "surface")),
        "surface height",
    ),
}
