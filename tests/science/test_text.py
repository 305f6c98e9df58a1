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
    # Invisible format characters (Unicode Cf) inside a word do not split it.
    ("Par\u200bis", "paris"),         # zero-width space
    ("Pa\u200cris", "paris"),         # zero-width non-joiner
    ("Pa\u200dris", "paris"),         # zero-width joiner
    ("Pa\u2060ris", "paris"),         # word joiner
    ("\ufeffParis", "paris"),         # byte order mark
    ("Wester\u00adwald", "westerwald"),  # soft hyphen
    ("São\u200b Paulo", "sao paulo"),
])
def test_normalise(raw, key):
    assert normalise(raw) == key


def test_name_keys_add_the_german_transliteration():
    assert name_keys("München") == {"munchen", "muenchen"}
    assert name_keys("Köln") == {"koln", "koeln"}
    assert name_keys("Paris") == {"paris"}
    assert name_keys("...") == set()


@pytest.mark.parametrize("name, keys", [
    ("Côte d'Ivoire", {"cote divoire", "cote d ivoire"}),
    ("L’Aquila", {"laquila", "l aquila"}),
    ("Villeneuve-d'Ascq", {"villeneuve dascq", "villeneuve d ascq"}),
    ("St. John's", {"st johns", "st john s"}),
    # The Hawaiian ʻokina is a letter: no word break there.
    ("Hawaiʻi", {"hawaii"}),
])
def test_name_keys_also_read_an_apostrophe_as_a_space(name, keys):
    assert name_keys(name) == keys


@pytest.mark.parametrize("code, flag", [("CH", "🇨🇭"), ("na", "🇳🇦"), ("XK", "🇽🇰")])
def test_flag_emoji(code, flag):
    assert flag_emoji(code) == flag
