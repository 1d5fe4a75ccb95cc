"""Held-out GPU programs, a next set: eight programs with one or two common bugs each, every
plausible fix timed by hand.

Eight training steps and inference calls as people write them (a mask head's paste loop, a
PointNet segmenter, a masked-LM pretraining step, a GPT-style LM, a U-Net with logged metrics,
a LoRA fine-tune, a joint intent/slot model served one request at a time, a QK-norm and
rotary preparation), each with one or two common PyTorch performance bugs and every fix a
careful engineer would try for them, a CUDA graph of the whole call included where the call
is small enough and static (so that the advice's ranking can be judged against the best fix
measured).

The kinds of bug were chosen from the catalogue's known gaps (long loop bodies run by an outer
loop, pageable copies, per-sample loaders, syncs for logging); the programs, their fixes and
this script were written before autoprof's analysis of any of them was run, without reading
how autoprof analyses or predicts; they differ from every other
program under ``benchmarks/`` and ``tests/data`` (models, shapes and code). One command on
one H100 (a round is 29 fresh timing processes, each meant to take about 10 s or less, and
the first round records each program right after timing it, 8 processes more: about 6 to 7
minutes; no round starts that would end past ``--budget-s``, 470 s by default, so one round a
call: ``--resume`` adds rounds in later calls) times each program and each fix WITHOUT the
profiler (fresh processes, CUDA events, interleaved rounds, medians: ``heldout_driver.py``),
records each program as written once with ``@autoprof`` (its defaults), and leaves in OUT one
small ``truth.json`` and the run folders as ``runs.tar.gz`` (cut into 15 MiB parts
``runs.tar.gz.00``, ``.01``, ... when larger; ``--record-only`` records again into a timed
truth whose runs were lost):

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_next.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth, into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_next.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way (where a fix needs CUDA it runs what the CPU has: an unpinned copy, no side stream,
no graph, no fused kernel): a check that the programs and the pipeline run, not a
measurement. ``--cases NAME ...`` runs only those programs.

| program | bug | fixes by hand |
| --- | --- | --- |
| ``mask_paste_loop`` | masks pasted one detection at a time in a Python loop (about 40 ops each, 96 a call) | vectorised over detections and images; the head and loop as a CUDA graph |
| ``pointnet_pageable_points`` | 11.5 MB batches copied from pageable memory each step | pinned, non-blocking; prefetched on a side stream; resident on the GPU |
| ``mlm_masking_loader`` | BERT masking one sample at a time in the Dataset, ``num_workers=0`` | loader workers; batched ``__getitems__``; masking on the GPU |
| ``gpt_lm_fp32`` | large fp32 matmuls, TF32 off (the default) | TF32; bf16 autocast |
| ``unet_logged_metrics`` | four ``.item()`` / ``.cpu()`` syncs a step for logging | metrics summed on the device; logged every 25 steps; the step as a CUDA graph |
| ``lora_adamw_foreach_false`` | ``AdamW(foreach=False)`` over 132 small adapter tensors | ``foreach=True``; ``fused=True``; the step as a CUDA graph |
| ``nlu_batch1_grad`` | batch-1 serving with autograd on | ``inference_mode``; the call as a CUDA graph |
| ``qk_norm_rope_fp32`` | memory-bound elementwise chain with a full-size temporary an op | fewer temporaries (in-place, by halves); ``F.rms_norm``; bf16 storage |
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_advice_fixes import with_capture_for_graphs  # noqa: E402
from heldout_driver import Case  # noqa: E402
from heldout_next_cases import CASES as FIRST  # noqa: E402
from heldout_next_more import MORE  # noqa: E402

# the helper the graph fixes call, before each program that captures (on the CPU, the step)
CASES: dict[str, Case] = with_capture_for_graphs({**FIRST, **MORE})
DEFAULTS = heldout_oneshot.DEFAULTS


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
