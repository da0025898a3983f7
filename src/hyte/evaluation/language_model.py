"""Has a from-scratch model learned language? Its held-out masked-LM loss beside the unigram baseline.

A masked-LM that predicts every masked token from token frequencies alone reaches the unigram cross-entropy; a model
whose held-out loss sits there has learned nothing a retrieval comparison could use (issue 26: both twins ended at
7.1-7.5 nats against a unigram level of 7.02). :func:`masked_lm_gate` measures both on the same masked positions of
held-out text, so the from-scratch comparison is reported only for models that cleared the baseline by a margin.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

GATE_MARGIN_NATS = 1.5


def masked_lm_gate(model, tokenizer, train_texts: Sequence[str], heldout_texts: Sequence[str], *,
                   margin: float = GATE_MARGIN_NATS, max_length: int = 128, mlm_probability: float = 0.15,
                   max_texts: int = 2000, batch_size: int = 64, seed: int = 0) -> dict:
    """Held-out masked-LM loss of ``model`` and the unigram cross-entropy of the same masked tokens, in nats.

    The unigram distribution is counted on ``train_texts`` (the model's own training corpus, special tokens left out,
    add-one smoothing over the vocabulary so a token never seen in training costs a finite amount). Up to
    ``max_texts`` held-out texts (a seeded sample) are masked once with ``seed`` by transformers' collator: two
    models with the same tokenizer are scored on identical positions. ``passed``: loss ≤ unigram − ``margin``.
    """
    import torch
    from transformers import DataCollatorForLanguageModeling

    heldout = [text for text in heldout_texts if text.strip()]
    if not heldout:
        raise ValueError("masked_lm_gate needs held-out texts")
    if len(heldout) > max_texts:
        heldout = random.Random(seed).sample(heldout, max_texts)
    vocab_size = len(tokenizer)
    counts = torch.ones(vocab_size, dtype=torch.float64)  # add-one smoothing
    for start in range(0, len(train_texts), 1000):
        encoded = tokenizer(list(train_texts[start:start + 1000]), add_special_tokens=False, truncation=True,
                            max_length=max_length)["input_ids"]
        for ids in encoded:
            counts += torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=vocab_size).double()
    log_prior = (counts / counts.sum()).log()

    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, seed=seed)
    model_nats = unigram_nats = 0.0
    masked = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(heldout), batch_size):
                features = [tokenizer(text, truncation=True, max_length=max_length)
                            for text in heldout[start:start + batch_size]]
                batch = collator(features)
                labels = batch["labels"]
                n = int((labels != -100).sum())
                if n == 0:
                    continue
                loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             labels=labels).loss
                model_nats += float(loss) * n  # the loss is a mean over this batch's masked tokens
                unigram_nats += float(-log_prior[labels[labels != -100]].sum())
                masked += n
    finally:
        model.train(was_training)
    if masked == 0:
        raise ValueError("no token of the held-out texts was masked; give more or longer texts")
    mlm_loss, unigram = model_nats / masked, unigram_nats / masked
    if not math.isfinite(mlm_loss):
        raise FloatingPointError(f"the held-out masked-LM loss is {mlm_loss}")
    return {"mlm_loss": mlm_loss, "unigram_cross_entropy": unigram, "margin": margin,
            "passed": mlm_loss <= unigram - margin, "num_masked": masked, "num_texts": len(heldout)}
