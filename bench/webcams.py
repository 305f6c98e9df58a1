"""Webcam benchmarks: detail, list pages (every filter), clusters (world at zoom 3, cities at zoom
12), snapshot history, player and images under load; the area's resident memory in a process of
its own; with --heavy, the area's build alone under /usr/bin/time and `fetch webcams` over 20,000
provider webcams and 1,000 owned cameras (bench/webcams_fetch.py). The plug-in interface is in
bench/run.py.

    python -m bench.webcams --resident VERSION_DIR    (the memory measurement, prints JSON)
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import (
    Context,
    CpuMeter,
    Target,
    Workload,
    log,
    measure_process,
    proc_pss_kib,
    proc_status_kib,
)

AREA = "webcams"

# ---- targets (from the issue) ---------------------------------------------------------------

DETAIL_RATIO = 0.5  # detail vs /health
RATIO = 0.3  # list pages, clusters, snapshots 24h vs /health
DETAIL_BARE, BARE = 0.6, 0.35  # the same against the bare aiohttp app (issue 27)
BUILD_S = 120.0  # the area's build at the default scale
BUILD_MIB = 4096.0  # "within 4 GB", read as GiB
RESIDENT_MIB = 300.0  # "300 MB" for the area in the server, read as MiB
FETCH_S = 300.0  # fetch webcams: 20,000 catalog entries and 1,000 owned cameras
FETCH_MIB = 1024.0  # "1 GB", read as GiB
URLS = 1000  # URLs a rotating workload cycles through
WORLD_VIEW = "-85.0511,-180,85.0511,180"


def _data(ctx: Context):
    from server.webcams.data import load

    return load(ctx.version_dir, ctx.manifest["areas"][AREA])


def workloads(ctx: Context) -> list[Workload]:
    """The issue's workloads (ratio targets) and, for information, 30d, player, images, tokens."""
    data = _data(ctx)
    cat = data.catalog
    rng = random.Random(ctx.seed)
    key = f"api_key={ctx.api_key}"
    rows = [rng.randrange(cat.size) for _ in range(URLS)]
    ids = [cat.public_ids[r] for r in rows]
    countries = [code for code in (_country(cat, r) for r in rows)]
    lists = {
        "none": [
            f"/webcams?{key}&offset={rng.choice([0, 0, 50, 1000])}"
            f"&sort={rng.choice(['views', 'views_asc'])}"
            for _ in range(URLS)
        ],
        "country": [
            f"/webcams?{key}&country={c}&sort={rng.choice(['views', 'views_asc'])}"
            for c in countries
        ],
        "bbox": [f"/webcams?{key}&bbox={_bbox(rng, cat, r, rng.uniform(1, 15))}" for r in rows],
        "nearby": [
            f"/webcams?{key}&nearby={float(cat.lat[r]):.4f},{float(cat.lon[r]):.4f},"
            f"{rng.choice([10, 25, 50, 100, 250])}"
            for r in rows
        ],
        "location": [f"/webcams?{key}&location={_location(data, r)}" for r in rows],
    }
    out = [
        Workload(
            AREA,
            "detail",
            f"detail ({URLS} webcams)",
            [f"/webcams/{i}?{key}" for i in ids],
            ratio_target=DETAIL_RATIO,
            bare_target=DETAIL_BARE,
        )
    ]
    out += [
        Workload(
            AREA,
            f"list_{name}",
            f"list limit=50, {name} filter" if name != "none" else "list limit=50, no filter",
            paths,
            ratio_target=RATIO,
            bare_target=BARE,
        )
        for name, paths in lists.items()
    ]
    out += [
        # A web map's whole world (Web Mercator stops at 85.0511°): not the whole-sphere box.
        Workload(
            AREA,
            "clusters_world_z3",
            "clusters world map view, zoom 3",
            [f"/webcams/clusters?{key}&bbox={WORLD_VIEW}&zoom=3"],
            ratio_target=RATIO,
            bare_target=BARE,
        ),
        Workload(
            AREA,
            "clusters_region_z6",
            f"clusters region, zoom 6 ({URLS} views) (info)",
            [f"/webcams/clusters?{key}&bbox={_bbox(rng, cat, r, 12.0)}&zoom=6" for r in rows],
        ),
        Workload(
            AREA,
            "clusters_city_z12",
            f"clusters city, zoom 12 ({URLS} views)",
            [f"/webcams/clusters?{key}&bbox={_bbox(rng, cat, r, 0.25)}&zoom=12" for r in rows],
            ratio_target=RATIO,
            bare_target=BARE,
        ),
        Workload(
            AREA,
            "snapshots_24h",
            f"snapshots 24h ({URLS} webcams)",
            [f"/webcams/{i}/snapshots?{key}" for i in ids],
            ratio_target=RATIO,
            bare_target=BARE,
        ),
        Workload(
            AREA,
            "snapshots_30d",
            "snapshots 30d (info)",
            [f"/webcams/{i}/snapshots?{key}&range=30d" for i in ids],
        ),
    ]
    out += _linked_workloads(ctx, data, ids)
    return out


def _country(cat, row: int) -> str:
    code = int(cat.row_country[row])
    return next(c for c, i in cat.country_index.items() if i == code)


def _location(data, row: int) -> str:
    index = int(data.catalog.row_location[row])
    return data.catalog.location_ids[index].decode() if index >= 0 else "2657896"


def _bbox(rng: random.Random, cat, row: int, height: float) -> str:
    """A box about a webcam (a map view: 1.4 times as wide as high, in degrees)."""
    lat, lon = float(cat.lat[row]), float(cat.lon[row])
    dy, dx = height * rng.uniform(0.3, 0.7), height * 1.4 * rng.uniform(0.3, 0.7)
    south, north = max(-90.0, lat - dy), min(90.0, lat + height - dy)
    west = (lon - dx + 180.0) % 360.0 - 180.0
    east = (lon - dx + height * 1.4 + 180.0) % 360.0 - 180.0
    return f"{south:.4f},{west:.4f},{north:.4f},{east:.4f}"


def _linked_workloads(ctx: Context, data, ids: list[str]) -> list[Workload]:
    """The player page, images and tokens, with links signed by the secrets the benchmarked
    server will use (the same configuration and secrets file)."""
    from server.config import Config
    from server.webcams.handlers import make_signer
    from server.webcams.snapshots import iso
    from server.webcams.tokens import EMBED

    # The keys file run.py gives the servers locates the secrets file they use.
    signer = make_signer(
        Config.from_env(build_dir=ctx.build_dir, keys_file=ctx.workdir / "keys.json")
    )
    expires = signer.now() + 6 * 3600
    embeds, images = [], []
    for public_id in ids[:200]:
        row = data.catalog.row_of[public_id]
        embeds.append(f"/webcams/embed/{public_id}?token={signer.issue(EMBED, public_id, expires)}")
        last = data.snapshots.last_index(row)
        if last is not None and data.snapshots.rendered:
            stamp = iso(data.snapshots.last[row : row + 1])[0]
            kid, sig = signer.image_signature(public_id, expires)
            images.append(
                f"/cdn/webcams/{public_id}/{stamp}Z.svg?expires={expires}&kid={kid}&sig={sig}"
            )
    out = [Workload(AREA, "embed", "player page 24h (info)", embeds)]
    if images:
        out.append(Workload(AREA, "image", "image, rendered SVG (info)", images))
    out.append(
        Workload(
            AREA,
            "token",
            "POST /webcams/token (info)",
            [f"/webcams/token?api_key={ctx.api_key}"],
            method="POST",
        )
    )
    return out


def prepare(ctx: Context) -> dict:
    """The area's resident memory, measured in a process of its own (the server's figure
    includes every area)."""
    started = time.perf_counter()
    meter = CpuMeter()
    result = subprocess.run(
        [sys.executable, "-m", "bench.webcams", "--resident", str(ctx.version_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if result.returncode != 0:
        raise RuntimeError(f"resident memory measurement failed: {result.stderr[-2000:]}")
    resident = json.loads(result.stdout)
    resident["cpu"] = meter.stop()
    log(
        f"webcams resident memory measured in {time.perf_counter() - started:.1f} s: "
        f"{resident['after_mib']['rss'] - resident['before_mib']['rss']:.0f} MiB RSS"
    )
    return {"resident": resident}


def heavy(ctx: Context) -> dict:
    """The webcams area built alone (geocoding carried over from a linked copy of the build),
    under /usr/bin/time: wall time and peak RSS."""
    out = ctx.workdir / "webcams-alone"
    (out / "versions").mkdir(parents=True)
    copy = out / "versions" / ctx.version_dir.name
    subprocess.run(["cp", "-al", str(ctx.version_dir), str(copy)], check=True)
    (out / "current").symlink_to(Path("versions") / ctx.version_dir.name)
    empty = ctx.workdir / "no-datasets"
    empty.mkdir(exist_ok=True)
    measured = measure_process(
        [
            sys.executable,
            "-m",
            "pipeline",
            "build",
            "--datasets",
            str(empty),
            "--out",
            str(out),
            "--only",
            AREA,
        ],
        ctx.workdir / "webcams-build.log",
        900,
        "webcams build",
    )
    shutil.rmtree(out, ignore_errors=True)
    fetched = _fetch(ctx)
    return {
        "wall_s": measured.wall_s,
        "peak_rss_mib": measured.peak_rss_mib,
        "method": measured.peak_rss_method,
        "cpu": measured.cpu,
        "fetch": fetched,
        "warnings": fetched.pop("warnings", []),
    }


def _fetch(ctx: Context) -> dict:
    """bench/webcams_fetch.py: a provider's 20,000 webcams and 1,000 owned cameras."""
    from bench import webcams_fetch

    workdir = ctx.workdir / "webcams-fetch"
    workdir.mkdir()
    try:
        result = webcams_fetch.measure(workdir)
        result.pop("cpu", None)
        return result
    except Exception as exc:  # noqa: BLE001 (the other figures stand)
        return {"warnings": [f"webcams fetch benchmark failed: {exc}"]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def targets(report: dict) -> list[Target]:
    """Build time and memory, resident memory; the ratios come from the workloads."""
    out = []
    area = report["areas"].get(AREA, {})
    build = report.get("build") or {}
    build_s = build.get("area_s", {}).get(AREA)
    if build_s is not None:
        out.append(
            Target(
                "webcams build, default scale (from the build log)",
                build_s,
                "s",
                f"<= {BUILD_S:g} s",
                build_s <= BUILD_S,
            )
        )
    alone = area.get("heavy")
    if alone:
        out.append(
            Target(
                "webcams build alone, peak RSS (--heavy)",
                alone["peak_rss_mib"],
                "MiB",
                f"<= {BUILD_MIB:g} MiB",
                alone["peak_rss_mib"] <= BUILD_MIB,
                f"{alone['wall_s']} s wall",
            )
        )
    elif build.get("peak_rss_mib") is not None:
        peak = build["peak_rss_mib"]
        out.append(
            Target(
                "webcams build peak RSS (whole build, an upper bound)",
                peak,
                "MiB",
                f"<= {BUILD_MIB:g} MiB",
                peak <= BUILD_MIB,
                "--heavy measures the area alone",
            )
        )
    fetched = (alone or {}).get("fetch") or {}
    if "fetch_s" in fetched:
        out.append(
            Target(
                "fetch webcams: 20,000 provider webcams + 1,000 owned cameras",
                fetched["fetch_s"],
                "s",
                f"<= {FETCH_S:g} s",
                fetched["fetch_s"] <= FETCH_S,
                f"{fetched['requests']} requests",
            )
        )
        out.append(
            Target(
                "fetch webcams peak RSS",
                fetched["fetch_peak_rss_mib"],
                "MiB",
                f"<= {FETCH_MIB:g} MiB",
                fetched["fetch_peak_rss_mib"] <= FETCH_MIB,
                f"build over it {fetched['build_s']} s, {fetched['build_peak_rss_mib']} MiB",
            )
        )
    resident = area.get("resident")
    if resident:
        rss = resident["after_mib"]["rss"] - resident["before_mib"]["rss"]
        pss = resident["after_mib"]["pss"] - resident["before_mib"]["pss"]
        out.append(
            Target(
                "webcams resident memory (RSS of the area)",
                round(rss, 1),
                "MiB",
                f"<= {RESIDENT_MIB:g} MiB",
                rss <= RESIDENT_MIB,
                f"PSS {pss:.0f} MiB; every query kind over every webcam",
            )
        )
    return out


def print_section(report: dict) -> None:
    """How the resident memory was measured."""
    resident = report["areas"].get(AREA, {}).get("resident")
    if resident:
        print("\n## Webcams resident memory (a process that loads only this area)")
        for stage in ("before", "loaded", "after"):
            mib = resident[f"{stage}_mib"]
            print(f"{stage:>7}: RSS {mib['rss']:.1f} MiB, PSS {mib['pss']:.1f} MiB")
        print(f"queries run: {resident['queries']}")


# ---- the resident-memory process ------------------------------------------------------------


def _mib() -> dict[str, float]:
    import os

    rss, pss = proc_status_kib(os.getpid(), "VmRSS"), proc_pss_kib(os.getpid())
    return {"rss": (rss or 0) / 1024, "pss": (pss or 0) / 1024}


def resident(version_dir: Path) -> dict:
    """Load the area as the server does and run every query kind over every webcam (clusters:
    the world at every zoom), then report RSS and PSS before and after."""
    import pyarrow as pa

    import contract
    from server.webcams.catalog import BBox, ListQuery
    from server.webcams.clusters import ClusterQuery
    from server.webcams.data import load

    pa.array([0.0]).to_numpy(zero_copy_only=True)  # Arrow's numpy bridge: a library cost
    before = _mib()
    data = load(version_dir, contract.read_manifest(version_dir)["areas"][AREA])
    loaded = _mib()
    now = int(time.time())
    cat, queries = data.catalog, 0
    for row in range(cat.size):
        for range_ in ("24h", "30d"):
            data.snapshots.window(row, range_, now, cat.timezones[row])
        # What the server's per-period caches hold for a webcam: its list item and detail
        # (the signed links are about 200 and 450 bytes).
        data.items.setdefault((), {})[row] = cat.prefix(row) + b"i" * 200
        data.details.setdefault((), {})[row] = cat.prefix(row) + b"d" * 450
        data.snapshots.last_time(row)
        queries += 3
    for zoom in range(contract.Webcams.ZOOM_MIN, contract.Webcams.ZOOM_MAX + 1):
        query = ClusterQuery(BBox(-90, -180, 90, 180), zoom)
        data.clusters.answer(query, data.clusters.classify(query), lambda r: b"{}")
        queries += 1
    for sort in ("views", "views_asc"):
        cat.select(ListQuery(sort=sort, offset=cat.size - 50))
        queries += 1
    return {"before_mib": before, "loaded_mib": loaded, "after_mib": _mib(), "queries": queries}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--resident"]:
        print(json.dumps(resident(Path(sys.argv[2]))))
    else:
        raise SystemExit(__doc__)
