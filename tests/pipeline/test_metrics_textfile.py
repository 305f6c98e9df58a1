"""The pipeline's Prometheus text file: written by `build` and `refresh` at
WEATHERAPI_METRICS_TEXTFILE, merged with what it replaces, atomically; and its JSON log lines."""

from __future__ import annotations

import json
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

import contract
from pipeline import metrics
from pipeline.common import logs as pipeline_logs
from pipeline.fetch.source import FetchReport
from server.observe import logs as server_logs


def samples(path: Path) -> dict[tuple[str, tuple], float]:
    """{(name, (command, source or area[, outcome])): value} of the text file, parsed as
    node_exporter would."""
    return {
        (
            s.name,
            tuple(v for k, v in s.labels.items() if k != "outcome")
            + ((s.labels["outcome"],) if "outcome" in s.labels else ()),
        ): s.value
        for family in text_string_to_metric_families(path.read_text())
        for s in family.samples
    }


def area_bytes(out: Path, area: str) -> int:
    folder = contract.current_version_dir(out) / area
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_build_writes_the_areas_and_the_run(tmp_path, datasets, pipeline_cli):
    textfile, out = tmp_path / "textfile" / "weatherapi.prom", tmp_path / "out"
    before = time.time()
    result = pipeline_cli(
        "build",
        "--datasets",
        datasets,
        "--out",
        out,
        "--only",
        "geocoding",
        WEATHERAPI_METRICS_TEXTFILE=str(textfile),
    )
    assert result.returncode == 0, result.stderr
    got = samples(textfile)
    assert got[("weatherapi_pipeline_area_outcome", ("geocoding", "published"))] == 1
    assert got[("weatherapi_pipeline_area_outcome", ("geocoding", "failed"))] == 0
    assert got[("weatherapi_pipeline_area_bytes", ("geocoding",))] == area_bytes(out, "geocoding")
    assert 0 < got[("weatherapi_pipeline_area_duration_seconds", ("geocoding",))] < 600
    attempt = got[("weatherapi_pipeline_area_last_attempt_timestamp_seconds", ("geocoding",))]
    success = got[("weatherapi_pipeline_area_last_success_timestamp_seconds", ("geocoding",))]
    assert before <= attempt <= success <= time.time()
    assert got[("weatherapi_pipeline_run_outcome", ("build", "done"))] == 1
    assert ("weatherapi_pipeline_area_outcome", ("forecast", "published")) not in got
    # only the file and its lock: the temporary file was renamed into place
    assert sorted(p.name for p in textfile.parent.iterdir()) == [
        "weatherapi.prom",
        "weatherapi.prom.lock",
    ]


def test_a_failed_build_keeps_the_last_success_and_a_refresh_adds_its_own(
    tmp_path, datasets, pipeline_cli
):
    textfile, out = tmp_path / "weatherapi.prom", tmp_path / "out"
    env = {"WEATHERAPI_METRICS_TEXTFILE": str(textfile)}
    assert (
        pipeline_cli(
            "build", "--datasets", datasets, "--out", out, "--only", "geocoding", **env
        ).returncode
        == 0
    )
    good = samples(textfile)
    (datasets / "geonames" / "cities500.txt").write_text("1\tonly three\tcolumns\n")
    failed = pipeline_cli(
        "build", "--datasets", datasets, "--out", out, "--only", "geocoding", **env
    )
    assert failed.returncode == 1
    bad = samples(textfile)
    success = ("weatherapi_pipeline_area_last_success_timestamp_seconds", ("geocoding",))
    attempt = ("weatherapi_pipeline_area_last_attempt_timestamp_seconds", ("geocoding",))
    assert bad[success] == good[success] and bad[attempt] > good[attempt]
    assert bad[("weatherapi_pipeline_area_outcome", ("geocoding", "failed"))] == 1
    assert bad[("weatherapi_pipeline_run_outcome", ("build", "failed"))] == 1
    assert (
        bad[("weatherapi_pipeline_run_last_success_timestamp_seconds", ("build",))]
        == good[("weatherapi_pipeline_run_last_success_timestamp_seconds", ("build",))]
    )
    refreshed = pipeline_cli(
        "refresh", "--datasets", datasets, "--out", out, "--only", "geocoding", **env
    )
    assert refreshed.returncode == 1  # the same broken input, now found by the refresh
    after = samples(textfile)
    assert after[("weatherapi_pipeline_run_outcome", ("refresh", "failed"))] == 1
    assert after[("weatherapi_pipeline_run_outcome", ("build", "failed"))] == 1  # kept
    assert after[success] == good[success]


def test_sources_not_fetched_this_time_are_carried_over(tmp_path):
    textfile = tmp_path / "weatherapi.prom"
    first = metrics.Run("refresh")
    first.fetched("gfs", FetchReport("gfs", changed=True, bytes=1234, seconds=2.5), False, 3.0)
    first.fetched("ecmwf", None, True, 1.0)
    first.fetched("cams-europe", None, False, 0.5)
    first.finish(1)
    metrics.write(textfile, first)
    got = samples(textfile)
    assert got[("weatherapi_pipeline_source_outcome", ("gfs", "new_data"))] == 1
    assert got[("weatherapi_pipeline_source_bytes", ("gfs",))] == 1234
    assert got[("weatherapi_pipeline_source_duration_seconds", ("gfs",))] == 2.5
    assert got[("weatherapi_pipeline_source_outcome", ("ecmwf", "retry_later"))] == 1
    assert got[("weatherapi_pipeline_source_outcome", ("cams-europe", "failed"))] == 1
    assert ("weatherapi_pipeline_source_last_success_timestamp_seconds", ("ecmwf",)) not in got
    second = metrics.Run("refresh")
    second.fetched("ecmwf", FetchReport("ecmwf", changed=False, seconds=0.2), False, 0.2)
    second.finish(0)
    metrics.write(textfile, second)
    again = samples(textfile)
    assert again[("weatherapi_pipeline_source_outcome", ("ecmwf", "nothing_new"))] == 1
    assert (
        again[("weatherapi_pipeline_source_last_success_timestamp_seconds", ("ecmwf",))]
        >= second.started
    )
    for key, value in got.items():  # gfs and cams-europe as they were
        if key[1][0] in ("gfs", "cams-europe"):
            assert again[key] == value


def test_a_damaged_file_is_replaced(tmp_path):
    textfile = tmp_path / "weatherapi.prom"
    textfile.write_text("not {the format\n")
    run = metrics.Run("build")
    run.finish(0)
    metrics.write(textfile, run)
    assert samples(textfile)[("weatherapi_pipeline_run_outcome", ("build", "done"))] == 1


def test_json_log_lines_use_the_servers_field_names(tmp_path, datasets, pipeline_cli):
    result = pipeline_cli(
        "build",
        "--datasets",
        datasets,
        "--out",
        tmp_path / "out",
        "--only",
        "geocoding",
        WEATHERAPI_LOG_FORMAT="json",
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert any(r["message"].startswith("published ") for r in records)
    for record in records:
        assert {
            "@timestamp",
            "log.level",
            "log.logger",
            "process.pid",
            "message",
            "ecs.version",
        } <= record.keys()
    assert pipeline_logs.ECS_FIELDS.items() <= server_logs.ECS_FIELDS.items()
    assert pipeline_logs.ECS_VERSION == server_logs.ECS_VERSION


def test_an_unknown_log_format_is_refused(tmp_path, datasets, pipeline_cli):
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", WEATHERAPI_LOG_FORMAT="xml"
    )
    assert result.returncode == 2 and "WEATHERAPI_LOG_FORMAT must be text or json" in result.stderr
