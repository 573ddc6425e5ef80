"""zeng2021: Recurrent Attention for Neural Machine Translation (Zeng et al., EMNLP 2021): numbers and layouts."""
from pipeline.papers.zeng2021 import analyses  # noqa: F401  (registers its analysis kinds; heavy imports stay lazy)

# the modules that register its layouts, imported by the table step only (pipeline/report/layouts.py: matplotlib)
LAYOUT_MODULES = ('layouts', 'figures', 'attention_figures')
