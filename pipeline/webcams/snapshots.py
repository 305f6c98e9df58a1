"""Snapshot artifacts: memory-mappable time arrays, daily noon picks, the Parquet table, images.

The snapshots are written block by block of webcams, so memory stays bounded at the default
scale (about 85 million snapshots): each array is a .npy file filled through a memory map or
streamed, and the Parquet table is written one block of row groups at a time.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from contract import Webcams as W
from pipeline.common.io import NpyWriter, naming, write_arrow, write_npy
from pipeline.webcams.localtime import local_seconds, noon_picks, offset_steps
from pipeline.webcams.sources.normalised import FILE, SnapshotSeries

log = logging.getLogger("pipeline.webcams")
BLOCK_ROWS = 1024  # webcams per block (about 4.4 million snapshots)
PARQUET_ROW_GROUP = 1 << 20
SNAPSHOT_SCHEMA = pa.schema(
    [
        ("public_id", pa.dictionary(pa.int32(), pa.string())),
        ("captured_at", pa.timestamp("s", tz="UTC")),
        ("image", pa.dictionary(pa.int32(), pa.string())),
    ]
)


@dataclass(frozen=True)
class Written:
    """What write() produced."""

    snapshots: int
    files: list[str]
    image_files: int
    images_sha256: str | None  # over the copied image files, in id order


def write(
    version: Path, series: SnapshotSeries, public_ids: pl.Series, timezones: pl.Series
) -> Written:
    """Write every snapshot artifact for the served webcams (row order of `public_ids`)."""
    n = len(public_ids)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(series.counts, out=offsets[1:])
    total = int(offsets[-1])
    write_npy(offsets, version / W.SNAP_OFFSETS)
    times_out = _open(version / W.SNAP_TIMES, np.uint32, total)
    images_out = None if series.rendered else _open(version / W.SNAP_IMAGES, np.int32, total)
    last = np.zeros(n, dtype=np.uint32)
    id_dictionary = pa.array(public_ids.to_list(), pa.string())
    refs = pa.array(series.images.sort("image_id")["ref"].to_list(), pa.string())
    with (
        _Daily(version, series.span, timezones.to_list()) as daily,
        naming(version / W.SNAPSHOTS),
        pq.ParquetWriter(
            version / W.SNAPSHOTS,
            SNAPSHOT_SCHEMA,
            compression="zstd",
            compression_level=3,
            use_dictionary=["public_id", "image"],
            write_statistics=True,
            column_encoding={"captured_at": "DELTA_BINARY_PACKED"},
        ) as parquet,
    ):
        for a in range(0, n, BLOCK_ROWS):
            b = min(n, a + BLOCK_ROWS)
            times, image_ids = series.block(a, b)
            lo, hi = int(offsets[a]), int(offsets[b])
            if len(times) != hi - lo:
                raise ValueError("snapshot source returned a block of the wrong length")
            times_out[lo:hi] = times
            if images_out is not None:
                images_out[lo:hi] = image_ids
            ends = offsets[a + 1 : b + 1] - lo
            has = series.counts[a:b] > 0
            last[a:b][has] = times[ends[has] - 1]
            daily.add(a, times, offsets[a : b + 1] - lo, lo)
            parquet.write_table(
                _table(a, b, times, image_ids, series.counts, id_dictionary, refs),
                row_group_size=PARQUET_ROW_GROUP,
            )
    for out in (times_out, images_out):
        if isinstance(out, np.memmap):  # none at all is a plain (empty) array, written
            out.flush()
    del images_out
    write_npy(np.array(times_out[:: W.SNAP_STRIDE]), version / W.SNAP_SPARSE)
    del times_out
    write_npy(last, version / W.LAST_TIME)
    image_files, digest, image_paths = copy_images(version, series)
    files = [
        W.SNAP_OFFSETS,
        W.SNAP_TIMES,
        W.SNAP_SPARSE,
        W.LAST_TIME,
        W.DAILY_OFFSETS,
        W.DAILY_DAY,
        W.DAILY_INDEX,
        W.DAILY_TIME,
        W.IMAGES_ARROW,
        *image_paths,
    ]
    if not series.rendered:
        files.append(W.SNAP_IMAGES)
    log.info("%d snapshots, %d image files", total, image_files)
    return Written(total, files, image_files, digest)


def _open(path: Path, dtype, length: int) -> np.ndarray:
    """A new .npy file of `length` elements, filled through a memory map."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if length == 0:
        write_npy(np.zeros(0, dtype=dtype), path)
        return np.zeros(0, dtype=dtype)
    with naming(path):
        array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(length,))
        with open(path, "r+b") as handle:
            _allocate(handle.fileno())
    return array


def _allocate(fd: int) -> None:
    """Give the (sparse) file its blocks now: on a full disk, filling the map would kill the
    build with a SIGBUS, where this raises an OSError. Where the file system or platform
    cannot (macOS, some NFS and ZFS), the file stays sparse, as it always was."""
    allocate = getattr(os, "posix_fallocate", None)
    if allocate is None:
        return
    try:
        allocate(fd, 0, os.fstat(fd).st_size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise


def _table(
    a: int,
    b: int,
    times: np.ndarray,
    image_ids: np.ndarray | None,
    counts: np.ndarray,
    ids: pa.Array,
    refs: pa.Array,
) -> pa.Table:
    """One block of the user-facing snapshot table."""
    rows = np.repeat(np.arange(a, b, dtype=np.int32), counts[a:b])
    image = (
        pa.DictionaryArray.from_arrays(pa.array(image_ids, pa.int32()), refs)
        if image_ids is not None
        else pa.DictionaryArray.from_arrays(pa.nulls(len(times), pa.int32()), refs)
    )
    return pa.table(
        {
            "public_id": pa.DictionaryArray.from_arrays(pa.array(rows, pa.int32()), ids),
            "captured_at": pa.array(times.astype(np.int64), pa.timestamp("s", tz="UTC")),
            "image": image,
        },
        schema=SNAPSHOT_SCHEMA,
    )


class _Daily:
    """Streams each webcam's per-local-day noon picks into DAILY_* files."""

    def __init__(self, version: Path, span: tuple[int, int], timezones: list[str]):
        self.span, self.timezones = span, timezones
        self.offsets = np.zeros(len(timezones) + 1, dtype=np.int64)
        with ExitStack() as opened:  # one that fails to open lets go of those before it
            self.days = opened.enter_context(NpyWriter(version / W.DAILY_DAY, np.int32))
            self.index = opened.enter_context(NpyWriter(version / W.DAILY_INDEX, np.int64))
            self.times = opened.enter_context(NpyWriter(version / W.DAILY_TIME, np.uint32))
            opened.pop_all()
        self.path = version / W.DAILY_OFFSETS

    def add(self, a: int, times: np.ndarray, starts: np.ndarray, base: int) -> None:
        """Rows a.. with their times (concatenated; row i's from starts[i] to starts[i + 1])."""
        local = np.empty(len(times), dtype=np.int64)
        for i in range(len(starts) - 1):
            lo, hi = starts[i], starts[i + 1]
            if hi > lo:
                steps = offset_steps(self.timezones[a + i], *self.span)
                local[lo:hi] = local_seconds(times[lo:hi], steps)
        group = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
        picks, days = noon_picks(local, group)
        per_row = np.bincount(group[picks], minlength=len(starts) - 1)
        self.offsets[a + 1 : a + len(starts)] = per_row
        self.days.write(days.astype(np.int32))
        self.index.write(picks + base)
        self.times.write(times[picks])

    def __enter__(self) -> _Daily:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        """Finish the files (offsets become cumulative); after a failure only let go of them."""
        if kind is not None:
            for writer in (self.days, self.index, self.times):
                writer.discard()
            return
        with self.days, self.index, self.times:  # each finishes; a failure discards the rest
            pass
        write_npy(np.cumsum(self.offsets), self.path)


def copy_images(version: Path, series: SnapshotSeries) -> tuple[int, str | None, list[str]]:
    """Copy image files into the artifact (named by id, never by the input's name) and write
    the image index; returns (files copied, SHA-256 over them, their artifact paths)."""
    images = series.images.sort("image_id")
    files = [
        f"{W.IMAGES_DIR}/{i:08d}{Path(ref).suffix.lower()}" if kind == FILE else None
        for i, kind, ref in images.select("image_id", "kind", "ref").iter_rows()
    ]
    digest = hashlib.sha256()
    copied = []
    for file, source in zip(files, images["source"].to_list()):
        if file is None:
            continue
        (version / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, version / file)
        digest.update((version / file).read_bytes())
        copied.append(file)
    table = images.select("image_id", "kind", "ref", "media_type").with_columns(
        file=pl.Series(files, dtype=pl.String)
    )
    write_arrow(table.to_arrow(), version / W.IMAGES_ARROW)
    return len(copied), digest.hexdigest() if copied else None, copied
