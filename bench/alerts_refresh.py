"""Alerts-only refresh benchmark: a server running over (a linked copy of) the default build,
then `python -m pipeline refresh --only forecast --sources alerts` against NWS and MeteoAlarm
stand-ins with a changed alert; the time from the refresh's start until the server's /ready
names the new forecast version (the server's default reload interval, 2 s, included).

    python -m bench.alerts_refresh BUILD_DIR [--alerts 300] [--warnings 20]

bench/forecast.py's prepare() calls measure() (not with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import contract  # noqa: E402
from bench.harness import log  # noqa: E402
from pipeline.forecast.sources.meteoalarm import COUNTRIES  # noqa: E402
from tests.support.procs import Server  # noqa: E402
from tests.support.upstreams.alerts import MeteoAlarmLayout, NwsLayout, Warning, nws_feature  # noqa: E402
from tests.support.upstreams.base import StandIn  # noqa: E402


def _square(lon: float, lat: float, size: float = 0.5) -> list:
    return [[lon, lat], [lon + size, lat], [lon + size, lat + size], [lon, lat + size], [lon, lat]]


def publish(server: StandIn, alerts: int, warnings: int, now: float, tag: str) -> None:
    """NWS: `alerts` alerts, every third by zones only (outlines of 200 zones); MeteoAlarm:
    `warnings` warnings with polygons in every member's feed."""
    nws = NwsLayout(server)
    for z in range(200):
        nws.add_zone(f"forecast/KSZ{z:03d}", _square(-102 + (z % 20) * 0.5, 37 + z // 20 * 0.5))
    nws.set_alerts(
        [
            nws_feature(
                f"{tag}-{i}",
                "Severe Thunderstorm Warning",
                now,
                now + 7200,
                zones=[f"KSZ{i % 200:03d}", f"KSZ{(i + 7) % 200:03d}"],
            )
            if i % 3 == 0
            else nws_feature(
                f"{tag}-{i}",
                "Flood Warning",
                now,
                now + 7200,
                ring=_square(-120 + (i % 50), 30 + (i % 15)),
            )
            for i in range(alerts)
        ]
    )
    meteo = MeteoAlarmLayout(server)
    for n, country in enumerate(COUNTRIES.values()):
        meteo.set_country(
            country,
            [
                Warning(
                    f"{country}-{k}",
                    "Wind warning",
                    now,
                    now + 7200,
                    [
                        (
                            f"Region {k}",
                            f"XX{k:03d}",
                            " ".join(f"{lat},{lon}" for lon, lat in _square(-10 + n, 40 + k % 20)),
                        )
                    ],
                )
                for k in range(warnings)
            ],
        )


def measure(build_dir: Path, workdir: Path, alerts: int = 300, warnings: int = 20) -> dict:
    """Two alerts-only refreshes over a server: alerts arriving, then one alert changed."""
    current = contract.current_version_dir(build_dir)
    copy = workdir / "alerts-build"
    (copy / contract.VERSIONS).mkdir(parents=True)
    subprocess.run(
        ["cp", "-al", str(current), str(copy / contract.VERSIONS / current.name)], check=True
    )
    (copy / contract.CURRENT).symlink_to(Path(contract.VERSIONS) / current.name)
    datasets = workdir / "alerts-datasets"
    datasets.mkdir()
    out: dict = {"nws_alerts": alerts, "meteoalarm_warnings": warnings * len(COUNTRIES)}
    with StandIn() as upstream, Server(copy, None, WEATHERAPI_RELOAD_INTERVAL_S="2.0") as server:
        server.wait_ready(timeout=600)
        env = {
            **os.environ,
            "WEATHERAPI_OPERATOR_CONTACT": "bench@localhost",
            "WEATHERAPI_NWS_BASE_URL": upstream.url,
            "WEATHERAPI_METEOALARM_BASE_URL": upstream.url,
        }
        for step in ("first", "changed"):
            if step == "first":  # every alert and warning arrives
                publish(upstream, alerts, warnings, time.time(), "a")
            else:  # a new alert in place of another, all else as before
                NwsLayout(upstream).set_alerts(
                    [
                        nws_feature(
                            "a-new",
                            "Tornado Warning",
                            time.time(),
                            time.time() + 3600,
                            ring=_square(-100, 35),
                        )
                    ]
                    + [
                        nws_feature(
                            f"a-{i}",
                            "Flood Warning",
                            time.time(),
                            time.time() + 7200,
                            ring=_square(-120 + (i % 50), 30 + (i % 15)),
                        )
                        for i in range(1, alerts)
                    ]
                )
            before = server.wait_ready()["areas"]["forecast"]["version"]
            started = time.monotonic()
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pipeline",
                    "refresh",
                    "--datasets",
                    str(datasets),
                    "--out",
                    str(copy),
                    "--only",
                    "forecast",
                    "--sources",
                    "alerts",
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            refreshed = time.monotonic() - started
            if result.returncode != 0:
                raise RuntimeError(f"alerts refresh failed:\n{result.stderr[-2000:]}")
            while server.wait_ready()["areas"]["forecast"]["version"] == before:
                if time.monotonic() - started > 300:
                    raise RuntimeError("the server did not load the new forecast version")
                time.sleep(0.05)
            out[step] = {
                "refresh_s": round(refreshed, 2),
                "to_served_s": round(time.monotonic() - started, 2),
                "rebuilt_alerts_only": "forecast: alerts rebuilt" in result.stderr,
            }
            log(f"alerts refresh ({step}): {out[step]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.alerts_refresh", description=__doc__.split("\n")[0]
    )
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--alerts", type=int, default=300)
    parser.add_argument("--warnings", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="alerts-refresh-bench-") as workdir:
        print(
            json.dumps(measure(args.build_dir, Path(workdir), args.alerts, args.warnings), indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
