"""Search helpers over the default build's index, where a case needs a particular key."""

from __future__ import annotations

import contract
from server.geocoding.index import GeocodingIndex
from server.geocoding.search import Filter, begins_own_name

DIRE_DAWA_AIRPORT = "aba tenna dejazmach yilma international airport"


def test_first_words_longer_than_a_stored_key_are_compared_in_full(default_build):
    # Keys are stored in 32 bytes: words that long must not pass for the start of a name
    # whose first 32 bytes they share.
    index = GeocodingIndex(contract.current_version_dir(default_build))
    assert begins_own_name(index, "aba tenna dejazmach", Filter())
    assert begins_own_name(index, DIRE_DAWA_AIRPORT[: -len(" airport")], Filter())
    assert not begins_own_name(index, DIRE_DAWA_AIRPORT[: -len(" airport")] + "x", Filter())
    assert not begins_own_name(index, DIRE_DAWA_AIRPORT, Filter())
