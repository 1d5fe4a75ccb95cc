"""One real headless-Chromium session over the viewer (recipe: ../shared/TESTING-VIEWER.md).

Serves a traces folder holding the H200 64 and 4096 runs, a run whose op names are HTML and
a two-rank run (for the Ranks page),
visits every page, waits until the charts have drawn, and fails on any console error, page
error, failed or outside request, or JS dialog. Screenshots go to $SCREENSHOT_DIR.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from support.ports import free_port
from support.viewer import APP, EVIL, EVIL_FOLDER, N4096, REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]
sync_api = pytest.importorskip("playwright.sync_api")

READY = ('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
         '[data-test-script-state="notRunning"]')
CHARTS_DRAWN = """n => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const drawn = charts.filter(c => [...c.querySelectorAll('svg .role-mark')]
      .some(m => { const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; }));
  return drawn.length >= n;
}"""
# page title -> charts it must draw for a single-rank H200 run
PAGES = {"Runs": 0, "Overview": 1, "Self vs total": 2, "Timeline": 1, "Steps and warm-up": 2,
         "Compare": 2, "Ranks": 0}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--hide-scrollbars"]


@pytest.fixture(scope="module")
def chromium_exe() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    return exe


@pytest.fixture(scope="module")
def viewer_url(roots, tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("viewer_server") / "server.log"
    env = dict(os.environ, AUTOPROF_DIR=str(roots["browser"]))
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", APP, "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited ({proc.returncode}):\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after 60 s:\n{log_path.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _wait(page, n_charts: int) -> None:
    page.wait_for_selector(READY, timeout=60_000)
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()
    if n_charts:
        page.wait_for_function(CHARTS_DRAWN, arg=n_charts, timeout=60_000)


def _visit_all(page, url: str, visit) -> None:
    """Open the app at `url` (the Runs page), then click through the top navigation."""
    page.goto(url)
    for title, n_charts in PAGES.items():
        if title != "Runs":
            page.locator('[data-testid="stTopNavLink"]', has_text=title).click()
            page.wait_for_function(
                "t => document.querySelector('h1') && document.querySelector('h1')"
                ".innerText.trim() === t", arg=title, timeout=60_000)
        _wait(page, n_charts)
        visit(title)


def test_every_page_in_chromium(viewer_url, chromium_exe, roots):
    shots = Path(os.environ.get("SCREENSHOT_DIR", REPO / "artifacts"))
    shots.mkdir(parents=True, exist_ok=True)
    runs = {"n4096": N4096,
            "evil": "evil/20261130-070200-0000e1", "ranks": "ddp_step/20261130-070400-0000d2"}
    problems: list[str] = []
    dialogs: list[str] = []
    outside: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_exe, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.on("console", lambda m: problems.append(f"console: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"failed: {r.url} {r.failure}"))
        page.on("request", lambda r: outside.append(r.url)
                if not r.url.startswith((viewer_url, "data:", "blob:")) else None)

        def on_dialog(d) -> None:
            dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", on_dialog)
        def shoot(title: str) -> None:
            if title == "Ranks":
                return  # taken on the two-rank run below
            name = title.lower().replace(" and warm-up", "").replace(" ", "_")
            page.screenshot(path=str(shots / f"viewer_{name}.png"), full_page=True)

        def check_evil(title: str) -> None:
            if title == "Self vs total":
                labels = page.locator("svg text").all_text_contents()
                assert EVIL[0] in labels and EVIL[1] in labels, labels
                page.screenshot(path=str(shots / "viewer_malicious_names.png"), full_page=True)
                _hover_tooltip(page)

        try:
            _visit_all(page, f"{viewer_url}/?run={runs['n4096']}", shoot)
            _visit_all(page, f"{viewer_url}/?run={runs['evil']}", check_evil)
            body = page.locator("body").inner_text()
            page.goto(f"{viewer_url}/?run={runs['ranks']}")
            _wait(page, 0)
            page.locator('[data-testid="stTopNavLink"]', has_text="Ranks").click()
            page.wait_for_selector("text=Straggler: rank", timeout=60_000)
            _wait(page, 3)
            page.screenshot(path=str(shots / "viewer_ranks.png"), full_page=True)
            bad = urllib.parse.quote(f"{EVIL_FOLDER}/20261130-070210-0000e2")
            page.goto(f"{viewer_url}/?run={bad}")
            _wait(page, 0)
            page.locator('[data-testid="stTopNavLink"]', has_text="Overview").click()
            page.wait_for_selector("text=This run could not be loaded.", timeout=60_000)
            _wait(page, 0)
            failed_text = page.locator('[data-testid="stMain"]').inner_text()
            page.screenshot(path=str(shots / "viewer_failed_run.png"), full_page=True)
        finally:
            browser.close()
    assert not dialogs, dialogs
    assert not problems, problems
    assert not outside, outside
    assert "A single-process run" in body
    assert EVIL[0] in failed_text  # the failed run's error, shown as text


def _hover_tooltip(page) -> None:
    """A tooltip over an op named like HTML shows the name as text and creates no element."""
    marks = page.locator('[data-testid="stVegaLiteChart"] svg .role-mark path')
    tip = page.locator("#vg-tooltip-element")
    texts = []
    for i in range(min(marks.count(), 40)):
        marks.nth(i).hover(force=True)
        if tip.count() and tip.is_visible():
            texts.append(tip.inner_text())
            if any(name in texts[-1] for name in EVIL):
                break
    assert any(name in t for t in texts for name in EVIL), texts
    assert page.locator("#vg-tooltip-element img, #vg-tooltip-element script").count() == 0
