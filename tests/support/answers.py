"""Golden answers: the requests of answer_requests.py replayed against a server over a build
made under a frozen clock, each answer reduced to a record with a SHA-256.

Nothing here knows the code's layout: the build and the server are `python -m pipeline build`
and `python -m server` subprocesses (tests/support/procs.py); everything else is HTTP.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import importlib.util
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.answer_requests import BASE_URL, KEY, Ask, Reply, asks
from tests.support.procs import Server, run_pipeline

# The instant the build and the server live in. libfaketime freezes the wall clock only: the
# monotonic clock runs on, or asyncio's timers (reloads, sleeps) would never fire. File times
# stay real (NO_FAKE_STAT: a faked stat() would date every file FAKE_NOW, and numba's and
# Python's caches would judge the sources by that; Python's os.stat escapes it here anyway).
FAKE_NOW = datetime(2026, 6, 15, 10, 7, tzinfo=timezone.utc)
# Two secrets (the first signs) of fixed value, so that tokens and signed links repeat.
SECRETS = "golden:golden-answers-signing-secret-1,old:golden-answers-signing-secret-0"
WEBCAMS_SCALE = "0.05"  # about 1,000 webcams and 4 million snapshots
# So large that a bucket refills between any two requests: RateLimit-* never depend on order.
RATE_LIMIT = "1000000000"
HOST = urlsplit(BASE_URL).netloc  # sent as Host: requests do not name the ephemeral port
# Headers that differ between two identical requests by design: the time of the answer, every
# answer's request id (also in a 500's body; see _normalised) and the time the server took.
VOLATILE_HEADERS = {"date", "x-request-id", "server-timing"}
PREVIEW_BYTES = 300


def faketime_env() -> dict[str, str]:
    """The environment that freezes a subprocess's wall clock at FAKE_NOW."""
    package = Path(importlib.util.find_spec("libfaketime").origin).parent
    library = package / "vendor" / "libfaketime" / "src" / "libfaketime.so.1"
    assert library.is_file(), f"libfaketime's library is missing: {library}"
    # As Unix seconds (FAKETIME_FMT=%s): a date and time would be read in the local timezone,
    # and TZ would move the frozen instant.
    return {
        "LD_PRELOAD": str(library),
        "FAKETIME": str(int(FAKE_NOW.timestamp())),
        "FAKETIME_FMT": "%s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "NO_FAKE_STAT": "1",
    }


def build(out: Path) -> Path:
    """The default build of every area (generated inputs, a small webcam catalog) into `out`."""
    (out / "no-datasets").mkdir(parents=True, exist_ok=True)
    run_pipeline(
        "build",
        "--datasets",
        str(out / "no-datasets"),
        "--out",
        str(out),
        env={**faketime_env(), "WEATHERAPI_WEBCAMS_SCALE": WEBCAMS_SCALE},
    )
    return out


def write_keys_file(directory: Path) -> Path:
    """A keys file (mode 0600, as the server demands) holding KEY alone, without a limit of its
    own (the server's default, RATE_LIMIT, applies)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / "keys.json"
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    path.write_text(json.dumps({"keys": [{"name": "golden", "sha256": digest}]}))
    path.chmod(0o600)
    return path


def server(build_dir: Path, keys_file: Path) -> Server:
    """A server over `build_dir` under the frozen clock, with fixed secrets and base URL."""
    return Server(
        build_dir,
        keys_file,
        **faketime_env(),
        WEATHERAPI_SIGNING_SECRETS=SECRETS,
        WEATHERAPI_BASE_URL=BASE_URL,
        WEATHERAPI_RATE_LIMIT_PER_MINUTE=RATE_LIMIT,
    )


def send(url: str, method: str, path: str, headers: dict[str, str]) -> Reply:
    """One request on a connection of its own. Not procs.get: urllib follows redirects, adds
    headers of its own and folds repeated header lines into one, which would hide changes."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        connection.request(method, path, headers=headers)  # a POST sends Content-Length: 0
        response = connection.getresponse()
        return Reply(response.status, response.getheaders(), response.read())
    finally:
        connection.close()


def resolve(ask: Ask, replies: dict[str, Reply]) -> tuple[str, dict[str, str]]:
    """The path and the headers `ask` sends, "{}" filled from its source's answer."""
    headers = {"Host": HOST, "Accept-Encoding": "identity"}
    if ask.key:
        headers["X-API-Key"] = KEY
    headers.update(ask.headers)
    if ask.fill is None:
        return ask.path, headers
    value = ask.fill.pick(replies[ask.fill.source])
    return (
        ask.path.replace("{}", value),
        {name: v.replace("{}", value) for name, v in headers.items()},
    )


def _normalised(path: str, status: int, body: bytes) -> bytes:
    """The body with what is random by design replaced: /ready's build_id (the build directory's
    name: the build's time, frozen, and secrets.token_hex(3)), and a 500's request id."""
    if path == "/ready":
        body = re.sub(rb'"build_id":"[^"]*"', b'"build_id":"(random)"', body)
    if status == 500:
        body = re.sub(rb'"request_id":"[0-9a-f]*"', b'"request_id":"(random)"', body)
    return body


def record(ask: Ask, path: str, sent: dict[str, str], reply: Reply) -> tuple[dict, bytes]:
    """The record of one answer, and its body as compared (decoded, normalised).

    The digest covers the status, every header but VOLATILE_HEADERS (names in lower case,
    sorted by name: the order of different fields means nothing, RFC 9110 5.3; repeated lines
    keep theirs) and the body. A gzip body is compared decoded and without its Content-Length:
    the compressed bytes are zlib's, the answer is what they decode to."""
    headers, body = reply.headers, reply.body
    encoding = reply.header("Content-Encoding")
    if encoding == "gzip" and body:
        body = gzip.decompress(body)
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
    body = _normalised(path, reply.status, body)
    fields = sorted(
        ((k.lower(), v) for k, v in headers if k.lower() not in VOLATILE_HEADERS),
        key=lambda field: field[0],
    )
    canonical = b"%d\n%b\n\n%b" % (
        reply.status,
        "\n".join(f"{k}: {v}" for k, v in fields).encode("latin-1"),
        body,
    )
    return {
        "id": ask.id,
        "method": ask.method,
        "path": path,
        "request_headers": {k: v for k, v in sent.items() if k != "Host"},
        "status": reply.status,
        "content_type": reply.header("Content-Type"),
        "content_encoding": encoding,
        "length": len(body),
        "sha256": hashlib.sha256(canonical).hexdigest(),
    }, body


def replay(url: str) -> tuple[list[dict], dict[str, bytes]]:
    """Every request against the server at `url`: the records sorted by id, and the bodies."""
    replies: dict[str, Reply] = {}
    records, bodies = [], {}
    for ask in asks():
        path, headers = resolve(ask, replies)
        replies[ask.id] = reply = send(url, ask.method, path, headers)
        entry, bodies[ask.id] = record(ask, path, headers, reply)
        records.append(entry)
    return sorted(records, key=lambda r: r["id"]), bodies


def dumps(records: list[dict]) -> str:
    """The golden file's text: one object per request, keys sorted."""
    return json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def loads(text: str) -> list[dict]:
    """The records of a golden file."""
    return json.loads(text)


def differences(golden: list[dict], records: list[dict], bodies: dict[str, bytes]) -> list[str]:
    """One paragraph per request whose record is not the recorded one, or that is new or gone:
    what changed, and the start of the new body."""
    old = {r["id"]: r for r in golden}
    new = {r["id"]: r for r in records}
    lines = [f"{i}: recorded, no longer requested" for i in sorted(old.keys() - new.keys())]
    for i in sorted(new):
        was, now = old.get(i), new[i]
        if was == now:
            continue
        if was is None:
            change = "not recorded"
        else:
            fields = ", ".join(
                k for k in sorted(now.keys() | was.keys()) if now.get(k) != was.get(k)
            )
            change = (
                f"status {was['status']} -> {now['status']}, length {was['length']} -> "
                f"{now['length']}, {was['content_type']} -> {now['content_type']} "
                f"(differs in {fields})"
            )
        preview = bodies[i][:PREVIEW_BYTES].decode("utf-8", "replace")
        lines.append(f"{i}: {now['method']} {now['path']}\n    {change}\n    new body: {preview!r}")
    return lines
