"""Usual queries find the place a person means first: the sweep in tests/fixtures/search_sweep.tsv
(capitals and large cities by English, local and other names, typos, accents omitted, "city,
country", "city, region", codes), over HTTP against the default build."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.support.procs import ROOT, get

SWEEP = ROOT / "tests" / "fixtures" / "search_sweep.tsv"
LONDON_GB, LONDON_CA = "2643743", "6058560"


def cases() -> list:
    """One case per query line; a known miss is a strict expected failure."""
    found = []
    for line in SWEEP.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        q, place_id, params, _place, *miss = line.split("\t")
        marks = [pytest.mark.xfail(reason=miss[0], strict=True)] if miss else []
        found.append(pytest.param(q, params, place_id, id=f"{q} {params}".strip(), marks=marks))
    return found


def ids(server, q: str, params: str = "") -> list[str]:
    query = urllib.parse.urlencode({"q": q, **dict(urllib.parse.parse_qsl(params))})
    reply = get(f"{server.url}/geocoding/lookup?{query}")
    assert reply.status == 200, reply.body
    return [r["id"] for r in reply.json()["results"]]


@pytest.mark.parametrize("q, params, place_id", cases())
def test_the_place_a_person_means_comes_first(server, q, params, place_id):
    found = ids(server, q, params)
    at = found.index(place_id) + 1 if place_id in found else None
    assert found[:1] == [place_id], f"{place_id} is result {at} of {found}"


def test_a_typo_that_is_also_an_alternate_name_finds_the_namesakes(server):
    # GeoNames lists "Londn" among London's names; the other Londons are one edit away.
    found = ids(server, "londn")
    assert found[0] == LONDON_GB and LONDON_CA in found
