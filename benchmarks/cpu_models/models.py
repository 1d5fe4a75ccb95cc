"""Third-party CPU models built from configs (nothing downloaded), each as one training or
inference step a user would decorate.

| model | built from | step |
| --- | --- | --- |
| gpt2_train | transformers GPT2LMHeadModel, 2 layers, 128 wide | LM loss, backward, AdamW |
| gpt2_eval | the same model | forward under torch.no_grad |
| bert_train | transformers BertForMaskedLM, 2 layers, 128 wide | MLM loss, backward, AdamW |
| vit_train | transformers ViTForImageClassification, 32x32 images | train step, AdamW |
| t5_train | transformers T5ForConditionalGeneration, 1+1 layers | train step, AdamW |
| cnn_train | a ResNet-style CNN from torch.nn (3 residual blocks) | train step, SGD |
| lstm_train | torch.nn.LSTM (2 layers) + a linear head | train step, Adam |

Every config is tiny so that a few recorded steps stay well under 1 MB of gzipped trace.
Dropout is left at the library defaults: the step is what a user would run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

SEED = 0


@dataclass(frozen=True)
class Model:
    """One recorded case: ``build()`` returns the step function and its argument."""

    name: str
    kind: str  # what the step does, for the record file
    build: Callable[[], tuple[Callable[[Any], Any], Any]]


def _train_step(model: nn.Module, opt: torch.optim.Optimizer,
                loss_of: Callable[[nn.Module, Any], torch.Tensor]) -> Callable[[Any], float]:
    model.train()

    def step(batch: Any) -> float:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model, batch)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        return float(loss.detach())

    return step


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1024, n_positions=64,
                     bos_token_id=0, eos_token_id=0, use_cache=False)
    return GPT2LMHeadModel(cfg)


def _ids(vocab: int, batch: int = 2, seq: int = 32) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(SEED))


def gpt2_train() -> tuple[Callable[[Any], Any], Any]:
    model = _gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return _train_step(model, opt, lambda m, ids: m(input_ids=ids, labels=ids).loss), _ids(1024)


def gpt2_eval() -> tuple[Callable[[Any], Any], Any]:
    model = _gpt2().eval()

    def step(ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids=ids).logits  # type: ignore[no-any-return]

    return step, _ids(1024)


def bert_train() -> tuple[Callable[[Any], Any], Any]:
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(vocab_size=1024, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=512, max_position_embeddings=64)
    model = BertForMaskedLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return _train_step(model, opt, lambda m, ids: m(input_ids=ids, labels=ids).loss), _ids(1024)


def vit_train() -> tuple[Callable[[Any], Any], Any]:
    from transformers import ViTConfig, ViTForImageClassification

    labels: dict[str, Any] = {"num_labels": 10}  # a PretrainedConfig keyword
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                    num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    **labels)
    model = ViTForImageClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(SEED)
    batch = (torch.randn(4, 3, 32, 32, generator=gen), torch.randint(0, 10, (4,), generator=gen))
    return _train_step(model, opt, lambda m, b: m(pixel_values=b[0], labels=b[1]).loss), batch


def t5_train() -> tuple[Callable[[Any], Any], Any]:
    from transformers import T5Config, T5ForConditionalGeneration

    start: dict[str, Any] = {"decoder_start_token_id": 0}  # a PretrainedConfig keyword
    cfg = T5Config(vocab_size=512, d_model=64, d_kv=16, d_ff=128, num_layers=1,
                   num_decoder_layers=1, num_heads=4, **start)
    model = T5ForConditionalGeneration(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch = (_ids(512, seq=16), _ids(512, seq=8))
    return _train_step(model, opt,
                       lambda m, b: m(input_ids=b[0], labels=b[1]).loss), batch


class _Block(nn.Module):
    """A ResNet basic block: conv-bn-relu-conv-bn plus the (projected) input."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.skip(x))


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         _Block(16, 16, 1), _Block(16, 32, 2), _Block(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def cnn_train() -> tuple[Callable[[Any], Any], Any]:
    model = _cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(SEED)
    batch = (torch.randn(8, 3, 32, 32, generator=gen), torch.randint(0, 10, (8,), generator=gen))
    loss = nn.CrossEntropyLoss()
    return _train_step(model, opt, lambda m, b: loss(m(b[0]), b[1])), batch


class _Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(500, 32)
        self.lstm = nn.LSTM(32, 64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)  # type: ignore[no-any-return]


def lstm_train() -> tuple[Callable[[Any], Any], Any]:
    model = _Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(SEED)
    batch = (torch.randint(0, 500, (4, 24), generator=gen),
             torch.randint(0, 8, (4, 24), generator=gen))
    loss = nn.CrossEntropyLoss()
    return _train_step(model, opt,
                       lambda m, b: loss(m(b[0]).reshape(-1, 8), b[1].reshape(-1))), batch


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("gpt2_train", "transformers GPT-2 train step", gpt2_train),
    Model("gpt2_eval", "transformers GPT-2 inference", gpt2_eval),
    Model("bert_train", "transformers BERT masked-LM train step", bert_train),
    Model("vit_train", "transformers ViT image classification train step", vit_train),
    Model("t5_train", "transformers T5 seq2seq train step", t5_train),
    Model("cnn_train", "torch.nn ResNet-style CNN train step", cnn_train),
    Model("lstm_train", "torch.nn LSTM tagger train step", lstm_train),
)}
