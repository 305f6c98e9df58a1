"""A GeoNames stand-in: download.geonames.org/export/dump/ on a StandIn server, made from the
real files in ../shared/data/geonames (see PROVENANCE.md there).

    with StandIn() as server:
        geo = GeoNamesDumps(server, written=day)      # the dumps as GeoNames wrote them on `day`
        geo.add_day(day, modified=[geo.row(ZURICH, latitude="47.4")], deleted=[WETZIKON])
        geo.renew(written=later)                      # new dumps (new ETags) holding the changes
        ... fetch with --base-url geo.url ...

The places dump is the real cities15000.txt, zipped anew with the day it was written, as
GeoNames writes its dumps every day (the reader dates a dump by its zip member); the code files
are the real ones. A day's update files are in GeoNames' formats, their rows the real rows as
the test changes them. alternateNamesV2.zip is not among the shared files: its rows are made
from the real places' alternatenames column (alternatenameid = geonameid * 100 + position),
untagged, as GeoNames' untagged names are.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from dataclasses import dataclass, field

from pipeline.geocoding.sources.geonames import PLACE_COLUMNS
from tests.support.procs import SHARED_GEONAMES
from tests.support.upstreams.base import Blob, StandIn

PREFIX = "/export/dump"
PLACES = "cities15000"
CODE_FILES = ("countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt")
COLUMNS = PLACE_COLUMNS  # allCountries' columns, as the reader names them


def read_rows() -> dict[str, list[str]]:
    """The real places by geonameid, each its 19 fields, in file order."""
    with zipfile.ZipFile(SHARED_GEONAMES / f"{PLACES}.zip") as archive:
        text = archive.read(f"{PLACES}.txt").decode("utf-8")
    return {fields[0]: fields for fields in (line.split("\t") for line in text.splitlines())}


def zipped(member: str, text: str, written: dt.date) -> bytes:
    """A zip archive of one member, dated as GeoNames dates its dumps (early that day)."""
    info = zipfile.ZipInfo(member, date_time=(written.year, written.month, written.day, 2, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(info, text)
    return out.getvalue()


def at(day: dt.date, hour: int = 2) -> float:
    """Unix time of `hour` UTC on `day` (a file's Last-Modified)."""
    return dt.datetime(day.year, day.month, day.day, hour, tzinfo=dt.timezone.utc).timestamp()


@dataclass
class GeoNamesDumps:
    """The dump directory served by `server` under PREFIX, with its dumps written on `written`."""

    server: StandIn
    written: dt.date
    names: bool = True  # serve alternateNamesV2.zip and its daily files
    rows: dict[str, list[str]] = field(default_factory=read_rows)
    alternate: dict[str, list[str]] = field(default_factory=dict)  # alternatenameid -> fields

    def __post_init__(self) -> None:
        for gid, fields in self.rows.items():
            for i, name in enumerate(n for n in fields[3].split(",") if n):
                self.alternate[str(int(gid) * 100 + i)] = [
                    str(int(gid) * 100 + i),
                    gid,
                    "",
                    name,
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                ]
        for name in CODE_FILES:
            self.server.put(
                self.path(name), Blob.of((SHARED_GEONAMES / name).read_bytes(), at(self.written, 1))
            )
        self.renew(self.written)

    @property
    def url(self) -> str:
        return self.server.url + PREFIX

    def path(self, name: str) -> str:
        return f"{PREFIX}/{name}"

    def renew(self, written: dt.date) -> None:
        """Write the dumps anew on `written`, holding every change so far (new ETags)."""
        self.written = written
        places = "".join("\t".join(fields) + "\n" for fields in self.rows.values())
        self.server.put(
            self.path(f"{PLACES}.zip"),
            Blob.of(zipped(f"{PLACES}.txt", places, written), at(written)),
        )
        if self.names:
            names = "".join("\t".join(f) + "\n" for f in self.alternate.values())
            self.server.put(
                self.path("alternateNamesV2.zip"),
                Blob.of(zipped("alternateNamesV2.txt", names, written), at(written)),
            )

    def row(self, gid: str, **changes: str) -> list[str]:
        """The current row of a place with some fields changed (by column name)."""
        fields = list(self.rows[gid])
        for name, value in changes.items():
            fields[COLUMNS.index(name)] = value
        return fields

    def add_day(
        self,
        day: dt.date,
        modified: list[list[str]] = (),
        deleted: list[str] = (),
        names_modified: list[list[str]] = (),
        names_deleted: list[str] = (),
    ) -> None:
        """Publish a day's update files (served from the next day on) and apply them to the
        dumps (a place the cities dump does not hold stays out of it, as in GeoNames')."""
        for fields in modified:
            if fields[0] in self.rows:
                self.rows[fields[0]] = fields
        gone = [(gid, self.rows.pop(gid)[1]) for gid in deleted]
        for fields in names_modified:
            self.alternate[fields[0]] = fields
        names_gone = [(aid, self.alternate.pop(aid)) for aid in names_deleted]
        files = {
            "modifications": "".join("\t".join(f) + "\n" for f in modified),
            "deletes": "".join(f"{gid}\t{name}\tduplicate\n" for gid, name in gone),
        }
        if self.names:
            files["alternateNamesModifications"] = "".join(
                "\t".join(f) + "\n" for f in names_modified
            )
            files["alternateNamesDeletes"] = "".join(
                f"{aid}\t{f[1]}\t{f[3]}\twrong language\n" for aid, f in names_gone
            )
        for kind, text in files.items():
            self.server.put(
                self.path(f"{kind}-{day.isoformat()}.txt"),
                Blob.of(text.encode("utf-8"), at(day + dt.timedelta(days=1), 0)),
            )

    def drop_day(self, day: dt.date) -> None:
        """GeoNames no longer serves the day's files (it keeps recent days only)."""
        for kind in (
            "modifications",
            "deletes",
            "alternateNamesModifications",
            "alternateNamesDeletes",
        ):
            self.server.remove(self.path(f"{kind}-{day.isoformat()}.txt"))

    def day_paths(self, day: dt.date) -> list[str]:
        """The served paths of a day's files."""
        kinds = ["modifications", "deletes"] + (
            ["alternateNamesModifications", "alternateNamesDeletes"] if self.names else []
        )
        return [self.path(f"{kind}-{day.isoformat()}.txt") for kind in kinds]
