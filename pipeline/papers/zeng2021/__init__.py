"""zeng2021: Recurrent Attention for Neural Machine Translation (Zeng et al., EMNLP 2021): numbers and layouts."""
from pipeline.papers.zeng2021 import analyses, attention_figures, figures, layouts  # noqa: F401  (registers them)
