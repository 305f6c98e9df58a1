"""`python -m pipeline refresh`: rebuild only what changed, nothing new is no new version, one
refresh at a time. Sources are exercised against their stand-ins in their own tests; here the
inputs change on disk as a fetch would change them."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import contract

# Geocoding's source is GeoNames (fetch geonames); here nothing is fetched: the only source
# named feeds another area, and the inputs change by hand as a fetch would change them.
NO_FETCH = ("--sources", "gfs")


def versions(out: Path) -> list[str]:
    """The version directories written so far, oldest first."""
    return sorted(p.name for p in (out / contract.VERSIONS).iterdir())


def published(out: Path) -> dict:
    """The published manifest."""
    return contract.read_manifest(contract.current_version_dir(out))


def test_nothing_new_publishes_nothing(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    first = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "geocoding", *NO_FETCH
    )
    assert first.returncode == 0, first.stderr
    assert len(versions(out)) == 1 and "building geocoding" in first.stderr
    again = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "geocoding", *NO_FETCH
    )
    assert again.returncode == 0, again.stderr
    assert "nothing new: no version published" in again.stderr
    assert len(versions(out)) == 1


def test_a_changed_input_rebuilds_its_area_only(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    assert (
        pipeline_cli(
            "build", "--datasets", datasets, "--out", out, "--only", "geocoding", "air_quality"
        ).returncode
        == 0
    )
    before = published(out)
    countries = datasets / "geonames" / "countryInfo.txt"
    countries.write_text(countries.read_text() + "# a comment line GeoNames may add\n")
    result = pipeline_cli(
        "refresh",
        "--datasets",
        datasets,
        "--out",
        out,
        "--only",
        "geocoding",
        "air_quality",
        *NO_FETCH,
    )
    assert result.returncode == 0, result.stderr
    after = published(out)
    assert after["build_id"] != before["build_id"]
    # geocoding was rebuilt from the new file; air quality, whose inputs did not change, was
    # carried over (its entry as it was, with the version it came from)
    assert (
        after["areas"]["geocoding"]["input_digest"] != before["areas"]["geocoding"]["input_digest"]
    )
    carried = dict(after["areas"]["air_quality"])
    assert carried.pop("carried_over_from") == before["build_id"]
    assert carried == before["areas"]["air_quality"]
    assert (
        "building geocoding" in result.stderr
        and "air_quality" not in result.stderr.split("building", 1)[1].splitlines()[0]
    )


def test_files_in_flight_are_not_inputs(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    assert (
        pipeline_cli(
            "refresh", "--datasets", datasets, "--out", out, "--only", "geocoding", *NO_FETCH
        ).returncode
        == 0
    )
    (datasets / "geonames" / ".allCountries.zip.part").write_bytes(b"half a download")
    result = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "geocoding", *NO_FETCH
    )
    assert result.returncode == 0 and "nothing new" in result.stderr
    assert len(versions(out)) == 1


def test_an_overlapping_refresh_exits_at_once(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".refresh.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        result = pipeline_cli("refresh", "--datasets", datasets, "--out", out, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "another refresh" in result.stdout and "pid 4242" in result.stdout
    assert not (out / contract.VERSIONS).exists()


def test_the_digest_is_recorded_by_every_build(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    assert (
        pipeline_cli(
            "build", "--datasets", datasets, "--out", out, "--only", "geocoding"
        ).returncode
        == 0
    )
    entry = published(out)["areas"]["geocoding"]
    assert len(entry["input_digest"]) == 64
    cache = json.loads((datasets / ".checksums.json").read_text())
    assert any(key.endswith("countryInfo.txt") for key in cache)
