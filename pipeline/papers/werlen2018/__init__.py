"""werlen2018: Self-Attentive Residual Decoder for Neural Machine Translation (Miculicich Werlen et al., NAACL 2018)."""
from pipeline.papers.werlen2018 import analyses, figures, layouts  # noqa: F401  (registers analyses and layouts)
