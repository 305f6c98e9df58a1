"""Run the real CLI as a user that is not root, also when the tests run as root (as CI does).

Who may read a secrets file depends on who runs the server: root's own file may be readable by
others (Docker and Kubernetes mount secrets so), anyone else's may not. Run as root, every
file the tests make is root's, so the refusal is never reached; these checks therefore run
their commands as `nobody` there, through setpriv(1) with nobody's uid and gid and no
supplementary groups, over files in a directory nobody owns. Run as another user, they run as
that user, directly.

When the interpreter (or its standard library) lies where nobody may not look, as under
/root (mode 700) with pyenv, the command also gets CAP_DAC_READ_SEARCH, the capability to read
any file and search any directory: nothing else. It grants no write, and the server's checks
depend on its effective uid and on the files' owners and modes alone, which it leaves as they
are.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.procs import ROOT

NOBODY = "nobody"


def _reachable(directory: Path) -> bool:
    """Whether a user who is neither owner nor in the group may reach what is in `directory`
    (search permission on it and on every directory above it)."""
    directory = directory.resolve()
    return all(os.stat(d).st_mode & stat.S_IXOTH for d in (directory, *directory.parents))


class User:
    """The user the commands run as: `nobody` when the tests run as root, else the tests' own
    user. `home` is a fresh directory that user owns (mode 700), for its files."""

    def __init__(self, scratch: Path):
        self.as_root = os.geteuid() == 0
        if not self.as_root:
            self.uid, self.gid, self.prefix = os.geteuid(), os.getegid(), []
            self.home = scratch / "home"
            self.home.mkdir(mode=0o700)
            return
        entry = pwd.getpwnam(NOBODY)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run these checks as nobody"
        # pytest's own temporary directories are root's (mode 700): a directory of nobody's
        # own in the system's temporary directory instead, which nobody can reach.
        base = Path(tempfile.gettempdir())
        assert _reachable(base), f"{base} is not reachable by {NOBODY}"
        self.home = Path(tempfile.mkdtemp(prefix="weatherapi-nobody-", dir=base))
        os.chown(self.home, self.uid, self.gid)
        self.prefix = [setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        needed = (
            Path(sys.executable).resolve().parent,
            Path(sys.base_prefix) / "lib",
            Path(sys.prefix) / "lib",
            ROOT,
        )
        if not all(_reachable(p) for p in needed):
            self.prefix += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
        self.prefix.append("--")

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a command: no signing secrets of the caller's, and a HOME (and
        with it numba's user-wide cache) of this user's own."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("WEATHERAPI_")}
        return {
            **base,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "PYTHONDONTWRITEBYTECODE": "1",
            **extra,
        }

    def command(self, *args: str) -> list[str]:
        """`python -m server ARGS` as this user."""
        return [*self.prefix, sys.executable, "-m", "server", *args]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        """Run `python -m server ARGS` as this user to its end (a server expected to refuse
        to start that serves instead is killed after a minute: TimeoutExpired)."""
        return subprocess.run(
            self.command(*args),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env=self.env(**env),
        )

    def check_identity(self) -> None:
        """Assert that a command really runs as this user, and not as root."""
        probe = subprocess.run(
            [
                *self.prefix,
                sys.executable,
                "-c",
                "import os; print(os.geteuid(), os.getegid(), os.getgroups())",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env=self.env(),
        )
        assert probe.returncode == 0, probe.stderr
        uid, gid, groups = probe.stdout.split(maxsplit=2)
        assert (int(uid), int(gid)) == (self.uid, self.gid) and int(uid) != 0, probe.stdout
        if self.as_root:
            assert groups.strip() == "[]", probe.stdout

    def cleanup(self) -> None:
        if self.as_root:
            shutil.rmtree(self.home, ignore_errors=True)
