"""The Trainer quick start (a tiny BERT built from its config, no download), one line added.

    python hf_trainer.py OUT_DIR
"""

import sys

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from autoprof.integrations.transformers import AutoprofCallback


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int = 256, length: int = 16) -> None:
        gen = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 100, (n, length), generator=gen)
        self.labels = torch.randint(0, 2, (n,), generator=gen)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def main(out_dir: str) -> None:
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=2)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(output_dir=f"{out_dir}/hf", max_steps=12,
                             per_device_train_batch_size=8, report_to="none", use_cpu=True,
                             save_strategy="no", logging_steps=100, disable_tqdm=True)
    callback = AutoprofCallback(out_dir=out_dir)  # the line added
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[callback])
    trainer.train()
    print(f"RUN_DIR={callback.run_dir}")


if __name__ == "__main__":
    main(sys.argv[1])
