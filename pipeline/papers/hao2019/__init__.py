"""hao2019: Modeling Recurrence for Transformer (Hao et al., NAACL 2019): reported numbers, layouts and analyses."""
from pipeline.papers.hao2019 import analyses  # noqa: F401  (registers its analysis kinds; heavy imports stay lazy)

# the modules that register its layouts, imported by the table step only (pipeline/report/layouts.py: matplotlib)
LAYOUT_MODULES = ('layouts',)
