"""Held-out GPU programs, a fresh set: ten programs with one or two common bugs each, every
plausible fix timed by hand.

Ten training steps and inference loops as people write them (a recommender, a graph network,
a speech encoder, a PPO update, a tabular model, a contrastive step, a diffusion sampler, a
translator's decoding, a detector's post-processing, a ViT evaluation behind a DataLoader),
each with one or two common PyTorch performance bugs and every fix a careful engineer would
try for them, a CUDA graph of the whole call included where the call is small enough for one
(so that the advice's ranking can be judged against the best fix measured).

The programs, their fixes and this script were written before autoprof's analysis of any of
them was run; they differ from every other program under ``benchmarks/`` and ``tests/data``
(models, shapes and code). One command on one H100 (about 8 minutes: a round is 33 fresh
processes of about 10 s each, 28 of them took 285 s there, and the first round records each
program right after timing it, 10 processes more; no round starts that would end past
``--budget-s``, 470 s by default, so one round a call: ``--resume`` adds rounds in later
calls) times each program and each fix
WITHOUT the profiler (fresh processes, CUDA events, interleaved rounds, medians:
``heldout_driver.py``), records each program as written once with ``@autoprof`` (its
defaults), and leaves in OUT one small ``truth.json`` and the run folders as ``runs.tar.gz``
(cut into 15 MiB parts ``runs.tar.gz.00``, ``.01``, ... when larger: the device brings back
files of at most 16 MiB; ``--record-only`` records again into a timed truth whose runs were
lost):

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_fresh.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth (each fix: offered, its rank, predicted, interval, whether the measured gain lies in
it), into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_fresh.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way (where a fix needs CUDA it runs what the CPU has: an unpinned copy, no graph, no
fused kernel): a check that the programs and the pipeline run, not a measurement.
``--cases NAME ...`` runs only those programs.

| program | bug | fixes by hand |
| --- | --- | --- |
| ``dlrm_pageable_bags`` | 12.6 MB id batches copied from pageable memory | pinned, non-blocking; batches resident on the GPU |
| ``sage_dropedge_mask`` | DropEdge by boolean mask, ``torch.nonzero`` each step | 0/1 edge weights, nodes found once; that step as a CUDA graph |
| ``conformer_fp32_highest`` | fp32 products, TF32 off | TF32; bf16 autocast |
| ``ppo_update_syncs`` | ``.item()`` and ``Normal`` validation syncs a minibatch; ``Adam(foreach=False)`` | syncs removed; fused Adam; the whole update as a CUDA graph |
| ``tabular_column_loops`` | per-column embedding and normalisation loops, a loss per target | vectorised; the step as written as a CUDA graph |
| ``simclr_anchor_loop`` | NT-Xent one anchor at a time with mask syncs; NCHW bf16 convs | vectorised loss; channels_last |
| ``ddim_sampler_grad`` | sampler with autograd on; timesteps made on the host | ``inference_mode``; made on the device; the sampler as a CUDA graph |
| ``transformer_greedy_tolist`` | decoding with autograd on, ``.tolist()`` and ``.all()`` a token | ``inference_mode``; syncs removed |
| ``detector_python_nms`` | greedy NMS in a Python loop of mask syncs | Fast NMS per image; Fast NMS batched |
| ``vit_eval_sample_loader`` | per-sample host transforms, ``num_workers=0``, pageable | loader workers; pinned; batched ``__getitems__`` |
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_advice_fixes import with_capture  # noqa: E402
from heldout_driver import Case  # noqa: E402
from heldout_fresh_cases import CASES as TRAIN  # noqa: E402
from heldout_fresh_loops import LOOPS  # noqa: E402
from heldout_fresh_more import MORE  # noqa: E402

# the helper the graph fixes call, before each program that captures (on the CPU, the step)
CASES: dict[str, Case] = with_capture({**TRAIN, **LOOPS, **MORE}, (
    "sage_dropedge_mask", "ppo_update_syncs", "tabular_column_loops", "ddim_sampler_grad"))

DEFAULTS = heldout_oneshot.DEFAULTS


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
