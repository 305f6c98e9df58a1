"""Benchmark harness shared by every area: process CPU and memory readers, measured child processes
(the build, heavy runs), the plug-in types (Context, Workload, Target), report tables.

The server under load (Server, http_request, the load generators) is in bench/load.py."""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import contract

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # every server the bench starts binds here only
RATE_LIMIT = "100000000"
NOISE_PCT = 15  # other processes' CPU (% of one core) above which a figure is noisy


# ---- small utilities ------------------------------------------------------------------------


def now_s() -> float:
    return time.perf_counter()


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (values need not be sorted)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-pct * len(ordered) // 100))))
    return ordered[rank - 1]


def proc_status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def proc_pss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def proc_mappings_mib(pid: int, most: int = 8) -> list[tuple[str, float]]:
    """The process's largest resident mappings (smaps Rss, MiB), by file (a library by its
    package, an artifact by its last two path parts) or "[anon]" and "[heap]"."""
    sizes: dict[str, int] = {}
    name = "[anon]"
    try:
        for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):  # a mapping's header line
                path = " ".join(parts[5:])
                package = path.split("site-packages/")[-1].split("/")[0]
                name = (
                    (path or "[anon]")
                    if path.startswith("[") or not path
                    else (package if "site-packages/" in path else "/".join(path.split("/")[-2:]))
                )
            elif parts[0] == "Rss:":
                sizes[name] = sizes.get(name, 0) + int(parts[1])
    except (OSError, ValueError, IndexError):
        return []
    ranked = sorted(sizes.items(), key=lambda item: -item[1])[:most]
    return [(label, round(kib / 1024, 1)) for label, kib in ranked]


def descendants(pid: int) -> list[int]:
    """pid and every process below it (from /proc/*/stat parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_rss_kib(pid: int) -> int:
    return sum(proc_status_kib(p, "VmRSS") or 0 for p in descendants(pid))


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


def machine_busy_s() -> float:
    """CPU seconds spent by every CPU on anything but idle/iowait since boot."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def own_cpu_s() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class CpuMeter:
    """Splits the machine's CPU use over a window into: the watched process tree (the server),
    this harness, its finished children (wrk, the build) and everybody else ("other": noise
    from unrelated processes; high values make the figures unreliable)."""

    def __init__(self, watched_pid: int | None = None):
        self.watched_pid = watched_pid
        self.wall0 = now_s()
        self.busy0 = machine_busy_s()
        self.self0, self.kids0 = own_cpu_s()
        self.tree0 = self._tree()

    def _tree(self) -> dict[int, float]:
        if self.watched_pid is None:
            return {}
        return {pid: proc_cpu_s(pid) for pid in descendants(self.watched_pid)}

    def stop(self) -> dict:
        wall = max(now_s() - self.wall0, 1e-9)
        busy = machine_busy_s() - self.busy0
        self1, kids1 = own_cpu_s()
        tree1 = self._tree()
        watched = sum(t - self.tree0.get(pid, 0.0) for pid, t in tree1.items())
        harness, children = self1 - self.self0, kids1 - self.kids0
        other = max(0.0, busy - watched - harness - children)
        pct = lambda v: round(100 * v / wall, 1)  # noqa: E731  (% of one core)
        return {
            "wall_s": round(wall, 2),
            "watched_s": round(watched, 3),
            "machine_pct": pct(busy),
            "watched_pct": pct(watched),
            "harness_pct": pct(harness),
            "children_pct": pct(children),
            "other_pct": pct(other),
        }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            timeout=10,
            capture_output=True,
            text=True,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            timeout=10,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def current_version(build_dir: Path) -> Path | None:
    """The published version directory of build_dir, or None."""
    return contract.current_version_dir(build_dir)


def stop_process(proc: subprocess.Popen, name: str, timeout: float = 10.0) -> None:
    """SIGTERM the process we started and everything it started (GNU time, for one, does not
    pass SIGTERM on), wait, then SIGKILL whatever of that tree is left."""
    if proc.poll() is not None:
        return
    tree = descendants(proc.pid)
    for pid in reversed(tree):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"{name} (pid {proc.pid}) did not stop on SIGTERM; killing it")
        proc.kill()
        proc.wait(timeout=timeout)
    deadline = now_s() + timeout
    for pid in tree[1:]:
        while Path(f"/proc/{pid}").exists() and now_s() < deadline:
            time.sleep(0.05)
        if Path(f"/proc/{pid}").exists():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# ---- measured child processes: the build, and areas' heavy runs -----------------------------


@dataclass
class ProcessResult:
    wall_s: float
    peak_rss_mib: float
    peak_rss_method: str
    tree_peak_rss_mib: float
    exit_code: int
    cpu: dict


def measure_process(
    cmd: list[str], log_path: Path, timeout_s: float, name: str, env: dict[str, str] | None = None
) -> ProcessResult:
    """Run cmd (cwd: the repository) with output to log_path; wall time and peak RSS (GNU
    `/usr/bin/time -v` when present, plus the sampled peak over its process tree).
    RuntimeError when it fails or times out, with the log's tail."""
    time_file = log_path.with_suffix(".time")
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        cmd = [str(gnu_time), "-v", "-o", str(time_file)] + cmd
        method = "/usr/bin/time -v"
    else:
        method = "getrusage(RUSAGE_CHILDREN)"
    log(f"{name}: {' '.join(cmd)} (log: {log_path})")
    peak_tree = 0
    meter = CpuMeter()
    with open(log_path, "wb") as sink:
        started = now_s()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = started + timeout_s
            while proc.poll() is None:
                if now_s() > deadline:
                    raise RuntimeError(f"{name} did not finish in {timeout_s:.0f} s")
                peak_tree = max(peak_tree, tree_rss_kib(proc.pid))
                time.sleep(0.1)
            wall = now_s() - started
        finally:
            stop_process(proc, name)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        raise RuntimeError(f"{name} failed ({proc.returncode}):\n" + "\n".join(tail))
    peak_kib = None
    if method.startswith("/usr/bin/time"):
        for line in time_file.read_text().splitlines():
            if "Maximum resident set size" in line:
                peak_kib = int(line.rsplit(":", 1)[1])
    if peak_kib is None:
        # the largest waited-for child so far, in KiB (exact for the build, the first child)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        method = "getrusage(RUSAGE_CHILDREN)"
    return ProcessResult(
        round(wall, 2),
        round(peak_kib / 1024, 1),
        method,
        round(peak_tree / 1024, 1),
        proc.returncode,
        meter.stop(),
    )


@dataclass
class BuildResult(ProcessResult):
    out_dir: str = ""
    version: str | None = None
    datasets: str | None = None
    only: list[str] | None = None
    area_s: dict[str, float] = field(default_factory=dict)  # from "<area>: done in X s"


AREA_DONE = re.compile(r"\b(\w+): done in ([0-9.]+) s\s*$")


def measure_build(
    out_dir: Path,
    log_path: Path,
    timeout_s: float,
    datasets: Path | None = None,
    only: list[str] | None = None,
) -> BuildResult:
    """`python -m pipeline build --out out_dir [--datasets D] [--only AREA ...]`: wall time,
    peak RSS and each area's build seconds as the pipeline logs them."""
    cmd = [sys.executable, "-m", "pipeline", "build", "--out", str(out_dir)]
    if datasets is not None:
        cmd += ["--datasets", str(datasets)]
    if only:
        cmd += ["--only", *only]
    measured = measure_process(cmd, log_path, timeout_s, "build")
    area_s = {}
    for line in log_path.read_text(errors="replace").splitlines():
        match = AREA_DONE.search(line)
        if match and match[1] in contract.AREAS:
            area_s[match[1]] = float(match[2])
    version = current_version(out_dir)
    return BuildResult(
        **asdict(measured),
        out_dir=str(out_dir),
        version=version.name if version else None,
        datasets=None if datasets is None else str(datasets),
        only=list(only) if only else None,
        area_s=area_s,
    )


# ---- the plug-in interface of bench/<area>.py (documented in bench/run.py) -------------------


@dataclass(frozen=True)
class Context:
    """What an area module gets: the build it measures, a real API key, the CLI arguments."""

    build_dir: Path
    version_dir: Path
    manifest: dict
    api_key: str  # valid on the benchmarked servers; put it in URLs as api_key=...
    args: argparse.Namespace
    workdir: Path  # scratch space, deleted after the run (kept when it failed)
    seed: int


@dataclass(frozen=True)
class Workload:
    """URLs to rotate through under load, and the targets they must meet (1-worker run)."""

    area: str
    name: str  # unique within the area; also the JSON key
    label: str  # the table's row label
    paths: list[str]
    ratio_target: float | None = None  # req/s >= ratio_target x /health's around it
    p50_target_ms: float | None = None
    bare_target: float | None = None  # req/s >= bare_target x the bare aiohttp app's around it
    p99_target_ms: float | None = None  # at the run's connections
    connections: int | None = None  # None: the run's --connections
    method: str = "GET"  # or "POST" (sent with an empty body)
    expect_status: int = 200  # any other answer counts as an error


@dataclass(frozen=True)
class Target:
    """One row of the targets table; passed is None when it could not be judged."""

    name: str
    value: float | None
    unit: str
    goal: str
    passed: bool | None
    note: str = ""

    def row(self) -> dict:
        """The report's (and bench.json's) form."""
        return {
            "target": self.name,
            "value": self.value,
            "unit": self.unit,
            "goal": self.goal,
            "pass": self.passed,
            "note": self.note,
        }


# ---- report ---------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list], aligns: str | None = None) -> str:
    """A plain-text table; aligns has one "l" or "r" a column (default: first left, rest right)."""
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    aligns = aligns or "l" + "r" * (len(headers) - 1)

    def fmt(row):
        return "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, aligns)
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), rule, *(fmt(r) for r in cells)])


def verdict(ok: bool | None) -> str:
    """PASS, FAIL, or n/a for None."""
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def wait_quiet(max_wait_s: float) -> float | None:
    """Wait (at most max_wait_s) until other processes use less than NOISE_PCT of a core over
    2 s; return the last figure seen."""
    deadline = now_s() + max_wait_s
    other = None
    while True:
        meter = CpuMeter()
        time.sleep(2.0)
        other = meter.stop()["other_pct"]
        if other < NOISE_PCT:
            log(f"machine quiet (other processes {other:.0f}% of a core)")
            return other
        if now_s() >= deadline:
            log(
                f"machine still busy after {max_wait_s:.0f} s (other processes {other:.0f}% of a "
                "core); measuring anyway"
            )
            return other
        log(f"waiting for a quiet machine: other processes use {other:.0f}% of a core")
