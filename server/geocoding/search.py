"""Name search over the geocoding index: exact, prefix, typo-tolerant, with region context.

Results are ordered by match tier (the place's own name exactly, whole-region match, a likely
typo, an alternate name exactly, prefix of the own name, prefix of an alternate name, typo),
then edit distance (typos of own names before typos of alternate names at each distance), then the
place's precomputed importance rank (population, capitals, admin seats, id). An airport's codes
count as its own name (see pipeline.geocoding.keys). A likely typo is a city whose shown
name is one edit from the query and which is far more populous than every alternate-name or
prefix match (likely_typos): "ottowa" finds Ottawa, Canada before Ottawa, Illinois, whose
alternate name it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA

from contract import Geocoding as G
from server.artifacts.mapped import arrow_indices
from server.geocoding.index import GeocodingIndex, query_key

(
    TIER_EXACT,
    TIER_REGION,
    TIER_LIKELY_TYPO,
    TIER_EXACT_ALT,
    TIER_PREFIX,
    TIER_PREFIX_ALT,
    TIER_FUZZY,
) = range(7)
PREFIX_POOL = 400  # best-ranked prefix matches considered per query
TRIGRAM_POOL = 3000  # most promising typo candidates verified per query
# A typo pass reading more trigram postings than this (some milliseconds of work) is made in
# a thread, not on the event loop (search's bounded); the usual ones read 10,000-60,000.
BOUNDED_POSTINGS = 100_000
SPELLING_CHECKS = 5  # alternate-name matches whose own name is compared with the query
# A place one typo away from the query, of at least LIKELY_POPULATION people and LIKELY_RATIO
# times as many as any place matched otherwise, is likely the one meant (Ottowa: Ottawa CA,
# not Ottawa IL, which records the misspelling, nor the prefix of Ottoway AU).
LIKELY_POPULATION = 100_000
LIKELY_RATIO = 10
# Typos are looked for below this many matches whatever the limit (see name_hits): the
# default limit, so that a default search costs what it did.
LIKELY_CHECK = 10
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 "

Region = tuple  # (kind, region id, is_code, start, end)


def upper_bound(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix`."""
    trimmed = prefix.rstrip(b"\xff")
    return trimmed[:-1] + bytes([trimmed[-1] + 1]) if trimmed else None


def prefix_range(index: GeocodingIndex, needle: bytes) -> tuple[int, int]:
    """[start, end) of the sorted keys that begin with `needle`."""
    upper = upper_bound(needle)
    return (
        int(np.searchsorted(index.keys, needle, "left")),
        int(np.searchsorted(index.keys, upper, "left")) if upper else len(index.keys),
    )


def edits1(word: str) -> set[str]:
    """Strings one deletion, transposition, substitution or insertion away from `word`."""
    letters = set(ALPHABET) | set(word)
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in letters}
    inserts = {a + c + b for a, b in splits for c in letters}
    return deletes | transposes | replaces | inserts


def typo_budget(key: str) -> int:
    """Edits tolerated: none below 4 characters, one for 4 to 7, two from 8."""
    return 0 if len(key) < 4 else 1 if len(key) <= 7 else 2


@dataclass
class Hits:
    """Chunks of candidate rows, each with one tier and order within it (edit distance, own
    names first); the best entry per row wins. Both become per-row arrays once, in best()."""

    rows: list[np.ndarray] = field(default_factory=list)
    tiers: list[int] = field(default_factory=list)
    dists: list[int] = field(default_factory=list)
    bounded: bool = False  # True: TyposNeeded instead of a long typo pass (search's bounded)

    def add(self, rows: np.ndarray, tier: int, dist: int = 0, alternate: bool = False) -> None:
        if len(rows):
            self.rows.append(rows)
            self.tiers.append(tier)
            self.dists.append(2 * dist + alternate)

    def count(self) -> int:
        return len(np.unique(np.concatenate(self.rows))) if self.rows else 0

    def best(self, index: GeocodingIndex, limit: int) -> list[int]:
        """Distinct rows, best first, at most `limit`."""
        if not self.rows:
            return []
        rows = np.concatenate(self.rows)
        sizes = [len(r) for r in self.rows]
        order = np.lexsort(
            (
                index.rank[rows],
                np.repeat(np.array(self.dists, np.int8), sizes),
                np.repeat(np.array(self.tiers, np.int8), sizes),
            )
        )
        ranked = rows[order]
        _, first = np.unique(ranked, return_index=True)
        return [int(r) for r in ranked[np.sort(first)][:limit]]


@dataclass(frozen=True)
class Filter:
    """Rows must be in `country` (index, or None for any) and in every region group."""

    country: int | None = None
    groups: tuple[tuple[Region, ...], ...] = ()

    def mask(self, index: GeocodingIndex, rows: np.ndarray) -> np.ndarray:
        keep = np.ones(len(rows), dtype=bool)
        if self.country is not None:
            keep &= index.country_idx[rows] == self.country
        for group in self.groups:
            countries = [r[1] for r in group if r[0] == "country"]
            admin1s = [r[1] for r in group if r[0] == "admin1"]
            keep &= np.isin(index.country_idx[rows], countries) | np.isin(
                index.admin1_idx[rows], admin1s
            )
        return keep


class TyposNeeded(Exception):
    """The search needs a typo pass longer than search(bounded=True) makes."""


def search(
    index: GeocodingIndex,
    text: str,
    *,
    field_all: bool,
    country: str | None,
    limit: int,
    bounded: bool = False,
) -> list[int]:
    """Rows of the best matches for `text`. bounded=True raises TyposNeeded where the typo pass
    would read more than BOUNDED_POSTINGS trigram postings (a search of some milliseconds):
    the caller may then search again where a long search holds up nothing else
    (server.geocoding.handlers.lookup)."""
    parts = query_parts(text)
    if not parts:
        return []
    name, contexts = parts[0], parts[1:]
    base = Filter(index.country_index(country) if country else None)
    hits = Hits(bounded=bounded)
    if contexts:
        groups = tuple(g for g in (regions(index, c, codes=True) for c in contexts) if g)
        name_hits(index, hits, name, Filter(base.country, groups), limit)
        if not hits.rows and groups:  # an unknown context word must not hide the place
            name_hits(index, hits, name, base, limit)
        return hits.best(index, limit)
    if field_all:
        # "springfield illinois": a name followed by the region it is in.
        tokens = name.split()
        for i in range(len(tokens) - 1, 0, -1):
            context = " ".join(tokens[i:])
            group = regions(index, context, codes=len(tokens) - i == 1)
            if group:
                name_hits(
                    index,
                    hits,
                    " ".join(tokens[:i]),
                    Filter(base.country, (group,)),
                    limit,
                    typos=False,
                )
        for region in regions(index, name, codes=False):
            rows = np.asarray(index.region_rows[region[3] : region[4]])
            rows = rows[base.mask(index, rows)][:limit]
            hits.add(rows, TIER_REGION)
    # Typos in the whole text only matter when it matched nothing as name plus region.
    name_hits(index, hits, name, base, limit, typos=not hits.rows)
    return hits.best(index, limit)


def query_parts(text: str) -> list[str]:
    """The search keys of the comma-separated parts: the name, then its context."""
    # Empty parts (", paris", "paris, ,") are as if absent: the first non-empty one is the name.
    return [k for k in (query_key(p) for p in text.split(",")) if k]


def regions(index: GeocodingIndex, key: str, *, codes: bool) -> tuple[Region, ...]:
    """Countries and admin1 regions named `key` (codes such as 'tx' or 'ch' only if allowed)."""
    return tuple(r for r in index.regions.get(key, ()) if codes or not r[2])


def name_hits(
    index: GeocodingIndex, hits: Hits, key: str, where: Filter, limit: int, typos: bool = True
) -> None:
    """Add exact and prefix matches of one name key, and typo matches when no name matched
    exactly (bar misspellings: misspells_own_name) and fewer than `limit` (or LIKELY_CHECK)
    places did."""
    if not key:
        return
    needle = key.encode()[: G.KEY_BYTES]
    lo, end = prefix_range(index, needle)
    hi = int(np.searchsorted(index.keys, needle, "right"))
    exact = _verified(index, lo, hi, key)
    rows = np.asarray(index.key_row[exact])
    keep = where.mask(index, rows)
    # A key's places are in key rank order, own names first (see contract.Geocoding.KEY_RANK).
    own = len(exact)
    if own and index.key_rank[exact[-1]] >= index.size:
        own = int(np.searchsorted(index.key_rank[exact], index.size))
    chunks = len(hits.rows)
    hits.add(rows[:own][keep[:own]], TIER_EXACT)
    own_found = len(hits.rows) > chunks
    alternates = rows[own:][keep[own:]]
    hits.add(alternates, TIER_EXACT_ALT)
    if len(needle) < G.KEY_BYTES:
        positions = np.arange(hi, end)  # after the keys equal to it come the longer ones
    else:
        positions = np.setdiff1d(
            beginning(index, np.arange(lo, end), key), exact, assume_unique=True
        )
    rows = np.asarray(index.key_row[positions])
    keep = where.mask(index, rows)
    positions, rows = positions[keep], rows[keep]
    key_rank = np.asarray(index.key_rank[positions])
    if len(rows) > PREFIX_POOL:
        best = np.argpartition(key_rank, PREFIX_POOL)[:PREFIX_POOL]
        rows, key_rank = rows[best], key_rank[best]
    own_name = key_rank < index.size  # see contract.Geocoding.KEY_RANK
    hits.add(rows[own_name], TIER_PREFIX)
    hits.add(rows[~own_name], TIER_PREFIX_ALT)
    budget = typo_budget(key) if typos else 0
    if not (
        budget
        and not own_found
        and (not len(alternates) or misspells_own_name(index, alternates, key, budget))
    ):
        return
    # Below LIKELY_CHECK matches typos are looked for whatever the limit: a likely typo comes
    # first, and the first answer must not depend on how many are asked for.
    found = hits.count()
    if found < max(limit, LIKELY_CHECK):
        before = len(hits.rows)
        typo_hits(index, hits, key, budget, where)
        if found < LIKELY_CHECK:
            likely_typos(index, hits, before, key, where)


def likely_typos(index: GeocodingIndex, hits: Hits, before: int, key: str, where: Filter) -> None:
    """Move places whose shown name is one edit from `key` above the exact alternate-name and
    prefix matches (the first `before` chunks) when they are cities LIKELY_RATIO times as
    populous as every such match, unless `key` may be a name on its way: the start of a
    city's own name ("cairn": Cairns) or its first words ("nauru": Nauru International
    Airport). "ottowa" is not Ottoway's."""
    populations = index.populations
    most = -1
    for rows, tier in zip(hits.rows[:before], hits.tiers[:before]):
        if len(rows):
            largest = int(populations.take(rows).max())
            if tier == TIER_PREFIX and largest >= LIKELY_POPULATION:
                return
            most = max(most, largest)
    if most < 0 or begins_own_name(index, key, where):
        return  # nothing to move above, or a name typed in whole words
    floor = max(LIKELY_POPULATION, LIKELY_RATIO * most)
    for rows, tier, dist in list(zip(hits.rows, hits.tiers, hits.dists))[before:]:
        if tier != TIER_FUZZY or dist != 2:  # distance 1 from an own name (Hits.add)
            continue
        # Own names include preferred names in other languages (Pariz, Algeri): only the
        # shown name's typos are likely enough to come first.
        likely = [
            row
            for row in rows[populations.take(rows) >= floor].tolist()
            if OSA.distance(key, query_key(index.name[row].as_py()), score_cutoff=1) <= 1
        ]
        hits.add(np.asarray(likely, dtype=rows.dtype), TIER_LIKELY_TYPO)


def begins_own_name(index: GeocodingIndex, key: str, where: Filter) -> bool:
    """True when `key` is the first word or words of an own name of a place in `where`."""
    words = key + " "
    positions = np.arange(*prefix_range(index, words.encode()[: G.KEY_BYTES]))
    positions = beginning(index, positions[index.key_rank[positions] < index.size], words)
    rows = np.asarray(index.key_row[positions])
    return bool(where.mask(index, rows).any())


def misspells_own_name(index: GeocodingIndex, rows: np.ndarray, key: str, budget: int) -> bool:
    """True when `key` is within `budget` edits of the own name of one of (the first) `rows`."""
    # GeoNames records many misspellings among alternate names (London's "Londn"): matching one
    # does not show that the query was typed as meant. Another word (Zurigo, Gatwick) does.
    names = index.name
    return any(
        OSA.distance(key, query_key(names[row].as_py()), score_cutoff=budget) <= budget
        for row in rows[:SPELLING_CHECKS].tolist()
    )


def beginning(index: GeocodingIndex, positions: np.ndarray, text: str) -> np.ndarray:
    """Of `positions` (keys whose stored bytes begin as `text`'s), those whose full key begins
    with `text`: stored keys stop at KEY_BYTES, so only a longer `text` needs them read."""
    if len(text.encode()) <= G.KEY_BYTES:
        return positions
    return positions[[index.keys_full[int(p)].as_py().startswith(text) for p in positions]]


def _verified(index: GeocodingIndex, lo: int, hi: int, key: str) -> np.ndarray:
    """Positions in [lo, hi) whose full key equals `key` (truncation only matters past 32 bytes)."""
    positions = np.arange(lo, hi)
    if len(key.encode()) < G.KEY_BYTES:
        return positions
    return positions[[index.keys_full[int(p)].as_py() == key for p in positions]]


def typo_hits(index: GeocodingIndex, hits: Hits, key: str, budget: int, where: Filter) -> None:
    """Keys within `budget` edits (OSA: a transposition counts as one edit)."""
    if budget == 1:
        variants = [v.encode() for v in edits1(key) if v and v != key]
        variants = np.array([v for v in variants if len(v) <= G.KEY_BYTES], dtype=f"S{G.KEY_BYTES}")
        lo = np.searchsorted(index.keys, variants, "left")
        hi = np.searchsorted(index.keys, variants, "right")
        found = hi > lo
        spans = [(int(a), int(b), 1) for a, b in zip(lo[found], hi[found])]
    else:
        spans = [
            (int(index.ukey_start[u]), int(index.ukey_start[u + 1]), d)
            for u, d in trigram_candidates(index, key, budget, hits.bounded)
        ]
    if not spans:
        return
    positions = np.concatenate([np.arange(a, b) for a, b, _ in spans])
    distances = np.repeat([d for _, _, d in spans], [b - a for a, b, _ in spans])
    rows = np.asarray(index.key_row[positions])
    alternate = np.asarray(index.key_rank[positions]) >= index.size  # contract KEY_RANK
    keep = where.mask(index, rows)
    # At each distance own names first: many alternate names are machine transliterations
    # ("Bergn" for Bergen, "Beren" for Belém), whose near misses are mostly noise.
    for distance in range(1, budget + 1):
        for alt in (False, True):
            hits.add(
                rows[keep & (distances == distance) & (alternate == alt)], TIER_FUZZY, distance, alt
            )


def trigram_candidates(
    index: GeocodingIndex, key: str, budget: int, bounded: bool = False
) -> list[tuple[int, int]]:
    """(distinct key id, distance) of keys sharing enough trigrams and within `budget` edits;
    `bounded`: TyposNeeded when that means reading more than BOUNDED_POSTINGS postings."""
    padded = f" {key} "
    grams = np.array(
        sorted({padded[i : i + 3].encode() for i in range(len(padded) - 2)}),
        dtype=f"S{G.TRIGRAM_BYTES}",
    )
    at = np.searchsorted(index.trigrams, grams)
    valid = at < len(index.trigrams)
    valid[valid] = index.trigrams[at[valid]] == grams[valid]
    at = at[valid]
    if not len(at):
        return []
    offsets = index.tri_offsets
    if bounded and int((offsets[at + 1] - offsets[at]).sum()) > BOUNDED_POSTINGS:
        raise TyposNeeded
    postings = np.concatenate([index.postings.read(offsets[i], offsets[i + 1]) for i in at])
    ukeys, counts = np.unique(postings, return_counts=True)
    # Each edit changes at most three trigrams of the padded key.
    enough = counts >= max(1, len(grams) - 3 * budget)
    ukeys, counts = ukeys[enough], counts[enough]
    if len(ukeys) > TRIGRAM_POOL:
        ukeys = ukeys[np.argsort(-counts, kind="stable")[:TRIGRAM_POOL]]
    starts = np.asarray(index.ukey_start[ukeys])
    choices = index.keys_full.take(arrow_indices(starts)).to_pylist()
    matched = process.extract(key, choices, scorer=OSA.distance, score_cutoff=budget, limit=None)
    return [(int(ukeys[i]), int(d)) for _, d, i in matched]
