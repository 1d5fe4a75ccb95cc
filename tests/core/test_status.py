"""The status a run ends with is true: ``complete`` only for a run whose trace parses."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import autoprof.record.export as export
from autoprof import AutoprofWarning, autoprof
from autoprof.analysis.loader.manifest import read_manifest
from tests.core.conftest import TINY, manifest, only_run, run_listing, trace_files

REPO = Path(__file__).resolve().parents[2]


def _calls(fn, n: int = 2):
    for _ in range(n):
        fn(torch.ones(2))
    fn.autoprof_session.flush()
    return fn.autoprof_session.run_dir


@pytest.mark.parametrize("code", [None, 0])
def test_sys_exit_zero_in_a_decorated_main_is_complete(code, traces_root):
    calls = []

    @autoprof(name="main", warmup=0, schedule=TINY)
    def main(x):
        calls.append(x)
        if len(calls) == 2:
            raise SystemExit(code)
        return x

    main(torch.ones(2))
    with pytest.raises(SystemExit):
        main(torch.ones(2))
    main.autoprof_session.flush()
    m = manifest(only_run(traces_root, "main"))
    assert m["status"] == "complete" and m["error"] is None


def test_sys_exit_with_an_error_code_fails_the_run(traces_root):
    @autoprof(name="bad_main", warmup=0, schedule=TINY)
    def main(x):
        raise SystemExit(2)

    with pytest.raises(SystemExit):
        main(torch.ones(2))
    main.autoprof_session.flush()
    m = manifest(only_run(traces_root, "bad_main"))
    assert m["status"] == "failed" and m["error"]["type"] == "SystemExit"


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


def test_an_exception_whose_str_raises_fails_the_run(traces_root):
    @autoprof(name="unprintable", warmup=0, schedule=TINY)
    def f(x):
        raise Unprintable()

    with pytest.raises(Unprintable):
        f(torch.ones(2))
    f.autoprof_session.flush()
    m = manifest(only_run(traces_root, "unprintable"))
    assert m["status"] == "failed" and m["error"]["type"] == "Unprintable"
    assert "RuntimeError" in m["error"]["message"]


def test_a_huge_exception_message_gives_a_manifest_the_reader_opens(traces_root):
    @autoprof(name="huge", warmup=0, schedule=TINY)
    def f(x):
        raise ValueError("x" * 20_000_000)

    with pytest.raises(ValueError):
        f(torch.ones(2))
    f.autoprof_session.flush()
    run = only_run(traces_root, "huge")
    m = read_manifest(run / "manifest.json")
    assert m["status"] == "failed" and len(m["error"]["message"]) < 5000
    assert "20000000 characters, cut" in m["error"]["message"]


def test_ctrl_c_during_the_export_is_failed_not_complete(monkeypatch, traces_root):
    """A caught KeyboardInterrupt in the middle of Kineto's export leaves half a trace."""
    original = export.export_raw_trace

    def interrupted(prof, run_dir, worker):
        raw, final = export.trace_paths_for(run_dir, worker)
        raw.write_text('{"traceEvents": [')
        raise KeyboardInterrupt

    monkeypatch.setattr(export, "export_raw_trace", interrupted)
    fn = autoprof(name="ctrlc", warmup=0, schedule=TINY)(lambda x: x + 1)
    fn(torch.ones(2))
    with warnings.catch_warnings(record=True), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("always")
        fn(torch.ones(2))  # the user's Ctrl+C reaches the user
    monkeypatch.setattr(export, "export_raw_trace", original)
    fn.autoprof_session.flush()
    run = only_run(traces_root, "ctrlc")
    m = manifest(run)
    assert m["status"] == "failed" and m["error"]["type"] == "KeyboardInterrupt"
    (cut,) = [name for name in run_listing(run) if name != "manifest.json"]
    assert cut.endswith(".pt.trace.json.raw")  # the half trace is kept, never deleted


def test_a_trace_that_does_not_parse_is_failed_with_its_name(monkeypatch, traces_root):
    def cut(prof, run_dir, worker):
        raw, final = export.trace_paths_for(run_dir, worker)
        raw.write_text('{"traceEvents": [{"name": "a"b"}]}')  # an unescaped label
        return raw, final

    monkeypatch.setattr(export, "export_raw_trace", cut)
    with pytest.warns(AutoprofWarning, match="is not valid JSON"):  # said once, at flush
        run = _calls(autoprof(name="cut", warmup=0, schedule=TINY)(lambda x: x))
    m = manifest(run)
    assert m["status"] == "failed" and "is not valid JSON" in m["error"]["message"]
    assert ".pt.trace.json.raw" in m["error"]["message"] and trace_files(run) == []


def test_a_write_error_in_the_export_is_failed(monkeypatch, traces_root):
    def full(prof, run_dir, worker):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "export_raw_trace", full)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        run = _calls(autoprof(name="enospc", warmup=0, schedule=TINY)(lambda x: x))
    m = manifest(run)
    assert m["status"] == "failed" and "No space left" in m["error"]["message"]
    assert m["files"] == []


def test_a_newline_in_autoprof_dir_is_failed_with_the_reason(monkeypatch, tmp_path):
    """Kineto cannot write under such a path (it logs that and returns): never complete."""
    root = tmp_path / "new\nline"
    monkeypatch.setenv("AUTOPROF_DIR", str(root))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = _calls(autoprof(name="newline", warmup=0, schedule=TINY)(lambda x: x))
    m = manifest(run)
    assert m["status"] == "failed" and "wrote no trace file" in m["error"]["message"]
    assert run_listing(run) == ["manifest.json"]  # Kineto's temp file is gone
    assert len([w for w in caught if issubclass(w.category, AutoprofWarning)]) == 1


@pytest.mark.slow
def test_a_file_size_limit_in_the_program_is_failed_not_complete(tmp_path, traces_root):
    script = tmp_path / "limited.py"
    script.write_text(textwrap.dedent(
        """
        import resource, warnings, torch, autoprof
        from autoprof import autoprof as ap

        @ap(name="limited", warmup=0, schedule=dict(wait=0, warmup=1, active=2))
        def f(x):
            for _ in range(200):
                x = x + 1
            return x

        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))  # the manifest fits
        warnings.simplefilter("ignore")
        for _ in range(3):
            f(torch.ones(2))
        autoprof.flush()
        """))
    env = {**os.environ, "AUTOPROF_DIR": str(traces_root), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    run = only_run(traces_root, "limited")
    m = manifest(run)
    assert m["status"] == "failed" and m["error"]["phase"] == "export"
    assert run_listing(run) == ["manifest.json"]
