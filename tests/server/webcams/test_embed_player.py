"""The embed player in a real browser: Debian's Chromium driven by Playwright, over the session
server (full default build). Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from server.config import Config
from server.webcams.secrets import read_secrets_file
from server.webcams.tokens import EMBED, Signer
from tests.support.procs import ROOT, get

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"
WEBCAM_ROW = 40  # a webcam of the default catalog (by public id order)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def webcam(server) -> str:
    listing = get(
        f"{server.url}/webcams?limit=200&sort=views_asc", {"X-API-Key": server.key}
    ).json()
    return sorted(c["public_id"] for c in listing["results"])[WEBCAM_ROW]


def embed_url(server, public_id: str) -> str:
    detail = get(f"{server.url}/webcams/{public_id}", {"X-API-Key": server.key}).json()
    return detail["player"]["embed"]


class Watched:
    """A page whose console errors, page errors and requests are recorded."""

    def __init__(self, browser, width: int, height: int = 720):
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on(
            "console", lambda m: m.type in ("error", "warning") and self.errors.append(m.text)
        )
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, url: str) -> Watched:
        self.page.goto(url)
        self.wait_for_frame()
        return self

    def wait_for_frame(self) -> None:
        self.page.wait_for_function(
            "() => { const i = document.getElementById('frame');"
            " return i.complete && i.naturalWidth > 0; }"
        )

    def value(self) -> int:
        return int(self.page.eval_on_selector("#slider", "s => s.value"))

    def data(self) -> dict:
        return json.loads(self.page.text_content("#player-data"))

    def close(self) -> None:
        self.context.close()


def test_frames_load_and_play_pause_work_with_the_mouse(browser, server, webcam):
    watched = Watched(browser, 1280).open(embed_url(server, webcam))
    page = watched.page
    frames = watched.data()["frames"]
    assert 100 <= len(frames) <= 145  # 24 h of 10-minute snapshots
    assert watched.value() == len(frames) - 1  # starts at the newest
    assert page.get_attribute("#frame", "src") == frames[-1]["url"]
    # A relative label: "just now" when the newest snapshot is under a minute old.
    assert re.match(r"(\d+ (min|h|d) ago|just now)", page.text_content("#when"))
    page.click("#play")
    assert page.get_attribute("#play", "aria-pressed") == "true"
    page.wait_for_function("() => document.getElementById('slider').value === '3'")
    watched.wait_for_frame()
    page.click("#play")
    assert page.get_attribute("#play", "aria-label") == "Play"
    stopped = watched.value()
    page.wait_for_timeout(800)  # longer than two playback steps
    assert watched.value() == stopped
    box = page.locator("#slider").bounding_box()
    page.mouse.click(box["x"] + 3, box["y"] + box["height"] / 2)
    assert watched.value() <= 2
    watched.wait_for_frame()
    assert page.get_attribute("#frame", "src") == frames[watched.value()]["url"]
    assert watched.errors == []
    watched.close()


def test_keyboard_controls(browser, server, webcam):
    watched = Watched(browser, 1280).open(embed_url(server, webcam))
    page, last = watched.page, len(watched.data()["frames"]) - 1
    page.focus("#slider")
    page.keyboard.press("ArrowLeft")
    assert watched.value() == last - 1
    page.keyboard.press("Home")
    assert watched.value() == 0
    watched.wait_for_frame()
    page.keyboard.press("End")
    assert watched.value() == last
    page.focus("#play")
    page.keyboard.press("Space")  # the focused button
    assert page.get_attribute("#play", "aria-pressed") == "true"
    page.keyboard.press("k")
    assert page.get_attribute("#play", "aria-pressed") == "false"
    paused = watched.value()
    page.locator("h1").click()  # focus on the page itself
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert watched.value() == (paused - 2) % (last + 1)
    page.keyboard.press(" ")
    assert page.get_attribute("#play", "aria-pressed") == "true"
    page.keyboard.press("Shift+K")  # the hint's K, as typed with Shift or Caps Lock
    assert page.get_attribute("#play", "aria-pressed") == "false"
    assert watched.errors == []
    watched.close()


def test_nothing_leaves_the_pages_origins_and_next_frames_preload(browser, server, webcam):
    watched = Watched(browser, 1280).open(embed_url(server, webcam))
    frames = watched.data()["frames"]
    watched.page.wait_for_function(
        f"() => performance.getEntriesByType('resource').some(e => e.name === {json.dumps(frames[1]['url'])})"
    )
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(server.url))
    outside = [
        u for u in watched.requests if not u.startswith(origin + "/") and not u.startswith("data:")
    ]
    assert outside == []
    assert frames[0]["url"] in watched.requests  # preloaded (the frame after the newest)
    assert watched.errors == []
    watched.close()


@pytest.mark.parametrize("width, height", [(320, 480), (1280, 800)])
def test_layout(browser, server, webcam, width, height):
    watched = Watched(browser, width, height).open(embed_url(server, webcam))
    page = watched.page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"embed-player-{width}.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for selector in ("#play", "#slider", "#when", "#frame", "nav"):
        box = page.locator(selector).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, selector
        assert box["y"] + box["height"] <= height + 0.5, selector
    assert page.locator("#slider").bounding_box()["width"] >= 100
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(14, 16, 20)"
    assert watched.errors == []
    watched.close()


def test_30_day_range_from_the_page(browser, server, webcam):
    watched = Watched(browser, 800).open(embed_url(server, webcam))
    with watched.page.expect_navigation():
        watched.page.click("nav a:has-text('30d')")
    watched.wait_for_frame()
    data = watched.data()
    assert data["range"] == "30d" and 25 <= len(data["frames"]) <= 30
    assert watched.page.get_attribute("nav a:has-text('30d')", "aria-current") == "page"
    assert re.match(r"(\d+ (min|h|d) ago|just now)", watched.page.text_content("#when"))
    watched.page.keyboard.press("Home")
    assert watched.page.text_content("#when").startswith(("29 d ago", "30 d ago", "28 d ago"))
    assert watched.errors == []
    watched.close()


def test_the_page_says_when_its_link_has_expired(browser, server, webcam, default_build, keys_file):
    config = Config(build_dir=default_build, keys_file=keys_file[0])
    signer = Signer(read_secrets_file(config.secrets_path))
    expires = int(time.time()) + 6
    url = f"{server.url}/webcams/embed/{webcam}?token={signer.issue(EMBED, webcam, expires)}"
    watched = Watched(browser, 640)
    page = watched.page
    page.goto(url)  # (on a slow machine the frame may not load before the link expires)
    page.wait_for_selector("#message:not([hidden])", timeout=30_000)
    assert "expired" in page.text_content("#message")
    assert page.is_disabled("#play") and page.is_disabled("#slider")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "embed-player-expired.png"))
    # Loading it again now is a 403 page that says the same.
    response = page.goto(url)
    assert response.status == 403
    assert "expired" in page.text_content(".message")
    watched.close()
