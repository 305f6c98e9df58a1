"""The pipeline's metrics: every `build` and `refresh` writes a Prometheus text file (for
node_exporter's textfile collector) at WEATHERAPI_METRICS_TEXTFILE, so that an alert can fire
when a source or an area has not been refreshed in time (docs/operations/production.md#pipeline).

Per command, source and area: when it was last attempted, when it last succeeded, how long it
took, the bytes it moved or wrote and its outcome. A run rewrites only what it attempted; the
rest (another command's, a source not fetched this time) is carried over from the file it
replaces. The file is replaced atomically (a temporary file renamed over it), under a lock.
"""

from __future__ import annotations

import fcntl
import time
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

ENV = "WEATHERAPI_METRICS_TEXTFILE"
PREFIX = "weatherapi_pipeline"
OUTCOMES = {
    "run": ("done", "failed", "retry_later"),
    "source": ("new_data", "nothing_new", "retry_later", "failed"),
    # published: built and published; failed: its build failed; discarded: built, but the run
    # failed later, so nothing was published.
    "area": ("published", "failed", "discarded"),
}
LABEL = {"run": "command", "source": "source", "area": "area"}
HELP = {
    "last_attempt_timestamp_seconds": "When it was last attempted (Unix time).",
    "last_success_timestamp_seconds": "When it last succeeded (Unix time).",
    "duration_seconds": "How long its last attempt took.",
    "bytes": "Bytes its last attempt moved (a source) or wrote (an area).",
    "outcome": "1 for the outcome of its last attempt.",
}


@dataclass
class Step:
    """One command's run, one source's fetch or one area's build."""

    kind: str  # run | source | area
    name: str
    outcome: str
    started: float  # Unix time the run started (its attempt)
    ended: float  # Unix time it was recorded, once it had ended
    seconds: float
    bytes: int = 0

    @property
    def succeeded(self) -> bool:
        return self.outcome in ("done", "new_data", "nothing_new", "published")


@dataclass
class Run:
    """What one command did, step by step, for the text file."""

    command: str
    started: float = field(default_factory=time.time)
    steps: list[Step] = field(default_factory=list)
    skipped: bool = False  # it did nothing (another refresh was running): nothing to write

    def add(self, kind: str, name: str, outcome: str, seconds: float, size: int = 0) -> None:
        assert outcome in OUTCOMES[kind], outcome
        self.steps.append(Step(kind, name, outcome, self.started, time.time(), seconds, size))

    def areas(
        self, timings: dict[str, float], wanted: list[str], version: Path | None, published: bool
    ) -> None:
        """The areas of a build: timings of those built; the first wanted area without one
        failed (when the build did); the ones after it were not attempted."""
        for area in wanted:
            if area in timings:
                size = _size(version / area) if version is not None else 0
                self.add(
                    "area", area, "published" if published else "discarded", timings[area], size
                )
            elif not published:
                self.add("area", area, "failed", time.time() - self.started)
                break

    def fetched(self, source: str, report, retry_later: bool, seconds: float) -> None:
        """One source's fetch: its FetchReport, or None when it failed."""
        if report is None:
            self.add("source", source, "retry_later" if retry_later else "failed", seconds)
        else:
            self.add(
                "source",
                source,
                "new_data" if report.changed else "nothing_new",
                report.seconds,
                report.bytes,
            )

    def finish(self, exit_code: int) -> None:
        outcome = {0: "done", 75: "retry_later"}.get(exit_code, "failed")
        self.add("run", self.command, outcome, time.time() - self.started)


def build(
    run: Run | None,
    datasets: Path,
    out: Path,
    only: list[str] | None,
    partial: dict[str, frozenset[str]] | None = None,
) -> Path:
    """pipeline.build.run_build, its areas' steps recorded into `run` (when there is one)."""
    from pipeline.areas import BUILDERS
    from pipeline.build import run_build

    wanted = [b.name for b in BUILDERS if not only or b.name in only]
    timings: dict[str, float] = {}
    try:
        version = run_build(datasets, out, only, partial, timings)
    except BaseException:
        if run is not None:
            run.areas(timings, wanted, None, published=False)
        raise
    if run is not None:
        run.areas(timings, wanted, version, published=True)
    return version


def _size(folder: Path) -> int:
    """Bytes of the files under `folder` (0 when it is gone)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def write(path: Path, run: Run) -> None:
    """Merge `run` into the text file at `path` and replace it atomically."""
    if run.skipped:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build and a refresh may finish together
        values = _read(path)
        for step in run.steps:
            _merge(values, step)
        registry = CollectorRegistry()
        registry.register(_Collector(values))
        write_to_textfile(str(path), registry)


def _read(path: Path) -> dict[str, dict[tuple[str, ...], float]]:
    """{family: {label values: value}} of the file a run replaces ({} if none or unreadable)."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    values: dict[str, dict[tuple[str, ...], float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                kind = sample.name.removeprefix(PREFIX + "_").split("_", 1)[0]
                if sample.name.startswith(PREFIX + "_") and kind in LABEL:
                    # The exposition sorts labels by name: put them back in _merge's order.
                    key = (sample.labels[LABEL[kind]],) + (
                        (sample.labels["outcome"],) if "outcome" in sample.labels else ()
                    )
                    values.setdefault(sample.name, {})[key] = sample.value
    except (ValueError, KeyError):  # a damaged file: start afresh, not fail the build
        return {}
    return values


def _merge(values: dict, step: Step) -> None:
    """Write one step's series over the previous ones."""
    family = f"{PREFIX}_{step.kind}_"
    key = (step.name,)
    values.setdefault(family + "last_attempt_timestamp_seconds", {})[key] = step.started
    values.setdefault(family + "duration_seconds", {})[key] = round(step.seconds, 3)
    if step.kind != "run":
        values.setdefault(family + "bytes", {})[key] = float(step.bytes)
    if step.succeeded:
        values.setdefault(family + "last_success_timestamp_seconds", {})[key] = step.ended
    outcome = values.setdefault(family + "outcome", {})
    for name in OUTCOMES[step.kind]:
        outcome[(step.name, name)] = float(name == step.outcome)


class _Collector:
    """The merged values as gauge families (labels in a fixed order)."""

    def __init__(self, values: dict):
        self.values = values

    def collect(self):
        for kind in OUTCOMES:
            for metric, text in HELP.items():
                if kind == "run" and metric == "bytes":
                    continue
                name = f"{PREFIX}_{kind}_{metric}"
                labels = [LABEL[kind]] + (["outcome"] if metric == "outcome" else [])
                family = GaugeMetricFamily(name, text, labels=labels)
                for key, value in sorted(self.values.get(name, {}).items()):
                    family.add_metric(list(key), value)
                yield family
