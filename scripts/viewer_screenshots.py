"""Screenshots of the viewer's Overview for chosen runs (used for docs/gpu-validation.md).

    .venv/bin/python scripts/viewer_screenshots.py TRACES_DIR OUT_DIR LABEL=RUN [LABEL=RUN ...]

RUN is `<name>/<run_id>` under TRACES_DIR. Starts the viewer on 127.0.0.1, opens each run
in Debian's chromium (Playwright, no download), waits for the charts, saves
`OUT_DIR/<LABEL>_overview.png`, and fails on any console error.
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

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
READY = ('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
         '[data-test-script-state="notRunning"]')
CHARTS_DRAWN = ("() => document.querySelectorAll("
                "'[data-testid=\"stVegaLiteChart\"] svg .role-mark').length > 0")


def main(argv: list[str]) -> int:
    traces, out, targets = Path(argv[0]).resolve(), Path(argv[1]), argv[2:]
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "viewer" / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        env=dict(os.environ, AUTOPROF_DIR=str(traces)), cwd=REPO, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    errors: list[str] = []
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                      "--disable-background-networking", "--disable-component-update",
                      "--disable-sync"])
            page = browser.new_page(viewport={"width": 1280, "height": 1500})
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            for target in targets:
                label, run = target.split("=", 1)
                page.goto(f"{url}/?run={run}")
                page.wait_for_selector(READY, timeout=60_000)
                page.get_by_role("link", name="Overview").first.click()
                time.sleep(1.0)
                page.wait_for_selector(READY, timeout=60_000)
                page.wait_for_function(CHARTS_DRAWN, timeout=60_000)
                page.screenshot(path=str(out / f"{label}_overview.png"), full_page=True)
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
    if errors:
        print("console errors:", errors, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
