"""What an airport is called besides its full name (pipeline.geocoding.keys.airport_names)."""

from __future__ import annotations

import pytest

from pipeline.geocoding.keys import airport_names


@pytest.mark.parametrize(
    "name, expected",
    [
        ("London Heathrow Airport", ["Heathrow Airport", "Heathrow"]),
        ("Amsterdam Airport Schiphol", ["Schiphol"]),
        ("Chicago O'Hare International Airport", ["O'Hare International Airport", "O'Hare"]),
        ("Flughafen München", ["München"]),
        ("Shanghai Pudong International Airport", ["Pudong International Airport", "Pudong"]),
        ("Zürich Airport", []),  # the city and a generic word: nothing new
        ("Kansas City International Airport", []),  # generic words alone name no airport
        ("Terminal B Airport", []),  # too short to be worth a key
    ],
)
def test_airport_names(name, expected):
    assert airport_names(name) == expected
