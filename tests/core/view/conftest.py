"""A real browser for the view's tests: Debian's chromium, headless, driven by Playwright.

WebGL runs on SwiftShader (no GPU here). Where chromium or Playwright is missing the
browser tests skip, naming what to install; ``.ci/run`` installs both.
"""

from __future__ import annotations

import io
import shutil
import socket
import time
from collections.abc import Callable

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--enable-unsafe-swiftshader", "--use-angle=swiftshader", "--no-sandbox"]
VIEWPORT = {"width": 1000, "height": 700}
NOISE = 24  # colour levels: a pixel that changed by less is anti-aliasing, not a change
MIN_CHANGE = 400  # pixels: a robot's links cover thousands; a moved notice or a cursor, far fewer
# The part of the canvas the robots stand in: clear of the control panel (right) and of
# the page's notices (top left). Pixel regions of VIEWPORT.
MIDDLE = (slice(150, 650), slice(320, 660))


def wait_for(condition: Callable[[], object], what: str, timeout: float = 20.0, every: float = 0.05):
    """Poll ``condition`` until it gives something other than None or False (return it), or
    fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def changed(a: np.ndarray, b: np.ndarray) -> int:
    """How many pixels of the robots' part of the canvas differ (by more than anti-aliasing noise)."""
    return int((np.abs(a[MIDDLE] - b[MIDDLE]).max(axis=-1) > NOISE).sum())


class Page:
    """A browser page on the view, with the console errors it logged."""

    def __init__(self, page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def open(self, url: str) -> Page:
        self.page.goto(url)
        self.page.locator("canvas").first.wait_for(timeout=30_000)
        return self

    def shot(self) -> np.ndarray:
        return pixels(self.page.screenshot())

    @staticmethod
    def robots_part(shot: np.ndarray) -> np.ndarray:
        """The part of a screenshot the robots stand in."""
        return shot[MIDDLE]

    @staticmethod
    def differ(a: np.ndarray, b: np.ndarray) -> bool:
        """Whether two screenshots show the robots differently."""
        return changed(a, b) > MIN_CHANGE

    def changes_from(self, before: np.ndarray, what: str) -> np.ndarray:
        """A screenshot once the robots' part of the picture differs from ``before``."""
        def differs() -> np.ndarray | None:
            now = self.shot()
            return now if self.differ(now, before) else None

        return wait_for(differs, what)

    def settled(self) -> np.ndarray:
        """A screenshot once the picture has stopped changing."""
        last = [self.shot()]
        seen = []

        def still() -> np.ndarray | None:
            now = self.shot()
            moved = np.abs(now - last[0]).max(axis=-1) > NOISE
            last[0] = now
            if not moved[MIDDLE].any():
                return now
            ys, xs = np.nonzero(moved)
            seen.append(f"{int(moved.sum())} px in rows {ys.min()}-{ys.max()}, columns {xs.min()}-{xs.max()}")
            return None

        try:
            return wait_for(still, "the picture to settle")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; changes seen: {seen[-5:]}") from None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (a test extra)")
    if not shutil.which(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport=VIEWPORT)
    yield Page(page)
    page.close()


@pytest.fixture
def chromium() -> tuple[str, list[str]]:
    """The browser's path and the flags it needs here."""
    return CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(name="wait_for")
def wait_for_fixture():
    return wait_for


@pytest.fixture
def port() -> int:
    return free_port()
