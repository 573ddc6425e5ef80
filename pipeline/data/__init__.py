"""Corpora: registry, download, cleaning, tokenization, subwords, vocabularies, batching."""
