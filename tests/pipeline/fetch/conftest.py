"""Fixtures for the fetch tests: a stand-in upstream server and a quick downloader config."""

from __future__ import annotations

import pytest

from pipeline.fetch.http import HttpConfig
from tests.support.upstreams.base import StandIn

# Retries within milliseconds (Retry-After still honoured as sent), short timeouts, no bars.
QUICK = HttpConfig(
    backoff_base_s=0.01,
    backoff_cap_s=0.05,
    read_timeout_s=2.0,
    connect_timeout_s=2.0,
    attempts=4,
    progress=False,
)


@pytest.fixture
def stand_in():
    """A fresh stand-in server on 127.0.0.1:<ephemeral>."""
    with StandIn() as server:
        yield server


@pytest.fixture(autouse=True)
def operator_contact(monkeypatch):
    """Requests name a contact, as an operator's would."""
    monkeypatch.setenv("WEATHERAPI_OPERATOR_CONTACT", "ops@example.org")
