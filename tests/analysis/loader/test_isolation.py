"""The analysis layer never imports torch, streamlit or altair (checked in a fresh process),
and every public name of autoprof.analysis is what it names."""

from __future__ import annotations

import os
import subprocess
import sys

from support.loader_paths import MATMUL, REPO

CODE = """
import sys
import autoprof
import autoprof.analysis as analysis
run = autoprof.load({trace!r})
assert len(run.events) == 32
analysis.find_runs({folder!r})
try:
    analysis.load({missing!r})
except analysis.TraceError:
    pass
banned = sorted(m for m in ("torch", "streamlit", "altair") if m in sys.modules)
print("BANNED", banned)
"""


def test_loading_never_imports_torch_streamlit_or_altair(tmp_path):
    code = CODE.format(trace=str(MATMUL / "n64_cold" / "trace.json"), folder=str(MATMUL),
                       missing=str(tmp_path / "nope.json"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_CACHE": "0"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "BANNED []" in done.stdout


def test_every_public_name_resolves_and_stays_itself():
    """Every name in __all__ is bound; importing the stage modules (whose functions share a
    module's short name: metrics/overhead.py defines overhead) never rebinds one."""
    import importlib
    import types

    import autoprof.analysis as analysis

    for stage in ("loader", "metrics", "diagnose", "report"):
        package = importlib.import_module(f"autoprof.analysis.{stage}")
        for module in sorted((REPO / "autoprof" / "analysis" / stage).glob("*.py")):
            importlib.import_module(f"{package.__name__}.{module.stem}")
    for name in analysis.__all__:
        value = getattr(analysis, name)
        assert not isinstance(value, types.ModuleType), name
    for name in ("overhead", "verdict", "compare", "load"):
        assert callable(getattr(analysis, name)), name
