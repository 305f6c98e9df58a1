"""Webcams area: catalog source -> webcams and snapshots tables, server indexes, clusters."""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
import time
from pathlib import Path

import polars as pl

import contract
from contract import Webcams as W
from pipeline.common.io import InputError, describe_inputs, write_parquet
from pipeline.webcams import clusters, index
from pipeline.webcams import links as webcam_links
from pipeline.webcams import places as webcams_places
from pipeline.webcams import snapshots as webcams_snapshots
from pipeline.webcams.sources import catalog as webcam_catalog
from pipeline.webcams.sources import generated as webcams_generated
from pipeline.webcams.sources.normalised import ACTIVE, KEY, WebcamCatalog, shown_coordinates

log = logging.getLogger("pipeline.webcams")
# Bump when the derived files change for the same inputs (part of the data version).
BUILDER_REVISION = 2
SCALE_ENV = "WEATHERAPI_WEBCAMS_SCALE"
LICENCE = (
    "Webcam catalog and images: the operator's own (or generated); place links: "
    "GeoNames (https://www.geonames.org/), CC BY 4.0."
)


def build(datasets: Path, version: Path) -> contract.AreaEntry:
    """Build the webcams area into `version`; return its manifest entry."""
    if webcam_catalog.present(datasets):
        log.info("reading the webcam catalog from %s", datasets / webcam_catalog.FOLDER)
        catalog = webcam_catalog.read(datasets)
        places, linked_to, gazetteer = webcams_places.gazetteer(version)
    else:
        scale = generator_scale()
        places, linked_to, gazetteer = webcams_places.gazetteer(version)
        log.info(
            "no %s: generating the offline default catalog (scale %g)",
            datasets / webcam_catalog.FOLDER,
            scale,
        )
        catalog = webcams_generated.generate(places, int(time.time()), scale)
    webcams, coverage = webcams_places.link(shown_coordinates(catalog.webcams), places)
    del places
    webcams = webcams.select(W.WEBCAM_COLUMNS).sort("public_id")
    rows = {"webcams": write_parquet(webcams.to_arrow(), version / W.WEBCAMS)}
    served = webcams.filter(pl.col("status") == ACTIVE).drop("status")
    log.info("%d webcams, %d served (active)", webcams.height, served.height)
    index.write(version, served)
    link_files = webcam_links.write(version, datasets, served["public_id"].to_list())
    cells = clusters.write(version, served["latitude"].to_numpy(), served["longitude"].to_numpy())
    series = catalog.snapshots(served["public_id"])
    written = webcams_snapshots.write(version, series, served["public_id"], served["timezone"])
    rows["webcam_snapshots"] = written.snapshots
    tables = {name: {"file": path, "rows": rows[name]} for name, path in W.TABLES.items()}
    files = sorted(
        [t["file"] for t in tables.values()]
        + index.FILES
        + clusters.FILES
        + written.files
        + link_files
    )
    counts = {
        "webcams": webcams.height,
        "served": served.height,
        "snapshots": written.snapshots,
        "image_files": written.image_files,
        "cluster_cells": cells,
    }
    object_keys = int((series.images["kind"] == KEY).sum())
    counts["object_key_images"] = object_keys
    return _manifest_entry(
        catalog,
        datasets,
        tables,
        files,
        counts,
        coverage,
        {
            "linked_to": linked_to,
            "dropped_snapshots": series.dropped,
            "images_sha256": written.images_sha256,
            "rendered_images": series.rendered,
            "warnings": _warnings(object_keys),
            "linked_with": [gazetteer, webcams_places.linker_versions()],
        },
    )


def update(
    datasets: Path,
    previous: Path,
    version: Path,
    entry: contract.AreaEntry,
    parts: frozenset[str],
) -> contract.AreaEntry:
    """Rebuild only the provider links (every few minutes: their tokens expire) over the
    previous version's other files, hard-linked; any other change builds the area whole."""
    if parts != {"links"} or entry["source"]["generated"]:
        return build(datasets, version)
    for rel in entry["files"]:
        if rel != W.PROVIDER_LINKS:
            _link(previous / rel, version / rel)
    public_ids = pa_ipc_column(previous / W.CAMS_ARROW, "public_id")
    link_files = webcam_links.write(version, datasets, public_ids)
    inputs = [i for i in entry["inputs"] if not i["path"].startswith(webcam_links.FOLDER + "/")]
    inputs += describe_inputs(webcam_links.files(datasets), datasets)
    files = sorted([f for f in entry["files"] if f != W.PROVIDER_LINKS] + link_files)
    return {
        **entry,
        "inputs": inputs,
        "files": files,
        "version": _version(entry["source"]["kind"], inputs, entry),
    }


def pa_ipc_column(path: Path, name: str) -> list:
    """One column of an Arrow IPC file."""
    import pyarrow.feather as feather

    return feather.read_table(path, columns=[name]).column(name).to_pylist()


def _link(src: Path, dst: Path) -> None:
    """Hard-link a file of the previous version (a copy where links cannot be made)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _version(kind: str, inputs: list[dict], facts: dict) -> str:
    """The area's data version: what its artifacts are made of."""
    fingerprint = (
        contract.SCHEMA_VERSION,
        BUILDER_REVISION,
        kind,
        [i["sha256"] for i in inputs],
        facts.get("images_sha256"),
        facts["linked_to"],
        facts["linked_with"],
        sorted(facts.get("generator", {}).items()),
    )
    return f"webcams-{hashlib.sha256(repr(fingerprint).encode()).hexdigest()[:12]}"


def _warnings(object_keys: int) -> list[str]:
    """What the operator must know to serve this build as intended."""
    if not object_keys:
        return []
    message = (
        f"{object_keys} snapshot images are object keys on a CDN: their links work only "
        "with WEATHERAPI_CDN_URL set to that CDN (the built-in image host does not hold "
        "them)"
    )
    log.warning(message)
    return [message]


def generator_scale() -> float:
    """Size of the generated catalog relative to the default (WEATHERAPI_WEBCAMS_SCALE)."""
    raw = os.environ.get(SCALE_ENV, "1")
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not 0 < scale <= 10:
        raise InputError(SCALE_ENV, f"must be a number in (0, 10], got {raw!r}")
    return scale


def _manifest_entry(
    catalog: WebcamCatalog,
    datasets: Path,
    tables: dict,
    files: list[str],
    counts: dict,
    coverage: dict,
    facts: dict,
) -> dict:
    links = webcam_links.files(datasets) if catalog.kind == "real" else []
    inputs = describe_inputs(catalog.inputs + links, datasets)
    generated = catalog.kind == "generated"
    return {
        "version": _version(catalog.kind, inputs, {**facts, "generator": catalog.details}),
        "schema_version": contract.SCHEMA_VERSION,
        "source": {
            "kind": catalog.kind,
            "generated": generated,
            "notes": catalog.notes,
            "licence": LICENCE,
            **({"generator": catalog.details} if generated else {}),
        },
        "inputs": inputs,
        "tables": tables,
        "files": files,
        "counts": counts,
        "coverage": coverage,
        **{k: v for k, v in facts.items() if k != "images_sha256" or v},
    }
