"""Progress of transfers: a bar per transfer on a terminal, one log line per file otherwise."""

from __future__ import annotations

import logging
import sys

log = logging.getLogger("pipeline.fetch")


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """Bars (tqdm) when `bars` or, when None, when stderr is a terminal."""

    def __init__(self, bars: bool | None = None):
        self.bars = sys.stderr.isatty() if bars is None else bars

    def start(self, name: str, total: int):
        """A bar for one transfer (a no-op object without a terminal)."""
        if not self.bars:
            return _NoBar()
        from tqdm import tqdm

        return tqdm(
            total=total or None,
            desc=name,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            leave=False,
            file=sys.stderr,
        )

    def done(self, transfer, partial: bool = False) -> None:
        """One line for a finished transfer, when there are no bars."""
        if self.bars:
            return
        if not transfer.changed:
            log.info("%s: unchanged", transfer.path.name)
            return
        whole = (
            f" of {transfer.bytes_whole / 1e6:,.1f} MB"
            if transfer.bytes_whole > transfer.bytes_written
            else ""
        )
        log.info(
            "%s: %s MB written%s, %s MB moved in %.1f s%s",
            transfer.path.name,
            f"{transfer.bytes_written / 1e6:,.1f}",
            whole,
            f"{transfer.bytes / 1e6:,.1f}",
            transfer.seconds,
            " (resumed)" if partial else "",
        )
