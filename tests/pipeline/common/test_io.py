"""pipeline.common.io's writers: which errors become a one-line failure naming the file, and which
keep their traceback because they are not a failed write."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pipeline.common.io import NETCDF_WRITE_ERRORS, NpyWriter, naming, netcdf_writer, write_npy


@pytest.mark.parametrize("file_format", ["NETCDF3_64BIT_OFFSET", "NETCDF4"])
def test_a_misused_netcdf_api_keeps_its_error(tmp_path, file_format):
    path = tmp_path / "a.nc"
    with pytest.raises(RuntimeError, match="name in use") as raised:
        with netcdf_writer(path, file_format) as ds:
            ds.createDimension("x", 2)
            ds.createVariable("v", "f4", ("x",))
            ds.createVariable("v", "f4", ("x",))
    assert type(raised.value) is RuntimeError


def test_a_bug_in_a_written_block_keeps_its_error(tmp_path):
    with pytest.raises(RuntimeError, match="changed size"):
        with netcdf_writer(tmp_path / "a.nc", "NETCDF4"):
            raise RuntimeError("dictionary changed size during iteration")


def test_a_library_write_failure_names_the_file(tmp_path):
    path = tmp_path / "a.nc"
    with pytest.raises(OSError) as raised:
        with naming(path, NETCDF_WRITE_ERRORS):
            raise RuntimeError("NetCDF: HDF error")
    assert raised.value.filename == str(path)
    assert raised.value.strerror.startswith("NetCDF: HDF error; ")
    with pytest.raises(NotImplementedError):  # a subclass is no failed write
        with naming(path, NETCDF_WRITE_ERRORS):
            raise NotImplementedError("No space left on device")


def _open_files(directory) -> set[str]:
    """Files under `directory` this process holds open (its descriptors in /proc)."""
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.add(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:  # the listing's own descriptor, closed since
            pass
    return {name for name in names if name.startswith(str(directory))}


def test_npy_writers_finish_together_or_let_go_of_their_files(tmp_path):
    with NpyWriter(tmp_path / "a.npy", np.int32) as a, NpyWriter(tmp_path / "b.npy", "S4") as b:
        a.write(np.arange(5))
        b.write(np.array([b"x", b"yz"]))
    assert not _open_files(tmp_path)
    write_npy(np.arange(5, dtype=np.int32), tmp_path / "whole.npy")
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()
    assert np.load(tmp_path / "b.npy").tolist() == [b"x", b"yz"]
    with pytest.raises(ZeroDivisionError):  # a failure midway: nothing stays open
        with NpyWriter(tmp_path / "c.npy", np.int32) as c, NpyWriter(tmp_path / "d.npy", np.int32):
            c.write(np.arange(3))
            1 / 0  # noqa: B018 (the failure midway)
    assert not _open_files(tmp_path)
    assert np.load(tmp_path / "c.npy").shape == (0,)  # left unfinished: its placeholder header
