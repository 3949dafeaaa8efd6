"""Train a tiny BERT classifier with the Hugging Face Trainer, on a GPU in fp16 with the default
(fused) AdamW.

The model is built from a config and the data are synthetic token ids: nothing is downloaded.
"""

import argparse

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class TokenDataset(Dataset):
    def __init__(self, num_samples, seq_len=16, vocab=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, vocab, (num_samples, seq_len), generator=g)
        self.labels = (self.ids[:, 0] > vocab // 2).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {"input_ids": self.ids[idx], "labels": self.labels[idx]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--output-dir", default="hf_trainer_out")
    cli = parser.parse_args()
    config = BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=cli.output_dir,
        per_device_train_batch_size=8,
        learning_rate=cli.lr,
        num_train_epochs=1,
        fp16=True,
        logging_steps=2,
        save_strategy="no",
        report_to="none",
        seed=42,
    )
    trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(128))
    trainer.train()


if __name__ == "__main__":
    main()
