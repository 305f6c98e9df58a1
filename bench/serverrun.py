"""One server run over every workload, beside the bare aiohttp reference (bench/bare_app.py):
each workload's req/s as a ratio to the server's /health and to the bare application, both
measured just before and just after it (this machine's speed drifts within minutes)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from bench.harness import HOST, ROOT, CpuMeter, Workload, log
from bench.load import LoadResult, Server, http_request

# The references are measured again after each workload (REFERENCE_S at most, after
# REFERENCE_WARMUP_S): each ratio is to the mean of the runs just before and just after it.
REFERENCE_S = 3.0
REFERENCE_WARMUP_S = 1.0
BARE = Workload(
    "reference",
    "bare",
    "bare aiohttp app, small JSON (the limit)",
    [f"/bare/{i}" for i in range(100)],
)


class BareServer(Server):
    """The bare aiohttp application (bench/bare_app.py) in a process of its own."""

    def __init__(self, log_path: Path, loop: str):
        super().__init__(ROOT, 1, log_path)
        self.loop = loop

    def command(self) -> list[str]:
        """`python -m bench.bare_app` on HOST, a free port."""
        return [sys.executable, "-m", "bench.bare_app", "--host", HOST, "--loop", self.loop]


def check_workload(port: int, work: Workload) -> None:
    """Every distinct URL answers work.expect_status, with valid JSON when the answer says it is
    JSON (sampled for the long lists)."""
    import json

    sample = work.paths if len(work.paths) <= 100 else work.paths[:50]
    for path in sample:
        status, content_type, body = http_request(port, path, work.method)
        if status != work.expect_status:
            raise RuntimeError(
                f"{work.area} {work.name}: {work.method} {path} answered {status} "
                f"(expected {work.expect_status}): {body[:300]!r}"
            )
        if "json" in content_type:
            json.loads(body)


def measure_server(
    build_dir: Path,
    workers: int,
    works: list[Workload],
    load,
    args,
    workdir: Path,
    keys_file: Path | None,
    env: dict[str, str] | None = None,
    label: str = "",
) -> dict:
    """Start a server and the bare application, check then load each workload in turn
    (works[0] is the /health baseline), and read the server's memory; both always stopped."""
    label = label or f"{workers} worker{'s' if workers > 1 else ''}"
    tag = label.replace(" ", "-").replace(",", "")
    server = Server(build_dir, workers, workdir / f"server-{tag}.log", keys_file, env)
    bare = BareServer(workdir / f"bare-{tag}.log", args.event_loop)
    result: dict = {"workers": workers, "label": label, "endpoints": [], "env": env or {}}
    try:
        log(f"starting the server ({label}) and the bare aiohttp app ({args.event_loop})")
        server.start()
        result["bound_s"] = round(server.bound_s, 3)
        result["ready_s"] = round(server.ready_s, 3)
        result["port"] = server.port
        result["memory_after_ready"] = server.memory()
        log(f"ready in {server.ready_s:.2f} s on port {server.port}")
        bare.start()
        for work in works:
            check_workload(server.port, work)
        check_workload(bare.port, BARE)
        rounds, pairs = _run_schedule(server, bare, works, load, args, workers, label)
        result["endpoints"] = _rows(works, rounds, pairs, args)
        result["memory_after_load"] = server.memory()
        result["log_errors"] = [
            ln for ln in server.log_tail(400).splitlines() if " ERROR " in ln or "Traceback" in ln
        ][:10]
    finally:
        server.stop()
        bare.stop()
    return result


def _run_schedule(server, bare, works, load, args, workers, label):
    """Measure every workload in the schedule's order, each followed by both references;
    return ({index: [rounds]}, [(health, bare) reference pairs])."""
    duration = args.duration if workers == 1 else args.duration_w2
    before: tuple[LoadResult, LoadResult] | None = None
    rounds: dict[int, list[LoadResult]] = {}
    pairs: list[tuple[LoadResult, LoadResult]] = []
    for n, work in _schedule(works, args.rounds):
        if workers > 1 and work.connections == 1:
            continue
        conns = work.connections or args.connections
        log(
            f"{label}: {work.area} {work.name}: warmup {args.warmup:.1f} s, measure "
            f"{duration:.1f} s, {conns} connection(s)"
        )
        measured = measure_workload(server, load, work, conns, args.warmup, duration)
        if before is None:  # /health, first: the bare app as long, right after it
            before = (measured, measure_workload(bare, load, BARE, conns, args.warmup, duration))
            pairs.append(before)
        elif work.connections is None:  # comparable with the references only at their width
            after = (
                measure_workload(server, load, works[0], conns, REFERENCE_WARMUP_S, REFERENCE_S),
                measure_workload(bare, load, BARE, conns, REFERENCE_WARMUP_S, REFERENCE_S),
            )
            _relate(measured, before, after)
            before = after
            pairs.append(after)
        rounds.setdefault(n, []).append(measured)
        if server.proc and server.proc.poll() is not None:
            raise RuntimeError(f"server died during {work.name}:\n{server.log_tail()}")
    return rounds, pairs


def _rows(works, rounds, pairs, args) -> list[dict]:
    """The table's rows: /health (its ratio to the bare app over every reference pair), the
    bare app itself, then each workload's median round."""
    rows = []
    for n, measured in sorted(rounds.items()):
        work = works[n]
        chosen = _median_round(measured)
        if n == 0:
            _health_to_bare(chosen, pairs)
        rows.append(_row(work, work.connections or args.connections, chosen))
        if n == 0 and pairs:
            rows.append(_row(BARE, args.connections, _bare_row(pairs)))
    return rows


def _row(work: Workload, conns: int, measured: LoadResult) -> dict:
    """One endpoint row of the report."""
    return {
        "area": work.area,
        "name": work.name,
        "label": work.label,
        "method": work.method,
        "connections": conns,
        "distinct_urls": len(set(work.paths)),
        "ratio_target": work.ratio_target,
        "p50_target_ms": work.p50_target_ms,
        "bare_target": work.bare_target,
        "p99_target_ms": work.p99_target_ms,
        **asdict(measured),
    }


def _health_to_bare(health: LoadResult, pairs: list[tuple[LoadResult, LoadResult]]) -> None:
    """/health's ratio to the bare app: the median over every pair measured back to back."""
    ratios = [round(h.rps / b.rps, 3) for h, b in pairs if b.rps]
    if ratios:
        health.ratio_to_bare = _median(ratios)
        health.extra["round_ratios_bare"] = ratios
    cpu = [_cpu_ratio(h, b) for h, b in pairs]
    health.cpu_ratio_to_bare = _median([c for c in cpu if c is not None] or [0.0]) or None


def _bare_row(pairs: list[tuple[LoadResult, LoadResult]]) -> LoadResult:
    """The bare app's row: its first (full-length) run, its ratio to /health the median over
    every pair."""
    first = pairs[0][1]
    ratios = [round(b.rps / h.rps, 3) for h, b in pairs if h.rps]
    first.ratio_to_bare = first.cpu_ratio_to_bare = 1.0
    if ratios:
        first.ratio_to_health = _median(ratios)
        first.extra["round_ratios"] = ratios
    first.extra["reference_rps"] = [round(b.rps) for _, b in pairs]
    return first


def _schedule(works: list[Workload], rounds: int) -> list[tuple[int, Workload]]:
    """(index, workload) in measuring order: every workload once, then the ratio workloads
    (those at the run's width, /health excluded) again in `rounds` - 1 more rounds, so each
    ratio is the median of `rounds` taken minutes apart (this machine's speed drifts)."""
    again = [(n, w) for n, w in enumerate(works) if n and w.connections is None]
    return list(enumerate(works)) + again * (max(1, rounds) - 1)


def _median(values: list[float]) -> float:
    """The median (the lower of the middle two, so that it is a measured value)."""
    return sorted(values)[(len(values) - 1) // 2]


def _median_round(measured: list[LoadResult]) -> LoadResult:
    """The round whose ratio to /health is the median (the lower of the middle two), with every
    round's ratios in extra["round_ratios"] and ["round_ratios_bare"], and the median ratio to
    the bare app; a single round as it is."""
    if len(measured) == 1:
        return measured[0]
    if any(m.ratio_to_health is None for m in measured):
        chosen = measured[0]
    else:
        chosen = sorted(measured, key=lambda m: m.ratio_to_health or 0.0)[(len(measured) - 1) // 2]
        chosen.extra["round_ratios"] = [m.ratio_to_health for m in measured]
    bare = [m.ratio_to_bare for m in measured if m.ratio_to_bare is not None]
    if len(bare) == len(measured):
        chosen.ratio_to_bare = _median(bare)
        chosen.extra["round_ratios_bare"] = bare
    cpu = [m.cpu_ratio_to_bare for m in measured if m.cpu_ratio_to_bare is not None]
    if len(cpu) == len(measured):
        chosen.cpu_ratio_to_bare = _median(cpu)
        chosen.extra["round_cpu_ratios_bare"] = cpu
    # Every round's unexpected answers count (the warnings and --strict read the chosen row).
    others = [m for m in measured if m is not chosen]
    chosen.non200 += sum(m.non200 for m in others)
    chosen.socket_errors += sum(m.socket_errors for m in others)
    chosen.first_bad_status = chosen.first_bad_status or next(
        (m.first_bad_status for m in others if m.first_bad_status), None
    )
    return chosen


def _relate(
    measured: LoadResult,
    before: tuple[LoadResult, LoadResult],
    after: tuple[LoadResult, LoadResult],
) -> None:
    """The workload's ratios to /health and to the bare app, each to the mean of the runs just
    before and just after it: a ratio to one run at the start would measure the drift."""
    health = (before[0].rps + after[0].rps) / 2
    bare = (before[1].rps + after[1].rps) / 2
    if health:
        measured.ratio_to_health = round(measured.rps / health, 3)
    if bare:
        measured.ratio_to_bare = round(measured.rps / bare, 3)
    measured.cpu_ratio_to_health = _cpu_ratio(measured, before[0], after[0])
    measured.cpu_ratio_to_bare = _cpu_ratio(measured, before[1], after[1])
    measured.extra["health_rps"] = [round(before[0].rps), round(after[0].rps)]
    measured.extra["bare_rps"] = [round(before[1].rps), round(after[1].rps)]


def _cpu_ratio(measured: LoadResult, *references: LoadResult) -> float | None:
    """The references' mean server CPU time per request over the workload's: a ratio that
    other processes' load disturbs far less than req/s (it still moves with cache misses)."""
    cpu = [r.server_cpu_us_per_req for r in references if r.server_cpu_us_per_req]
    if not cpu or not measured.server_cpu_us_per_req:
        return None
    return round(sum(cpu) / len(cpu) / measured.server_cpu_us_per_req, 3)


def measure_workload(
    server: Server, load, work: Workload, connections: int, warmup_s: float, duration_s: float
) -> LoadResult:
    """Warm up, then measure one workload with the server's CPU time per request."""
    if warmup_s > 0:
        load.run(server.port, work, connections, warmup_s)
    assert server.proc is not None
    meter = CpuMeter(server.proc.pid)
    measured = load.run(server.port, work, connections, duration_s)
    measured.extra["cpu"] = meter.stop()
    if measured.requests:
        measured.server_cpu_us_per_req = round(
            measured.extra["cpu"]["watched_s"] / measured.requests * 1e6, 1
        )
    return measured
