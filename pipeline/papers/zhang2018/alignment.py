"""Word alignments from attention and their alignment error rate (Och and Ney 2003; zhang2018 Table 4, Figure 4).

A link (i, j) joins source word i and target word j (0-based). Gold alignments have sure links S and possible links
P, S a subset of P: AER = 1 - (|A & S| + |A & P|) / (|A| + |S|), precision |A & P| / |A|, recall |A & S| / |S|,
summed over the sentences of a test set before dividing (Och and Ney 2003, eq. 6-8).

Gold files (our choice of format): one line per sentence pair, space-separated links "i-j" (sure) or "i?j"
(possible), Pharaoh's i-j order (source first). Attention gives A: each target word linked to the source word of its
largest weight (zhang2018 5.4), computed over subword units and mapped to words (a word's weight rows / columns
summed, our choice).
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

import numpy as np

from pipeline.errors import PipelineError

Link = tuple[int, int]
_LINK = re.compile(r"^(\d+)([-?])(\d+)$")
BPE_MARK = "@@"


def parse_links(line: str, where: str = "alignment") -> tuple[set[Link], set[Link]]:
    """One gold line -> (sure links, possible links including the sure ones); a bad token names `where`."""
    sure, possible = set(), set()
    for token in line.split():
        match = _LINK.match(token)
        if match is None:
            raise PipelineError(f"{where}: bad link {token!r}; expected i-j (sure) or i?j (possible), 0-based")
        link = (int(match.group(1)), int(match.group(3)))
        possible.add(link)
        if match.group(2) == "-":
            sure.add(link)
    return sure, possible


def read_gold(lines: Iterable[str], source: str = "alignments") -> list[tuple[set[Link], set[Link]]]:
    """Every line of a gold file -> (sure, possible) per sentence; errors name the file and line."""
    return [parse_links(line, f"{source}, line {number}") for number, line in enumerate(lines, start=1)]


def alignment_error(predicted: Sequence[set[Link]], gold: Sequence[tuple[set[Link], set[Link]]]) -> dict:
    """Corpus AER, precision and recall of predicted links against gold (sure, possible) per sentence."""
    if len(predicted) != len(gold):
        raise PipelineError(f"alignments: {len(predicted)} predicted sentences for {len(gold)} gold ones; expected "
                            f"one per sentence")
    a = a_s = a_p = s = 0
    for links, (sure, possible) in zip(predicted, gold):
        a += len(links)
        s += len(sure)
        a_s += len(links & sure)
        a_p += len(links & (possible | sure))
    if a == 0 or s == 0:
        raise PipelineError(f"alignments: {a} predicted and {s} sure links; expected some of each")
    return {"aer": 1.0 - (a_s + a_p) / (a + s), "precision": a_p / a, "recall": a_s / s, "links": a, "sure": s,
            "sentences": len(gold)}


def word_of(tokens: Sequence[str]) -> list[int]:
    """The word index of each subword token ("@@" ends a unit continued by the next): [0, 0, 1, ...]."""
    out, word = [], 0
    for token in tokens:
        out.append(word)
        if not token.endswith(BPE_MARK):
            word += 1
    return out


def word_weights(attention: np.ndarray, src_tokens: Sequence[str], tgt_tokens: Sequence[str]) -> np.ndarray:
    """Subword attention [T,S] (target rows, source columns, EOS excluded) -> word attention [T_words, S_words]:
    the rows of a target word averaged, the columns of a source word summed (our choice)."""
    attention = np.asarray(attention, dtype=np.float64)
    if attention.shape != (len(tgt_tokens), len(src_tokens)):
        raise PipelineError(f"attention of shape {attention.shape}; expected ({len(tgt_tokens)}, {len(src_tokens)}) "
                            f"(target x source subword tokens)")
    src_words, tgt_words = word_of(src_tokens), word_of(tgt_tokens)
    columns = np.zeros((attention.shape[0], src_words[-1] + 1 if src_words else 0))
    np.add.at(columns.T, src_words, attention.T)
    rows = np.zeros((tgt_words[-1] + 1 if tgt_words else 0, columns.shape[1]))
    np.add.at(rows, tgt_words, columns)
    counts = np.bincount(tgt_words, minlength=rows.shape[0])[:, None]
    return rows / np.maximum(counts, 1)


def argmax_links(attention: np.ndarray) -> set[Link]:
    """Each target word (row) linked to the source word (column) of its largest weight, ties to the first: {(i, j)}."""
    attention = np.asarray(attention)
    return {(int(np.argmax(row)), j) for j, row in enumerate(attention)} if attention.size else set()


def _words(line: str) -> list[str]:
    """The words of a subword line: units joined where "@@" continues them."""
    return line.replace(f"{BPE_MARK} ", "").split()


def alignment_analysis(matrices: Sequence[np.ndarray], src_lines: Sequence[str], tgt_lines: Sequence[str],
                       gold: Sequence[tuple[set[Link], set[Link]]], *, shown: Sequence[int] = (),
                       where: str = "alignments") -> dict:
    """zhang2018 Table 4 and Figure 4 from subword attention matrices [T,S] (source_attention) of subword lines:
    {"aer", "precision", "recall", "links", "sure", "sentences", "shown": [{"index" (1-based), "source",
    "target" (words), "attention" (word matrix, target rows), "sure", "possible", "predicted" (links)}]}.

    A gold link beyond the sentence's words names `where` and the line (the gold file must index the same words)."""
    if not len(matrices) == len(src_lines) == len(tgt_lines) == len(gold):
        raise PipelineError(f"{where}: {len(matrices)} attention matrices, {len(src_lines)} sources, "
                            f"{len(tgt_lines)} targets and {len(gold)} gold lines; expected one of each per sentence")
    predicted, words = [], []
    for number, (matrix, src, tgt, (sure, possible)) in enumerate(zip(matrices, src_lines, tgt_lines, gold), 1):
        attention = word_weights(matrix, src.split(), tgt.split())
        outside = sorted((i, j) for i, j in possible | sure if i >= attention.shape[1] or j >= attention.shape[0])
        if outside:
            raise PipelineError(f"{where}, line {number}: link {outside[0][0]}-{outside[0][1]} outside a pair of "
                                f"{attention.shape[1]} source and {attention.shape[0]} target words; expected the "
                                "gold file to index the tokenised words of the test set")
        predicted.append(argmax_links(attention))
        words.append(attention)
    result = alignment_error(predicted, gold)
    result["shown"] = []
    for index in shown:
        if not 1 <= index <= len(gold):
            raise PipelineError(f"{where}: shown sentence {index}; expected 1..{len(gold)}")
        k = index - 1
        result["shown"].append({"index": index, "source": _words(src_lines[k]), "target": _words(tgt_lines[k]),
                                "attention": np.round(words[k], 6).tolist(),
                                "sure": sorted(map(list, gold[k][0])), "possible": sorted(map(list, gold[k][1])),
                                "predicted": sorted(map(list, predicted[k]))})
    return result
