"""What zhang2018 states about preparing its corpora (sections 5.1-5.2), for the params to be set from (not applied
here)."""
from __future__ import annotations

from pipeline.data.registry import PreprocessFacts

# zhang2018 5.1-5.2: sentences up to 50 tokens on both sides, 30K vocabularies; NIST: words on both sides (no BPE
# named), four references; WMT17: 8K BPE merges on the target side, source words; WMT16 (Bastings et al. 2017): 16K
# on the target side, 4,500,966 pairs of which 4,173,550 are left after dropping those over 50 tokens.
_Z18 = "zhang2018 sections 5.1-5.2"
ZHANG2018_PREPROCESS: dict[str, PreprocessFacts] = {
    "ldc-zh-en": PreprocessFacts(50, 0, False, references=4, source=_Z18, bpe_sides=(), vocab_size=30000,
                                 train_pairs=1_250_000, kept_pairs=1_110_000),
    "wmt17pp-en-de": PreprocessFacts(50, 8000, False, source=_Z18, bpe_sides=("tgt",), vocab_size=30000,
                                     train_pairs=5_600_000),
    "wmt16b-en-de": PreprocessFacts(50, 16000, False, source=_Z18, bpe_sides=("tgt",), vocab_size=30000,
                                    train_pairs=4_500_966, kept_pairs=4_173_550),
}
