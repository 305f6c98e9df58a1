"""The Atmosphere Data Store (ADS) through the real `cdsapi` client: submit, wait, download.

cdsapi 0.7.7 hands a personal access token (a key without ':') to ecmwf-datastores-client,
which speaks the ADS's OGC-processes API: POST .../retrieve/v1/processes/{dataset}/execution,
then GET .../jobs/{id} until the status is successful (accepted and running before it; failed
or rejected end it), GET .../jobs/{id}/results for the asset's href and size, and a GET of
that href (resumed with a Range request if the body breaks off, its size checked).

Here: the URL and key are resolved once (never logged, never in a message); the wait for a
job is bounded (a long queue is a retry-later whose request id is kept, so the next fetch
resumes the same job instead of queueing again); every failure becomes one line for the
operator: what to do for a wrong key or a licence not accepted, retry-later for a run not
published yet, a busy or unreachable service.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.fetch.source import FetchError

log = logging.getLogger("pipeline.fetch.ads")

DEFAULT_URL = "https://ads.atmosphere.copernicus.eu/api"
SITE = "https://ads.atmosphere.copernicus.eu"
URL_ENV = "WEATHERAPI_CAMS_BASE_URL"
MAX_WAIT_ENV = "WEATHERAPI_CAMS_MAX_WAIT_S"  # how long one fetch waits on the ADS queue
PAUSE_ENV = "WEATHERAPI_CAMS_POLL_S"  # longest pause between polls and retries
MAX_WAIT_S = 1800.0
PAUSE_S = 60.0
TRIES = 5  # per HTTP request (cdsapi's retry_max)
TIMEOUT_S = 60
# What the ADS's adaptors say of a date with no data yet (CAMS Europe: "No data found for
# this request"; MARS: "MARS returned no data"; an embargo: "None of the data you have
# requested is available yet ... The latest date available ...").
NOT_PUBLISHED = re.compile(
    r"no data|not (yet )?available|available yet|latest date available", re.IGNORECASE
)
# A job failing for the service's own reasons (a backend in maintenance, a timeout).
TRANSIENT = re.compile(r"maintenance|temporar|try again|timed? ?out|unavailable", re.IGNORECASE)
RETRY_S = 10.0  # cdsapi's pause before retrying a request


class NotPublished(FetchError):
    """The ADS has no data for the run yet: try again later."""

    def __init__(self, message: str):
        super().__init__(message, retry_later=True)


@dataclass(frozen=True)
class Credentials:
    """Where the ADS is and the key it takes; the key stays out of repr and messages."""

    url: str
    key: str = field(repr=False)
    url_from: str  # which setting gave the URL (for messages)


def credentials(base_url: str | None) -> Credentials:
    """--base-url, WEATHERAPI_CAMS_BASE_URL, CDSAPI_URL or ~/.cdsapirc's url, else the ADS; the
    key from CDSAPI_KEY or ~/.cdsapirc (CDSAPI_RC names another file)."""
    rc = Path(os.environ.get("CDSAPI_RC", "~/.cdsapirc")).expanduser()
    config = _read_rc(rc)
    sources = (
        ("--base-url", base_url),
        (URL_ENV, os.environ.get(URL_ENV)),
        ("CDSAPI_URL", os.environ.get("CDSAPI_URL")),
        (str(rc), config.get("url")),
        ("the default", DEFAULT_URL),
    )
    url_from, url = next((name, value) for name, value in sources if value)
    key = os.environ.get("CDSAPI_KEY") or config.get("key")
    if not key:
        raise FetchError(
            f"no ADS key: set CDSAPI_KEY or write 'key: <your token>' into {rc} "
            f"(the personal access token shown at {SITE}/how-to-api)"
        )
    if ":" in key:
        # cdsapi would take a UID:KEY key to the retired API, which answers nothing useful.
        raise FetchError(
            "the ADS key has the old UID:KEY form, which the Atmosphere Data "
            f"Store no longer takes: use the personal access token shown at "
            f"{SITE}/how-to-api"
        )
    return Credentials(url.rstrip("/"), key.strip(), url_from)


def _read_rc(path: Path) -> dict[str, str]:
    """The url and key lines of a .cdsapirc (cdsapi's own format); {} when absent."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise FetchError(f"{path}: {exc.strerror}") from None
    pairs = (line.split(":", 1) for line in lines if ":" in line)
    return {k.strip(): v.strip() for k, v in pairs if k.strip() in ("url", "key")}


@dataclass
class Pending:
    """Jobs submitted but not yet downloaded, by request, kept in a small JSON file."""

    path: Path

    def load(self) -> dict[str, str]:
        """request fingerprint -> job id."""
        try:
            return json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def put(self, fingerprint: str, job_id: str | None) -> None:
        """Remember (or, with None, forget) the job of a request."""
        jobs = self.load()
        if job_id is None:
            jobs.pop(fingerprint, None)
        else:
            jobs[fingerprint] = job_id
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(jobs, indent=1, sort_keys=True))
        os.replace(temporary, self.path)


def fingerprint(dataset: str, request: dict) -> str:
    """One string per (dataset, request): the pending job's key."""
    return f"{dataset} {json.dumps(request, sort_keys=True, separators=(',', ':'))}"


class Session:
    """One fetch's conversation with the ADS: a cdsapi client and a deadline for its queue."""

    def __init__(self, creds: Credentials, pending: Pending):
        import cdsapi  # only a fetch needs it (and requests): the build does not

        self.creds, self.pending = creds, pending
        self.max_wait = float(os.environ.get(MAX_WAIT_ENV, MAX_WAIT_S))
        self.pause = float(os.environ.get(PAUSE_ENV, PAUSE_S))
        self.deadline = time.monotonic() + self.max_wait
        # wait_until_complete=False: the waiting is ours (bounded), so cdsapi's sleep_max is
        # only its pause before retrying a request that failed with 5xx, 429 or a broken
        # connection (TRIES times).
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.client = cdsapi.Client(
                url=creds.url,
                key=creds.key,
                progress=False,
                wait_until_complete=False,
                sleep_max=min(RETRY_S, self.pause),
                retry_max=TRIES,
                timeout=TIMEOUT_S,
                delete=False,
                info_callback=log.info,
                warning_callback=log.warning,
                error_callback=log.error,
            )
        for warning in caught:  # e.g. the service's messages could not be read
            log.warning("ADS client: %s", _first_line(warning.message))

    def retrieve(self, dataset: str, request: dict, target: Path, label: str) -> int:
        """Run the request (or resume its pending job) and download the result to `target`;
        return its size. Raises FetchError (NotPublished for a run not out yet)."""
        key = fingerprint(dataset, request)
        try:
            remote = self._job(dataset, request, key)
            self._wait(remote, key, label)
            results = remote.get_results()
            log.info(
                "%s: downloading %s bytes (%s)",
                label,
                f"{results.content_length:,}",
                results.content_type,
            )
            results.download(str(target))
        except FetchError:
            raise
        except Exception as exc:  # noqa: BLE001 (requests', cdsapi's, multiurl's: classify)
            error = classify(exc, dataset, label, self.creds)
            if not error.retry_later or isinstance(error, NotPublished):
                self.pending.put(key, None)  # a new request next time, not this job
            raise error from None
        self.pending.put(key, None)
        return target.stat().st_size

    def _job(self, dataset: str, request: dict, key: str):
        """The pending job of this request, else a new one."""
        import requests

        job_id = self.pending.load().get(key)
        if job_id:
            log.info("resuming ADS request %s", job_id)
            try:
                return self.client.client.get_remote(job_id)
            except requests.HTTPError as exc:
                if exc.response is None or exc.response.status_code != 404:
                    raise
                log.info("ADS request %s is gone: asking again", job_id)
        remote = self.client.retrieve(dataset, request)
        self.pending.put(key, remote.request_id)
        return remote

    def _wait(self, remote, key: str, label: str) -> None:
        """Poll until the job's results are ready, at most until the deadline."""
        pause = min(1.0, self.pause)
        while not remote.results_ready:
            if time.monotonic() + pause > self.deadline:
                raise FetchError(
                    f"{label}: still '{remote.last_status}' on the ADS after waiting "
                    f"{self.max_wait / 60:.0f} min (its queue is long); the next fetch resumes "
                    f"request {remote.request_id}",
                    retry_later=True,
                )
            time.sleep(pause)
            pause = min(pause * 1.5, self.pause)


def classify(exc: Exception, dataset: str, label: str, creds: Credentials) -> FetchError:
    """One line for the operator from what cdsapi raised."""
    import requests
    from ecmwf.datastores import processing

    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return _http_error(exc.response, dataset, label, creds)
    if isinstance(exc, processing.ProcessingFailedError):
        return _job_failed(str(exc), label)
    if isinstance(exc, (requests.RequestException, processing.DownloadError, AssertionError)):
        # A connection refused or broken off, a timeout, a short download: after cdsapi's
        # own retries. AssertionError: multiurl's check of a download's size.
        return FetchError(
            f"{label}: the ADS at {creds.url} could not be reached or the "
            f"transfer broke off ({_first_line(exc)}); try again later",
            retry_later=True,
        )
    return FetchError(f"{label}: {type(exc).__name__}: {_first_line(exc)}")


def _http_error(response, dataset: str, label: str, creds: Credentials) -> FetchError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    status, title = response.status_code, str(body.get("title", response.reason))
    detail = str(body.get("detail") or "")
    if status == 401:
        return FetchError(
            f"the ADS key was refused ({title}): check CDSAPI_KEY or the key in "
            f"~/.cdsapirc (the personal access token at {SITE}/how-to-api)"
        )
    if status == 403 and "licence" in (title + detail).lower():
        page = re.search(r"https?://\S+?manage-licences", detail)
        where = page.group(0) if page else f"{SITE}/datasets/{dataset}?tab=download#manage-licences"
        return FetchError(
            f"accept the licence of {dataset} at {where} (logged in as the "
            "key's owner), then fetch again"
        )
    if status == 404 and "process" in title.lower():
        return FetchError(
            f"{dataset} is not a dataset at {creds.url} (from {creds.url_from}): "
            f"the Atmosphere Data Store is {DEFAULT_URL}"
        )
    if status == 400 and str(title).startswith("The job has"):
        return _job_failed(str(body.get("traceback") or detail or title), label)
    if status in (408, 429) or status >= 500:
        return FetchError(
            f"{label}: the ADS answers {status} {title}; try again later", retry_later=True
        )
    return FetchError(
        f"{label}: the ADS answered {status} {title}"
        + (f": {_first_line(detail)}" if detail else "")
    )


def _job_failed(message: str, label: str) -> FetchError:
    if NOT_PUBLISHED.search(message):
        return NotPublished(f"{label} is not published on the ADS yet ({_first_line(message)})")
    if TRANSIENT.search(message):
        return FetchError(
            f"{label}: the ADS job failed ({_first_line(message)}); try again later",
            retry_later=True,
        )
    return FetchError(f"{label}: the ADS job failed: {_first_line(message)}")


def _first_line(value) -> str:
    lines = [line.strip() for line in str(value).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(value).__name__
