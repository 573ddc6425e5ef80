"""The trainer tests' shared fixture: `toy`, the copy-task data that tests/train_helpers.py's Aligned model learns."""
import random

import pytest

from pipeline.data.synthetic import synthetic_pairs
from pipeline.data.vocab import Vocab


@pytest.fixture(scope="module")
def toy():
    """Copy-task training pairs and a validation set with 40% of the target tokens replaced (so that the
    validation NLL first falls, then rises as the model grows confident)."""
    pairs = synthetic_pairs("copy", 200, seed=1)
    vocab = Vocab.build([s for s, _ in pairs])
    rng = random.Random(0)

    def noisy(ids):
        return [i if rng.random() < 0.6 else rng.randrange(4, len(vocab)) for i in ids]

    valid_pairs = synthetic_pairs("copy", 40, seed=2)
    return {"train": ([vocab.encode(s) for s, _ in pairs], [vocab.encode(t) for _, t in pairs]),
            "valid": ([vocab.encode(s) for s, _ in valid_pairs], [noisy(vocab.encode(t)) for _, t in valid_pairs]),
            "V": len(vocab), "meta": {"model": {"encoder": "toy", "decoder": "toy"}, "src_vocab_size": len(vocab),
                                      "tgt_vocab_size": len(vocab)}}
