"""Shared fixtures for the pipeline tests: the hand-made GeoNames dump and a CLI runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.procs import pipeline_env

REPO = Path(__file__).resolve().parents[2]
FIXTURE_GEONAMES = REPO / "tests" / "fixtures" / "geonames"
# Real, unmodified GeoNames dumps shared next to the checkout (see PROVENANCE.md there).
SHARED_GEONAMES = Path(__file__).resolve().parents[3] / "shared" / "data" / "geonames"
SHARED_FILES = ("cities15000.zip", "countryInfo.txt", "admin1CodesASCII.txt", "admin2Codes.txt")

# `python -m pytest` from the checkout puts it on sys.path; plain `pytest` does not.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def copy_fixture(datasets: Path) -> Path:
    """Copy the hand-made dump to DATASETS/geonames/ and return that folder."""
    folder = datasets / "geonames"
    shutil.copytree(FIXTURE_GEONAMES, folder)
    return folder


@pytest.fixture
def datasets(tmp_path: Path) -> Path:
    """A fresh datasets directory holding a copy of the fixture dump (safe to modify)."""
    root = tmp_path / "datasets"
    copy_fixture(root)
    return root


@pytest.fixture(scope="session")
def real_datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real GeoNames files copied into a datasets directory; skips when they are absent."""
    missing = [name for name in SHARED_FILES if not (SHARED_GEONAMES / name).is_file()]
    if missing:
        pytest.skip(
            f"real GeoNames dumps not available: {', '.join(missing)} missing in {SHARED_GEONAMES}"
        )
    root = tmp_path_factory.mktemp("real") / "datasets"
    (root / "geonames").mkdir(parents=True)
    for name in SHARED_FILES:
        shutil.copy2(SHARED_GEONAMES / name, root / "geonames" / name)
    return root


@pytest.fixture(scope="session")
def pipeline_cli():
    """Run `python -m pipeline ARGS...` from the repository root, the way a user does."""

    def run(*args: str | Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pipeline", *map(str, args)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=pipeline_env(**env),
        )

    return run
