"""Which files each step, model and table layout runs, remembered between Snakemake starts.

Finding them reads the code of every step (pipeline/code_deps.py parses each module it reaches) and imports every
model module (torch) and layout module (matplotlib): 2.8 s of a 4.7 s Snakemake start, at every start, and `dvc
repro` starts Snakemake once per stage, a Slurm job once more. The answers depend on the pipeline's own code only, so
they are kept under the digest of every source under pipeline/, one file per digest in the user's cache (shared by
every working copy, like pipeline/fixed_gemm.py's compiled kernels): an edit there starts a new file, and a missing,
stale or unreadable file is only a slower start.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from pipeline.code_deps import PACKAGE
from pipeline.fileio import write_json
from pipeline.fixed_gemm import cache_dir

SOURCES = ("*.py", "*.c", "*.cpp")
KEEP = 64  # the source states whose facts are kept (some 30 KB each); the least recently written go first


def sources_digest(package: Path = PACKAGE) -> str:
    """sha256 over every source file under the package (pipeline/), names and bytes (milliseconds)."""
    digest = hashlib.sha256()
    for path in sorted(p for pattern in SOURCES for p in package.rglob(pattern)):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class CodeFacts:
    """{key: list of repository files} kept in `folder` for the current sources; `files(key, find)` answers from it or
    calls find() and writes the answer through (atomically, with what other processes wrote meanwhile)."""

    def __init__(self, folder: str | Path | None = None):
        self.sources = sources_digest()
        self.path = Path(folder or cache_dir()) / f"code-facts-{self.sources[:16]}.json"
        self.facts = self._kept()
        self._pruned = False  # the cache is pruned at this process's first write only

    def _kept(self) -> dict[str, list[str]]:
        """The facts the file holds for the current sources ({} if none: missing, stale or not ours)."""
        try:
            kept = json.loads(self.path.read_text(encoding="utf-8"))
            if kept.get("sources") == self.sources and isinstance(kept.get("facts"), dict):
                return kept["facts"]
        except (OSError, ValueError, AttributeError):
            pass
        return {}

    def files(self, key: str, find: Callable[[], list[str]]) -> list[str]:
        """The kept answer for `key`, or find()'s, written through."""
        if key not in self.facts:
            self.facts = {**self._kept(), **self.facts, key: sorted(find())}  # with what other processes found
            try:
                write_json(self.path, {"sources": self.sources, "facts": self.facts})
                if not self._pruned:
                    self._prune()
            except OSError:  # a cache it cannot write, or a file another process removed: found again next time
                pass
        return list(self.facts[key])

    def _prune(self) -> None:
        """Keep the KEEP most recently written facts files (other source states) in the cache folder."""
        self._pruned = True
        kept = sorted(self.path.parent.glob("code-facts-*.json"), key=lambda path: path.stat().st_mtime)
        for old in kept[:-KEEP]:
            old.unlink(missing_ok=True)

    def step_files(self, step: str) -> list[str]:
        """pipeline.steps.step_files([step]): the files a step's code runs."""
        def find():
            from pipeline.steps import step_files
            return step_files([step])
        return self.files(f"step {step}", find)

    def model_files(self, spec: dict) -> list[str]:
        """pipeline.models.registry.model_code(spec): the files a model of this spec is built from."""
        def find():
            from pipeline.models.registry import model_code
            return model_code(spec)
        return self.files(f"model {spec['encoder']} {spec['decoder']}", find)

    def weights_files(self, spec: dict, fixed_products: bool) -> list[str]:
        """pipeline.steps.training.weights_files(spec, fixed_products): the trainer's and the model's files."""
        def find():
            from pipeline.steps.training import weights_files
            return weights_files(spec, fixed_products)
        kernel = " fixed-products" if fixed_products else ""
        return self.files(f"weights {spec['encoder']} {spec['decoder']}{kernel}", find)

    def layout_files(self, layout: str) -> list[str]:
        """The files a table's layout function depends on (pipeline/code_deps.py)."""
        def find():
            from pipeline.code_deps import code_files
            from pipeline.report.layouts import load_papers
            return code_files([load_papers()[layout].function])
        return self.files(f"layout {layout}", find)
