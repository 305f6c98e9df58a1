"""Local days and noon picks (pipeline.webcams.localtime) against zoneinfo, one instant at a time."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from pipeline.webcams.localtime import local_seconds, noon_picks, offset_steps

UTC = dt.timezone.utc


def unix(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


@pytest.mark.parametrize(
    "zone, start, end, changes",
    [
        (
            "Europe/Zurich",
            "2024-01-01",
            "2024-12-31",
            [("2024-03-31T01:00:00", 7200), ("2024-10-27T01:00:00", 3600)],
        ),
        (
            "Australia/Lord_Howe",
            "2024-01-01",
            "2024-12-31",
            [("2024-04-06T15:00:00", 37800), ("2024-10-05T15:30:00", 39600)],
        ),
        (
            "America/St_Johns",
            "2024-01-01",
            "2024-12-31",
            [("2024-03-10T05:30:00", -9000), ("2024-11-03T04:30:00", -12600)],
        ),
        ("Pacific/Kiritimati", "2024-01-01", "2024-12-31", []),
        ("Pacific/Apia", "2011-12-01", "2012-01-10", [("2011-12-30T10:00:00", 50400)]),
    ],
)
def test_offset_steps_find_each_change_to_the_second(zone, start, end, changes):
    since, offsets = offset_steps(zone, unix(start + "T00:00:00"), unix(end + "T00:00:00"))
    assert [
        (dt.datetime.fromtimestamp(int(s), UTC).strftime("%Y-%m-%dT%H:%M:%S"), int(o))
        for s, o in zip(since[1:], offsets[1:])
    ] == changes


@pytest.mark.parametrize(
    "zone",
    [
        "Europe/Zurich",
        "Australia/Lord_Howe",
        "Pacific/Chatham",
        "America/St_Johns",
        "Pacific/Kiritimati",
        "Pacific/Pago_Pago",
        "Asia/Kathmandu",
        "Antarctica/Troll",
        "UTC",
    ],
)
def test_local_seconds_agree_with_zoneinfo(zone):
    rng = np.random.default_rng(7)
    times = np.sort(rng.integers(unix("2023-12-01T00:00:00"), unix("2025-02-01T00:00:00"), 3000))
    steps = offset_steps(zone, int(times.min()), int(times.max()))
    got = local_seconds(times, steps)
    expected = [
        int(t + dt.datetime.fromtimestamp(int(t), ZoneInfo(zone)).utcoffset().total_seconds())
        for t in times
    ]
    assert got.tolist() == expected


def test_noon_picks_prefer_the_closest_then_the_earlier():
    day = 19_000 * 86_400
    local = np.array(
        [
            day + 11 * 3600,
            day + 13 * 3600,  # tie: the earlier wins
            day + 86_400 + 6 * 3600,
            day + 86_400 + 12 * 3600 + 1,
            day + 2 * 86_400 + 23 * 3600,
        ]
    )
    picks, days = noon_picks(local, np.zeros(len(local), dtype=np.int64))
    assert picks.tolist() == [0, 3, 4] and days.tolist() == [19_000, 19_001, 19_002]


def test_noon_picks_group_series_apart_and_handle_a_repeated_day():
    day = 19_000 * 86_400
    # Group 0 has a local day that comes back after the next one (a DST change at midnight).
    local = np.array(
        [
            day + 23 * 3600,
            day + 86_400 + 600,
            day + 23 * 3600 + 1800,
            day + 12 * 3600 + 5,
            day + 12 * 3600,
            day + 86_400 + 12 * 3600,
        ]
    )
    group = np.array([0, 0, 0, 0, 1, 1])
    picks, days = noon_picks(local, group)
    assert picks.tolist() == [3, 1, 4, 5]
    assert days.tolist() == [19_000, 19_001, 19_000, 19_001]
