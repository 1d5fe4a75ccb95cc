"""The finisher waits for an idle core (record/finisher/cpu_gate.py): it starts once the program
waits itself, leaves a core idle, or has ended, and never waits longer than its budget."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autoprof import env
from autoprof.record import export
from autoprof.record.finisher import cpu_gate
from autoprof.record.finisher.cpu_gate import (
    CONFIRM,
    SAMPLE_S,
    CpuGate,
    Sample,
    may_run,
    read_sample,
)

CPUS = 2


class Machine:
    """A scripted /proc: each look adds the program's and the machine's CPU time of one
    SAMPLE_S, as the script says (program cores, idle cores; None: the program has ended)."""

    def __init__(self, script: list[tuple[float, float] | None]) -> None:
        self.script = list(script)
        self.now = Sample(0.0, 0.0, 0.0)
        self.sleeps = 0

    def sample(self, pid: int) -> Sample | None:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds == SAMPLE_S
        self.sleeps += 1
        step = self.script.pop(0) if self.script else (CPUS, 0.0)
        if step is None:
            self.now = Sample(None, self.now.idle_s, self.now.total_s)
            return
        program, idle = step
        assert self.now.program_s is not None
        self.now = Sample(self.now.program_s + program * seconds, self.now.idle_s + idle * seconds,
                          self.now.total_s + CPUS * seconds)


def _gate(machine: Machine, max_wait_s: float = 30.0) -> CpuGate:
    return CpuGate(1, max_wait_s, sample=machine.sample, sleep=machine.sleep, cpus=CPUS)


def test_a_program_using_every_core_holds_the_finisher_for_its_whole_budget() -> None:
    machine = Machine([])  # every look: the program on both cores, nothing idle
    gate = _gate(machine, max_wait_s=1.0)
    gate()
    assert machine.sleeps == round(1.0 / SAMPLE_S)
    assert gate.left_s < 1e-9
    gate()  # the budget is spent: later waits return at once
    assert machine.sleeps == round(1.0 / SAMPLE_S)


def test_the_finisher_starts_once_the_program_waits_itself_for_two_looks() -> None:
    machine = Machine([(2.0, 0.0), (0.1, 1.9), (2.0, 0.0), (0.1, 1.9), (0.2, 1.8)])
    _gate(machine)()
    assert machine.sleeps == 5  # one lull is not enough: the window's own end is one
    assert CONFIRM == 2


def test_an_idle_core_beside_a_busy_program_lets_the_finisher_start() -> None:
    machine = Machine([(1.0, 1.0), (1.0, 0.9)])  # a one-thread program on two cores
    _gate(machine)()
    assert machine.sleeps == 2


def test_a_program_that_has_ended_lets_the_finisher_start_at_once() -> None:
    machine = Machine([None])
    _gate(machine)()
    assert machine.sleeps == 1


def test_without_proc_or_with_no_budget_the_gate_never_waits() -> None:
    machine = Machine([])
    CpuGate(1, 30.0, sample=lambda pid: None, sleep=machine.sleep, cpus=CPUS)()
    _gate(machine, max_wait_s=0.0)()
    assert machine.sleeps == 0


def test_may_run_reads_cores_from_cpu_seconds() -> None:
    before = Sample(10.0, 5.0, 100.0)
    busy = Sample(10.2, 5.0, 100.2)  # 0.1 s of wall time on 2 cores: the program on both
    assert not may_run(before, busy, CPUS)
    waits = Sample(10.01, 5.19, 100.2)
    assert may_run(before, waits, CPUS)
    one_free = Sample(10.1, 5.08, 100.2)  # 0.8 of a core idle
    assert may_run(before, one_free, CPUS)
    assert may_run(before, Sample(None, 5.0, 100.2), CPUS)


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc (Linux)")
def test_read_sample_reads_this_process_and_a_gone_one_reads_as_ended() -> None:
    mine = read_sample(os.getpid())
    assert mine is not None and mine.program_s is not None and mine.program_s > 0
    assert 0 <= mine.idle_s <= mine.total_s
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    later = read_sample(gone.pid)
    assert later is not None and later.program_s is None


def test_the_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPROF_FINISH_YIELD_S", "0")
    assert env.finish_yield_s() == 0.0
    monkeypatch.setenv("AUTOPROF_FINISH_YIELD_S", "later")
    assert env.finish_yield_s() == env.DEFAULT_FINISH_YIELD_S
    monkeypatch.delenv("AUTOPROF_FINISH_YIELD_S")
    assert env.finish_yield_s() == 30.0
    assert cpu_gate.IDLE_CORES > cpu_gate.PROGRAM_IDLE_CORES


def test_the_wait_reads_the_pipe_meanwhile_and_ends_at_its_eof() -> None:
    read, write = os.pipe()
    drain = cpu_gate.Drain(read)
    machine = Machine([])  # the program keeps every core busy throughout
    os.write(write, b'{"name": "x"}\n')
    looks = {"n": 0}

    def between() -> bool:
        looks["n"] += 1
        if looks["n"] == 3:
            os.close(write)  # the program ends: EOF
        return drain()

    _gate(machine)(between)
    assert drain.data == b'{"name": "x"}\n' and drain.eof
    assert machine.sleeps == 3  # stopped at the EOF, not at the end of its budget
    os.close(read)


def test_the_finisher_entry_point_loads_only_the_standard_library_before_it_waits() -> None:
    code = ("import sys; import autoprof.env, autoprof.record.finisher.cpu_gate; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pandas', 'numpy', 'pyarrow', 'msgspec', 'torch', 'json')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


# Loaded into the finisher by PYTHONPATH: on the first look at the program's CPU time (the
# gate's first sample opens /proc/<program>/stat), say which of the finisher's own modules
# were already loaded.
FIRST_LOOK_PROBE = textwrap.dedent(
    """
    import os, sys

    def _first_look(event, args):
        if (event == "open" and not _first_look.seen
                and str(args[0]) == f"/proc/{os.getppid()}/stat"):
            _first_look.seen = True
            loaded = sorted(m for m in sys.modules if m == "autoprof.record.finisher.folder"
                            or m.startswith("autoprof.runfolder"))
            sys.stderr.write(f"FIRST LOOK loaded={loaded}\\n")

    _first_look.seen = False
    sys.addaudithook(_first_look)
    """
)


def test_the_recording_starts_a_finisher_that_waits_before_loading_its_code(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    started: list[tuple[list[str], dict[str, str]]] = []

    def popen(argv: list[str], **kwargs: object) -> None:
        env_ = kwargs["env"]
        assert isinstance(env_, dict)
        started.append((argv, env_))
        raise OSError("not started in this test")

    monkeypatch.setattr(export.subprocess, "Popen", popen)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(OSError, match="not started in this test"):
        export.Finisher.start(run_dir, None)
    monkeypatch.undo()
    [(argv, child_env)] = started

    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(FIRST_LOOK_PROBE)
    child_env = {**child_env, "AUTOPROF_FINISH_YIELD_S": "5",
                 "PYTHONPATH": os.pathsep.join(
                     [str(probe), *filter(None, [child_env.get("PYTHONPATH")])])}
    done = subprocess.run(argv, env=child_env, input=b"", capture_output=True, timeout=60)
    looks = [line for line in done.stderr.decode().splitlines() if line.startswith("FIRST LOOK")]
    assert looks == ["FIRST LOOK loaded=[]"], done.stderr.decode()
