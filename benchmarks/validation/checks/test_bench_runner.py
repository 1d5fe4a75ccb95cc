"""The benchmark runner: its measurement protocol, its verdicts, and that --quick works.

No timing is asserted here: numbers on a shared 2-core machine are not test material. What
is tested is that the runner measures in fresh processes, reports what it measured, judges
each target by its limit, and writes valid JSON.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _measure import MeasureError, Stats, run_child  # noqa: E402
from _report import Row, format_table  # noqa: E402


def test_run_child_returns_the_last_json_line_and_peak_rss() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); from _measure import emit; "
        "print('noise'); blob = b'x' * (64 * 2**20); emit({'answer': 42})"
    )
    sample = run_child([sys.executable, "-c", code])
    assert sample.values == {"answer": 42}
    assert sample.peak_rss_mb >= 64  # the child's own 64 MiB buffer, not the parent's
    assert sample.wall_s > 0


def test_peak_rss_is_the_childs_own_not_its_spawners() -> None:
    # Linux keeps ru_maxrss across execve: a child spawned by a process that once held
    # 256 MiB read >= 256 MiB from getrusage; VmHWM is the child's own
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); from _measure import emit; "
        "emit({})"
    )
    spawner = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); from _measure import run_child, emit; "
        "big = bytearray(256 * 2**20); big[::4096] = b'x' * len(big[::4096]); del big; "
        f"sample = run_child([sys.executable, '-c', {code!r}]); "
        "emit({'child_peak_mb': sample.peak_rss_mb})"
    )
    sample = run_child([sys.executable, "-c", spawner])
    assert sample.peak_rss_mb >= 256  # the spawner itself did hold it
    assert sample.values["child_peak_mb"] < 100  # a bare Python, not the spawner's 256 MiB


def test_run_child_names_the_command_when_it_fails() -> None:
    with pytest.raises(MeasureError, match="exit status 3"):
        run_child([sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(MeasureError, match="no JSON result line"):
        run_child([sys.executable, "-c", "print('hello')"])


def test_worker_measures_a_call_in_a_fresh_process() -> None:
    sample = run_child([sys.executable, str(BENCH / "_workers.py"), "call_bare",
                        json.dumps({"loop_s": 0.005, "repeat": 2})])
    assert 0 < sample.values["ns_per_call"] < 1e6


def test_stats_median_min_max() -> None:
    s = Stats.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.min, s.max, s.n) == (2.5, 1.0, 10.0, 4)
    assert math.isnan(Stats.of([]).median)


def test_row_verdicts_follow_the_limit_direction() -> None:
    ours, base = Stats.of([1.5]), Stats.of([1.0])
    lower = Row.compare("t", (ours, None), (base, None), limit=1.2, unit="ns")
    assert lower.ratio == pytest.approx(1.5) and lower.passed is False
    higher = Row.compare("t", (ours, None), (base, None), limit=0.95, unit="/s",
                         higher_is_better=True)
    assert higher.passed is True
    missing = Row.compare("t", (None, "not available: no loader"), (base, None), limit=2.0,
                          unit="s")
    assert missing.passed is None and "not available" in missing.note
    bounded = Row.bounded("t", (Stats.of([0.4]), None), (Stats.of([4.0]), None),
                          max_ours=0.5, unit="s")
    assert bounded.passed is True and bounded.ratio == pytest.approx(0.1)


def test_table_shows_each_verdict() -> None:
    rows = [
        Row.compare("a", (Stats.of([1.0]), None), (Stats.of([1.0]), None), 1.2, "ns"),
        Row.compare("b", (Stats.of([3.0]), None), (Stats.of([1.0]), None), 1.2, "ns"),
        Row.compare("c", (None, "not available: x"), (Stats.of([1.0]), None), 1.2, "ns"),
    ]
    text = format_table(rows)
    assert "PASS" in text and "FAIL" in text and "n/a" in text
    assert "not available: x" in text


@pytest.mark.slow
def test_quick_mode_runs_and_writes_valid_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--quick", "--out", str(out),
         "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["mode"] == "quick"
    targets = [row["target"] for row in result["rows"]]
    for number in ("1 ", "2 ", "3 ", "4 "):
        assert any(t.startswith(number) for t in targets), (number, targets)
    for row in result["rows"]:
        assert set(row) >= {"target", "ours", "baseline", "ratio", "limit", "pass", "note"}
        if row["ours"] is not None:
            assert all(math.isfinite(v) and v >= 0 for v in row["ours"]["values"])
        else:  # no number: the runner must say why
            assert row["note"]
    assert "ratio" in proc.stdout and "limit" in proc.stdout
