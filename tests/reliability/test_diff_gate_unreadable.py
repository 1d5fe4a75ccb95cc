"""``autoprof diff --gate`` never passes (exit 0) a run whose steps it could not read: steps
missing, negative, 1e300 or text, on either side, exit 2 with one line naming the run; also
when only some of them are (the rest would be judged in place of the run recorded)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from autoprof.cli import main

EXAMPLE = sorted((Path(__file__).resolve().parents[2] / "traces" / "examples"
                  / "eager_100").iterdir())[0]


def _with_steps(tmp_path: Path, kind: str, value: Any, only_first: bool = False) -> Path:
    run = tmp_path / kind
    shutil.copytree(EXAMPLE, run)
    for cached in ("ops.csv", "table.txt"):
        (run / cached).unlink(missing_ok=True)
    (trace,) = run.glob("*.pt.trace.json.gz")
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep")]
    assert len(steps) >= 3
    for event in steps[:1] if only_first else steps:
        if kind == "missing":
            doc["traceEvents"].remove(event)
        else:
            event["dur"] = value
    trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return run


@pytest.mark.parametrize(("kind", "value"), [("missing", None), ("negative", -5.0),
                                             ("huge", 1e300), ("text", "slow")])
@pytest.mark.parametrize("side", ["after", "before"])
def test_a_gate_never_passes_a_run_whose_steps_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, value: Any,
        side: str) -> None:
    bad = _with_steps(tmp_path, kind, value)
    pair = [str(EXAMPLE), str(bad)] if side == "after" else [str(bad), str(EXAMPLE)]
    assert main(["diff", *pair, "--gate", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"autoprof: error: {bad}: "), err
    assert "cannot be read" in err[0]


@pytest.mark.parametrize(("kind", "value"), [("missing", None), ("negative", -5.0),
                                             ("huge", 1e300), ("text", "slow")])
def test_one_unreadable_step_of_five_is_not_judged_on_the_other_four(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, value: Any) -> None:
    bad = _with_steps(tmp_path, kind, value, only_first=True)
    for gate in (["--gate", "100"], []):  # a gate wide enough to pass, and no gate
        assert main(["diff", str(EXAMPLE), str(bad), *gate]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"autoprof: error: {bad}: "), err
        assert "1 of the 5 steps its manifest records have no readable time" in err[0]


def test_a_readable_pair_is_judged_not_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A run against itself is read and judged: with one run a side its interval holds a 5%
    gate (cannot tell, exit 3, never a pass), a pass only when asked (--cannot-tell-passes),
    and a gate wider than the interval passes."""
    assert main(["diff", str(EXAMPLE), str(EXAMPLE), "--gate", "5"]) == 3
    out = capsys.readouterr()
    assert out.err == "" and "gate 5%: CANNOT TELL" in out.out
    assert main(["diff", str(EXAMPLE), str(EXAMPLE), "--gate", "5",
                 "--cannot-tell-passes"]) == 0
    assert main(["diff", str(EXAMPLE), str(EXAMPLE), "--gate", "100"]) == 0
    assert "gate 100%: PASS" in capsys.readouterr().out
