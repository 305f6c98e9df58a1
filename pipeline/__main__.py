"""Command line: python -m pipeline build [--datasets DIR] [--out DIR] [--only AREA ...],
python -m pipeline fetch SOURCE [--datasets DIR] [--base-url URL] [--run RUN] [--dry-run] and
python -m pipeline refresh [--datasets DIR] [--out DIR] [--only AREA ...] [--sources SOURCE ...]
[--no-fetch] (build and refresh also [--dask-scheduler ADDRESS]) and
python -m pipeline publish --to s3://BUCKET/PREFIX [--out DIR].

Exit codes: 0 done (or nothing new), 1 failed, 2 bad usage, 75 a fetch to try again later (the
upstream has not published yet or is busy), 130/143 interrupted or terminated.

Environment: WEATHERAPI_LOG_FORMAT=text|json (JSON lines with ECS field names),
WEATHERAPI_METRICS_TEXTFILE=PATH, the Prometheus text file build and refresh write
(pipeline.metrics), WEATHERAPI_DASK_SCHEDULER=ADDRESS, the default of --dask-scheduler
(pipeline.common.bands), and for publish the usual AWS_* variables (endpoint, region, credentials)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

import contract
from pipeline import metrics
from pipeline.common import bands, logs
from pipeline.common.io import InputError
from pipeline.fetch.source import LATEST, FetchError, FetchOptions
from pipeline.fetch.sources import SOURCES
from pipeline.refresh import refresh, selected_sources

EX_TEMPFAIL = 75  # sysexits.h: a scheduler's next run may succeed


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so the build unwinds: its unpublished version
    and temporary files are removed (the default action would kill the process at once)."""


def _terminate(signum, frame) -> None:
    # A second SIGTERM during the clean-up kills at once, as a supervisor expects.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the build, and turn failures into one clear line and an exit code."""
    parser = argparse.ArgumentParser(prog="python -m pipeline")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build and publish a new artifact version")
    build.add_argument(
        "--datasets", type=Path, default=Path("datasets"), help="raw inputs (default: datasets/)"
    )
    build.add_argument(
        "--out", type=Path, default=Path("build"), help="output directory (default: build/)"
    )
    build.add_argument(
        "--only",
        nargs="+",
        action="extend",
        choices=contract.AREAS,
        metavar="AREA",
        help=f"areas to build: {', '.join(contract.AREAS)}",
    )
    _dask_option(build)
    fetch = commands.add_parser("fetch", help="bring a source's newest data into datasets/")
    fetch.add_argument(
        "source",
        choices=sorted(SOURCES),
        metavar="SOURCE",
        help=f"one of: {', '.join(sorted(SOURCES))}",
    )
    fetch.add_argument(
        "--datasets",
        type=Path,
        default=Path("datasets"),
        help="where raw inputs go (default: datasets/)",
    )
    fetch.add_argument(
        "--base-url",
        help="the upstream's base URL (a mirror, a test server); "
        "default: the source's environment variable, else "
        "the public upstream",
    )
    fetch.add_argument(
        "--run",
        default=LATEST,
        help="'latest' (the newest complete run, default) or a cycle YYYYMMDDHH",
    )
    fetch.add_argument("--dry-run", action="store_true", help="say what would be fetched")
    again = commands.add_parser(
        "refresh",
        help="fetch what is new, rebuild what changed, publish (safe to run on a schedule)",
    )
    again.add_argument(
        "--datasets", type=Path, default=Path("datasets"), help="raw inputs (default: datasets/)"
    )
    again.add_argument(
        "--out", type=Path, default=Path("build"), help="output directory (default: build/)"
    )
    again.add_argument(
        "--only",
        nargs="+",
        action="extend",
        choices=contract.AREAS,
        metavar="AREA",
        help="refresh only these areas (and their sources)",
    )
    again.add_argument(
        "--sources",
        nargs="+",
        action="extend",
        choices=sorted(SOURCES),
        metavar="SOURCE",
        help="fetch only these sources (default: all)",
    )
    again.add_argument(
        "--no-fetch",
        action="store_true",
        help="fetch nothing: rebuild what changed in --datasets (files placed "
        "there by hand or by a fetch run apart)",
    )
    again.add_argument(
        "--keep-runs",
        type=int,
        metavar="N",
        help="runs kept per source after a successful build (default: each "
        "source's own, a day of cycles for the models)",
    )
    _dask_option(again)
    upload = commands.add_parser(
        "publish",
        help="copy the published version to object storage and point its current.json at it",
    )
    upload.add_argument("--to", required=True, metavar="s3://BUCKET/PREFIX", help="where to")
    upload.add_argument(
        "--out", type=Path, default=Path("build"), help="output directory (default: build/)"
    )
    args = parser.parse_args(argv)
    log_format = os.environ.get(logs.ENV) or "text"
    if log_format not in logs.FORMATS:
        parser.error(f"{logs.ENV} must be text or json, got {log_format!r}")
    logs.configure(log_format)
    if args.command == "fetch":
        return _fetch(args)
    if args.command == "publish":
        return _publish(args)
    if args.command == "build" and not args.datasets.is_dir():
        parser.error(
            f"--datasets {args.datasets} is not a directory (an empty directory builds "
            "every area from its offline default)"
        )
    textfile = os.environ.get(metrics.ENV)
    run = metrics.Run(args.command) if textfile else None
    code = _build_or_refresh(args, run)
    if run is not None:
        run.finish(code)
        try:
            metrics.write(Path(textfile), run)
        except OSError as exc:  # the build stands; only its metrics are missing
            print(
                f"warning: cannot write the metrics file {textfile}: {exc.strerror or exc}",
                file=sys.stderr,
            )
    return code


def _dask_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=os.environ.get(bands.ENV) or None,
        help="compute the forecast and air-quality grids' bands on the Dask cluster at "
        "ADDRESS (tcp://HOST:8786), or on a local dask scheduler (threads or "
        f"synchronous); default: {bands.ENV}, else in this process",
    )


def _build_or_refresh(args: argparse.Namespace, run: metrics.Run | None) -> int:
    """Run a build or a refresh, turning its failures into one line and an exit code."""
    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate),
        # Python's own: polars installs one that restarts blocking system calls, so a
        # build waiting in one (a read from a pipe) would not stop on Ctrl-C.
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
    }
    try:
        with bands.configured(args.dask_scheduler):
            if args.command == "refresh":
                return _refresh(args, run)
            metrics.build(run, args.datasets, args.out, args.only)
    except InputError as exc:
        return _fail(args.out, f"{exc.path}: {exc.problem}")
    except OSError as exc:
        where = exc.filename or args.out
        return _fail(args.out, f"{where}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        return _fail(args.out, "interrupted", code=130)
    except Terminated:
        return _fail(args.out, "terminated (SIGTERM)", code=143)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _fetch(args: argparse.Namespace) -> int:
    """Run one source's fetch; one line on failure, the summary on success."""
    source = SOURCES[args.source]
    options = FetchOptions(
        datasets=args.datasets, base_url=args.base_url, run=args.run, dry_run=args.dry_run
    )
    try:
        report = asyncio.run(source.fetch(options))
    except FetchError as exc:
        print(f"error: fetch {args.source} failed: {exc}", file=sys.stderr)
        return EX_TEMPFAIL if exc.retry_later else 1
    except KeyboardInterrupt:
        print(f"error: fetch {args.source} interrupted", file=sys.stderr)
        return 130
    for line in report.planned:
        print(line)
    for note in report.notes:
        print(f"{args.source}: {note}", file=sys.stderr)
    saved = report.bytes_whole - report.bytes if report.bytes_whole else 0
    print(
        f"{args.source}: {'would fetch' if args.dry_run else 'fetched'} {report.files} "
        f"file(s), {report.bytes:,} bytes in {report.seconds:.1f} s"
        + (f" ({saved:,} bytes saved by range requests)" if saved > 0 else "")
        + (f"; run {report.run}" if report.run else "")
        + ("" if report.changed or args.dry_run else "; nothing new"),
        file=sys.stderr,
    )
    return 0


def _publish(args: argparse.Namespace) -> int:
    """Publish to object storage; one line either way (no credentials in either)."""
    from pipeline.common.remote import RemoteError, publish_remote

    try:
        done = publish_remote(args.out, args.to)
    except (RemoteError, OSError) as exc:
        print(
            f"error: publish to {args.to} failed: {exc}; its current.json is unchanged",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(
            f"error: publish to {args.to} interrupted; its current.json is unchanged",
            file=sys.stderr,
        )
        return 130
    if not done.uploaded:
        print(f"{args.to}: {done.build_id} is already published", file=sys.stderr)
    else:
        print(
            f"{args.to}: published {done.build_id}, {done.files} file(s), {done.bytes:,} bytes "
            f"in {done.seconds:.1f} s"
            + (f"; pruned {', '.join(done.pruned)}" if done.pruned else ""),
            file=sys.stderr,
        )
    return 0


def _refresh(args: argparse.Namespace, run: metrics.Run | None) -> int:
    """Run one refresh (its failures are main's, as a build's are)."""
    args.datasets.mkdir(parents=True, exist_ok=True)
    try:
        sources = [] if args.no_fetch else selected_sources(SOURCES, args.sources, args.only)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return refresh(args.datasets, args.out, sources, args.only, args.keep_runs, run)


def _fail(out: Path, message: str, code: int = 1) -> int:
    try:
        current = contract.current_version_dir(out)
        still = f"; {current.name} is still published" if current else "; nothing is published"
    except OSError:  # its manifest cannot even be looked up: the failure's message says so
        still = "; the published version is unchanged"
    print(f"error: build failed: {message}{still}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
