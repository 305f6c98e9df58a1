"""pipeline.io's writers: which errors become a one-line failure naming the file, and which
keep their traceback because they are not a failed write."""

from __future__ import annotations

import pytest

from pipeline.io import NETCDF_WRITE_ERRORS, naming, netcdf_writer


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
    with pytest.raises(NotImplementedError):     # a subclass is no failed write
        with naming(path, NETCDF_WRITE_ERRORS):
            raise NotImplementedError("No space left on device")
