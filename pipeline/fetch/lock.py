"""One fetch of a source at a time: a lock file the operating system releases with the process."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.fetch.source import FetchError


@contextmanager
def exclusive(path: Path, source: str) -> Iterator[None]:
    """Hold the lock file `path`; another holder is a retry-later (a scheduler's next run can
    start while an earlier fetch still waits on its upstream)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchError(
                f"another fetch of {source} is running (it holds {path})", retry_later=True
            ) from None
        yield
