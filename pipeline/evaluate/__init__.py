"""Scoring: corpus BLEU (sacrebleu) and paired significance tests."""
