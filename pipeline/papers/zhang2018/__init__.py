"""zhang2018: Refining Source Representations with Relation Networks for Neural Machine Translation (COLING 2018)."""
from pipeline.papers.zhang2018 import analyses, figures, layouts  # noqa: F401  (registers analyses and layouts)
