"""An S3 endpoint for tests: moto's server on a loopback ephemeral port, one bucket in it."""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import obstore
from obstore.store import S3Store

BUCKET = "builds"


@dataclass(frozen=True)
class Endpoint:
    """A running S3 stand-in: `env` is the AWS_* environment a client needs for it."""

    url: str

    @property
    def env(self) -> dict[str, str]:
        """The usual AWS variables, pointing at this endpoint (dummy credentials)."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "test-key-id",
            "AWS_SECRET_ACCESS_KEY": "test-secret-key",
            "AWS_REGION": "us-east-1",
        }

    def store(self, prefix: str) -> S3Store:
        """An obstore client of BUCKET/prefix, for a test to read or tamper with objects."""
        return S3Store(
            BUCKET,
            prefix=prefix,
            config={
                "endpoint": self.url,
                "access_key_id": "test-key-id",
                "secret_access_key": "test-secret-key",
                "region": "us-east-1",
            },
            client_options={"allow_http": True},
        )

    def keys(self, prefix: str) -> dict[str, bytes]:
        """Every object under the prefix: {key: bytes}."""
        store = self.store(prefix)
        return {
            meta["path"]: bytes(obstore.get(store, meta["path"]).bytes())
            for batch in obstore.list(store)
            for meta in batch
        }


@contextmanager
def s3_endpoint() -> Iterator[Endpoint]:
    """moto in server mode on 127.0.0.1 (a port of its own), with BUCKET created."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()  # returns once it listens
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{url}/{BUCKET}", method="PUT"), timeout=30)
        yield Endpoint(url)
    finally:
        server.stop()
