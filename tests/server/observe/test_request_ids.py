"""Every answer's request id and Server-Timing, and the log lines (text and JSON) that carry the
id, on real servers over the session's default build."""

from __future__ import annotations

import contextvars
import json
import re

import pytest

from server.app import _ContextExecutor
from server.observe.requests import CURRENT_REQUEST_ID
from tests.support.procs import Server, get

MADE_ID = re.compile(r"[0-9a-f]{16}")
TIMING = re.compile(r"app;dur=(\d+\.\d{3})")


@pytest.fixture(scope="module")
def text_server(default_build, keys_file):
    """A server writing access lines as text, not trusting the client's X-Request-Id."""
    with Server(default_build, keys_file[0], WEATHERAPI_ACCESS_LOG="1") as srv:
        srv.wait_ready()
        yield srv


@pytest.fixture(scope="module")
def json_server(default_build, keys_file):
    """A server writing JSON lines, behind a proxy whose X-Request-Id it trusts."""
    with Server(
        default_build,
        keys_file[0],
        WEATHERAPI_ACCESS_LOG="1",
        WEATHERAPI_LOG_FORMAT="json",
        WEATHERAPI_TRUST_REQUEST_ID="1",
    ) as srv:
        srv.wait_ready()
        yield srv


@pytest.mark.parametrize(
    "path", ["/health", "/geocoding/lookup?q=zurich", "/nope", "/forecast/47,8"]
)
def test_every_answer_has_its_own_id_and_timing(text_server, path):
    first, second = get(text_server.url + path), get(text_server.url + path)
    ids = {first.headers["X-Request-Id"], second.headers["X-Request-Id"]}
    assert len(ids) == 2 and all(MADE_ID.fullmatch(i) for i in ids)
    for reply in (first, second):
        assert TIMING.fullmatch(reply.headers["Server-Timing"])


def test_a_304_and_a_preflight_carry_them_too(text_server):
    etag = get(text_server.url + "/openapi.json").headers["ETag"]
    again = get(text_server.url + "/openapi.json", {"If-None-Match": etag})
    preflight = get(
        text_server.url + "/health",
        {"Origin": "https://example.org", "Access-Control-Request-Method": "GET"},
        method="OPTIONS",
    )
    for reply in (again, preflight):
        assert MADE_ID.fullmatch(reply.headers["X-Request-Id"])
        assert TIMING.fullmatch(reply.headers["Server-Timing"])
    assert again.status == 304 and preflight.status == 204


def test_an_untrusted_client_cannot_choose_its_id(text_server):
    reply = get(text_server.url + "/health", {"X-Request-Id": "chosen-by-the-client"})
    assert MADE_ID.fullmatch(reply.headers["X-Request-Id"])


def test_the_access_line_carries_the_id_and_never_the_key(text_server, keys_file):
    reply = get(f"{text_server.url}/forecast/47,8?api_key={keys_file[1]}")
    rid = reply.headers["X-Request-Id"]
    [line] = text_server.wait_log(f"[{rid}]")
    assert f"server.access INFO [{rid}] GET /forecast/47,8 200 key=tests " in line
    assert keys_file[1] not in "".join(text_server.log_lines(""))


@pytest.mark.parametrize(
    "given", ["f47ac10b-58cc-4372-a567-0e02b2c3d479", "Root=1-67891233-abcdef012345678912345678"]
)
def test_a_trusted_proxys_id_is_taken(json_server, given):
    reply = get(json_server.url + "/health", {"X-Request-Id": given})
    assert reply.headers["X-Request-Id"] == given


@pytest.mark.parametrize("given", ["two words", "x" * 129, 'quote"d', "", "a,b"])
def test_a_malformed_id_is_replaced_even_from_a_trusted_proxy(json_server, given):
    reply = get(json_server.url + "/health", {"X-Request-Id": given})
    assert MADE_ID.fullmatch(reply.headers["X-Request-Id"])


def test_json_lines_have_ecs_fields_and_the_request_id(json_server, keys_file):
    reply = get(
        f"{json_server.url}/geocoding/lookup?q=bern",
        {"X-API-Key": keys_file[1], "X-Request-Id": "proxy-42"},
    )
    assert reply.status == 200
    json_server.wait_log('"proxy-42"')
    records = [json.loads(line) for line in json_server.log_lines("")]  # every line is JSON
    [access] = [r for r in records if r.get("http.request.id") == "proxy-42"]
    assert access["log.logger"] == "server.access" and access["log.level"] == "INFO"
    assert access["http.request.method"] == "GET" and access["url.path"] == "/geocoding/lookup"
    assert access["http.response.status_code"] == 200 and access["user.name"] == "tests"
    assert access["event.duration"] > 0 and access["ecs.version"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00", access["@timestamp"])
    assert isinstance(access["process.pid"], int)
    started = [r for r in records if r["message"].startswith("serving ")]
    assert started and "http.request.id" not in started[0]  # not written for a request
    assert keys_file[1] not in "".join(json_server.log_lines(""))


def test_blocking_threads_run_in_the_requests_context():
    # Searches run in these threads: their log lines must carry the request's id too.
    executor = _ContextExecutor(max_workers=1)
    try:

        def in_request() -> str | None:
            CURRENT_REQUEST_ID.set("abc123")
            return executor.submit(CURRENT_REQUEST_ID.get).result()

        assert contextvars.copy_context().run(in_request) == "abc123"
        assert executor.submit(CURRENT_REQUEST_ID.get).result() is None
    finally:
        executor.shutdown()


def test_the_documented_shape_is_the_one_taken_from_a_proxy():
    from server.observe.requests import TRUSTED_ID
    from server.openapi.parts import HEADERS, PROBLEM, REQUEST_ID_PATTERN

    assert REQUEST_ID_PATTERN == f"^{TRUSTED_ID.pattern}$"
    assert HEADERS["X-Request-Id"]["schema"]["pattern"] == REQUEST_ID_PATTERN
    assert PROBLEM["properties"]["request_id"]["pattern"] == REQUEST_ID_PATTERN
    assert re.fullmatch(REQUEST_ID_PATTERN[1:-1], "0123456789abcdef")
