"""zhang2018: Refining Source Representations with Relation Networks for Neural Machine Translation (COLING 2018)."""
from pipeline.papers.zhang2018 import analyses  # noqa: F401  (registers its analysis kinds; heavy imports stay lazy)

# the modules that register its layouts, imported by the table step only (pipeline/report/layouts.py: matplotlib)
LAYOUT_MODULES = ('layouts', 'figures')
