"""The User-Agent every request sends: the service, its version and the operator's contact."""

from __future__ import annotations

import functools
import logging
import os
from importlib import metadata

CONTACT_ENV = "WEATHERAPI_OPERATOR_CONTACT"
PRODUCT = "weather-geodata-api"

log = logging.getLogger("pipeline.fetch")


@functools.cache
def _warn_once() -> None:
    # Public data servers (NOMADS, ECMWF) ask heavy clients to be reachable before blocking them.
    log.warning(
        "%s is not set: upstreams cannot reach this server's operator (set it to an "
        "email address or URL)",
        CONTACT_ENV,
    )


def version() -> str:
    """The installed package's version ("dev" when run from a tree that is not installed)."""
    try:
        return metadata.version(PRODUCT)
    except metadata.PackageNotFoundError:
        return "dev"


def user_agent() -> str:
    """E.g. 'weather-geodata-api/0.1.0 (+ops@example.org)'; warns once when no contact is set."""
    contact = os.environ.get(CONTACT_ENV, "").strip()
    if not contact:
        _warn_once()
        return f"{PRODUCT}/{version()}"
    # A header value must stay on one line: a contact cannot inject other headers.
    contact = " ".join(contact.split())
    return f"{PRODUCT}/{version()} (+{contact})"
