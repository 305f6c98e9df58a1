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
import asyncio
import datetime as dt
import http.client
import json
import os
import platform
import random
import resource
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/run.py`
    sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"
RATE_LIMIT = "100000000"
MIB = 1024 * 1024

# ---- targets (from the issue) ---------------------------------------------------------------

RATIO_TARGET = 0.6           # lookup by id, reverse, countries, country detail vs /health
SEARCH_P50_MS = 3.0
BUILD_WALL_S = 60.0
BUILD_PEAK_MIB = 2048.0      # "2 GB", read as 2 GiB
READY_S = 3.0
RESIDENT_MIB = 500.0         # "500 MB", read as MiB
NOISE_PCT = 15               # other processes' CPU (% of one core) above which a figure is noisy

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


# ---- 3. load generation ---------------------------------------------------------------------

@dataclass
class LoadResult:
    requests: int
    duration_s: float
    rps: float
    p50_ms: float
    p99_ms: float
    non200: int
    socket_errors: int
    first_bad_status: int | None = None
    ratio_to_health: float | None = None
    server_cpu_us_per_req: float | None = None   # server CPU time / requests (contention-proof)
    cpu_ratio_to_health: float | None = None     # health's CPU cost / this endpoint's
    extra: dict = field(default_factory=dict)


WRK_LUA = r"""
-- generated by bench/run.py: rotate through PATHS, count non-200, report as one JSON line
local paths = {%(paths)s}
local counter = 0
non200 = 0
bad_status = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = (id or 0) * 7919
end

function request()
  counter = counter + 1
  return wrk.format("GET", paths[(counter %% #paths) + 1])
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
    bad_status = status
  end
end

function done(summary, latency, requests)
  local bad, last = 0, 0
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non200") or 0)
    local s = t:get("bad_status") or 0
    if s ~= 0 then last = s end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%%d,"duration_us":%%d,"p50_us":%%d,"p99_us":%%d,' ..
    '"mean_us":%%.1f,"max_us":%%d,"non200":%%d,"bad_status":%%d,"connect":%%d,"read":%%d,' ..
    '"write":%%d,"status":%%d,"timeout":%%d,"bytes":%%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.mean, latency.max, bad, last, e.connect, e.read, e.write, e.status, e.timeout,
    summary.bytes))
end
"""


def ensure_wrk(allow_install: bool) -> str | None:
    path = shutil.which("wrk")
    if path or not allow_install:
        return path
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        log("wrk not found and not root (or no apt-get): using the Python load generator")
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "wrk"]
    print("wrk not found; running as root: apt-get install -y wrk", flush=True)
    try:
        done = subprocess.run(install, env=env, timeout=300, capture_output=True, text=True)
        if done.returncode != 0:
            print("apt-get install failed; running apt-get update and retrying once", flush=True)
            subprocess.run(["apt-get", "update"], env=env, timeout=300, capture_output=True)
            done = subprocess.run(install, env=env, timeout=300, capture_output=True, text=True)
        if done.returncode != 0:
            log("installing wrk failed:\n" + done.stderr[-800:])
    except (OSError, subprocess.SubprocessError) as exc:
        log(f"installing wrk failed: {exc}")
    return shutil.which("wrk")


class WrkLoad:
    name = "wrk"

    def __init__(self, wrk: str, workdir: Path, threads: int):
        self.wrk, self.workdir, self.threads = wrk, workdir, threads
        version = subprocess.run([wrk, "-v"], capture_output=True, text=True, timeout=10)
        self.version = (version.stdout + version.stderr).strip().splitlines()[0] \
            if (version.stdout + version.stderr).strip() else "wrk"

    def run(self, port: int, paths: list[str], connections: int, seconds: float) -> LoadResult:
        script = self.workdir / f"rotate-{abs(hash(tuple(paths)))}.lua"
        if not script.exists():
            lua_paths = ",".join(json.dumps(p, ensure_ascii=True) for p in paths)
            script.write_text(WRK_LUA % {"paths": lua_paths})
        threads = max(1, min(self.threads, connections))
        duration = max(1, int(round(seconds)))
        cmd = [self.wrk, f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
               "-s", str(script), f"http://{HOST}:{port}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30)
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("BENCH_RESULT ")),
                    None)
        if done.returncode != 0 or line is None:
            raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout[-500:]}"
                               f"{done.stderr[-500:]}")
        data = json.loads(line.split(" ", 1)[1])
        seconds_run = data["duration_us"] / 1e6
        errors = data["connect"] + data["read"] + data["write"] + data["timeout"]
        return LoadResult(
            requests=data["requests"], duration_s=round(seconds_run, 2),
            rps=round(data["requests"] / seconds_run, 1),
            p50_ms=round(data["p50_us"] / 1000, 3), p99_ms=round(data["p99_us"] / 1000, 3),
            non200=data["non200"], socket_errors=errors,
            first_bad_status=data["bad_status"] or None,
            extra={"mean_ms": round(data["mean_us"] / 1000, 3),
                   "max_ms": round(data["max_us"] / 1000, 3), "bytes": data["bytes"]})


class PythonLoad:
    """Fallback: asyncio keep-alive connections. Its own CPU use caps throughput well below
    wrk's, so its ratios are less trustworthy."""

    name = "python-asyncio"
    version = f"python {platform.python_version()}"

    def run(self, port: int, paths: list[str], connections: int, seconds: float) -> LoadResult:
        return asyncio.run(self._run(port, paths, connections, seconds))

    async def _run(self, port, paths, connections, seconds) -> LoadResult:
        latencies: list[float] = []
        stats = {"non200": 0, "errors": 0, "bad": 0}
        started = now_s()
        deadline = started + seconds
        await asyncio.gather(*(self._conn(port, paths, i * 7919, deadline, latencies, stats)
                               for i in range(connections)))
        elapsed = now_s() - started
        return LoadResult(
            requests=len(latencies), duration_s=round(elapsed, 2),
            rps=round(len(latencies) / elapsed, 1),
            p50_ms=round(percentile(latencies, 50) * 1000, 3),
            p99_ms=round(percentile(latencies, 99) * 1000, 3),
            non200=stats["non200"], socket_errors=stats["errors"],
            first_bad_status=stats["bad"] or None)

    async def _conn(self, port, paths, offset, deadline, latencies, stats) -> None:
        i = offset
        writer = None
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
            while now_s() < deadline:
                path = paths[i % len(paths)]
                i += 1
                t0 = now_s()
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode())
                status = int((await reader.readline()).split()[1])
                length, chunked = 0, False
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"transfer-encoding" and b"chunked" in value.lower():
                        chunked = True
                if chunked:
                    while True:
                        size = int((await reader.readline()).split(b";")[0], 16)
                        await reader.readexactly(size + 2)
                        if size == 0:
                            break
                else:
                    await reader.readexactly(length)
                latencies.append(now_s() - t0)
                if status != 200:
                    stats["non200"] += 1
                    stats["bad"] = status
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError):
            stats["errors"] += 1
        finally:
            if writer is not None:
                writer.close()


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
