"""hao2019: Modeling Recurrence for Transformer (Hao et al., NAACL 2019): reported numbers, layouts and analyses."""
from pipeline.papers.hao2019 import analyses, layouts  # noqa: F401  (registers the analyses and layouts)
