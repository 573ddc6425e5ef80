"""Scoring: the metrics registry (sacreBLEU, tokenised BLEU, ROUGE), significance tests, analyses."""
