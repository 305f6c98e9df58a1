"""The truncation check of classic NetCDF files (CDF-1, CDF-2, CDF-5), on files written by
xarray and netCDF4 as data providers write them, then cut: netCDF-C itself would read zeros or
fill values past the end of a cut file."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

from pipeline.common import netcdf3
from pipeline.common.io import InputError


def dataset(records: int = 4) -> xr.Dataset:
    """Record (time) and fixed variables of several types, a scalar and global attributes."""
    return xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), np.full((records, 3, 5), 290.0, np.float32)),
            "flag": (("time",), np.arange(records, dtype=np.int8)),
            "orog": (("lat", "lon"), np.ones((3, 5))),
            "level": ((), 2.0),
        },
        coords={
            "time": np.arange(records, dtype=np.float64),
            "lat": [10.0, 0.0, -10.0],
            "lon": np.arange(5) * 72.0,
        },
        attrs={"title": "x" * 13, "numbers": np.arange(3, dtype=np.int16)},
    )


def write_xarray(path: Path, fmt: str, unlimited: bool) -> Path:
    dataset().to_netcdf(path, format=fmt, unlimited_dims=["time"] if unlimited else None)
    return path


def write_cdf5(path: Path, unlimited: bool) -> Path:
    """CDF-5 (64-bit data), which scipy cannot read: 64-bit counts and its extra types."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as nc:
        nc.createDimension("time", None if unlimited else 3)
        nc.createDimension("x", 5)
        nc.createVariable("v", "i2", ("time", "x"))[:] = np.ones((3, 5))
        nc.createVariable("n", "u8", ("time",))[:] = [1, 2, 3]
        nc.createVariable("z", "f8", ("x",))[:] = 1.0
        nc.setncattr("big", np.arange(3, dtype="i8"))
    return path


WRITERS = {
    "cdf1-fixed": lambda p: write_xarray(p, "NETCDF3_CLASSIC", False),
    "cdf1-records": lambda p: write_xarray(p, "NETCDF3_CLASSIC", True),
    "cdf2-fixed": lambda p: write_xarray(p, "NETCDF3_64BIT", False),
    "cdf2-records": lambda p: write_xarray(p, "NETCDF3_64BIT", True),
    "cdf5-fixed": lambda p: write_cdf5(p, False),
    "cdf5-records": lambda p: write_cdf5(p, True),
}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_whole_file_passes_and_every_cut_into_its_data_is_refused(tmp_path, kind):
    path = WRITERS[kind](tmp_path / "whole.nc")
    data = path.read_bytes()
    netcdf3.check_complete(path)
    cut = tmp_path / "cut.nc"
    for size in range(5, len(data) - 3):  # a record's last padding bytes hold no data
        cut.write_bytes(data[:size])
        with pytest.raises(InputError, match="truncated") as caught:
            netcdf3.check_complete(cut)
        assert caught.value.path == str(cut)


def test_the_message_gives_both_sizes(tmp_path):
    path = write_xarray(tmp_path / "a.nc", "NETCDF3_64BIT", True)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[: size * 7 // 10])
    with pytest.raises(InputError) as caught:
        netcdf3.check_complete(path)
    assert caught.value.problem == f"truncated: expected {size} bytes, has {size * 7 // 10}"


@pytest.mark.parametrize("content", [b"", b"CDF", b"not netcdf at all", b"\x89HDF\r\n\x1a\n"])
def test_other_files_are_left_to_the_readers(tmp_path, content):
    path = tmp_path / "a.nc"
    path.write_bytes(content)
    netcdf3.check_complete(path)  # the reader's own open judges these
