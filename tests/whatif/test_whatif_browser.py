"""The What-if page in real headless Chromium: the speedup chart draws, nothing errors."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch
from support.ports import free_port

import autoprof
from autoprof.runfolder.whatif import whatif_record, write_whatif

pytestmark = [pytest.mark.browser, pytest.mark.slow]
sync_api = pytest.importorskip("playwright.sync_api")

REPO = Path(__file__).resolve().parents[2]
READY = ('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
         '[data-test-script-state="notRunning"]')
BARS_DRAWN = """() => [...document.querySelectorAll(
    '[data-testid="stVegaLiteChart"] svg .role-mark')].some(m => {
  const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; })"""
RESULTS = [
    {"fix": "compile", "applicable": True, "status": "faster", "baseline_us": 300.0,
     "fixed_us": 100.0, "speedup": 3.0, "measured_speedup": 3.0, "speedup_low": 2.5,
     "speedup_high": 3.5, "outputs_match": True, "max_abs_error": 0.0, "setup_s": 4.2},
    {"fix": "<b>bf16</b>", "applicable": True, "status": "outputs differ", "baseline_us": 300.0,
     "fixed_us": 60.0, "speedup": None, "measured_speedup": 5.0, "outputs_match": False,
     "reason": "<script>alert(1)</script>"},
    {"fix": "cuda-graph", "applicable": False, "status": "not applicable",
     "reason": "no CUDA device"},
]


@pytest.fixture
def server(tmp_path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    traces = tmp_path / "traces"
    run = autoprof.check(autoprof.autoprof(name="tried", out_dir=str(traces))(lambda x: x + 1),
                         torch.ones(4))
    write_whatif(Path(run.path), whatif_record(RESULTS))
    port = free_port()
    env = {**os.environ, "AUTOPROF_DIR": str(traces)}
    with (tmp_path / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(REPO / "viewer" / "app.py"),
             "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port",
             str(port), "--server.fileWatcherType", "none", "--browser.gatherUsageStats",
             "false"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"viewer did not start:\n{(tmp_path / 'server.log').read_text()}")
            time.sleep(0.2)
        yield exe, url, Path(run.path)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_whatif_page_draws_its_chart_without_errors(server):
    exe, url, _ = server
    problems: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--headless", "--no-sandbox",
                                                                "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
        page.goto(url)
        page.wait_for_selector(READY, timeout=60_000)
        page.get_by_text("tried/", exact=False).first.click()
        page.wait_for_selector(READY, timeout=60_000)
        page.locator('[data-testid="stTopNavLink"]', has_text="What-if").click()
        page.wait_for_function("() => document.querySelector('h1')?.innerText.trim() "
                               "=== 'What-if'", timeout=60_000)
        page.wait_for_selector(READY, timeout=60_000)
        page.wait_for_function(BARS_DRAWN, timeout=60_000)
        body = page.inner_text("body")
        tables = page.locator('[data-testid="stDataFrame"]').count()
        labels = page.eval_on_selector_all('[data-testid="stVegaLiteChart"] svg text',
                                           "els => els.map(e => e.textContent)")
        browser.close()
    assert "Best measured fix: compile, 3.00x faster" in body
    assert tables == 1
    assert "<b>bf16</b>" in labels  # a fix name is drawn as text, never as markup
    assert problems == [], problems
