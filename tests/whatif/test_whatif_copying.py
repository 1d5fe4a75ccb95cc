"""Every trial gets copies of the user's arguments of the same types (numpy arrays, dataclasses,
dict subclasses, namedtuples, nested), or the what-if refuses with the reason; a fix that
exits is a result, never the end of the user's program."""

from __future__ import annotations

import collections
import dataclasses
import sys
import threading

import numpy as np
import pytest
import torch

from autoprof.record.whatif import FIXES, try_fixes
from autoprof.record.whatif.copying import NotCopyable, copy_args, deep_copy
from autoprof.record.whatif.fixes.base import Applied, Fix


@dataclasses.dataclass
class Batch:
    x: torch.Tensor
    labels: np.ndarray
    meta: dict


class Config(dict):
    pass


Pair = collections.namedtuple("Pair", "a b")


def test_a_numpy_argument_and_a_dataclass_batch_are_never_changed_by_the_trials():
    arr = np.arange(6, dtype=np.float32)
    batch = Batch(torch.ones(3), np.zeros(2), {"step": [1]})
    seen = []

    def step(a, b):
        seen.append((type(a), type(b)))
        a += 1  # in place, as user code does
        b.x.add_(1)
        b.labels += 1
        b.meta["step"].append(2)
        return torch.from_numpy(a.copy()).sum() + b.x.sum()

    try_fixes(step, (arr, batch), {}, ["inference-mode"], samples=3)
    assert np.array_equal(arr, np.arange(6, dtype=np.float32))
    assert torch.equal(batch.x, torch.ones(3)) and np.array_equal(batch.labels, np.zeros(2))
    assert batch.meta == {"step": [1]}
    assert set(seen) == {(np.ndarray, Batch)}


def test_types_are_kept_and_aliasing_too():
    shared = torch.randn(2, 3)
    model = torch.nn.Linear(2, 2)
    cfg = Config(lr=0.1, t=shared)
    counts = collections.defaultdict(int, a=1)
    args, kwargs = copy_args((cfg, Pair(shared, [shared]), counts, model),
                             {"od": collections.OrderedDict(k=np.ones(2))})
    c_cfg, c_pair, c_counts, c_model = args
    assert type(c_cfg) is Config and c_cfg["lr"] == 0.1
    assert type(c_pair) is Pair and isinstance(c_pair.b, list)
    assert c_cfg["t"] is not shared and torch.equal(c_cfg["t"], shared)
    assert c_cfg["t"] is c_pair.a is c_pair.b[0]  # one tensor passed three times: one copy
    assert type(c_counts) is collections.defaultdict and c_counts["new"] == 0
    assert c_model is model  # modules are shared, like the state a function closes over
    assert type(kwargs["od"]) is collections.OrderedDict
    assert kwargs["od"]["k"] is not None and kwargs["od"]["k"].base is None


def test_tensors_keep_strides_requires_grad_and_device():
    leaf = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    leaf.requires_grad_()
    out = deep_copy(leaf)
    assert out is not leaf and out.requires_grad and out.is_leaf
    assert out.stride() == leaf.stride() and out.device == leaf.device


def test_an_argument_that_cannot_be_copied_is_refused_naming_it():
    class Holder:
        def __init__(self):
            self.lock = threading.Lock()

    with pytest.raises(NotCopyable, match=r"argument 1 \(Holder\) cannot be copied for the "
                                          r"trials: TypeError: .*lock"):
        copy_args((torch.ones(1), Holder()), {})
    with pytest.raises(NotCopyable, match=r"argument 'gen' \(generator\)"):
        copy_args((), {"gen": (i for i in range(3))})


def _exits(call):
    def leave(*args, **kwargs):
        sys.exit(3)

    return Applied(leave)


def test_a_fix_that_exits_is_a_result_and_the_program_goes_on(monkeypatch):
    monkeypatch.setitem(FIXES, "exits", Fix("exits", "calls sys.exit", lambda c: None, _exits))
    _, trials = try_fixes(lambda x: x + 1, (torch.ones(2),), {}, ["exits"], samples=3)
    r = trials[0].result
    assert r.status == "raised" and r.error == "SystemExit: 3"
    assert r.speedup is None


def test_uncopyable_arguments_are_a_refusal_with_the_reason_in_whatif_json(tmp_path):
    import json

    from autoprof.record.whatif import what_if

    calls = []

    def step(x, gen):
        calls.append(1)
        return x + 1

    results = what_if(step, (torch.ones(2), (i for i in range(3))), {}, ("bf16", "compile"),
                      run_dir=tmp_path, samples=3)
    assert calls == []  # nothing ran on the user's own objects
    assert [r["status"] for r in results] == ["not applicable"] * 2
    assert results[0]["reason"].startswith("not tried: argument 1 (generator) cannot be copied")
    record = json.loads((tmp_path / "whatif.json").read_text())
    assert record["baseline_us"] is None and len(record["results"]) == 2
