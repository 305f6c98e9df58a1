"""Command line: python -m pipeline build [--datasets DIR] [--out DIR] [--only AREA ...]."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

import contract
from pipeline.build import run_build
from pipeline.common.io import InputError


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
    build.add_argument("--datasets", type=Path, default=Path("datasets"),
                       help="raw inputs (default: datasets/)")
    build.add_argument("--out", type=Path, default=Path("build"),
                       help="output directory (default: build/)")
    build.add_argument("--only", nargs="+", action="extend", choices=contract.AREAS,
                       metavar="AREA", help=f"areas to build: {', '.join(contract.AREAS)}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    if not args.datasets.is_dir():
        parser.error(f"--datasets {args.datasets} is not a directory (an empty directory builds "
                     "every area from its offline default)")
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate),
                # Python's own: polars installs one that restarts blocking system calls, so a
                # build waiting in one (a read from a pipe) would not stop on Ctrl-C.
                signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    try:
        run_build(args.datasets, args.out, args.only)
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


def _fail(out: Path, message: str, code: int = 1) -> int:
    try:
        current = contract.current_version_dir(out)
        still = f"; {current.name} is still published" if current else "; nothing is published"
    except OSError:     # its manifest cannot even be looked up: the failure's message says so
        still = "; the published version is unchanged"
    print(f"error: build failed: {message}{still}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
