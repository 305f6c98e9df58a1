"""`python -m pipeline publish --to s3://...`: upload, verify, pointer last, prune; on moto."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import contract
from tests.support.builds import geocoding_build as build
from tests.support.builds import place
from tests.support.procs import run_pipeline
from tests.support.s3 import BUCKET, Endpoint

pytestmark = pytest.mark.slow  # builds of their own


def publish(s3: Endpoint, out: Path, prefix: str, check: bool = True):
    return run_pipeline(
        "publish", "--to", f"s3://{BUCKET}/{prefix}", "--out", str(out), env=s3.env, check=check
    )


def test_publish_uploads_every_file_then_the_pointer(tmp_path, s3):
    out = tmp_path / "build"
    version = build(tmp_path, out)
    result = publish(s3, out, "a")
    assert f"published {version.name}" in result.stderr
    assert "test-secret-key" not in result.stderr + result.stdout
    objects = s3.keys("a")
    manifest_bytes = (version / contract.MANIFEST).read_bytes()
    sums = json.loads(manifest_bytes)[contract.CHECKSUMS]
    # Every file the manifest lists, byte for byte, plus the manifest and the pointer.
    expected = {contract.remote_key(version.name, rel) for rel in sums}
    expected |= {contract.remote_key(version.name, contract.MANIFEST), contract.POINTER}
    assert set(objects) == expected
    for rel, s in sums.items():
        body = objects[contract.remote_key(version.name, rel)]
        assert (len(body), hashlib.sha256(body).hexdigest()) == (s["bytes"], s["sha256"])
        assert body == (version / rel).read_bytes()
    assert json.loads(objects[contract.POINTER]) == {
        "build_id": version.name,
        "manifest_bytes": len(manifest_bytes),
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
    }
    again = publish(s3, out, "a")
    assert f"{version.name} is already published" in again.stderr


def test_old_versions_are_pruned_keeping_three(tmp_path, s3):
    out = tmp_path / "build"
    ids = []
    for n in range(4):
        ids.append(build(tmp_path, out, place(n)).name)
        publish(s3, out, "b")
    stored = {key.split("/")[1] for key in s3.keys("b") if key.startswith("versions/")}
    assert stored == set(ids[1:])
    assert json.loads(s3.keys("b")[contract.POINTER])["build_id"] == ids[-1]


def test_a_file_changed_after_the_build_is_not_published(tmp_path, s3):
    out = tmp_path / "build"
    first = build(tmp_path, out)
    publish(s3, out, "c")
    second = build(tmp_path, out, place(1))
    target = second / "geocoding" / "countries.parquet"
    data = bytearray(target.read_bytes())
    data[-20] ^= 0xFF  # same size, other bytes
    target.unlink()  # hard-linked from the first version: replace it, not write through
    target.write_bytes(bytes(data))
    result = publish(s3, out, "c", check=False)
    assert result.returncode == 1
    assert "differs from its manifest's checksum" in result.stderr
    assert "current.json is unchanged" in result.stderr
    assert json.loads(s3.keys("c")[contract.POINTER])["build_id"] == first.name


def test_nothing_published_and_a_missing_bucket_are_one_line_errors(tmp_path, s3):
    empty = run_pipeline(
        "publish",
        "--to",
        f"s3://{BUCKET}/d",
        "--out",
        str(tmp_path / "none"),
        env=s3.env,
        check=False,
    )
    assert empty.returncode == 1 and "nothing is published" in empty.stderr
    assert not (tmp_path / "none").exists()
    out = tmp_path / "build"
    build(tmp_path, out)
    missing = run_pipeline(
        "publish", "--to", "s3://no-such-bucket/x", "--out", str(out), env=s3.env, check=False
    )
    assert missing.returncode == 1
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert "test-secret-key" not in missing.stderr
