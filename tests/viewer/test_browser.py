"""The viewer in real headless Chromium (Debian's, driven by Playwright; never downloaded).

1. Every page over a folder of H200 runs, a run whose op names are HTML and a two-rank run:
   waits until the charts have drawn, fails on any console error, page error, failed or
   outside request, or JS dialog. Screenshots go to $SCREENSHOT_DIR.
2. The first screen (1400x900): one CPU run shows its verdict and a chart; a fresh clone's
   ./traces (the shipped examples) shows every run's verdict.
3. A client cannot leave the traces folder: no folder box, paths outside refused, ?root=
   ignored, a foreign Host (DNS rebinding) refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
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
    log_dir = tmp_path_factory.mktemp("viewer_server")
    with serve(log_dir, REPO, roots["browser"]) as url:
        yield url


@contextlib.contextmanager
def serve(log_dir: Path, cwd: Path, root: Path | None) -> Iterator[str]:
    """A viewer server started as `streamlit run viewer/app.py` from `cwd`, on `root` (as
    $AUTOPROF_DIR), or with no $AUTOPROF_DIR at all (then it reads ./traces)."""
    port = free_port()
    log_path = log_dir / f"server-{port}.log"
    env = {k: v for k, v in os.environ.items() if k != "AUTOPROF_DIR"}
    if root is not None:
        env["AUTOPROF_DIR"] = str(root)
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", APP, "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd, env=env,
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
            proc.wait()


def _wait(page, n_charts: int) -> None:
    page.wait_for_selector(READY, timeout=60_000)
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()
    if n_charts:
        page.wait_for_function(CHARTS_DRAWN, arg=n_charts, timeout=60_000)


def _visit_all(page, url: str, visit, pages: dict[str, int] = PAGES) -> None:
    """Open the app at `url` (the Runs page), then click through the top navigation."""
    page.goto(url)
    for title, n_charts in pages.items():
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
            # the only run of its function: Compare preselects it alone (bars, no sweep)
            _visit_all(page, f"{viewer_url}/?run={runs['evil']}", check_evil,
                       {**PAGES, "Compare": 1})
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


EXAMPLES = REPO / "traces" / "examples"
VIEWPORT = {"width": 1400, "height": 900}
SEED_64 = ("matmul_add/20261130-081107-7833ba", "matmul_add/20261130-081118-917cea")
SEED_4096 = ("matmul_add/20261130-081128-e3a5da", "matmul_add/20261130-081138-a2c77b")
# the Runs grid as drawn: one object per row, keyed by the column headers (only the columns
# on screen are in the DOM: the grid draws what is visible)
ROWS = """() => {
  const head = [...document.querySelectorAll('[role="columnheader"]')].map(h => h.innerText.trim());
  return [...document.querySelectorAll('[role="row"]')]
    .map(r => [...r.querySelectorAll('[role="gridcell"]')].map(c => c.innerText.trim()))
    .filter(cells => cells.length)
    .map(cells => Object.fromEntries(cells.map((c, i) => [head[i], c])));
}"""


@contextlib.contextmanager
def browser_page(chromium_exe: str, args: tuple[str, ...] = ()) -> Iterator:
    """A 1400x900 page that records console errors, page errors and failed requests."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_exe, args=CHROMIUM_ARGS + list(args))
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.problems = []
            page.on("console", lambda m: page.problems.append(f"console: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
            page.on("requestfailed", lambda r: page.problems.append(f"failed: {r.url}"))
            yield page
        finally:
            browser.close()


def _on_first_screen(locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_one_cpu_run_shows_its_verdict_and_a_chart_on_the_first_screen(chromium_exe,
                                                                       tmp_path):
    (cpu_run,) = [p for p in (EXAMPLES / "cpu_mlp_train").iterdir() if p.is_dir()]
    shutil.copytree(cpu_run, tmp_path / "traces" / "cpu_mlp_train" / cpu_run.name)
    with serve(tmp_path, tmp_path, tmp_path / "traces") as url, \
            browser_page(chromium_exe) as page:
        page.goto(url)
        _wait(page, 1)
        assert page.locator("h1").first.inner_text().strip() == "Overview"
        verdict = page.get_by_text("cpu-only: no GPU work in the trace", exact=False).first
        assert _on_first_screen(verdict)
        chart = page.locator('[data-testid="stVegaLiteChart"] svg .role-mark').first
        assert chart.bounding_box()["y"] < VIEWPORT["height"]
        page.screenshot(path=str(_shots() / "viewer_first_screen_cpu.png"))
        assert not page.problems, page.problems


def test_a_fresh_clone_shows_every_example_verdict_on_the_first_screen(chromium_exe,
                                                                        tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(EXAMPLES, clone / "traces" / "examples")  # and no runs of the user's own
    with serve(tmp_path, clone, None) as url, browser_page(chromium_exe) as page:
        page.goto(url)
        _wait(page, 0)
        page.wait_for_function(f"() => ({ROWS})().length >= 8", timeout=60_000)
        assert page.locator("h1").first.inner_text().strip() == "Runs"
        grid = page.locator('[data-testid="stDataFrame"]').first
        assert _on_first_screen(grid)
        rows = {r["run"]: r for r in page.evaluate(ROWS)}
        on_disk = {f"examples/{p.parent.name}/{p.name}" for p in EXAMPLES.glob("*/*")
                   if p.is_dir()}
        assert set(rows) == on_disk, rows
        verdicts = {run: row["verdict"] for run, row in rows.items()}
        assert all(v.endswith(("-bound", "-only")) or v == "mixed"
                   for v in verdicts.values()), verdicts  # a verdict in every row
        assert {verdicts[f"examples/{r}"] for r in SEED_4096} == {"compute-bound"}
        assert {verdicts[f"examples/{r}"] for r in SEED_64} == {"overhead-bound"}
        assert all(row["example"] == "example" for row in rows.values()), rows
        page.screenshot(path=str(_shots() / "viewer_runs.png"))
        assert not page.problems, page.problems


def test_a_client_cannot_leave_the_traces_folder(chromium_exe, tmp_path):
    root = tmp_path / "traces"
    shutil.copytree(EXAMPLES / "matmul_add", root / "matmul_add")
    (tmp_path / "secret.json").write_text('{"traceEvents": []}')
    rebind = ("--host-resolver-rules=MAP evil.example 127.0.0.1",)
    with serve(tmp_path, tmp_path, root) as url, browser_page(chromium_exe, rebind) as page:
        page.goto(f"{url}/?root=/")
        _wait(page, 0)
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_text(f"Traces folder: {root.resolve()}").count() == 1
        assert sidebar.locator("input[aria-label*='folder' i]").count() == 0  # none to retype
        page.get_by_text("Trace by path").click()
        box = sidebar.get_by_label("Trace or run folder (inside the traces folder)", exact=True)
        for outside in ("../secret.json", str(tmp_path / "secret.json"), "/"):
            box.fill(outside)
            box.press("Enter")
            _wait(page, 0)
            page.locator('[data-testid="stTopNavLink"]', has_text="Overview").click()
            page.wait_for_selector('[data-testid="stCode"]', timeout=60_000)
            _wait(page, 0)
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert "could not be loaded" in main and "refused" in main, (outside, main)
            assert "traceEvents" not in main, (outside, main)  # nothing of the file shown
            page.locator('[data-testid="stTopNavLink"]', has_text="Runs").click()
            _wait(page, 0)
        port = urllib.parse.urlsplit(url).port
        page.goto(f"http://evil.example:{port}/")
        page.wait_for_selector("text=Refused: this viewer only answers", timeout=60_000)
        main = page.locator('[data-testid="stMain"]').inner_text()
        assert "matmul_add" not in main and "bound" not in main, main
        assert page.locator('[data-testid="stSidebar"]').get_by_text("Run").count() == 0


def _shots() -> Path:
    shots = Path(os.environ.get("SCREENSHOT_DIR", REPO / "artifacts"))
    shots.mkdir(parents=True, exist_ok=True)
    return shots
