"""Generated snapshot images: an SVG sky for the local time and the cloud cover, a skyline,
the camera's name and the capture time. Deterministic for a webcam and an instant.

The sun's elevation and hour angle follow the usual low-precision solar formulas (declination
and equation of time from the day of the year), enough for a plausible sky colour.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import zlib
from html import escape

from server.webcams.snapshots import zone

WIDTH, HEIGHT, HORIZON = 640, 360, 250
# (sun elevation in degrees, sky colour at the top, sky colour at the horizon)
SKY = (
    (-18.0, (8, 12, 30), (18, 24, 48)),
    (-8.0, (20, 28, 70), (70, 60, 100)),
    (-2.0, (45, 60, 120), (230, 120, 80)),
    (4.0, (70, 120, 190), (250, 180, 120)),
    (15.0, (50, 120, 210), (170, 210, 240)),
    (60.0, (30, 100, 210), (150, 200, 245)),
)
MOUNTAIN_WORDS = (
    "Summit",
    "Ski",
    "Glacier",
    "Pass",
    "Mountain",
    "Cable",
    "Chairlift",
    "Valley",
    "Hut",
    "Slope",
    "Hillside",
)
WATER_WORDS = ("Harbour", "Beach", "Lake", "Promenade", "Riverside", "Bridge")


def sun_position(lat: float, lon: float, unix_s: int) -> tuple[float, float]:
    """(elevation in degrees, hour angle in degrees; negative before solar noon)."""
    t = dt.datetime.fromtimestamp(unix_s, dt.timezone.utc)
    gamma = 2 * math.pi / 365 * (t.timetuple().tm_yday - 1 + (t.hour - 12) / 24)
    decl = (
        0.006918
        - 0.399912 * math.cos(gamma)
        + 0.070257 * math.sin(gamma)
        - 0.006758 * math.cos(2 * gamma)
        + 0.000907 * math.sin(2 * gamma)
    )
    eqtime = 229.18 * (
        0.000075
        + 0.001868 * math.cos(gamma)
        - 0.032077 * math.sin(gamma)
        - 0.014615 * math.cos(2 * gamma)
        - 0.040849 * math.sin(2 * gamma)
    )
    minutes = t.hour * 60 + t.minute + t.second / 60 + eqtime + 4 * lon
    hour_angle = (minutes / 4 - 180 + 540) % 360 - 180
    phi, h = math.radians(lat), math.radians(hour_angle)
    sin_el = math.sin(phi) * math.sin(decl) + math.cos(phi) * math.cos(decl) * math.cos(h)
    return math.degrees(math.asin(max(-1.0, min(1.0, sin_el)))), hour_angle


def fallback_cloud_cover(seed: int, unix_s: int) -> float:
    """A smooth, deterministic stand-in for the cloud cover (0..1) when no forecast has one."""
    phase = (seed % 1000) / 1000 * 2 * math.pi
    days = unix_s / 86_400
    value = (
        0.45
        + 0.35 * math.sin(days / 2.7 * 2 * math.pi + phase)
        + 0.2 * math.sin(days * 3.1 * 2 * math.pi + 2 * phase)
    )
    return max(0.0, min(1.0, value))


def _mix(a: tuple, b: tuple, f: float) -> tuple:
    return tuple(round(x + (y - x) * f) for x, y in zip(a, b))


def _hex(c: tuple) -> str:
    return "#%02x%02x%02x" % c  # noqa: UP031 (the colour tuple as it is)


def sky_colours(elevation: float, cloud: float) -> tuple[tuple, tuple]:
    """Top and horizon colours, greyed by the cloud cover."""
    if elevation <= SKY[0][0]:
        top, bottom = SKY[0][1], SKY[0][2]
    elif elevation >= SKY[-1][0]:
        top, bottom = SKY[-1][1], SKY[-1][2]
    else:
        for (e0, t0, b0), (e1, t1, b1) in zip(SKY, SKY[1:]):
            if e0 <= elevation <= e1:
                f = (elevation - e0) / (e1 - e0)
                top, bottom = _mix(t0, t1, f), _mix(b0, b1, f)
                break
    light = max(0.0, min(1.0, (elevation + 10) / 30))
    grey = _mix((30, 32, 38), (150, 156, 164), light)
    return _mix(top, grey, 0.75 * cloud), _mix(bottom, grey, 0.6 * cloud)


def render(
    public_id: str, name: str, lat: float, lon: float, timezone: str, unix_s: int, cloud: float
) -> bytes:
    """The SVG image of one snapshot."""
    seed = zlib.crc32(public_id.encode())
    elevation, hour_angle = sun_position(lat, lon, unix_s)
    top, bottom = sky_colours(elevation, cloud)
    light = max(0.08, min(1.0, (elevation + 8) / 25)) * (1 - 0.35 * cloud)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(name)}">',
        '<defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">'
        f'<stop offset="0" stop-color="{_hex(top)}"/>'
        f'<stop offset="1" stop-color="{_hex(bottom)}"/></linearGradient></defs>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="url(#sky)"/>',
    ]
    parts += _stars(seed, elevation, cloud) + _sun(elevation, hour_angle, cloud)
    parts += _clouds(seed, unix_s, cloud, light)
    parts += _ground(seed, name, light, elevation)
    parts += _labels(name, unix_s, timezone)
    parts.append("</svg>")
    return "".join(parts).encode()


def _stars(seed: int, elevation: float, cloud: float) -> list[str]:
    if elevation > -8 or cloud > 0.7:
        return []
    rng = random.Random(seed)
    opacity = round((1 - cloud) * min(1.0, (-8 - elevation) / 6), 2)
    return [
        f'<circle cx="{rng.uniform(0, WIDTH):.0f}" cy="{rng.uniform(0, HORIZON - 20):.0f}" '
        f'r="{rng.choice((0.6, 0.9, 1.3))}" fill="#fff" opacity="{opacity}"/>'
        for _ in range(70)
    ]


def _sun(elevation: float, hour_angle: float, cloud: float) -> list[str]:
    if elevation < -3 or cloud > 0.85:
        return []
    x = WIDTH / 2 + hour_angle / 120 * WIDTH / 2
    y = HORIZON - max(-10.0, elevation) / 70 * (HORIZON - 30)
    colour = _hex(_mix((255, 150, 60), (255, 245, 200), max(0.0, min(1.0, elevation / 20))))
    return [
        f'<circle cx="{x:.0f}" cy="{y:.0f}" r="18" fill="{colour}" '
        f'opacity="{1 - 0.8 * cloud:.2f}"/>'
    ]


def _clouds(seed: int, unix_s: int, cloud: float, light: float) -> list[str]:
    """Cloud banks drifting with time (so a timelapse shows them move)."""
    rng = random.Random(seed ^ 0x5EED)
    shade = _hex(_mix((40, 42, 50), (245, 245, 248), light))
    drift = (unix_s / 60) * rng.uniform(0.6, 1.6)
    out = []
    for _ in range(round(cloud * 16)):
        x = (rng.uniform(0, WIDTH + 200) + drift) % (WIDTH + 200) - 100
        y, w = rng.uniform(20, HORIZON - 40), rng.uniform(60, 160)
        out.append(
            f'<ellipse cx="{x:.0f}" cy="{y:.0f}" rx="{w:.0f}" ry="{w / 4:.0f}" '
            f'fill="{shade}" opacity="{0.55 + 0.4 * cloud:.2f}"/>'
        )
    return out


def _ground(seed: int, name: str, light: float, elevation: float) -> list[str]:
    """Mountains, water or a town skyline, lit by the time of day."""
    rng = random.Random(seed)
    land = _hex(_mix((10, 14, 12), (70, 110, 70), light))
    if any(word in name for word in MOUNTAIN_WORDS):
        points, x = [f"0,{HORIZON}"], 0.0
        while x < WIDTH:
            x += rng.uniform(50, 120)
            points.append(f"{x:.0f},{rng.uniform(90, HORIZON - 20):.0f}")
        points.append(f"{WIDTH},{HEIGHT} 0,{HEIGHT}")
        rock = _hex(_mix((20, 22, 30), (120, 125, 140), light))
        return [
            f'<polygon points="{" ".join(points)}" fill="{rock}"/>',
            f'<rect y="{HORIZON + 40}" width="{WIDTH}" height="{HEIGHT}" fill="{land}"/>',
        ]
    out = []
    if any(word in name for word in WATER_WORDS):
        water = _hex(_mix((8, 14, 30), (60, 110, 160), light))
        out.append(f'<rect y="{HORIZON + 30}" width="{WIDTH}" height="{HEIGHT}" fill="{water}"/>')
    x = 0.0
    window = "#ffd27a" if elevation < -4 else _hex(_mix((30, 30, 40), (200, 210, 220), light))
    while x < WIDTH:
        w, h = rng.uniform(25, 70), rng.uniform(20, 110)
        out.append(
            f'<rect x="{x:.0f}" y="{HORIZON - h + 30:.0f}" width="{w:.0f}" height="{h:.0f}" '
            f'fill="{_hex(_mix((12, 12, 18), (90, 92, 100), light))}"/>'
        )
        if rng.random() < 0.6:
            out.append(
                f'<rect x="{x + w / 3:.0f}" y="{HORIZON - h + 40:.0f}" width="4" '
                f'height="4" fill="{window}"/>'
            )
        x += w + rng.uniform(0, 12)
    if not any(word in name for word in WATER_WORDS):
        out.append(f'<rect y="{HORIZON + 30}" width="{WIDTH}" height="{HEIGHT}" fill="{land}"/>')
    return out


def _labels(name: str, unix_s: int, timezone: str) -> list[str]:
    local = dt.datetime.fromtimestamp(unix_s, zone(timezone))
    stamp = local.strftime("%Y-%m-%d %H:%M ") + (local.tzname() or timezone)
    text = 'font-family="sans-serif" fill="#fff"'
    return [
        f'<rect width="{WIDTH}" height="34" fill="#000" opacity="0.45"/>',
        f'<text x="12" y="23" font-size="17" {text}>{escape(name)}</text>',
        f'<rect y="{HEIGHT - 30}" width="{WIDTH}" height="30" fill="#000" opacity="0.45"/>',
        f'<text x="12" y="{HEIGHT - 10}" font-size="15" {text}>{escape(stamp)}</text>',
        f'<text x="{WIDTH - 12}" y="{HEIGHT - 10}" font-size="12" text-anchor="end" {text} '
        'opacity="0.8">generated image</text>',
    ]
