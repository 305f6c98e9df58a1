"""Name normalisation and search keys (contract.normalise is shared by pipeline and server)."""

from __future__ import annotations

import pytest

from contract import flag_emoji, name_keys, normalise


@pytest.mark.parametrize(
    "raw, key",
    [
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
        ("Par\u200bis", "paris"),  # zero-width space
        ("Pa\u200cris", "paris"),  # zero-width non-joiner
        ("Pa\u200dris", "paris"),  # zero-width joiner
        ("Pa\u2060ris", "paris"),  # word joiner
        ("\ufeffParis", "paris"),  # byte order mark
        ("Wester\u00adwald", "westerwald"),  # soft hyphen
        ("São\u200b Paulo", "sao paulo"),
    ],
)
def test_normalise(raw, key):
    assert normalise(raw) == key


def test_name_keys_add_the_german_transliteration():
    assert name_keys("München") == {"munchen", "muenchen"}
    assert name_keys("Köln") == {"koln", "koeln"}
    assert name_keys("Paris") == {"paris"}
    assert name_keys("...") == set()


@pytest.mark.parametrize(
    "name, keys",
    [
        ("St. Louis", {"st louis", "saint louis"}),
        ("Saint-Louis", {"saint louis", "st louis"}),
        ("Sault Ste. Marie", {"sault ste marie", "sault sainte marie"}),
        ("Sainte-Foy", {"sainte foy", "ste foy"}),
        ("Mt Pleasant", {"mt pleasant", "mount pleasant"}),
        ("Fort Worth", {"fort worth", "ft worth"}),
        ("Bury St Edmunds", {"bury st edmunds", "bury saint edmunds"}),
        # Two such words: every combination.
        ("St. Mary's Mount", {"st marys mount", "saint marys mount"}),
        (
            "Mount St. Helens Park",
            {
                "mount st helens park",
                "mt st helens park",
                "mount saint helens park",
                "mt saint helens park",
            },
        ),
        # Sankt is also written St. (St. Pölten); St. is not read as Sankt.
        ("Sankt Pölten", {"sankt polten", "sankt poelten", "st polten", "st poelten"}),
        # The last word is left alone: Main St is a street, Rocky Mount a mount.
        ("Main St", {"main st"}),
        ("Rocky Mount", {"rocky mount"}),
        ("Saint", {"saint"}),
        # Words that merely start so are not abbreviations.
        ("Stuttgart", {"stuttgart"}),
        ("Fortaleza", {"fortaleza"}),
    ],
)
def test_name_keys_spell_abbreviated_words_both_ways(name, keys):
    assert name_keys(name) == keys


@pytest.mark.parametrize(
    "name, keys",
    [
        ("Côte d'Ivoire", {"cote divoire", "cote d ivoire"}),
        ("L’Aquila", {"laquila", "l aquila"}),
        ("Villeneuve-d'Ascq", {"villeneuve dascq", "villeneuve d ascq"}),
        ("St. John's", {"st johns", "saint johns"}),  # a possessive, not an elision
        ("Sant'Agata de' Goti", {"santagata de goti", "sant agata de goti"}),
        ("N’Djamena", {"ndjamena", "n djamena"}),
        ("O'Fallon", {"ofallon", "o fallon"}),
        ("Bol'shaya Rechka", {"bolshaya rechka"}),  # a transliteration's soft sign
        # The Hawaiian ʻokina is a letter: no word break there.
        ("Hawaiʻi", {"hawaii"}),
    ],
)
def test_name_keys_also_read_an_apostrophe_as_a_space(name, keys):
    assert name_keys(name) == keys


@pytest.mark.parametrize("code, flag", [("CH", "🇨🇭"), ("na", "🇳🇦"), ("XK", "🇽🇰")])
def test_flag_emoji(code, flag):
    assert flag_emoji(code) == flag
