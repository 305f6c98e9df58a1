"""Run the real pipeline CLI and the real server on an ephemeral port."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED_GEONAMES = ROOT.parent / "shared" / "data" / "geonames"


# Builds in tests generate a small webcam catalog (2% of the default: about 400 webcams and
# 1.7 million snapshots) unless they ask for more; the session's default build is full size.
SMALL_WEBCAMS = {"WEATHERAPI_WEBCAMS_SCALE": "0.02"}


def pipeline_env(**env: str) -> dict[str, str]:
    """The environment for a pipeline run in tests."""
    return {**os.environ, **SMALL_WEBCAMS, **env}


def run_pipeline(
    *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m pipeline ARGS` from the project root."""
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=pipeline_env(**(env or {})),
    )
    if check and result.returncode != 0:
        raise AssertionError(f"pipeline failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def add_key(keys_file: Path, name: str, rate_limit: int | None = None) -> str:
    """Create a key with the real CLI and return it (the last stdout line)."""
    args = [sys.executable, "-m", "server", "keys", "add", name, "--keys-file", str(keys_file)]
    if rate_limit:
        args += ["--rate-limit", str(rate_limit)]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip().splitlines()[-1]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


class Server:
    """A `python -m server` process; `url` is set once it listens."""

    def __init__(
        self,
        build_dir: Path,
        keys_file: Path | None = None,
        *args: str,
        prefix: tuple[str, ...] | list[str] = (),
        **env: str,
    ):
        """`prefix`: a command the server is started through (setpriv, to run it as another
        user); `env`: variables on top of this process's own."""
        self.build_dir, self.keys_file, self.args, self.prefix = build_dir, keys_file, args, prefix
        # Without a keys file the server keeps its signing secrets in $XDG_CONFIG_HOME: a
        # directory of this server's own (removed with it), never the runner's real HOME.
        self.config_home = tempfile.TemporaryDirectory(prefix="weatherapi-config-")
        self.env = {
            **os.environ,
            "XDG_CONFIG_HOME": self.config_home.name,
            "WEATHERAPI_RELOAD_INTERVAL_S": "0.2",
            "WEATHERAPI_RATE_LIMIT_PER_MINUTE": "1000000",
            **env,
        }
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.banner = ""  # its first line on stdout: "serving ... on URL ..."
        self.log = ""  # everything the server wrote to stderr, once it has stopped
        self._lines: list[str] = []  # stderr so far, read by a thread while it runs
        self._reader: threading.Thread | None = None

    def __enter__(self) -> Server:
        cmd = [
            *self.prefix,
            sys.executable,
            "-m",
            "server",
            "--build",
            str(self.build_dir),
            "--port",
            "0",
            *self.args,
        ]
        if self.keys_file:
            cmd += ["--keys-file", str(self.keys_file)]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline()
        match = re.search(r"http://\S+", line)
        if not match:
            self._reader = threading.Thread(target=self._read_stderr, daemon=True)
            self._reader.start()
            self.__exit__()  # stops it if it still runs, and keeps its stderr in `log`
            raise AssertionError(f"server did not start: {line!r} {self.log[-2000:]}")
        self.url, self.banner = match.group(0), line
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        return self

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._lines.append(line)

    def log_lines(self, text: str) -> list[str]:
        """The lines the server has written to stderr so far that contain `text`."""
        return [line for line in list(self._lines) if text in line]

    def wait_log(self, text: str, count: int = 1, timeout: float = 30.0) -> list[str]:
        """Poll stderr until `count` lines contain `text`; those lines."""
        deadline = time.monotonic() + timeout
        while len(found := self.log_lines(text)) < count:
            assert self.proc.poll() is None, f"server exited: {''.join(self._lines)[-2000:]}"
            assert time.monotonic() < deadline, f"no {count} lines with {text!r} in {timeout}s"
            time.sleep(0.02)
        return found

    def wait_ready(self, timeout: float = 60.0, status: int = 200) -> dict:
        """Poll /ready until it answers `status` (readiness by polling, never by sleeping blind)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(timeout=5)
                raise AssertionError(f"server exited: {''.join(self._lines)[-2000:]}")
            try:
                last = get(self.url + "/ready")
                if last.status == status and last.json()["state"] != "loading":
                    return last.json()
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"not ready in {timeout}s: {last and last.body[:500]}")

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            if self._reader:
                self._reader.join(timeout=15)  # the pipe ends when the process has exited
                self.log = "".join(self._lines)
            for stream in (self.proc.stdout, self.proc.stderr):
                stream and stream.close()


def get(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> Response:
    """One HTTP request; 4xx/5xx are returned, not raised."""
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return Response(reply.status, dict(reply.headers), reply.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, dict(err.headers), err.read())
