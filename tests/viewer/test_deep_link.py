"""A link to a run (``?run=<folder relative to the traces folder>``) opened on a fresh viewer
opens that run, not the newest, on the first script run and on the reruns after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support.viewer import APP, REPO

EXAMPLES = REPO / "traces" / "examples"
OLDEST_MATMUL = "matmul_add/20261130-081107-7833ba"


def _fresh(monkeypatch: pytest.MonkeyPatch, link: str) -> AppTest:
    from autoprof.viewer._loading import find_runs

    find_runs.clear()  # a fresh viewer: nothing listed yet
    monkeypatch.setenv("AUTOPROF_DIR", str(EXAMPLES))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = link
    return at.run()


@pytest.mark.slow
@pytest.mark.parametrize("link", [OLDEST_MATMUL, OLDEST_MATMUL + "/", "./" + OLDEST_MATMUL])
def test_a_link_opens_its_run_on_a_fresh_viewer_and_keeps_it(monkeypatch, link):
    assert (EXAMPLES / OLDEST_MATMUL).is_dir()
    at = _fresh(monkeypatch, link)
    assert not at.exception, [e.value for e in at.exception]
    (select,) = [s for s in at.sidebar.selectbox if s.key == "run"]
    assert Path(str(select.value)) == EXAMPLES / OLDEST_MATMUL
    for _ in range(1):  # a rerun (a widget touched, the page redrawn) keep the linked run
        at.run()
        (select,) = [s for s in at.sidebar.selectbox if s.key == "run"]
        assert Path(str(select.value)) == EXAMPLES / OLDEST_MATMUL
    assert OLDEST_MATMUL in (at.query_params["run"], *at.query_params["run"])
