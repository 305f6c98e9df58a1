"""Stopping `python -m server` with a signal, however it was started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.procs import ROOT, get


def _ignore_sigint() -> None:
    """As a shell script's `cmd &` starts it: SIGINT ignored (inherited across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_stops_the_server_started_with_sigint_ignored(tmp_path, workers, signum):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen([sys.executable, "-m", "server", "--build", str(tmp_path / "empty"),
                             "--port", "0", "--workers", workers], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            preexec_fn=_ignore_sigint)
    try:
        url = proc.stdout.readline().split(" on ", 1)[1].split()[0]
        deadline = time.monotonic() + 60
        while True:         # every worker listens once /ready answers (they preload first)
            try:
                if get(url + "/ready").status == 200:
                    break
            except OSError:
                assert time.monotonic() < deadline, "never ready"
                time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
