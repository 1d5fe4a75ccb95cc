"""`autoprof diff A B`: the exit status CI reads, and the three output formats."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autoprof.analysis.report.schema import validate_diff
from autoprof.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "traces" / "examples"
pytestmark = pytest.mark.slow


def _one(name: str) -> str:
    return str(sorted((EXAMPLES / name).iterdir())[0])


def _seed(size: str) -> str:
    for folder in sorted((EXAMPLES / "matmul_add").iterdir()):
        ops = (folder / "ops.csv").read_text()
        if f"[{size}, {size}]" in ops:
            return str(folder)
    raise AssertionError(f"no matmul_add example at {size}")


def test_a_gain_exits_0_and_says_faster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", _one("eager_100"), _one("graph_replay"), "--gate", "5"]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: faster" in out and "launches per step: 200 -> 1" in out


def test_a_regression_beyond_the_gate_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", _one("graph_replay"), _one("eager_100"), "--gate", "5%"]) == 1
    assert "VERDICT: slower" in capsys.readouterr().out


def test_not_comparable_exits_2_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", _seed("64"), _seed("4096"), "--json"]) == 2
    result = json.loads(capsys.readouterr().out)
    validate_diff(result)
    assert result["verdict"] == "not comparable" and result["step_time"] is None
    assert "input shapes" in " ".join(result["comparability"]["not_comparable_because"])


@pytest.mark.slow
def test_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", _one("eager_100"), _one("graph_replay"), "--json"])
    result = json.loads(capsys.readouterr().out)
    validate_diff(result)
    assert result["schema_version"] == 1 and result["verdict"] == "faster"
    assert result["step_time"]["ci_high_pct"] < 0
    # the op the user called (x @ w), its aten::mm inside it; the self-time rows keep aten::mm
    assert result["why"][0]["name"] == "aten::matmul"
    assert "most of it in aten::mm" in result["why"][0]["note"]
    assert result["self_ops"][0]["name"] == "aten::mm"
    assert result["step_time"]["min_detectable_pct"] > 0
    main(["diff", _one("eager_100"), _one("graph_replay"), "--format", "markdown"])
    assert capsys.readouterr().out.startswith("### autoprof diff: **faster**")


def test_a_missing_run_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    assert main(["diff", str(tmp_path / "nope"), _one("eager_100")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"autoprof: error: {tmp_path / 'nope'}: no such file or directory"


def test_autoprof_schema_diff_prints_the_shipped_diff_schema(
        capsys: pytest.CaptureFixture[str]) -> None:
    from autoprof.analysis.report.schema import load_diff_schema, load_schema

    assert main(["schema", "--diff"]) == 0
    assert json.loads(capsys.readouterr().out) == load_diff_schema()
    assert main(["schema"]) == 0  # the summary's, as before
    assert json.loads(capsys.readouterr().out) == load_schema()


def test_noise_floor_sets_the_least_between_run_spread(capsys: pytest.CaptureFixture[str]) -> None:
    run = _one("cpu_mlp_train")  # 3 steps: too few for its thirds, so the floor is the spread
    assert main(["diff", run, run, "--json", "--noise-floor", "5"]) == 0
    step = json.loads(capsys.readouterr().out)["step_time"]
    assert step["between_run_source"] == "floor" and step["between_run_pct"] == pytest.approx(5)
    assert step["min_detectable_pct"] > 13  # about 1.96 * sqrt(2) * 5%
    assert main(["diff", run, run]) == 0
    out = capsys.readouterr().out
    assert re.search(r"changes between [\d.]+x and [\d.]+x cannot be told from noise with "
                     r"these runs \(between-run spread 13.0%", out)
    with pytest.raises(SystemExit):
        main(["diff", run, run, "--noise-floor", "-1"])
