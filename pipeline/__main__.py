"""Entry point: `python -m pipeline <step>`."""
import sys

from pipeline.cli import main

sys.exit(main())
