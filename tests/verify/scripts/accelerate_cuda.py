"""Train a small text classifier with Hugging Face Accelerate, on a GPU in fp16.

Laid out like accelerate's nlp_example.py: one training function, the objects handed to
``accelerator.prepare``, ``accelerator.backward`` and ``gather_for_metrics``. The data are
synthetic token ids, so nothing is downloaded. Its loader shuffles, which Accelerate seeds
differently on XLA than on the GPU path (see bootstrap/_tpu_migrate_verify/frameworks.py).
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from accelerate import Accelerator
from accelerate.utils import set_seed


class TokenDataset(Dataset):
    def __init__(self, num_samples, seq_len=16, vocab=64, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, vocab, (num_samples, seq_len), generator=g)
        self.labels = (self.ids[:, 0] > vocab // 2).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {"input_ids": self.ids[idx], "labels": self.labels[idx]}


class BagOfWords(nn.Module):
    def __init__(self, vocab=64, dim=32, num_labels=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, num_labels))

    def forward(self, input_ids):
        return self.head(self.embed(input_ids).mean(dim=1))


def get_dataloaders(batch_size):
    train_loader = DataLoader(
        TokenDataset(256), shuffle=True, batch_size=batch_size, pin_memory=True
    )
    eval_loader = DataLoader(TokenDataset(64, seed=1), batch_size=batch_size)
    return train_loader, eval_loader


def training_function(args):
    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)
    set_seed(args.seed)
    train_dataloader, eval_dataloader = get_dataloaders(args.batch_size)

    model = BagOfWords().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )

    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            logits = model(batch["input_ids"])
            loss = F.cross_entropy(logits, batch["labels"])
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
            if step % 4 == 0:
                accelerator.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

        model.eval()
        correct = total = 0
        for batch in eval_dataloader:
            with torch.no_grad():
                predictions = model(batch["input_ids"]).argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            correct += (predictions == references).sum().item()
            total += references.numel()
        accelerator.print(f"epoch {epoch}: accuracy {correct / total:.3f}")

    if torch.cuda.is_available():
        accelerator.print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")


def main():
    parser = argparse.ArgumentParser(description="Accelerate text classification example.")
    parser.add_argument(
        "--mixed_precision",
        type=str,
        default="fp16",
        choices=["no", "fp16", "bf16", "fp8"],
        help="Whether to use mixed precision.",
    )
    parser.add_argument("--cpu", action="store_true", help="Train on the CPU only.")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    training_function(args)


if __name__ == "__main__":
    main()
