"""shu2016: Residual Stacking of RNNs for Neural Machine Translation (Shu and Miura, WAT 2016)."""
from pipeline.papers.shu2016 import analyses, figures, layouts  # noqa: F401  (registers analyses and layouts)
