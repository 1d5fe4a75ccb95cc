"""The README's first Python snippet runs as written, in a fresh process, and leaves a run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.conftest import manifest, only_run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_readme_first_python_snippet_runs_as_written(traces_root, tmp_path):
    text = (REPO / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S)
    assert snippet, "README.md has no python block"
    done = subprocess.run(
        [sys.executable, "-c", snippet.group(1)], cwd=tmp_path, capture_output=True, text=True,
        timeout=180, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert manifest(only_run(traces_root, "matmul_add"))["status"] == "complete"
