"""A stand-in for the Atmosphere Data Store's retrieve API, as cdsapi 0.7.7 (through
ecmwf-datastores-client 0.5.3) speaks it, serving CAMS-format NetCDF files made on request.

Under {url} (what CDSAPI_URL names, ".../api"):
  GET  catalogue/v1/messages                   -> {"messages": []} (read when a client starts)
  GET  retrieve/v1/processes/{dataset}         -> the process; 404 "process not found"
  POST retrieve/v1/processes/{dataset}/execution  {"inputs": request}, header PRIVATE-TOKEN
       -> 201 status info (status "accepted", links self and monitor, Location header);
          401 "permission denied"/"Authentication failed" for an unknown token, 403
          "required licences not accepted" with the dataset's manage-licences page, 400
          "invalid request" for a request the dataset's form does not allow
  GET  retrieve/v1/jobs/{id}[?log=True&request=True] -> status info: "accepted" for
          `queue_polls` polls, "running" for `run_polls`, then "successful" or "failed"
          (links self, and results once finished)
  GET  retrieve/v1/jobs/{id}/results           -> {"asset": {"value": {"href", "file:size",
          "type", ...}}}; a failed job: 400 "The job has failed" with the adaptor's message
          in "traceback"; not finished: 404 "job results not ready"
  GET/HEAD download/{file}                     -> the delivery (Accept-Ranges, Range resumes)
as the service's code (cads-processing-api-service, ogc-api-processes-fastapi) answers them.
A request is answered with a zip of NetCDF files (data_format netcdf_zip) written by the
project's CAMS writers at the requested lead hours, on small grids (Europe 1°, global 5°), with
the synthetic fields: `files` keeps each delivered NetCDF for tests to decode.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from aiohttp import web

from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.air_quality.sources import generated as gen

DAY_S = 86400
EUROPE, GLOBAL = cams_europe.DATASET, cams_global.DATASET
FORM = {  # what each dataset's form allows (keys and variables), checked like its constraints
    EUROPE: (
        {"variable", "model", "level", "date", "type", "time", "leadtime_hour", "data_format"},
        set(cams_europe.REQUEST_NAMES.values()),
    ),
    GLOBAL: (
        {"variable", "date", "time", "leadtime_hour", "type", "data_format", "model_level"},
        set(cams_global.REQUEST_NAMES.values()),
    ),
}


@dataclass
class Job:
    id: str
    dataset: str
    inputs: dict
    created: str
    polls: int = 0
    failure: str | None = None  # the adaptor's message of a failed job
    delivery: str | None = None  # file name under download/ once successful


@dataclass
class AdsStandIn:
    """The service's state and behaviour; tests change the fields to script a case."""

    root: Path  # where deliveries are written
    tokens: set[str] = field(default_factory=lambda: {"good-token"})
    licences_accepted: set[str] = field(default_factory=lambda: {EUROPE, GLOBAL})
    queue_polls: int = 1
    run_polls: int = 1
    # (dataset, type, YYYY-MM-DD) of runs not out yet, besides a forecast of a later day than
    # today or an analysis of today or later
    unpublished: set[tuple[str, str, str]] = field(default_factory=set)
    drop_after: int | None = None  # the next download breaks off after N bytes
    corrupt: str | None = None  # "zip", "netcdf" or "html" deliveries
    job_failure: str | None = None  # every job fails with this message
    busy: int | None = None  # every retrieve call answered this status
    jobs: dict[str, Job] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # method, path, Range
    files: list[Path] = field(default_factory=list)  # delivered NetCDF files
    url: str = ""

    def submissions(self, dataset: str | None = None) -> list[dict]:
        """The requests (inputs) submitted, in order."""
        return [j.inputs for j in self.jobs.values() if dataset in (None, j.dataset)]

    def published(self, dataset: str, inputs: dict) -> bool:
        """A forecast is out from its day on, an analysis the day after (as on the ADS)."""
        day, kind = inputs["date"][0].split("/")[0], inputs.get("type", ["forecast"])[0]
        if (dataset, kind, day) in self.unpublished:
            return False
        today = int(time.time() // DAY_S * DAY_S)
        return _day(inputs) < today + (0 if kind == "analysis" else DAY_S)


def _error(
    status: int, title: str, detail: str | None = None, kind: str | None = None, **extra
) -> web.Response:
    body = {
        "type": kind or title,
        "title": title,
        "status": status,
        "trace_id": uuid.uuid4().hex,
        **extra,
    }
    if detail is not None:
        body["detail"] = detail
    return web.json_response(body, status=status)


def _iso(unix_s: float | None = None) -> str:
    return datetime.fromtimestamp(
        time.time() if unix_s is None else unix_s, timezone.utc
    ).isoformat()


def make_app(ads: AdsStandIn) -> web.Application:
    """The aiohttp application of the stand-in."""

    def bind(handler):
        async def bound(request: web.Request) -> web.StreamResponse:
            return await handler(ads, request)

        return bound

    app = web.Application(middlewares=[_recorder(ads)])
    api = "/api"
    app.router.add_get(f"{api}/catalogue/v1/messages", bind(_messages))
    app.router.add_get(api + "/retrieve/v1/processes/{pid}", bind(_process))
    app.router.add_post(api + "/retrieve/v1/processes/{pid}/execution", bind(_execute))
    app.router.add_get(api + "/retrieve/v1/jobs/{jid}", bind(_job))
    app.router.add_delete(api + "/retrieve/v1/jobs/{jid}", bind(_job))
    app.router.add_get(api + "/retrieve/v1/jobs/{jid}/results", bind(_results))
    app.router.add_get("/download/{name}", bind(_download))
    return app


async def _messages(ads: AdsStandIn, request: web.Request) -> web.Response:
    return web.json_response({"messages": []})


def _recorder(ads: AdsStandIn):
    @web.middleware
    async def record(request: web.Request, handler):
        ads.requests.append((request.method, request.path_qs, request.headers.get("Range", "")))
        if ads.busy and "/retrieve/" in request.path:
            return _error(ads.busy, "service unavailable", "try again later")
        return await handler(request)

    return record


async def _process(ads: AdsStandIn, request: web.Request) -> web.Response:
    pid = request.match_info["pid"]
    if pid not in FORM:
        return _error(
            404,
            "process not found",
            f"process {pid} not found",
            "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/no-such-process",
        )
    return web.json_response(
        {
            "id": pid,
            "title": pid,
            "version": "1.0.0",
            "jobControlOptions": ["async-execute"],
            "outputTransmission": ["reference"],
            "links": [
                {"href": str(request.url), "rel": "self"},
                {
                    "href": f"{request.url}/execution",
                    "rel": "execute",
                    "type": "application/json",
                    "title": "process execution",
                },
            ],
        }
    )


def _status(ads: AdsStandIn, job: Job, request: web.Request, rel: str) -> dict:
    base = f"{ads.url}/retrieve/v1/jobs/{job.id}"
    status = _current(ads, job)
    links = [{"href": str(request.url), "rel": "self"}] if rel == "monitor" else []
    links.append({"href": base, "rel": rel, "type": "application/json"})
    if status in ("successful", "failed"):
        links.append({"href": f"{base}/results", "rel": "results"})
    return {
        "processID": job.dataset,
        "type": "process",
        "jobID": job.id,
        "status": status,
        "created": job.created,
        "updated": _iso(),
        "links": links,
        "metadata": {
            "datasetMetadata": {"messages": []},
            "log": [],
            "request": {"ids": job.inputs},
        },
    }


def _current(ads: AdsStandIn, job: Job) -> str:
    if job.polls <= ads.queue_polls:
        return "accepted"
    if job.polls <= ads.queue_polls + ads.run_polls:
        return "running"
    return "failed" if job.failure else "successful"


async def _execute(ads: AdsStandIn, request: web.Request) -> web.Response:
    pid = request.match_info["pid"]
    token = request.headers.get("PRIVATE-TOKEN")
    if token is None:
        return _error(401, "permission denied", "authentication required")
    if token not in ads.tokens:
        return _error(
            401,
            "Authentication failed",
            "operation not allowed",
            "permission denied",
            instance=str(request.url),
        )
    if pid not in FORM:
        return await _process(ads, request)
    inputs = (await request.json()).get("inputs", {})
    problem = _invalid(pid, inputs)
    if problem:
        return _error(400, "invalid request", problem)
    if pid not in ads.licences_accepted:
        site = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        return _error(
            403,
            "required licences not accepted",
            "Not all the required licences have been accepted; please visit "
            f"{site}/datasets/{pid}?tab=download#manage-licences to accept the "
            "required licence(s).",
            "permission denied",
        )
    job = Job(str(uuid.uuid4()), pid, inputs, _iso())
    job.failure = ads.job_failure
    if not ads.published(pid, inputs):
        job.failure = (
            "No data found for this request"
            if pid == EUROPE
            else "MARS returned no data, please check your selection."
        )
    ads.jobs[job.id] = job
    body = _status(ads, job, request, "monitor")
    return web.json_response(
        body, status=201, headers={"Location": f"{ads.url}/retrieve/v1/jobs/{job.id}"}
    )


def _invalid(pid: str, inputs: dict) -> str | None:
    keys, variables = FORM[pid]
    if set(inputs) - keys or not {"variable", "date", "leadtime_hour"} <= set(inputs):
        return f"keys {sorted(inputs)} are not those of {pid}'s form ({sorted(keys)})"
    if set(inputs["variable"]) - variables:
        return f"invalid variable {sorted(set(inputs['variable']) - variables)}"
    if inputs.get("data_format") not in ("netcdf", "netcdf_zip", "grib"):
        return f"invalid data_format {inputs.get('data_format')!r}"
    return None


async def _job(ads: AdsStandIn, request: web.Request) -> web.Response:
    job = ads.jobs.get(request.match_info["jid"])
    if job is None:
        return _error(404, "job not found", f"job {request.match_info['jid']} not found")
    if request.method == "GET":
        job.polls += 1
        if _current(ads, job) == "successful" and job.delivery is None:
            job.delivery = await asyncio.to_thread(_deliver, ads, job)
    return web.json_response(_status(ads, job, request, "self"))


async def _results(ads: AdsStandIn, request: web.Request) -> web.Response:
    job = ads.jobs.get(request.match_info["jid"])
    if job is None:
        return _error(404, "job not found")
    status = _current(ads, job)
    if status == "failed":
        return _error(
            400,
            "The job has failed",
            None,
            "job results failed",
            instance=str(request.url),
            traceback=job.failure,
        )
    if status != "successful" or job.delivery is None:
        return _error(404, "job results not ready", f"status of {job.id} is '{status}'")
    path = ads.root / job.delivery
    return web.json_response(
        {
            "asset": {
                "value": {
                    "type": "application/zip",
                    "href": f"{ads.url.rsplit('/api', 1)[0]}/download/{job.delivery}",
                    "file:size": path.stat().st_size,
                    "file:checksum": uuid.uuid4().hex,
                    "file:local_path": f"s3://cache/{job.delivery}",
                }
            }
        }
    )


async def _download(ads: AdsStandIn, request: web.Request) -> web.StreamResponse:
    path = ads.root / request.match_info["name"]
    if not path.is_file():
        return _error(404, "not found")
    data = path.read_bytes()
    start = 0
    if request.headers.get("Range", "").startswith("bytes="):
        start = int(request.headers["Range"][6:].split("-")[0])
    headers = {
        "Accept-Ranges": "bytes",
        "Content-Type": "application/zip",
        "Content-Length": str(len(data) - start),
    }
    if start:
        headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
    response = web.StreamResponse(status=206 if start else 200, headers=headers)
    await response.prepare(request)
    if request.method == "HEAD":
        return response
    if ads.drop_after is not None:
        cut, ads.drop_after = ads.drop_after, None
        await response.write(data[start : start + cut])
        request.transport.close()  # the connection breaks off mid-body
        return response
    await response.write(data[start:])
    await response.write_eof()
    return response


_numbers = itertools.count(1)


def _deliver(ads: AdsStandIn, job: Job) -> str:
    """Write the NetCDF files a job asks for and zip them as the ADS delivers them."""
    work = ads.root / f"job-{next(_numbers)}"
    work.mkdir(parents=True)
    members = _europe(job.inputs, work) if job.dataset == EUROPE else _global(job.inputs, work)
    ads.files.extend(path for _, path in members)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, path in members:
            data = path.read_bytes()
            if ads.corrupt == "netcdf":
                data = data[: len(data) // 2]  # a truncated NetCDF, intact zip
            archive.writestr(arcname, data)
    data = buffer.getvalue()
    if ads.corrupt == "zip":
        middle = len(data) // 2
        data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
    elif ads.corrupt == "html":
        data = b"<html><body>502 Bad Gateway</body></html>"
    name = f"{job.id}.zip"
    (ads.root / name).write_bytes(data)
    return name


def _day(inputs: dict) -> int:
    day = inputs["date"][0].split("/")[0]
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp())


def _europe(inputs: dict, work: Path) -> list[tuple[str, Path]]:
    kind = inputs["type"][0]
    day = _day(inputs)
    if kind == "analysis":
        leads = np.array([int(t[:2]) for t in inputs["time"]])
    else:
        leads = np.array([int(h) for h in inputs["leadtime_hour"]])
    path = gen.write_europe_run(
        work / f"ENS_{kind.upper()}.nc", day, gen.europe_grid(1.0), leads=leads, kind=kind.upper()
    )
    return [(f"ensemble_{kind}.nc", path)]


def _global(inputs: dict, work: Path) -> list[tuple[str, Path]]:
    leads = np.array([int(h) for h in inputs["leadtime_hour"]])
    sfc, ml = gen.write_global_run(
        work / "data", _day(inputs), gen.global_grid(5.0), surface_leads=leads, model_leads=leads
    )
    if "model_level" in inputs:
        sfc.unlink()
        return [("data_mlev.nc", ml)]
    ml.unlink()
    return [("data_sfc.nc", sfc)]


class Running:
    """The stand-in served on an ephemeral port of 127.0.0.1 from a thread of its own."""

    def __init__(self, ads: AdsStandIn):
        self.ads = ads
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._runner: web.AppRunner | None = None

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(make_app(self.ads), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.ads.url = f"http://127.0.0.1:{port}/api"

    def __enter__(self) -> AdsStandIn:
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the ADS stand-in did not start")
        return self.ads

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
