"""The landing page and the interactive API reference in Chromium, over the session server:
no console error (a Content-Security-Policy violation is one), nothing loaded from another
host, every operation listed, and a call tried with a typed-in key answered 200."""

from __future__ import annotations

import gzip
import re
from urllib.parse import urljoin, urlsplit

import pytest

from tests.support import chromium
from tests.support.procs import get

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@pytest.fixture(scope="module")
def browser():
    yield from chromium.launch()


class Watched:
    """A page whose console messages, page errors and requests are recorded."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on(
            "console", lambda m: m.type in ("error", "warning") and self.errors.append(m.text)
        )
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def hosts(self) -> set[str]:
        return {urlsplit(url).netloc for url in self.requests if not url.startswith("data:")}


@pytest.fixture
def docs(browser, server):
    watched = Watched(browser)
    watched.page.goto(server.url + "/docs")
    watched.page.wait_for_selector(".opblock")
    yield watched
    watched.context.close()


def operations(server) -> set[tuple[str, str]]:
    document = get(server.url + "/openapi.json").json()
    return {
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in METHODS
    }


def test_the_reference_lists_every_operation(docs, server):
    listed = docs.page.eval_on_selector_all(
        ".opblock",
        "blocks => blocks.map(b => [b.querySelector('.opblock-summary-method')"
        ".textContent.toLowerCase(), b.querySelector('.opblock-summary-path')"
        ".dataset.path])",
    )
    assert len(listed) == len(operations(server))
    assert {tuple(op) for op in listed} == operations(server)
    assert docs.errors == []
    assert docs.hosts() == {urlsplit(server.url).netloc}


def test_a_call_tried_with_a_typed_in_key_answers_200(docs, server):
    page = docs.page
    page.click("button.authorize")
    header_scheme = page.locator(".auth-container", has_text="X-API-Key").first
    header_scheme.locator("input").fill(server.key)
    header_scheme.locator("button.authorize").click()
    page.click("button.btn-done")
    operation = page.locator("#operations-forecast-getForecast")
    operation.locator(".opblock-summary").click()
    operation.locator("button.try-out__btn").click()
    operation.locator("tr[data-param-name='coordinates'] input").fill("47.37,8.54")
    operation.locator("button.execute").click()
    status = operation.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for()
    assert status.text_content().strip() == "200"
    assert (
        "Europe/Zurich"
        in operation.locator(".live-responses-table .microlight").first.text_content()
    )
    tried = [url for url in docs.requests if "/forecast/" in url]
    assert tried and all(url.startswith(server.url + "/forecast/") for url in tried)
    assert docs.errors == []
    assert docs.hosts() == {urlsplit(server.url).netloc}


def test_the_landing_page_links_the_reference_and_the_service_endpoints(browser, server):
    watched = Watched(browser)
    watched.page.goto(server.url + "/")
    links = watched.page.eval_on_selector_all("a", "links => links.map(a => a.href)")
    assert [urlsplit(link).path for link in links] == [
        "/docs",
        "/openapi.json",
        "/health",
        "/ready",
    ]
    assert all(get(link).status == 200 for link in links)
    assert watched.errors == [] and watched.hosts() == {urlsplit(server.url).netloc}
    watched.context.close()


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_the_pages_policy_allows_no_inline_script_nor_another_host(server, path):
    reply = get(server.url + path)
    policy = reply.headers["Content-Security-Policy"]
    assert "unsafe" not in policy and "http" not in policy and "*" not in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert b"<script>" not in reply.body  # every script has a src
    assert not re.search(rb"<[^>]*\son[a-z]+\s*=", reply.body, re.I)  # nor an onclick=...
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"


def test_assets_are_the_same_gzipped_or_not_and_revalidate(server):
    url = urljoin(server.url, "/docs/assets/swagger-ui-bundle.js")
    plain = get(url, {"Accept-Encoding": "identity"})
    zipped = get(url, {"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain.headers
    assert gzip.decompress(zipped.body) == plain.body and len(zipped.body) < len(plain.body) / 3
    assert plain.headers["Vary"] == zipped.headers["Vary"] == "Accept-Encoding"
    again = get(url, {"If-None-Match": plain.headers["ETag"], "Accept-Encoding": "gzip"})
    assert again.status == 304 and again.headers["Vary"] == "Accept-Encoding"
