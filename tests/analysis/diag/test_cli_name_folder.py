"""`autoprof summary <traces>/<name>` (a folder holding run folders directly) lists the runs."""

from __future__ import annotations

from pathlib import Path

from autoprof import cli

RUNS = Path(__file__).resolve().parents[3] / "traces" / "examples" / "matmul_add"


def test_folder_of_run_folders_prints_one_line_per_run(capsys):
    assert cli.main(["summary", str(RUNS)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if str(RUNS) in line and "/2026" in line]
    assert len(lines) == 4, out
    verdicts = sorted(line.split()[0] for line in lines)
    assert verdicts == ["compute-bound"] * 2 + ["overhead-bound"] * 2
