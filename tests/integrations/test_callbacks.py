"""The Trainer and Lightning quick starts, one line added, give a complete run that names a
verdict, with the step's phases labelled and nested inside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from integrations._helpers import run_dir_of, run_script
from support.manifests import write_manifest

from autoprof.analysis import load
from autoprof.analysis.report.schema import validate_summary
from autoprof.integrations._steps import StepRecorder, find_run_dir, unique_name

pytestmark = pytest.mark.slow


def _assert_cpu_verdict(summary: dict[str, object]) -> None:
    """No GPU on this machine: `cpu-only`, unless the time between steps (the trainer's hooks
    and loader, on a shared CPU) reaches the input-bound share, and then its evidence says
    so."""
    verdict = summary["verdict"]
    assert verdict in ("cpu-only", "input-bound")
    if verdict == "input-bound":
        evidence = summary["verdict_evidence"]
        assert isinstance(evidence, dict)
        assert evidence["between_calls_pct"]["median"] >= evidence["input_bound_pct"]


def _check_run(run_dir: Path, step_label: str) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete", manifest.get("error")
    assert manifest["steps_recorded"] == 3  # the default schedule's active steps
    assert len(manifest["warmup_call_ms"]) == 3  # the untraced warm-up steps, timed
    summary = load(run_dir).summary()
    validate_summary(summary)
    _assert_cpu_verdict(summary)
    ops = load(run_dir).ops()
    labels = ops[ops["name"].isin([step_label, "forward", "backward", "optimizer"])]
    assert set(labels["name"]) == {step_label, "forward", "backward", "optimizer"}
    # each label nests (no overlap): self time never below zero, the step holds the phases
    assert (labels["self_cpu_us"] >= 0).all(), labels
    step = labels[labels["name"] == step_label].iloc[0]
    assert step["calls"] == 3
    inside = labels[labels["name"] != step_label]["cpu_total_us"].sum()
    assert inside <= step["cpu_total_us"]


@pytest.mark.slow
def test_transformers_trainer_quick_start(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    run_dir = run_dir_of(run_script("hf_trainer.py", str(tmp_path)))
    assert run_dir.parent.name == "hf_train_step"  # never the Lightning callback's folder
    _check_run(run_dir, "hf_train_step")


@pytest.mark.slow
def test_lightning_trainer_quick_start(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    run_dir = run_dir_of(run_script("lightning_trainer.py", str(tmp_path)))
    assert run_dir.parent.name == "lightning_train_step"
    _check_run(run_dir, "lightning_train_step")


@pytest.mark.slow
def test_lightning_ddp_every_rank_in_one_run_folder(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    run_dir = run_dir_of(run_script("lightning_trainer.py", str(tmp_path), "2"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["ranks"] == [0, 1]
    assert sorted(p.name.split(".")[0] for p in run_dir.glob("rank*.pt.trace.json.gz")) == [
        "rank0", "rank1"]
    summary = load(run_dir).summary()
    validate_summary(summary)
    assert summary["world_size"] == 2
    _assert_cpu_verdict(summary)


def test_a_second_callback_of_the_same_name_gets_its_own_run() -> None:
    first, second = unique_name("integration-name"), unique_name("integration-name")
    assert (first, second) == ("integration-name", "integration-name-2")


def test_steps_past_the_schedule_enter_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    entered: list[str] = []

    class Region:
        def __enter__(self) -> None:
            entered.append("enter")

        def __exit__(self, *exc: object) -> None:
            entered.append("exit")

    import autoprof

    monkeypatch.setattr(autoprof, "region", lambda name, **options: Region())
    recorder = StepRecorder("integration-schedule", {
        "warmup_calls": 1, "schedule": {"wait": 0, "warmup": 0, "active": 1}})
    assert recorder.last_step == 2
    for _ in range(5):
        recorder.begin_step()
        recorder.end_step()
    assert entered == ["enter", "exit"] * 2  # the warm-up step and the recorded one


def test_a_misspelled_option_fails_when_the_callback_is_made() -> None:
    with pytest.raises(TypeError, match="warmpu_calls"):
        StepRecorder("integration-typo", {"warmpu_calls": 2})
    with pytest.raises(ValueError, match="active"):
        StepRecorder("integration-typo", {"schedule": {"active": 0}})


def test_autoprof_off_makes_the_callback_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF", "0")
    recorder = StepRecorder("integration-off", {})
    recorder.begin_step()
    assert not recorder.in_step
    recorder.finish()


def test_run_dir_is_the_one_this_process_wrote(tmp_path: Path) -> None:
    for run_id, pid in (("20261201-100000-aaaaaa", 1), ("20261201-090000-bbbbbb", 42),
                        ("20261201-080000-cccccc", 42)):
        write_manifest(tmp_path / run_id, pid=pid)
    write_manifest(tmp_path / "20261201-110000-dddddd", file="rank1.manifest.json", pid=7,
                   rank=1)
    (tmp_path / "20261201-120000-eeeeee").mkdir()
    (tmp_path / "20261201-120000-eeeeee" / "manifest.json").write_text("{not json")
    assert find_run_dir(tmp_path, 42) == tmp_path / "20261201-090000-bbbbbb"
    assert find_run_dir(tmp_path, 7) == tmp_path / "20261201-110000-dddddd"
    assert find_run_dir(tmp_path, 99) is None
    assert find_run_dir(tmp_path / "missing", 42) is None
