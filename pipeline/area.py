"""What one area gives the build: its name, its input folders and the function that builds it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import contract

# update(datasets dir, previous version dir, new version dir, previous manifest entry, the
# parts whose inputs changed) -> the new manifest entry
Update = Callable[[Path, Path, Path, contract.AreaEntry, frozenset[str]], contract.AreaEntry]


class Builder(NamedTuple):
    """An area's builder: build(datasets dir, version dir) writes the area's artifacts into the
    version and returns its manifest entry (pipeline.areas.BUILDERS lists them).

    An area whose inputs fall into parts that can be rebuilt alone (the forecast's model runs
    and its alerts) names them in `parts` (part -> its folders, together `folders`) and gives
    `update`, which rebuilds only the changed parts over the previous version's other files."""

    name: str
    build: Callable[[Path, Path], contract.AreaEntry]
    folders: tuple[str, ...]  # what it reads under datasets/ (refresh compares them)
    parts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    update: Update | None = None
