"""Deleting old model runs: the oldest complete runs go, a run being written never does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipeline.forecast.sources import runs


def prune_runs(datasets: Path, source: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` complete runs of `source`; return the runs deleted.
    Folders without a marker (a fetch under way, or abandoned) are left alone."""
    if keep < 0:
        raise ValueError("keep must be >= 0")
    held = runs.held_runs(datasets, source)
    doomed = held[: max(0, len(held) - keep)]
    for run in doomed:
        # Renamed to a dot-name first: gone for builds at once, removed at leisure after.
        hidden = run.folder.parent / f".{run.run}.deleting"
        os.replace(run.folder, hidden)
        shutil.rmtree(hidden, ignore_errors=True)
    return [run.run for run in doomed]
