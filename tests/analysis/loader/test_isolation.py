"""The analysis layer never imports torch, streamlit or altair (checked in a fresh process),
and every public name of autoprof.analysis resolves lazily."""

from __future__ import annotations

import os
import subprocess
import sys

from _loader_paths import MATMUL, REPO

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


def test_every_public_name_resolves():
    import autoprof.analysis as analysis

    missing = []
    for name in analysis.__all__:
        try:
            getattr(analysis, name)
        except (ImportError, AttributeError) as exc:  # a module not written yet
            missing.append(f"{name}: {exc}")
    loader_names = {"TraceError", "TraceFile", "read_trace", "build_events", "Run", "load",
                    "find_runs"}
    assert not [m for m in missing if m.split(":")[0] in loader_names]
    assert set(analysis.__all__) == set(analysis._LAZY)


def test_functions_named_like_their_module_stay_functions():
    import importlib

    import autoprof.analysis as analysis

    for name in ("overhead", "verdict", "compare"):
        try:
            importlib.import_module(f"autoprof.analysis.{name}")
        except ImportError:
            continue
        assert callable(getattr(analysis, name)), name
        assert not isinstance(getattr(analysis, name), type(sys)), name
