"""Refuse a truncated classic NetCDF file (CDF-1, CDF-2 and CDF-5) before it is opened.

netCDF-C reads the data of a classic file at the offsets its header gives and returns fill
values or zeros past the end of a cut file, so a truncated download would be published as
garbage (-273.15 °C, 0 hPa). The header says where every variable's data lies; the file must
reach the end of the last one. NetCDF-4 (HDF5) files are not classic: HDF5 refuses them itself.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from pipeline.common.io import InputError

_MAGIC = {b"CDF\x01": 1, b"CDF\x02": 2, b"CDF\x05": 5}
_STREAMING = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)  # numrecs not written yet: nothing to check
_DIMENSION, _VARIABLE, _ATTRIBUTE = 10, 11, 12
# nc_type -> bytes per value (1-6 classic, 7-11 CDF-5 only)
_TYPE_SIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}


class _Truncated(Exception):
    """The header runs past the end of the file."""


class _Header:
    """A big-endian cursor over a classic header (counts are 64-bit in CDF-5)."""

    def __init__(self, data, version: int):
        self.data, self.pos = data, 4
        self.count = ">Q" if version == 5 else ">I"
        self.offset = ">I" if version == 1 else ">Q"

    def unpack(self, fmt: str) -> int:
        """The next number in struct format fmt."""
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise _Truncated
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def skip(self, size: int) -> None:
        """Step over size bytes, padded to 4."""
        self.pos += -(-size // 4) * 4
        if self.pos > len(self.data):
            raise _Truncated

    def tagged_list(self, tag: int) -> int:
        """The length of a dimension, attribute or variable list (0 when absent)."""
        found, length = self.unpack(">I"), self.unpack(self.count)
        if found not in (0, tag) or (found == 0 and length != 0):
            raise ValueError(f"list tag {found} where {tag} was expected")
        return length

    def name(self) -> None:
        """Step over a name."""
        self.skip(self.unpack(self.count))

    def attributes(self) -> None:
        """Step over an attribute list."""
        for _ in range(self.tagged_list(_ATTRIBUTE)):
            self.name()
            size = _type_size(self.unpack(">I"))
            self.skip(size * self.unpack(self.count))


def _type_size(nc_type: int) -> int:
    if nc_type not in _TYPE_SIZE:
        raise ValueError(f"unknown data type {nc_type}")
    return _TYPE_SIZE[nc_type]


def expected_size(data, version: int) -> int | None:
    """Bytes a complete file with this header has at least (None: numrecs is streaming)."""
    header = _Header(data, version)
    numrecs = header.unpack(header.count)
    dims = []
    for _ in range(header.tagged_list(_DIMENSION)):
        header.name()
        dims.append(header.unpack(header.count))
    header.attributes()
    ends, records = [], []  # records: (begin, bytes per record) of each record variable
    for _ in range(header.tagged_list(_VARIABLE)):
        header.name()
        ids = [header.unpack(header.count) for _ in range(header.unpack(header.count))]
        header.attributes()
        size = _type_size(header.unpack(">I"))
        header.unpack(header.count)  # vsize: wrong for huge variables
        begin = header.unpack(header.offset)
        if any(i >= len(dims) for i in ids):
            raise ValueError("a variable names a dimension that does not exist")
        shape = [dims[i] for i in ids]
        for length in shape[1:] if ids and dims[ids[0]] == 0 else shape:
            size *= length
        if ids and dims[ids[0]] == 0:
            records.append((begin, size))
        else:
            ends.append(begin + size)
    if records and numrecs in _STREAMING:
        return None
    # Each record holds every record variable, each padded to 4 bytes unless it is the only one.
    record = records[0][1] if len(records) == 1 else sum(-(-s // 4) * 4 for _, s in records)
    ends += [begin + (numrecs - 1) * record + size for begin, size in records if numrecs]
    return max(ends, default=header.pos)


def check_complete(path: Path) -> None:
    """InputError when a classic NetCDF file is shorter than its header says; else nothing."""
    with open(path, "rb") as handle:
        magic = handle.read(4)
        if magic not in _MAGIC:
            return  # NetCDF-4/HDF5 or not NetCDF: the reader's own open judges it
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            has = len(data)
            try:
                expected = expected_size(data, _MAGIC[magic])
            except _Truncated:
                raise InputError(
                    path, f"not a readable NetCDF file (truncated in its header: has {has} bytes)"
                ) from None
            except ValueError as exc:
                raise InputError(path, f"not a readable NetCDF file ({exc})") from None
    if expected is not None and has < expected:
        raise InputError(path, f"truncated: expected {expected} bytes, has {has}")
