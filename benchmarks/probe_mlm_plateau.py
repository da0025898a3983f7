"""Probe (issue 26): does a from-scratch twin leave the unigram plateau, and do its embeddings get gradient?

A short masked-LM run of the from-scratch recipe's tiny HyTE-FH or EucBERT (hyte.training.recipes.from_scratch: its
shape, vocabulary size, batch 32, lr 5e-4 with warmup and cosine decay, masking 0.15, texts up to 64 tokens), with a
plain AdamW loop instead of the Trainer so that it can print, every --log steps, the held-out masked-LM loss beside
the unigram cross-entropy of the same masked tokens and the embeddings' share of the gradient norm.

    python benchmarks/probe_mlm_plateau.py --model hyte-fh --steps 2000                       # the recipe
    python benchmarks/probe_mlm_plateau.py --model hyte-fh --steps 600 --no-residual-scale    # as it was
    python benchmarks/probe_mlm_plateau.py --model eucbert --steps 2000

Measured on 2026-12-04 (one shared CPU core, seed 0; held-out = the first 1,024 of 2,000 texts kept out of training):
at 2,000 steps HyTE-FH 5.88 nats and EucBERT 5.79 (unigram 7.00); HyTE-FH without the residual rescale 6.94 at 600
steps, flat since step 400, with an embedding gradient share of 1.6-2.9e-4 (with the rescale 0.15-0.57, EucBERT
0.42-0.74). Not a recorded result: the gated comparison is benchmarks/run_from_scratch.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
import time

import torch
from transformers import AutoTokenizer, DataCollatorForLanguageModeling

from hyte.training.data import mlm_texts
from hyte.training.models import build_model
from hyte.training.recipes import SCRATCH_LEARNING_RATES, SCRATCH_SIZES, from_scratch
from hyte.training.vocabulary import train_wordpiece

HELD_OUT = 2000  # texts kept out of training; the first 1,024 are scored
MAX_LENGTH = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["hyte-fh", "eucbert"], default="hyte-fh")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--log", type=int, default=100, help="print every N steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-residual-scale", action="store_true",
                        help="HyTE-FH without the reference code's 4 sqrt(d) residual rescale (the recipe before)")
    parser.add_argument("--vocabulary", default=None, help="a tokenizer folder to reuse (default: trained into a "
                                                          "temporary folder, ~1 minute)")
    args = parser.parse_args()

    recipe = from_scratch(args.model, "mlm", "unused", seed=args.seed, size="tiny")
    texts = mlm_texts(recipe.data, seed=args.seed)
    vocabulary = args.vocabulary or str(train_wordpiece(texts, tempfile.mkdtemp() + "/vocabulary",
                                                        vocab_size=SCRATCH_SIZES["tiny"]["vocab_size"]))
    spec = from_scratch(args.model, "mlm", "unused", seed=args.seed, size="tiny", tokenizer=vocabulary).model
    if args.no_residual_scale:
        spec = dataclasses.replace(spec, options={key: value for key, value in spec.options.items()
                                                  if key != "residual_space_scale"})
    torch.manual_seed(args.seed)
    built = build_model(spec, for_mlm=True)
    model, tokenizer = built.model, AutoTokenizer.from_pretrained(vocabulary)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=recipe.mlm.mlm_probability)
    held_out, train = texts[:HELD_OUT], texts[HELD_OUT:]

    def batch(rows: list[str]) -> dict:
        return collator([tokenizer(text, truncation=True, max_length=MAX_LENGTH) for text in rows])

    # Unigram log-probabilities from training tokens (+0.1 smoothing so that unseen tokens stay finite).
    counts = torch.zeros(len(tokenizer))
    for text in train[:20000]:
        ids = torch.tensor(tokenizer(text, truncation=True, max_length=MAX_LENGTH)["input_ids"])
        counts.index_add_(0, ids, torch.ones(len(ids)))
    unigram = torch.log((counts + 0.1) / (counts + 0.1).sum())
    torch.manual_seed(args.seed + 1)  # the same masks for every model and step
    held_out_batches = [batch(held_out[start:start + 64]) for start in range(0, 1024, 64)]

    def held_out_losses() -> tuple[float, float]:
        model.eval()
        total = unigram_total = count = 0.0
        with torch.no_grad():
            for inputs in held_out_batches:
                masked = inputs["labels"][inputs["labels"] != -100]
                total += model(**inputs).loss.item() * len(masked)
                unigram_total -= unigram[masked].sum().item()
                count += len(masked)
        model.train()
        return total / count, unigram_total / count

    batch_size = recipe.training.per_device_train_batch_size
    optimizer = torch.optim.AdamW(model.parameters(), lr=SCRATCH_LEARNING_RATES["mlm"], weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, max(0, step - warmup) / max(1, args.steps - warmup)))))
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(args.seed))
    embeddings = model.get_input_embeddings().weight
    losses, start = [], time.time()
    for step in range(1, args.steps + 1):
        rows = order[(step - 1) * batch_size % (len(train) - batch_size):][:batch_size]
        loss = model(**batch([train[i] for i in rows.tolist()])).loss
        optimizer.zero_grad()
        loss.backward()
        gradient_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf)  # measured, not clipped
        share = (embeddings.grad.norm() / gradient_norm).item()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % args.log == 0:
            held, unigram_level = held_out_losses()
            print(f"step {step}: train {sum(losses) / len(losses):.3f}  held-out {held:.3f}  unigram "
                  f"{unigram_level:.3f}  embedding gradient share {share:.2e}  ({time.time() - start:.0f} s)",
                  flush=True)
            losses = []


if __name__ == "__main__":
    main()
