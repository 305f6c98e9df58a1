"""The compiled webcam loops (server.webcams.kernels) write what the plain Python they replace wrote."""

from __future__ import annotations

import datetime as dt

import numpy as np

from contract import Webcams as W
from server.webcams import kernels


def _iso(unix_s: int) -> str:
    return dt.datetime.fromtimestamp(unix_s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def test_stamped_body_writes_every_capture_time_as_datetime_does():
    rng = np.random.default_rng(3)
    edges = [
        0,
        59,
        86_399,
        86_400,
        951_782_400,
        951_868_799,
        951_868_800,  # 2000-02-29
        4_107_542_399,
        4_107_542_400,
        2**31 - 1,
        2**31,
        2**32 - 1,
    ]  # 2100, 2038
    times = np.sort(np.concatenate([rng.integers(0, 2**32, 20_000), edges]).astype(np.uint32))
    body = kernels.stamped_body(times, b"[", b'{"a":"', b'","b":"x/', b'.svg"}', b"]")
    assert (
        body.decode()
        == "["
        + ",".join(f'{{"a":"{_iso(t)}","b":"x/{_iso(t)}.svg"}}' for t in times.tolist())
        + "]"
    )


def test_stamped_body_of_no_and_one_time():
    read_only = np.frombuffer(np.array([1_700_000_000], dtype=np.uint32).tobytes(), np.uint32)
    assert kernels.stamped_body(read_only[:0], b"{[", b"<", b"|", b">", b"]}") == b"{[]}"
    assert (
        kernels.stamped_body(read_only, b"{[", b"<", b"|", b">", b"]}")
        == b"{[<2023-11-14T22:13:20|2023-11-14T22:13:20>]}"
    )


def test_edge_centroid_sums_add_as_numpy_reduceat_does():
    # The same additions in the same order: means of 5-decimal coordinates often fall on a
    # rounding tie, where the last bit decides the answer's fifth decimal.
    rng = np.random.default_rng(5)
    for n in [*range(1, 300), 511, 1024, 2047, 5000, 19_775]:
        x = np.round(rng.uniform(-90, 90, n), 5)
        x[rng.random(n) < 0.3] = 0.0
        assert kernels._reduceat_sum(x, n) == np.add.reduceat(x, [0])[0], n


def test_tiles_and_keys_are_the_contracts():
    rng = np.random.default_rng(9)
    lats = np.concatenate([rng.uniform(-90, 90, 20_000), [-90.0, 90.0, W.MAX_MERCATOR_LAT, 0.0]])
    lons = np.concatenate([rng.uniform(-180, 180, 20_000), [-180.0, 180.0, 0.0, 179.999999]])
    for lat, lon, level in zip(lats.tolist(), lons.tolist(), rng.integers(3, 21, len(lats))):
        x, y = W.tile_xy(lat, lon, int(level))
        assert kernels._tile_xy(lat, lon, int(level)) == (x, y)
        assert int(kernels._morton(x, y)) == W.morton(x, y)
