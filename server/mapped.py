"""Open artifact files as memory maps shared by every worker process (read-only, no copies)."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pyarrow as pa


def arrow_table(path: Path) -> pa.Table:
    """An uncompressed Arrow IPC file, memory-mapped."""
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def column(table: pa.Table, name: str) -> pa.Array:
    """One column as a single array (zero-copy when the file has one chunk)."""
    col = table.column(name)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def npy(path: Path) -> np.ndarray:
    """A .npy file, memory-mapped. A plain ndarray view of the map: np.memmap's subclass hooks
    cost time on every call."""
    return np.asarray(np.load(path, mmap_mode="r"))


def bytes_map(path: Path) -> mmap.mmap | bytes:
    """A file's bytes, memory-mapped (b"" for an empty file, which mmap cannot map)."""
    with open(path, "rb") as handle:
        if handle.seek(0, 2) == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
