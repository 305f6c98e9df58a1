"""Full-size GeoNames benchmark: a day's update of a held allCountries, the build over it, and
the server over that build (about 5 million places).

    python -m bench.geonames_full [--datasets DIR] [--keep DIR] [--modified N] ...

DIR (made by bench/make_allcountries.py; generated into the work folder when not given, some
15-60 min) is copied, as the held state of `python -m pipeline fetch geonames`. Measures:

1. the daily update: a GeoNames stand-in serves yesterday's four update files, of
   --modified/--deleted rows drawn from the held dumps (realistic sizes are assumptions: the
   defaults are some MB, as busy days of GeoNames' files), after one fetch that took the small
   files (the held copies have no validators yet); then `fetch geonames` is timed and the bytes
   the stand-in sent are counted;
2. `python -m pipeline build --only geocoding` over the held dumps and that day, under
   /usr/bin/time -v: wall time, peak RSS;
3. `python -m server --workers 2` over the build: time to /ready, each worker's private memory
   (USS: Private_Clean + Private_Dirty of /proc/PID/smaps_rollup) after a round of searches and
   reverse lookups over HTTP;
4. search and reverse latency in-process (bench/geocoding.py's query mix; reverse at points
   near places and anywhere), p50 and p99.
bench/geocoding.py's heavy() calls measure().
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import random
import shutil
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import contract  # noqa: E402
from bench.harness import HOST, log, measure_process, now_s  # noqa: E402
from bench.load import Server, http_get  # noqa: E402
from pipeline.geocoding.sources import geonames_updates as updates  # noqa: E402
from tests.support.upstreams.base import Blob, StandIn  # noqa: E402

CODE_FILES = ("countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt")
PREFIX = "/export/dump"


def private_kib(pid: int) -> int | None:
    """USS: Private_Clean + Private_Dirty of /proc/PID/smaps_rollup."""
    total = None
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total = (total or 0) + int(line.split()[1])
    except (OSError, ValueError):
        return None
    return total


def sample_lines(path: Path, member: str, count: int, seed: int) -> list[str]:
    """`count` lines spread over a zip member, streamed: every k-th line, k from the mean length
    of its first thousand lines, with room so that the count is reached before the end."""
    with zipfile.ZipFile(path) as archive:
        size = archive.getinfo(member).file_size
        with archive.open(member) as handle:
            head = [line for line in (handle.readline() for _ in range(1000)) if line]
            step = max(1, int(size / (sum(map(len, head)) / len(head)) / count / 1.5))
            first = random.Random(seed).randrange(step)
            chosen = []
            for number, line in enumerate(itertools.chain(head, handle)):
                if number % step == first:
                    chosen.append(line.decode().rstrip("\n"))
                    if len(chosen) == count:
                        break
    return chosen


def day_files(
    folder: Path, day: dt.date, modified: int, deleted: int, seed: int
) -> dict[str, bytes]:
    """A day's four update files in GeoNames' formats, rows drawn from the held dumps."""
    places = sample_lines(folder / "allCountries.zip", "allCountries.txt", modified + deleted, seed)
    moved = []
    for line in places[:modified]:
        fields = line.split("\t")
        fields[4] = f"{float(fields[4]) + 0.001:.5f}"  # a small move north
        moved.append("\t".join(fields))
    gone = [
        f"{line.split(chr(9))[0]}\t{line.split(chr(9))[1]}\tduplicate" for line in places[modified:]
    ]
    names = (
        sample_lines(
            folder / "alternateNamesV2.zip", "alternateNamesV2.txt", modified + deleted, seed
        )
        if (folder / "alternateNamesV2.zip").is_file()
        else []
    )
    names_gone = [
        "\t".join(line.split("\t")[:2] + [line.split("\t")[3], "wrong"])
        for line in names[modified:]
    ]
    text = lambda lines: "".join(f"{line}\n" for line in lines).encode()  # noqa: E731
    return {
        updates.file_name(updates.MODIFICATIONS, day): text(moved),
        updates.file_name(updates.DELETES, day): text(gone),
        updates.file_name(updates.NAME_MODIFICATIONS, day): text(names[:modified]),
        updates.file_name(updates.NAME_DELETES, day): text(names_gone),
    }


def fetch(datasets: Path, base: str, log_path: Path, name: str):
    """`python -m pipeline fetch geonames` under /usr/bin/time."""
    env = {
        **os.environ,
        "WEATHERAPI_GEONAMES_BASE_URL": base,
        "WEATHERAPI_OPERATOR_CONTACT": os.environ.get(
            "WEATHERAPI_OPERATOR_CONTACT", "bench@localhost"
        ),
    }
    return measure_process(
        [sys.executable, "-m", "pipeline", "fetch", "geonames", "--datasets", str(datasets)],
        log_path,
        1800,
        name,
        env=env,
    )


def measure_update(datasets: Path, workdir: Path, modified: int, deleted: int, seed: int) -> dict:
    """Serve the update files of the days since the held dumps (yesterday's with the rows, the
    days before empty), take all but yesterday's with the small files, then time yesterday's."""
    folder = datasets / "geonames"
    yesterday = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)
    first = min(
        updates.first_day(folder / name)
        for name in ("allCountries.zip", "alternateNamesV2.zip")
        if (folder / name).is_file()
    )
    files = day_files(folder, yesterday, modified, deleted, seed)
    with StandIn() as server:
        for name in CODE_FILES:
            server.put(f"{PREFIX}/{name}", Blob.of((folder / name).read_bytes()))
        day = first
        while day < yesterday:
            for kind in updates.PLACE_KINDS + updates.NAME_KINDS:
                server.put(f"{PREFIX}/{updates.file_name(kind, day)}", Blob.of(b""))
            day += dt.timedelta(days=1)
        base = server.url + PREFIX
        fetch(datasets, base, workdir / "fetch-prime.log", "fetch geonames (small files)")
        for name, data in files.items():
            server.put(f"{PREFIX}/{name}", Blob.of(data))
        server.clear_hits()
        fetched = fetch(datasets, base, workdir / "fetch-day.log", "fetch geonames (a day)")
        hits = server.hits()
    return {
        "day": yesterday.isoformat(),
        "fetch_s": fetched.wall_s,
        "fetch_peak_rss_mib": max(fetched.peak_rss_mib, fetched.tree_peak_rss_mib),
        "bytes_moved": sum(h.sent for h in hits),
        "requests": len(hits),
        "day_file_bytes": {name: len(data) for name, data in files.items()},
        "modified_rows": modified,
        "deleted_rows": deleted,
    }


def measure_server(build: Path, workdir: Path, seed: int) -> dict:
    """Two workers: time to /ready, each worker's USS after some searches and reverses."""
    from bench.geocoding import SEARCH_MIX

    server = Server(build, 2, workdir / "server.log")
    try:
        server.start(timeout_s=600)
        rng = random.Random(seed)
        paths = ["/geocoding/lookup?" + urllib.parse.urlencode(p) for _, p in SEARCH_MIX]
        paths += [
            f"/geocoding/reverse?lat={rng.uniform(-60, 70):.4f}&lon={rng.uniform(-180, 180):.4f}"
            for _ in range(200)
        ]
        for _ in range(3):  # every worker sees some of each
            for path in paths:
                status, _ = http_get(server.port, path, timeout=30)
                if status != 200:
                    raise RuntimeError(f"{path} answered {status}")
        memory = server.memory()
        workers = [p for p in memory["processes"] if p["pid"] != server.proc.pid]
        uss = [round((private_kib(p["pid"]) or 0) / 1024, 1) for p in workers]
        return {
            "ready_s": round(server.ready_s, 2),
            "worker_uss_mib": uss,
            "worker_rss_mib": [p["rss_mib"] for p in workers],
            "worker_pss_mib": [p["pss_mib"] for p in workers],
            "host": HOST,
        }
    finally:
        server.stop()


def inprocess(version: Path, seconds: float, seed: int) -> dict:
    """Search (the query mix) and reverse (limit 1) latency in-process, p50 and p99."""
    from bench.geocoding import inprocess_reverse, inprocess_search
    from server.geocoding.index import GeocodingIndex

    started = now_s()
    index = GeocodingIndex(version)
    load_s = now_s() - started
    search = inprocess_search(index, seconds, 500)
    reverse = inprocess_reverse(index, seconds, seed)
    return {
        "index_load_s": round(load_s, 2),
        "places": index.size,
        "search_p50_ms": search["p50_ms"],
        "search_p99_ms": search["p99_ms"],
        "search_per_query": search["per_query"],
        "reverse_p50_ms": reverse["p50_ms"],
        "reverse_p99_ms": reverse["p99_ms"],
    }


def measure(
    workdir: Path,
    datasets: Path | None = None,
    modified: int = 10_000,
    deleted: int = 500,
    seconds: float = 8.0,
    seed: int = 7,
) -> dict:
    """Steps 1-4 of the module docstring in `workdir` (the datasets copied there)."""
    held = workdir / "datasets"
    started = now_s()
    if datasets is None:
        measure_process(
            [
                sys.executable,
                "bench/make_allcountries.py",
                "--out",
                str(held),
                "--alternate-names",
                "15000000",
            ],
            workdir / "generate.log",
            4 * 3600,
            "generate a full-size allCountries",
        )
    else:
        shutil.copytree(datasets, held)
    log(f"held state ready in {now_s() - started:.0f} s")
    result = {"update": measure_update(held, workdir, modified, deleted, seed)}
    log(f"update: {result['update']['fetch_s']} s, {result['update']['bytes_moved']:,} bytes")
    built = measure_process(
        [
            sys.executable,
            "-m",
            "pipeline",
            "build",
            "--datasets",
            str(held),
            "--out",
            str(workdir / "build"),
            "--only",
            "geocoding",
        ],
        workdir / "build.log",
        4 * 3600,
        "build geocoding, full size",
    )
    result["build"] = {
        "wall_s": built.wall_s,
        "peak_rss_mib": built.peak_rss_mib,
        "tree_peak_rss_mib": built.tree_peak_rss_mib,
        "method": built.peak_rss_method,
    }
    log(f"build: {built.wall_s} s, peak {built.peak_rss_mib} MiB")
    return result | measure_served(workdir / "build", seconds, seed)


def measure_served(build: Path, seconds: float = 8.0, seed: int = 7) -> dict:
    """Steps 3 and 4 over a finished build."""
    with tempfile.TemporaryDirectory(prefix="geonames-served-") as workdir:
        served = measure_server(build, Path(workdir), seed)
    version = contract.current_version_dir(build)
    measured = inprocess(version, seconds, seed)
    measured.pop("search_per_query")
    return {
        "server": served,
        "inprocess": measured,
        "artifacts_gib": round(
            sum(f.stat().st_size for f in version.rglob("*") if f.is_file()) / 2**30, 2
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.geonames_full", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--datasets",
        type=Path,
        help="a datasets folder made by bench/make_allcountries.py (default: generate one)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="work in DIR and keep it (default: a temporary directory, removed)",
    )
    parser.add_argument(
        "--modified",
        type=int,
        default=10_000,
        help="modified places (and alternate names) in the day's files",
    )
    parser.add_argument(
        "--deleted",
        type=int,
        default=500,
        help="deleted places (and alternate names) in the day's files",
    )
    parser.add_argument(
        "--serve",
        type=Path,
        metavar="BUILD",
        help="only steps 3 and 4, over BUILD (a build directory from an earlier run's --keep)",
    )
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="in-process latency budget per kind (default 8)"
    )
    args = parser.parse_args(argv)
    if args.serve:
        print(json.dumps(measure_served(args.serve, args.seconds), indent=1))
        return 0
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="geonames-full-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(workdir, args.datasets, args.modified, args.deleted, args.seconds)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
