"""summarize, compare, and the `autoprof` command (through a subprocess, as users run it)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from autoprof.analysis import compare, load
from autoprof.analysis.report.summary import summarize
from autoprof.cli.commands import Progress, build_parser, view_command, viewer_app

REPO = Path(__file__).resolve().parents[3]
N64 = REPO / "tests" / "data" / "h200" / "matmul_add" / "n64_cold" / "trace.json"
N4096 = REPO / "tests" / "data" / "h200" / "matmul_add" / "n4096_cold" / "trace.json"
REQUIRED = {"verdict", "gpu_busy_pct", "self_cpu_us", "self_gpu_us", "steps", "diagnostics",
            "ranks", "straggler_rank", "top_ops"}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autoprof", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env=env)


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def test_summarize_is_json_with_the_required_keys():
    s = summarize(load(N64)).to_dict()
    assert REQUIRED <= set(s)
    assert s["verdict"] == "overhead-bound" and s["straggler_rank"] is None
    assert [st["step"] for st in s["steps"]] == [2, 3, 4]
    assert {d["id"] for d in s["diagnostics"]} >= {"overhead-bound", "cold-start"}
    assert all(set(d) == {"id", "severity", "message", "evidence", "hint"}
               for d in s["diagnostics"])
    assert s["top_ops"]["by_self_cpu"][0]["name"] == "aten::mm"  # as torch's table says
    assert s["device"]["name"] == "NVIDIA H200"
    assert _finite(s)
    assert json.loads(json.dumps(s, allow_nan=False)) == s


def test_compare_two_runs_side_by_side():
    table = compare([load(N64), load(N4096)])
    assert list(table["verdict"]) == ["overhead-bound", "compute-bound"]
    assert list(table["size"]) == [64.0, 4096.0]  # from the recorded input shapes
    assert table["name"].is_unique
    assert (table["self_gpu_us"].iloc[1] > 50 * table["self_gpu_us"].iloc[0])


def test_cli_summary_text_verdict_first_with_units():
    res = cli("summary", str(N64))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.index("VERDICT: overhead-bound") < out.index("EVIDENCE") < out.index(
        "DIAGNOSTICS") < out.index("TOP OPS BY SELF CPU TIME")
    assert "self CPU time         415 µs" in out
    assert "hint:" in out
    assert "[warning] overhead-bound" in out


def test_cli_summary_json():
    res = cli("summary", str(N4096), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["verdict"] == "compute-bound"
    assert 76 <= data["gpu_busy_pct"] <= 82
    assert REQUIRED <= set(data)


@pytest.mark.parametrize(("content", "problem"), [
    (None, "no such file or directory"),
    (b"", ""),
    (b'{"traceEvents": 5}', ""),
    (b"\x1f\x8b not gzip", ""),
])
def test_cli_bad_input_one_line_exit_2(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    res = cli("summary", str(path))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"autoprof: error: {path}: ")
    assert problem in lines[0]
    assert res.stdout == ""


def test_cli_run_folder_from_autoprof(tmp_path):
    torch = pytest.importorskip("torch")
    import autoprof

    def work(x):
        return (x @ x + 1).sum()

    decorated = autoprof.autoprof(out_dir=str(tmp_path), warmup=3,
                                  schedule={"wait": 0, "warmup": 0, "active": 3})(work)
    run = autoprof.check(decorated, torch.ones(32, 32))
    assert not isinstance(run, Path | type(None)), run
    res = cli("summary", str(run.path), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["verdict"] == "cpu-only"
    assert len(data["warmup_call_ms"]) == 3
    assert "no-profiler-warmup" in {d["id"] for d in data["diagnostics"]}
    assert data["status"] == "complete"


def test_progress_reports_only_for_slow_loads():
    class Sink:
        text = ""

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

    sink = Sink()
    p = Progress("big.json", sink)
    p(0.5, "decoding")
    assert sink.text == ""  # fast loads stay quiet
    p.started -= 10
    p(0.5, "decoding")
    p.done()
    assert "autoprof: loading big.json: 50% decoding" in sink.text
    assert "loaded big.json" in sink.text


def test_cli_summary_unencodable_names_print_as_replacements(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::\u00b5_op_\U0001f525", "pid": 1,
               "tid": 1, "ts": 0, "dur": 10}]
    path = tmp_path / "trace_\U0001f525.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    for args in (("summary", str(path)), ("summary", str(tmp_path / "gone_\u00b5.json"))):
        res = cli(*args, env=env)
        assert "Traceback" not in res.stderr, res.stderr
        assert res.returncode in (0, 2)
    res = cli("summary", str(path), env=env)
    assert res.returncode == 0
    assert "aten::?_op_?" in res.stdout and "trace_?.json" in res.stdout


def test_progress_of_a_failed_load_says_no_loaded():
    class Sink:
        text = ""

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

    sink = Sink()
    p = Progress("bad.json", sink)
    p.started -= 10
    p(0.5, "decoding")
    p.failed()
    assert "loaded" not in sink.text
    assert sink.text.endswith("\r")  # the progress line is blanked for the error line


def test_cli_slow_bad_input_prints_only_the_error(tmp_path, monkeypatch, capsys):
    import autoprof.analysis
    from autoprof import cli as cli_module
    from autoprof.analysis import TraceError

    def slow_failing_load(path, progress=None, **options):
        progress.started -= 10
        progress(0.5, "decoding")
        raise TraceError(path, "not JSON")

    monkeypatch.setattr(autoprof.analysis, "load", slow_failing_load)
    path = tmp_path / "bad.json"
    path.write_bytes(b"{")
    assert cli_module.main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert "loaded" not in err
    assert err.rsplit("\r", 1)[-1] == f"autoprof: error: {path}: not JSON\n"


def test_view_command_binds_localhost_and_passes_dir(tmp_path):
    app = viewer_app()
    assert app is not None and app.name == "app.py"
    args = build_parser().parse_args(["view", str(tmp_path)])
    argv, env = view_command(app, Path(args.dir), args.address, args.port)
    assert argv[1:4] == ["-m", "streamlit", "run"]
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert argv[argv.index("--browser.gatherUsageStats") + 1] == "false"
    assert env["AUTOPROF_DIR"] == str(tmp_path.resolve())


def test_view_bad_dir_exit_2(tmp_path):
    res = cli("view", str(tmp_path / "missing"))
    assert res.returncode == 2
    assert res.stderr.strip() == f"autoprof: error: {tmp_path / 'missing'}: not a directory " \
                                 "(give the folder that holds your runs)"


@pytest.mark.slow
def test_view_starts_streamlit_on_localhost(tmp_path):
    port = 18000 + os.getpid() % 1000
    proc = subprocess.Popen([sys.executable, "-m", "autoprof", "view", str(tmp_path),
                             "--port", str(port)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 45
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as r:
                    assert r.read() == b"ok"
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "streamlit did not start in 45 s"
                time.sleep(0.5)
    finally:
        proc.terminate()  # what a process manager sends
        proc.wait(timeout=20)
    # `autoprof view` is the server (exec), so stopping it stops the server: nothing is left
    # answering on the port (a child server used to outlive it, holding the port)
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                pass
        except OSError:
            break
        assert time.monotonic() < deadline, "a server still answers after autoprof view ended"
        time.sleep(0.2)


def test_cli_summary_of_a_folder_of_runs():
    sweep = REPO / "tests" / "data" / "h200" / "sweep"
    res = cli("summary", str(sweep), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["skipped_not_traces"] == 1  # ground_truth.json
    by_size = {int(r["size"]): r["verdict"] for r in data["runs"]}
    assert by_size[64] == "overhead-bound" and by_size[4096] == "compute-bound"
    text = cli("summary", str(sweep)).stdout
    assert "(8 runs; 1 other JSON file(s) skipped" in text
    assert text.count("overhead-bound") == 5
