"""A WordPiece vocabulary trained on a from-scratch model's own masked-LM corpus (the ``tokenizers`` library).

The from-scratch models (HyTE-FH and its twin EucBERT) are small and see little text; with the bundled MiniLM's
30,522-entry vocabulary most rows of their embedding and prediction matrices are never trained, and the masked-LM
loss stays at the unigram level. A vocabulary of a few thousand pieces learned from the same corpus lets both twins
spend their steps on language. Both twins get the same vocabulary, saved with each model as its tokenizer.

The saved folder is a ``BertTokenizerFast`` (``AutoTokenizer.from_pretrained(folder)``: BERT's normalisation and
pre-tokenisation, ``[CLS] ... [SEP]`` around each text) plus ``vocabulary.json``, which records the corpus digest
and the requested size so that a rerun reuses the folder only when both match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..artifacts import claim_folder
from ..identity import differences, texts_digest

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
RECORD = "vocabulary.json"


def train_wordpiece(texts: Sequence[str], output_dir: str | Path, vocab_size: int = 4096,
                    min_frequency: int = 2, lowercase: bool = True) -> Path:
    """Train a WordPiece vocabulary of at most ``vocab_size`` entries on ``texts`` and save it as a tokenizer folder.

    A folder already holding the vocabulary of the same texts and settings is reused as it is (the corpus digest and
    the settings are compared); a folder holding anything else is refused, never replaced. Returns the folder.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    from ..io import atomic_directory

    texts = list(texts)
    if not any(text.strip() for text in texts):
        raise ValueError("train_wordpiece needs at least one non-empty text")
    if vocab_size <= len(SPECIAL_TOKENS) + 26:
        raise ValueError(f"vocab_size must exceed {len(SPECIAL_TOKENS) + 26} (the special tokens and an alphabet); "
                         f"got {vocab_size}")
    output_dir = claim_folder(output_dir, option="output_dir", remedy="a folder of its own")
    record = {"corpus_sha256": texts_digest(texts), "num_texts": len(texts), "vocab_size": vocab_size,
              "min_frequency": min_frequency, "lowercase": lowercase}
    record_path = output_dir / RECORD
    if record_path.is_file():
        saved = json.loads(record_path.read_text())
        changed = differences({key: saved.get(key) for key in record}, record)
        if not changed:
            return output_dir
        raise FileExistsError(f"{output_dir} holds a vocabulary of other texts or settings ({RECORD}: "
                              f"{'; '.join(changed)}); choose another folder or delete it")

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=list(SPECIAL_TOKENS))
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # The trainer numbers the "##" pieces in hash-map order, which changes from call to call (tokenizers issue 1794),
    # so a seeded model would start from other embedding rows. WordPiece looks pieces up by string only: renumbering
    # them (special tokens first, then sorted) changes nothing else. (That order also breaks ties between equally
    # frequent merges, so a small, repetitive corpus can still give other pieces: keep the saved folder.)
    pieces = [*SPECIAL_TOKENS, *sorted(set(tokenizer.get_vocab()) - set(SPECIAL_TOKENS))]
    tokenizer.model = models.WordPiece({piece: i for i, piece in enumerate(pieces)}, unk_token="[UNK]")
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = BertTokenizerFast(tokenizer_object=tokenizer, do_lower_case=lowercase, unk_token="[UNK]",
                             pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")

    def write(staging: Path) -> None:
        fast.save_pretrained(staging)
        (staging / RECORD).write_text(json.dumps({**record, "trained_size": len(fast)}, indent=2) + "\n")

    atomic_directory(output_dir, write, marker=RECORD, what="vocabulary folder")
    return output_dir
