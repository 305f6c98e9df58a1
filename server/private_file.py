"""Writing files only this user may read (signing secrets, API key hashes)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_private(path: Path, text: str, replace: bool = True) -> None:
    """Write `text` to a fresh private temporary file (mkstemp: unpredictable name, O_EXCL,
    mode 0600) beside `path`, then move it into place: os.replace, or os.link when `replace`
    is False so that the first of several concurrent creators wins. A predictable temporary
    name could be a planted symlink that the write would follow."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)        # fails if another process created it first
        except FileExistsError:
            pass
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
