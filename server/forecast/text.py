"""Icons and summaries: the thresholds of the conditions (classified in kernels),
their structured phrases (Pirate Weather's shapes) rendered by `pirateweather-translations` in
the requested language, and the icon codes.

A condition is one integer (its parts in mixed radix, RADIX); the phrase of a condition and
every rendered text are cached, so a response renders almost nothing after the first requests.
Thresholds follow Pirate Weather's text constants (SI units).
"""

from __future__ import annotations

import bisect
import importlib
import logging
import math
import os
from functools import lru_cache

import numpy as np
import orjson
import pirateweather_translations.lang as _lang_package
from pirateweather_translations.translation import Translation

log = logging.getLogger("server.forecast")

WET_MMH = 0.02  # precipitation mentioned (and typed) from this rate
SURE_MMH = 0.1  # below this, or below SURE_PROBABILITY, it is "possible"
SURE_PROBABILITY = 0.25
RAIN_LEVELS = (0.4, 2.5, 10.0)  # very light < 0.4 <= light < 2.5 <= medium < 10 <= heavy
SNOW_LEVELS = (0.13, 0.83, 3.33)  # the same for snow, liquid equivalent (about 10:1)
WIND_LEVELS = (6.7056, 10.0, 17.8816)  # breezy, windy, dangerously windy (m/s)
CLOUD_LEVELS = (0.125, 0.375, 0.625, 0.875)
CAPE_LEVELS = (1250.0, 2500.0)  # possible thunderstorms, thunderstorms (J/kg)
FOG_M, MIST_M = 1000.0, 5000.0
FOG_SPREAD_C, MIST_SPREAD_C = 2.0, 3.0
DRY_HUMIDITY, HUMID_HUMIDITY, HUMID_MIN_C = 0.15, 0.95, 20.0

KINDS = ("none", "rain", "snow", "sleet")
KIND_NAMES = np.asarray(KINDS)
LEVELS = ("", "very-light", "light", "medium", "heavy")
WINDS = (None, "light-wind", "medium-wind", "heavy-wind")
VISIBILITY = (None, "fog", "mist", "haze")
HUMIDITY = (None, "low-humidity", "high-humidity")
SKIES = ("clear", "very-light-clouds", "light-clouds", "medium-clouds", "heavy-clouds")
THUNDER = (None, "possible-thunderstorm", "thunderstorm")
# Mixed radix of a condition code: kind, level, possible, thunder, wind, visibility, humidity, sky.
RADIX = (4, 5, 2, 3, 4, 4, 3, 5)
CODES = math.prod(RADIX)

DEFAULT_LANGUAGE = "en"
LANGUAGES = frozenset(
    name[:-3]
    for name in os.listdir(os.path.dirname(_lang_package.__file__))
    if name.endswith(".py") and not name.startswith("__")
)
ALIASES = {
    "nb": "no",
    "nn": "no",
    "zh-hant": "zh-tw",
    "zh-hk": "zh-tw",
    "zh-mo": "zh-tw",
    "zh-hans": "zh",
    "zh-cn": "zh",
    "zh-sg": "zh",
    "iw": "he",
    "in": "id",
    "sr-latn": "sr",
    "sr-cyrl": "sr",
}  # the package has one Serbian (in Latin letters)


def language(candidates: tuple[str, ...]) -> str:
    """The first supported language of the candidates ('pt-BR' -> pt), else English."""
    for tag in candidates:
        code = tag.lower()
        code = ALIASES.get(code, code)
        if code in LANGUAGES:
            return code
    return DEFAULT_LANGUAGE


@lru_cache(maxsize=None)
def _translation(lang: str) -> Translation:
    module = importlib.import_module(f"pirateweather_translations.lang.{lang}")
    return Translation(module.template)


@lru_cache(maxsize=65536)
def render(phrase: tuple, lang: str) -> str:
    """A structured phrase (nested tuples) rendered in a language (English if that fails)."""
    expr = _as_list(phrase)
    try:
        return _translation(lang).translate(expr)
    except Exception:  # a language module that cannot render a phrase must not fail a request
        if lang == DEFAULT_LANGUAGE:
            raise
        log.warning("phrase %r cannot be rendered in %s; English used", phrase, lang)
        return _translation(DEFAULT_LANGUAGE).translate(expr)


def _as_list(phrase):
    if isinstance(phrase, tuple):
        return [_as_list(p) for p in phrase]
    return phrase


# ---- conditions ---------------------------------------------------------------------------


def precipitation_level(rate_mmh: float, kind: int) -> int:
    """1 very light, 2 light, 3 medium, 4 heavy (snow on its own scale)."""
    return bisect.bisect_right(SNOW_LEVELS if kind == 2 else RAIN_LEVELS, rate_mmh) + 1


def cloud_level(cloud: float) -> int:
    """Index into SKIES of a cloud cover (clear when unknown)."""
    return 0 if cloud != cloud else bisect.bisect_right(CLOUD_LEVELS, cloud)


def decode(code: int) -> tuple[int, ...]:
    """The parts of a condition code (kind, level, possible, thunder, wind, visibility,
    humidity, sky)."""
    parts = []
    for radix in reversed(RADIX):
        code, part = divmod(code, radix)
        parts.append(part)
    return tuple(reversed(parts))


def precipitation_phrase(kind: int, level: int, possible: bool) -> str:
    """'possible-light-rain', 'heavy-snow', ..."""
    return f"{'possible-' if possible else ''}{LEVELS[max(level, 1)]}-{KINDS[kind]}"


@lru_cache(maxsize=4096)
def phrase(code: int):
    """The structured phrase of a condition (Pirate Weather's precedence: precipitation, then
    visibility, wind, humidity, sky)."""
    kind, level, possible, thunder, wind, visibility, humid, sky = decode(code)
    sky_text, wind_text, humid_text = SKIES[sky], WINDS[wind], HUMIDITY[humid]
    if kind:
        text = precipitation_phrase(kind, level, bool(possible))
        if thunder:
            return ("and", THUNDER[thunder], text)
        if wind_text:
            return ("and", text, wind_text)
        return ("and", text, humid_text) if humid_text else text
    if visibility:
        return ("and", VISIBILITY[visibility], humid_text) if humid_text else VISIBILITY[visibility]
    if wind_text:
        if sky == 0:
            return ("and", wind_text, humid_text) if humid_text else wind_text
        return ("and", wind_text, sky_text)
    return ("and", humid_text, sky_text) if humid_text else sky_text


def titles(codes: list[int], lang: str) -> list[str]:
    """Title-case summaries ("Partly Cloudy") of condition codes."""
    cache = _TITLES.setdefault(lang, {})
    out = []
    for code in codes:
        title = cache.get(code)
        if title is None:
            title = cache[code] = render(("title", phrase(code)), lang)
        out.append(title)
    return out


_TITLES: dict[str, dict[int, str]] = {}


class TitleTable:
    """The titles of one language as JSON strings end to end, for compiled code: title
    `slot[code]` is pool[starts[slot]:starts[slot + 1]] (slot -1: not rendered yet). Grown by
    add() between compiled calls, on one thread (the event loop's)."""

    def __init__(self, lang: str):
        self.lang = lang
        self.slot = np.full(CODES, -1, dtype=np.int32)
        self.starts = np.zeros(65, dtype=np.int64)
        self.pool = np.empty(4096, dtype=np.uint8)
        self.count = self.longest = 0
        self.arrays = (self.slot, self.starts, self.pool)

    def add(self, codes) -> None:
        """Render the titles of these codes (those not in the table yet)."""
        for code in codes:
            if self.slot[code] >= 0:
                continue
            data = np.frombuffer(orjson.dumps(titles([code], self.lang)[0]), dtype=np.uint8)
            start, end = self.starts[self.count], self.starts[self.count] + len(data)
            if self.count + 2 > len(self.starts):
                self.starts = np.concatenate([self.starts, np.zeros_like(self.starts)])
            if end > len(self.pool):
                self.pool = np.concatenate(
                    [self.pool, np.empty(max(end, len(self.pool)), dtype=np.uint8)]
                )
            self.pool[start:end] = data
            self.starts[self.count + 1] = end
            self.slot[code] = self.count
            self.count += 1
            self.longest = max(self.longest, len(data))
        self.arrays = (self.slot, self.starts, self.pool)


_TABLES: dict[str, TitleTable] = {}


def title_table(lang: str) -> TitleTable:
    """The title table of a language (created empty on first use)."""
    table = _TABLES.get(lang)
    if table is None:
        table = _TABLES[lang] = TitleTable(lang)
    return table


# ---- icons --------------------------------------------------------------------------------

ICON_CODES = ("01", "02", "03", "04", "09", "10", "11", "13", "50")
# Ties between equally frequent icons go to the more severe.
SEVERITY = {"11": 8, "13": 7, "10": 6, "09": 5, "50": 4, "04": 3, "03": 2, "02": 1, "01": 0}
