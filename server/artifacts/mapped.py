"""Open artifact files read-only, without copies: memory maps shared by every worker process,
and pread readers for large files read here and there (ByteFile)."""

from __future__ import annotations

import math
import mmap
import os
from pathlib import Path

import numpy as np
import pyarrow as pa


def arrow_table(path: Path) -> pa.Table:
    """An uncompressed Arrow IPC file, memory-mapped for random access (see _mapped)."""
    return pa.ipc.open_file(pa.BufferReader(pa.py_buffer(_mapped(path)))).read_all()


def column(table: pa.Table, name: str) -> pa.Array:
    """One column as a single array (zero-copy when the file has one chunk)."""
    col = table.column(name)
    if col.num_chunks == 0:  # an empty table; combine_chunks and pa.array would import pandas
        return pa.nulls(0, col.type)
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


_NUMPY_TYPES = {
    "double": "f8",
    "float": "f4",
    "int64": "i8",
    "int32": "i4",
    "int16": "i2",
    "int8": "i1",
    "uint64": "u8",
    "uint32": "u4",
    "uint16": "u2",
    "uint8": "u1",
}


def arrow_indices(positions: np.ndarray) -> pa.Array:
    """Positions as an int64 Arrow array over the same memory, for Array.take: given NumPy
    indices (or pa.array's conversion) take would import pandas (~50 MiB) on first use."""
    positions = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(positions), [None, pa.py_buffer(positions)])


def numbers(table: pa.Table, name: str) -> np.ndarray:
    """A null-free numeric column as a read-only NumPy view of its buffer. pyarrow's own
    to_numpy would import pandas (0.35 s and ~50 MiB per worker) for nothing."""
    array = column(table, name)
    dtype = np.dtype(_NUMPY_TYPES[str(array.type)])
    if array.null_count:
        raise ValueError(f"column {name} has nulls")
    return np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize
    )


class NullableNumbers:
    """A numeric column that may hold nulls, read in place: NumPy views of its values and of
    its validity bitmap (no copy per worker, and no pandas, which to_numpy would import)."""

    def __init__(self, array: pa.Array):
        dtype = np.dtype(_NUMPY_TYPES[str(array.type)])
        validity, data = array.buffers()[:2]
        self.offset = array.offset
        self.values = np.frombuffer(
            data, dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize
        )
        self.validity = (
            np.frombuffer(validity, dtype=np.uint8)
            if validity is not None and array.null_count
            else None
        )

    def take(self, rows: np.ndarray, fill: int | float = 0) -> np.ndarray:
        """The values at `rows`, `fill` where null."""
        values = self.values[rows]
        if self.validity is None:
            return values
        bits = np.asarray(rows, dtype=np.int64) + self.offset
        valid = (self.validity[bits >> 3] >> (bits & 7)) & 1
        return np.where(valid == 1, values, values.dtype.type(fill))


def npy(path: Path) -> np.ndarray:
    """A .npy file, memory-mapped for random access (see _mapped). A plain ndarray view of the
    map: np.memmap's subclass hooks cost time on every call."""
    shape, dtype, offset = npy_layout(path)
    count = math.prod(shape)
    if count == 0:  # nothing to map
        empty = np.zeros(shape, dtype)
        empty.flags.writeable = False
        return empty
    return np.frombuffer(_mapped(path), dtype, count, offset).reshape(shape)


def _mapped(path: Path) -> mmap.mmap | bytes:
    """A file's bytes, mapped read-only with MADV_RANDOM: a page fault on a file not yet in the
    page cache then reads that page alone, not the device's read-ahead window around it (8 MiB
    on our machines' disks), which would fill the page cache and this process with the rest."""
    with open(path, "rb") as handle:
        if handle.seek(0, 2) == 0:
            return b""
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    mapped.madvise(mmap.MADV_RANDOM)
    return mapped


def bytes_map(path: Path) -> mmap.mmap | bytes:
    """A file's bytes, memory-mapped (b"" for an empty file, which mmap cannot map)."""
    with open(path, "rb") as handle:
        if handle.seek(0, 2) == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class ByteFile:
    """A large file read with pread, slice by slice, instead of mapped: the slices stay in the
    page cache (shared by every process) without counting in this process's resident memory,
    which a mapping of a file read all over would, page by page. Worse, where the page cache
    holds the file in large folios (Linux 6.18 on ext4 for a file just written), each touch maps
    up to 2 MiB, MADV_RANDOM or not."""

    def __init__(self, path: Path, start: int = 0):
        self.start = start
        self.fd = os.open(path, os.O_RDONLY)

    def __del__(self, close=os.close):
        # Bound when defined: at interpreter exit this module's globals (os) may be cleared
        # before the last ByteFile is collected ("NoneType object is not callable").
        fd = getattr(self, "fd", None)
        if fd is not None:
            close(fd)

    def read_bytes(self, lo: int, hi: int) -> bytes:
        """Bytes lo..hi-1 (counted from `start`)."""
        return os.pread(self.fd, hi - lo, self.start + lo) if hi > lo else b""


def npy_layout(path: Path) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and data offset of a C-order .npy file."""
    with open(path, "rb") as handle:
        major, _ = np.lib.format.read_magic(handle)
        read_header = (
            np.lib.format.read_array_header_1_0
            if major == 1
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(handle)
        if fortran:
            raise ValueError(f"{path}: not in C order")
        return tuple(shape), np.dtype(dtype), handle.tell()


class NpyFile(ByteFile):
    """A large 1-D .npy file read with pread, block by block (see ByteFile)."""

    def __init__(self, path: Path):
        shape, self.dtype, start = npy_layout(path)
        if len(shape) != 1:
            raise ValueError(f"{path}: not a 1-D array")
        self.size = int(shape[0])
        super().__init__(path, start)

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Elements lo..hi-1."""
        if hi <= lo:
            return np.zeros(0, self.dtype)
        width = self.dtype.itemsize
        return np.frombuffer(self.read_bytes(lo * width, hi * width), self.dtype)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """Elements at sorted positions (one read spanning them when they are close)."""
        if len(positions) == 0:
            return np.zeros(0, self.dtype)
        lo, hi = int(positions[0]), int(positions[-1]) + 1
        if hi - lo <= 4 * len(positions) + 1024:
            return self.read(lo, hi)[np.asarray(positions) - lo]
        return np.concatenate([self.read(int(p), int(p) + 1) for p in positions])
