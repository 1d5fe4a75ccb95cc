"""The truth suite's workloads: name -> (what it is, its variants: ``baseline`` and fixes).

Each builder takes a :class:`common.Ctx` and returns ``{variant name: () -> Variant}``, the
baseline first; builders are lazy so ``record.py`` builds the baseline alone. Fixes that need
CUDA (graphs, reduce-overhead) are left out on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from common import Ctx, VariantBuilder
from wl_loader import caller_loop, inside
from wl_models import bert, compiled_mlp, gpt2, inference, mlp_inference, seed
from wl_sync import graph_program, sync_step, two_streams


@dataclass(frozen=True)
class Workload:
    about: str
    build: Callable[[Ctx], dict[str, VariantBuilder]]
    needs: str | None = None  # an extra package the workload imports
    isolate: bool = False  # a DataLoader: time one variant's loader at a time
    held_out: int = 0  # its held-out set (2, 3, ...), written after the model was tuned


WORKLOADS: dict[str, Workload] = {
    "mlp_loader_w0": Workload(
        "MLP training (4x1024, SGD, batch 256); `for batch in loader: train_step(batch)`, "
        "DataLoader num_workers=0, pin_memory off, a Python transform per sample",
        caller_loop("mlp", 0, False), isolate=True),
    "mlp_loader_w4_pin": Workload(
        "the same MLP, DataLoader num_workers=4, pin_memory on, non_blocking copies",
        caller_loop("mlp", 4, True), isolate=True),
    "cnn_loader_w0_pin": Workload(
        "CNN training (conv-bn-relu 3-32-64-128-128, 64x64 images, batch 64, SGD) in the "
        "caller's loop, num_workers=0, pin_memory on, non_blocking copies",
        caller_loop("cnn", 0, True), isolate=True),
    "cnn_loader_w4": Workload(
        "the same CNN, num_workers=4, pin_memory off, blocking copies",
        caller_loop("cnn", 4, False), isolate=True),
    "mlp_loader_inside": Workload(
        "the MLP step pulls its own batch (`next(it)` inside the decorated function), "
        "num_workers=0, pin_memory off",
        inside, isolate=True),
    "gpt2_tiny": Workload(
        "transformers GPT-2 from a config (2 layers, 128 wide, 1024 tokens), batch 1 x 32, "
        "AdamW, bf16 autocast", gpt2("tiny"), needs="transformers"),
    "gpt2_large": Workload(
        "transformers GPT-2 small from a config (12 layers, 768 wide), batch 8 x 1024, AdamW, "
        "bf16 autocast", gpt2("large"), needs="transformers"),
    "compiled_mlp": Workload(
        "torch.compile'd MLP (6x512, default mode) trained with AdamW at batch 64",
        compiled_mlp),
    "sync_item": Workload(
        "bf16 MLP step (batch 8192, 1024 wide, AdamW) logging `h.abs().mean().item()` "
        "between its halves", sync_step("item")),
    "sync_mask": Workload(
        "the same step with a boolean-mask index `h[h > 0]` between its halves",
        sync_step("mask")),
    "sync_nonzero": Workload(
        "the same step selecting rows with `.nonzero()` between its halves",
        sync_step("nonzero")),
    "sync_cpu": Workload(
        "the same step copying per-feature means to the host with `.cpu()` between its halves",
        sync_step("cpu")),
    "sync_print": Workload(
        "the same step printing a CUDA tensor (to /dev/null) between its halves",
        sync_step("print")),
    "graph_program": Workload(
        "inference of a 20x256 MLP (batch 32) the user already replays as a CUDA graph, "
        "copying each input into the static buffer", graph_program),
    "two_streams": Workload(
        "two independent chains of 4 bf16 1024x1024 matmuls on two streams, joined",
        two_streams),
    "infer_b1": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 1, 64x64",
        inference(1, 64, ("inference_mode", "cuda_graph", "compile_reduce_overhead"))),
    "infer_large": Workload(
        "the same CNN inference at batch 256, 128x128",
        inference(256, 128, ("bf16_autocast", "channels_last_bf16", "cuda_graph", "compile"))),
    "seed_64": Workload(
        "the seed: `x @ w + b`, bf16, 64x64", seed(64, ("addmm", "cuda_graph",
                                                        "compile_reduce_overhead"))),
    "seed_4096": Workload(
        "the seed: `x @ w + b`, bf16, 4096x4096", seed(4096, ("addmm", "cuda_graph", "compile"))),
    # the second held-out set
    "mlp_loader_w2": Workload(
        "the loader MLP in the caller's loop with num_workers=2, pin_memory off",
        caller_loop("mlp", 2, False), isolate=True, held_out=2),
    "cnn_loader_w0": Workload(
        "the loader CNN in the caller's loop with num_workers=0, pin_memory off, blocking copies",
        caller_loop("cnn", 0, False), isolate=True, held_out=2),
    "sync_item_b1024": Workload(
        "the `.item()` step at batch 1024: a host-bound step with a sync", sync_step("item", 1024),
        held_out=2),
    "sync_mask_b1024": Workload(
        "the mask-index step at batch 1024", sync_step("mask", 1024), held_out=2),
    "bert_train": Workload(
        "transformers BERT classifier from a config (4 layers, 256 wide), batch 8 x 128, fp32, "
        "AdamW", bert, needs="transformers", held_out=2),
    "gpt2_mid": Workload(
        "transformers GPT-2 from a config (4 layers, 256 wide, 8192 tokens), batch 4 x 256, "
        "AdamW, bf16 autocast", gpt2("mid"), needs="transformers", held_out=2),
    "mlp_infer_b8": Workload(
        "MLP inference (8 x 512, no_grad) at batch 8", mlp_inference(8), held_out=2),
    # the third held-out set: written after the steady-call reference and the one-line fixes
    "seed_1024": Workload(
        "the seed: `x @ w + b`, bf16, 1024x1024", seed(1024, ("addmm", "cuda_graph")),
        held_out=3),
    "sync_nonzero_b1024": Workload(
        "the `.nonzero()` step at batch 1024", sync_step("nonzero", 1024), held_out=3),
    "mlp_infer_b64": Workload(
        "MLP inference (8 x 512, no_grad) at batch 64", mlp_inference(64), held_out=3),
    # the fourth held-out set: written after the recorder timed the time between calls and
    # the closing sync, and the replay timed the call as the recorder does
    "seed_256": Workload(
        "the seed: `x @ w + b`, bf16, 256x256", seed(256, ("addmm", "cuda_graph")), held_out=4),
    "mlp_infer_b512": Workload(
        "MLP inference (8 x 512, no_grad) at batch 512", mlp_inference(512), held_out=4),
    "infer_b8": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 8, 64x64",
        inference(8, 64, ("inference_mode", "cuda_graph")), held_out=4),
    "sync_cpu_b1024": Workload(
        "the `.cpu()` step at batch 1024", sync_step("cpu", 1024), held_out=4),
    "sync_print_b2048": Workload(
        "the printing step at batch 2048", sync_step("print", 2048), held_out=4),
    "mlp_loader_w1": Workload(
        "the loader MLP in the caller's loop with num_workers=1, pin_memory off",
        caller_loop("mlp", 1, False), isolate=True, held_out=4),
    # the fifth held-out set: written after the fused optimizer's loop was modelled and the
    # time between calls was paced by the untraced loop; evaluated only
    "seed_512": Workload(
        "the seed: `x @ w + b`, bf16, 512x512", seed(512, ("addmm", "cuda_graph")), held_out=5),
    "mlp_infer_b32": Workload(
        "MLP inference (8 x 512, no_grad) at batch 32", mlp_inference(32), held_out=5),
    "infer_b32": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 32, 64x64",
        inference(32, 64, ("inference_mode", "cuda_graph")), held_out=5),
    "sync_mask_b2048": Workload(
        "the mask-index step at batch 2048", sync_step("mask", 2048), held_out=5),
    "sync_item_b4096": Workload(
        "the `.item()` step at batch 4096", sync_step("item", 4096), held_out=5),
    "sync_nonzero_b4096": Workload(
        "the `.nonzero()` step at batch 4096", sync_step("nonzero", 4096), held_out=5),
    "cnn_loader_w2_pin": Workload(
        "the loader CNN in the caller's loop with num_workers=2, pin_memory on, non_blocking "
        "copies", caller_loop("cnn", 2, True), isolate=True, held_out=5),
    # the sixth held-out set: written after the fifth was read, with the model unchanged
    # since; evaluated only
    "seed_2048": Workload(
        "the seed: `x @ w + b`, bf16, 2048x2048", seed(2048, ("addmm", "cuda_graph")),
        held_out=6),
    "mlp_infer_b16": Workload(
        "MLP inference (8 x 512, no_grad) at batch 16", mlp_inference(16), held_out=6),
    "infer_b16": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 16, 64x64",
        inference(16, 64, ("inference_mode", "cuda_graph")), held_out=6),
    "sync_item_b2048": Workload(
        "the `.item()` step at batch 2048", sync_step("item", 2048), held_out=6),
    "sync_cpu_b4096": Workload(
        "the `.cpu()` step at batch 4096", sync_step("cpu", 4096), held_out=6),
    "sync_print_b1024": Workload(
        "the printing step at batch 1024", sync_step("print", 1024), held_out=6),
    "mlp_loader_w2_pin": Workload(
        "the loader MLP in the caller's loop with num_workers=2, pin_memory on, non_blocking "
        "copies", caller_loop("mlp", 2, True), isolate=True, held_out=6),
    # the seventh held-out set: written after the sixth was read and the CUDA graph's input
    # copy was modelled (the recorder reads the call's CUDA input bytes); evaluated only
    "seed_3072": Workload(
        "the seed: `x @ w + b`, bf16, 3072x3072", seed(3072, ("addmm", "cuda_graph")),
        held_out=7),
    "seed_1536": Workload(
        "the seed: `x @ w + b`, bf16, 1536x1536", seed(1536, ("addmm", "cuda_graph")),
        held_out=7),
    "mlp_infer_b4096": Workload(
        "MLP inference (8 x 512, no_grad) at batch 4096", mlp_inference(4096), held_out=7),
    "mlp_infer_b1024": Workload(
        "MLP inference (8 x 512, no_grad) at batch 1024", mlp_inference(1024), held_out=7),
    "infer_b128": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 128, 64x64",
        inference(128, 64, ("inference_mode", "cuda_graph")), held_out=7),
    "infer_b4": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 4, 64x64",
        inference(4, 64, ("inference_mode", "cuda_graph")), held_out=7),
    "sync_item_b512": Workload(
        "the `.item()` step at batch 512", sync_step("item", 512), held_out=7),
    "sync_nonzero_b2048": Workload(
        "the `.nonzero()` step at batch 2048", sync_step("nonzero", 2048), held_out=7),
    "cnn_loader_w1": Workload(
        "the loader CNN in the caller's loop with num_workers=1, pin_memory off, blocking "
        "copies", caller_loop("cnn", 1, False), isolate=True, held_out=7),
    # the eighth held-out set: written after the seventh was read, the input copy's host cost
    # paced and the recorder's time between warm-up calls tightened; evaluated only
    "seed_768": Workload(
        "the seed: `x @ w + b`, bf16, 768x768", seed(768, ("addmm", "cuda_graph")), held_out=8),
    "seed_2560": Workload(
        "the seed: `x @ w + b`, bf16, 2560x2560", seed(2560, ("addmm", "cuda_graph")),
        held_out=8),
    "mlp_infer_b256": Workload(
        "MLP inference (8 x 512, no_grad) at batch 256", mlp_inference(256), held_out=8),
    "mlp_infer_b2048": Workload(
        "MLP inference (8 x 512, no_grad) at batch 2048", mlp_inference(2048), held_out=8),
    "infer_b2": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 2, 64x64",
        inference(2, 64, ("inference_mode", "cuda_graph")), held_out=8),
    "infer_b64": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 64, 64x64",
        inference(64, 64, ("inference_mode", "cuda_graph")), held_out=8),
    "sync_cpu_b2048": Workload(
        "the `.cpu()` step at batch 2048", sync_step("cpu", 2048), held_out=8),
    "sync_print_b4096": Workload(
        "the printing step at batch 4096", sync_step("print", 4096), held_out=8),
    "mlp_loader_w1_pin": Workload(
        "the loader MLP in the caller's loop with num_workers=1, pin_memory on, non_blocking "
        "copies", caller_loop("mlp", 1, True), isolate=True, held_out=8),
    # the ninth held-out set: written after a loop that waits for DataLoader worker processes
    # was made to bound every fix but more workers; evaluated only
    "mlp_loader_w3": Workload(
        "the loader MLP in the caller's loop with num_workers=3, pin_memory off",
        caller_loop("mlp", 3, False), isolate=True, held_out=9),
    "mlp_loader_w3_pin": Workload(
        "the loader MLP in the caller's loop with num_workers=3, pin_memory on, non_blocking "
        "copies", caller_loop("mlp", 3, True), isolate=True, held_out=9),
    "cnn_loader_w2": Workload(
        "the loader CNN in the caller's loop with num_workers=2, pin_memory off, blocking "
        "copies", caller_loop("cnn", 2, False), isolate=True, held_out=9),
    "cnn_loader_w3_pin": Workload(
        "the loader CNN in the caller's loop with num_workers=3, pin_memory on, non_blocking "
        "copies", caller_loop("cnn", 3, True), isolate=True, held_out=9),
    # the tenth held-out set: written after the recorder's block of calls after the window
    # became the pace of a step without a DataLoader's loop; evaluated only
    "seed_1280": Workload(
        "the seed: `x @ w + b`, bf16, 1280x1280", seed(1280, ("addmm", "cuda_graph")),
        held_out=10),
    "seed_3584": Workload(
        "the seed: `x @ w + b`, bf16, 3584x3584", seed(3584, ("addmm", "cuda_graph")),
        held_out=10),
    "mlp_infer_b128": Workload(
        "MLP inference (8 x 512, no_grad) at batch 128", mlp_inference(128), held_out=10),
    "mlp_infer_b3072": Workload(
        "MLP inference (8 x 512, no_grad) at batch 3072", mlp_inference(3072), held_out=10),
    "infer_b12": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 12, 64x64",
        inference(12, 64, ("inference_mode", "cuda_graph")), held_out=10),
    "infer_b48": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 48, 64x64",
        inference(48, 64, ("inference_mode", "cuda_graph")), held_out=10),
    "sync_item_b256": Workload(
        "the `.item()` step at batch 256", sync_step("item", 256), held_out=10),
    "sync_print_b512": Workload(
        "the printing step at batch 512", sync_step("print", 512), held_out=10),
    # the eleventh held-out set: written after the tenth was read, the model unchanged since;
    # kinds of every earlier set at sizes none of them used; evaluated only
    "seed_96": Workload(
        "the seed: `x @ w + b`, bf16, 96x96", seed(96, ("addmm", "cuda_graph")), held_out=11),
    "seed_1792": Workload(
        "the seed: `x @ w + b`, bf16, 1792x1792", seed(1792, ("addmm", "cuda_graph")),
        held_out=11),
    "mlp_infer_b24": Workload(
        "MLP inference (8 x 512, no_grad) at batch 24", mlp_inference(24), held_out=11),
    "mlp_infer_b1536": Workload(
        "MLP inference (8 x 512, no_grad) at batch 1536", mlp_inference(1536), held_out=11),
    "infer_b3": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 3, 64x64",
        inference(3, 64, ("inference_mode", "cuda_graph")), held_out=11),
    "infer_b96": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 96, 64x64",
        inference(96, 64, ("inference_mode", "cuda_graph")), held_out=11),
    "sync_item_b768": Workload(
        "the `.item()` step at batch 768", sync_step("item", 768), held_out=11),
    "sync_mask_b4096": Workload(
        "the mask-index step at batch 4096", sync_step("mask", 4096), held_out=11),
    "sync_nonzero_b512": Workload(
        "the `.nonzero()` step at batch 512", sync_step("nonzero", 512), held_out=11),
    "mlp_loader_w0_pin": Workload(
        "the loader MLP in the caller's loop with num_workers=0, pin_memory on, non_blocking "
        "copies", caller_loop("mlp", 0, True), isolate=True, held_out=11),
    "cnn_loader_w3": Workload(
        "the loader CNN in the caller's loop with num_workers=3, pin_memory off, blocking "
        "copies", caller_loop("cnn", 3, False), isolate=True, held_out=11),
    "gpt2_small": Workload(
        "transformers GPT-2 from a config (3 layers, 192 wide, 4096 tokens), batch 2 x 128, "
        "AdamW, bf16 autocast", gpt2("small"), needs="transformers", held_out=11),
    # the twelfth held-out set: written after the eleventh was read and a folded bias add
    # took the `+`'s dispatch and matmul's own time with it; evaluated only
    "seed_128": Workload(
        "the seed: `x @ w + b`, bf16, 128x128", seed(128, ("addmm", "cuda_graph")),
        held_out=12),
    "seed_384": Workload(
        "the seed: `x @ w + b`, bf16, 384x384", seed(384, ("addmm", "cuda_graph")),
        held_out=12),
    "seed_640": Workload(
        "the seed: `x @ w + b`, bf16, 640x640", seed(640, ("addmm", "cuda_graph")),
        held_out=12),
    "seed_2304": Workload(
        "the seed: `x @ w + b`, bf16, 2304x2304", seed(2304, ("addmm", "cuda_graph")),
        held_out=12),
    "seed_3328": Workload(
        "the seed: `x @ w + b`, bf16, 3328x3328", seed(3328, ("addmm", "cuda_graph")),
        held_out=12),
    "mlp_infer_b40": Workload(
        "MLP inference (8 x 512, no_grad) at batch 40", mlp_inference(40), held_out=12),
    "infer_b6": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 6, 64x64",
        inference(6, 64, ("inference_mode", "cuda_graph")), held_out=12),
    "sync_item_b3072": Workload(
        "the `.item()` step at batch 3072", sync_step("item", 3072), held_out=12),
    "cnn_loader_w1_pin": Workload(
        "the loader CNN in the caller's loop with num_workers=1, pin_memory on, non_blocking "
        "copies", caller_loop("cnn", 1, True), isolate=True, held_out=12),
    # the thirteenth held-out set: written after the twelfth was read and a CUDA graph's fix
    # took in what capture needs (the call's syncs and a selection's machinery gone, a
    # capturable optimizer's kernels); evaluated only
    "gpt2_wide": Workload(
        "transformers GPT-2 from a config (2 layers, 384 wide, 2048 tokens), batch 2 x 96, "
        "AdamW, bf16 autocast", gpt2("wide"), needs="transformers", held_out=13),
    "gpt2_deep": Workload(
        "transformers GPT-2 from a config (6 layers, 128 wide, 1024 tokens), batch 1 x 64, "
        "AdamW, bf16 autocast", gpt2("deep"), needs="transformers", held_out=13),
    "seed_448": Workload(
        "the seed: `x @ w + b`, bf16, 448x448", seed(448, ("addmm", "cuda_graph")),
        held_out=13),
    "seed_2816": Workload(
        "the seed: `x @ w + b`, bf16, 2816x2816", seed(2816, ("addmm", "cuda_graph")),
        held_out=13),
    "mlp_infer_b768": Workload(
        "MLP inference (8 x 512, no_grad) at batch 768", mlp_inference(768), held_out=13),
    "infer_b24": Workload(
        "CNN inference (no_grad, 3-32-64-128-256-256) at batch 24, 64x64",
        inference(24, 64, ("inference_mode", "cuda_graph")), held_out=13),
    "sync_item_b1536": Workload(
        "the `.item()` step at batch 1536", sync_step("item", 1536), held_out=13),
    "sync_mask_b3072": Workload(
        "the mask-index step at batch 3072", sync_step("mask", 3072), held_out=13),
    "sync_nonzero_b3072": Workload(
        "the `.nonzero()` step at batch 3072", sync_step("nonzero", 3072), held_out=13),
    "sync_cpu_b3072": Workload(
        "the `.cpu()` step at batch 3072", sync_step("cpu", 3072), held_out=13),
    "sync_print_b768": Workload(
        "the printing step at batch 768", sync_step("print", 768), held_out=13),
    "mlp_loader_w4": Workload(
        "the loader MLP in the caller's loop with num_workers=4, pin_memory off, blocking "
        "copies", caller_loop("mlp", 4, False), isolate=True, held_out=13),
    "cnn_loader_w4_pin": Workload(
        "the loader CNN in the caller's loop with num_workers=4, pin_memory on, non_blocking "
        "copies", caller_loop("cnn", 4, True), isolate=True, held_out=13),
}
