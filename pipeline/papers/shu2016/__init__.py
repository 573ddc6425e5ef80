"""shu2016: Residual Stacking of RNNs for Neural Machine Translation (Shu and Miura, WAT 2016)."""
from pipeline.papers.shu2016 import analyses  # noqa: F401  (registers its analysis kinds; heavy imports stay lazy)

# the modules that register its layouts, imported by the table step only (pipeline/report/layouts.py: matplotlib)
LAYOUT_MODULES = ('layouts', 'figures')
