"""Model workloads: transformers GPT-2 from a config (tiny, mid and large) and BERT, a
torch.compile'd MLP, CNN inference at batch 1 and at a large batch, MLP inference at a small
batch, and the seed ``x @ w + b`` at 64 and 4096."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal, cast

import torch
import torch.nn.functional as F
from common import (
    Ctx,
    Variant,
    VariantBuilder,
    classify_loss,
    cnn,
    cycle_list,
    graphed_forward,
    graphed_train_step,
    mlp,
    repeat,
    train_step_fn,
)

# --- GPT-2 (transformers, built from a config: nothing downloaded) --------------------------------


Gpt2Size = Literal["tiny", "small", "mid", "large", "wide", "deep"]


def _gpt2_config(ctx: Ctx, size: Gpt2Size) -> Any:
    from transformers import GPT2Config

    # no dropout (SDPA's dropout inside a captured graph hit an illegal memory access on the
    # H200 with torch 2.11), no KV cache in training
    common: dict[str, Any] = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
                              "use_cache": False}
    if ctx.tiny:
        return GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16,
                          bos_token_id=0, eos_token_id=0, **common)
    if size == "large":  # GPT-2 small: 12 layers, 768 wide, 50257 tokens
        return GPT2Config(n_positions=1024, **common)
    if size == "small":
        return GPT2Config(n_layer=3, n_head=3, n_embd=192, vocab_size=4096, n_positions=128,
                          bos_token_id=0, eos_token_id=0, **common)
    if size == "wide":
        return GPT2Config(n_layer=2, n_head=6, n_embd=384, vocab_size=2048, n_positions=96,
                          bos_token_id=0, eos_token_id=0, **common)
    if size == "deep":
        return GPT2Config(n_layer=6, n_head=4, n_embd=128, vocab_size=1024, n_positions=64,
                          bos_token_id=0, eos_token_id=0, **common)
    if size == "mid":
        return GPT2Config(n_layer=4, n_head=4, n_embd=256, vocab_size=8192, n_positions=256,
                          bos_token_id=0, eos_token_id=0, **common)
    return GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1024, n_positions=64,
                      bos_token_id=0, eos_token_id=0, **common)


def _gpt2_shape(ctx: Ctx, size: Gpt2Size) -> tuple[int, int]:
    if ctx.tiny:
        return 1, 8
    return {"tiny": (1, 32), "small": (2, 128), "mid": (4, 256), "large": (8, 1024),
            "wide": (2, 96), "deep": (1, 64)}[size]


def _lm_loss(cache: bool) -> Callable[..., torch.Tensor]:
    """Next-token cross entropy under bf16 autocast (the graph needs the cast cache off)."""

    def lm_loss(model: torch.nn.Module, ids: torch.Tensor, _labels: torch.Tensor) -> torch.Tensor:
        device = "cuda" if ids.is_cuda else "cpu"
        with torch.autocast(device, dtype=torch.bfloat16, cache_enabled=cache):
            logits = model(input_ids=ids).logits
        vocab = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].reshape(-1, vocab).float(), ids[:, 1:].reshape(-1))

    return lm_loss


def _gpt2_variant(ctx: Ctx, size: Gpt2Size, fix: str) -> Variant:
    from transformers import GPT2LMHeadModel

    config = _gpt2_config(ctx, size)
    torch.manual_seed(0)
    model: Any = cast(Any, GPT2LMHeadModel(config)).to(ctx.device).train()
    batch, seq = _gpt2_shape(ctx, size)
    gen = torch.Generator(device="cpu").manual_seed(1)
    data = [(ids, ids) for ids in (torch.randint(0, config.vocab_size, (batch, seq), generator=gen)
                                   .to(ctx.device) for _ in range(4))]
    opt_kw: dict[str, Any] = {"lr": 1e-4}
    if fix == "cuda_graph":
        opt = torch.optim.AdamW(model.parameters(), capturable=True, **opt_kw)
        step = graphed_train_step(model, opt, data[0], ctx.device, loss_fn=_lm_loss(cache=False))
        return Variant(step, cycle_list(data), note="whole step (AdamW capturable) in one graph")
    if fix == "adamw_fused":
        opt_kw["fused"] = True
    if fix in ("compile", "compile_reduce_overhead"):
        mode = "reduce-overhead" if fix == "compile_reduce_overhead" else "default"
        model = torch.compile(model, mode=mode)
    opt = torch.optim.AdamW(model.parameters(), **opt_kw)
    step = train_step_fn(model, opt, ctx.device, non_blocking=True, loss_fn=_lm_loss(cache=True))
    return Variant(step, cycle_list(data))


def gpt2(size: Gpt2Size) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """GPT-2 training step, AdamW, bf16 autocast. Fixes: a whole-step CUDA graph, fused
    AdamW, and for the tiny model torch.compile(mode="reduce-overhead") (compiling the larger
    ones takes longer than the whole suite's device time)."""

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        fixes = ["baseline", "adamw_fused"] + (["cuda_graph"] if ctx.cuda else [])
        if ctx.cuda and size == "tiny":
            fixes.append("compile_reduce_overhead")
        return {f: partial(_gpt2_variant, ctx, size, f) for f in fixes}

    return build


# --- BERT (transformers, from a config) -----------------------------------------------------------

def _bert_variant(ctx: Ctx, fix: str) -> Variant:
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(num_hidden_layers=ctx.pick(4, 1), hidden_size=ctx.pick(256, 32),
                        num_attention_heads=4, intermediate_size=ctx.pick(1024, 64),
                        vocab_size=ctx.pick(8192, 64), max_position_embeddings=ctx.pick(256, 16),
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=4)
    torch.manual_seed(0)
    model: Any = cast(Any, BertForSequenceClassification(config)).to(ctx.device).train()
    gen = torch.Generator(device="cpu").manual_seed(4)
    batch, seq = ctx.pick(8, 2), ctx.pick(128, 8)
    data = [(torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(ctx.device),
             torch.randint(0, 4, (batch,), generator=gen).to(ctx.device)) for _ in range(4)]

    def loss_fn(m: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = m(input_ids=ids, labels=labels).loss
        return out

    if fix == "cuda_graph":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
        step = graphed_train_step(model, opt, data[0], ctx.device, loss_fn=loss_fn)
        return Variant(step, cycle_list(data), note="whole step (AdamW capturable) in one graph")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fix == "adamw_fused")
    return Variant(train_step_fn(model, opt, ctx.device, True, loss_fn), cycle_list(data))


def bert(ctx: Ctx) -> dict[str, VariantBuilder]:
    """BERT sequence classification from a config (4 layers, 256 wide), batch 8 x 128, fp32,
    AdamW. Fixes: fused AdamW, a whole-step CUDA graph."""
    fixes = ["baseline", "adamw_fused"] + (["cuda_graph"] if ctx.cuda else [])
    return {f: partial(_bert_variant, ctx, f) for f in fixes}


# --- a torch.compile'd model ----------------------------------------------------------------------

def _compiled_mlp(ctx: Ctx, fix: str) -> Variant:
    base = mlp(ctx, ctx.pick(512, 32), 6, out=10)
    mode = "reduce-overhead" if fix == "compile_reduce_overhead" else "default"
    model: Any = torch.compile(base, mode=mode)
    x = torch.randn(ctx.pick(64, 4), ctx.pick(512, 32), device=ctx.device)
    y = torch.randint(0, 10, (x.shape[0],), device=ctx.device)
    if fix == "cuda_graph":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
        step = graphed_train_step(model, opt, (x, y), ctx.device)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fix == "adamw_fused")
        step = train_step_fn(model, opt, ctx.device, non_blocking=True)
    return Variant(step, repeat((x, y)))


def compiled_mlp(ctx: Ctx) -> dict[str, VariantBuilder]:
    """An MLP under torch.compile (default mode) trained with AdamW at batch 64; fixes:
    mode="reduce-overhead", the whole compiled step in a CUDA graph, fused AdamW."""
    fixes = ["baseline", "adamw_fused"]
    if ctx.cuda:
        fixes += ["compile_reduce_overhead", "cuda_graph"]
    return {f: partial(_compiled_mlp, ctx, f) for f in fixes}


# --- CNN inference --------------------------------------------------------------------------------

def _infer(ctx: Ctx, batch: int, side: int, fix: str) -> Variant:
    channels = (3, 32, 64, 128, 256, 256) if not ctx.tiny else (3, 4, 8)
    model: Any = cnn(ctx, channels).eval()
    gen = torch.Generator(device="cpu").manual_seed(2)
    xs = [torch.randn(batch, 3, side, side, generator=gen).to(ctx.device) for _ in range(4)]
    if fix in ("channels_last_bf16",):
        model = model.to(memory_format=torch.channels_last)
        xs = [x.contiguous(memory_format=torch.channels_last) for x in xs]
    if fix in ("compile", "compile_reduce_overhead"):
        mode = "reduce-overhead" if fix.endswith("overhead") else "default"
        model = torch.compile(model, mode=mode)
    bf16 = fix in ("bf16_autocast", "channels_last_bf16")
    grad_off = torch.inference_mode if fix == "inference_mode" else torch.no_grad

    def forward(x: torch.Tensor) -> torch.Tensor:
        with grad_off(), torch.autocast(ctx.device, dtype=torch.bfloat16, enabled=bf16):
            out: torch.Tensor = model(x)
        return out

    call = graphed_forward(forward, xs[0]) if fix == "cuda_graph" else forward
    return Variant(call, cycle_list(xs))


def inference(batch: int, side: int, fixes: tuple[str, ...]
              ) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """CNN inference under no_grad on inputs already on the device."""

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        names = ("baseline",) + tuple(f for f in fixes if ctx.cuda or not _cuda_only(f))
        b, s = (1, 8) if ctx.tiny else (batch, side)
        return {f: partial(_infer, ctx, b, s, f) for f in names}

    return build


def _mlp_infer(ctx: Ctx, batch: int, fix: str) -> Variant:
    model = mlp(ctx, ctx.pick(512, 16), ctx.pick(8, 2)).eval()
    gen = torch.Generator(device="cpu").manual_seed(5)
    xs = [torch.randn(batch, ctx.pick(512, 16), generator=gen).to(ctx.device) for _ in range(4)]
    grad_off = torch.inference_mode if fix == "inference_mode" else torch.no_grad

    def forward(x: torch.Tensor) -> torch.Tensor:
        with grad_off():
            out: torch.Tensor = model(x)
        return out

    call = graphed_forward(forward, xs[0]) if fix == "cuda_graph" else forward
    return Variant(call, cycle_list(xs))


def mlp_inference(batch: int) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """An 8-layer 512-wide MLP under no_grad on inputs already on the device; fixes:
    inference_mode, a CUDA graph."""

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        names = ("baseline", "inference_mode") + (("cuda_graph",) if ctx.cuda else ())
        return {f: partial(_mlp_infer, ctx, batch, f) for f in names}

    return build


def _cuda_only(fix: str) -> bool:
    return fix in ("cuda_graph", "compile", "compile_reduce_overhead")


# --- the seed: x @ w + b in bf16 ------------------------------------------------------------------

def _seed(ctx: Ctx, n: int, fix: str) -> Variant:
    gen = torch.Generator(device="cpu").manual_seed(0)
    x, w = (torch.randn(n, n, generator=gen, dtype=torch.bfloat16).to(ctx.device)
            for _ in range(2))
    b = torch.randn(n, generator=gen, dtype=torch.bfloat16).to(ctx.device)

    def matmul_add(inp: torch.Tensor) -> torch.Tensor:
        return inp @ w + b

    def addmm(inp: torch.Tensor) -> torch.Tensor:
        return torch.addmm(b, inp, w)

    call: Callable[[torch.Tensor], Any] = matmul_add
    if fix == "addmm":
        call = addmm
    elif fix in ("compile", "compile_reduce_overhead"):
        mode = "reduce-overhead" if fix.endswith("overhead") else "default"
        call = torch.compile(matmul_add, mode=mode)
    elif fix == "cuda_graph":
        call = graphed_forward(matmul_add, x)
    return Variant(call, repeat(x))


def seed(n: int, fixes: tuple[str, ...]) -> Callable[[Ctx], dict[str, VariantBuilder]]:
    """The seed program: ``for _ in range(steps): matmul_add(x)``, bf16."""

    def build(ctx: Ctx) -> dict[str, VariantBuilder]:
        size = 8 if ctx.tiny else n
        names = ("baseline",) + tuple(f for f in fixes if ctx.cuda or not _cuda_only(f))
        return {f: partial(_seed, ctx, size, f) for f in names}

    return build


__all__ = ["bert", "classify_loss", "compiled_mlp", "gpt2", "inference", "mlp_inference",
           "seed"]
