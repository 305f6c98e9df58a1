"""The server under load: the Server runner, an HTTP client and the load generators (wrk with a
Lua script that rotates through URLs, installed with apt when missing; an asyncio fallback).
One server run over every workload is bench/serverrun.py."""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import os
import platform
import selectors
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import (
    HOST,
    RATE_LIMIT,
    ROOT,
    Workload,
    descendants,
    log,
    now_s,
    percentile,
    proc_mappings_mib,
    proc_pss_kib,
    proc_status_kib,
    stop_process,
)

# ---- the server -----------------------------------------------------------------------------


class Server:
    """`python -m server` on 127.0.0.1, port 0, a huge rate limit, the given keys file; always
    stopped on exit."""

    def __init__(
        self,
        build_dir: Path,
        workers: int,
        log_path: Path,
        keys_file: Path | None = None,
        env: dict[str, str] | None = None,
    ):
        self.build_dir, self.workers, self.log_path = build_dir, workers, log_path
        self.keys_file, self.env = keys_file, env or {}
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.bound_s = self.ready_s = float("nan")

    def environment(self) -> dict[str, str]:
        """The process's environment: ours, with a huge rate limit and no access log."""
        env = dict(os.environ)
        # Config reads WEATHERAPI_<FIELD>: the field is rate_limit_per_minute. The short
        # WEATHERAPI_RATE_LIMIT is set as well, in case a later version reads that name.
        env.update(
            {
                "WEATHERAPI_RATE_LIMIT_PER_MINUTE": RATE_LIMIT,
                "WEATHERAPI_RATE_LIMIT": RATE_LIMIT,
                "WEATHERAPI_RATE_LIMIT_BURST": RATE_LIMIT,
                "WEATHERAPI_HOST": HOST,
                "WEATHERAPI_ACCESS_LOG": "0",
                "PYTHONUNBUFFERED": "1",
                **self.env,
            }
        )
        env.pop("WEATHERAPI_KEYS_FILE", None)
        return env

    def command(self) -> list[str]:
        """`python -m server` on HOST, a free port."""
        cmd = [sys.executable, "-m", "server", "--build", str(self.build_dir), "--host", HOST]
        cmd += ["--port", "0", "--workers", str(self.workers)]
        if self.keys_file is not None:
            cmd += ["--keys-file", str(self.keys_file)]
        return cmd

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the process; return once GET /ready answers 200 (RuntimeError otherwise)."""
        env, cmd = self.environment(), self.command()
        self._log = open(self.log_path, "wb")
        started = now_s()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self._log
        )
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
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}; log tail:\n{self.log_tail()}"
                )
            if now_s() > deadline:
                raise RuntimeError(f"server not ready within {timeout_s:.0f} s")
            try:
                status, body = http_get(self.port, "/ready", timeout=1.0)
            except OSError:
                status, body = None, b""
            if status == 503 and b'"unpublished"' in body:  # waiting would not help
                raise RuntimeError(f"nothing is published in {self.build_dir}: build first")
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
                        raise RuntimeError(
                            f"server exited with {self.proc.returncode}; "
                            f"log tail:\n{self.log_tail()}"
                        )
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
            rss, hwm, pss = (
                proc_status_kib(pid, "VmRSS"),
                proc_status_kib(pid, "VmHWM"),
                proc_pss_kib(pid),
            )
            anon = proc_status_kib(pid, "RssAnon")
            if rss is None:
                continue
            per.append(
                {
                    "pid": pid,
                    "rss_mib": round(rss / 1024, 1),
                    "hwm_mib": round((hwm or 0) / 1024, 1),
                    "pss_mib": round((pss or 0) / 1024, 1),
                    "anon_mib": round((anon or 0) / 1024, 1),
                }
            )
        main = next((p for p in per if p["pid"] == self.proc.pid), None)
        return {
            "main_pid": self.proc.pid,
            "main_rss_mib": main["rss_mib"] if main else None,
            "main_pss_mib": main["pss_mib"] if main else None,
            "total_rss_mib": round(sum(p["rss_mib"] for p in per), 1),
            "total_pss_mib": round(sum(p["pss_mib"] for p in per), 1),
            # Private heap; the rest of VmRSS is shared libraries and mapped artifact pages.
            "total_anon_mib": round(sum(p["anon_mib"] for p in per), 1),
            "max_rss_mib": max((p["rss_mib"] for p in per), default=None),
            # where the largest process's resident memory is (libraries, artifacts, heap)
            "largest_mappings": proc_mappings_mib(max(per, key=lambda p: p["rss_mib"])["pid"])
            if per
            else [],
            "processes": per,
        }

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


def http_request(
    port: int, path: str, method: str = "GET", timeout: float = 10.0
) -> tuple[int, str, bytes]:
    """One request to the server on 127.0.0.1 (no body): status, Content-Type and body."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=b"" if method == "POST" else None)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


def http_get(port: int, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """GET path: status and body."""
    status, _, body = http_request(port, path, timeout=timeout)
    return status, body


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
    ratio_to_bare: float | None = None  # to the bare aiohttp app around it (bench/serverrun.py)
    server_cpu_us_per_req: float | None = None  # server CPU time / requests (contention-proof)
    cpu_ratio_to_health: float | None = None  # health's CPU cost / this endpoint's
    cpu_ratio_to_bare: float | None = None  # the bare app's CPU cost / this endpoint's
    extra: dict = field(default_factory=dict)


WRK_LUA = r"""
-- generated by bench/load.py: rotate through PATHS, count answers other than EXPECT (in the
-- "non200" figure), report as one JSON line
local paths = {%(paths)s}
local method, body, expect = "%(method)s", %(body)s, %(expect)d
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
  return wrk.format(method, paths[(counter %% #paths) + 1], nil, body)
end

function response(status, headers, body)
  if status ~= expect then
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
        self.version = (
            (version.stdout + version.stderr).strip().splitlines()[0]
            if (version.stdout + version.stderr).strip()
            else "wrk"
        )

    def run(self, port: int, work: Workload, connections: int, seconds: float) -> LoadResult:
        """Load the server for `seconds` over `connections`, rotating through work.paths."""
        spec = json.dumps([work.method, work.expect_status, work.paths], ensure_ascii=True)
        script = self.workdir / f"rotate-{hashlib.sha1(spec.encode()).hexdigest()[:16]}.lua"
        if not script.exists():
            lua_paths = ",".join(json.dumps(p, ensure_ascii=True) for p in work.paths)
            # a body (even empty) makes wrk send Content-Length; GET has none
            body = "nil" if work.method == "GET" else '""'
            script.write_text(
                WRK_LUA
                % {
                    "paths": lua_paths,
                    "method": work.method,
                    "body": body,
                    "expect": work.expect_status,
                }
            )
        threads = max(1, min(self.threads, connections))
        duration = max(1, int(round(seconds)))
        cmd = [
            self.wrk,
            f"-t{threads}",
            f"-c{connections}",
            f"-d{duration}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            f"http://{HOST}:{port}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30)
        line = next((ln for ln in done.stdout.splitlines() if ln.startswith("BENCH_RESULT ")), None)
        if done.returncode != 0 or line is None:
            raise RuntimeError(
                f"wrk failed ({done.returncode}): {done.stdout[-500:]}{done.stderr[-500:]}"
            )
        data = json.loads(line.split(" ", 1)[1])
        seconds_run = data["duration_us"] / 1e6
        errors = data["connect"] + data["read"] + data["write"] + data["timeout"]
        return LoadResult(
            requests=data["requests"],
            duration_s=round(seconds_run, 2),
            rps=round(data["requests"] / seconds_run, 1),
            p50_ms=round(data["p50_us"] / 1000, 3),
            p99_ms=round(data["p99_us"] / 1000, 3),
            non200=data["non200"],
            socket_errors=errors,
            first_bad_status=data["bad_status"] or None,
            extra={
                "mean_ms": round(data["mean_us"] / 1000, 3),
                "max_ms": round(data["max_us"] / 1000, 3),
                "bytes": data["bytes"],
            },
        )


class PythonLoad:
    """Fallback: asyncio keep-alive connections. Its own CPU use caps throughput well below
    wrk's, so its ratios are less trustworthy."""

    name = "python-asyncio"
    version = f"python {platform.python_version()}"

    def run(self, port: int, work: Workload, connections: int, seconds: float) -> LoadResult:
        """Load the server for `seconds` over `connections`, rotating through work.paths."""
        return asyncio.run(self._run(port, work, connections, seconds))

    async def _run(self, port, work, connections, seconds) -> LoadResult:
        latencies: list[float] = []
        stats = {"non200": 0, "errors": 0, "bad": 0}
        started = now_s()
        deadline = started + seconds
        await asyncio.gather(
            *(
                self._conn(port, work, i * 7919, deadline, latencies, stats)
                for i in range(connections)
            )
        )
        elapsed = now_s() - started
        return LoadResult(
            requests=len(latencies),
            duration_s=round(elapsed, 2),
            rps=round(len(latencies) / elapsed, 1),
            p50_ms=round(percentile(latencies, 50) * 1000, 3),
            p99_ms=round(percentile(latencies, 99) * 1000, 3),
            non200=stats["non200"],
            socket_errors=stats["errors"],
            first_bad_status=stats["bad"] or None,
        )

    async def _conn(self, port, work, offset, deadline, latencies, stats) -> None:
        i = offset
        writer = None
        head = f"HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        if work.method != "GET":
            head += "Content-Length: 0\r\n"
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
            while now_s() < deadline:
                path = work.paths[i % len(work.paths)]
                i += 1
                t0 = now_s()
                writer.write(f"{work.method} {path} {head}\r\n".encode())
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
                if status != work.expect_status:
                    stats["non200"] += 1
                    stats["bad"] = status
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError):
            stats["errors"] += 1
        finally:
            if writer is not None:
                writer.close()
