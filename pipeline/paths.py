"""Where the pipeline keeps what it builds under artifacts/<scale>/: the rules' inputs, outputs and logs, dvc.yaml's
stages and the analysis kinds name files through these, so that a path is spelt once. The rules pass wildcards
as the names ("{exp}"), which come back as Snakemake patterns."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paths:
    """The artifact layout below `root` (artifacts/<scale>)."""
    root: str

    def under(self, relative: str) -> str:
        """A path given relative to the root (e.g. the same folder under another layout's root)."""
        return f"{self.root}/{relative}"

    def data(self, corpus: str, *parts: str) -> str:
        """A corpus's files: raw/, tok/, tc/, clean/, bpe/ (subwords, codes, vocabularies), bin/ (token stores),
        ready."""
        return "/".join((self.root, "data", corpus) + parts)

    def model_dir(self, experiment: str) -> str:
        return f"{self.root}/models/{experiment}"

    def model(self, experiment: str) -> str:
        return f"{self.model_dir(experiment)}/model.pt"

    def train_summary(self, experiment: str) -> str:
        return f"{self.model_dir(experiment)}/train.json"

    def run_dir(self, experiment: str) -> str:
        """A training run's checkpoints (no Snakemake output nor DVC out: a rerun resumes from them)."""
        return f"{self.root}/runs/{experiment}"

    def curves_dir(self, experiment: str) -> str:
        return f"{self.root}/curves/{experiment}"

    def curve(self, experiment: str, curve: str) -> str:
        return f"{self.curves_dir(experiment)}/{curve}.tsv"

    def eval_dir(self, system: str) -> str:
        return f"{self.root}/eval/{system}"

    def hyp(self, system: str, split: str) -> str:
        return f"{self.eval_dir(system)}/{split}.hyp"

    def score(self, system: str, split: str, metric: str) -> str:
        return f"{self.eval_dir(system)}/{split}.{metric}.json"

    def scores(self, system: str) -> str:
        """All of a system's scores in one file (DVC's metrics)."""
        return f"{self.eval_dir(system)}/scores.json"

    def nbest(self, combo: str, system: str, split: str, suffix: str = "nbest") -> str:
        """A combination's n-best list of one of its systems (suffix "hyp": that search's 1-best)."""
        return f"{self.eval_dir(combo)}/nbest/{system}.{split}.{suffix}"

    def gmbr_weights(self, combo: str) -> str:
        return f"{self.eval_dir(combo)}/gmbr.json"

    def table(self, table: str, *parts: str) -> str:
        """What a table or figure derives: significance/, one folder per analysis kind, cells.json."""
        return "/".join((self.root, "tables", table) + parts)

    def significance(self, table: str, system: str, split: str) -> str:
        return self.table(table, "significance", f"{system}.{split}.json")

    def cells(self, table: str) -> str:
        """A table's or figure's cells with their sources (the report's input)."""
        return self.table(table, "cells.json")

    def analysis(self, table: str, kind: str, item: str) -> str:
        """The result of one analysis job (one system, column or the whole table)."""
        return self.table(table, kind, f"{item}.json")

    def analysis_cells(self, table: str, kind: str, item: str) -> str:
        """What an analysis job has finished so far, kept for its retry: under runs/, which is no Snakemake output
        (Snakemake deletes a failed job's outputs) nor in a DVC stage's outs (DVC deletes those before a rerun)."""
        return f"{self.root}/runs/tables/{table}/{kind}/{item}.cells.jsonl"

    def report_page(self, paper: str, output: str) -> str:
        return f"{self.root}/report/{paper}/{output}.html"

    def log(self, step: str, *names: str) -> str:
        """A job's log: logs/<step>/<names joined by />.log."""
        return "/".join((self.root, "logs", step) + names) + ".log"
