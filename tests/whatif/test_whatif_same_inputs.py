"""A fix timed two ways: with each call's inputs copied in (``speedup``, what a loop passing new
tensors each call gets) and on the very inputs it was prepared with (``same_inputs_*``, what a
loop passing the same tensors gets). Both are reported, the status never says "slower" when the
same-inputs call is faster, and every label names both numbers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from autoprof.analysis.loader.whatif import read_whatif
from autoprof.analysis.report.markdown import render_markdown
from autoprof.analysis.report.model import WhatIfResult
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.text import _whatif
from autoprof.analysis.report.whatif_text import whatif_depends, whatif_outcome
from autoprof.record.whatif import FIXES, try_fixes, what_if
from autoprof.record.whatif.compare import Comparison
from autoprof.record.whatif.fixes.base import Applied, Fix
from autoprof.record.whatif.harness import Timing
from autoprof.record.whatif.result import DEPENDS, FixResult, loop_status
from autoprof.record.whatif.trial import _fill, fill_same_inputs
from autoprof.runfolder.whatif import WHATIF_NAME, whatif_record, write_whatif

CALL_US = 400.0  # the original's cost per call


def _busy(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _work(x: torch.Tensor) -> torch.Tensor:
    _busy(CALL_US)
    return x * 2


def _fix(copied_us: float, same_us: float | None) -> Fix:
    """A fix whose copied-in call costs ``copied_us`` and whose call on the same inputs costs
    ``same_us`` (None: the fix has no such call), both giving the original's output."""

    def run(us: float, x: torch.Tensor) -> torch.Tensor:
        _busy(us)
        return x * 2

    def apply(call: object) -> Applied:
        same = (None if same_us is None else
                lambda args, kwargs: lambda: run(same_us, *args))
        return Applied(lambda x: run(copied_us, x),
                       user_call=lambda args, kwargs: lambda: run(copied_us, *args),
                       same_inputs_call=same)

    return Fix("fake-graph", "copies its inputs in, or not", lambda call: None, apply)


def _measured(monkeypatch: pytest.MonkeyPatch, copied_us: float,
              same_us: float | None) -> FixResult:
    monkeypatch.setitem(FIXES, "fake-graph", _fix(copied_us, same_us))
    _, trials = try_fixes(_work, (torch.ones(3),), {}, ["fake-graph"], samples=9)
    return trials[0].result


def test_slower_copied_in_but_faster_on_the_same_inputs_is_depends_on_inputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    r = _measured(monkeypatch, copied_us=2 * CALL_US, same_us=CALL_US / 4)
    assert r.outputs_match is True, r
    # the copied-in numbers keep their meaning: about 0.5x, its interval below 1
    assert r.speedup is not None and r.speedup_high is not None and r.speedup_high < 1, r
    assert r.same_inputs_speedup is not None and r.same_inputs_speedup_low is not None
    assert r.same_inputs_speedup_low > 1 and r.same_inputs_status == "faster", r
    assert r.same_inputs_speedup_low <= r.same_inputs_speedup <= (r.same_inputs_speedup_high
                                                                  or 0.0)
    assert r.same_inputs_us is not None and r.fixed_us is not None
    assert r.same_inputs_us < CALL_US < r.fixed_us
    assert r.status == DEPENDS != "slower"
    assert r.reason is not None
    assert f"{r.speedup:.2f}x" in r.reason and f"{r.same_inputs_speedup:.2f}x" in r.reason
    assert "copied in" in r.reason and "same tensors" in r.reason


def test_faster_both_ways_stays_faster_and_still_names_both(
        monkeypatch: pytest.MonkeyPatch) -> None:
    r = _measured(monkeypatch, copied_us=CALL_US / 2, same_us=CALL_US / 5)
    assert r.status == "faster" and r.reason is None, r
    assert r.speedup is not None and r.same_inputs_speedup is not None
    assert r.same_inputs_speedup > r.speedup > 1
    text = whatif_outcome(r.to_dict())
    assert f"{r.speedup:.2f}x" in text and f"{r.same_inputs_speedup:.2f}x" in text


def test_a_fix_with_one_call_has_no_same_inputs_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _measured(monkeypatch, copied_us=CALL_US / 2, same_us=None)
    assert r.status == "faster"
    assert (r.same_inputs_us, r.same_inputs_speedup, r.same_inputs_status) == (None, None, None)
    assert "same tensors" not in whatif_outcome(r.to_dict())


@pytest.mark.parametrize(("copied", "same", "status"), [
    ("slower", "faster", DEPENDS), ("cannot tell", "faster", DEPENDS),
    ("faster", "faster", "faster"), ("faster", "cannot tell", "faster"),
    ("slower", "cannot tell", "slower"), ("slower", "slower", "slower"),
    ("slower", None, "slower"), ("outputs differ", "faster", "outputs differ"),
])
def test_the_status_rule(copied: str, same: str | None, status: str) -> None:
    assert loop_status(copied, same) == status  # type: ignore[arg-type]


def _timing(values: list[float]) -> Timing:
    s = sorted(values)
    return Timing(s[len(s) // 2], s[len(s) // 4], s[3 * len(s) // 4], tuple(values), 1,
                  "cuda-events")


def _seed_like() -> FixResult:
    """The seed's shape of result, from fixed samples: 18 us eager, 19.5 us with the copies,
    3.75 us replayed alone."""
    base = _timing([18.0, 18.1, 17.9, 18.0, 18.2, 17.8, 18.0])
    r = FixResult("cuda-graph", "doc", applicable=True, status="raised", suggested_by=[])
    _fill(r, base, _timing([19.5, 19.6, 19.4, 19.5, 19.7, 19.3, 19.5]),
          Comparison(True, 0.0, 3e-2), 0.4)
    fill_same_inputs(r, base, _timing([3.75, 3.8, 3.7, 3.76, 3.74, 3.77, 3.73]))
    return r


def test_every_label_names_both_numbers_and_which_loop_each_is() -> None:
    r = _seed_like()
    assert r.status == DEPENDS and r.speedup is not None and r.same_inputs_speedup is not None
    copied, same = f"{r.speedup:.2f}x", f"{r.same_inputs_speedup:.2f}x"
    from autoprof.viewer.views.whatif import _outcome

    record = r.to_dict()
    lines = {"report": whatif_outcome(record), "viewer": _outcome(record),
             "depends": whatif_depends([record])[0],
             "text": "\n".join(_whatif([WhatIfResult.from_dict(record)], []))}
    for where, line in lines.items():
        assert copied in line and same in line, (where, line)
        assert "copied in" in line and "same tensors each call" in line, (where, line)
    assert lines["report"].startswith("depends on inputs: slower, ")
    r.set_prediction(3.8)  # the replay's kind of number: a loop without the copies
    assert r.prediction_error_pct == pytest.approx((3.8 / r.speedup - 1) * 100)
    assert r.same_inputs_prediction_error_pct == pytest.approx((3.8 / r.same_inputs_speedup - 1)
                                                               * 100)
    assert "slower, " + copied in lines["report"] and "faster, " + same in lines["report"]


def test_the_markdown_report_does_not_drop_a_fix_that_depends_on_the_loop() -> None:
    from support.store import committed

    from autoprof.analysis.report.model import Report

    repo = Path(__file__).resolve().parents[2]
    run = next((repo / "traces" / "examples" / "seed64x100").glob("*/manifest.json")).parent
    summary = committed.run(run).summary()
    r = _seed_like()
    report = Report.from_dict({**summary, "whatif": [r.to_dict()]})
    markdown = render_markdown(report)
    assert "none measured faster with each call's inputs copied in" in markdown
    assert "**Depends on your loop** (what-if): cuda-graph: " in markdown
    assert f"{r.same_inputs_speedup:.2f}x" in markdown


def test_the_fields_go_to_whatif_json_and_back(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setitem(FIXES, "fake-graph", _fix(2 * CALL_US, CALL_US / 4))
    results = what_if(_work, (torch.ones(3),), {}, ("fake-graph",), run_dir=tmp_path,
                      samples=7)
    back = read_whatif(tmp_path)
    assert back == results
    assert back[0]["same_inputs_speedup"] == pytest.approx(results[0]["same_inputs_speedup"])
    assert back[0]["status"] == results[0]["status"]


def test_an_older_whatif_json_without_the_fields_still_reads(tmp_path: Path) -> None:
    old = {"fix": "cuda-graph", "doc": "graphs", "applicable": True, "status": "slower",
           "baseline_us": 18.0, "fixed_us": 19.5, "speedup": 0.92, "speedup_low": 0.9,
           "speedup_high": 0.94, "outputs_match": True, "settle": None}
    (tmp_path / WHATIF_NAME).write_text(json.dumps({"schema_version": 1, "results": [old]}))
    back = read_whatif(tmp_path)
    assert back == [old]  # nothing added, nothing lost
    typed = WhatIfResult.from_dict(back[0])
    assert given(typed.same_inputs_speedup) is None and given(typed.same_inputs_status) is None
    assert whatif_outcome(back[0]) == "slower, 0.92x (95% CI 0.90-0.94x), outputs match"
    assert not whatif_depends(back)
    # and the writer still takes a record made before the fields existed
    write_whatif(tmp_path, whatif_record([old]))
    assert read_whatif(tmp_path) == [old]
