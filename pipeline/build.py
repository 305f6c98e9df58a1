"""Thin build wiring: run each area's builder into a new version, then publish it atomically."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import contract
from pipeline.areas import BUILDERS
from pipeline.common import publish
from pipeline.common.fingerprint import input_digest
from pipeline.common.io import InputError

log = logging.getLogger("pipeline")


def run_build(datasets: Path, out: Path, only: list[str] | None = None,
              timings: dict[str, float] | None = None) -> Path:
    """Build the requested areas (all by default) into a new published version; return it.
    `timings` receives the seconds each area took, as it is built (for pipeline.metrics)."""
    wanted = [b.name for b in BUILDERS if not only or b.name in only]
    timings = {} if timings is None else timings
    with publish.build_lock(out):
        previous = contract.current_version_dir(out)
        carried = _carried_areas(previous, wanted)
        version = publish.new_version_dir(out)
        log.info("building %s into %s", ", ".join(wanted), version)
        try:
            areas = {}
            for area, build, folders in BUILDERS:
                if area in wanted:
                    started = time.perf_counter()
                    # Before the build: a file arriving meanwhile makes the next refresh build.
                    digest = input_digest(datasets, folders)
                    areas[area] = {**build(datasets, version), "input_digest": digest}
                    timings[area] = time.perf_counter() - started
                    log.info("%s: done in %.1f s", area, timings[area])
                elif area in carried:
                    areas[area] = publish.carry_over(previous, version, area, carried[area])
                    log.info("%s: carried over from %s", area, previous.name)
            tables = {name: t["file"] for entry in areas.values()
                      for name, t in entry.get("tables", {}).items()}
            publish.write_catalog(version, tables)
            publish.write_manifest(version, {
                "schema_version": contract.SCHEMA_VERSION,
                "build_id": version.name,
                "areas": areas,
            })
            publish.publish(out, version)
        except BaseException:
            publish.discard(version)
            raise
        publish.prune(out)
    log.info("published %s", version.name)
    return version


def _carried_areas(previous: Path | None, wanted: list[str]) -> dict:
    """The published manifest's entries of the areas not rebuilt (read only when there are
    such areas: a full build does not need the old manifest, so a broken one cannot stop it)."""
    if previous is None or all(area in wanted for area in contract.AREAS):
        return {}
    path = previous / contract.MANIFEST
    try:
        areas = contract.read_manifest(previous)["areas"]
        if not all(isinstance(entry, dict) for entry in areas.values()):
            raise TypeError("an area entry is not an object")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # Building without the areas it lists would unpublish them: refuse instead.
        raise InputError(path, f"the published manifest is unreadable ({type(exc).__name__}: "
                               f"{exc}), so its areas cannot be carried over; build every "
                               "area (no --only) to replace it") from None
    return {area: entry for area, entry in areas.items() if area not in wanted}
