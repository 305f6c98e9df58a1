"""Files a source writes itself (not downloaded as they are): whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def replace_if_changed(path: Path, data: bytes) -> bool:
    """Put `data` at `path` through a dot-named temporary file (builds ignore those) and one
    rename, so a build sees the old file or the new one; False when it held `data` already."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.parent / f".{path.name}.part"
    with open(part, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(part, path)
    return True


def remove_stale(folder: Path, keep: set[str], suffix: str) -> list[str]:
    """Delete the files named *suffix in `folder` that are not in `keep`; their names."""
    if not folder.is_dir():
        return []
    gone = [p.name for p in folder.glob(f"*{suffix}") if p.name not in keep]
    for name in gone:
        (folder / name).unlink(missing_ok=True)
    return gone
