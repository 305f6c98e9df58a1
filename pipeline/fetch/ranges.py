"""Byte ranges: merging the wanted ones into few requests, and placing what arrives."""

from __future__ import annotations

from dataclasses import dataclass

# Gaps up to this are fetched and thrown away rather than costing one more request: a request
# costs a round trip (and, on NOMADS, one of about 100 a minute), 256 KiB is about 20 ms at
# 100 Mbit/s.
MERGE_GAP = 256 * 1024


@dataclass(frozen=True)
class Span:
    """One request's bytes [start, stop) of the remote file (stop None: to its end), and the
    parts of it that are wanted, in order; the gaps between them are skipped when written."""

    start: int
    stop: int | None
    wanted: tuple[tuple[int, int | None], ...]

    @property
    def wanted_bytes(self) -> int | None:
        """Bytes this span puts in the output file (None when it runs to an unknown end)."""
        if any(stop is None for _, stop in self.wanted):
            return None
        return sum(stop - start for start, stop in self.wanted)

    def header(self, offset: int) -> str:
        """The Range header asking for this span from `offset` on (one range: mirrors refuse
        several in one request)."""
        return f"bytes={offset}-" + ("" if self.stop is None else str(self.stop - 1))


def merge(ranges: list[tuple[int, int | None]], gap: int = MERGE_GAP) -> list[Span]:
    """Spans covering `ranges` ((start, stop) pairs, stop exclusive, None = to the end),
    sorted, with overlapping ones joined and those closer than `gap` fetched in one request."""
    cleaned: list[list[int | None]] = []
    for start, stop in sorted(ranges, key=lambda r: (r[0], _end(r[1]))):
        if start < 0 or (stop is not None and stop <= start):
            raise ValueError(f"bad byte range ({start}, {stop})")
        if cleaned and (cleaned[-1][1] is None or start <= cleaned[-1][1]):
            last = cleaned[-1]  # overlapping or touching: one wanted range
            last[1] = None if stop is None or last[1] is None else max(last[1], stop)
        else:
            cleaned.append([start, stop])
    spans: list[list] = []
    for start, stop in cleaned:
        if spans and spans[-1][1] is not None and start - spans[-1][1] <= gap:
            spans[-1][1] = stop
            spans[-1][2].append((start, stop))
        else:
            spans.append([start, stop, [(start, stop)]])
    return [Span(start, stop, tuple(wanted)) for start, stop, wanted in spans]


def _end(stop: int | None) -> float:
    return float("inf") if stop is None else stop


def wanted_parts(span: Span, first: int, data_len: int) -> list[tuple[int, int]]:
    """Slices [i, j) of a chunk holding remote bytes [first, first + data_len) that belong
    in the output file."""
    out = []
    last = first + data_len
    for start, stop in span.wanted:
        lo, hi = max(start, first), min(_end(stop), last)
        if lo < hi:
            out.append((lo - first, int(hi) - first))
    return out


def parse_content_range(value: str | None) -> tuple[int, int, int | None] | None:
    """(first, last, total) of `bytes first-last/total` (total None for '*'); None when the
    header is missing or not a satisfied byte range."""
    if not value or not value.startswith("bytes "):
        return None
    spec, _, total = value[6:].partition("/")
    first, dash, last = spec.partition("-")
    if not dash or not first.strip().isdigit() or not last.strip().isdigit():
        return None
    size = int(total) if total.strip().isdigit() else None
    return int(first), int(last), size
