"""hao2019: Modeling Recurrence for Transformer (Hao et al., NAACL 2019): reported numbers and layouts."""
from pipeline.papers.hao2019 import layouts  # noqa: F401  (registers the layouts)
