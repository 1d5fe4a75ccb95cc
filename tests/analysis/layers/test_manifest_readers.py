"""Every reader of a run's manifest goes through the typed record (``autoprof.runfolder``'s
``Manifest``: its fields and its ``Readings``): no module outside ``autoprof/runfolder/``
indexes or ``.get``s a manifest dict, or the dicts inside a record (its options, extra keys,
device, schedule, versions), so each field is read by one rule, in one place. ``Run.manifest``
stays as the one plain-dict view (``Manifest.to_dict()``), for printing and JSON."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

import autoprof
from autoprof.analysis import Analysis
from autoprof.analysis.loader.load import RunData
from autoprof.runfolder import SCHEMA_VERSION, Manifest

PACKAGE = Path(autoprof.__file__).resolve().parent
# a manifest dict by its name, or the dicts a record holds
_PROBED = re.compile(r"manifest(?!_rank|s\b|_path)|\brecord\.(options|extra|device|schedule"
                     r"|versions)\b")


def _probes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, receiver) of each ``.get(...)`` call or ``[...]`` index on a manifest dict."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "get"):
            receiver: ast.expr = node.func.value
        elif isinstance(node, ast.Subscript):
            receiver = node.value
        else:
            continue
        text = ast.unparse(receiver)
        if _PROBED.search(text):
            found.append((node.lineno, text))
    return found


def test_the_probe_finder_sees_the_forms_readers_used():
    src = ('(run.manifest or {}).get("name")\nctx.manifest.get("options")\n'
           'manifest["error"].get("message")\nrecord.options.get("warmup")\n'
           'source.manifest_rank.get(trace, 0)\nrun.record.warmup_call_ms\n')
    assert sorted(text for _, text in _probes(ast.parse(src))) == sorted([
        "run.manifest or {}", "ctx.manifest", "manifest", "manifest['error']", "record.options"])


def test_no_module_outside_runfolder_probes_a_manifest_dict():
    probes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "runfolder" in path.relative_to(PACKAGE).parts:
            continue
        probes += [f"{path.relative_to(PACKAGE)}:{line}: {text}"
                   for line, text in _probes(ast.parse(path.read_text()))]
    assert probes == [], "read the typed record (Run.record, Analysis.record):\n" + "\n".join(
        probes)


def test_readings_of_options_and_extra_keys():
    record = Manifest.from_json({
        "schema_version": SCHEMA_VERSION, "name": "f", "cpus": 8, "intra_op_threads": True,
        "device": {"name": "NVIDIA H200", "index": 1, "properties": {"total_memory": 1024}},
        "options": {"warmup": 0, "n": 64, "schedule": {"warmup": 1, "active": 3, "repeat": 2}},
    }, "m.json")
    assert (record.warmup_calls, record.active, record.repeat) == (0, 3, 2)  # an older run's key
    assert record.schedule == {"warmup": 1, "active": 3, "repeat": 2}
    assert record.device_name == "NVIDIA H200"
    assert record.device_memory_bytes == {"cuda:1": 1024}
    assert (record.cpus, record.intra_op_threads) == (8, None)  # a bool is no count
    assert record.cudnn_benchmark is None  # an older run's record: not known
    flags = Manifest.from_json({"schema_version": SCHEMA_VERSION, "name": "f",
                                "cudnn_benchmark": False}, "m.json")
    assert flags.cudnn_benchmark is False
    assert Manifest(name="g", extra={"cudnn_benchmark": 1}).cudnn_benchmark is None  # no bool
    assert record.problem_size == 64.0  # from the options
    bare = Manifest(name="g", options={"warmup": True, "schedule": [1]}, extra={"size": 8.5,
                                                                               "n": 3})
    assert (bare.warmup_calls, bare.schedule, bare.active, bare.repeat) == (None, {}, 0, 1)
    new = Manifest(name="h", options={"warmup_calls": 2, "warmup": 5, "schedule": {"warmup": 1}})
    assert new.warmup_calls == 2  # the untraced calls, never the schedule's warmup steps
    assert (bare.device_name, bare.device_memory_bytes) == (None, {})
    assert bare.problem_size == 8.5  # the record's own keys first, in SIZE_KEYS order


@pytest.mark.parametrize("view", [
    {"warmup_call_ms": [0.2, True, "x", float("nan"), 0.1]},
    {"name": 3, "status": "odd", "schema_version": 99, "files": "a.json", "rank": -1},
])
def test_from_view_reads_a_hand_built_dict_by_the_same_rules(view):
    record = Manifest.from_view(view)
    assert record is not None and record.name == "" and record.status == "complete"
    assert record.schema_version == SCHEMA_VERSION and record.files is None
    assert record.rank is None
    assert record.warmup_call_ms == ((0.2, 0.1) if "warmup_call_ms" in view else ())
    assert Manifest.from_view(None) is None


def test_the_dict_view_round_trips_and_the_analysis_reads_the_record():
    record = Manifest(name="step", warmup_call_ms=(2.0, 1.0), options={"warmup": 2})
    data = RunData(Path("r"), pd.DataFrame(), name="step", record=record)
    assert data.manifest == record.to_dict()
    assert Manifest.from_view(data.manifest) == record
    assert Analysis(data).record is record
    fake = type("Fake", (), {"manifest": {"name": "step", "warmup_call_ms": [2.0, True]}})()
    from autoprof.analysis.analysis import record_of

    assert record_of(fake) == Manifest(name="step", warmup_call_ms=(2.0,))
    assert record_of(RunData(Path("t"), pd.DataFrame(), name="t")) is None
