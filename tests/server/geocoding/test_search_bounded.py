"""Searches answered on the event loop (bounded) give the same places as in a thread; a long
typo pass is sent to a thread and still answers."""

from __future__ import annotations

import urllib.parse

import pytest

import contract
from bench.geocoding import SEARCH_MIX
from server.geocoding import search as search_module
from server.geocoding.handlers import parse_lookup
from server.geocoding.index import GeocodingIndex
from server.geocoding.search import TyposNeeded, search
from tests.support.procs import get

# Typos whose trigram pass reads more than BOUNDED_POSTINGS postings on the default build.
LONG_TYPOS = [("Santa Cruz de la Sierar", "Santa Cruz de la Sierra")]


@pytest.fixture(scope="module")
def index(default_build):
    return GeocodingIndex(contract.current_version_dir(default_build))


def _search(index, params: dict, **kwargs) -> list[int]:
    query = parse_lookup(params)
    return search(
        index,
        query.text,
        field_all=query.field_all,
        country=query.country,
        limit=query.limit,
        **kwargs,
    )


def test_a_bounded_search_finds_what_an_unbounded_one_does(index):
    inline = 0
    for _, params in SEARCH_MIX:
        whole = _search(index, params)
        try:
            assert _search(index, params, bounded=True) == whole, params
            inline += 1
        except TyposNeeded:
            pass
    # The usual queries, typos included, are answered bounded (on the event loop).
    assert inline >= 0.9 * len(SEARCH_MIX)


@pytest.mark.parametrize(("typo", "name"), LONG_TYPOS)
def test_a_long_typo_pass_is_left_to_a_thread(index, typo, name):
    with pytest.raises(TyposNeeded):
        _search(index, {"q": typo}, bounded=True)
    assert index.name[_search(index, {"q": typo})[0]].as_py() == name


def test_every_typo_pass_is_left_to_a_thread_below_the_bound(index, monkeypatch):
    monkeypatch.setattr(search_module, "BOUNDED_POSTINGS", 0)
    with pytest.raises(TyposNeeded):
        _search(index, {"q": "Amsterdma"}, bounded=True)


@pytest.mark.parametrize(("typo", "name"), [*LONG_TYPOS, ("Zurihc", "Zürich")])
def test_typos_answer_over_http_either_way(server, typo, name):
    reply = get(f"{server.url}/geocoding/lookup?{urllib.parse.urlencode({'q': typo})}")
    assert reply.status == 200
    assert reply.json()["results"][0]["name"] == name
