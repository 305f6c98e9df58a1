"""Icons and summaries: conditions classified in numpy, phrases built as Pirate Weather's
structured phrases and rendered by `pirateweather-translations` in the requested language.

A condition is one integer (its parts in mixed radix); the phrase of a condition and every
rendered text are cached, so a response renders almost nothing after the first requests.
Thresholds follow Pirate Weather's text constants (SI units).
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pirateweather_translations.lang as _lang_package
from pirateweather_translations.translation import Translation

log = logging.getLogger("server.forecast")

WET_MMH = 0.02                 # precipitation mentioned (and typed) from this rate
SURE_MMH = 0.1                 # below this, or below SURE_PROBABILITY, it is "possible"
SURE_PROBABILITY = 0.25
RAIN_LEVELS = (0.4, 2.5, 10.0)          # very light < 0.4 <= light < 2.5 <= medium < 10 <= heavy
SNOW_LEVELS = (0.13, 0.83, 3.33)        # the same for snow, liquid equivalent (about 10:1)
WIND_LEVELS = (6.7056, 10.0, 17.8816)   # breezy, windy, dangerously windy (m/s)
CLOUD_LEVELS = (0.125, 0.375, 0.625, 0.875)
CAPE_LEVELS = (1250.0, 2500.0)          # possible thunderstorms, thunderstorms (J/kg)
FOG_M, MIST_M = 1000.0, 5000.0
FOG_SPREAD_C, MIST_SPREAD_C = 2.0, 3.0
DRY_HUMIDITY, HUMID_HUMIDITY, HUMID_MIN_C = 0.15, 0.95, 20.0

KINDS = ("none", "rain", "snow", "sleet")
LEVELS = ("", "very-light", "light", "medium", "heavy")
WINDS = (None, "light-wind", "medium-wind", "heavy-wind")
VISIBILITY = (None, "fog", "mist", "haze")
HUMIDITY = (None, "low-humidity", "high-humidity")
SKIES = ("clear", "very-light-clouds", "light-clouds", "medium-clouds", "heavy-clouds")
THUNDER = (None, "possible-thunderstorm", "thunderstorm")
# Mixed radix of a condition code: kind, level, possible, thunder, wind, visibility, humidity, sky.
RADIX = (4, 5, 2, 3, 4, 4, 3, 5)

DEFAULT_LANGUAGE = "en"
LANGUAGES = frozenset(name[:-3] for name in os.listdir(os.path.dirname(_lang_package.__file__))
                      if name.endswith(".py") and not name.startswith("__"))
ALIASES = {"nb": "no", "nn": "no", "zh-hant": "zh-tw", "zh-hk": "zh-tw", "zh-mo": "zh-tw",
           "zh-hans": "zh", "zh-cn": "zh", "zh-sg": "zh", "iw": "he", "in": "id"}


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


def _level(values: np.ndarray, bounds: tuple[float, ...]) -> np.ndarray:
    """How many bounds each value reaches (0 for NaN)."""
    return np.searchsorted(np.asarray(bounds), _known(values, -1.0), side="right")


def precipitation_level(rate_mmh: float, kind: int) -> int:
    """1 very light, 2 light, 3 medium, 4 heavy (snow on its own scale)."""
    return int(np.searchsorted(SNOW_LEVELS if kind == 2 else RAIN_LEVELS, rate_mmh,
                               side="right")) + 1


def cloud_level(cloud: float) -> int:
    """Index into SKIES of a cloud cover (clear when unknown)."""
    return 0 if cloud != cloud else int(np.searchsorted(CLOUD_LEVELS, cloud, side="right"))


def precipitation_kind(rate_mmh, snow, sleet) -> np.ndarray:
    """0 none, 1 rain, 2 snow, 3 sleet: the largest share wherever precipitation falls."""
    snow, sleet = _known(snow), _known(sleet)
    kind = np.where(snow > 0.5, 2, np.where(sleet >= np.maximum(snow, 1.0 - snow - sleet), 3,
                                            np.where(snow >= 1.0 - snow - sleet, 2, 1)))
    return np.where(rate_mmh >= WET_MMH, kind, 0)


def _known(values, default: float = 0.0) -> np.ndarray:
    """NaN replaced (much cheaper than numpy.nan_to_num on short arrays)."""
    return np.where(values == values, values, default)


@dataclass
class Conditions:
    """The parts of each time's condition (see RADIX) and their single code."""

    kind: np.ndarray
    level: np.ndarray
    possible: np.ndarray
    thunder: np.ndarray
    wind: np.ndarray
    visibility: np.ndarray
    humidity: np.ndarray
    sky: np.ndarray

    @property
    def code(self) -> np.ndarray:
        code = self.kind
        for part, radix in zip((self.level, self.possible, self.thunder, self.wind,
                                self.visibility, self.humidity, self.sky), RADIX[1:]):
            code = code * radix + part
        return code


def conditions(rate_mmh, probability, kind, temperature_c, dewpoint_c, humidity, wind_ms,
               visibility_m, cloud, cape) -> Conditions:
    """Condition parts of a series; unknown inputs count as absent conditions."""
    wet = kind > 0
    level = np.where(wet, np.where(kind == 2, _level(rate_mmh, SNOW_LEVELS),
                                   _level(rate_mmh, RAIN_LEVELS)) + 1, 0)
    possible = wet & ((rate_mmh < SURE_MMH) | (_known(probability, 1.0) < SURE_PROBABILITY))
    thunder = np.where(wet, _level(cape, CAPE_LEVELS), 0)
    wind = _level(wind_ms, WIND_LEVELS)
    spread = temperature_c - dewpoint_c
    vis = _known(visibility_m, np.inf)
    calm = wind == 0
    low = vis < MIST_M
    visibility = np.where(calm & (vis < FOG_M) & (spread <= FOG_SPREAD_C), 1,
                          np.where(low & calm & (spread <= MIST_SPREAD_C), 2,
                                   np.where(low & (spread > MIST_SPREAD_C), 3, 0)))
    humid = np.where(humidity < DRY_HUMIDITY, 1,
                     np.where((humidity > HUMID_HUMIDITY) & (temperature_c > HUMID_MIN_C), 2, 0))
    return Conditions(kind=kind, level=level, possible=possible.astype(np.int64),
                      thunder=thunder, wind=wind, visibility=visibility, humidity=humid,
                      sky=_level(cloud, CLOUD_LEVELS))


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
    return [render(("title", phrase(c)), lang) for c in codes]


# ---- icons --------------------------------------------------------------------------------

ICON_CODES = ("01", "02", "03", "04", "09", "10", "11", "13", "50")
_ICON_ARRAY = np.asarray(ICON_CODES)
# Ties between equally frequent icons go to the more severe.
SEVERITY = {"11": 8, "13": 7, "10": 6, "09": 5, "50": 4, "04": 3, "03": 2, "02": 1, "01": 0}


def icons(c: Conditions) -> np.ndarray:
    """OpenWeatherMap condition codes (decisions rule 29), without the d/n suffix."""
    falls = (c.kind > 0) & (c.possible == 0)
    choice = np.where(
        falls, np.where(c.thunder == 2, 6, np.where(
            c.kind >= 2, 7, np.where((c.level == 1) | (c.sky < 3), 4, 5))),
        np.where(c.visibility > 0, 8, np.minimum(c.sky, 3)))
    return _ICON_ARRAY[choice]


def precipitation_icon(kind: int, peak_mmh: float) -> str:
    """Icon of falling precipitation: 13 snow or sleet, 09 drizzle, else 10 rain."""
    return "13" if kind >= 2 else "09" if peak_mmh < RAIN_LEVELS[0] else "10"


def with_suffix(icon_codes: np.ndarray, day) -> list[str]:
    """'04' + 'd' or 'n'."""
    return np.char.add(icon_codes.astype("U2"), np.where(day, "d", "n")).tolist()


def dominant(icon_codes) -> str:
    """The most frequent icon code; ties go to the more severe."""
    values, counts = np.unique(np.asarray(icon_codes), return_counts=True)
    best = max(zip(counts.tolist(), values.tolist()), key=lambda cv: (cv[0], SEVERITY[cv[1]]))
    return best[1]
