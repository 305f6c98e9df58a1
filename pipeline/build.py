"""Thin build wiring: run each area's builder into a new version, then publish it atomically."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import contract
from pipeline.area import Builder
from pipeline.areas import BUILDERS
from pipeline.common import publish
from pipeline.common.fingerprint import input_digest
from pipeline.common.io import InputError

log = logging.getLogger("pipeline")


def run_build(
    datasets: Path,
    out: Path,
    only: list[str] | None = None,
    partial: dict[str, frozenset[str]] | None = None,
    timings: dict[str, float] | None = None,
) -> Path:
    """Build the requested areas (all by default) into a new published version; return it.
    An area in `partial` rebuilds only those parts of its inputs (Builder.update) over the
    published version's other files. `timings` receives the seconds each area took, as it is
    built (for pipeline.metrics)."""
    wanted = [b.name for b in BUILDERS if not only or b.name in only]
    partial = {area: parts for area, parts in (partial or {}).items() if area in wanted}
    timings = {} if timings is None else timings
    with publish.build_lock(out):
        previous = contract.current_version_dir(out)
        carried = _carried_areas(previous, [a for a in wanted if a not in partial])
        if previous is None or any(area not in carried for area in partial):
            partial = {}  # nothing to update from: build them whole
        version = publish.new_version_dir(out)
        log.info("building %s into %s", ", ".join(wanted), version)
        try:
            areas: dict[str, contract.AreaEntry] = {}
            for builder in BUILDERS:
                area = builder.name
                if area in wanted:
                    started = time.perf_counter()
                    areas[area] = _build_area(
                        builder, datasets, previous, version, carried.get(area), partial.get(area)
                    )
                    timings[area] = time.perf_counter() - started
                elif previous is not None and area in carried:
                    areas[area] = publish.carry_over(previous, version, area, carried[area])
                    log.info("%s: carried over from %s", area, previous.name)
            tables = {
                name: t["file"]
                for entry in areas.values()
                for name, t in entry.get("tables", {}).items()
            }
            publish.write_catalog(version, tables)
            publish.write_manifest(
                version,
                {
                    "schema_version": contract.SCHEMA_VERSION,
                    "build_id": version.name,
                    "areas": areas,
                },
            )
            publish.publish(out, version)
        except BaseException:
            publish.discard(version)
            raise
        publish.prune(out)
    log.info("published %s", version.name)
    return version


def _build_area(
    builder: Builder,
    datasets: Path,
    previous: Path | None,
    version: Path,
    before: contract.AreaEntry | None,
    parts: frozenset[str] | None,
) -> contract.AreaEntry:
    """One area built whole, or only its `parts` over the previous version (`before` its
    entry there); the entry with the digests of its inputs."""
    started = time.perf_counter()
    # Before the build: a file arriving meanwhile makes the next refresh build.
    digest = input_digest(datasets, builder.folders)
    digests = {part: input_digest(datasets, folders) for part, folders in builder.parts}
    if parts and builder.update is not None and before is not None and previous is not None:
        entry = builder.update(datasets, previous, version, _own(before), parts)
        log.info(
            "%s: %s rebuilt, the rest linked from %s, in %.1f s",
            builder.name,
            ", ".join(sorted(parts)),
            previous.name,
            time.perf_counter() - started,
        )
    else:
        entry = builder.build(datasets, version)
        log.info("%s: done in %.1f s", builder.name, time.perf_counter() - started)
    entry = {**entry, "input_digest": digest}
    if digests:
        entry["input_digests"] = digests
    return entry


def _own(entry: contract.AreaEntry) -> contract.AreaEntry:
    """A published entry without what the build wiring added to it."""
    own = entry.copy()
    for key in ("input_digest", "input_digests", "carried_over_from"):
        own.pop(key, None)  # type: ignore[misc]  # all three are NotRequired keys
    return own


def _carried_areas(previous: Path | None, wanted: list[str]) -> dict[str, contract.AreaEntry]:
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
        raise InputError(
            path,
            f"the published manifest is unreadable ({type(exc).__name__}: "
            f"{exc}), so its areas cannot be carried over; build every "
            "area (no --only) to replace it",
        ) from None
    return {area: entry for area, entry in areas.items() if area not in wanted}
