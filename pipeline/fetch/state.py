"""Validators of a downloaded file, kept beside it for conditional requests (304 = unchanged).

The sidecar is `.NAME.http-state` (JSON) in the file's folder: a dot-file with a suffix no
build reads. It is written after the file is in place, so a sidecar never describes a file
that is not there; a sidecar for another URL is ignored."""

from __future__ import annotations

import json
import os
from pathlib import Path


class ValidatorState:
    """The ETag and Last-Modified the server gave for one destination file."""

    def __init__(self, dest: Path):
        self.path = dest.parent / f".{dest.name}.http-state"

    def load(self, url: str) -> dict[str, str]:
        """The stored validators for `url` (empty when none or for another URL)."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("url") != url:
            return {}
        return {
            k: v for k, v in data.items() if k in ("ETag", "Last-Modified") and isinstance(v, str)
        }

    def request_headers(self, url: str) -> dict[str, str]:
        """If-None-Match / If-Modified-Since for a revalidation of `url`."""
        stored = self.load(url)
        headers = {}
        if "ETag" in stored:
            headers["If-None-Match"] = stored["ETag"]
        if "Last-Modified" in stored:
            headers["If-Modified-Since"] = stored["Last-Modified"]
        return headers

    def save(self, url: str, validators: dict[str, str]) -> None:
        """Record the validators of the file just put in place (none: forget)."""
        if not validators:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".part")
        tmp.write_text(json.dumps({"url": url, **validators}, sort_keys=True))
        os.replace(tmp, self.path)
