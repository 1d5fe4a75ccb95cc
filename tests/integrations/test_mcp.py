"""`autoprof mcp`: the tools answer through the SDK's own client, in memory and over stdio,
and read nothing outside their folder."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from autoprof.analysis.report.schema import validate_diff, validate_summary  # noqa: E402
from autoprof.integrations.mcp import build_server  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "traces" / "examples"
WHATIF = "seed64x100/20261201-095009-0a8e73"
CPU = "cpu_mlp_train/20261201-090953-58c9f9"


@pytest.fixture()
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A traces folder with two runs, and a secret beside it that must stay unread."""
    monkeypatch.setenv("AUTOPROF_CACHE", "0")
    root = tmp_path / "traces"
    for run in (WHATIF, CPU):
        shutil.copytree(EXAMPLES / run, root / run)
    (tmp_path / "outside").mkdir()
    shutil.copytree(EXAMPLES / CPU, tmp_path / "outside" / "run")
    (root / "escape").symlink_to(tmp_path / "outside" / "run")
    return root


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _data(result: Any) -> Any:
    assert not result.is_error, _text(result)
    data = result.structured_content
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]  # a list or a str is wrapped by the SDK
    return data


def call(root: Path, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def session() -> list[Any]:
        async with Client(build_server(root)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def test_the_tools_are_listed_read_only(traces: Path) -> None:
    async def tools() -> Any:
        async with Client(build_server(traces)) as client:
            return await client.list_tools()

    listed = {t.name: t for t in anyio.run(tools).tools}
    assert set(listed) == {"list_runs", "summary", "summary_markdown", "top_ops", "explain",
                           "diff"}
    assert all(t.annotations.read_only_hint for t in listed.values())


def test_list_runs_summary_top_ops_and_explain(traces: Path) -> None:
    runs, summary, markdown, ops, diag, opp, op = call(
        traces, ("list_runs", {}), ("summary", {"run": WHATIF}),
        ("summary_markdown", {"run": CPU}), ("top_ops", {"run": WHATIF, "n": 3}),
        ("explain", {"run": WHATIF, "what": "short-kernels"}),
        ("explain", {"run": WHATIF, "what": "host_launch"}),
        ("explain", {"run": WHATIF, "what": "aten::mm"}))
    paths = sorted(r["path"] for r in _data(runs))
    assert paths == sorted([WHATIF, CPU])  # the symlink out of the folder is not listed
    s = _data(summary)
    validate_summary(s)
    assert s["verdict"] == "overhead-bound"
    assert _data(markdown).startswith("### autoprof: `cpu_mlp_train` is **cpu-only**")
    top = _data(ops)
    assert [r["name"] for r in top] == ["aten::mm", "seed64x100", "aten::add"]
    d = _data(diag)
    assert d["kind"] == "diagnostic" and d["id"] == "short-kernels" and d["hint"]
    o = _data(opp)
    assert o["kind"] == "opportunity" and o["cause"] == "host_launch"
    assert "compile-reduce-overhead" in [f["fix"] for f in o["measured_fixes"]]
    m = _data(op)
    assert m["kind"] == "op" and m["rows"][0]["calls"] == 300
    assert 0 < m["self_cpu_pct_of_run"] < 100


@pytest.mark.parametrize("run", ["../outside/run", "escape", "/etc", str(EXAMPLES / CPU),
                                 "missing/run", ""])
def test_nothing_outside_the_folder_is_read(traces: Path, run: str) -> None:
    (result,) = call(traces, ("summary", {"run": run}))
    assert result.is_error
    assert "traces folder" in _text(result) or "no such run" in _text(result)


def test_an_unknown_item_names_what_there_is(traces: Path) -> None:
    bad_n, unknown = call(traces, ("top_ops", {"run": CPU, "n": 10_000}),
                          ("explain", {"run": WHATIF, "what": "no-such-thing"}))
    assert bad_n.is_error and "1 to 100" in _text(bad_n)
    assert unknown.is_error and "short-kernels" in _text(unknown)


def test_diff_of_two_runs_of_the_folder(traces: Path) -> None:
    same, other = call(traces, ("diff", {"a": CPU, "b": CPU}), ("diff", {"a": CPU, "b": WHATIF}))
    d = _data(same)
    validate_diff(d)
    assert (d["a"], d["b"]) == (CPU, CPU)  # named as the client named them, no local paths
    assert d["comparability"]["status"] == "comparable"
    assert d["verdict"] == "no significant change" and d["step_time"]["change_pct"] == 0
    o = _data(other)
    validate_diff(o)
    assert o["verdict"] == "not comparable" and o["step_time"] is None
    assert "device" in [x["what"] for x in o["comparability"]["differences"]]


@pytest.mark.parametrize("run", ["../outside/run", "escape", "/etc", str(EXAMPLES / CPU), ""])
def test_diff_reads_nothing_outside_the_folder(traces: Path, run: str) -> None:
    for args in ({"a": CPU, "b": run}, {"a": run, "b": CPU}):
        (result,) = call(traces, ("diff", args))
        assert result.is_error and "traces folder" in _text(result)


@pytest.mark.slow
def test_autoprof_mcp_over_stdio(traces: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AUTOPROF_CACHE"}
    env["AUTOPROF_CACHE_MIN_BYTES"] = "0"  # the loader would cache even these small traces
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "autoprof", "mcp", str(traces)], env=env)
    before = sorted(p for p in traces.rglob("*"))

    async def session() -> list[Any]:
        async with Client(params) as client:
            return [await client.call_tool("list_runs", {}),
                    await client.call_tool("summary", {"run": CPU})]

    runs, summary = anyio.run(session)
    assert sorted(r["path"] for r in _data(runs)) == sorted([WHATIF, CPU])
    assert _data(summary)["verdict"] == "cpu-only"
    json.dumps(_data(summary), allow_nan=False)
    assert sorted(p for p in traces.rglob("*")) == before  # nothing written into the folder
