"""The reader overlays the held daily updates on the real dumps (geonames.py, geonames_updates):
fetched from the GeoNames stand-in, read by geonames.read as a build reads them."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil

import pytest

from pipeline.fetch.http import HttpConfig
from pipeline.fetch.source import FetchOptions
from pipeline.geocoding.sources import geonames
from pipeline.geocoding.sources import geonames_updates as updates
from pipeline.geocoding.sources.geonames_fetch import GeoNamesConfig, GeoNamesSource
from tests.support.procs import SHARED_GEONAMES
from tests.support.upstreams.base import StandIn
from tests.support.upstreams.geonames import GeoNamesDumps

pytestmark = pytest.mark.skipif(
    not (SHARED_GEONAMES / "cities15000.zip").is_file(),
    reason=f"real GeoNames dumps not present: {SHARED_GEONAMES}",
)

TODAY = dt.date(2026, 11, 29)
DAY = dt.timedelta(days=1)
ZURICH, SITTEN, WETZIKON, UTQIAGVIK = "2657896", "2658576", "2658010", "5880054"
CONFIG = GeoNamesConfig(dump="cities15000", http=HttpConfig(progress=False))


@pytest.fixture(scope="module")
def held(module_tmp):
    """The stand-in's dumps with three days of updates, fetched, plus the dumps as they are
    after those days (written anew by the stand-in), fetched into another folder."""
    root = module_tmp("updates")
    with StandIn() as server:
        geo = GeoNamesDumps(server, written=TODAY - 2 * DAY)
        zurich_names = sorted(a for a, f in geo.alternate.items() if f[1] == ZURICH)
        geo.add_day(TODAY - 3 * DAY)
        geo.add_day(
            TODAY - 2 * DAY,
            modified=[geo.row(ZURICH, latitude="47.41", longitude="8.6")],
            names_deleted=[zurich_names[0]],
            names_modified=[
                [zurich_names[1], ZURICH, "de", "Zürich an der Limmat", "1", "", "", "", "", ""]
            ],
        )
        # Renamed, then deleted the same day (the delete wins); a place the dump does not hold
        geo.add_day(
            TODAY - DAY,
            modified=[
                geo.row(SITTEN, name="Sion", asciiname="Sion"),
                geo.row(WETZIKON, population="1"),
                [UTQIAGVIK] + geo.row(ZURICH)[1:],
            ],
            deleted=[WETZIKON],
        )
        fetch(geo, root / "updated")
        geo.renew(written=TODAY)
        fetch(geo, root / "renewed")
    return root, {"zurich_names": zurich_names}


def fetch(geo: GeoNamesDumps, datasets) -> None:
    source = GeoNamesSource(
        CONFIG, clock=lambda: dt.datetime.combine(TODAY, dt.time(6), dt.timezone.utc)
    )
    asyncio.run(source.fetch(FetchOptions(datasets=datasets, base_url=geo.url)))


def read(datasets) -> tuple[dict, dict, geonames.Gazetteer]:
    """Places by id, names by id, and the gazetteer."""
    gazetteer = geonames.read(datasets)
    places = {r["id"]: r for r in gazetteer.places.to_pylist()}
    names: dict[str, list] = {}
    for row in gazetteer.names.to_pylist():
        names.setdefault(row["id"], []).append((row["language"], row["name"]))
    return places, names, gazetteer


def test_modified_rows_replace_and_deleted_ids_drop(held):
    places, _, gazetteer = read(held[0] / "updated")
    assert (places[ZURICH]["lat"], places[ZURICH]["lon"]) == (47.41, 8.6)
    assert places[SITTEN]["name"] == "Sion" and places[SITTEN]["admin1_name"] == "Valais"
    assert WETZIKON not in places
    assert gazetteer.places.num_rows == 32_847 - 1
    assert "updates of 6 day file pair(s) applied" in gazetteer.notes
    assert sum("updates/" in str(p) for p in gazetteer.inputs) == 12


def test_a_cities_dump_gets_no_places_it_does_not_hold(held):
    places, _, _ = read(held[0] / "updated")
    assert UTQIAGVIK not in places  # modified, but not a cities15000 row


def test_alternate_names_are_overlaid_by_their_own_ids(held):
    root, facts = held
    deleted, modified = facts["zurich_names"][:2]
    _, names, _ = read(root / "updated")
    assert ("de", "Zürich an der Limmat") in names[ZURICH]
    assert (None, _name_of(root / "updated", modified)) not in names[ZURICH]
    assert (None, _name_of(root / "updated", deleted)) not in names[ZURICH]
    assert _name_of(root / "renewed", deleted) is None


def test_the_updated_dumps_read_as_the_renewed_dumps_do(held):
    """Dumps plus their days give the places that GeoNames' next dumps hold."""
    updated, _, _ = read(held[0] / "updated")
    renewed, _, _ = read(held[0] / "renewed")
    assert updated == renewed


def test_days_before_the_dump_are_ignored(held, tmp_path):
    datasets = tmp_path / "datasets"
    shutil.copytree(held[0] / "renewed", datasets)
    folder = datasets / "geonames"
    stale = TODAY - 5 * DAY
    (folder / "updates" / stale.isoformat()).mkdir(parents=True)
    (folder / "updates" / stale.isoformat() / f"modifications-{stale}.txt").write_text("")
    (folder / "updates" / stale.isoformat() / f"deletes-{stale}.txt").write_text(
        f"{ZURICH}\tZürich\tstale\n"
    )
    places, _, _ = read(datasets)
    assert ZURICH in places
    assert updates.first_day(folder / "cities15000.zip") == TODAY - DAY


def _name_of(datasets, alternatenameid: str) -> str | None:
    """The name an alternatenameid has in the held alternateNamesV2.zip (None: not there)."""
    import zipfile

    with zipfile.ZipFile(datasets / "geonames" / "alternateNamesV2.zip") as archive:
        for line in archive.read("alternateNamesV2.txt").decode().splitlines():
            fields = line.split("\t")
            if fields[0] == alternatenameid:
                return fields[3]
    return None
