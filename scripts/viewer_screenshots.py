"""Screenshots of the viewer, taken in Debian's chromium (Playwright, no browser download).

    .venv/bin/python scripts/viewer_screenshots.py [TRACES_DIR [OUT_DIR [LABEL=RUN ...]]]

Without LABEL=RUN arguments: a tour of every page over TRACES_DIR (default traces/examples)
into OUT_DIR (default docs/img) as `viewer_<page>.png`, each the first screen at 1400x900,
the size the docs promise the answer fits in. With them: `OUT_DIR/<LABEL>_overview.png` of
the Overview of each RUN (`<name>/<run_id>` under TRACES_DIR). Starts the viewer on
127.0.0.1, waits for the charts to draw, and fails on any console error.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
READY = ('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
         '[data-test-script-state="notRunning"]')
CHARTS_DRAWN = ("() => document.querySelectorAll("
                "'[data-testid=\"stVegaLiteChart\"] svg .role-mark').length > 0")
# (file name, run to select, page in the top navigation, wait for a chart)
TOUR = [
    ("runs", None, "Runs", False),
    ("overview_4096", "matmul_add/20261130-081128-e3a5da", "Overview", True),
    ("overview_64", "matmul_add/20261130-081107-7833ba", "Overview", True),
    ("overview_cpu", "cpu_mlp_train", "Overview", True),
    ("self_vs_total", "eager_100/20261130-081150-49320d", "Self vs total", True),
    ("timeline", "cpu_mlp_train", "Timeline", True),
    ("steps", "ddp_step/20261130-081205-bdf2d2", "Steps and warm-up", True),
    ("compare", "matmul_add/20261130-081128-e3a5da", "Compare", True),
    ("ranks", "ddp_step/20261130-081205-bdf2d2", "Ranks", True),
    ("roofline", "matmul_add/20261130-081128-e3a5da", "Roofline", False),
    ("memory", "matmul_add/20261130-081128-e3a5da", "Memory", False),
    ("whatif", "matmul_add/20261130-081128-e3a5da", "What-if", False),
]


def _serve(traces: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "viewer" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", "--client.toolbarMode", "viewer"],
        env=dict(os.environ, AUTOPROF_DIR=str(traces)), cwd=REPO, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.3)
    return server, url


def _settle(page: Any, chart: bool) -> None:
    time.sleep(1.0)
    page.wait_for_selector(READY, timeout=60_000)
    if chart:
        page.wait_for_function(CHARTS_DRAWN, timeout=60_000)
    time.sleep(0.5)  # let the charts finish their layout


def _run_id(traces: Path, run: str) -> str:
    """`name` alone means the newest run of that name."""
    if "/" in run:
        return run
    return f"{run}/{sorted(p.name for p in (traces / run).iterdir() if p.is_dir())[-1]}"


def main(argv: list[str]) -> int:
    traces = Path(argv[0] if argv else REPO / "traces" / "examples").resolve()
    out = Path(argv[1]) if len(argv) > 1 else REPO / "docs" / "img"
    targets = [t.split("=", 1) for t in argv[2:]]
    shots = ([(f"{label}_overview", run, "Overview", True) for label, run in targets]
             if targets else TOUR)
    out.mkdir(parents=True, exist_ok=True)
    server, url = _serve(traces)
    errors: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                      "--disable-background-networking", "--disable-component-update",
                      "--disable-sync", "--hide-scrollbars"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            for name, run, title, chart in shots:
                page.goto(url if run is None else f"{url}/?run={_run_id(traces, run)}")
                page.wait_for_selector(READY, timeout=60_000)
                page.locator('[data-testid="stTopNavLink"]', has_text=title).first.click()
                _settle(page, chart)
                page.screenshot(path=str(out / f"{name}.png" if targets else
                                         out / f"viewer_{name}.png"))
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
    if errors:
        print("console errors:", errors, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
