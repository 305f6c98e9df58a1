"""Benchmark harness shared by every area: process CPU and memory readers, the build and server
runners, an HTTP client, report tables. Load generators are in bench/load.py."""

from __future__ import annotations

import http.client
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
RATE_LIMIT = "100000000"
MIB = 1024 * 1024
NOISE_PCT = 15               # other processes' CPU (% of one core) above which a figure is noisy


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


def descendants(pid: int) -> list[int]:
    """pid and every process below it (from /proc/*/stat parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
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
        fields = stat[stat.rindex(")") + 2:].split()
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
        return {"wall_s": round(wall, 2), "watched_s": round(watched, 3),
                "machine_pct": pct(busy), "watched_pct": pct(watched),
                "harness_pct": pct(harness), "children_pct": pct(children),
                "other_pct": pct(other)}


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, timeout=10,
                             capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, timeout=10, capture_output=True, text=True)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def current_version(build_dir: Path) -> Path | None:
    import contract
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


# ---- 1. the build ---------------------------------------------------------------------------

@dataclass
class BuildResult:
    wall_s: float
    peak_rss_mib: float
    peak_rss_method: str
    tree_peak_rss_mib: float
    exit_code: int
    out_dir: str
    version: str | None
    cpu: dict


def measure_build(out_dir: Path, log_path: Path, timeout_s: float) -> BuildResult:
    cmd = [sys.executable, "-m", "pipeline", "build", "--out", str(out_dir)]
    time_file = log_path.with_suffix(".time")
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        cmd = [str(gnu_time), "-v", "-o", str(time_file)] + cmd
        method = "/usr/bin/time -v"
    else:
        method = "getrusage(RUSAGE_CHILDREN)"
    log(f"building: {' '.join(cmd)} (log: {log_path})")
    peak_tree = 0
    meter = CpuMeter()
    with open(log_path, "wb") as sink:
        started = now_s()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = started + timeout_s
            while proc.poll() is None:
                if now_s() > deadline:
                    raise RuntimeError(f"build did not finish in {timeout_s:.0f} s")
                peak_tree = max(peak_tree, tree_rss_kib(proc.pid))
                time.sleep(0.1)
            wall = now_s() - started
        finally:
            stop_process(proc, "build")
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        raise RuntimeError("build failed:\n" + "\n".join(tail))
    peak_kib = None
    if method.startswith("/usr/bin/time"):
        for line in time_file.read_text().splitlines():
            if "Maximum resident set size" in line:
                peak_kib = int(line.rsplit(":", 1)[1])
    if peak_kib is None:
        # the largest waited-for child so far, in KiB; the build is the harness's first child
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        method = "getrusage(RUSAGE_CHILDREN)"
    version = current_version(out_dir)
    return BuildResult(round(wall, 2), round(peak_kib / 1024, 1), method,
                       round(peak_tree / 1024, 1), proc.returncode, str(out_dir),
                       version.name if version else None, meter.stop())


# ---- the server -----------------------------------------------------------------------------

class Server:
    """`python -m server` on 127.0.0.1, port 0, a huge rate limit; always stopped on exit."""

    def __init__(self, build_dir: Path, workers: int, log_path: Path):
        self.build_dir, self.workers, self.log_path = build_dir, workers, log_path
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.bound_s = self.ready_s = float("nan")

    def start(self, timeout_s: float = 60.0) -> None:
        env = dict(os.environ)
        # Config reads WEATHERAPI_<FIELD>: the field is rate_limit_per_minute. The short
        # WEATHERAPI_RATE_LIMIT is set as well, in case a later version reads that name.
        env.update({"WEATHERAPI_RATE_LIMIT_PER_MINUTE": RATE_LIMIT,
                    "WEATHERAPI_RATE_LIMIT": RATE_LIMIT,
                    "WEATHERAPI_RATE_LIMIT_BURST": RATE_LIMIT,
                    "WEATHERAPI_HOST": HOST,
                    "WEATHERAPI_ACCESS_LOG": "0",
                    "PYTHONUNBUFFERED": "1"})
        env.pop("WEATHERAPI_KEYS_FILE", None)
        cmd = [sys.executable, "-m", "server", "--build", str(self.build_dir), "--host", HOST,
               "--port", "0", "--workers", str(self.workers)]
        self._log = open(self.log_path, "wb")
        started = now_s()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=self._log)
        deadline = started + timeout_s
        line = self._first_line(deadline)
        self.bound_s = now_s() - started
        # "serving <dir>/current on http://127.0.0.1:PORT with N worker(s)"
        try:
            url = line.split(" on ", 1)[1].split()[0]
            parsed = urllib.parse.urlsplit(url)
            self.port = parsed.port
            if parsed.hostname != HOST:
                raise RuntimeError(f"server bound {parsed.hostname}, expected {HOST}")
        except (IndexError, ValueError) as exc:
            raise RuntimeError(f"unexpected first line from the server: {line!r}") from exc
        threading.Thread(target=self._drain, daemon=True).start()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; "
                                   f"log tail:\n{self.log_tail()}")
            if now_s() > deadline:
                raise RuntimeError(f"server not ready within {timeout_s:.0f} s")
            try:
                status, _ = http_get(self.port, "/ready", timeout=1.0)
            except OSError:
                status = None
            if status == 200:
                self.ready_s = now_s() - started
                return
            time.sleep(0.01)

    def _first_line(self, deadline: float) -> str:
        assert self.proc and self.proc.stdout
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        buffer = b""
        try:
            while b"\n" not in buffer:
                remaining = deadline - now_s()
                if remaining <= 0:
                    raise RuntimeError("server printed no address line in time")
                if not selector.select(timeout=min(remaining, 0.5)):
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"server exited with {self.proc.returncode}; "
                                           f"log tail:\n{self.log_tail()}")
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"server closed stdout; log tail:\n{self.log_tail()}")
                buffer += chunk
        finally:
            selector.close()
        return buffer.split(b"\n", 1)[0].decode(errors="replace")

    def _drain(self) -> None:
        try:
            while self.proc and self.proc.stdout and self.proc.stdout.read(65536):
                pass
        except (OSError, ValueError):
            pass

    def memory(self) -> dict:
        assert self.proc
        pids = descendants(self.proc.pid)
        per = []
        for pid in pids:
            rss, hwm, pss = (proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM"),
                             proc_pss_kib(pid))
            if rss is None:
                continue
            per.append({"pid": pid, "rss_mib": round(rss / 1024, 1),
                        "hwm_mib": round((hwm or 0) / 1024, 1),
                        "pss_mib": round((pss or 0) / 1024, 1)})
        main = next((p for p in per if p["pid"] == self.proc.pid), None)
        return {"main_rss_mib": main["rss_mib"] if main else None,
                "main_pss_mib": main["pss_mib"] if main else None,
                "total_rss_mib": round(sum(p["rss_mib"] for p in per), 1),
                "total_pss_mib": round(sum(p["pss_mib"] for p in per), 1),
                "max_rss_mib": max((p["rss_mib"] for p in per), default=None),
                "processes": per}

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, "server")
            if self.proc.stdout:
                self.proc.stdout.close()
        if getattr(self, "_log", None):
            self._log.close()


def http_get(port: int, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()



# ---- report ---------------------------------------------------------------------------------

def table(headers: list[str], rows: list[list], aligns: str | None = None) -> str:
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    aligns = aligns or "l" + "r" * (len(headers) - 1)

    def fmt(row):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(row, widths, aligns))
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(headers), rule, *(fmt(r) for r in cells)])


def verdict(ok: bool | None) -> str:
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
            log(f"machine still busy after {max_wait_s:.0f} s (other processes {other:.0f}% of a "
                "core); measuring anyway")
            return other
        log(f"waiting for a quiet machine: other processes use {other:.0f}% of a core")
