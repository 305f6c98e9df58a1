"""Small real builds for tests: geocoding from the hand-made GeoNames fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import contract
from tests.support.procs import ROOT, run_pipeline

FIXTURE = ROOT / "tests" / "fixtures" / "geonames"


def place(n: int) -> str:
    """A GeoNames row of one more place, "Place n": builds with it differ from those without."""
    return (
        f"99990{n:02d}\tPlace {n}\tPlace {n}\t\t47.0\t8.0\tP\tPPL\tCH\t\tZH\t\t\t\t{1000 + n}"
        "\t\t400\tEurope/Zurich\t2026-01-01\n"
    )


def geocoding_build(tmp: Path, out: Path, extra: str = "") -> Path:
    """Build geocoding from a copy of the fixture (plus `extra` rows) into `out`; the version."""
    datasets = tmp / f"datasets{len(list(tmp.glob('datasets*')))}"
    shutil.copytree(FIXTURE, datasets / "geonames")
    with open(datasets / "geonames" / "cities500.txt", "a", encoding="utf-8") as handle:
        handle.write(extra)
    run_pipeline("build", "--datasets", str(datasets), "--out", str(out), "--only", "geocoding")
    version = contract.current_version_dir(out)
    assert version is not None
    return version
