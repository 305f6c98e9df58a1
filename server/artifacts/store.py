"""The published build as loaded areas; swaps to a newly published version without a restart."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import contract
from server.http.errors import ApiError

log = logging.getLogger("server.store")
# Any area's loader (server.area.Loader): the store holds every area's data side by side.
Loader = Callable[[Path, contract.AreaEntry], object]
RETRY_AFTER_S = 30
LOADING_RETRY_S = 5  # a server starting loads its areas in about a second
UNPUBLISHED = "unpublished"  # the readiness state while no version is published


@dataclass(frozen=True)
class AreaState:
    """One area of one snapshot: loaded data, or why there is none."""

    state: str  # loading | loaded | absent | failed
    version: str | None = None
    # The area's loaded data, of its Area[DataT]'s DataT: the handler that reads it names that
    # type (`data: ForecastData = store.require(NAME).data`); it may hold the previous good data
    # while `failed`.
    data: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """Every area as loaded from one published version directory."""

    version_dir: Path | None
    build_id: str | None
    areas: Mapping[str, AreaState] = field(default_factory=dict)

    def published(self) -> bool:
        """False when no version is published and no data is held from one served before."""
        return self.version_dir is not None or any(s.data is not None for s in self.areas.values())


def _checked(manifest: object) -> contract.Manifest:
    """The manifest if it has the shape the loaders read (an object of the supported schema
    version whose `areas` map to objects), else ValueError: a KeyError deep in a reload would
    be a traceback every reload interval while /ready went on calling the old build ready."""
    if not isinstance(manifest, dict):
        raise ValueError(f"the manifest is a JSON {type(manifest).__name__}, not an object")
    if manifest.get("schema_version") != contract.SCHEMA_VERSION:
        raise ValueError(f"unsupported schema version {manifest.get('schema_version')!r}")
    areas = manifest.get("areas")
    if not isinstance(areas, dict) or not all(isinstance(e, dict) for e in areas.values()):
        raise ValueError("the manifest's areas are not an object of objects")
    return cast(contract.Manifest, manifest)


class Store:
    """Holds the current snapshot; handlers read it once per request, so a swap never
    disturbs a request in flight (old data stays referenced until that request ends)."""

    def __init__(
        self, build_dir: Path, loaders: Mapping[str, Loader], retry_s: float = RETRY_AFTER_S
    ):
        self.build_dir = build_dir
        self.loaders = dict(loaders)
        self.retry_s = retry_s
        self.loaded = False
        self.attempted = 0.0  # monotonic time of the last load
        # The last line said on each topic ("serving", "manifest", an area's load failure):
        # a retry every retry_s that says the same again is no news (see _say).
        self.said: dict[str, str] = {}
        self.snapshot = Snapshot(None, None, {a: AreaState("loading") for a in contract.AREAS})

    def area(self, name: str) -> AreaState:
        """The current state of one area."""
        return self.snapshot.areas[name]

    def require(self, name: str) -> AreaState:
        """The area's state if it has data to answer with, else a 503 ApiError."""
        state = self.snapshot.areas[name]
        if state.data is None:
            reason = {
                "loading": "is still loading",
                "absent": "is not in the published build",
                "failed": "could not be loaded",
            }.get(state.state, "is unavailable")
            retry = LOADING_RETRY_S if state.state == "loading" else round(self.retry_s)
            raise ApiError(
                503,
                f"{name.replace('_', ' ')} data {reason}",
                headers={"Retry-After": str(max(1, retry))},
            )
        return state

    async def refresh(self, executor: Executor | None = None) -> bool:
        """Load the published version if it changed; True when a new snapshot was installed."""
        target = self._published()
        if self.loaded and target == self.snapshot.version_dir and not self._retry_due():
            return False
        self.attempted = time.monotonic()
        loop = asyncio.get_running_loop()
        snapshot = await loop.run_in_executor(executor, self.load, target)
        self.snapshot = snapshot
        self.loaded = True
        states = ", ".join(f"{a}={s.state}" for a, s in snapshot.areas.items())
        self._say("serving", f"serving {snapshot.build_id or 'no build'} ({states})", logging.INFO)
        return True

    def _say(self, topic: str, line: str, level: int, traceback: bool = False) -> None:
        """Log `line` at `level` (with the traceback being handled) unless it is what was last
        said on `topic`: then at DEBUG, without."""
        repeated = self.said.get(topic) == line
        self.said[topic] = line
        log.log(
            logging.DEBUG if repeated else level, "%s", line, exc_info=traceback and not repeated
        )

    def _published(self) -> Path | None:
        """The published version directory; one whose manifest cannot even be looked up (a
        version directory the server may not search: EACCES) is returned for load() to say
        so in one line, not left to raise a traceback at every reload."""
        try:
            return contract.current_version_dir(self.build_dir)
        except OSError:
            return Path(os.path.realpath(self.build_dir / contract.CURRENT))

    def _retried(self) -> str:
        """When a failed load is tried again, for a log line."""
        return (
            f"tried again every {self.retry_s:g} s"
            if self.retry_s > 0
            else "tried again at every reload check"
        )

    def _retry_due(self) -> bool:
        """True when an area failed to load and retry_s have passed since the last try: a
        failure may be passing (a full disk, a file being copied in), so try again."""
        failed = any(s.state == "failed" for s in self.snapshot.areas.values())
        return failed and time.monotonic() - self.attempted >= self.retry_s

    def load(self, target: Path | None) -> Snapshot:
        """Load every area of `target`, reusing areas whose data version did not change."""
        if target is None:
            if any(s.data is not None for s in self.snapshot.areas.values()):
                return self._unpublished()
            return Snapshot(
                None,
                None,
                {a: AreaState("absent", error="nothing published") for a in contract.AREAS},
            )
        try:
            manifest = _checked(contract.read_manifest(target))
        except (OSError, ValueError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self._say(
                "manifest",
                f"cannot read the manifest {target / contract.MANIFEST}: "
                f"{problem}; {self._retried()}",
                logging.ERROR,
            )
            for area in contract.AREAS:  # a load failure after it is news again
                self.said.pop(area, None)
            return Snapshot(
                target,
                target.name,
                {
                    a: self._failed(a, "manifest unreadable or of an unsupported schema version")
                    for a in contract.AREAS
                },
            )
        self.said.pop("manifest", None)
        areas = {a: self._load_area(a, target, manifest["areas"].get(a)) for a in contract.AREAS}
        return Snapshot(target, manifest.get("build_id"), areas)

    def _unpublished(self) -> Snapshot:
        """`current` no longer leads to a version (removed, dangling, a manifest gone) after
        one was served: keep answering from what is loaded, marked failed so that /ready says
        so, rather than drop every area and call an empty server ready."""
        if self.snapshot.version_dir is not None:
            log.error(
                "%s/current leads to no published version; still serving %s",
                self.build_dir,
                self.snapshot.build_id,
            )
        reason = "the published version is gone (current leads to no version)"
        return Snapshot(
            None,
            self.snapshot.build_id,
            {
                a: self._failed(a, reason) if s.data is not None else s
                for a, s in self.snapshot.areas.items()
            },
        )

    def _load_area(self, area: str, target: Path, entry: contract.AreaEntry | None) -> AreaState:
        if entry is None:
            return AreaState("absent")
        previous = self.snapshot.areas.get(area)
        version = entry.get("version")
        if previous and previous.state == "loaded" and previous.version == version:
            return previous
        if entry.get("schema_version") != contract.SCHEMA_VERSION:
            return self._failed(area, f"unsupported schema version {entry.get('schema_version')!r}")
        loader = self.loaders.get(area)
        if loader is None:
            return AreaState("absent", version, error="not served by this server version")
        try:
            state = AreaState("loaded", version, loader(target, entry))
        except Exception as exc:  # noqa: BLE001 (a broken artifact takes only its area down)
            self._say(
                area,
                f"loading {area} from {target.name} failed: {type(exc).__name__}: "
                f"{exc}; {self._retried()}",
                logging.ERROR,
                traceback=True,
            )
            return self._failed(area, f"{type(exc).__name__} while loading {version}")
        self.said.pop(area, None)
        return state

    def _failed(self, area: str, error: str) -> AreaState:
        previous = self.snapshot.areas.get(area)
        if previous is None or previous.data is None:
            return AreaState("failed", None, None, error)
        return AreaState("failed", previous.version, previous.data, error)

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, body) for GET /ready."""
        snap = self.snapshot
        areas = {
            a: {
                k: v
                for k, v in (("state", s.state), ("version", s.version), ("error", s.error))
                if v is not None
            }
            for a, s in snap.areas.items()
        }
        now = time.time()
        for name, s in snap.areas.items():
            # Loaded but not covering the present (docs/api/service.md#ready): the area answers 503,
            # so say so; readiness is unaffected (every replica holds the same data).
            covers = getattr(s.data, "covers", None)
            if s.state == "loaded" and covers is not None and not covers(now):
                areas[name].update(state="stale", error="the data does not cover the present")
        state = self._state(snap)
        return state == "ready", {"state": state, "build_id": snap.build_id, "areas": areas}

    def _state(self, snap: Snapshot) -> str:
        """The readiness state: ready, loading, unpublished or degraded."""
        if not self.loaded:
            return "loading"
        if not snap.published():  # every area absent, yet all it can answer is 503:
            return UNPUBLISHED  # a load balancer must not send it traffic
        # An area absent from a published version blocks nothing (docs/api/service.md#ready).
        usable = all(s.state in ("loaded", "absent") for s in snap.areas.values())
        return "ready" if usable else "degraded"
