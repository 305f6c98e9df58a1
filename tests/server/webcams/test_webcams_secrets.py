"""The shared signing secrets file (server.webcams.secrets): where it is, when it is trusted, how it
is created, rotated, staged and promoted, and how the server starts with it."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from server.config import Config
from server.security.private_file import FileRefusedError
from server.webcams.secrets import (
    SecretsFileError,
    ensure_secrets_file,
    location_warnings,
    parse_secrets,
    read_secrets_file,
    rotate_secrets_file,
)
from server.webcams.tokens import EMBED, TTL_S, Signer
from tests.support.procs import ROOT, Server


def _create(path: str) -> str:
    return ensure_secrets_file(Path(path)).current


def test_the_secrets_file_is_created_once_private_and_shared(tmp_path):
    path = tmp_path / "signing-secrets.json"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        kids = pool.map(_create, [str(path)] * 8)
    assert len(set(kids)) == 1  # every process signs with the same key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["signing-secrets.json"]
    assert ensure_secrets_file(path) == read_secrets_file(path)


def test_image_keys_command_reads_the_secrets_file_and_never_creates_one(tmp_path):
    path = tmp_path / "conf" / "signing-secrets.json"
    command = [sys.executable, "-m", "server", "secrets", "image-keys", "--file", str(path)]
    env = {k: v for k, v in os.environ.items() if k != "WEATHERAPI_SIGNING_SECRETS"}
    missing = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert missing.returncode == 2 and missing.stdout == ""
    errors = [line for line in missing.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and str(path) in errors[0] and "Traceback" not in missing.stderr
    assert not path.exists() and not path.parent.exists()
    secrets = ensure_secrets_file(path)
    found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert found.returncode == 0, found.stderr
    assert str(path) in found.stderr
    printed = {
        kid: base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
        for kid, key in json.loads(found.stdout).items()
    }
    assert printed == secrets.image_keys


def test_rotate_command_adds_a_current_key_and_keeps_the_previous(tmp_path):
    path = tmp_path / "signing-secrets.json"
    first = ensure_secrets_file(path)
    command = [sys.executable, "-m", "server", "secrets", "rotate", "--file", str(path)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    after = read_secrets_file(path)
    assert after.current != first.current and after.current in result.stdout
    assert set(after.keys) == {after.current, first.current}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    rotate_secrets_file(path)
    rotate_secrets_file(path)
    assert len(read_secrets_file(path).keys) == 3  # the current one and two before it


def test_concurrent_rotations_keep_every_secret(tmp_path):
    # Each reads the file, adds a secret and writes it back: unlocked, the last writer wins.
    path = tmp_path / "signing-secrets.json"
    first = ensure_secrets_file(path)
    command = [
        sys.executable,
        "-m",
        "server",
        "secrets",
        "rotate",
        "--file",
        str(path),
        "--keep",
        "20",
    ]
    procs = [
        subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    kids = {first.current}
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        kids.add(out.split("new signing key ")[1].split()[0])
    assert len(kids) == 7 and set(read_secrets_file(path).keys) == kids


def _secrets_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server", "secrets", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rotate_refuses_a_missing_file_unless_told_to_create_it(tmp_path):
    path = tmp_path / "conf" / "signing-secrets.json"
    missing = _secrets_cli("rotate", "--file", str(path))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == [
        f"error: no signing secrets file at {path} (give the server's --file or --keys-file "
        "or --create to make one)"
    ]
    assert not path.exists() and not path.parent.exists()
    created = _secrets_cli("rotate", "--file", str(path), "--create")
    assert created.returncode == 0, created.stderr
    assert read_secrets_file(path).current in created.stdout


def test_a_staged_key_verifies_but_signs_only_once_promoted(tmp_path, clock):
    path = tmp_path / "signing-secrets.json"
    first = ensure_secrets_file(path)
    staged = _secrets_cli("rotate", "--stage", "--file", str(path))
    assert staged.returncode == 0, staged.stderr
    assert "secrets promote" in staged.stdout
    server = Signer(first, clock, source=path)
    server.refresh()
    assert server.secrets.current == first.current  # signing goes on as before
    new = next(kid for kid in server.secrets.keys if kid != first.current)
    assert new in staged.stdout
    # A link signed with the staged key (e.g. by a replica already promoted) verifies.
    ahead = Signer(parse_secrets(f"{new}:{server.secrets.keys[new].decode()}"), clock)
    expires = ahead.link_expiry()
    server.verify_image("cam-1", str(expires), *ahead.image_signature("cam-1", expires))
    old_token = server.issue(EMBED, "cam-1", expires)
    assert old_token.split(".")[1] == first.current
    promoted = _secrets_cli("promote", "--file", str(path))
    assert promoted.returncode == 0, promoted.stderr
    server.refresh()
    assert server.secrets.current == new and new in promoted.stdout
    assert server.issue(EMBED, "cam-1", expires).split(".")[1] == new
    assert server.verify(old_token, EMBED, "cam-1") == "cam-1"  # the old key still verifies
    again = _secrets_cli("promote", "--file", str(path))
    assert again.returncode == 1 and "no staged key" in again.stderr


def test_signer_follows_the_file(tmp_path, clock):
    path = tmp_path / "signing-secrets.json"
    signer = Signer(ensure_secrets_file(path), clock, source=path)
    token = signer.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    rotate_secrets_file(path)
    signer.refresh()
    assert signer.secrets.current == read_secrets_file(path).current
    assert signer.verify(token, EMBED, "cam-1") == "cam-1"


def test_signer_notices_a_replaced_file_of_the_same_size_and_time(tmp_path, clock):
    path = tmp_path / "signing-secrets.json"
    signer = Signer(ensure_secrets_file(path), clock, source=path)
    signer.refresh()
    before = path.stat()
    other = tmp_path / "other.json"
    text = path.read_text().replace(
        signer.secrets.current, "kzzzzzzzzzzzzzzzzzzzzz"[: len(signer.secrets.current)]
    )
    other.write_text(text)
    other.chmod(0o600)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)
    assert path.stat().st_size == before.st_size
    signer.refresh()
    assert signer.secrets.current.startswith("kzzz")


def _replace(path: Path, text: str) -> None:
    """Put a file with `text` in place of `path` at once (a new inode, as editors do)."""
    new = path.with_name("new.json")
    new.write_text(text)
    new.chmod(0o600)
    os.replace(new, path)


def test_a_broken_secrets_file_is_reported_once_per_change(tmp_path, clock):
    path = tmp_path / "signing-secrets.json"
    signer = Signer(ensure_secrets_file(path), clock, source=path)
    signer.refresh()
    good, text = signer.secrets, path.read_text()
    for broken in ("{", '{"current": "k1"}'):
        _replace(path, broken)
        with pytest.raises(SecretsFileError, match="is not a signing secrets file"):
            signer.refresh()
        signer.refresh()  # still the same broken file: nothing new to report
        signer.refresh()
        assert signer.secrets == good
    path.unlink()
    with pytest.raises(FileNotFoundError):
        signer.refresh()
    signer.refresh()
    _replace(path, text.replace(good.current, "k2"))
    signer.refresh()
    assert signer.secrets.current == "k2"
    _replace(path, "{")  # a change after a good load is reported again
    with pytest.raises(SecretsFileError):
        signer.refresh()


def test_a_refused_secrets_file_made_private_by_chmod_alone_is_loaded(tmp_path, clock):
    path = tmp_path / "signing-secrets.json"
    signer = Signer(ensure_secrets_file(path), clock, source=path)
    kid = rotate_secrets_file(path)
    path.chmod(0o666)
    with pytest.raises(FileRefusedError, match="writable by group or others"):
        signer.refresh()
    signer.refresh()  # the same file: nothing new to report
    path.chmod(0o600)  # a new mode, the same content and mtime
    signer.refresh()
    assert signer.secrets.current == kid


ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown (CI runs as root)")


def _serve(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m server ARGS` over a build that does not exist, expected to stop at startup."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WEATHERAPI_SIGNING")}
    return subprocess.run(
        [sys.executable, "-m", "server", "--port", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**environ, **env},
    )


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o660, 0o666], ids=oct)
def test_a_secrets_file_others_can_write_is_refused(tmp_path, mode):
    path = tmp_path / "signing-secrets.json"
    ensure_secrets_file(path)
    path.chmod(mode)
    with pytest.raises(FileRefusedError, match=r"writable by group or others.*chmod go-w"):
        read_secrets_file(path)
    with pytest.raises(FileRefusedError):
        rotate_secrets_file(path)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o444], ids=oct)
def test_a_secrets_file_others_can_read_is_trusted_only_from_root(tmp_path, mode):
    path = tmp_path / "signing-secrets.json"
    ensure_secrets_file(path)
    path.chmod(mode)
    if os.geteuid() == 0:  # root's own file, as Docker and Kubernetes mount secrets
        assert read_secrets_file(path).current
    else:
        with pytest.raises(FileRefusedError, match=r"readable by group or others.*chmod 600"):
            read_secrets_file(path)


def _kubernetes_mount(root: Path, name: str, mode: int) -> Path:
    """A secret volume as Kubernetes lays it out: name -> ..data/name, ..data -> ..<stamp>/."""
    root.mkdir()
    ensure_secrets_file(root / "..2026_01_01" / name)
    (root / "..2026_01_01" / name).chmod(mode)
    (root / "..data").symlink_to("..2026_01_01")
    (root / name).symlink_to(Path("..data") / name)
    root.chmod(0o1777)  # the volume root is; the files sit in a private directory
    return root / name


@pytest.mark.slow
@ROOT_ONLY
def test_a_root_owned_read_only_secret_mount_is_accepted_and_followed(tmp_path, clock):
    path = _kubernetes_mount(tmp_path / "secrets", "signing-secrets.json", 0o444)
    first = read_secrets_file(path)
    assert location_warnings(path) == []
    signer = Signer(ensure_secrets_file(path), clock, source=path)
    token = signer.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    # An update: Kubernetes writes a new directory and swaps the ..data link to it.
    fresh = tmp_path / "secrets" / "..2026_02_01" / "signing-secrets.json"
    fresh.parent.mkdir()
    shutil.copy(path, fresh)
    rotate_secrets_file(fresh)
    fresh.chmod(0o444)
    (tmp_path / "secrets" / "..data.new").symlink_to("..2026_02_01")
    os.replace(tmp_path / "secrets" / "..data.new", tmp_path / "secrets" / "..data")
    signer.refresh()
    assert signer.secrets.current != first.current
    assert signer.verify(token, EMBED, "cam-1") == "cam-1"
    assert path.is_symlink()
    with Server(tmp_path / "no-build", None, WEATHERAPI_SIGNING_SECRETS_FILE=str(path)) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published


def test_a_symlink_is_followed_and_its_target_checked(tmp_path):
    real = tmp_path / "elsewhere.json"
    secrets = ensure_secrets_file(real)
    link = tmp_path / "signing-secrets.json"
    link.symlink_to(real)
    assert read_secrets_file(link) == ensure_secrets_file(link) == secrets
    kid = rotate_secrets_file(link)
    assert link.is_symlink() and read_secrets_file(real).current == kid
    real.chmod(0o622)
    with pytest.raises(FileRefusedError, match="writable by group or others"):
        read_secrets_file(link)


@ROOT_ONLY
def test_the_server_refuses_a_secrets_file_of_another_user(tmp_path):
    secrets_file = tmp_path / "signing-secrets.json"
    ensure_secrets_file(secrets_file)
    os.chown(secrets_file, 65534, 65534)
    result = _serve("--build", str(tmp_path / "b"), "--keys-file", str(tmp_path / "keys.json"))
    assert result.returncode == 2
    assert (
        f"{secrets_file} is owned by uid 65534, neither by the user running the server "
        "(uid 0) nor by root"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def test_the_server_refuses_to_start_on_a_secrets_file_others_can_write(tmp_path):
    secrets_file = tmp_path / "signing-secrets.json"
    ensure_secrets_file(secrets_file)
    secrets_file.chmod(0o664)
    result = _serve("--build", str(tmp_path / "b"), "--keys-file", str(tmp_path / "keys.json"))
    assert result.returncode == 2
    assert "writable by group or others" in result.stderr and "chmod go-w" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_secrets_file_that_cannot_be_created_names_the_setting(tmp_path):
    # sysfs refuses new files, to root too: a read-only keys directory such as a ConfigMap.
    result = _serve("--build", str(tmp_path / "b"), "--keys-file", "/sys/keys.json")
    assert result.returncode == 2
    # (Besides the warning that /sys/keys.json does not exist yet.)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: signing secrets: cannot create /sys/signing-secrets.json ("
    )
    assert "set WEATHERAPI_SIGNING_SECRETS_FILE" in errors[0] and "Errno" not in errors[0]


def test_default_secrets_location_is_private_not_beside_the_build(tmp_path, monkeypatch):
    keys = tmp_path / "conf" / "keys.json"
    assert (
        Config(build_dir=Path("/tmp/build"), keys_file=keys).secrets_path
        == keys.resolve().parent / "signing-secrets.json"
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert (
        Config(build_dir=Path("/tmp/build")).secrets_path
        == tmp_path / "xdg" / "weather-geodata-api" / "signing-secrets.json"
    )
    path = Config(build_dir=Path("/tmp/build")).secrets_path
    ensure_secrets_file(path)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _warnings(log: str) -> list[str]:
    """The warnings about signing secrets (these servers start without a build, also warned)."""
    return [
        line
        for line in log.splitlines()
        if " WARNING " in line and " WARNING build directory " not in line
    ]


@pytest.mark.slow
def test_a_secrets_file_left_at_the_old_default_location_is_pointed_out(tmp_path):
    legacy = tmp_path / "signing-secrets.json"  # beside the build directory
    ensure_secrets_file(legacy)
    keys = tmp_path / "conf" / "keys.json"
    with Server(tmp_path / "build", keys) as srv:
        pass
    new = tmp_path / "conf" / "signing-secrets.json"
    warnings = _warnings(srv.log)
    assert len(warnings) == 1, srv.log
    assert f"{legacy} holds signing secrets" in warnings[0]
    assert f"mv {legacy} {new}" in warnings[0]
    with Server(tmp_path / "build", keys) as again:  # the new file exists now: nothing to say
        pass
    assert _warnings(again.log) == []


@pytest.mark.slow
def test_the_server_refuses_a_secrets_file_in_a_directory_everyone_may_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    path = shared / "signing-secrets.json"
    with pytest.raises(AssertionError, match="server did not start") as failed:
        with Server(tmp_path / "build", None, WEATHERAPI_SIGNING_SECRETS_FILE=str(path)):
            pass
    assert (
        f"error: signing secrets: {path} is in {shared}, which everyone may write (mode "
        f"777); run chmod o-w {shared}" in str(failed.value)
    )
    assert not path.exists()  # no secret written where others could take it


@pytest.mark.slow
@pytest.mark.parametrize("mode", [0o1777, 0o770], ids=oct)
def test_a_secrets_file_in_a_directory_others_can_write_is_pointed_out(tmp_path, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    path = shared / "signing-secrets.json"
    with Server(tmp_path / "build", None, WEATHERAPI_SIGNING_SECRETS_FILE=str(path)) as srv:
        pass
    assert path.is_file()
    warnings = _warnings(srv.log)
    assert (
        len(warnings) == 1
        and f"a directory group or others can write (mode {mode:o})" in warnings[0]
    ), srv.log


def test_rotate_create_makes_nothing_in_a_directory_everyone_may_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    path = shared / "signing-secrets.json"
    refused = _secrets_cli("rotate", "--file", str(path), "--create")
    assert refused.returncode != 0 and refused.stdout == ""
    assert "everyone may write" in refused.stderr and "Traceback" not in refused.stderr
    assert list(shared.iterdir()) == []  # no lock file left behind either
