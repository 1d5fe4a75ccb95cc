"""Held-out GPU programs, a fourth set: eight programs with one or two common bugs each, every
plausible fix timed by hand.

Eight training steps and inference calls as people write them (a LLaMA-style decoder with
its RMSNorm, rotary embedding and SwiGLU written by hand, a road-scene segmenter with a
hand-written focal and dice loss, a speaker encoder trained on a looped GE2E loss, a CTC
speech recogniser fed 16-bit PCM from pageable memory, an isotropic ConvNeXt with a
per-parameter RMSprop, a FastSpeech-style acoustic model, a CT nodule classifier fed by a
per-patch DataLoader, a CLIP-style dual encoder), each with one or two common PyTorch
performance bugs and every fix a careful engineer would try for them, a CUDA graph of the
whole call included where the call is static (so that the advice's ranking can be judged
against the best fix measured).

The kinds of bug are the common ones (chains of fp32 pointwise ops written by hand,
``.item()`` for logging, a Python loop of tiny ops, pageable host-to-device copies, an
optimizer with ``foreach=False``, gradients zeroed rather than freed, inference with autograd
on, fp32 matmuls with TF32 off, a per-sample loader, tensors made on the host each step); the
programs, their fixes and this script were written before autoprof's analysis of any of them
was run, without reading how autoprof analyses or predicts; they differ from every other
program under ``benchmarks/`` and ``tests/data`` (models, shapes and code). One command on
one H100 (a round is 32 fresh timing processes, each meant to take about 10 s or less, and
the first round records each program right after timing it, 8 processes more: about 6 to 7
minutes; no round starts that would end past ``--budget-s``, 470 s by default, so one round a
call: ``--resume`` adds rounds in later calls) times each program and each fix WITHOUT the
profiler (fresh processes, CUDA events, interleaved rounds, medians: ``heldout_driver.py``),
records each program as written once with ``@autoprof`` (its defaults), and leaves in OUT one
small ``truth.json`` and the run folders as ``runs.tar.gz`` (cut into 15 MiB parts
``runs.tar.gz.00``, ``.01``, ... when larger; ``--record-only`` records again into a timed
truth whose runs were lost):

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_fourth.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth, into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_fourth.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way (where a fix needs CUDA it runs what the CPU has: no pinned memory, no graph, no
capturable optimizer, ``torch.compile`` with its eager backend): a check that the programs
and the pipeline run, not a measurement. ``--cases NAME ...`` runs only those programs.

| program | bug | fixes by hand |
| --- | --- | --- |
| ``llama_rope_rmsnorm_fp32`` | RMSNorm, rotary and SwiGLU written as fp32 pointwise chains (about 30 elementwise kernels a layer); fp32 matmuls with TF32 off | ``torch.compile`` of the three functions; ``F.rms_norm`` and ``F.silu``; ``allow_tf32``; bf16 autocast |
| ``roadseg_focal_dice_items`` | a sigmoid focal plus soft dice loss written as about 25 fp32 pointwise ops over 22M logits; three ``.item()`` reads a step for the progress bar | ``torch.compile`` of the loss; ``binary_cross_entropy_with_logits`` and ``torch.where``; accuracy summed on the device, read every 50 steps |
| ``ge2e_speaker_loop`` | the GE2E loss built in a Python loop over 32 speakers x 8 utterances (about 6 small ops an utterance) | the similarity matrix in closed form (einsum, ``torch.where``); that step as a CUDA graph |
| ``ctc_pcm16_pageable`` | 16-bit PCM converted to float on the host and the 10 MB batch copied from pageable memory | ``.pin_memory()`` and ``non_blocking``; the int16 copied and converted on the GPU; int16 held pinned, ``non_blocking``, converted on the GPU |
| ``convnext_rmsprop_zero_fill`` | ``RMSprop(foreach=False)`` over 114 parameters; ``zero_grad(set_to_none=False)`` | ``RMSprop(foreach=True)``; ``set_to_none=True``; the step as a CUDA graph (foreach, capturable) |
| ``fastspeech_tts_grad`` | fp32 inference with autograd on, TF32 off | ``inference_mode``; ``allow_tf32``; bf16 autocast under ``inference_mode`` |
| ``ct_patch_loader`` | per-patch crop and augmentation in the Dataset, ``num_workers=0``, ``pin_memory=False`` | ``num_workers=4``; ``pin_memory`` and ``non_blocking``; batched ``__getitems__`` |
| ``clip_towers_host_labels`` | contrastive labels and causal mask made on the host each step; loss, accuracy and temperature read with ``.item()`` | made on the GPU (``device=``); no ``.item()``; both, the step as a CUDA graph |
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_advice_fixes import with_capture_for_graphs  # noqa: E402
from heldout_driver import Case  # noqa: E402
from heldout_fourth_cases import CASES as FIRST  # noqa: E402
from heldout_fourth_more import MORE  # noqa: E402

# the helper the graph fixes call, before each program that captures (on the CPU, the step)
CASES: dict[str, Case] = with_capture_for_graphs({**FIRST, **MORE})
DEFAULTS = heldout_oneshot.DEFAULTS


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
