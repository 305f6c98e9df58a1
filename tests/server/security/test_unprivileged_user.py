"""The secrets and keys files as a server that does not run as root sees them (README: the
server refuses a secrets file "readable by them while not owned by root", and a keys or secrets
file writable by group or others). The tests run as root in CI, where every file they make is
root's: the commands here run as `nobody` then (tests/support/unprivileged.py), over files
that user made with the real CLI. The root-only checks (files of another user) stay in
test_keys_file.py and test_webcams_secrets.py."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from server.webcams.secrets import ensure_secrets_file
from tests.support.procs import Server
from tests.support.unprivileged import User

pytestmark = pytest.mark.slow  # servers, as another user


@pytest.fixture
def user(tmp_path):
    user = User(tmp_path)
    try:
        yield user
    finally:
        user.cleanup()


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error")]


def _made_by(user: User, path: Path, mode: int) -> None:
    info = path.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (user.uid, mode), path


def test_the_commands_run_as_a_user_that_is_not_root(user):
    # Else every check below would pass as root's would: trusted.
    user.check_identity()


def test_a_server_that_is_not_root_refuses_a_secrets_file_others_can_read(user):
    path = user.home / "conf" / "signing-secrets.json"
    made = user.run("secrets", "rotate", "--create", "--file", str(path))
    assert made.returncode == 0, made.stderr
    _made_by(user, path, 0o600)
    before = path.read_bytes()
    keys = user.home / "conf" / "keys.json"  # the secrets file's default place is beside it
    for mode in (0o640, 0o604):  # readable by the group; by others
        path.chmod(mode)
        result = user.run(
            "--port", "0", "--build", str(user.home / "build"), "--keys-file", str(keys)
        )
        assert result.returncode == 2, (oct(mode), result.stderr)
        assert _errors(result.stderr) == [
            f"error: signing secrets: {path} is readable by group or others (mode {mode:o}); "
            f"run chmod 600 {path}"
        ], result.stderr
        assert "Traceback" not in result.stderr
    # Nor do the secrets commands read it, or rotate it.
    for mode, command in ((0o444, "image-keys"), (0o644, "rotate")):
        path.chmod(mode)
        refused = user.run("secrets", command, "--file", str(path))
        assert refused.returncode == 1 and refused.stdout == "", refused.stderr
        assert _errors(refused.stderr) == [
            f"error: {path} is readable by group or others (mode {mode:o}); run chmod 600 {path}"
        ]
    assert path.read_bytes() == before
    path.chmod(0o600)  # private again: used
    used = user.run("secrets", "image-keys", "--file", str(path))
    assert used.returncode == 0, used.stderr
    assert set(json.loads(used.stdout)) == set(json.loads(before)["secrets"])


def test_a_server_that_is_not_root_refuses_files_others_can_write(user):
    keys = user.home / "conf" / "keys.json"
    added = user.run("keys", "add", "alice", "--keys-file", str(keys))
    assert added.returncode == 0, added.stderr
    _made_by(user, keys, 0o600)
    secrets = user.home / "conf" / "signing-secrets.json"
    made = user.run("secrets", "rotate", "--create", "--file", str(secrets))
    assert made.returncode == 0, made.stderr
    for path, mode, what in ((keys, 0o664, "keys file"), (secrets, 0o620, "signing secrets")):
        path.chmod(mode)
        result = user.run(
            "--port", "0", "--build", str(user.home / "build"), "--keys-file", str(keys)
        )
        assert result.returncode == 2, result.stderr
        assert _errors(result.stderr) == [
            f"error: {what}: {path} is writable by group or others (mode {mode:o}); run chmod "
            f"go-w {path}"
        ], result.stderr
        path.chmod(0o600)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a root-owned secret mount needs root")
def test_a_server_that_is_not_root_uses_a_root_owned_secret_mount_others_can_read(user, tmp_path):
    """As Kubernetes mounts a secret for a pod whose server runs as another user: root's file,
    mode 444, in a root-owned directory, reached through two symlinks."""
    made = tmp_path / "made.json"
    source = ensure_secrets_file(made)
    volume = user.home / "secrets"  # root's: made by this (root) process
    (volume / "..2026_01_01").mkdir(parents=True)
    volume.chmod(0o1777)
    (volume / "..2026_01_01").chmod(0o755)
    target = volume / "..2026_01_01" / "signing-secrets.json"
    target.write_bytes(made.read_bytes())
    target.chmod(0o444)
    (volume / "..data").symlink_to("..2026_01_01")
    path = volume / "signing-secrets.json"
    path.symlink_to(Path("..data") / "signing-secrets.json")
    assert target.stat().st_uid == 0
    printed = user.run("secrets", "image-keys", "--file", str(path))
    assert printed.returncode == 0, printed.stderr
    assert {
        kid: base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        for kid, key in json.loads(printed.stdout).items()
    } == source.image_keys
    with Server(
        user.home / "build",
        None,
        prefix=user.prefix,
        **user.env(WEATHERAPI_SIGNING_SECRETS_FILE=str(path)),
    ) as srv:
        srv.wait_ready(status=503)  # started and loaded; nothing is published
        assert (
            int(Path(f"/proc/{srv.proc.pid}/status").read_text().split("Uid:")[1].split()[1])
            == user.uid
        )
