"""Which messages of each GFS file the forecast needs: one table, matched against the .idx.

Until the GRIB2 reader settles its inputs: instantaneous values (analysis at f000, the
forecast hour's value after), and precipitation as the running total from the run's start
(GFS also writes 6-hour buckets and window averages: not taken), as the GRIB2 reader
(model_grib.py) reads them; RH is its fallback for a run without DPT. At f000 nothing
averaged or accumulated exists; such rows are expected to be absent there. The surface height
does not change: it is taken from f000 only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.fetch.inventory import Entry, forecast

INSTANT = "instant"  # 'anl' at f000, 'N hour fcst' at fN
RUNNING_TOTAL = "running total"  # '0-N hour acc fcst' at fN (none at f000)


@dataclass(frozen=True)
class Wanted:
    """One message per file: the wgrib2 variable and level names, and which time variant."""

    variable: str
    level: str
    kind: str = INSTANT
    once: bool = False  # only from f000's file (a constant: the reader needs one)

    def label(self) -> str:
        return f"{self.variable}:{self.level}" + ("" if self.kind == INSTANT else f" {self.kind}")


SELECTION: tuple[Wanted, ...] = (
    Wanted("TMP", "2 m above ground"),
    Wanted("DPT", "2 m above ground"),
    Wanted("RH", "2 m above ground"),
    Wanted("UGRD", "10 m above ground"),
    Wanted("VGRD", "10 m above ground"),
    Wanted("PRMSL", "mean sea level"),
    Wanted("TCDC", "entire atmosphere"),
    Wanted("APCP", "surface", RUNNING_TOTAL),
    Wanted("VIS", "surface"),
    Wanted("GUST", "surface"),
    Wanted("CAPE", "surface"),
    Wanted("CRAIN", "surface"),
    Wanted("CSNOW", "surface"),
    Wanted("CFRZR", "surface"),
    Wanted("CICEP", "surface"),
    Wanted("HGT", "surface", once=True),
)


def matches(wanted: Wanted, entry: Entry, hour: int) -> bool:
    """Whether `entry` is the message `wanted` asks for in the file of forecast hour `hour`."""
    if entry.variable != wanted.variable or entry.level != wanted.level or entry.extra:
        return False  # extra fields: ensemble members, probabilities
    time = forecast(entry.forecast)
    if wanted.kind == INSTANT:
        return (time.kind == "anl" and hour == 0) or (time.kind == "fcst" and time.end_h == hour)
    if wanted.kind == RUNNING_TOTAL:
        return time.kind == "acc" and time.start_h == 0 and time.end_h == hour and hour > 0
    raise ValueError(f"unknown kind {wanted.kind!r}")


def expected(wanted: Wanted, hour: int) -> bool:
    """Whether `wanted` is taken from the file of hour `hour` (no totals at f000; a constant
    field from f000 only)."""
    if wanted.once:
        return hour == 0
    return not (hour == 0 and wanted.kind != INSTANT)


def select(
    entries: list[Entry], hour: int, selection: tuple[Wanted, ...] = SELECTION
) -> tuple[list[Entry], list[Wanted]]:
    """The entries to fetch (the first match of each row, in file order) and the expected
    rows that the inventory lacks."""
    picked: dict[int, Entry] = {}
    missing = []
    for wanted in selection:
        if wanted.once and hour != 0:
            continue
        # GFS writes some messages twice (APCP 0-6 h at f006): the first is enough.
        entry = next((e for e in entries if matches(wanted, e, hour)), None)
        if entry is not None:
            picked.setdefault(entry.start, entry)  # sub-messages share one range
        elif expected(wanted, hour):
            missing.append(wanted)
    return sorted(picked.values(), key=lambda e: e.start), missing
