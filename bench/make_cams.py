"""Write synthetic CAMS runs in the real formats, at any resolution up to the real one.

    python bench/make_cams.py --out DIR [--europe-step 0.1] [--global-step 0.4]
                              [--domains europe global] [--runs 1] [--date YYYY-MM-DD]

DIR/cams/europe/ gets CAMS Europe forecast files (0.1° is the real 700 x 420 grid, 97 hourly
lead times, 13 variables, about 1.5 GB a run), DIR/cams/global/ CAMS global surface and
model-level files (0.4° is the real 900 x 451 grid). `python -m pipeline build --datasets DIR`
then ingests them as real inputs. The fields are synthetic (pipeline/air_quality/sources/synthetic.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/make_cams.py`
    sys.path.insert(0, str(ROOT))

from pipeline.air_quality.sources import generated as gen  # noqa: E402 (after sys.path)

DAY_S = 86400


def write(
    out: Path,
    day_s: int,
    domains=("europe", "global"),
    runs: int = 1,
    europe_step: float = 0.1,
    global_step: float = 0.4,
) -> list[Path]:
    """`runs` daily 00 UTC runs ending on `day_s` of each domain; returns the files written."""
    files: list[Path] = []
    for k in range(runs - 1, -1, -1):
        run = day_s - k * DAY_S
        day = gen.stamp(run)
        if "europe" in domains:
            files.append(
                gen.write_europe_run(
                    out / "cams" / "europe" / f"cams-europe-{day}.nc",
                    run,
                    gen.europe_grid(europe_step),
                )
            )
        if "global" in domains:
            files += gen.write_global_run(
                out / "cams" / "global" / f"cams-global-{day}", run, gen.global_grid(global_step)
            )
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/make_cams.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--europe-step", type=float, default=0.1)
    parser.add_argument("--global-step", type=float, default=0.4)
    parser.add_argument(
        "--domains", nargs="+", choices=("europe", "global"), default=["europe", "global"]
    )
    parser.add_argument("--runs", type=int, default=1, help="daily runs (default 1)")
    parser.add_argument("--date", help="date of the newest run (default: today, UTC)")
    args = parser.parse_args(argv)
    day = (
        datetime.strptime(args.date, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        if args.date
        else time.time()
    )
    started = time.perf_counter()
    files = write(
        args.out,
        int(day // DAY_S * DAY_S),
        args.domains,
        args.runs,
        args.europe_step,
        args.global_step,
    )
    total = sum(f.stat().st_size for f in files)
    print(
        f"wrote {len(files)} files, {total / 2**20:.0f} MiB, in "
        f"{time.perf_counter() - started:.1f} s under {args.out}/cams"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
