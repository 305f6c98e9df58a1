"""Names an admin1 region is found by (pipeline.geocoding.index.region_names)."""

from __future__ import annotations

import pytest

from pipeline.geocoding.index import region_names


@pytest.mark.parametrize(
    "name, expected",
    [
        ("Waikato Region", ["Waikato Region", "Waikato"]),
        ("Moscow Oblast", ["Moscow Oblast", "Moscow"]),
        ("Valle del Cauca Department", ["Valle del Cauca Department", "Valle del Cauca"]),
        ("State of Berlin", ["State of Berlin", "Berlin"]),
        ("Bavaria", ["Bavaria"]),
        ("Region", ["Region"]),
        ("North Province", ["North Province"]),  # a direction alone names no region
        ("North-West Province", ["North-West Province"]),
        ("Capital Region", ["Capital Region"]),
        ("Bay of Plenty", ["Bay of Plenty"]),
    ],
)
def test_region_names(name, expected):
    assert region_names(name) == expected
