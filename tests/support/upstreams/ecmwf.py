"""ECMWF open data as data.ecmwf.int lays it out, on the stand-in base (base.StandIn).

    /forecasts/YYYYMMDD/HHz/ifs/0p25/{oper|scda}/YYYYMMDDHH0000-{STEP}h-{stream}-fc.grib2
    /forecasts/YYYYMMDD/HHz/ifs/0p25/{oper|scda}/YYYYMMDDHH0000-{STEP}h-{stream}-fc.index

Each step's GRIB2 messages are ECMWF-like runs written with ecCodes (tests/support/grib.py),
served with a block of padding before each one that the .index lists as parameters the fetch
does not want (sp on the surface, t at 850 hPa): the whole file is large, never held in
memory, and only range requests can fetch what is wanted cheaply. The base answers one range
per request and refuses a list of ranges with 400, as the cloud mirrors do.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import eccodes

from pipeline.forecast.sources import ecmwf
from tests.support import grib
from tests.support.upstreams.base import Blob, StandIn

PREFIX = "/forecasts"
PADDING = 1 << 20  # more than the downloader's merge gap: separate requests
UNWANTED = ({"levtype": "sfc", "param": "sp"}, {"levtype": "pl", "levelist": "850", "param": "t"})


def split(path: Path) -> list[tuple[bytes, str, str]]:
    """(message bytes, shortName, stepRange) of each GRIB message of a file."""
    out = []
    with open(path, "rb") as handle:
        while (message := eccodes.codes_grib_new_from_file(handle)) is not None:
            try:
                out.append(
                    (
                        eccodes.codes_get_message(message),
                        eccodes.codes_get(message, "shortName"),
                        str(eccodes.codes_get(message, "stepRange")),
                    )
                )
            finally:
                eccodes.codes_release(message)
    return out


def publish(
    server: StandIn,
    work: Path,
    run_s: int,
    steps: list[int] | None = None,
    omit_index: set[int] = frozenset(),
    values: dict | None = None,
) -> Path:
    """Write an ECMWF-like run (with z at step 0) under `work` and serve it; the run's folder
    there (its files are the messages served, without the padding)."""
    steps = ecmwf.steps(run_s) if steps is None else steps
    folder = grib.ecmwf_run(
        work, run_s, steps, values=values, fields=list(grib.ECMWF), marker=False
    )
    base = ecmwf.file_url(PREFIX, run_s, 0).rsplit("/", 1)[0]
    stamp = time.gmtime(run_s)
    common = {
        "domain": "g",
        "date": time.strftime("%Y%m%d", stamp),
        "time": f"{stamp.tm_hour:02d}00",
        "expver": "0001",
        "class": "od",
        "type": "fc",
        "stream": ecmwf.stream(run_s),
    }
    for step in steps:
        name = ecmwf.file_name(run_s, step)
        parts: list[bytes | int] = []
        lines, position = [], 0
        for k, (data, param, step_range) in enumerate(split(folder / name)):
            unwanted = {
                **common,
                "step": str(step),
                **UNWANTED[k % len(UNWANTED)],
                "_offset": position,
                "_length": PADDING,
            }
            lines.append(unwanted)
            parts.append(PADDING)
            position += PADDING
            lines.append(
                {
                    **common,
                    "step": step_range,
                    "levtype": "sfc",
                    "param": param,
                    "_offset": position,
                    "_length": len(data),
                }
            )
            parts.append(data)
            position += len(data)
        server.put(f"{base}/{name}", Blob.joined(parts, tag=f"{run_s}-{step}"))
        if step not in omit_index:
            server.put(
                f"{base}/{ecmwf.index_url(name)}",
                "".join(json.dumps(line) + "\n" for line in lines).encode(),
            )
    return folder
