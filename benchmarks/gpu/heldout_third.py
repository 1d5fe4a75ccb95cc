"""Held-out GPU programs, a third set: eight programs with one or two common bugs each, every
plausible fix timed by hand.

Eight training steps and inference calls as people write them (a translation Transformer
trained in fp16 with a GradScaler, an R(2+1)D video classifier, a deep-and-cross click model,
a protein residue tagger with ALiBi biases, a BiLSTM-CRF tagger's Viterbi decode, a
deep-equilibrium classifier, an IMU activity recogniser fed by a DataLoader, a sentence-
embedding search), each with one or two common PyTorch performance bugs and every fix a
careful engineer would try for them, a CUDA graph of the whole call included where the call
is static (so that the advice's ranking can be judged against the best fix measured).

The kinds of bug are the common ones (a scaler's host read, cuDNN's autotuner off, gradients
zeroed rather than freed, tensors made on the host each step, a Python loop of tiny ops,
``.item()`` for control flow, a per-sample loader, inference with autograd on in fp32); the
programs, their fixes and this script were written before autoprof's analysis of any of them
was run, without reading how autoprof analyses or predicts; they differ from every other
program under ``benchmarks/`` and ``tests/data`` (models, shapes and code). One command on
one H100 (a round is 30 fresh timing processes, each meant to take about 10 s or less, and
the first round records each program right after timing it, 8 processes more: about 6 to 7
minutes; no round starts that would end past ``--budget-s``, 470 s by default, so one round a
call: ``--resume`` adds rounds in later calls) times each program and each fix WITHOUT the
profiler (fresh processes, CUDA events, interleaved rounds, medians: ``heldout_driver.py``),
records each program as written once with ``@autoprof`` (its defaults), and leaves in OUT one
small ``truth.json`` and the run folders as ``runs.tar.gz`` (cut into 15 MiB parts
``runs.tar.gz.00``, ``.01``, ... when larger; ``--record-only`` records again into a timed
truth whose runs were lost):

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_third.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth, into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_third.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way (where a fix needs CUDA it runs what the CPU has: no pinned memory, no graph, no
capturable optimizer, no cuDNN): a check that the programs and the pipeline run, not a
measurement. ``--cases NAME ...`` runs only those programs.

| program | bug | fixes by hand |
| --- | --- | --- |
| ``translation_fp16_scaler`` | fp16 autocast with ``GradScaler`` and a plain AdamW: ``scaler.step`` reads the inf check on the host each step | bf16 autocast without the scaler; ``AdamW(fused=True)`` keeping the scaler; bf16, fused capturable AdamW, the step as a CUDA graph |
| ``r2plus1d_clips_nchw`` | Conv3d training with ``cudnn.benchmark`` off (the default), NCDHW, fp32 | ``cudnn.benchmark = True``; ``channels_last_3d``; bf16 autocast with ``channels_last_3d`` |
| ``dcn_tables_zero_grad`` | ``zero_grad(set_to_none=False)`` and the tables' gradients zeroed again by hand; ``Adagrad(foreach=False)`` over 38 parameters | ``set_to_none=True``, no loop; ``Adagrad(foreach=True)`` |
| ``protein_host_alibi`` | positions, an 8.4 MB ALiBi bias and the padding mask made on the host each step, then ``.to(device)`` | made on the GPU (``device=``); made once before the loop, the padding mask on the GPU |
| ``bilstm_crf_viterbi_loop`` | Viterbi decoded one sentence and one token at a time in Python (about 4 ops a token, 8 sentences) | batched over sentences; that call as a CUDA graph |
| ``deq_solver_item_checks`` | ``.item()`` for control flow: a fixed-point solver's residual each iteration, a hand-summed grad norm read to clip and to log | residual read every 5 iterations; ``clip_grad_norm_(foreach=True)`` on the device; a fixed iteration count and no syncs; that step as a CUDA graph |
| ``har_imu_window_loader`` | per-window featurising in the Dataset, ``num_workers=0``, ``pin_memory=False`` | ``num_workers=4``; ``pin_memory`` and ``non_blocking``; batched ``__getitems__`` |
| ``biencoder_search_fp32`` | small-batch fp32 inference with autograd on | ``inference_mode``; bf16 autocast and a bf16 index under ``inference_mode``; the call as a CUDA graph |
"""  # noqa: E501

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_advice_fixes import with_capture_for_graphs  # noqa: E402
from heldout_driver import Case  # noqa: E402
from heldout_third_cases import CASES as FIRST  # noqa: E402
from heldout_third_more import MORE  # noqa: E402

# the helper the graph fixes call, before each program that captures (on the CPU, the step)
CASES: dict[str, Case] = with_capture_for_graphs({**FIRST, **MORE})
DEFAULTS = heldout_oneshot.DEFAULTS


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
