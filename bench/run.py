"""Benchmark harness: build cost, server start and memory, HTTP throughput and latency, search latency.

    python -m bench.run [--build-dir DIR | --skip-build] [--quick] [--no-workers2]
                        [--loadgen auto|wrk|python] [--wait-quiet SECONDS] [--strict] ...
    python bench/run.py  ...

Exit status: 0 measured (targets may FAIL; see --strict), 1 measurement broken (non-200 answers,
socket errors, the server failed), 2 a target FAILed under --strict.

One run measures:

1. the default build (`python -m pipeline build --out <tmpdir>`): wall time and peak RSS
   (GNU `/usr/bin/time -v` when present, else getrusage(RUSAGE_CHILDREN)), plus the sampled peak
   RSS summed over the build's process tree;
2. the server (1 worker, and optionally 2 workers as separate rows): time from process start until
   GET /ready answers 200, and VmRSS / PSS (smaps_rollup) after the load run;
3. requests/s and p50/p99 latency of /health and the geocoding endpoints with `wrk` (a Lua script
   rotates through many URLs and counts non-200 answers), each as a ratio to /health in the same
   server run; a Python load generator is the fallback when wrk is unavailable;
4. search latency in-process (no HTTP) over the same query mix.

Figures go to a table on stdout and to test-artifacts/bench.json. Targets from the issue are
printed next to the figures as PASS/FAIL. The server binds 127.0.0.1 only and is always stopped.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/run.py`
    sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402  (after the sys.path fix above)
    NOISE_PCT, RATE_LIMIT, CpuMeter, Server, current_version, git_commit, http_get, log,
    measure_build, now_s, percentile, table, verdict, wait_quiet,
)
from bench.load import PythonLoad, WrkLoad, ensure_wrk  # noqa: E402


# ---- targets (from the issue) ---------------------------------------------------------------

RATIO_TARGET = 0.6           # lookup by id, reverse, countries, country detail vs /health
SEARCH_P50_MS = 3.0
BUILD_WALL_S = 60.0
BUILD_PEAK_MIB = 2048.0      # "2 GB", read as 2 GiB
READY_S = 3.0
RESIDENT_MIB = 500.0         # "500 MB", read as MiB

# ---- the search query mix -------------------------------------------------------------------
# (label, query parameters). Every label is unique; the HTTP rotation and the in-process run use
# the same list.

SEARCH_MIX: list[tuple[str, dict[str, str]]] = []


def _q(text: str, **extra: str) -> None:
    label = text + "".join(f" [{k}={v}]" for k, v in extra.items())
    SEARCH_MIX.append((label, {"q": text, **extra}))


for _text in (
    # capitals and large cities, English names
    "London", "Paris", "Berlin", "Madrid", "Rome", "Tokyo", "Beijing", "Moscow", "Cairo",
    "New York", "Los Angeles", "Mumbai", "Istanbul", "Buenos Aires", "Sydney", "Mexico City",
    "Toronto", "Bangkok", "Lagos", "Jakarta",
    # local names
    "München", "Wien", "Roma", "Praha", "Warszawa", "Köln", "Genève", "Lisboa", "København",
    "Firenze", "Bruxelles", "São Paulo", "Zürich", "Москва", "東京",
    # alternate names
    "Zurigo", "Muenchen", "Peking", "Bombay", "Mailand", "Londres", "Nueva York", "Cologne",
    # typos
    "Zurihc", "Londn", "Amsterdma", "Nwe York", "Barcelnoa", "Frankfrut", "Edinbrugh", "Berln",
    # accents omitted
    "zurich", "sao paulo", "geneve", "malmo", "bogota", "reykjavik", "koln", "medellin",
    # prefixes
    "new yo", "lond", "san fr", "amst", "ber", "rio de j", "kuala l",
    # context after a comma
    "paris, texas", "san jose, costa rica", "portland, oregon", "cambridge, ma",
    "london, ontario", "springfield, il", "frankfurt, brandenburg",
):
    _q(_text)
for _text in ("springfield illinois", "paris texas", "cambridge massachusetts",
              "san jose california", "portland maine", "zurich switzerland"):
    _q(_text, field="all")
_q("Springfield", country="US")
_q("San Jose", country="CR")


# ---- URL sets -------------------------------------------------------------------------------

@dataclass
class Workload:
    name: str
    label: str
    paths: list[str]
    ratio_target: bool = False   # throughput must be >= RATIO_TARGET x /health
    connections: int | None = None  # None: the run's default


def search_path(params: dict[str, str]) -> str:
    return "/geocoding/lookup?" + urllib.parse.urlencode(params)


def unlookupable_ids(index) -> list[str]:
    """Ids in the index that GET /geocoding/lookup?id= refuses with 400 (its id pattern)."""
    from server.areas.geocoding import ID
    return [i for i in (raw.decode() for raw in index.ids) if not ID.match(i)]


def workloads(index, seed: int = 7) -> list[Workload]:
    from server.areas.geocoding import ID
    rng = random.Random(seed)
    rows = rng.sample(range(index.size), min(1000, index.size))
    ids = [index.ids[r].decode() for r in rows]
    ids = [i for i in ids if ID.match(i)]  # see unlookupable_ids(): reported separately
    coords = []
    for r in rows[:800]:  # near real places, jittered
        coords.append((float(index.lat[r]) + rng.uniform(-0.05, 0.05),
                       float(index.lon[r]) + rng.uniform(-0.05, 0.05)))
    for _ in range(200):  # anywhere, oceans included
        coords.append((rng.uniform(-89.9, 89.9), rng.uniform(-179.9, 179.9)))
    rng.shuffle(coords)
    codes = list(index.country_codes)
    rng.shuffle(codes)
    searches = [search_path(p) for _, p in SEARCH_MIX]
    return [
        Workload("health", "GET /health (trivial)", ["/health"]),
        Workload("lookup_id", "lookup ?id= (1000 ids)", [f"/geocoding/lookup?id={i}" for i in ids],
                 ratio_target=True),
        Workload("reverse", "reverse limit=1 (1000 pts)",
                 [f"/geocoding/reverse?lat={lat:.5f}&lon={lon:.5f}&limit=1"
                  for lat, lon in coords], ratio_target=True),
        Workload("countries", "countries (list)", ["/geocoding/countries"], ratio_target=True),
        Workload("country", f"countries/{{code}} ({len(codes)})",
                 [f"/geocoding/countries/{c}" for c in codes], ratio_target=True),
        Workload("search", f"search ?q= ({len(searches)} queries)", searches),
        Workload("search_c1", "search ?q=, 1 connection", searches, connections=1),
    ]


def check_workload(port: int, work: Workload) -> None:
    """Every distinct URL answers 200 with JSON (sampled for the long lists)."""
    sample = work.paths if len(work.paths) <= 100 else work.paths[:50]
    for path in sample:
        status, body = http_get(port, path)
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {body[:300]!r}")
        json.loads(body)


# ---- 4. in-process search -------------------------------------------------------------------

def inprocess_search(index, max_seconds: float, max_rounds: int) -> dict:
    from server.areas.geocoding_search import search

    def run(params: dict[str, str]) -> list[int]:
        return search(index, params["q"], field_all=params.get("field") == "all",
                      country=params.get("country"), limit=10)

    cold = {}
    for label, params in SEARCH_MIX:  # first call per query (caches cold)
        t0 = now_s()
        run(params)
        cold[label] = (now_s() - t0) * 1000
    for _ in range(2):
        for _, params in SEARCH_MIX:
            run(params)
    samples: dict[str, list[float]] = {label: [] for label, _ in SEARCH_MIX}
    meter = CpuMeter()
    started, rounds = now_s(), 0
    while rounds < max_rounds and now_s() - started < max_seconds:
        for label, params in SEARCH_MIX:
            t0 = now_s()
            run(params)
            samples[label].append((now_s() - t0) * 1000)
        rounds += 1
    per_query = []
    for label, params in SEARCH_MIX:
        rows = run(params)
        top = (f"{index.name[rows[0]].as_py()}, {index.cc[rows[0]].as_py()}" if rows else "-")
        per_query.append({"query": label, "median_ms": round(statistics.median(samples[label]), 3),
                          "max_ms": round(max(samples[label]), 3),
                          "cold_ms": round(cold[label], 3), "results": len(rows), "top": top})
    cpu = meter.stop()
    everything = [v for values in samples.values() for v in values]
    return {"cpu": cpu, "rounds": rounds, "samples": len(everything),
            "p50_ms": round(percentile(everything, 50), 3),
            "p99_ms": round(percentile(everything, 99), 3),
            "mean_ms": round(statistics.fmean(everything), 3),
            "per_query": per_query}


# ---- a run of one server configuration -----------------------------------------------------

def bench_server(build_dir: Path, workers: int, works: list[Workload], load, args,
                 workdir: Path) -> dict:
    label = f"{workers} worker{'s' if workers > 1 else ''}"
    server = Server(build_dir, workers, workdir / f"server-w{workers}.log")
    result: dict = {"workers": workers, "label": label, "endpoints": []}
    try:
        log(f"starting the server ({label})")
        server.start()
        result["bound_s"] = round(server.bound_s, 3)
        result["ready_s"] = round(server.ready_s, 3)
        result["port"] = server.port
        result["memory_after_ready"] = server.memory()
        log(f"ready in {server.ready_s:.2f} s on port {server.port}")
        for work in works:
            check_workload(server.port, work)
        duration = args.duration if workers == 1 else args.duration_w2
        health_rps = health_cpu_us = None
        for work in works:
            if workers > 1 and work.connections == 1:
                continue
            conns = work.connections or args.connections
            log(f"{label}: {work.name}: warmup {args.warmup:.1f} s, measure {duration:.1f} s, "
                f"{conns} connection(s)")
            if args.warmup > 0:
                load.run(server.port, work.paths, conns, args.warmup)
            meter = CpuMeter(server.proc.pid)
            measured = load.run(server.port, work.paths, conns, duration)
            measured.extra["cpu"] = meter.stop()
            if measured.requests:
                measured.server_cpu_us_per_req = round(
                    measured.extra["cpu"]["watched_s"] / measured.requests * 1e6, 1)
            if work.name == "health":
                health_rps = measured.rps
                health_cpu_us = measured.server_cpu_us_per_req
            if health_cpu_us and measured.server_cpu_us_per_req and work.connections is None:
                measured.cpu_ratio_to_health = round(
                    health_cpu_us / measured.server_cpu_us_per_req, 3)
            if health_rps and work.connections is None:
                measured.ratio_to_health = round(measured.rps / health_rps, 3)
            row = {"name": work.name, "label": work.label, "connections": conns,
                   "distinct_urls": len(set(work.paths)), "ratio_target": work.ratio_target,
                   **asdict(measured)}
            result["endpoints"].append(row)
            if server.proc and server.proc.poll() is not None:
                raise RuntimeError(f"server died during {work.name}:\n{server.log_tail()}")
        result["memory_after_load"] = server.memory()
        result["log_errors"] = [ln for ln in server.log_tail(400).splitlines()
                                if " ERROR " in ln or "Traceback" in ln][:10]
    finally:
        server.stop()
    return result


def targets(report: dict) -> list[dict]:
    out: list[dict] = []

    def add(name, value, unit, target, ok, note=""):
        out.append({"target": name, "value": value, "unit": unit, "goal": target,
                    "pass": ok, "note": note})

    build = report.get("build")
    if build:
        add("default build wall time", build["wall_s"], "s", f"<= {BUILD_WALL_S:g} s",
            build["wall_s"] <= BUILD_WALL_S)
        peak = max(build["peak_rss_mib"], build["tree_peak_rss_mib"])
        add("default build peak RSS", peak, "MiB", f"<= {BUILD_PEAK_MIB:g} MiB (2 GiB)",
            peak <= BUILD_PEAK_MIB, build["peak_rss_method"])
    else:
        add("default build wall time", None, "s", f"<= {BUILD_WALL_S:g} s", None, "build skipped")
        add("default build peak RSS", None, "MiB", f"<= {BUILD_PEAK_MIB:g} MiB", None,
            "build skipped")
    one = next((s for s in report["servers"] if s["workers"] == 1 and "ready_s" in s), None)
    if one:
        add("server ready (1 worker)", one["ready_s"], "s", f"<= {READY_S:g} s",
            one["ready_s"] <= READY_S)
        mem = one.get("memory_after_load") or one.get("memory_after_ready")
        add("server resident after load, VmRSS (1 worker)", mem["total_rss_mib"], "MiB",
            f"<= {RESIDENT_MIB:g} MiB", mem["total_rss_mib"] <= RESIDENT_MIB)
        add("server resident after load, PSS (1 worker)", mem["total_pss_mib"], "MiB",
            f"<= {RESIDENT_MIB:g} MiB", mem["total_pss_mib"] <= RESIDENT_MIB)
        for row in one["endpoints"]:
            if row["ratio_target"]:
                ratio = row["ratio_to_health"]
                add(f"{row['name']} throughput / health", ratio, "x", f">= {RATIO_TARGET:g}x",
                    None if ratio is None else ratio >= RATIO_TARGET,
                    f"{row['rps']:.0f} req/s")
    search = report.get("inprocess_search")
    if search:
        add("search p50, in-process", search["p50_ms"], "ms", f"<= {SEARCH_P50_MS:g} ms",
            search["p50_ms"] <= SEARCH_P50_MS)
    if one:
        c1 = next((r for r in one["endpoints"] if r["name"] == "search_c1"), None)
        if c1:
            add("search p50, HTTP 1 connection (info)", c1["p50_ms"], "ms",
                f"<= {SEARCH_P50_MS:g} ms", c1["p50_ms"] <= SEARCH_P50_MS,
                "includes HTTP and the thread-pool hop")
    return out


def print_report(report: dict) -> None:
    meta = report["meta"]
    print()
    print("=" * 100)
    print(f"weatherapi benchmark  {meta['started']}  commit {meta['commit']}  "
          f"{meta['cpus']} CPUs  python {meta['python']}")
    print(f"build dir {meta['build_dir']}  version {meta['version']}  load generator "
          f"{meta['loadgen']} ({meta['loadgen_version']}), {meta['connections']} connections, "
          f"{meta['threads']} thread(s)")
    print("=" * 100)
    build = report.get("build")
    print("\n## Default build")
    if build:
        print(table(["metric", "value"], [
            ["wall time", f"{build['wall_s']:.1f} s"],
            [f"peak RSS ({build['peak_rss_method']})", f"{build['peak_rss_mib']:.0f} MiB"],
            ["peak RSS of the process tree (sampled 10/s)",
             f"{build['tree_peak_rss_mib']:.0f} MiB"],
            ["build CPU (% of one core) / other processes' CPU",
             f"{build['cpu']['children_pct']:.0f}% / {build['cpu']['other_pct']:.0f}%"],
        ]))
    else:
        print(f"skipped (reusing {meta['build_dir']})")
    for server in report["servers"]:
        print(f"\n## Server, {server['label']}")
        if "error" in server:
            print(f"ERROR: {server['error']}")
            continue
        mem = server.get("memory_after_load") or {}
        ready = server.get("memory_after_ready") or {}
        print(f"address printed after {server['bound_s']:.2f} s, /ready 200 after "
              f"{server['ready_s']:.2f} s")
        print(f"memory after ready: VmRSS {ready.get('total_rss_mib')} MiB, "
              f"PSS {ready.get('total_pss_mib')} MiB")
        print(f"memory after load:  VmRSS {mem.get('total_rss_mib')} MiB "
              f"(largest process {mem.get('max_rss_mib')} MiB), PSS {mem.get('total_pss_mib')} MiB"
              f" over {len(mem.get('processes', []))} process(es)")
        rows = []
        for r in server["endpoints"]:
            ratio = r["ratio_to_health"]
            mark = ""
            if r["ratio_target"] and ratio is not None and server["workers"] == 1:
                mark = verdict(ratio >= RATIO_TARGET) + f" (>= {RATIO_TARGET:g})"
            cpu = r["extra"].get("cpu", {})
            gen = cpu.get("children_pct") if meta["loadgen"] == "wrk" else cpu.get("harness_pct")
            rows.append([r["label"], r["connections"], f"{r['rps']:.0f}",
                         "" if ratio is None else f"{ratio:.2f}",
                         f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", r["requests"],
                         r["non200"] + r["socket_errors"], cpu.get("watched_pct"),
                         r["server_cpu_us_per_req"], "" if r["cpu_ratio_to_health"] is None
                         else f"{r['cpu_ratio_to_health']:.2f}", gen, cpu.get("other_pct"), mark])
        print(table(["endpoint", "conns", "req/s", "x health", "p50 ms", "p99 ms", "requests",
                     "non-200/err", "srv CPU%", "srv us/req", "x health CPU", "gen CPU%",
                     "other CPU%", "target"], rows, "lrrrrrrrrrrrrl"))
        if server.get("log_errors"):
            print("server log errors:\n  " + "\n  ".join(server["log_errors"]))
    search = report.get("inprocess_search")
    if search:
        print(f"\n## Search in-process (no HTTP), {len(SEARCH_MIX)} queries x {search['rounds']} "
              f"rounds, limit=10")
        print(table(["query", "median ms", "max ms", "cold ms", "results", "top result"],
                    [[q["query"], f"{q['median_ms']:.3f}", f"{q['max_ms']:.2f}",
                      f"{q['cold_ms']:.2f}", q["results"], q["top"]]
                     for q in search["per_query"]], "lrrrrl"))
        print(f"overall: p50 {search['p50_ms']:.3f} ms, p99 {search['p99_ms']:.3f} ms, "
              f"mean {search['mean_ms']:.3f} ms over {search['samples']} searches; other "
              f"processes used {search['cpu']['other_pct']:.0f}% of a core meanwhile")
    print("\n## Targets")
    print(table(["target", "value", "goal", "verdict", "note"],
                [[t["target"], "-" if t["value"] is None else f"{t['value']:g} {t['unit']}",
                  t["goal"], verdict(t["pass"]), t["note"]] for t in report["targets"]],
                "lrlll"))
    for warning in report.get("warnings", []):
        print(f"WARNING: {warning}")


# ---- main -----------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", type=Path,
                        help="reuse this existing build directory (skips the build)")
    parser.add_argument("--skip-build", action="store_true",
                        help="do not measure the build; serve --build-dir or ./build")
    parser.add_argument("--keep-build", action="store_true",
                        help="keep the freshly built directory instead of deleting it")
    parser.add_argument("--datasets", type=Path, default=None,
                        help="datasets directory for the build (default: the pipeline's)")
    parser.add_argument("--duration", type=float, default=6.0,
                        help="measured seconds per endpoint, 1 worker (default 6)")
    parser.add_argument("--duration-w2", type=float, default=4.0,
                        help="measured seconds per endpoint, 2 workers (default 4)")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="warmup seconds before each measurement (default 2; wrk rounds "
                             "durations to whole seconds)")
    parser.add_argument("--connections", type=int, default=24, help="connections (default 24)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    parser.add_argument("--no-workers2", action="store_true", help="skip the 2-worker rows")
    parser.add_argument("--quick", action="store_true",
                        help="short runs (2 s, 0.5 s warmup), no 2-worker rows")
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--no-install", action="store_true",
                        help="never try apt-get install wrk")
    parser.add_argument("--search-seconds", type=float, default=8.0,
                        help="time budget of the in-process search run (default 8)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                        help="first wait up to SECONDS for other processes to go idle (default 0)")
    parser.add_argument("--json", type=Path, default=ROOT / "test-artifacts" / "bench.json")
    parser.add_argument("--strict", action="store_true", help="exit 2 when a target FAILs")
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.duration_w2, args.warmup, args.no_workers2 = 2.0, 2.0, 1.0, True
        args.search_seconds = min(args.search_seconds, 3.0)
    if args.duration < 1 or args.duration_w2 < 1:
        parser.error("durations must be at least 1 s")
    return args


def _on_sigterm(signum, frame):
    raise SystemExit(143)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if args.wait_quiet > 0:
        wait_quiet(args.wait_quiet)
    started = dt.datetime.now(dt.timezone.utc)
    t_all = now_s()
    workdir = Path(tempfile.mkdtemp(prefix="weatherapi-bench-"))
    report: dict = {"servers": [], "warnings": []}
    fresh_build: Path | None = None
    failed = False
    try:
        # 1. build
        if args.build_dir or args.skip_build:
            build_dir = (args.build_dir or ROOT / "build").resolve()
            if current_version(build_dir) is None:
                raise SystemExit(f"error: {build_dir} has no published build (current)")
            report["build"] = None
        else:
            fresh_build = workdir / "build"
            report["build"] = asdict(measure_build(fresh_build, workdir / "build.log",
                                                   timeout_s=600))
            build_dir = fresh_build
            log(f"build: {report['build']['wall_s']} s, peak {report['build']['peak_rss_mib']} MiB")
        version_dir = current_version(build_dir)
        assert version_dir is not None

        # 4 (first, while nothing else runs): search in-process; the index also gives the URLs
        from server.areas.geocoding_index import GeocodingIndex
        t0 = now_s()
        index = GeocodingIndex(version_dir)
        load_s = now_s() - t0
        log(f"index loaded in-process in {load_s:.2f} s; searching for "
            f"{args.search_seconds:.0f} s")
        report["inprocess_search"] = inprocess_search(index, args.search_seconds, 500)
        report["inprocess_search"]["index_load_s"] = round(load_s, 3)
        works = workloads(index)
        refused = unlookupable_ids(index)
        report["unlookupable_ids"] = refused
        if refused:
            report["warnings"].append(
                f"{len(refused)} ids in the index are refused (400) by GET /geocoding/lookup?id= "
                f"because they do not match its id pattern, e.g. {', '.join(refused[:5])}; they "
                "are left out of the lookup rotation")
        del index

        # 3. load generator
        wrk = None if args.loadgen == "python" else ensure_wrk(not args.no_install)
        if args.loadgen == "wrk" and wrk is None:
            raise SystemExit("error: wrk is not available")
        load = WrkLoad(wrk, workdir, args.threads) if wrk else PythonLoad()
        if not wrk:
            why = "--loadgen python" if args.loadgen == "python" else "wrk unavailable"
            report["warnings"].append(f"{why}: Python load generator used; it shares the CPUs "
                                      "with the server, so req/s are understated")

        report["meta"] = {
            "started": started.isoformat(timespec="seconds"), "commit": git_commit(),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform(), "build_dir": str(build_dir),
            "version": version_dir.name, "loadgen": load.name,
            "loadgen_version": load.version, "connections": args.connections,
            "threads": args.threads, "duration_s": args.duration,
            "duration_w2_s": args.duration_w2, "warmup_s": args.warmup,
            "rate_limit_env": f"WEATHERAPI_RATE_LIMIT_PER_MINUTE={RATE_LIMIT}",
            "search_queries": [label for label, _ in SEARCH_MIX],
        }

        # 2 + 3. servers
        for workers in ((1,) if args.no_workers2 else (1, 2)):
            try:
                report["servers"].append(bench_server(build_dir, workers, works, load, args,
                                                      workdir))
            except RuntimeError as exc:
                failed = True
                log(f"server run with {workers} worker(s) failed: {exc}")
                report["servers"].append({"workers": workers, "label": f"{workers} worker(s)",
                                          "error": str(exc), "endpoints": []})
        end_version = current_version(build_dir)
        if end_version != version_dir:
            report["warnings"].append(f"{build_dir}/current changed during the run "
                                      f"({version_dir.name} -> {end_version and end_version.name})"
                                      "; the server hot-reloaded, figures may be disturbed")
        noisy = []
        if report["build"] and report["build"]["cpu"]["other_pct"] > NOISE_PCT:
            noisy.append(f"build {report['build']['cpu']['other_pct']:.0f}%")
        if report["inprocess_search"]["cpu"]["other_pct"] > NOISE_PCT:
            noisy.append(f"in-process search {report['inprocess_search']['cpu']['other_pct']:.0f}%")
        for server in report["servers"]:
            for row in server["endpoints"]:
                other = row["extra"].get("cpu", {}).get("other_pct", 0)
                if other > NOISE_PCT:
                    noisy.append(f"{server['label']} {row['name']} {other:.0f}%")
        if noisy:
            report["warnings"].append(
                f"other processes used more than {NOISE_PCT}% of a core during: "
                + ", ".join(noisy) + "; those figures are disturbed (the machine has "
                f"{os.cpu_count()} CPUs)")
        for server in report["servers"]:
            for row in server["endpoints"]:
                if row["non200"] or row["socket_errors"]:
                    failed = True
                    report["warnings"].append(
                        f"{server['label']} {row['name']}: {row['non200']} non-200 answers "
                        f"(last status {row['first_bad_status']}), {row['socket_errors']} socket "
                        "errors")
        report["targets"] = targets(report)
        report["meta"]["total_s"] = round(now_s() - t_all, 1)
        print_report(report)
        print(f"\ntotal {report['meta']['total_s']:.0f} s "
              f"(of which build {report['build']['wall_s'] if report['build'] else 0:.0f} s)")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"figures written to {args.json}")
    finally:
        if fresh_build is not None and args.keep_build:
            print(f"kept the build at {fresh_build} (logs in {workdir})")
        elif failed:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        return 1
    if args.strict and any(t["pass"] is False for t in report["targets"]):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
