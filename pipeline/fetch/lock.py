"""One fetch at a time per source folder: two fetches must not write the same files at once."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Iterator

from pipeline.fetch.source import FetchError


@contextlib.contextmanager
def exclusive(folder: Path, what: str) -> Iterator[None]:
    """Hold FOLDER/.lock (a dot-file: never an input); FetchError, to retry later, when another
    fetch of `what` holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchError(f"another fetch of {what} is writing {folder}",
                             retry_later=True) from None
        yield
