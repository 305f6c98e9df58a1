"""ISO 3166-2 codes of admin1 regions ("on" for Ontario), from pycountry's copy of the list.

GeoNames admin1 codes are ISO's only in some countries (US states, Swiss cantons); elsewhere
they are older numbers (Ontario is CA.08). So a region gets the code of the first-level
subdivision of its country that it matches best, in this order:
1. its GeoNames code is the subdivision's (US.TX: US-TX);
2. its name is the subdivision's or a translation of it (pycountry ships them in some 70
   languages: Bayern is Bavaria in English), equal as search keys, or equal once words
   saying what kind of region it is are left out on both sides (Guangdong Sheng: Guangdong);
3. one name is the other's first words (Centre: Centre-Val de Loire);
4. the names are a few edits apart (Saxony-Anhalt: Sachsen-Anhalt);
then by the number of translations that match. Each code goes to one region, each region
gets one code. Codes with digits (Italy's regions: IT-25) or of one letter (Argentina's:
AR-B) name nothing people type after a city: matched, so no other region takes the
subdivision, then dropped.
"""

from __future__ import annotations

import gettext
import os
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl
import pycountry
from rapidfuzz.distance import OSA
from rapidfuzz.process import cdist

import contract

DOMAIN = "iso3166-2"
# Words saying what kind of region a name is, in the languages of ISO's names and their
# translations (normalised), and the small words that join them to the name.
KINDS = frozenset(
    """
    autonomous canton city county department district division emirate governorate krai
    kraj land municipality oblast parish prefecture province region republic state territory
    voivodeship
    autonom autonoma autonome avtonomnaya avtonomnyy comunidad cuige departamento
    departement districtul distrito estado gewest kanton kray okrug poblacht provincia
    provincie regiao regiunea reigiun republica republiek republik repubblica respublika
    sheng shi tinutul uathrialach voblasc zizhiqu
    of de del des di du
    """.split()
)
FUZZY_CHARS = 4  # one edit allowed per this many characters of the shorter name
# ... but a short name's edit only at its end (Moscow: French Moscou, Mosco): a letter
# apart earlier (Taiwan, Tainan) is another place.
SHORT_NAME = 8
CODE, SAME, LEADING, FUZZY = range(4)
_SPLIT = re.compile(r"\s*[\[\]();/]\s*")


def subdivision_codes(admin1: pl.DataFrame) -> list[str | None]:
    """ISO 3166-2 code (after the hyphen) of each (country_code, admin1_name, admin1_code)."""
    by_country = defaultdict(list)
    rows = admin1.select("country_code", "admin1_name", "admin1_code").iter_rows()
    for i, (country, name, code) in enumerate(rows):
        if country and name:
            by_country[country].append((i, name, code))
    found: list[str | None] = [None] * admin1.height
    subdivisions = _subdivisions()
    for country, regions in by_country.items():
        for i, code in _assign(regions, subdivisions.get(country, [])).items():
            if code.isalpha() and len(code) > 1:
                found[i] = code
    return found


def _assign(regions: list[tuple], subdivisions: list[tuple]) -> dict[int, str]:
    """Region row -> subdivision code: the best matching pairs first, each side used once."""
    scores = _name_scores(
        [_variants(name) for _, name, _ in regions], [keys for _, keys in subdivisions]
    )
    for r, (_, _, own_code) in enumerate(regions):
        for s, (code, _) in enumerate(subdivisions):
            if own_code == code and code.isalpha():
                scores[r, s] = (CODE, 0, 0, 0)
    assigned: dict[int, str] = {}
    taken = set()
    for r, s in sorted(scores, key=lambda pair: (scores[pair], pair)):
        row, code = regions[r][0], subdivisions[s][0]
        if row not in assigned and code not in taken:
            assigned[row] = code
            taken.add(code)
    return assigned


def _name_scores(regions: list[tuple], subdivisions: list[tuple]) -> dict[tuple, tuple]:
    """(region, subdivision) -> (rank, edits, kind words left out, -names agreeing) if they
    match: lowest best."""
    # Whole names rank before names without their kind words: Moscow is Moskva, and Moscow
    # Oblast is too, but only without "oblast".
    best: dict[tuple, tuple] = {}
    agreeing: dict[tuple, int] = defaultdict(int)
    for stripped in (0, 1):
        mine = [(r, key) for r, keys in enumerate(regions) for key in keys[stripped]]
        theirs = [
            (s, key, n)
            for s, counts in enumerate(subdivisions)
            for key, n in counts[stripped].items()
        ]
        for r, s, n, rank, edits in _matches(mine, theirs):
            score = (rank, edits, stripped)
            if (r, s) not in best or score < best[r, s]:
                best[r, s], agreeing[r, s] = score, 0
            if score == best[r, s]:
                agreeing[r, s] += n
    return {pair: (*score, -agreeing[pair]) for pair, score in best.items()}


def _matches(mine: list[tuple], theirs: list[tuple]):
    """(region, subdivision, names with the key, rank, edits) of each pair of keys that match."""
    if not mine or not theirs:
        return
    by_first = defaultdict(list)
    for s, key, n in theirs:
        by_first[key.split(" ", 1)[0]].append((s, key, n))
    keys, other_keys = [k for _, k in mine], [k for _, k, _ in theirs]
    distances = cdist(
        keys,
        other_keys,
        scorer=OSA.distance,
        workers=1,
        score_cutoff=max(map(len, keys)) // FUZZY_CHARS,
    )
    allowed = (
        np.minimum.outer(np.array([len(k) for k in keys]), np.array([len(k) for k in other_keys]))
        // FUZZY_CHARS
    )
    for r, key in mine:  # equal, or one the other's first words: the same first word
        for s, other, n in by_first.get(key.split(" ", 1)[0], ()):
            if key == other:
                yield r, s, n, SAME, 0
            elif (key + " ").startswith(other + " ") or (other + " ").startswith(key + " "):
                yield r, s, n, LEADING, 0
    # 0 edits: the same key, found above.
    for i, j in zip(*np.nonzero((distances > 0) & (distances <= allowed))):
        a, b = keys[i], other_keys[j]
        if (
            min(len(a), len(b)) < SHORT_NAME
            and len(os.path.commonprefix((a, b))) < min(len(a), len(b)) - 1
        ):
            continue
        yield mine[i][0], theirs[j][0], theirs[j][2], FUZZY, int(distances[i, j])


@lru_cache(maxsize=None)
def _variants(name: str) -> tuple[frozenset, frozenset]:
    """Keys of a name's parts ("Wales [Cymru GB-CYM]"), and the same without KINDS."""
    full, stripped = set(), set()
    for part in _SPLIT.split(name):
        pieces = [part]
        if "," in part:  # "Bruxelles-Capitale, Région de": the name first, or alone
            head, tail = part.split(",", 1)
            pieces += [f"{tail} {head}", head]
        for piece in pieces:
            key = contract.normalise(piece)
            if key:
                full.add(key)
                words = [w for w in key.split() if w not in KINDS]
                stripped.add(" ".join(words) if words else key)
    return frozenset(full), frozenset(stripped)


@lru_cache(maxsize=1)
def _subdivisions() -> dict[str, list[tuple[str, tuple]]]:
    """Country -> (code, ({key: names}, {key without kind words: names})) per subdivision."""
    # First-level subdivisions only; a name is ISO's or one of its distinct translations.
    catalogs = [
        gettext.translation(DOMAIN, pycountry.LOCALES_DIR, languages=[language])
        for language in _languages()
    ]
    found = defaultdict(list)
    for sub in pycountry.subdivisions:
        if sub.parent_code is not None:
            continue
        counts = (defaultdict(int), defaultdict(int))
        for name in {sub.name} | {catalog.gettext(sub.name) for catalog in catalogs}:
            for count, keys in zip(counts, _variants(name)):
                for key in keys:
                    count[key] += 1
        found[sub.country_code].append((sub.code.split("-", 1)[1], tuple(map(dict, counts))))
    return dict(found)


def _languages() -> list[str]:
    """Languages pycountry has ISO 3166-2 translations in."""
    root = Path(pycountry.LOCALES_DIR)
    return sorted(p.parent.parent.name for p in root.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"))
