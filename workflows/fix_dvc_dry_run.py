"""Work around DVC bug #9818 in the installed DVC (3.67.1): `dvc repro --dry` fails with "No such file or
directory" on a stage whose dependency an upstream stage has not built yet (e.g. in a fresh clone), because the
run-cache lookup hashes every dependency before checking that it exists. The fix makes that lookup treat a
missing dependency as "not in the run cache" (what a real run finds anyway). Idempotent; fails loudly if the
installed DVC does not look as expected. Run by `make venv`."""
from __future__ import annotations

import sys
from pathlib import Path

import dvc
import dvc.stage.cache as cache

EXPECTED_VERSION = "3.67.1"
BEFORE = 'dep.protocol == "local" and dep.def_path and dep.get_hash()'
AFTER = 'dep.protocol == "local" and dep.def_path and dep.exists and dep.get_hash()'


def main() -> int:
    path = Path(cache.__file__)
    text = path.read_text(encoding="utf-8")
    if AFTER in text:
        return 0
    if dvc.__version__ != EXPECTED_VERSION or text.count(BEFORE) != 1:
        print(f"fix_dvc_dry_run: DVC {dvc.__version__} at {path} is not the expected {EXPECTED_VERSION}; "
              "check whether DVC bug #9818 is fixed there and update this script", file=sys.stderr)
        return 1
    path.write_text(text.replace(BEFORE, AFTER), encoding="utf-8")
    print(f"fix_dvc_dry_run: patched {path} (DVC bug #9818: dry runs with not-yet-built dependencies)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
