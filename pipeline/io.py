"""Deterministic artifact writers and input checksums."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 65_536


class InputError(Exception):
    """A raw input is missing, unreadable or malformed; names the file and the problem."""

    def __init__(self, path: Path | str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


def write_parquet(table: pa.Table, path: Path) -> int:
    """Write a Parquet file whose bytes depend only on the table; returns the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table.replace_schema_metadata(None), path,
        row_group_size=ROW_GROUP_ROWS, compression="zstd", compression_level=3,
        use_dictionary=True, write_statistics=True,
    )
    return table.num_rows


def write_arrow(table: pa.Table, path: Path) -> None:
    """Write an uncompressed Arrow IPC file so the server can memory-map it without copies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    feather.write_feather(table.replace_schema_metadata(None), str(path),
                          compression="uncompressed", chunksize=max(table.num_rows, 1))


def write_npy(array: np.ndarray, path: Path) -> None:
    """Write a .npy file (memory-mappable with numpy.load(mmap_mode='r'))."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def describe_inputs(paths: list[Path], root: Path | None = None) -> list[dict]:
    """Manifest entries (path, bytes, sha256) for input files."""
    entries = []
    for path in sorted(paths):
        name = str(path.relative_to(root)) if root and path.is_relative_to(root) else path.name
        entries.append({"path": name, "bytes": path.stat().st_size, "sha256": sha256_file(path)})
    return entries
