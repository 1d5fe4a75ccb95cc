"""One function per answer: the public verdict, ``Run.verdict`` and the summary read the same
``Analysis``; options reach the analysis as an argument; a trace format is one reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.store import committed

import autoprof.analysis as analysis
from autoprof.analysis import AnalysisOptions, load
from autoprof.analysis.loader import formats
from autoprof.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "traces" / "examples"
RUNS = sorted(p.parent for p in EXAMPLES.rglob("manifest.json") if "whatif" not in p.parts)


@pytest.fixture(scope="module")
def runs():
    return [committed.run(p) for p in RUNS]


def test_the_examples_are_there() -> None:
    assert len(RUNS) == 9


@pytest.mark.slow
def test_the_public_verdict_is_the_run_s_verdict(runs) -> None:
    for run in runs:
        mine = analysis.verdict(run)
        assert mine == run.analysis.verdict == run.verdict(), run.path
        assert mine.reason == run.summary()["verdict_reason"]


def test_a_bare_events_table_takes_the_same_route_without_a_call_region(runs) -> None:
    """The call region is the run's name, in the manifest: a bare table has none. On an
    autoprof run that changes the breakdown, so the run is what to pass."""
    run = next(r for r in runs if r.analysis.call_region and r.is_cuda)
    bare = analysis.verdict(run.events)
    assert bare == analysis.Analysis(analysis.RunData(Path(), run.events, name="")).verdict
    assert analysis.verdict(run.data) == run.analysis.verdict


def test_options_reach_the_efficiency_analysis(runs) -> None:
    run = next(r for r in runs if r.is_cuda)
    told = load(run.path, options=AnalysisOptions(peak_tflops=123.0, peak_gbps=4.5))
    peak = told.analysis.efficiency.peak
    assert peak.for_dtype("fp32") == 123.0 and peak.gbps == 4.5
    assert told.summary()["efficiency"] != run.summary()["efficiency"]
    assert run.analysis.efficiency.peak.gbps != 4.5


def test_the_device_name_is_read_once_for_every_analysis_that_needs_it(monkeypatch, runs) -> None:
    import autoprof.analysis.metrics.device as device

    run = next(r for r in runs if r.is_cuda and r.record is not None and r.record.device_name)
    reads: list[str | None] = []
    real = device.device_name
    monkeypatch.setattr(device, "device_name",
                        lambda *args: reads.append(real(*args)) or reads[-1])
    fresh = analysis.Analysis(run.data)
    fresh.efficiency, fresh.opportunities, fresh.graph_input_copy_us  # noqa: B018
    assert reads == [run.record.device_name]
    assert fresh.efficiency.device == fresh.device_name == run.record.device_name


def test_the_cli_peak_flags_reach_the_analysis(capsys, runs) -> None:
    run = next(r for r in runs if r.is_cuda)
    assert main(["summary", "--json", "--peak-gbps", "4.5", str(run.path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["efficiency"]["peak"]["gbps"] == 4.5
    with pytest.raises(SystemExit):
        main(["summary", "--peak-gbps", "-1", str(run.path)])


def test_a_new_format_is_one_reader(monkeypatch, tmp_path) -> None:
    trace = next(EXAMPLES.rglob("*.pt.trace.json.gz"))

    class Renamed:
        name = "renamed-kineto"

        def can_read(self, path: Path) -> bool:
            return path.name.endswith(".mytrace")

        def read(self, path: Path, progress=None):
            return formats.KinetoJson().read(trace, progress)

    other = tmp_path / "run.mytrace"
    other.write_bytes(b"not json")
    assert formats.reader_for(other) is None
    with pytest.raises(analysis.TraceError, match="no reader"):
        formats.read(other)
    monkeypatch.setattr(formats, "READERS", (*formats.READERS, Renamed()))
    assert len(load(other).events) == len(load(trace).events)
