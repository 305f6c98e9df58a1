"""One answer never contradicts itself: the kind of precipitation of the present, its minutes
and the hours around them, an entry's icon and the thunder its summary names, a day's type and
its icon. Over a real build of a known GFS-format run from 2026-12-01 00:00 UTC (global 10°
grid, 48 hours), answered by the server's own code at chosen instants (only HTTP is left out,
as in test_forecast_fixed_instants).

Known fields: 20 °C, dry, 50 % cloud everywhere except at four grid nodes (ocean, whole-hour
zones), each holding one case:
- COLD (-40, -30), -10 °C: 0.01 mm/h at 06 UTC (below what is typed), then 0.1 mm/h of snow.
- MIX, between a node of rain (-50, 0) and one of freezing rain at 10 UTC, then snow at 11
  and 12 UTC (-50, 10), 1 mm/h: the point (-50, 6) takes 40 % from the first, 60 % from the
  second, so its 10:00 is sleet (60 %) and its 11:00 snow (60 %), both with 40 % rain.
- STORM (-30, -20): CAPE 3000 J/kg with 0.05 mm/h, "possible" drizzle, every hour.
- WINTRY (-30, 0), 2 December: 21 mm of rain (00-06 UTC), 15 mm of freezing rain (07-11) and
  10.5 mm of snow (12-14): rain is the largest kind, the others make it a mix.
"""

from __future__ import annotations

import calendar
import datetime as dt

import numpy as np
import orjson
import pytest

import contract
from server.forecast import blocks as forecast_blocks
from server.forecast import data as forecast_data
from server.forecast.blocks import BLOCKS, Request
from server.forecast.place import locate
from server.forecast.science.units import SYSTEMS
from tests.support import forecast_inputs as fi
from tests.support.procs import run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

HOUR = 3600
RUN = calendar.timegm((2026, 12, 1, 0, 0, 0))
HORIZON_H = 48
COLD, MIX, STORM, WINTRY = (-40.0, -30.0), (-50.0, 6.0), (-30.0, -20.0), (-30.0, 0.0)
RAIN_NODE, MIX_NODE = (-50.0, 0.0), (-50.0, 10.0)


def _utc(day: int, hour: int) -> int:
    return calendar.timegm((2026, 12, day, hour, 0, 0))


# (node, valid time) -> (rate mm/h, flag set or None: the phase is then the temperature's)
WET = {
    (COLD, _utc(1, 6)): (0.01, None),
    (COLD, _utc(1, 7)): (0.1, "csnow"),
    (COLD, _utc(1, 8)): (0.1, "csnow"),
    **{(RAIN_NODE, _utc(1, h)): (1.0, "crain") for h in (10, 11, 12)},
    (MIX_NODE, _utc(1, 10)): (1.0, "cfrzr"),
    **{(MIX_NODE, _utc(1, h)): (1.0, "csnow") for h in (11, 12)},
    **{(STORM, RUN + h * HOUR): (0.05, None) for h in range(HORIZON_H + 1)},
    **{(WINTRY, _utc(2, h)): (3.0, "crain") for h in range(7)},
    **{(WINTRY, _utc(2, h)): (3.0, "cfrzr") for h in range(7, 12)},
    **{(WINTRY, _utc(2, h)): (3.5, "csnow") for h in range(12, 15)},
}


def _node(la, lo, node) -> np.ndarray:
    """The grid node (longitudes 0-360) at a point."""
    return (la == node[0]) & ((lo - node[1]) % 360.0 == 0.0)


def _precipitation(name: str):
    """prate (kg m-2 s-1) or a categorical flag (0/1) at a valid time."""

    def value(t, la, lo):
        out = np.zeros(la.shape)
        for (node, when), (rate, flag) in WET.items():
            if when == t:
                out[_node(la, lo, node)] = rate / 3600.0 if name == "prate" else float(flag == name)
        return out

    return value


def _temperature(offset_k: float):
    def value(t, la, lo):
        return np.where(_node(la, lo, COLD), 263.15, 293.15) - offset_k

    return value


def _cape(t, la, lo):
    return np.where(_node(la, lo, STORM), 3000.0, 0.0)


@pytest.fixture(scope="module")
def data(module_tmp):
    root = module_tmp("forecast-consistency")
    fields = {
        **fi.KNOWN,
        "t2m": _temperature(0.0),
        "d2m": _temperature(3.0),
        "cape": _cape,
        **{name: _precipitation(name) for name in ("prate", "crain", "csnow", "cfrzr")},
    }
    fi.write_gfs_run(root / "datasets" / "forecast", RUN, HORIZON_H, fields)
    run_pipeline(
        "build",
        "--datasets",
        str(root / "datasets"),
        "--out",
        str(root / "build"),
        "--only",
        "forecast",
    )
    version = contract.current_version_dir(root / "build")
    return forecast_data.load(version, contract.read_manifest(version)["areas"]["forecast"])


def answer(data, point, now: str, hours: int = 48) -> dict:
    """The response body at a point at an instant (ISO 8601, UTC), in si units."""
    now_s = calendar.timegm(dt.datetime.fromisoformat(now).timetuple())
    request = Request(
        lat=point[0], lon=point[1], units="si", lang="en", hours=hours, blocks=frozenset(BLOCKS)
    )
    body = forecast_blocks.respond(data, locate(*point, None), request, SYSTEMS["si"], now_s)
    return orjson.loads(body)


def _kinds(minutely: dict) -> list[str]:
    return [m["precipitationType"] for m in minutely["data"]]


def test_minutes_below_freezing_are_snow_when_their_hour_is_too_light_to_be_typed(data):
    # 06:00 is -10 °C with 0.01 mm/h (untyped), 07:00 snow of 0.1 mm/h: the rate crosses the
    # 0.02 mm/h that is typed after 6 2/3 minutes, and what falls then is snow, not rain.
    body = answer(data, COLD, "2026-12-01T06:00:30")
    hours = body["hourly"]["data"]
    assert hours[0]["temperature"] == -10.0 and hours[0]["precipitationType"] == "none"
    assert hours[1]["precipitationType"] == "snow"
    minutely = body["minutely"]
    assert _kinds(minutely) == ["none"] * 7 + ["snow"] * 54
    assert "drizzle" not in minutely["summary"].lower()
    assert "flurries" in minutely["summary"].lower() and minutely["icon"] == "13n"


def test_the_present_its_minute_and_its_hour_agree_on_the_kind(data):
    # At 10:25 the point has 40 % rain, 35 % sleet, 25 % snow: rain is the largest share, but
    # the hour before is sleet and the hour after snow. The present and its minute take one
    # of the two (sleet, the larger share of the two), then the minutes turn to snow.
    body = answer(data, MIX, "2026-12-01T10:25:00")
    hours = body["hourly"]["data"]
    assert [h["precipitationType"] for h in hours[:3]] == ["sleet", "snow", "snow"]
    kinds = _kinds(body["minutely"])
    assert body["currently"]["precipitationType"] == kinds[0] == "sleet"
    assert body["currently"]["precipitation"] == body["minutely"]["data"][0]["precipitation"]
    assert set(kinds) == {"sleet", "snow"} and kinds == sorted(kinds)  # sleet, then snow
    assert kinds[-1] == "snow"


def test_an_entry_naming_thunderstorms_has_the_thunderstorm_icon(data):
    # 0.05 mm/h is "possible" drizzle, whose icon would be the sky's; the summary names
    # thunderstorms (CAPE 3000 J/kg), so the icon is 11, for every hour and the present.
    body = answer(data, STORM, "2026-12-01T12:00:00")
    entries = [body["currently"], *body["hourly"]["data"][:36]]
    assert {e["summary"] for e in entries} == {"Thunderstorms and Possible Drizzle"}
    assert {e["icon"][:2] for e in entries} == {"11"}


def test_a_mixed_day_is_typed_sleet_as_its_icon_and_summary_say(data):
    # 21 mm of rain, 15 of freezing rain, 10.5 of snow: mixed precipitation (a second kind
    # has a quarter of the amount or more), icon 13 (snow or sleet) and type sleet (a wintry
    # mix, as Dark Sky typed it), although rain is the largest kind.
    day = answer(data, WINTRY, "2026-12-01T12:00:00")["daily"]["data"][1]
    assert day["precipitation"] == 46.5
    assert day["summary"].startswith("Mixed precipitation"), day["summary"]
    assert day["icon"] == "13d" and day["precipitationType"] == "sleet"
