"""Deterministic artifact writers and input checksums."""

from __future__ import annotations

import ctypes
import hashlib
import io
import os
import re
import resource
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
import netCDF4
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 65_536
_FIXED_WIDTH_SLICE = 1_000_000  # rows per slice in fixed_width_bytes (bounds its index arrays)


class InputError(Exception):
    """A raw input is missing, unreadable or malformed; names the file and the problem."""

    def __init__(self, path: Path | str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem

    def __reduce__(self):
        # Pickled by its own arguments: one raised on a Dask worker reaches the client whole.
        return (type(self), (self.path, self.problem))


# What a library raises for a failed write (a full disk, a file size limit) instead of an
# OSError. netCDF4: its RuntimeError, which from HDF5 says only "NetCDF: HDF error". DuckDB: an
# IOException, or an OutOfMemoryException when a spill does not fit on the disk.
NETCDF_WRITE_ERRORS = (RuntimeError,)
DUCKDB_WRITE_ERRORS = (duckdb.IOException, duckdb.OutOfMemoryException)
# Their messages that say a write failed: any other (a misused API, a bug) keeps its traceback.
WRITE_FAILURE = re.compile(
    r"HDF error|No space left|File too large|Disk quota|Input/output "
    r"error|failed to offload|Could not write file"
)


@contextmanager
def naming(path: Path | str, library_errors: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Give an OSError raised while writing `path` that file's name if it has none; an error of
    exactly a type in `library_errors` whose message says a write failed becomes one."""
    # A failed write() (a full disk) names no file, and the build's failure message must.
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, _write_problem(exc, path), str(path)) from exc
    except library_errors as exc:
        # A subclass is no failed write (NotImplementedError is a RuntimeError).
        if type(exc) not in library_errors or not WRITE_FAILURE.search(str(exc)):
            raise
        raise OSError(None, _write_problem(exc, path), str(path)) from exc


@contextmanager
def netcdf_writer(path: Path, file_format: str) -> Iterator[netCDF4.Dataset]:
    """A new NetCDF file open for writing, closed at the end; a failed write or close names it.

    Of several files written at once, each one's writes must be in naming(its path,
    NETCDF_WRITE_ERRORS): every open writer sees an error raised in its block.
    """
    with naming(path, NETCDF_WRITE_ERRORS):
        ds = netCDF4.Dataset(path, "w", format=file_format)
        try:
            yield ds
        except BaseException as exc:
            try:
                _close_netcdf(ds)
            except RuntimeError as closing:
                # A NetCDF3 write on a full disk fails with "Operation not allowed in define
                # mode"; only the close says why. Any other error came first: it is raised.
                if type(exc) is RuntimeError:
                    raise closing from exc
            raise
        _close_netcdf(ds)


def _close_netcdf(ds: netCDF4.Dataset) -> None:
    """ds.close(), not tried again when `ds` is freed if it fails."""
    try:
        ds.close()
    except RuntimeError:
        # A failed close of a NetCDF3 file frees the library's state of it, and a second close
        # (netCDF4's when freeing `ds`) crashes. The flag is set through its descriptor:
        # Dataset's own setattr would write a NetCDF attribute. (HDF5 keeps its file open.)
        if ds.data_model.startswith("NETCDF3"):
            netCDF4.Dataset._isopen.__set__(ds, 0)
        raise


def _write_problem(exc: Exception, path: Path | str) -> str:
    """What went wrong writing `path`, for one line."""
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    # numpy's tofile says only "N requested and M written", HDF5 "HDF error", DuckDB "failed to
    # offload data block" (of several lines): add the free space, which tells whether the disk
    # was full, and the file size limit when there is one (HDF5 does not say it hit that).
    problem = (str(exc).splitlines() or [type(exc).__name__])[0].rstrip(".")
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        problem += f"; this process may write files of at most {limit} bytes (ulimit -f)"
    try:
        stats = os.statvfs(Path(path).parent)
    except OSError:
        return problem
    return f"{problem}; {stats.f_bavail * stats.f_frsize} bytes free on its file system"


_PARQUET_OPTIONS = dict(
    compression="zstd", compression_level=3, use_dictionary=True, write_statistics=True
)


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 (musl and others have none)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def release_arrow_memory() -> None:
    """Give memory of freed Arrow buffers back to the OS.

    Arrow's allocator keeps it otherwise, and a large build frees Arrow tables of hundreds of
    megabytes at a time while polars and DuckDB, with their own allocators, need more.
    """
    pa.default_memory_pool().release_unused()


def release_c_heap() -> None:
    """Give memory freed in the C library's heap back to the OS (glibc's malloc_trim).

    numpy allocates mid-sized arrays there; once freed, they stay with the process, unusable
    by polars' and Arrow's own allocators. Elsewhere than glibc, nothing is done.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def write_parquet(table: pa.Table, path: Path) -> int:
    """Write a Parquet file whose bytes depend only on the table; returns the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with naming(path):
        pq.write_table(
            table.replace_schema_metadata(None),
            path,
            row_group_size=ROW_GROUP_ROWS,
            **_PARQUET_OPTIONS,
        )
    return table.num_rows


def write_parquet_frame(frame: pl.DataFrame, path: Path, order: pl.Series | None = None) -> int:
    """write_parquet of frame[order].to_arrow(), one row group at a time (same bytes).

    Neither a whole Arrow copy nor a reordered copy of the frame is made: for allCountries'
    places either would be another gigabyte.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = frame.head(0).to_arrow().schema.remove_metadata()
    with naming(path), pq.ParquetWriter(path, schema, **_PARQUET_OPTIONS) as writer:
        for start in range(0, max(frame.height, 1), ROW_GROUP_ROWS):
            part = (
                frame.slice(start, ROW_GROUP_ROWS)
                if order is None
                else frame[order.slice(start, ROW_GROUP_ROWS)]
            )
            part = part.to_arrow().replace_schema_metadata(None)
            writer.write_table(part, row_group_size=ROW_GROUP_ROWS)
    return frame.height


def write_arrow(table: pa.Table, path: Path) -> None:
    """Write an uncompressed Arrow IPC file so the server can memory-map it without copies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with naming(path):
        feather.write_feather(
            table.replace_schema_metadata(None),
            str(path),
            compression="uncompressed",
            chunksize=max(table.num_rows, 1),
        )


def write_bytes(data: bytes, path: Path) -> None:
    """Write a file holding `data` (a failed write names it, as Path.write_bytes does not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with naming(path):
        path.write_bytes(data)


def write_npy(array: np.ndarray, path: Path) -> None:
    """Write a .npy file (memory-mappable with numpy.load(mmap_mode='r'))."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with naming(path):
        np.save(path, np.ascontiguousarray(array), allow_pickle=False)


class NpyWriter:
    """Write a 1-D .npy file block by block; the bytes equal write_npy of the whole array.

    The length goes into the header when the file is closed, so it need not be known up front.
    As a context manager it closes on success and, on a failure, only lets go of the file (the
    failed version is discarded whole), so no descriptor outlives the build step.
    """

    def __init__(self, path: Path, dtype: np.dtype | str):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.dtype, self.written = np.dtype(dtype), 0
        self._handle = open(path, "wb")
        self._header = self._header_bytes(0)
        try:
            with naming(path):
                self._handle.write(self._header)
        except BaseException:
            self.discard()
            raise

    def _header_bytes(self, length: int) -> bytes:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header,
            {
                "descr": np.lib.format.dtype_to_descr(self.dtype),
                "fortran_order": False,
                "shape": (length,),
            },
        )
        return header.getvalue()

    def write(self, block: np.ndarray) -> None:
        """Append the next elements."""
        with naming(self._handle.name):
            self._handle.write(np.ascontiguousarray(block, dtype=self.dtype).tobytes())
        self.written += len(block)

    def close(self) -> None:
        """Write the final header (padded to the same size as the placeholder) and close."""
        header = self._header_bytes(self.written)
        if len(header) != len(self._header):
            raise ValueError(f"{self._handle.name}: .npy header changed size")
        with naming(self._handle.name):
            try:
                self._handle.seek(0)
                self._handle.write(header)
            finally:
                self._handle.close()  # closes the descriptor even when the flush fails

    def __enter__(self) -> NpyWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()

    def discard(self) -> None:
        """Close the file unfinished, as after a failure (a full disk may refuse the flush)."""
        with suppress(OSError):
            self._handle.close()


def fixed_width_bytes(strings: pa.Array | pl.Series, width: int) -> np.ndarray:
    """UTF-8 bytes of each string truncated to `width`, as a numpy S<width> array.

    Same result as ``np.array([s.encode()[:width] ...], dtype=f"S{width}")`` without making
    a Python object per string; done in slices to bound the index arrays.
    """
    if isinstance(strings, pl.Series):
        strings = strings.cast(pl.Binary).to_arrow()
    arr = strings.cast(pa.large_binary())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    out = np.zeros((len(arr), width), dtype=np.uint8)
    step = _FIXED_WIDTH_SLICE
    for start in range(0, len(arr), step):
        _fill_fixed_width(out[start : start + step], arr.slice(start, step))
    return out.view(f"S{width}").reshape(len(arr))


def _fill_fixed_width(out: np.ndarray, arr: pa.Array) -> None:
    """Copy up to out.shape[1] bytes of each string of a large_binary array into out's rows."""
    n, width = out.shape
    if n == 0:
        return
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None
        else np.zeros(0, dtype=np.uint8)
    )
    starts = offsets[:-1]
    lengths = np.minimum(np.diff(offsets), width)
    if arr.null_count:
        lengths[~np.asarray(arr.is_valid())] = 0
    for j in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > j)
        out[rows, j] = data[starts[rows] + j]


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


class Spill:
    """Tables appended to a temporary file, then read back as one table.

    For rows kept from a stream of blocks: in memory they would sit between the blocks' freed
    scratch buffers, whose pages the allocator then cannot give back (about 1 GB for
    allCountries); read back in one go (by Arrow, not through Python file objects) they lie
    compactly. Also for a table that is not needed for a while.
    """

    def __init__(self):
        self._file = tempfile.NamedTemporaryFile(prefix="spill-", suffix=".arrow")
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Delete the file (also done when the object is garbage-collected)."""
        try:
            self._close_writer()
        except OSError:
            pass  # the file is deleted anyway; an error of the write that failed was raised
        self._file.close()

    def append(self, table: pa.Table) -> None:
        """Write a table (all with the same schema)."""
        with naming(self._file.name):
            if self._writer is None:
                self._sink = pa.OSFile(self._file.name, "wb")
                # Compressed, each buffer is read back into an allocation of its own
                # (uncompressed, a batch is one allocation that lives until its last column is
                # freed).
                self._writer = pa.ipc.new_file(
                    self._sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")
                )
            self._writer.write_table(table)

    def read(self) -> pa.Table | None:
        """Everything appended, as one table (None when nothing was)."""
        if self._writer is None:
            return None
        with naming(self._file.name):
            self._close_writer()
        with pa.OSFile(self._file.name, "rb") as source:
            return pa.ipc.open_file(source).read_all()

    def _close_writer(self) -> None:
        # Forgotten first: after a failed close (a full disk), close() must not fail again.
        writer, sink, self._writer, self._sink = self._writer, self._sink, None, None
        if writer is not None:
            try:
                writer.close()
            finally:
                sink.close()
