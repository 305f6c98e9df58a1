"""The printed report: header, build, one table per server run, and the targets table (each
area's own section is printed by its print_section() between the last two)."""

from __future__ import annotations

from bench.harness import table, verdict


def print_figures(report: dict) -> None:
    """Header, the build, and one table per server run with every area's workloads."""
    meta = report["meta"]
    print()
    print("=" * 100)
    print(
        f"weatherapi benchmark  {meta['started']}  commit {meta['commit']}  "
        f"{meta['cpus']} CPUs  python {meta['python']}"
    )
    print(
        f"build dir {meta['build_dir']}  version {meta['version']}  load generator "
        f"{meta['loadgen']} ({meta['loadgen_version']}), {meta['connections']} connections, "
        f"{meta['threads']} thread(s), event loop {meta.get('event_loop', 'asyncio')}"
    )
    skipped = "; ".join(f"{area} ({why})" for area, why in meta["skipped_areas"].items())
    print(
        f"areas: {', '.join(meta['areas']) or 'none'}"
        + (f"; skipped: {skipped}" if skipped else "")
    )
    print("=" * 100)
    print_build(report["build"], meta)
    for server in report["servers"]:
        print_server(server, meta)


def print_build(build: dict | None, meta: dict) -> None:
    """Wall time, peak memory and CPU of the build, and each area's seconds from its log."""
    print(
        "\n## Default build"
        if not build or not build["only"]
        else f"\n## Build of {', '.join(build['only'])} (--areas)"
    )
    if not build:
        print(f"skipped (reusing {meta['build_dir']})")
        return
    print(
        table(
            ["metric", "value"],
            [
                ["wall time", f"{build['wall_s']:.1f} s"],
                *(
                    [f"  {area} (from the build log)", f"{seconds:.1f} s"]
                    for area, seconds in build["area_s"].items()
                ),
                [f"peak RSS ({build['peak_rss_method']})", f"{build['peak_rss_mib']:.0f} MiB"],
                [
                    "peak RSS of the process tree (sampled 10/s)",
                    f"{build['tree_peak_rss_mib']:.0f} MiB",
                ],
                [
                    "build CPU (% of one core) / other processes' CPU",
                    f"{build['cpu']['children_pct']:.0f}% / {build['cpu']['other_pct']:.0f}%",
                ],
            ],
        )
    )


def target_marks(row: dict) -> str:
    """PASS/FAIL of a 1-worker row's ratio and p50 targets."""
    marks = []
    ratio, goal = row["ratio_to_health"], row["ratio_target"]
    if goal is not None and ratio is not None:
        marks.append(f"{verdict(ratio >= goal)} (>= {goal:g})")
    goal = row["p50_target_ms"]
    if goal is not None:
        marks.append(f"{verdict(row['p50_ms'] <= goal)} (p50 <= {goal:g} ms)")
    return ", ".join(marks)


def _ratio_text(ratio: float | None, rounds: list[float] | None) -> str:
    """A ratio (to /health or the bare app), with the range of its rounds when there were
    several."""
    if ratio is None:
        return ""
    return f"{ratio:.2f}" if not rounds else f"{ratio:.2f} ({min(rounds):.2f}-{max(rounds):.2f})"


def print_server(server: dict, meta: dict) -> None:
    """Start time, memory, and the load figures of one server run."""
    print(f"\n## Server, {server['label']}")
    if "error" in server:
        print(f"ERROR: {server['error']}")
        return
    mem = server.get("memory_after_load") or {}
    ready = server.get("memory_after_ready") or {}
    print(
        f"address printed after {server['bound_s']:.2f} s, /ready 200 after "
        f"{server['ready_s']:.2f} s"
    )
    print(
        f"memory after ready: VmRSS {ready.get('total_rss_mib')} MiB, "
        f"PSS {ready.get('total_pss_mib')} MiB"
    )
    print(
        f"memory after load:  VmRSS {mem.get('total_rss_mib')} MiB "
        f"(largest process {mem.get('max_rss_mib')} MiB), PSS {mem.get('total_pss_mib')} MiB, "
        f"private (RssAnon) {mem.get('total_anon_mib')} MiB over {len(mem.get('processes', []))} process(es)"
    )
    if mem.get("largest_mappings"):
        print(
            "largest resident mappings after load (MiB): "
            + ", ".join(f"{name} {mib:g}" for name, mib in mem["largest_mappings"])
        )
    rows = []
    for r in server["endpoints"]:
        ratio = r["ratio_to_health"]
        cpu = r["extra"].get("cpu", {})
        gen = cpu.get("children_pct") if meta["loadgen"] == "wrk" else cpu.get("harness_pct")
        label = r["label"] if r["method"] == "GET" else f"{r['method']} {r['label']}"
        rows.append(
            [
                r["area"],
                label,
                r["connections"],
                f"{r['rps']:.0f}",
                _ratio_text(ratio, r["extra"].get("round_ratios")),
                _ratio_text(r.get("ratio_to_bare"), r["extra"].get("round_ratios_bare")),
                f"{r['p50_ms']:.2f}",
                f"{r['p99_ms']:.2f}",
                r["requests"],
                r["non200"] + r["socket_errors"],
                cpu.get("watched_pct"),
                r["server_cpu_us_per_req"],
                "" if r["cpu_ratio_to_health"] is None else f"{r['cpu_ratio_to_health']:.2f}",
                _ratio_text(r.get("cpu_ratio_to_bare"), r["extra"].get("round_cpu_ratios_bare")),
                gen,
                cpu.get("other_pct"),
                target_marks(r) if server["workers"] == 1 else "",
            ]
        )
    print(
        table(
            [
                "area",
                "endpoint",
                "conns",
                "req/s",
                "x health",
                "x bare",
                "p50 ms",
                "p99 ms",
                "requests",
                "bad/err",
                "srv CPU%",
                "srv us/req",
                "x health CPU",
                "x bare CPU",
                "gen CPU%",
                "other CPU%",
                "target",
            ],
            rows,
            "llrrrrrrrrrrrrrrl",
        )
    )
    if server.get("log_errors"):
        print("server log errors:\n  " + "\n  ".join(server["log_errors"]))


def print_targets(report: dict) -> None:
    """One table of every target, then the warnings."""
    print("\n## Targets")
    rows = [
        [
            t["area"],
            t["target"],
            "-" if t["value"] is None else f"{t['value']:g} {t['unit']}",
            t["goal"],
            verdict(t["pass"]),
            t["note"],
        ]
        for t in report["targets"]
    ]
    print(table(["area", "target", "value", "goal", "verdict", "note"], rows, "llrlll"))
    for warning in report.get("warnings", []):
        print(f"WARNING: {warning}")


def print_workers(report: dict) -> None:
    """2 workers against 1: each endpoint's throughput (both as ratios to the bare app in
    their own run, so that the machine's drift between the runs cancels) and the memory the
    second worker adds. wrk runs on the same 2 CPUs, so 2 workers cannot double anything."""
    runs = {s["workers"]: s for s in report["servers"] if "error" not in s}
    if 1 not in runs or 2 not in runs:
        return
    print("\n## Workers: 2 against 1 (wrk shares the same 2 CPUs with the workers)")
    one = {(r["area"], r["name"]): r for r in runs[1]["endpoints"]}
    rows = []
    for row in runs[2]["endpoints"]:
        base = one.get((row["area"], row["name"]))
        if not base or row["area"] == "reference":
            continue
        gain = (
            f"{row['ratio_to_bare'] / base['ratio_to_bare']:.2f}"
            if row.get("ratio_to_bare") and base.get("ratio_to_bare")
            else ""
        )
        rows.append([row["area"], row["label"], f"{base['rps']:.0f}", f"{row['rps']:.0f}", gain])
    print(table(["area", "endpoint", "1 worker req/s", "2 workers req/s", "2 / 1 (x bare)"], rows))
    added = worker_memory(runs[1], runs[2])
    if added:
        print(
            "memory the second worker adds after load: "
            + ", ".join(f"{name} {mib:+.1f} MiB" for name, mib in added.items())
            + " (2 workers: a supervising parent and two workers; PSS shares mapped pages)"
        )
    mem = runs[2].get("memory_after_load") or {}
    workers = [p for p in mem.get("processes", []) if p["pid"] != mem.get("main_pid")]
    if workers:
        print(
            "its processes but the parent after load (the workers, multiprocessing's resource "
            "tracker): "
            + "; ".join(
                f"PSS {p['pss_mib']} MiB, VmRSS {p['rss_mib']} MiB, private {p['anon_mib']} MiB"
                for p in workers
            )
            + f"; the parent: PSS {mem.get('main_pss_mib')} MiB"
        )


def worker_memory(one: dict, two: dict) -> dict[str, float]:
    """The after-load memory of the 2-worker server minus the 1-worker one's."""
    a, b = one.get("memory_after_load") or {}, two.get("memory_after_load") or {}
    names = {"PSS": "total_pss_mib", "VmRSS": "total_rss_mib", "private": "total_anon_mib"}
    return {
        name: round(b[key] - a[key], 1)
        for name, key in names.items()
        if a.get(key) is not None and b.get(key) is not None
    }
