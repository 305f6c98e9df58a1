"""Thin build wiring: run each area's builder into a new version, then publish it atomically."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

import contract
from pipeline import publish
from pipeline.areas import air_quality, forecast, geocoding, webcams

log = logging.getLogger("pipeline")

# area -> builder(datasets_dir, version_dir) -> manifest entry
BUILDERS: dict[str, Callable[[Path, Path], dict]] = {
    "geocoding": geocoding.build,
    "air_quality": air_quality.build,
    "forecast": forecast.build,
    "webcams": webcams.build,   # after geocoding (contract.AREAS order): links to its places
}


def run_build(datasets: Path, out: Path, only: list[str] | None = None) -> Path:
    """Build the requested areas (all by default) into a new published version; return it."""
    wanted = [a for a in contract.AREAS if a in BUILDERS and (not only or a in only)]
    with publish.build_lock(out):
        previous = contract.current_version_dir(out)
        before = contract.read_manifest(previous) if previous else {"areas": {}}
        version = publish.new_version_dir(out)
        log.info("building %s into %s", ", ".join(wanted), version)
        try:
            areas = {}
            for area in contract.AREAS:
                if area in wanted:
                    started = time.perf_counter()
                    areas[area] = BUILDERS[area](datasets, version)
                    log.info("%s: done in %.1f s", area, time.perf_counter() - started)
                elif area in before["areas"] and previous is not None:
                    areas[area] = publish.carry_over(previous, version, area, before["areas"][area])
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
