"""The pipeline's pre-rendered Location JSON says exactly what the server would assemble."""

from __future__ import annotations

import random

import orjson

import contract
from server.geocoding.index import GeocodingIndex


def test_prerendered_json_matches_the_assembled_objects(default_build):
    index = GeocodingIndex(contract.current_version_dir(default_build))
    rows = random.Random(3).sample(range(index.size), 2000) + [0, index.size - 1]
    for row in rows:
        for detail in (False, True):
            rendered = index.location_json(row, detail)
            assert orjson.loads(rendered) == index.location(row, ("en",), detail)
            assert list(orjson.loads(rendered)) == list(index.location(row, ("en",), detail))
