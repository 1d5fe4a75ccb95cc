"""Suite-wide guards. Area-specific fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import store_shared
from support.store import CommittedRuns, committed
from support.tiers import FIRST_FILES, QUICK_FILES, SERIAL_FILES

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


@pytest.fixture(autouse=True)
def _no_profiler_left_running(monkeypatch, tmp_path):
    """Every test runs with its own traces folder, and no torch profiler may outlive it."""
    monkeypatch.setenv("AUTOPROF_DIR", str(tmp_path / "traces"))
    yield
    cache = sys.modules.get("autoprof.analysis.loader.cache")
    if cache is not None:  # background cache writes must not outlive their test's folder
        cache.wait_for_writes()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    enabled = torch.autograd._profiler_enabled()
    if enabled:  # stop it so one leak does not fail every later test
        try:
            torch.autograd._disable_profiler()
        except Exception:
            pass
    assert not enabled, "a torch profiler was left running after this test"


_YIELD = "AUTOPROF_FINISH_YIELD_S"
_YIELD_BEFORE = os.environ.get(_YIELD)  # the session's own value, for the timed files


@pytest.hookimpl(tryfirst=True)  # before the item's fixtures (a module's recording) are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A run's finisher starts its work at once (``AUTOPROF_FINISH_YIELD_S=0``) instead of
    waiting for the program to leave a core idle (record/finisher/cpu_gate.py): in a test
    the program is pytest, which records the steps and then waits for that very finisher,
    so the wait only delayed it (loading its code and two waits of 0.2 s or more, after the
    window instead of during it: 11-14 s of 47-58 s on tests/core's test_api, test_call_edges,
    test_nesting and test_finish). The tests of that wait set it themselves
    (tests/core/test_cpu_gate.py); the files that time things (`serial`) keep the session's
    value (the default, as a program has)."""
    if item.get_closest_marker("serial") is None:
        os.environ[_YIELD] = "0"
    elif _YIELD_BEFORE is None:
        os.environ.pop(_YIELD, None)
    else:
        os.environ[_YIELD] = _YIELD_BEFORE


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``-n``, scripts/test.sh): the files that read every committed run
    share one worker (support/xdist_scopes.py), and the controller makes the session's folder
    through which the workers share each analysed committed run (support/store_shared.py)."""
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None):
        from support import xdist_scopes

        config.pluginmanager.register(xdist_scopes, "autoprof-xdist-scopes")
        if not hasattr(config, "workerinput"):  # the controller, before any worker starts
            folder = tempfile.mkdtemp(prefix="autoprof-shared-runs-")
            os.environ[store_shared.ENV] = folder
            config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.fixture(scope="session")
def committed_runs() -> Iterator[CommittedRuns]:
    """The committed runs, each loaded and analysed once this session (support/store.py)."""
    yield committed
    committed.clear()


def has_cuda() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False
    return bool(sys.modules["torch"].cuda.is_available())


@pytest.hookimpl(tryfirst=True)  # before `-m` picks: `-m quick` sees these marks
def pytest_collection_modifyitems(config, items):
    first = {f: i for i, f in enumerate(FIRST_FILES)}  # the longest files first, in order
    items.sort(key=lambda it: first.get(Path(it.path).relative_to(REPO).as_posix(), len(first)))
    for item in items:  # the quick tier and the timed files (support/tiers.py), by file
        path = Path(item.path).relative_to(REPO).as_posix()
        if path in QUICK_FILES:
            item.add_marker(pytest.mark.quick)
        if path in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)
    if os.environ.get("AUTOPROF_GPU_TESTS") == "1" or has_cuda():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (CI has none; see docs/gpu-validation.md)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip_gpu)
