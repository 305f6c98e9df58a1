"""Benchmark harness: build cost, server start and memory, HTTP throughput and latency per API area.

    python -m bench.run [--build-dir DIR | --skip-build] [--datasets DIR] [--areas AREA ...]
                        [--quick] [--heavy] [--no-workers2] [--rounds N] [--loadgen auto|wrk|python]
                        [--wait-quiet SECONDS] [--strict] ...
    python bench/run.py  ...

Exit status: 0 measured (targets may FAIL; see --strict), 1 measurement broken (unexpected
answers, socket errors, the server or an area module failed), 2 a target FAILed under --strict.

One run measures:

1. the default build (`python -m pipeline build --out <tmpdir>`, only --areas' areas when given):
   wall time and peak RSS (GNU `/usr/bin/time -v` when present, else getrusage), the sampled peak
   RSS of the build's process tree, and each area's seconds from the log ("<area>: done in X s");
2. each area's prepare() (in-process measurements, nothing else running);
3. the server (1 worker, and 2 workers as separate rows unless --quick/--no-workers2): time from
   process start until GET /ready answers 200, and VmRSS / PSS (smaps_rollup) after the load;
4. requests/s and p50/p99 latency of /health (always first), of a bare aiohttp application
   answering a small JSON body (bench/bare_app.py, its own process: the framework's limit), and
   then of every area's workloads, with `wrk` (1 thread, 32 connections; a Lua script rotates
   through the URLs and counts unexpected statuses; apt-installed when missing) or a Python load
   generator; each as a ratio to /health and to the bare app in the same run (to the mean of
   each measured just before and just after it: the machine's speed drifts); every ratio
   workload is measured --rounds times (3), round after round, and its row gives the median
   ratio with the range of the rounds (bench/serverrun.py);
5. with --heavy, each area's heavy() one-off measurements.

Figures go to tables on stdout (one per server run, then each area's section, then one targets
table with PASS/FAIL) and to test-artifacts/bench.json. The server binds 127.0.0.1 only, gets a
fresh API key (in a temporary keys file) and a huge rate limit, and is always stopped.

Area modules: bench/<area>.py for each area, listed in AREAS below (geocoding, air_quality,
forecast, webcams), is run when the build's manifest has the area; otherwise a line says it is
skipped. Its interface (types from bench.harness):

    AREA = "<area>"

    def prepare(ctx: Context) -> dict | None:
        '''Optional. In-process measurements before the servers start (e.g. geocoding's in-process
        search). The returned dict is stored in report["areas"][AREA].'''

    def workloads(ctx: Context) -> list[Workload]:
        '''HTTP workloads: URL lists to rotate through under load.'''

    def heavy(ctx: Context) -> dict | None:
        '''Optional. Expensive one-off measurements run only with `--heavy` (e.g. ingesting a full
        real-size model run under /usr/bin/time to report time and peak memory). Stored in
        report["areas"][AREA]["heavy"].'''

    def targets(report: dict) -> list[Target]:
        '''The issue's targets for this area as PASS/FAIL rows, from report["servers"] and
        report["areas"][AREA].'''

    def print_section(report: dict) -> None:   # optional extra tables

- Context (frozen): build_dir, version_dir, manifest (parsed manifest.json), api_key (a real key,
  valid on the benchmarked servers: keyed endpoints put it in the URL as api_key=...), args (the
  parsed command line: quick, heavy, duration, ...), workdir (scratch, removed after the run),
  seed (for random.Random: the same URLs every run).
- Workload(area, name, label, paths, ratio_target=None, p50_target_ms=None, connections=None,
  method="GET", expect_status=200, bare_target=None, p99_target_ms=None): ratio_target means
  req/s >= ratio_target x /health's in the same server run (only for connections=None, i.e. the
  run's --connections), bare_target the same against the bare aiohttp app; p50_target_ms and
  p99_target_ms bound the latency. All are judged on the 1-worker run, marked in the server
  table and added to the targets table by run.py: targets() returns only the area's other
  rows. connections=1
  workloads are skipped in the 2-worker run. method "POST" sends an empty body (Content-Length: 0).
  Before the load, every path (the first 50 of lists over 100) must answer expect_status, and
  parse when its Content-Type says JSON; under load any other status counts as an error.
- Target(name, value, unit, goal, passed, note=""): passed is True, False or None (not judged).
- report["build"]["area_s"][AREA] is the area's build seconds from the pipeline's log (no build
  when --build-dir/--skip-build: report["build"] is None), for a per-area build target.
- In the dicts prepare() and heavy() return: a "warnings" list of strings is printed with the
  report's warnings; a "cpu" entry (CpuMeter().stop(), up to two levels down) is checked for
  other processes' CPU use (noise). bench.harness.measure_process runs a command under
  /usr/bin/time for heavy(). An exception in a hook is reported and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/run.py`
    sys.path.insert(0, str(ROOT))

import contract  # noqa: E402  (after the sys.path fix above)
from bench import air_quality, forecast, geocoding, webcams  # noqa: E402
from bench.harness import (  # noqa: E402
    NOISE_PCT,
    RATE_LIMIT,
    Context,
    Target,
    Workload,
    current_version,
    git_commit,
    log,
    measure_build,
    now_s,
    wait_quiet,
)
from bench.load import PythonLoad, WrkLoad, ensure_wrk  # noqa: E402
from bench.loops import compare_loops, print_loops  # noqa: E402
from bench.report import print_figures, print_targets, print_workers  # noqa: E402
from bench.serverrun import measure_server  # noqa: E402

AREAS = (geocoding, air_quality, forecast, webcams)  # in the manifest's order
assert tuple(module.AREA for module in AREAS) == contract.AREAS

HEALTH = Workload("server", "health", "GET /health (trivial)", ["/health"], bare_target=0.9)

# Issue 2's targets for the whole service, whatever areas it serves: name -> (at most, unit).
# Each area adds its own (its build seconds, throughput, latency) in bench/<area>.py.
LIMITS = {
    "default build wall time": (60.0, "s"),
    "default build peak RSS": (2048.0, "MiB"),  # "2 GB", read as GiB
    "server ready (1 worker)": (3.0, "s"),
    "server resident after load, VmRSS (1 worker)": (500.0, "MiB"),  # "500 MB", read as MiB
    "server resident after load, PSS (1 worker)": (500.0, "MiB"),
}


# ---- area modules ---------------------------------------------------------------------------


def find_modules(wanted: list[str] | None) -> tuple[dict[str, ModuleType], dict[str, str]]:
    """bench/<area>.py of each wanted area (none skipped here: the manifest may skip some)."""
    return {module.AREA: module for module in AREAS if not wanted or module.AREA in wanted}, {}


def call_hook(report: dict, module: ModuleType, hook: str, *args, default=None):
    """module.hook(*args), or default when the module has no such hook or it raised (the error
    is reported; one area's breakage must not hide the others' figures)."""
    function = getattr(module, hook, None)
    if function is None:
        return default
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 (one area must not hide the others' figures)
        log(f"{module.AREA}.{hook}() failed:\n{traceback.format_exc()}")
        report["errors"].append(f"bench/{module.AREA}.py {hook}() failed: {exc!r}")
        return default


# ---- targets and warnings -------------------------------------------------------------------


def first_server(report: dict) -> dict | None:
    """The 1-worker server run, when it got ready."""
    return next((s for s in report["servers"] if s["workers"] == 1 and "ready_s" in s), None)


def generic_targets(report: dict) -> list[Target]:
    """LIMITS against the build and the 1-worker server."""
    build, one = report["build"], first_server(report)
    values: dict[str, tuple[float | None, str]] = {}
    if build:
        note = f"only {', '.join(build['only'])}: not the default build" if build["only"] else ""
        values["default build wall time"] = (build["wall_s"], note)
        values["default build peak RSS"] = (
            max(build["peak_rss_mib"], build["tree_peak_rss_mib"]),
            note or build["peak_rss_method"],
        )
    if one:
        mem = one.get("memory_after_load") or one.get("memory_after_ready")
        values["server ready (1 worker)"] = (one["ready_s"], "")
        values["server resident after load, VmRSS (1 worker)"] = (mem["total_rss_mib"], "")
        values["server resident after load, PSS (1 worker)"] = (
            mem["total_pss_mib"],
            f"private (RssAnon) {mem.get('total_anon_mib')} MiB",
        )
    out = []
    for name, (limit, unit) in LIMITS.items():
        value, note = values.get(name, (None, "build skipped" if "build" in name else "no server"))
        judged = value is not None and not (build and build["only"] and "build" in name)
        out.append(
            Target(
                name, value, unit, f"<= {limit:g} {unit}", value <= limit if judged else None, note
            )
        )
    return out


def workload_targets(report: dict, area: str) -> list[Target]:
    """The ratio (to /health, to the bare app) and latency targets of the area's workloads,
    from the 1-worker run."""
    one, out = first_server(report), []
    for row in one["endpoints"] if one else []:
        if row["area"] != area:
            continue
        for goal_key, ratio_key, against in (
            ("ratio_target", "ratio_to_health", "health"),
            ("bare_target", "ratio_to_bare", "bare aiohttp"),
        ):
            goal, ratio = row.get(goal_key), row.get(ratio_key)
            if goal is not None:
                passed = None if ratio is None else ratio >= goal
                name = f"{row['name']} throughput / {against}"
                note = f"{row['rps']:.0f} req/s"
                out.append(Target(name, ratio, "x", f">= {goal:g}x", passed, note))
        for goal_key, value_key in (("p99_target_ms", "p99_ms"), ("p50_target_ms", "p50_ms")):
            goal, value = row.get(goal_key), row[value_key]
            if goal is not None:
                name = f"{row['name']} {value_key.removesuffix('_ms')}"
                note = f"{row['connections']} connection(s)"
                out.append(Target(name, value, "ms", f"<= {goal:g} ms", value <= goal, note))
    return out


def all_targets(report: dict, modules: dict[str, ModuleType]) -> list[dict]:
    """Generic rows, then each area's workload rows and its own."""
    rows = [{"area": "all", **t.row()} for t in generic_targets(report)]
    rows += [{"area": "server", **t.row()} for t in workload_targets(report, "server")]
    for area, module in modules.items():
        own = call_hook(report, module, "targets", report, default=[])
        rows += [{"area": area, **t.row()} for t in workload_targets(report, area) + own]
    return rows


def cpu_figures(label: str, data, depth: int = 2):
    """(label, CpuMeter figures) for every "cpu" entry in data, up to depth levels down."""
    if not isinstance(data, dict):
        return
    if isinstance(data.get("cpu"), dict):
        yield label, data["cpu"]
    if depth:
        for key, value in data.items():
            if key != "cpu":
                yield from cpu_figures(f"{label} {key}", value, depth - 1)


def collect_warnings(report: dict) -> None:
    """Areas' own warnings, noisy figures, unexpected answers and hook errors."""
    warnings, noisy = report["warnings"], []
    figures = [("build", (report["build"] or {}).get("cpu"))]
    for area, data in report["areas"].items():
        warnings += [f"{area}: {w}" for w in data.get("warnings", [])]
        warnings += [f"{area} heavy: {w}" for w in (data.get("heavy") or {}).get("warnings", [])]
        figures += list(cpu_figures(area, data))
    for server in report["servers"]:
        figures += [
            (f"{server['label']} {row['area']} {row['name']}", row["extra"].get("cpu"))
            for row in server["endpoints"]
        ]
    noisy = [
        f"{label} {cpu['other_pct']:.0f}%"
        for label, cpu in figures
        if cpu and cpu.get("other_pct", 0) > NOISE_PCT
    ]
    if noisy:
        warnings.append(
            f"other processes used more than {NOISE_PCT}% of a core during: "
            + ", ".join(noisy)
            + "; those figures are disturbed (the machine has "
            f"{os.cpu_count()} CPUs)"
        )
    for server in report["servers"]:
        for row in server["endpoints"]:
            if row["non200"] or row["socket_errors"]:
                report["errors"].append(
                    f"{server['label']} {row['area']} {row['name']}: {row['non200']} unexpected "
                    f"answers (last status {row['first_bad_status']}), {row['socket_errors']} "
                    "socket errors"
                )
    warnings += report["errors"]


# ---- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; --quick shortens every duration."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--build-dir", type=Path, help="reuse this existing build directory (skips the build)")
    add(
        "--skip-build",
        action="store_true",
        help="do not measure the build; serve --build-dir or ./build",
    )
    add(
        "--keep-build",
        action="store_true",
        help="keep the freshly built directory instead of deleting it",
    )
    add(
        "--datasets",
        type=Path,
        default=None,
        help="datasets directory for the build (default: the pipeline's)",
    )
    add(
        "--areas",
        nargs="+",
        choices=contract.AREAS,
        metavar="AREA",
        help=f"benchmark (and build) only these: {', '.join(contract.AREAS)}",
    )
    add("--heavy", action="store_true", help="also run the areas' expensive one-off measurements")
    add(
        "--allcountries",
        type=Path,
        default=None,
        metavar="DIR",
        help="geocoding --heavy: a datasets folder made by bench/make_allcountries.py "
        "(default: generate one, up to an hour)",
    )
    add(
        "--duration",
        type=float,
        default=6.0,
        help="measured seconds per endpoint, 1 worker (default 6)",
    )
    add(
        "--duration-w2",
        type=float,
        default=4.0,
        help="measured seconds per endpoint, 2 workers (default 4)",
    )
    add(
        "--warmup",
        type=float,
        default=2.0,
        help="warmup seconds before each measurement "
        "(default 2; wrk rounds durations to whole seconds)",
    )
    add("--connections", type=int, default=32, help="connections (default 32)")
    add("--threads", type=int, default=1, help="wrk threads (default 1)")
    add(
        "--rounds",
        type=int,
        default=None,
        help="measure each ratio workload this many times, "
        "minutes apart, and report the median ratio with the range (default 3; --quick 1)",
    )
    add(
        "--event-loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="event loop of the server (WEATHERAPI_EVENT_LOOP) and of the bare aiohttp "
        "reference app (default uvloop, the server's default)",
    )
    add("--no-workers2", action="store_true", help="skip the 2-worker rows")
    add(
        "--no-loops",
        action="store_true",
        help="skip the uvloop / asyncio comparison (skipped by --quick)",
    )
    add("--quick", action="store_true", help="short runs (2 s, 1 s warmup), no 2-worker rows")
    add("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    add("--no-install", action="store_true", help="never try apt-get install wrk")
    add(
        "--search-seconds",
        type=float,
        default=8.0,
        help="time budget of geocoding's in-process search run (default 8)",
    )
    add("--seed", type=int, default=7, help="seed of the areas' URL choices (default 7)")
    add(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to SECONDS for other processes to go idle (default 0)",
    )
    add("--json", type=Path, default=ROOT / "test-artifacts" / "bench.json")
    add("--strict", action="store_true", help="exit 2 when a target FAILs")
    args = parser.parse_args(argv)
    if args.quick:
        args.duration, args.duration_w2, args.warmup, args.no_workers2 = 2.0, 2.0, 1.0, True
        args.no_loops = True
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
        args.search_seconds = min(args.search_seconds, 3.0)
    if args.duration < 1 or args.duration_w2 < 1:
        parser.error("durations must be at least 1 s")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def _on_sigterm(signum, frame):
    raise SystemExit(143)


def build_or_reuse(args, workdir: Path, areas: list[str], report: dict) -> Path:
    """Measure a fresh build into workdir/build (only `areas` under --areas), or check the
    reused one; return the build directory."""
    if args.build_dir or args.skip_build:
        build_dir = (args.build_dir or ROOT / "build").resolve()
        if current_version(build_dir) is None:
            raise SystemExit(f"error: {build_dir} has no published build (current)")
        report["build"] = None
        return build_dir
    datasets = args.datasets.resolve() if args.datasets else None
    build = measure_build(
        workdir / "build",
        workdir / "build.log",
        timeout_s=600,
        datasets=datasets,
        only=areas if args.areas else None,
    )
    report["build"] = asdict(build)
    log(f"build: {build.wall_s} s, peak {build.peak_rss_mib} MiB, areas {build.area_s}")
    return workdir / "build"


def make_context(args, build_dir: Path, workdir: Path) -> Context:
    """The areas' context, with a fresh API key in workdir/keys.json."""
    from server.security.keys import add_key

    version_dir = current_version(build_dir)
    assert version_dir is not None
    api_key = add_key(workdir / "keys.json", "bench", rate_limit=int(RATE_LIMIT))
    return Context(
        build_dir,
        version_dir,
        contract.read_manifest(version_dir),
        api_key,
        args,
        workdir,
        args.seed,
    )


def load_generator(args, workdir: Path, report: dict):
    """wrk (installed when missing and allowed), else the Python fallback."""
    wrk = None if args.loadgen == "python" else ensure_wrk(not args.no_install)
    if args.loadgen == "wrk" and wrk is None:
        raise SystemExit("error: wrk is not available")
    if not wrk:
        why = "--loadgen python" if args.loadgen == "python" else "wrk unavailable"
        report["warnings"].append(
            f"{why}: Python load generator used; it shares the CPUs "
            "with the server, so req/s are understated"
        )
    return WrkLoad(wrk, workdir, args.threads) if wrk else PythonLoad()


def warm_compiled_code(report: dict, build_dir: Path) -> None:
    """Fill numba's on-disk cache first, as `./dev serve` and `./dev test` do: otherwise the
    first server of a fresh checkout compiles for some 30 s, and its start and memory figures
    would measure the compiler, not the server."""
    t0 = now_s()
    result = subprocess.run(
        [sys.executable, "-m", "server.kernels.warmup", str(build_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        report["errors"].append(
            "python -m server.kernels.warmup failed: "
            + (result.stderr.strip().splitlines() or ["?"])[-1]
        )
    report["meta"]["compile_cache_s"] = round(now_s() - t0, 1)
    log(f"numba cache ready in {report['meta']['compile_cache_s']:.1f} s")


def run_areas(args, ctx: Context, load, report: dict, modules: dict[str, ModuleType]) -> None:
    """prepare() for every area, then each server configuration over all workloads, then
    --heavy."""
    for area, module in modules.items():
        report["areas"][area] = call_hook(report, module, "prepare", ctx, default=None) or {}
    works = [HEALTH]
    for module in modules.values():
        works += call_hook(report, module, "workloads", ctx, default=[])
    for workers in (1,) if args.no_workers2 else (1, 2):
        try:
            report["servers"].append(
                measure_server(
                    ctx.build_dir,
                    workers,
                    works,
                    load,
                    args,
                    ctx.workdir,
                    ctx.workdir / "keys.json",
                    {"WEATHERAPI_EVENT_LOOP": args.event_loop},
                )
            )
        except RuntimeError as exc:
            log(f"server run with {workers} worker(s) failed: {exc}")
            report["errors"].append(f"server run with {workers} worker(s) failed: {exc}")
            report["servers"].append(
                {
                    "workers": workers,
                    "label": f"{workers} worker(s)",
                    "error": str(exc),
                    "endpoints": [],
                }
            )
    if not args.no_loops:
        try:
            report["event_loops"] = compare_loops(
                ctx.build_dir, works, load, args, ctx.workdir, ctx.workdir / "keys.json"
            )
        except RuntimeError as exc:
            log(f"the event loop comparison failed: {exc}")
            report["errors"].append(f"the event loop comparison failed: {exc}")
    if args.heavy:
        for area, module in modules.items():
            heavy = call_hook(report, module, "heavy", ctx, default=None)
            if heavy is not None:
                report["areas"][area]["heavy"] = heavy


def run_meta(
    args, started: dt.datetime, build_dir: Path, ctx, modules: dict, skipped: dict, load
) -> dict:
    """What the run measured and with what: the report's "meta"."""
    return {
        "started": started.isoformat(timespec="seconds"),
        "commit": git_commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "build_dir": str(build_dir),
        "version": ctx.version_dir.name,
        "areas": list(modules),
        "skipped_areas": skipped,
        "loadgen": load.name,
        "loadgen_version": load.version,
        "connections": args.connections,
        "event_loop": args.event_loop,
        "threads": args.threads,
        "duration_s": args.duration,
        "duration_w2_s": args.duration_w2,
        "warmup_s": args.warmup,
        "heavy": args.heavy,
        "rate_limit_env": f"WEATHERAPI_RATE_LIMIT_PER_MINUTE={RATE_LIMIT}",
    }


def finish_report(args, report: dict, modules: dict) -> None:
    """Judge the targets, print the figures and write the JSON."""
    report["targets"] = all_targets(report, modules)
    collect_warnings(report)
    print_figures(report)
    print_workers(report)
    print_loops(report)
    for module in modules.values():
        call_hook(report, module, "print_section", report)
    print_targets(report)
    print(
        f"\ntotal {report['meta']['total_s']:.0f} s "
        f"(of which build {report['build']['wall_s'] if report['build'] else 0:.0f} s)"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"figures written to {args.json}")


def main(argv: list[str] | None = None) -> int:
    """Measure, print, write the JSON; the exit status says whether the run was sound."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if args.wait_quiet > 0:
        wait_quiet(args.wait_quiet)
    started = dt.datetime.now(dt.timezone.utc)
    t_all = now_s()
    modules, skipped = find_modules(args.areas)
    if args.areas and not modules:
        raise SystemExit(f"error: no bench module for {', '.join(args.areas)} yet")
    workdir = Path(tempfile.mkdtemp(prefix="weatherapi-bench-"))
    report: dict = {"build": None, "areas": {}, "servers": [], "warnings": [], "errors": []}
    try:
        build_dir = build_or_reuse(args, workdir, list(modules), report)
        ctx = make_context(args, build_dir, workdir)
        for area in list(modules):
            if area not in ctx.manifest.get("areas", {}):
                skipped[area] = "not in this build's manifest"
                del modules[area]
        for area, why in skipped.items():
            print(f"{area}: skipped ({why})", flush=True)
        load = load_generator(args, workdir, report)
        report["meta"] = run_meta(args, started, build_dir, ctx, modules, skipped, load)
        warm_compiled_code(report, build_dir)
        run_areas(args, ctx, load, report, modules)
        end_version = current_version(build_dir)
        if end_version != ctx.version_dir:
            report["warnings"].append(
                f"{build_dir}/current changed during the run "
                f"({ctx.version_dir.name} -> "
                f"{end_version and end_version.name}); the server "
                "hot-reloaded, figures may be disturbed"
            )
        report["meta"]["total_s"] = round(now_s() - t_all, 1)
        finish_report(args, report, modules)
    finally:
        failed = bool(report["errors"]) or "targets" not in report
        if report["build"] is not None and args.keep_build:
            print(f"kept the build at {workdir / 'build'} (logs in {workdir})")
        elif failed and any(workdir.iterdir()):
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
