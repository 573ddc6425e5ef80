"""Where the pipeline keeps what it builds under artifacts/<scale>/ (the rules and the analysis kinds name files
through these, so that a path is spelt once)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paths:
    """The artifact layout below `root` (artifacts/<scale>)."""
    root: str

    def data(self, corpus: str, *parts: str) -> str:
        """A corpus's files: raw/, tok/, tc/, clean/, bpe/ (subwords, codes, vocabularies), bin/ (token stores),
        ready."""
        return "/".join((self.root, "data", corpus) + parts)

    def model_dir(self, experiment: str) -> str:
        return f"{self.root}/models/{experiment}"

    def model(self, experiment: str) -> str:
        return f"{self.model_dir(experiment)}/model.pt"

    def hyp(self, system: str, split: str) -> str:
        return f"{self.root}/eval/{system}/{split}.hyp"

    def score(self, system: str, split: str, metric: str) -> str:
        return f"{self.root}/eval/{system}/{split}.{metric}.json"

    def curve(self, experiment: str, curve: str) -> str:
        return f"{self.root}/curves/{experiment}/{curve}.tsv"

    def table(self, table: str, *parts: str) -> str:
        """What a table or figure derives: significance/, one folder per analysis kind, cells.json."""
        return "/".join((self.root, "tables", table) + parts)

    def analysis(self, table: str, kind: str, item: str) -> str:
        """The result of one analysis job (one system, column or the whole table)."""
        return self.table(table, kind, f"{item}.json")

    def analysis_cells(self, table: str, kind: str, item: str) -> str:
        """What an analysis job has finished so far, kept for its retry: under runs/, which is no Snakemake output
        (Snakemake deletes a failed job's outputs) nor in a DVC stage's outs (DVC deletes those before a rerun)."""
        return f"{self.root}/runs/tables/{table}/{kind}/{item}.cells.jsonl"
