"""Query and path parameter parsing: every malformed value becomes a 400 naming the parameter."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Mapping
from functools import lru_cache
from urllib.parse import unquote_plus

from contract import Geocoding
from server.http import languages
from server.http.errors import ApiError, bad_request

# Unambiguous, so a failed match is linear (no backtracking blow-up on long digit runs).
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
# Bounded (no megabyte numbers to parse) but above any float's shortest repr (24 characters)
# and the padded decimals some clients send.
MAX_NUMBER_CHARS = 64
# Up to 18 digits: any count or offset anyone could mean, and int() of it stays cheap.
INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# Control characters (Unicode Cc) but tab, line feed and carriage return, which free text may
# hold (trimmed, or read as spaces), and U+FFFD, which is what bytes that are not UTF-8 decode to.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
# A '%' that starts no %XX escape: yarl keeps it as text instead of refusing the query.
BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
FALLBACK_LANGUAGE = Geocoding.DEFAULT_LANGUAGE
assert FALLBACK_LANGUAGE == languages.FALLBACK


def once(query: Mapping[str, str], names: Collection[str]) -> None:
    """400 for a parameter among `names` (those an operation reads, but for list-valued ones)
    given more than once: only one value would be read, and the others never checked. Other
    parameters may repeat (unknown ones are ignored): docs/api/conventions.md#validation."""
    if len(query) < 2 or len(set(query)) == len(query):  # the usual case: nothing repeated
        return
    seen = set()
    for name, _ in query.items():
        if name in seen and name in names:
            raise bad_request(name, f"{name} is given more than once")
        seen.add(name)


def number(raw: str, name: str, low: float, high: float) -> float:
    """A finite decimal number within [low, high] (no surrounding whitespace)."""
    if len(raw) > MAX_NUMBER_CHARS:
        raise bad_request(
            name,
            f"{name} must be a number of at most {MAX_NUMBER_CHARS} "
            f"characters, got {len(raw)}: {show(raw)}",
        )
    if not NUMBER.fullmatch(raw):
        raise bad_request(name, f"{name} must be a number, got {show(raw)}")
    parsed = float(raw)
    if not math.isfinite(parsed):
        raise bad_request(name, f"{name} must be a finite number, got {show(raw)}")
    if not low <= parsed <= high:
        raise bad_request(name, f"{name} must be between {low:g} and {high:g}, got {show(raw)}")
    return parsed


def integer(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """An optional integer parameter within [low, high] (above the maximum is a 400)."""
    raw = query.get(name)
    if raw is None:
        return default
    if not INTEGER.fullmatch(raw):
        raise bad_request(name, f"{name} must be an integer from {low} to {high}, got {show(raw)}")
    value = int(raw)
    if not low <= value <= high:
        raise bad_request(name, f"{name} must be between {low} and {high}, got {value}")
    return value


def choice(query: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    """An optional enumerated parameter."""
    raw = query.get(name)
    if raw is None:
        return default
    if raw not in allowed:
        raise bad_request(name, f"{name} must be one of {', '.join(allowed)}, got {show(raw)}")
    return raw


def language(
    query: Mapping[str, str], name: str = "language", default: str = FALLBACK_LANGUAGE
) -> tuple[str, ...]:
    """A well-formed language tag as lookup candidates, most specific first, then English
    ('pt-BR' -> 'pt-BR', 'pt', 'en'; see languages.candidates): an unsupported language falls
    back to English."""
    return _language(query.get(name, default), name)


@lru_cache(maxsize=1024)
def _language(raw: str, name: str) -> tuple[str, ...]:
    if not languages.well_formed(raw):
        raise bad_request(
            name, f"{name} must be a language tag (BCP 47) such as en, de or pt-BR, got {show(raw)}"
        )
    return languages.candidates(raw)


def free_text(raw: str, name: str) -> str:
    """Free text, trimmed of surrounding whitespace and invisible format characters: a control
    character (but tab, line feed and carriage return) or bytes that are not UTF-8 anywhere in
    it are malformed."""
    found = CONTROL.search(raw)
    if found:
        what = (
            "bytes that are not UTF-8"
            if found.group() == "\ufffd"
            else f"control character U+{ord(found.group()):04X}"
        )
        raise bad_request(name, f"{name} must be text without control characters, got {what}")
    # A zero-width space, joiner or BOM at an end is no character a person typed (a search
    # ignores them): "\u200b\u200b" is as empty as "  ". One pass from each end.
    start, stop = 0, len(raw)
    while start < stop and _blank(raw[start]):
        start += 1
    while stop > start and _blank(raw[stop - 1]):
        stop -= 1
    return raw[start:stop]


def percent_escapes(raw_query: str, name: str) -> None:
    """400 when the value of `name` as sent holds a '%' that starts no %XX escape (malformed,
    RFC 3986 2.1), which decoding would keep as the typed text. For free text only: in other
    values a stray '%' fails their own format."""
    for part in raw_query.split("&"):
        key, _, value = part.partition("=")
        if ("%" in key or "+" in key) and BAD_ESCAPE.search(key) is None:
            key = unquote_plus(key)  # as yarl reads the name (%71 is q)
        if key == name and BAD_ESCAPE.search(value):
            raise bad_request(
                name,
                f"{name} holds a '%' that starts no percent-encoded byte "
                "(%XX); send a % sign as %25",
            )


def _blank(char: str) -> bool:
    return char.isspace() or (char > "\x7f" and unicodedata.category(char) == "Cf")


def latlon(query: Mapping[str, str]) -> tuple[float, float]:
    """Required lat and lon query parameters."""
    lat_raw, lon_raw = query.get("lat"), query.get("lon")
    if (
        lat_raw
        and lon_raw
        and len(lat_raw) <= MAX_NUMBER_CHARS
        and len(lon_raw) <= MAX_NUMBER_CHARS
        and NUMBER.fullmatch(lat_raw)
        and NUMBER.fullmatch(lon_raw)
    ):
        lat, lon = float(lat_raw), float(lon_raw)  # the pattern admits no nan or inf words
        if -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0:
            return lat, lon
    return _latlon_errors(query)


def coordinates(raw: str, name: str = "coordinates") -> tuple[float, float]:
    """A `lat,lon` path segment: exactly two finite numbers in range, comma-separated."""
    lat_raw, comma, lon_raw = raw.partition(",")
    if not comma or "," in lon_raw:
        raise bad_request(
            name,
            f"{name} must be latitude and longitude separated by one "
            f"comma (e.g. 47.37,8.54), got {show(raw)}",
        )
    return latlon({"lat": lat_raw, "lon": lon_raw})


def _latlon_errors(query: Mapping[str, str]) -> tuple[float, float]:
    """The slow path of latlon: check each coordinate and report every problem at once."""
    errors = []
    values = []
    for name, limit in (("lat", 90.0), ("lon", 180.0)):
        raw = query.get(name)
        if not raw:
            errors.append({"parameter": name, "message": f"{name} is required"})
            continue
        try:
            values.append(number(raw, name, -limit, limit))
        except ApiError as exc:  # collect both coordinates' problems in one answer
            errors.extend(exc.errors or [])
    if errors:
        raise ApiError(400, "; ".join(e["message"] for e in errors), errors=errors)
    return values[0], values[1]


def show(raw: str) -> str:
    """Echo a bad value safely (shortened)."""
    return repr(raw if len(raw) <= 40 else raw[:40] + "…")
