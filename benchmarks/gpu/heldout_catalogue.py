"""Held-out GPU programs for the fix catalogue: ten with one common bug each, fixed by hand.

Ten training steps and inference loops as people write them, each with one common PyTorch
performance bug, its fix by hand and, where natural, a second plausible fix (so that the
advice's ranking can be judged).

The programs, their fixes and this script were written before autoprof's analysis of any of
them was run; they differ from every other program under ``benchmarks/`` and ``tests/data``
(models, shapes and code). One command on one H100 (7 to 8 minutes: no timing round starts
that would end past ``--budget-s``, 440 s by default, so 2 rounds where a round of its 25
fresh processes takes under 2.5 minutes, else 1; at most 3) times each program
and each fix WITHOUT the profiler (fresh processes, CUDA events, interleaved rounds, medians:
``heldout_driver.py``), records each program as written once with ``@autoprof`` (its
defaults), and leaves in OUT one small ``truth.json`` and the run folders as
``runs.tar.gz``:

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_catalogue.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth (each fix: offered, its rank, predicted, interval, whether the measured gain lies in
it), into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_catalogue.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way (where a fix needs CUDA it runs what the CPU has: an unpinned copy, no graph, no
fused kernel): a check that the programs and the pipeline run, not a measurement.
``--cases NAME ...`` runs only those programs.

| program | bug | fixes by hand |
| --- | --- | --- |
| ``kws_pageable_spectrograms`` | 20 MiB batches from pageable memory | pinned, non-blocking |
| ``gcn_logged_item`` | ``loss.item()`` and accuracy ``.item()`` every step | kept on the device |
| ``forecaster_crop_loop`` | per-sample crop/scale/noise in a Python loop | batched (``gather``) |
| ``mobilenet_sgd_foreach_false`` | ``SGD(foreach=False)``, 83 parameters | foreach; fused |
| ``unet_denoiser_fp16_scaler`` | fp16 autocast with GradScaler | bf16, no scaler; fused AdamW |
| ``vit_fp32_training`` | fp32 products, TF32 off | TF32; bf16 autocast |
| ``mixer_eval_grad`` | evaluation with autograd on | ``inference_mode``; CUDA graph |
| ``two_tower_zero_grad`` | ``zero_grad(set_to_none=False)``, 1M-row tables | ``zero_grad()`` |
| ``char_lm_host_mask`` | mask, positions, weights made on the host | on the device; once |
| ``policy_rollout_launch_bound`` | ~230 small ops a call | CUDA graph |
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_catalogue_more import MORE  # noqa: E402
from heldout_catalogue_train import TRAIN  # noqa: E402
from heldout_driver import Case  # noqa: E402

CASES: dict[str, Case] = {**TRAIN, **MORE}

DEFAULTS = {"rounds": 3, "budget_s": 440.0, "record_calls": 20, "timeout_s": 90.0}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
