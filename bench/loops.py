"""uvloop against asyncio's own event loop: two servers (WEATHERAPI_EVENT_LOOP=uvloop and
=asyncio) and two bare aiohttp apps run side by side, and each workload is measured on both
loops back to back, the order alternating round after round; a row is the median of the
rounds' uvloop / asyncio req/s ratios, with their range."""

from __future__ import annotations

from pathlib import Path

from bench.harness import Workload, log, table
from bench.load import Server
from bench.serverrun import BARE, BareServer, check_workload, measure_workload

LOOPS = ("uvloop", "asyncio")
WARMUP_S = 1.0
MEASURE_S = 3.0
PER_AREA = 2  # each area's first ratio workloads; /health and the bare app always


def chosen(works: list[Workload]) -> list[Workload]:
    """/health, then each area's first PER_AREA workloads with a ratio target."""
    out, per_area = [works[0]], {}
    for work in works[1:]:
        if work.ratio_target is not None and per_area.get(work.area, 0) < PER_AREA:
            per_area[work.area] = per_area.get(work.area, 0) + 1
            out.append(work)
    return out


def compare_loops(
    build_dir: Path, works: list[Workload], load, args, workdir: Path, keys_file: Path
) -> dict:
    """Rows of {workload, rps per loop, median ratio and range}; every process is stopped."""
    servers = {
        loop: Server(
            build_dir,
            1,
            workdir / f"server-{loop}.log",
            keys_file,
            {"WEATHERAPI_EVENT_LOOP": loop},
        )
        for loop in LOOPS
    }
    bares = {loop: BareServer(workdir / f"bare-{loop}.log", loop) for loop in LOOPS}
    rows = []
    try:
        for proc in [*servers.values(), *bares.values()]:
            proc.start()
        for work in [BARE, *chosen(works)]:
            targets = bares if work is BARE else servers
            if work is not BARE:
                check_workload(servers["uvloop"].port, work)
            rows.append(_compare(work, targets, load, args))
    finally:
        for proc in [*servers.values(), *bares.values()]:
            proc.stop()
    return {"rounds": args.rounds, "rows": rows}


def _compare(work: Workload, targets: dict[str, Server], load, args) -> dict:
    """One workload on both loops, args.rounds times, the first loop alternating."""
    rps: dict[str, list[float]] = {loop: [] for loop in LOOPS}
    cpu: dict[str, list[float]] = {loop: [] for loop in LOOPS}
    for n in range(args.rounds):
        order = LOOPS if n % 2 == 0 else LOOPS[::-1]
        for loop in order:
            log(f"event loops: {work.area} {work.name} on {loop}, round {n + 1}")
            measured = measure_workload(
                targets[loop], load, work, args.connections, WARMUP_S, MEASURE_S
            )
            rps[loop].append(measured.rps)
            cpu[loop].append(measured.server_cpu_us_per_req or float("nan"))
    ratios = sorted(round(u / a, 3) for u, a in zip(rps["uvloop"], rps["asyncio"]) if a)
    return {
        "area": work.area,
        "name": work.name,
        "label": work.label,
        "rps": rps,
        "server_cpu_us_per_req": cpu,
        "ratio": ratios[(len(ratios) - 1) // 2] if ratios else None,
        "ratio_range": [ratios[0], ratios[-1]] if ratios else None,
    }


def print_loops(report: dict) -> None:
    """The comparison's table, when it ran."""
    loops = report.get("event_loops")
    if not loops:
        return
    print(f"\n## Event loop: uvloop / asyncio, same run, {loops['rounds']} alternating rounds")
    rows = []
    for row in loops["rows"]:
        low, high = row["ratio_range"] or (None, None)
        rows.append(
            [
                row["area"],
                row["label"],
                f"{_median(row['rps']['asyncio']):.0f}",
                f"{_median(row['rps']['uvloop']):.0f}",
                "" if row["ratio"] is None else f"{row['ratio']:.2f} ({low:.2f}-{high:.2f})",
                f"{_median(row['server_cpu_us_per_req']['asyncio']):.1f}",
                f"{_median(row['server_cpu_us_per_req']['uvloop']):.1f}",
            ]
        )
    headers = ["area", "endpoint", "asyncio req/s", "uvloop req/s", "uvloop / asyncio"]
    print(table(headers + ["asyncio us/req", "uvloop us/req"], rows))


def _median(values: list[float]) -> float:
    """The lower median."""
    return sorted(values)[(len(values) - 1) // 2] if values else float("nan")
