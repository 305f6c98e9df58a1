"""The grid ingest on dask (pipeline.common.bands): the forecast and air-quality band functions
under dask's synchronous scheduler, builds in small bands on each local scheduler, and a
`python -m pipeline build --dask-scheduler` on a distributed.LocalCluster of worker processes;
every one gives the in-process build's bytes."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import contract
from contract import DAY_S
from contract import AirQuality as AQ
from pipeline.air_quality import build as aq_build
from pipeline.air_quality.sources import generated as cams_generated
from pipeline.common import bands
from pipeline.common.io import InputError
from pipeline.forecast import build as forecast_build
from pipeline.forecast.sources import model_grib, runs
from pipeline.forecast.sources.model_hourly import HourlyFields
from tests.support import forecast_inputs as fi
from tests.support import grib

pytestmark = grib.NEEDS_REAL_GFS

STEPS = list(range(13)) + [15, 18, 21, 24]
AREAS = ("forecast", "air_quality")
TODAY_S = int(time.time()) // DAY_S * DAY_S


def hashes(version: Path) -> dict[str, str]:
    """sha256 of each file of the grid areas in a version."""
    return {
        p.relative_to(version).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for area in AREAS
        for p in sorted((version / area).rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def datasets(module_tmp) -> Path:
    """A GFS-like GRIB2 run (2.5°, 17 steps) and two days of CAMS runs for both domains."""
    root = module_tmp("dask-datasets") / "datasets"
    grib.gfs_run(root, fi.last_run(), STEPS)
    cams_generated.write_default(root / "cams", TODAY_S)
    return root


def build_both(datasets: Path, version: Path) -> dict[str, str]:
    """Build the forecast and air-quality areas into `version` in this process."""
    version.mkdir(parents=True)
    forecast_build.build(datasets, version)
    aq_build.build(datasets, version, now_s=TODAY_S)
    return hashes(version)


@pytest.fixture(scope="module")
def in_process(datasets, module_tmp) -> dict[str, str]:
    """The files built with no scheduler, in the default bands."""
    return build_both(datasets, module_tmp("dask-in-process") / "v")


@pytest.fixture
def fields(datasets, tmp_path):
    """The forecast run's HourlyFields, read from GRIB2 as the build reads it."""
    held = runs.held_runs(datasets, "gfs")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fields = HourlyFields(model_grib.scan(held, scratch))
    fields.prepare()
    return fields


def test_forecast_bands_under_the_synchronous_scheduler(fields):
    whole, whole_known = fields.band(0, fields.nlat)
    cuts = [0, 1, 7, 30, 31, 50, fields.nlat]  # bands of 1 to 23 rows, the halo crossing them
    tasks = [dask.delayed(fields.band, nout=2)(a, b) for a, b in zip(cuts, cuts[1:])]
    shape = whole.shape[:2]
    blocks = [
        da.from_delayed(values, (*shape, b - a, fields.nlon), dtype=np.float32)
        for (values, _), a, b in zip(tasks, cuts, cuts[1:])
    ]
    with dask.config.set(scheduler="synchronous"):
        values, facts = dask.compute(da.concatenate(blocks, axis=2), [k for _, k in tasks])
    assert np.array_equal(values, whole, equal_nan=True)
    assert len(facts) == len(cuts) - 1 and all(isinstance(k, dict) for k in facts)
    fields.merge_known(facts)
    assert fields._known == whole_known and all(whole_known.values())
    fields.check_known()


def test_air_quality_bands_under_the_synchronous_scheduler(datasets, tmp_path):
    domain = aq_build._domain(AQ.GLOBAL, datasets, tmp_path, TODAY_S)
    stitched = aq_build._stitch_domain(domain, tmp_path)
    band = aq_build._Band(AQ.GLOBAL, stitched)
    nlat = len(stitched.lat)
    whole, whole_known = band(0, nlat)
    cuts = [0, 5, 6, 40, nlat]
    with dask.config.set(scheduler="synchronous"):
        parts = dask.compute(*(dask.delayed(band)(a, b) for a, b in zip(cuts, cuts[1:])))
    assert np.array_equal(np.concatenate([v for v, _ in parts], axis=2), whole, equal_nan=True)
    assert np.array_equal(np.logical_or.reduce([k for _, k in parts]), whole_known)
    assert whole_known.any()


def test_air_quality_stitched_a_few_rows_at_a_time_gives_the_same_series(datasets, tmp_path):
    # The CAMS runs are stitched in bands of rows too: three rows a band, the same files.
    stitched = {}
    for name, rows in (("whole", None), ("banded", 3)):
        scratch = tmp_path / name
        scratch.mkdir()
        domain = aq_build._domain(AQ.EUROPE, datasets, scratch, TODAY_S)
        with bands.configured(band_rows=rows):
            stitched[name] = aq_build._stitch_domain(domain, scratch)
    whole, banded = stitched["whole"], stitched["banded"]
    assert len(whole.lat) > 3 and whole.files.keys() == banded.files.keys()
    for variable, path in whole.files.items():
        assert path.read_bytes() == banded.files[variable].read_bytes(), variable


@pytest.mark.parametrize("scheduler", [None, "synchronous", "threads"])
def test_small_bands_on_each_local_scheduler_give_the_same_bytes(
    datasets, in_process, tmp_path, scheduler
):
    # About 3 rows of the forecast grid a band (the default takes all 73 in one).
    with bands.configured(scheduler, band_bytes=3 * 144 * 25 * 13 * 4):
        assert build_both(datasets, tmp_path / "v") == in_process


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes of one thread each, on loopback."""
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
        Client(local) as client,
    ):
        yield local, client


def band_tasks(client: Client) -> int:
    """How many band tasks the cluster's scheduler has finished (all time)."""

    def count(dask_scheduler) -> int:
        prefixes = dask_scheduler.task_prefixes
        return sum(v.state_counts.get("memory", 0) for k, v in prefixes.items() if "call" in k)

    return client.run_on_scheduler(count)


def test_build_on_a_local_cluster(datasets, in_process, module_tmp, cluster, pipeline_cli):
    local, client = cluster
    before = band_tasks(client)
    out = module_tmp("dask-cluster") / "out"
    done = pipeline_cli(
        "build",
        "--datasets",
        datasets,
        "--out",
        out,
        "--only",
        *AREAS,
        "--dask-scheduler",
        local.scheduler_address,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"grid bands on the Dask cluster at {local.scheduler_address}" in done.stderr
    assert "(2 worker(s), 2 thread(s))" in done.stderr
    # The hourly and static forecast grids and the two air-quality grids, a band each at least.
    assert band_tasks(client) - before >= 4
    assert hashes(contract.current_version_dir(out)) == in_process


def test_the_scheduler_from_the_environment(datasets, tmp_path, cluster, pipeline_cli):
    local, client = cluster
    before = band_tasks(client)
    done = pipeline_cli(
        "build",
        "--datasets",
        datasets,
        "--out",
        tmp_path / "out",
        "--only",
        "forecast",
        WEATHERAPI_DASK_SCHEDULER=local.scheduler_address,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert band_tasks(client) - before >= 2


def test_netcdf_forecast_on_the_cluster(module_tmp, cluster):
    # NetCDF runs travel as xarray's lazily opened arrays, reopened on each worker.
    local, _ = cluster
    root = module_tmp("dask-netcdf")
    forecast_build.generate(root / "datasets", fi.last_run(), write_alerts=False)
    built = {}
    for name, scheduler in (("in-process", None), ("cluster", local.scheduler_address)):
        (root / name).mkdir()
        with bands.configured(scheduler, band_rows=10):
            entry = forecast_build.build(root / "datasets", root / name)
        assert entry["source"]["notes"].startswith("model NetCDF files")
        built[name] = {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((root / name / "forecast").iterdir())
        }
    assert built["cluster"] == built["in-process"]


def test_bands_come_back_in_order_on_the_cluster(cluster):
    local, _ = cluster
    ranges = [(a, a + 3) for a in range(0, 30, 3)]
    with bands.configured(local.scheduler_address):
        got = list(bands.compute(_rows, ranges))
    assert got == [_rows(a, b) for a, b in ranges]


def test_an_input_error_on_a_worker_reaches_the_build(cluster):
    local, _ = cluster
    with bands.configured(local.scheduler_address), pytest.raises(InputError) as raised:
        list(bands.compute(_broken, [(0, 1), (1, 2)]))
    assert (raised.value.path, raised.value.problem) == ("forecast/x.nc", "rows 1 to 2 broken")


def _broken(a: int, b: int) -> None:
    """A band function whose second band finds a bad input."""
    if a:
        raise InputError("forecast/x.nc", f"rows {a} to {b} broken")


def _rows(a: int, b: int) -> tuple[list[int], int]:
    """A band function for the order test: its rows and a fact."""
    time.sleep(0.01 * ((7 * a) % 5))  # so that they finish out of order
    return list(range(a, b)), a
