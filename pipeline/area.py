"""What one area gives the build: its name, its input folders and the function that builds it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple


class Builder(NamedTuple):
    """An area's builder: build(datasets dir, version dir) writes the area's artifacts into the
    version and returns its manifest entry (pipeline.areas.BUILDERS lists them)."""

    name: str
    build: Callable[[Path, Path], dict]
    folders: tuple[str, ...]        # what it reads under datasets/ (refresh compares them)
