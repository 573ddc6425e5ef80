"""werlen2018: Self-Attentive Residual Decoder for Neural Machine Translation (Miculicich Werlen et al., NAACL 2018)."""
from pipeline.papers.werlen2018 import analyses  # noqa: F401  (registers its analysis kinds; heavy imports stay lazy)

# the modules that register its layouts, imported by the table step only (pipeline/report/layouts.py: matplotlib)
LAYOUT_MODULES = ('layouts', 'figures')
