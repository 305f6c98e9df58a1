"""Cameras the operator owns: each run stores their current images in the image store.

A row of datasets/webcams/webcams.csv with a `snapshot_url` (an IP camera's JPEG endpoint, or
any HTTP(S) image) is an owned camera. A run asks up to `per_run` of them, those asked longest
ago first, `concurrency` at once, each within `timeout_s` and `max_bytes`; a whole JPEG, PNG or
WebP becomes images/owned/<public_id>/<YYYYMMDDTHHMMSSZ>.<ext> (the time it was taken) in the
built-in image host's store, and owned/snapshots.csv lists every stored image (the build reads
it beside snapshots.csv). A camera that does not answer, or answers with something that is not
a whole image, is marked in owned/cameras.csv (status `failing`, its last error, failures in a
row) and asked again next run: nothing else stops. Old images go with the history window
(history.py), and a camera gone from the catalog takes its images with it.

(An object-storage prefix instead of the built-in store would need the same layout under a
key prefix, an upload after each download, and owned/snapshots.csv naming object keys; the
built-in host does not serve those, WEATHERAPI_CDN_URL must point at the bucket's CDN.)
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from contract import Webcams as W
from pipeline.fetch import verify
from pipeline.fetch.files import replace_if_changed
from pipeline.fetch.http import Downloader, HttpConfig
from pipeline.fetch.source import FetchError, FetchReport
from pipeline.webcams.fetch import history

FOLDER = Path("webcams")
IMAGES = Path("images") / "owned"  # under webcams/
SNAPSHOTS = Path("owned") / "snapshots.csv"  # under webcams/
STATE = Path("owned") / "cameras.csv"  # under webcams/
STATE_COLUMNS = ("public_id", "status", "last_attempt", "last_success", "failures", "last_error")
STAMP = "%Y%m%dT%H%M%SZ"
NAME = re.compile(r"([0-9]{8}T[0-9]{6}Z)\.(jpg|png|webp)")
PUBLIC_ID = re.compile(W.PUBLIC_ID)
ENV = {
    "per_run": "WEATHERAPI_CAMERAS_PER_RUN",
    "concurrency": "WEATHERAPI_CAMERA_CONCURRENCY",
    "timeout_s": "WEATHERAPI_CAMERA_TIMEOUT_S",
    "max_bytes": "WEATHERAPI_CAMERA_MAX_BYTES",
    "interval_s": "WEATHERAPI_CAMERA_INTERVAL_S",
}


@dataclass(frozen=True)
class OwnedConfig:
    """How many cameras a run asks, how many at once, how long and how much each may take."""

    per_run: int = 2000
    concurrency: int = 32
    timeout_s: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    # A camera is asked at most this often (the webcams refresh runs more often, for the
    # provider's links): every 10 minutes makes the generated catalog's history density.
    interval_s: float = 600.0

    @classmethod
    def from_env(cls) -> OwnedConfig:
        """The defaults, overridden by WEATHERAPI_CAMERA* variables."""
        config = cls()
        for field_, env in ENV.items():
            raw = os.environ.get(env, "").strip()
            if not raw:
                continue
            try:
                value = type(getattr(config, field_))(raw)
            except ValueError:
                value = 0
            if value <= 0:
                raise FetchError(f"{env}={raw!r}: expected a number above 0")
            config = replace(config, **{field_: value})
        return config


@dataclass(frozen=True)
class Camera:
    public_id: str
    url: str
    timezone: str


def cameras(datasets: Path) -> list[Camera]:
    """The owned cameras of webcams.csv (active rows with a snapshot_url), in file order."""
    path = datasets / FOLDER / "webcams.csv"
    if not path.is_file():
        return []
    from tzfpy import get_tz

    found = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            url = (row.get("snapshot_url") or "").strip()
            public_id = (row.get("public_id") or "").strip()
            if not url or (row.get("status") or "active").strip().lower() != "active":
                continue
            if not url.startswith(("http://", "https://")) or not PUBLIC_ID.fullmatch(public_id):
                raise FetchError(
                    f"{path}: camera {public_id!r}: snapshot_url {url[:60]!r} is "
                    "not an http(s) URL, or the public_id is malformed"
                )
            zone = (
                (row.get("timezone") or "").strip()
                or get_tz(float(row["longitude"]), float(row["latitude"]))
                or "UTC"
            )
            found.append(Camera(public_id, url, zone))
    return found


def load_state(datasets: Path) -> dict[str, dict]:
    try:
        with (datasets / FOLDER / STATE).open(newline="", encoding="utf-8") as handle:
            return {row["public_id"]: row for row in csv.DictReader(handle)}
    except FileNotFoundError:
        return {}


def _save_state(datasets: Path, state: dict[str, dict]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, STATE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for public_id in sorted(state):
        writer.writerow({c: state[public_id].get(c, "") for c in STATE_COLUMNS})
    replace_if_changed(datasets / FOLDER / STATE, out.getvalue().encode())


async def fetch(
    datasets: Path, config: OwnedConfig, report: FetchReport, http_config: HttpConfig | None = None
) -> int:
    """One run over the owned cameras; the number of images stored."""
    notes = report.notes
    owned = cameras(datasets)
    if not owned and not (datasets / FOLDER / IMAGES).is_dir():
        return 0  # no owned cameras, now or before: leave the catalog as it is
    state = {k: v for k, v in load_state(datasets).items() if k in {c.public_id for c in owned}}
    now = int(time.time())
    due = sorted(
        (c for c in owned if _due(state.get(c.public_id), now, config.interval_s)),
        key=lambda c: state.get(c.public_id, {}).get("last_attempt", ""),
    )
    waiting = len(owned) - len(due)
    due = due[: config.per_run]
    http_config = replace(
        http_config or HttpConfig(),
        concurrency=config.concurrency,
        attempts=2,
        connect_timeout_s=min(10.0, config.timeout_s),
        read_timeout_s=config.timeout_s,
        progress=False,
    )
    async with Downloader(http_config) as http:
        results = await asyncio.gather(*(_take(http, datasets, c, config, now) for c in due))
        report.bytes += http.totals.bytes
    stamp = dt.datetime.fromtimestamp(now, dt.timezone.utc).isoformat()
    for camera, error in zip(due, results):
        entry = state.setdefault(camera.public_id, {"public_id": camera.public_id, "failures": "0"})
        entry["last_attempt"] = stamp
        if error is None:
            entry.update(status="ok", last_success=stamp, failures="0", last_error="")
        else:
            entry.update(
                status="failing",
                last_error=error[:300],
                failures=str(int(entry.get("failures") or 0) + 1),
            )
    _save_state(datasets, state)
    failing = [c for c, e in zip(due, results) if e is not None]
    stored = len(due) - len(failing)
    notes.append(
        f"owned cameras: {stored} of {len(due)} asked stored an image"
        + (
            f" ({len(owned) - waiting - len(due)} left for the next run)"
            if len(owned) - waiting > len(due)
            else ""
        )
        + (f"; {waiting} asked less than {config.interval_s:g} s ago" if waiting else "")
        + (
            f"; failing: {', '.join(c.public_id for c in failing[:5])}"
            + (" ..." if len(failing) > 5 else "")
            if failing
            else ""
        )
    )
    await asyncio.to_thread(write_snapshots, datasets, owned, now)
    return stored


def _due(entry: dict | None, now: int, interval_s: float) -> bool:
    """Whether a camera was last asked at least `interval_s` ago (or never)."""
    if not entry or not entry.get("last_attempt"):
        return True
    try:
        last = dt.datetime.fromisoformat(entry["last_attempt"]).timestamp()
    except ValueError:
        return True
    return now - last >= interval_s - 5  # a timer's jitter does not skip a run


async def _take(
    http: Downloader, datasets: Path, camera: Camera, config: OwnedConfig, now: int
) -> str | None:
    """Store one camera's current image; None, or what went wrong (one line)."""
    folder = datasets / FOLDER / IMAGES / camera.public_id
    name = time.strftime(STAMP, time.gmtime(now))
    dest = folder / f"{name}.jpg"
    try:
        await asyncio.wait_for(
            http.download(
                camera.url, dest, max_bytes=config.max_bytes, verify=verify.image(config.max_bytes)
            ),
            config.timeout_s * 2,
        )
    except TimeoutError:
        return f"no whole image within {config.timeout_s * 2:g} s"
    except FetchError as exc:
        return str(exc)
    kind = _kind(dest)
    if kind != "jpg":
        os.replace(dest, folder / f"{name}.{kind}")
    return None


def _kind(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.read(4)
    return "png" if head == b"\x89PNG" else "webp" if head == b"RIFF" else "jpg"


def write_snapshots(datasets: Path, owned: list[Camera], now: int) -> None:
    """Prune every camera's images to the history window, drop the folders of cameras no
    longer owned, and list what is left in owned/snapshots.csv (one rename)."""
    root = datasets / FOLDER / IMAGES
    zones = {c.public_id: c.timezone for c in owned}
    rows = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name not in zones:
            shutil.rmtree(folder, ignore_errors=True)
            continue
        images = {}
        for entry in os.scandir(folder):
            match = NAME.fullmatch(entry.name)
            if match:
                taken = dt.datetime.strptime(match[1], STAMP).replace(tzinfo=dt.timezone.utc)
                images[int(taken.timestamp())] = entry.name
        keep = history.kept(list(images), zones[folder.name], now)
        for taken, name in sorted(images.items()):
            if taken not in keep:
                (folder / name).unlink(missing_ok=True)
                continue
            stamp = dt.datetime.fromtimestamp(taken, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            rows.append(f"{folder.name},{stamp},owned/{folder.name}/{name}\n")
    replace_if_changed(
        datasets / FOLDER / SNAPSHOTS, ("public_id,captured_at,image\n" + "".join(rows)).encode()
    )
