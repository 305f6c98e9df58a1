"""Small real-format webcam inputs (DIR/webcams/): webcams.csv, snapshots.csv in no order and
with duplicates, image files, object keys; snapshot times across DST changes, in timezones
far from UTC, and around the time of the test run."""

from __future__ import annotations

import csv
import datetime as dt
import shutil
import struct
import time
import zlib
from pathlib import Path
from zoneinfo import ZoneInfo

FIXTURE_GEONAMES = Path(__file__).resolve().parents[1] / "fixtures" / "geonames"
UTC = dt.timezone.utc

WEBCAMS = [
    # public_id, name, latitude, longitude, country_code, views, location_public_id,
    # timezone, status
    ("zrh-1", "Zürich Lake", "47.3600", "8.5500", "ch", "1500", "", "", ""),
    (
        "zrh-2",
        "Zurich, Hauptbahnhof",
        "47.3780",
        "8.5400",
        "CH",
        "1500",
        "2657896",
        "Europe/Zurich",
        "active",
    ),
    # More decimals than the API shows (5): stored as shown.
    ("mhorn", "Matterhorn Glacier", "45.9765432", "7.6587654", "CH", "90000", "", "", "ACTIVE"),
    ("old-cam", "Old camera", "47.40", "8.60", "CH", "10", "", "", "inactive"),
    ("wdh", 'Windhoek <Main> & "Co"', "-22.56", "17.08", "NA", "300", "", "Africa/Windhoek", ""),
    ("kiri", "Kiritimati Beach", "1.87", "-157.40", "KI", "5", "", "Pacific/Kiritimati", ""),
    ("pago", "Pago Pago Harbour", "-14.28", "-170.70", "AS", "7", "", "Pacific/Pago_Pago", ""),
    ("lhi", "Lord Howe Lagoon", "-31.55", "159.08", "AU", "8", "", "Australia/Lord_Howe", ""),
    ("live", "Live Cam", "51.70", "5.30", "NL", "42", "", "", ""),
]
HEADER = (
    "public_id",
    "name",
    "latitude",
    "longitude",
    "country_code",
    "views",
    "location_public_id",
    "timezone",
    "status",
)
SERVED = sorted(w[0] for w in WEBCAMS if w[8].lower() != "inactive")


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def stamp(t: dt.datetime, style: int = 0) -> str:
    """ISO 8601 in the forms a feed may use: Z, +00:00, another offset, naive, fractions."""
    t = t.astimezone(UTC)
    if style == 1:
        return t.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    if style == 2:
        return t.astimezone(dt.timezone(dt.timedelta(hours=2))).strftime("%Y-%m-%dT%H:%M:%S+02:00")
    if style == 3:
        return t.strftime("%Y-%m-%dT%H:%M:%S")
    if style == 4:
        return t.strftime("%Y-%m-%dT%H:%M:%S.250Z")
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def series(public_id: str, start: str, hours: float, step_min: int, image) -> list[tuple]:
    """Snapshots every step_min minutes for `hours` from `start` (UTC)."""
    t0 = dt.datetime.fromisoformat(start).replace(tzinfo=UTC)
    count = int(hours * 60 // step_min)
    return [(public_id, t0 + dt.timedelta(minutes=step_min * i), image(i)) for i in range(count)]


def snapshot_rows(now: int) -> list[tuple]:
    """(public_id, datetime, image) of every snapshot the inputs hold, before shuffling."""
    live_start = dt.datetime.fromtimestamp(now - 2 * 86_400, UTC).replace(
        minute=0, second=0, microsecond=0
    )
    rows = (
        # Zurich: spring forward on 2024-03-31 at 01:00Z, images: files and an object key
        series(
            "zrh-1",
            "2024-03-30T08:00:00",
            55,
            60,
            lambda i: ["zrh/a.png", "zrh/b.png", "cdn/zrh-1/x.jpg"][i % 3],
        )
        # Zurich: fall back on 2024-10-27 at 01:00Z
        + series("zrh-2", "2024-10-26T06:00:00", 57, 60, lambda i: "zrh/a.png")
        + series("mhorn", "2024-07-01T00:00:00", 30, 10, lambda i: "mhorn.png")
        + series("wdh", "2024-06-01T00:00:00", 48, 30, lambda i: "keys/wdh.jpg")
        + series("kiri", "2024-06-01T00:00:00", 72, 180, lambda i: "kiri.png")
        + series("pago", "2024-06-01T00:00:00", 72, 120, lambda i: "pago.png")
        # Lord Howe: DST ends on 2024-04-07 at 02:00 local (+11 -> +10:30)
        + series("lhi", "2024-04-05T12:00:00", 72, 30, lambda i: "lhi.png")
        + series("live", live_start.isoformat()[:19], 60, 10, lambda i: "live.png")
    )
    return [(p, t, image) for p, t, image in rows]


def write_inputs(datasets: Path, now: int | None = None, *, parquet: bool = False) -> Path:
    """Write DIR/geonames (the hand-made dump) and DIR/webcams; returns DIR/webcams."""
    now = int(time.time()) if now is None else now
    if not (datasets / "geonames").exists():
        shutil.copytree(FIXTURE_GEONAMES, datasets / "geonames")
    folder = datasets / "webcams"
    (folder / "images" / "zrh").mkdir(parents=True)
    with open(folder / "webcams.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(WEBCAMS)
    colours = {
        "zrh/a.png": (200, 30, 30),
        "zrh/b.png": (30, 200, 30),
        "mhorn.png": (240, 240, 255),
        "kiri.png": (0, 120, 200),
        "pago.png": (0, 90, 160),
        "lhi.png": (20, 160, 120),
        "live.png": (250, 200, 0),
    }
    for name, rgb in colours.items():
        (folder / "images" / name).write_bytes(png(4, 3, rgb))
    rows = snapshot_rows(now)
    text = [(p, stamp(t, i % 5), image) for i, (p, t, image) in enumerate(rows)]
    text += text[::7]  # exact duplicates
    text.append(("zrh-1", stamp(rows[0][1]), "zrh/b.png"))  # same time, other image
    text += [
        ("ghost", "2024-01-01T00:00:00Z", "zrh/a.png"),  # unknown webcam
        ("old-cam", "2024-01-01T00:00:00Z", "zrh/a.png"),
    ]  # inactive webcam
    text.sort(key=lambda r: zlib.crc32(repr(r).encode()))  # no order
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = list(zip(*text))
        pq.write_table(
            pa.table(
                {
                    "public_id": list(columns[0]),
                    "captured_at": list(columns[1]),
                    "image": list(columns[2]),
                }
            ),
            folder / "snapshots.parquet",
        )
    else:
        with open(folder / "snapshots.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("public_id", "captured_at", "image"))
            writer.writerows(text)
    return folder


def expected_snapshots(now: int) -> dict[str, list[tuple[int, str]]]:
    """Per served webcam: sorted (unix time, image) after deduplication (the smaller image
    reference wins a tie at the same time)."""
    out: dict[str, dict[int, str]] = {}
    rows = snapshot_rows(now)
    rows.append(("zrh-1", rows[0][1], "zrh/b.png"))
    for public_id, t, image in rows:
        unix = int(t.timestamp())
        seen = out.setdefault(public_id, {})
        seen[unix] = min(image, seen.get(unix, image))
    return {p: sorted(v.items()) for p, v in out.items()}


def brute_30d(times: list[int], zone: str, now: int) -> list[int]:
    """The 30d history by definition (docs/api/webcams.md#snapshots), one datetime at a time:
    per local day of the last 30 whose pick is final by `now`, the snapshot captured by `now`
    closest to 12:00 local (the earlier on a tie): up to today once a snapshot captured at or
    after its local noon exists by `now` (before that a later snapshot could still be closer),
    else (or without one today) up to yesterday."""
    tz = ZoneInfo(zone)
    local_now = dt.datetime.fromtimestamp(now, tz)
    today = local_now.date()
    noon = int(local_now.replace(hour=12, minute=0, second=0, microsecond=0).timestamp())
    best: dict = {}
    for t in times:
        local = dt.datetime.fromtimestamp(t, tz)
        if t > now or (today - local.date()).days > 30:
            continue
        distance = abs(local.hour * 3600 + local.minute * 60 + local.second - 43_200)
        if local.date() not in best or (distance, t) < best[local.date()]:
            best[local.date()] = (distance, t)
    if today in best and not any(noon <= t <= now for t in times):
        del best[today]
    first = today - dt.timedelta(days=30 if today not in best else 29)
    return [t for day, (_, t) in sorted(best.items()) if day >= first]
