"""GeoNames' daily update files held beside the dumps: where they go and which ones apply.

`python -m pipeline fetch geonames` keeps in DIR/geonames/ the dumps as downloaded and, per day
since they were written, GeoNames' four update files in a folder of that day:

    updates/YYYY-MM-DD/modifications-YYYY-MM-DD.txt               geoname rows (19 columns)
                       deletes-YYYY-MM-DD.txt                     geonameid, name, comment
                       alternateNamesModifications-YYYY-MM-DD.txt alternateNamesV2 rows (10)
                       alternateNamesDeletes-YYYY-MM-DD.txt       alternateNameId, geonameid,
                                                                  name, comment

A day's folder appears whole (written under a dot-name, then renamed), so a build sees a day
entirely or not at all. The reader (geonames.py) overlays the days on the dump as it streams
it: a modified row replaces the dump's row of its id (or is added), a deleted id drops, later
days win and within a day a delete does. Kept as files, not merged into the dump: the dump is
400 MB of zip that a merge would rewrite every day, the updates of a month are a few MB.

Which days apply: a dump holds every change made before it was written, the date of its zip
member. GeoNames names a day's files by the day of the changes (its local day, not UTC), so
the days from the one before the dump's date on apply: one day too many at worst, and a day
applied again only repeats what the dump holds (rows as they were at the end of that day,
then replaced by the later days' rows).
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from pathlib import Path

UPDATES = "updates"
MODIFICATIONS = "modifications"
DELETES = "deletes"
NAME_MODIFICATIONS = "alternateNamesModifications"
NAME_DELETES = "alternateNamesDeletes"
PLACE_KINDS = (MODIFICATIONS, DELETES)
NAME_KINDS = (NAME_MODIFICATIONS, NAME_DELETES)
# Columns per line: modifications have exactly theirs; a delete's comment may be missing.
COLUMNS = {
    MODIFICATIONS: (19, 19),
    DELETES: (2, 3),
    NAME_MODIFICATIONS: (10, 10),
    NAME_DELETES: (2, 4),
}
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def file_name(kind: str, day: dt.date) -> str:
    """The name GeoNames gives a day's file of `kind` (e.g. modifications-2026-11-28.txt)."""
    return f"{kind}-{day.isoformat()}.txt"


def day_folder(folder: Path, day: dt.date) -> Path:
    """Where a day's files are held (folder is DIR/geonames)."""
    return folder / UPDATES / day.isoformat()


def held_days(folder: Path) -> list[dt.date]:
    """The days whose files are held whole, oldest first."""
    root = folder / UPDATES
    if not root.is_dir():
        return []
    return sorted(
        dt.date.fromisoformat(p.name) for p in root.iterdir() if p.is_dir() and _DAY.match(p.name)
    )


def written_on(dump: Path) -> dt.date:
    """The day a dump was written: its zip member's date (a .txt file's modification date)."""
    if dump.suffix == ".zip":
        try:
            with zipfile.ZipFile(dump) as archive:
                member = archive.getinfo(dump.stem + ".txt")
        except (KeyError, OSError, zipfile.BadZipFile):
            pass  # the reader names what is wrong with it
        else:
            return dt.date(*member.date_time[:3])
    return dt.datetime.fromtimestamp(dump.stat().st_mtime, dt.timezone.utc).date()


def first_day(dump: Path) -> dt.date:
    """The first day whose files apply to `dump` (see the module docstring)."""
    return written_on(dump) - dt.timedelta(days=1)


def applicable(folder: Path, dump: Path, kinds: tuple[str, str]) -> list[tuple[Path, Path]]:
    """(modifications, deletes) files of `kinds` for `dump`, per held day in order; days held
    without them (fetched while the dump was not held) are skipped."""
    start = first_day(dump)
    found = []
    for day in held_days(folder):
        paths = tuple(day_folder(folder, day) / file_name(kind, day) for kind in kinds)
        if day >= start and all(p.is_file() for p in paths):
            found.append(paths)
    return found
