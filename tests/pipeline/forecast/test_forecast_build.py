"""`python -m pipeline build --only forecast` on small model runs written in the real formats
(cfgrib's GFS and ECMWF layouts, wgrib2 names), read back from the artifacts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import contract
from contract import Forecast as F
from tests.support import forecast_inputs as fi

pytestmark = pytest.mark.slow  # they build with the pipeline

STEP = 10.0  # a 10° global grid keeps these builds small


def build(pipeline_cli, datasets: Path, out: Path, check: bool = True):
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", "forecast")
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def grid(version: Path, name: str = F.HOURLY_GRID) -> tuple[dict, np.ndarray]:
    spec = contract.read_manifest(version)["areas"]["forecast"]["grids"][name]
    return spec, np.load(version / spec["file"])


def column(spec: dict, values: np.ndarray, name: str) -> np.ndarray:
    """One variable as (time, lat, lon)."""
    return values[..., spec["variables"].index(name)].transpose(2, 0, 1)


def gfs_run(folder: Path, run_s: int, horizon_h: int = 192, lat=None, lon=None, **over) -> None:
    """A GFS run as cfgrib splits it: one file per level type."""
    if lat is None:
        lat, lon = fi.global_axes(STEP)
    steps = fi.gfs_steps(horizon_h)
    values = {**fi.KNOWN, **over}
    stamp = f"gfs.t{run_s // 3600 % 24:02d}z.{run_s}"
    groups = {
        "heightAboveGround2": ("t2m", "d2m"),
        "heightAboveGround10": ("u10", "v10"),
        "meanSea": ("prmsl",),
        "atmosphere": ("tcc",),
        "surface": ("prate", "vis", "gust", "orog", "crain", "csnow", "cfrzr", "cicep"),
    }
    for suffix, names in groups.items():
        fi.write_step_file(
            folder / f"{stamp}.{suffix}.nc",
            run_s,
            steps,
            lat,
            lon,
            {n: values[n] for n in names if n in values},
        )


def test_known_fields_become_the_hourly_grid_in_si_units(pipeline_cli, tmp_path):
    run = fi.last_run()
    gfs_run(tmp_path / "d" / "forecast", run)
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    entry = contract.read_manifest(version)["areas"]["forecast"]
    assert entry["source"]["kind"] == "real" and entry["source"]["generated"] is False
    assert entry["source"]["model"] == "gfs" and entry["run_times"] == [fi_iso(run)]
    assert entry["alerts"]["kind"] == "none" and entry["tables"]["alerts"]["rows"] == 0
    assert len(entry["inputs"]) == 5 and all(len(i["sha256"]) == 64 for i in entry["inputs"])
    spec, values = grid(version)
    assert (spec["time0"], spec["dt_s"], spec["ntime"]) == (run, 3600, 193)
    assert (spec["lat0"], spec["dlat"], spec["nlat"]) == (-90.0, STEP, 19)
    assert (spec["lon0"], spec["dlon"], spec["nlon"], spec["wraps"]) == (-180.0, STEP, 36, True)
    assert spec["variables"] == list(F.REQUIRED) + [F.VISIBILITY, F.GUST]
    expected = {
        F.TEMPERATURE: 20.0,
        F.DEWPOINT: 10.0,
        F.WIND_U: 3.0,
        F.WIND_V: 4.0,
        F.PRESSURE: 1013.25,
        F.CLOUD: 0.5,
        F.PRECIP: 0.0,
        F.PRECIP_PROBABILITY: 0.0,
        F.VISIBILITY: 16093.44,
        F.GUST: 8.0,
    }  # visibility capped at 10 mi
    for name, value in expected.items():
        np.testing.assert_allclose(column(spec, values, name), value, atol=1e-4, err_msg=name)
    static, orography = grid(version, F.STATIC_GRID)
    assert static["ntime"] == 1 and np.allclose(orography, 400.0)


def fi_iso(unix_s: int) -> str:
    return np.datetime_as_string(np.datetime64(unix_s, "s"), unit="s") + "Z"


def test_the_same_inputs_give_the_same_bytes(pipeline_cli, tmp_path):
    gfs_run(tmp_path / "d" / "forecast", fi.last_run(), horizon_h=30)
    digests = []
    for out in ("a", "b"):
        build(pipeline_cli, tmp_path / "d", tmp_path / out)
        version = contract.current_version_dir(tmp_path / out)
        files = contract.read_manifest(version)["areas"]["forecast"]["files"]
        digests.append({f: hashlib.sha256((version / f).read_bytes()).hexdigest() for f in files})
        digests.append(contract.read_manifest(version)["areas"]["forecast"]["version"])
    assert digests[0] == digests[2] and digests[1] == digests[3]


def test_ecmwf_and_wgrib2_layouts_read_like_cfgrib_gfs(pipeline_cli, tmp_path):
    run = fi.last_run()
    gfs_run(tmp_path / "gfs" / "forecast", run, horizon_h=24)
    # ECMWF open data via cfgrib: msl, tcc 0-1, tp in metres accumulated from the run start,
    # ptype; here with a `time` dimension of valid times, latitude ascending, -180..180.
    lat, lon = fi.global_axes(STEP, descending=False, lon_0_360=False)
    valid = run + 3600 * np.arange(25)
    fi.write_time_file(
        tmp_path / "ecmwf" / "forecast" / "ifs.nc",
        run,
        valid,
        lat,
        lon,
        {
            "t2m": 293.15,
            "d2m": 283.15,
            "u10": 3.0,
            "v10": 4.0,
            "msl": 101325.0,
            "tcc": 0.5,
            "tp": 0.0,
            "ptype": 0.0,
            "orog": 400.0,
        },
        units={"tcc": "(0 - 1)", "tp": "m", "ptype": "(Code table 4.201)"},
        attrs={"GRIB_centre": "ecmf"},
    )
    # wgrib2 -netcdf: its names and CF units, no run time (the first valid time is used).
    fi.write_time_file(
        tmp_path / "wgrib2" / "forecast" / "gfs.nc",
        None,
        valid,
        lat,
        lon,
        {
            "TMP_2maboveground": 20.0,
            "DPT_2maboveground": 10.0,
            "UGRD_10maboveground": 3.0,
            "VGRD_10maboveground": 4.0,
            "PRMSL_meansealevel": 1013.25,
            "TCDC_entireatmosphere": 50.0,
            "PRATE_surface": 0.0,
            "HGT_surface": 400.0,
            "CRAIN_surface": 0.0,
            "CSNOW_surface": 0.0,
        },
        units={
            "TMP_2maboveground": "degC",
            "DPT_2maboveground": "degC",
            "UGRD_10maboveground": "m/s",
            "VGRD_10maboveground": "m/s",
            "PRMSL_meansealevel": "hPa",
            "TCDC_entireatmosphere": "%",
            "PRATE_surface": "kg/m^2/s",
            "HGT_surface": "m",
            "CRAIN_surface": "-",
            "CSNOW_surface": "non-dim",
        },
    )  # wgrib2's category units
    grids = {}
    for name in ("gfs", "ecmwf", "wgrib2"):
        build(pipeline_cli, tmp_path / name, tmp_path / f"out-{name}")
        spec, values = grid(contract.current_version_dir(tmp_path / f"out-{name}"))
        assert spec["time0"] == run and spec["ntime"] == 25
        grids[name] = {v: column(spec, values, v) for v in F.REQUIRED}
    for name in ("ecmwf", "wgrib2"):
        for variable in F.REQUIRED:
            np.testing.assert_allclose(
                grids[name][variable],
                grids["gfs"][variable],
                atol=1e-4,
                err_msg=f"{name} {variable}",
            )


def _rate_at(version: Path, hours: list[int]) -> list[float]:
    spec, values = grid(version)
    rate = column(spec, values, F.PRECIP)[:, 0, 0]
    return [round(float(rate[h]), 4) for h in hours]


def test_accumulations_become_hourly_rates(pipeline_cli, tmp_path):
    run = fi.last_run()

    # GFS buckets: tp accumulates over 6 hours and resets on the model step at 6, 12, ...
    # (hourly to 120 h), then every 6 hours in 3-hourly steps; rain of 1 mm/h in hour 2,
    # 3 mm/h in hours 6-7 (after a reset), 0.5 mm/h from 123 to 126 h (3-hourly steps).
    def hourly_rate(h):
        return 1.0 if h == 2 else 3.0 if h in (6, 7) else 0.5 if 123 <= h < 126 else 0.0

    steps = fi.gfs_steps(132)

    def bucket(valid_s, la, lo):
        h = (valid_s - run) // 3600
        start = (h - 1) // 6 * 6
        return np.full(la.shape, sum(hourly_rate(k) for k in range(start, h)), np.float32)

    lat, lon = fi.global_axes(STEP)
    fields = {n: fi.KNOWN[n] for n in ("t2m", "d2m", "u10", "v10", "prmsl", "tcc")}
    fi.write_step_file(tmp_path / "gfs" / "forecast" / "a.nc", run, steps, lat, lon, fields)
    fi.write_step_file(
        tmp_path / "gfs" / "forecast" / "tp.nc", run, steps[1:], lat, lon, {"tp": bucket}
    )
    build(pipeline_cli, tmp_path / "gfs", tmp_path / "out-gfs")
    hours = [0, 1, 2, 3, 5, 6, 7, 8, 122, 123, 124, 125, 126]
    assert _rate_at(contract.current_version_dir(tmp_path / "out-gfs"), hours) == [
        hourly_rate(h) for h in hours
    ]

    # GFS prate (stepType avg): the mean rate since the bucket's start, the same buckets.
    def bucket_mean(valid_s, la, lo):
        h = (valid_s - run) // 3600
        return bucket(valid_s, la, lo) / (h - (h - 1) // 6 * 6) / 3600.0  # kg m-2 s-1

    fi.write_step_file(tmp_path / "avg" / "forecast" / "a.nc", run, steps, lat, lon, fields)
    fi.write_step_file(
        tmp_path / "avg" / "forecast" / "prate.nc",
        run,
        steps[1:],
        lat,
        lon,
        {"prate": bucket_mean},
        step_types={"prate": "avg"},
    )
    build(pipeline_cli, tmp_path / "avg", tmp_path / "out-avg")
    assert _rate_at(contract.current_version_dir(tmp_path / "out-avg"), hours) == [
        hourly_rate(h) for h in hours
    ]
    # ECMWF: tp in metres accumulated from the run start, 3-hourly: each hour of a 3-hour
    # step gets a third of its amount.
    steps = list(range(0, 25, 3))
    total = {s: 0.003 * (s >= 6) + 0.003 * (s >= 9) for s in steps}  # 1 mm/h over 3..9 h
    fi.write_step_file(
        tmp_path / "ecmwf" / "forecast" / "a.nc",
        run,
        steps,
        lat,
        lon,
        {**fields, "tp": lambda v, la, lo: np.full(la.shape, total[(v - run) // 3600])},
        units={"tp": "m"},
    )
    build(pipeline_cli, tmp_path / "ecmwf", tmp_path / "out-ecmwf")
    assert _rate_at(contract.current_version_dir(tmp_path / "out-ecmwf"), list(range(12))) == [
        0,
        0,
        0,
        1,
        1,
        1,
        1,
        1,
        1,
        0,
        0,
        0,
    ]


def test_the_newest_run_wins_where_runs_overlap(pipeline_cli, tmp_path):
    new = fi.last_run()
    old = new - 6 * 3600
    gfs_run(tmp_path / "d" / "forecast", old, horizon_h=24, t2m=283.15, d2m=273.15)
    gfs_run(tmp_path / "d" / "forecast", new, horizon_h=24)
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    entry = contract.read_manifest(version)["areas"]["forecast"]
    assert entry["run_times"] == [fi_iso(old), fi_iso(new)]
    spec, values = grid(version)
    temperature = column(spec, values, F.TEMPERATURE)[:, 3, 3]
    assert spec["time0"] == old and spec["ntime"] == 31
    assert np.allclose(temperature[:6], 10.0) and np.allclose(temperature[6:], 20.0)


def wgrib2_netcdf3(path: Path, run: int, lat, lon) -> Path:
    """The required fields as `wgrib2 -netcdf` writes them: NetCDF3, time unlimited."""
    names = {
        "TMP_2maboveground": ("K", 293.15),
        "DPT_2maboveground": ("K", 283.15),
        "UGRD_10maboveground": ("m/s", 3.0),
        "VGRD_10maboveground": ("m/s", 4.0),
        "PRMSL_meansealevel": ("Pa", 101325.0),
        "TCDC_entireatmosphere": ("%", 50.0),
        "PRATE_surface": ("kg/m^2/s", 0.0),
    }
    valid = run + np.array(fi.gfs_steps(48)) * fi.HOUR
    fi.write_time_file(
        path.with_suffix(".nc4"),
        None,
        valid,
        lat,
        lon,
        {n: v for n, (_, v) in names.items()},
        units={n: u for n, (u, _) in names.items()},
    )
    ds = xr.load_dataset(path.with_suffix(".nc4"))
    ds.to_netcdf(path, format="NETCDF3_CLASSIC", unlimited_dims=["time"])
    return path


@pytest.mark.parametrize(
    "case, problem",
    [
        ("missing", "lacks t2m"),
        ("units", "unit 'furlongs'"),
        ("garbage", "not a readable NetCDF file"),
        ("grids", "on another grid"),
        ("nan", "t2m of run"),
        ("unitless", "tcc has no units attribute"),
        ("truncated", "truncated: expected"),  # netCDF-C would read zeros past the end
        ("nan-latitude", "latitude coordinates are not all finite"),
    ],
)
def test_bad_inputs_fail_with_the_file_and_problem(pipeline_cli, tmp_path, case, problem):
    out = tmp_path / "out"
    good = tmp_path / "good"
    gfs_run(good / "forecast", fi.last_run(), horizon_h=6)
    build(pipeline_cli, good, out)
    published = contract.current_version_dir(out)
    bad = tmp_path / "bad" / "forecast"
    lat, lon = fi.global_axes(STEP)
    run = fi.last_run()
    if case == "missing":
        fi.write_step_file(bad / "a.nc", run, [0, 1], lat, lon, {"u10": 1.0, "v10": 1.0})
    elif case == "units":
        gfs_run(bad, run, horizon_h=6)
        fi.write_step_file(
            bad / "vis.nc", run, [0, 1], lat, lon, {"vis": 1.0}, units={"vis": "furlongs"}
        )
    elif case == "garbage":
        bad.mkdir(parents=True)
        (bad / "broken.nc").write_bytes(b"this is not netcdf")
    elif case == "nan":  # a broken download: every t2m value missing
        gfs_run(bad, run, horizon_h=6, t2m=np.nan)
    elif case == "truncated":  # a wgrib2 -netcdf file (NetCDF3) cut short in transfer
        whole = wgrib2_netcdf3(tmp_path / "whole.nc", run, lat, lon)
        bad.mkdir(parents=True)
        (bad / "gfs.nc").write_bytes(whole.read_bytes()[: whole.stat().st_size * 7 // 10])
    elif case == "nan-latitude":
        lat = lat.copy()
        lat[3] = np.nan
        fi.write_step_file(bad / "a.nc", run, fi.gfs_steps(6), lat, lon, fi.KNOWN)
    elif case == "unitless":  # 50 (%) or 0.5? A fraction without its unit is ambiguous.
        gfs_run(bad, run, horizon_h=6)
        fi.write_step_file(
            bad / "gfs.t00z.0.atmosphere.nc",
            run,
            fi.gfs_steps(6),
            lat,
            lon,
            {"tcc": 50.0},
            units={"tcc": ""},
        )
    else:
        gfs_run(bad, run, horizon_h=6)
        fine_lat, fine_lon = fi.global_axes(5.0)
        fi.write_step_file(bad / "gust.nc", run, [0, 1], fine_lat, fine_lon, {"gust": 1.0})
    result = build(pipeline_cli, bad.parent, out, check=False)
    assert result.returncode == 1
    assert problem in result.stderr and "still published" in result.stderr
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == published


def test_alerts_nws_geojson_and_cap_become_the_table_and_index(pipeline_cli, tmp_path):
    run = fi.last_run()
    gfs_run(tmp_path / "d" / "forecast", run, horizon_h=6)
    ring = [[8.0, 47.0], [9.0, 47.0], [9.0, 48.0], [8.0, 48.0], [8.0, 47.0]]
    fi.write_nws(
        tmp_path / "d" / "alerts" / "nws.json",
        [
            fi.nws_alert("a1", "Wind Advisory", ring, "2030-01-01T00:00:00-05:00", None),
            {
                **fi.nws_alert("zones", "Flood Watch", ring, "2030-01-01T00:00:00Z", None),
                "geometry": None,
            },
        ],
    )
    fi.write_cap(
        tmp_path / "d" / "alerts" / "cap.xml",
        circle="47.5,8.5 10",
        polygon="46.0,7.0 46.0,7.5 46.5,7.5 46.0,7.0",
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    entry = contract.read_manifest(version)["areas"]["forecast"]
    assert entry["alerts"] == {
        **entry["alerts"],
        "kind": "real",
        "count": 2,
        "skipped_without_polygon": 1,
    }
    import pyarrow.parquet as pq

    rows = pq.read_table(version / F.ALERTS).to_pylist()
    assert [r["title"] for r in rows] == ["Gale warning", "Wind Advisory"]  # onset order
    gale, wind = rows
    assert gale["regions"] == ["Circle around the lake", "Polygon area"]
    assert gale["uri"] == "https://example.org/gale" and gale["severity"] == "Moderate"
    assert wind["onset"] == 1893474000 and wind["expires"] is None
    assert wind["description"] == "Wind Advisory description.\n\nTake care."
    boxes = np.load(version / F.ALERT_BOXES)
    assert boxes.shape == (2, 4) and np.allclose(boxes[1], [47, 8, 48, 9])
    assert np.load(version / F.ALERT_PART_ALERT).tolist() == [0, 0, 1]  # circle, polygon, ring
    assert json.loads(json.dumps(entry["tables"])) == {"alerts": {"file": F.ALERTS, "rows": 2}}


RING = [[8.0, 47.0], [9.0, 47.0], [9.0, 48.0], [8.0, 48.0], [8.0, 47.0]]


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            {"geometry": {"type": "Polygon", "coordinates": [[[8, 47], [9], [9, 48], [8, 47]]]}},
            "is not three or more [lon, lat] positions",
        ),
        (
            {
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [[[8, 95], [9, 95], [9, 96], [8, 95]]],
                }
            },
            "not a finite latitude",
        ),
        ({"geometry": {"type": "Pentagon", "coordinates": []}}, "is not a GeoJSON geometry"),
        ({"geometry": "47,8"}, "is not a GeoJSON object"),
        ({"properties": {"onset": 1893474000, "event": "Wind"}}, "is not an ISO 8601 time string"),
        ({"properties": ["not", "an", "object"]}, "not a GeoJSON Feature object"),
    ],
)
def test_bad_alert_files_fail_with_the_file_and_problem(pipeline_cli, tmp_path, change, problem):
    gfs_run(tmp_path / "d" / "forecast", fi.last_run(), horizon_h=6)
    out = tmp_path / "out"
    build(pipeline_cli, tmp_path / "d", out)
    published = contract.current_version_dir(out)
    feature = {**fi.nws_alert("a1", "Wind Advisory", RING, "2030-01-01T00:00:00Z", None), **change}
    fi.write_nws(tmp_path / "d" / "alerts" / "bad.geojson", [feature])
    result = build(pipeline_cli, tmp_path / "d", out, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "bad.geojson" in result.stderr and problem in result.stderr, result.stderr[-2000:]
    assert contract.current_version_dir(out) == published


def test_alerts_without_an_area_are_skipped_and_counted(pipeline_cli, tmp_path):
    gfs_run(tmp_path / "d" / "forecast", fi.last_run(), horizon_h=6)
    onset = "2030-01-01T00:00:00Z"
    fi.write_nws(
        tmp_path / "d" / "alerts" / "nws.geojson",
        [
            fi.nws_alert("area", "Wind Advisory", RING, onset, None),
            {
                **fi.nws_alert("point", "Tornado Warning", RING, onset, None),
                "geometry": {"type": "Point", "coordinates": [8.5, 47.5]},
            },
            {
                **fi.nws_alert("line", "Coastal Flood", RING, onset, None),
                "geometry": {"type": "LineString", "coordinates": [[8, 47], [9, 48]]},
            },
            {
                **fi.nws_alert("empty", "Flood Watch", RING, onset, None),
                "geometry": {"type": "MultiPolygon", "coordinates": []},
            },
        ],
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    entry = contract.read_manifest(version)["areas"]["forecast"]
    assert entry["alerts"]["count"] == 1 and entry["alerts"]["skipped_without_polygon"] == 3


def test_alert_rings_across_the_antimeridian_stay_on_their_side(pipeline_cli, tmp_path):
    gfs_run(tmp_path / "d" / "forecast", fi.last_run(), horizon_h=6)
    aleutians = [[179.0, 51.0], [-179.0, 51.0], [-179.0, 53.0], [179.0, 53.0], [179.0, 51.0]]
    fi.write_nws(
        tmp_path / "d" / "alerts" / "nws.geojson",
        [fi.nws_alert("a1", "Gale Warning", aleutians, "2030-01-01T00:00:00Z", None)],
    )
    fi.write_cap(
        tmp_path / "d" / "alerts" / "cap.xml",
        circle="-17.0,179.9 50",
        polygon="-16.0,179.5 -16.0,-179.5 -17.0,-179.5 -17.0,179.5 -16.0,179.5",
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    boxes = np.load(version / F.ALERT_BOXES)
    # Each box spans two degrees of longitude or so, not the 358° of the other half.
    assert np.allclose(boxes[0], [51, 179, 53, 181])  # a1, then cap-1
    assert 179 < boxes[1, 1] < boxes[1, 3] < 181.5 and boxes[1, 3] - boxes[1, 1] < 2.5


def test_generated_alerts_name_their_place_in_capitals(tmp_path):
    from pipeline.forecast.sources.generated_alerts import AlertCollector
    from pipeline.forecast.sources.generated_model import Grid

    grid, run = Grid(10.0), fi.last_run()
    collector = AlertCollector(grid, run)
    la, lo = np.meshgrid(grid.lat, grid.lon, indexing="ij")
    storm = (np.abs(la + 50) <= 10) & (np.abs(lo - 240) <= 10)  # around 50°S 120°W
    fields = {
        "gust": np.where(storm, 40.0, 5.0),
        "prate": np.zeros(la.shape),
        "t2m": np.full(la.shape, 288.15),
    }
    collector(run + 3600, fields)
    features = json.loads(collector.write(tmp_path / "a.geojson").read_text())["features"]
    assert [f["properties"]["event"] for f in features] == ["High Wind Warning"]
    props = features[0]["properties"]
    assert props["areaDesc"] == "Around 50.0°S 120.0°W"
    assert props["description"].endswith("gusts to 40 m/s around 50.0°S 120.0°W.")
    assert props["headline"] == "High Wind Warning (generated) around 50.0°S 120.0°W"


@pytest.mark.parametrize(
    "place, lat, lon, low_m, high_m",
    [
        ("Quito", -0.18, -78.47, 2000, 3500),
        ("La Paz", -16.5, -68.15, 3000, 4500),
        ("Kolkata", 22.57, 88.36, 0, 100),
        ("Amsterdam", 52.37, 4.9, -10, 100),
        ("Mexico City", 19.43, -99.13, 1500, 2600),
        ("Denver", 39.74, -104.99, 1400, 2200),
        ("Greenland's ice", 72.0, -40.0, 2000, 3500),
        ("East Antarctica", -78.5, 106.8, 2000, 4500),
        ("the Pacific", 0.0, -150.0, 0, 1),
    ],
)
def test_the_generated_surface_height_is_near_the_real_one(place, lat, lon, low_m, high_m):
    # The generated run's temperatures follow it: Quito at sea level was a tropical beach.
    from pipeline.forecast.sources.generated_model import orography

    height = orography(np.array([lat]), np.array([lon % 360.0]))[0]
    assert low_m <= height <= high_m, (place, height)


def test_a_pole_row_becomes_one_point(pipeline_cli, tmp_path):
    # A model's pole row may vary along longitude (here temperature, wind and surface height
    # do): the grid holds the pole's values at longitude 0 in every column, as the server
    # reads a pole, so that points near it converge to its answer.
    def pole(value, at_pole):
        return lambda t, la, lo: np.where(np.abs(la) == 90, at_pole(np.radians(lo)), value)

    gfs_run(
        tmp_path / "d" / "forecast",
        fi.last_run(),
        horizon_h=6,
        t2m=pole(fi.KNOWN["t2m"], lambda x: 253.15 + 10 * np.sin(x) + 5 * np.cos(x)),
        u10=pole(3.0, lambda x: 2 + 3 * np.cos(x)),
        v10=pole(4.0, lambda x: 4 * np.sin(x)),
        orog=pole(400.0, lambda x: 100 + 50 * np.cos(x)),
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    version = contract.current_version_dir(tmp_path / "out")
    spec, values = grid(version)
    for name, at_lon0, elsewhere in (
        (F.TEMPERATURE, -15.0, 20.0),
        (F.WIND_U, 5.0, 3.0),
        (F.WIND_V, 0.0, 4.0),
    ):
        field = column(spec, values, name)
        for row in (0, spec["nlat"] - 1):  # 90°S and 90°N
            np.testing.assert_allclose(field[:, row], at_lon0, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(field[:, 1:-1], elsewhere, atol=1e-4, err_msg=name)
    _, orography = grid(version, F.STATIC_GRID)
    assert np.allclose(orography[[0, -1]], 150.0) and np.allclose(orography[1:-1], 400.0)


@pytest.mark.parametrize("step", [2.0, 0.5])
def test_the_generated_run_writes_a_pole_as_one_point(step):
    # As GFS does: the formulas would give each column of a pole row its own local solar
    # time, surface height and pressure gradient.
    from pipeline.forecast.sources.generated_model import Grid, Weather

    fields = Weather(Grid(step)).fields(fi.last_run() + 15 * 3600)
    for name, value in fields.items():
        poles = value[[0, -1]]
        assert (poles == poles[:, :1]).all(), (name, np.ptp(poles, axis=1))
        assert np.ptp(value[1]) > 0 or name not in ("t2m", "orog"), name  # not by accident
