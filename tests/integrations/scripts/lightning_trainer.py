"""Lightning's quick start (the LitAutoEncoder, on random images instead of MNIST), one line
added.

    python lightning_trainer.py OUT_DIR [DEVICES [BATCHES]]
"""

import sys

import lightning as L
import torch
from torch import nn, optim, utils

from autoprof.integrations.lightning import AutoprofCallback

encoder = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 3))
decoder = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 28 * 28))


class LitAutoEncoder(L.LightningModule):
    def __init__(self, encoder: nn.Module, decoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def training_step(self, batch, batch_idx):
        x, _ = batch
        x = x.view(x.size(0), -1)
        z = self.encoder(x)
        x_hat = self.decoder(z)
        loss = nn.functional.mse_loss(x_hat, x)
        return loss

    def configure_optimizers(self):
        return optim.Adam(self.parameters(), lr=1e-3)


def main(out_dir: str, devices: int, batches: int = 12) -> None:
    autoencoder = LitAutoEncoder(encoder, decoder)
    images = torch.rand(640, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    dataset = utils.data.TensorDataset(images, torch.zeros(640))
    train_loader = utils.data.DataLoader(dataset, batch_size=32)
    callback = AutoprofCallback(out_dir=out_dir)  # the line added
    trainer = L.Trainer(limit_train_batches=batches, max_epochs=1, accelerator="cpu",
                        devices=devices, strategy="ddp" if devices > 1 else "auto",
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[callback])
    trainer.fit(model=autoencoder, train_dataloaders=train_loader)
    print(f"RUN_DIR={callback.run_dir}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1,
         int(sys.argv[3]) if len(sys.argv) > 3 else 12)
