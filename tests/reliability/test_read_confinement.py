"""Every file a run folder holds is read only from inside it (autoprof/runfolder/confine.py):
a source-lines trace or a whatif.json linked out of the run folder is refused, with one line,
on every route (``autoprof.load``, a ``file://`` URL, ``autoprof summary``, ``--jobs``, the
MCP ``summary`` tool), and the MCP answers name paths relative to the served folder."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from autoprof import cli
from autoprof.analysis import TraceError, load, summarize

REPO = Path(__file__).resolve().parents[2]
LINES_RUN = REPO / "tests/data/gpu_h200_lines/runs/on/slow_op/20261204-010312-7173a1"
LINES_FILE = "lines.vm_711.json.gz"
SOURCE_MARK = "benchmarks/lines/programs.py"  # a path only the lines trace holds
SECRET_FIX = "secret-fix-from-outside"


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A traces folder holding one run (``slow/run``) whose lines trace is kept and whose
    lines trace and whatif.json the tests swap for links to an ``outside`` folder."""
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    root = tmp_path / "traces"
    shutil.copytree(LINES_RUN, root / "slow" / "run")
    (tmp_path / "outside").mkdir()
    return root


def _run(root: Path) -> Path:
    return root / "slow" / "run"


def _link_lines_out(root: Path) -> Path:
    """The run's lines trace moved outside the folder, a symlink left in its place."""
    outside = root.parent / "outside" / LINES_FILE
    (_run(root) / LINES_FILE).rename(outside)
    (_run(root) / LINES_FILE).symlink_to(outside)
    return outside


def _link_whatif_out(root: Path) -> Path:
    outside = root.parent / "outside" / "whatif.json"
    outside.write_text(json.dumps({"schema_version": 1, "results": [
        {"fix": SECRET_FIX, "applicable": True, "status": "faster", "speedup": 9.0}]}))
    (_run(root) / "whatif.json").symlink_to(outside)
    return outside


def _load_summary(path: str | Path) -> tuple[str, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = json.dumps(summarize(load(path)).to_dict(), default=str)
    return text, [str(w.message) for w in caught]


def test_the_lines_trace_inside_the_folder_is_read(root: Path) -> None:
    """The baseline the refusals are measured against: the same run, not linked, has its
    lines (so a test below that finds none shows a refusal, not a run without lines)."""
    text, _ = _load_summary(_run(root))
    assert SOURCE_MARK in text


@pytest.mark.parametrize("route", ["path", "file_url"])
def test_a_lines_trace_linked_out_is_refused_by_load(root: Path, route: str) -> None:
    _link_lines_out(root)
    path = _run(root) if route == "path" else f"file://{_run(root)}"
    text, caught = _load_summary(path)
    assert SOURCE_MARK not in text
    assert any(LINES_FILE in w and "symlink escape refused" in w for w in caught), caught


@pytest.mark.parametrize("route", ["path", "file_url"])
def test_a_whatif_linked_out_is_refused_by_load(root: Path, route: str) -> None:
    _link_whatif_out(root)
    path = _run(root) if route == "path" else f"file://{_run(root)}"
    text, caught = _load_summary(path)
    assert SECRET_FIX not in text
    assert any("whatif.json" in w and "symlink escape refused" in w for w in caught), caught


def test_the_cli_summary_refuses_both_with_one_line_each(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _link_lines_out(root)
    _link_whatif_out(root)
    assert cli.main(["summary", "--json", str(_run(root))]) == 0
    out, err = capsys.readouterr()
    assert SOURCE_MARK not in out and SECRET_FIX not in out
    refused = [line for line in err.splitlines() if "symlink escape refused" in line]
    assert len(refused) == 2 and "Traceback" not in err, err


def test_a_manifest_linked_out_is_refused(root: Path) -> None:
    outside = root.parent / "outside" / "manifest.json"
    (_run(root) / "manifest.json").rename(outside)
    (_run(root) / "manifest.json").symlink_to(outside)
    with pytest.raises(TraceError, match="manifest resolves outside the run folder"):
        load(_run(root))


@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]])
def test_a_trace_linked_out_is_refused_on_every_cli_route(
        root: Path, capsys: pytest.CaptureFixture[str], jobs: list[str]) -> None:
    (trace,) = _run(root).glob("*.pt.trace.json.gz")
    outside = root.parent / "outside" / trace.name
    trace.rename(outside)
    trace.symlink_to(outside)
    assert cli.main(["summary", *jobs, f"file://{_run(root)}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "symlink escape refused" in err and len(err.splitlines()) == 1, err


# -- the MCP server ------------------------------------------------------------------------

def _mcp(root: Path, *calls: tuple[str, dict[str, Any]]) -> list[tuple[bool, str]]:
    """(is an error, the answer's text) of each tool call, through the SDK's own client."""
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import Client

    from autoprof.integrations.mcp import build_server

    async def session() -> list[tuple[bool, str]]:
        async with Client(build_server(root)) as client:
            out = []
            for name, args in calls:
                result = await client.call_tool(name, args)
                text = "".join(getattr(b, "text", "") for b in result.content)
                out.append((bool(result.is_error), text + json.dumps(
                    result.structured_content, default=str)))
            return out

    answers: list[tuple[bool, str]] = anyio.run(session)
    return answers


def test_the_mcp_summary_reads_neither_linked_file(root: Path) -> None:
    _link_lines_out(root)
    _link_whatif_out(root)
    ((error, text),) = _mcp(root, ("summary", {"run": "slow/run"}))
    assert not error, text
    assert SOURCE_MARK not in text and SECRET_FIX not in text


def test_mcp_answers_and_errors_hold_no_absolute_path(root: Path) -> None:
    """Every tool's answer, and a tool's error, names files relative to the folder: neither
    the folder's absolute path nor the machine's temporary folder appears."""
    (root / "broken" / "run").mkdir(parents=True)  # a run whose only trace is missing
    (root / "broken" / "run" / "manifest.json").write_text(
        (_run(root) / "manifest.json").read_text())
    answers = _mcp(root, ("list_runs", {}), ("summary", {"run": "slow/run"}),
                   ("summary_markdown", {"run": "slow/run"}),
                   ("top_ops", {"run": "slow/run"}),
                   ("diff", {"a": "slow/run", "b": "slow/run"}),
                   ("summary", {"run": "broken/run"}))
    assert [error for error, _ in answers] == [False] * 5 + [True]
    for _, text in answers:
        assert str(root.parent) not in text, text[:2000]
    assert "broken/run" in answers[-1][1]  # the error still names the run, relatively
