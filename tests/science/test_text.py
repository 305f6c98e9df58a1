"""Name normalisation and search keys (contract.normalise is shared by pipeline and server)."""

from __future__ import annotations

import pytest

from contract import flag_emoji, name_keys, normalise


@pytest.mark.parametrize("raw, key", [
    ("Zürich", "zurich"),
    ("ZÜRICH", "zurich"),
    ("St. John's", "st johns"),
    ("St. John’s", "st johns"),
    ("Saint-Étienne", "saint etienne"),
    ("  São   Paulo ", "sao paulo"),
    ("Straße", "strasse"),
    ("Łódź", "lodz"),
    ("Ørsta", "orsta"),
    ("Æbeltoft", "aebeltoft"),
    ("Reykjavík", "reykjavik"),
    ("Frankfurt (Oder)", "frankfurt oder"),
    ("Москва", "москва"),
    ("東京", "東京"),
    ("!!!", ""),
])
def test_normalise(raw, key):
    assert normalise(raw) == key


def test_name_keys_add_the_german_transliteration():
    assert name_keys("München") == {"munchen", "muenchen"}
    assert name_keys("Köln") == {"koln", "koeln"}
    assert name_keys("Paris") == {"paris"}
    assert name_keys("...") == set()


@pytest.mark.parametrize("code, flag", [("CH", "🇨🇭"), ("na", "🇳🇦"), ("XK", "🇽🇰")])
def test_flag_emoji(code, flag):
    assert flag_emoji(code) == flag
