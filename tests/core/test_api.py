"""The front door: @autoprof bare and with options, what decorating preserves, disabling."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import torch

import autoprof as autoprof_pkg
from autoprof import autoprof
from autoprof.record.options import Schedule
from tests.core.conftest import TINY, manifest, only_run


def test_import_autoprof_does_not_import_torch():
    code = (
        "import sys, autoprof\n"
        "from autoprof import autoprof as ap\n"
        "autoprof.region; autoprof.check; autoprof.Schedule; ap.region\n"
        "@ap\n"
        "def f():\n"
        "    return 1\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_package_and_object_expose_the_same_api():
    assert autoprof_pkg.autoprof is autoprof
    assert autoprof_pkg.region is autoprof.region
    assert autoprof_pkg.check.__name__ == autoprof.check.__name__ == "check"
    assert autoprof_pkg.Schedule is autoprof.Schedule is Schedule


def test_bare_decorator_profiles_with_defaults(traces_root):
    @autoprof
    def matmul_add(x, w, b):
        return torch.matmul(x, w) + b

    x = torch.ones(4, 4)
    calls = 3 + Schedule().total_steps  # default warm-up + wait 1, warmup 1, active 3
    for _ in range(calls):
        out = matmul_add(x, x, x)
    assert torch.equal(out, x @ x + x)
    session = matmul_add.autoprof_session
    assert session.done
    session.flush()
    name = "test_bare_decorator_profiles_with_defaults.<locals>.matmul_add"
    m = manifest(only_run(traces_root, name))
    assert m["status"] == "complete"
    assert m["steps_recorded"] == 3
    assert len(m["warmup_call_ms"]) == 3


def test_options_and_name(traces_root):
    @autoprof(name="mm", warmup=2, schedule=dict(wait=1, warmup=1, active=2, repeat=1))
    def step(x):
        return x * 2

    for i in range(2 + 4):
        assert step(torch.tensor(float(i))).item() == 2 * i
    step.autoprof_session.flush()
    m = manifest(only_run(traces_root, "mm"))
    assert m["name"] == "mm" and m["status"] == "complete"
    assert m["options"]["schedule"] == {
        "wait": 1, "warmup": 1, "active": 2, "repeat": 1, "skip_first": 0, "skip_first_wait": 0
    }
    assert m["steps_recorded"] == 2 and len(m["warmup_call_ms"]) == 2


def test_wraps_keeps_signature_doc_and_name():
    def original(a: int, b: float = 2.0, *, c: str = "x") -> float:
        """Adds things."""
        return a + b

    wrapped = autoprof(original)
    assert wrapped.__doc__ == "Adds things."
    assert wrapped.__name__ == "original"
    assert wrapped.__wrapped__ is original
    assert inspect.signature(wrapped) == inspect.signature(original)
    assert wrapped(1, 2.5) == 3.5


def test_methods_module_forward_and_return_kinds(traces_root):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2)

        @autoprof(name="fwd", warmup=1, schedule=TINY)
        def forward(self, x):
            return self.lin(x)

    class Thing:
        def __init__(self):
            self.k = 5

        @autoprof(name="method", warmup=0, schedule=TINY)
        def pair(self, v):
            return (v, self.k)

        @autoprof(name="none", warmup=0, schedule=TINY)
        def nothing(self):
            return None

    model, thing = Model(), Thing()
    x = torch.ones(1, 3)
    for _ in range(6):  # siblings take turns: one torch profiler at a time
        y = model(x)
        assert y.shape == (1, 2)
        assert torch.equal(y, model.lin(x))
        sentinel = object()
        assert thing.pair(sentinel) == (sentinel, 5)
        assert thing.nothing() is None
    autoprof.flush()
    for name in ("fwd", "method", "none"):
        assert manifest(only_run(traces_root, name))["status"] == "complete"


def test_disabled_by_env_returns_the_function_itself(monkeypatch, traces_root):
    monkeypatch.setenv("AUTOPROF", "0")

    def f(x):
        return x + 1

    assert autoprof(f) is f
    assert autoprof(name="x", warmup=0)(f) is f
    with autoprof.region("disabled-region"):
        assert f(1) == 2
    assert not traces_root.exists()


def test_disabled_by_option_returns_the_function_itself():
    def f():
        return 1

    assert autoprof(enabled=False)(f) is f


def test_misuse_is_a_clear_error():
    with pytest.raises(TypeError, match="unknown option"):
        autoprof(warmpu=3)
    with pytest.raises(TypeError, match="keywords only"):
        autoprof(lambda: 1, name="x")
    with pytest.raises(ValueError, match="schedule keys"):
        autoprof(schedule={"wait": 1, "actve": 2})
    with pytest.raises(ValueError, match="active must be >= 1"):
        autoprof(schedule={"active": 0})
    with pytest.raises(ValueError, match="warmup_calls must be an int"):
        autoprof(warmup=-1)


def test_after_the_schedule_the_wrapper_calls_the_function_directly(traces_root):
    seen = []

    @autoprof(name="fast", warmup=0, schedule=TINY)
    def f(v):
        seen.append(v)
        return v

    f(1)
    f(2)
    assert f.autoprof_session.done
    assert not torch.autograd._profiler_enabled()
    assert [f(i) for i in range(3, 6)] == [3, 4, 5]
    assert seen == [1, 2, 3, 4, 5]
    f.autoprof_session.flush()
    assert manifest(only_run(traces_root, "fast"))["steps_recorded"] == 1
