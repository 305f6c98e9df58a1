"""New alerts alone: `refresh` rebuilds only the forecast's alerts artifacts, the grids are the
previous version's files (hard links: the same inodes), and the version is the one a whole
build of the same inputs would name."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

import contract
from contract import Forecast as F
from tests.support import forecast_inputs as fi

RING = [[8.0, 47.0], [9.0, 47.0], [9.0, 48.0], [8.0, 48.0], [8.0, 47.0]]


def published(out: Path) -> tuple[Path, dict]:
    version = contract.current_version_dir(out)
    return version, contract.read_manifest(version)["areas"]["forecast"]


def alert_ids(version: Path) -> list[str]:
    return pq.read_table(version / F.ALERTS).column("id").to_pylist()


def test_new_alerts_relink_the_grids_and_rebuild_only_the_alerts(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    fi.write_gfs_run(datasets / "forecast", fi.last_run(), 6, fi.KNOWN)
    nws = datasets / "alerts" / "nws" / "active.geojson"
    fi.write_nws(
        nws,
        [
            fi.nws_alert(
                "a-1", "Wind Advisory", RING, "2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z"
            )
        ],
    )
    first = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "forecast", "--no-fetch"
    )
    assert first.returncode == 0, first.stderr[-3000:]
    before, entry = published(out)
    assert alert_ids(before) == ["a-1"] and set(entry["input_digests"]) == {"model", "alerts"}

    fi.write_nws(
        nws,
        [
            fi.nws_alert(
                "a-1", "Wind Advisory", RING, "2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z"
            ),
            fi.nws_alert(
                "a-2", "Flood Warning", RING, "2030-01-01T06:00:00Z", "2030-01-02T00:00:00Z"
            ),
        ],
    )
    again = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "forecast", "--no-fetch"
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "building forecast (alerts only)" in again.stderr
    assert "forecast: alerts rebuilt, the rest linked from" in again.stderr
    after, updated = published(out)
    assert after != before and alert_ids(after) == ["a-1", "a-2"]
    for grid in (F.HOURLY, F.STATIC):  # not rewritten: the very same files
        assert (after / grid).stat().st_ino == (before / grid).stat().st_ino
    assert updated["input_digests"]["model"] == entry["input_digests"]["model"]
    assert updated["alerts"]["count"] == 2 and updated["version"] != entry["version"]

    # A whole build of the same inputs names the same version and writes the same alerts.
    whole = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "whole", "--only", "forecast"
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    rebuilt, full = published(tmp_path / "whole")
    assert full["version"] == updated["version"] and full["inputs"] == updated["inputs"]
    for name in (F.ALERTS, F.ALERT_VERTICES, F.ALERT_BOXES):
        assert (rebuilt / name).read_bytes() == (after / name).read_bytes()


def test_a_changed_model_builds_the_area_whole(tmp_path, datasets, pipeline_cli):
    out = tmp_path / "out"
    fi.write_gfs_run(datasets / "forecast", fi.last_run(), 6, fi.KNOWN)
    assert (
        pipeline_cli(
            "refresh", "--datasets", datasets, "--out", out, "--only", "forecast", "--no-fetch"
        ).returncode
        == 0
    )
    before, _ = published(out)
    fi.write_gfs_run(datasets / "forecast", fi.last_run(), 6, {**fi.KNOWN, "t2m": 280.0})
    fi.write_nws(datasets / "alerts" / "nws.geojson", [])
    result = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "forecast", "--no-fetch"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "building forecast\n" in result.stderr or "building forecast " in result.stderr
    after, _ = published(out)
    assert (after / F.HOURLY).stat().st_ino != (before / F.HOURLY).stat().st_ino
