"""werlen2018 sec. 8.1-8.2: the attention to previous words (Figure 2's relative positions of the maximal weight,
Figure 3's matrices), Algorithm 1's binary trees (Figure 4) and their ParsEval bracketing scores against gold
parses and a right-branching baseline (footnote 4), from teacher-forced passes over the references.

Our choice: the passes are teacher-forced on the references (the paper analyses its translations); the weights are
then those of one fixed target per sentence for every model, and gold parses of the references can be scored.

Matrices: per sentence of N target words a [T,T] matrix, T = N + 1 (CGRUDecoder.previous_word_weights): row p is
the prediction of word p + 1 (row N: the EOS), column 0 is y_0 (the zero vector; s_0 with state attention),
column i >= 1 is word i (s_i); row p weighs columns 0..p and is zero above the diagonal.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence, Union

import numpy as np
from torch import nn

from pipeline.evaluate.forced import forced_batches
from pipeline.data.vocab import BOS, EOS, SPECIALS
from pipeline.errors import PipelineError
from pipeline.search import inference

Span = tuple[int, int]  # (start, end) over the leaves, end exclusive
Tree = Union[str, int, tuple]  # a leaf (word or index), or a tuple of subtrees
PTB_EXAMPLE = "(S (NP (DT The) (NN cat)) (VP (VBD sat)))"
_CLOSE = object()  # traversal marker: the end of a tuple node


def _positive(caller: str, name: str, value) -> None:
    """PipelineError unless value is a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PipelineError(f"{caller}: argument '{name}' must be a positive integer, got {value!r}")


def _check_pairs(caller: str, src_ids: Sequence, tgt_ids: Sequence) -> None:
    """PipelineError for empty or mismatched id lists."""
    for name, value in (("src_ids", src_ids), ("tgt_ids", tgt_ids)):
        if len(value) == 0:
            raise PipelineError(f"{caller}: argument '{name}' is empty; expected at least one sentence")
    if len(src_ids) != len(tgt_ids):
        raise PipelineError(f"{caller}: 'src_ids' has {len(src_ids)} sentences but 'tgt_ids' has {len(tgt_ids)}; "
                            "expected one target per source")


# ------------------------------------------------------------------------------------------ the weights
def previous_word_attention(model: nn.Module, src_ids: list[list[int]], tgt_ids: list[list[int]], *,
                            batch_size: int = 50) -> list[np.ndarray] | None:
    """Per sentence the [T,T] weights over the previous positions (T = 1 + target length; padding cut off),
    teacher-forced on the references in eval mode without autograd; None if the model has no previous-word
    attention (the baseline decoder). PipelineError for a decoder that cannot say (not a cgru decoder)."""
    _check_pairs("previous_word_attention", src_ids, tgt_ids)
    _positive("previous_word_attention", "batch_size", batch_size)
    decoder = getattr(model, "decoder", None)
    if not hasattr(decoder, "previous_word_weights") or not hasattr(model, "tgt_embed"):
        raise PipelineError(f"previous_word_attention: model {type(model).__name__} has no decoder offering "
                            "previous_word_weights (expected an encoder-decoder with the cgru decoder)")
    device = next(model.parameters()).device
    out: list[np.ndarray | None] = [None] * len(src_ids)
    with inference(model):
        for chunk, src, tgt_in, _ in forced_batches(src_ids, tgt_ids, batch_size):
            weights = decoder.previous_word_weights(model.tgt_embed(tgt_in.to(device)), model.encode(src.to(device)))
            if weights is None:
                return None
            weights = weights.double().cpu().numpy()
            for row, k in enumerate(chunk):
                t = len(tgt_ids[k]) + 1
                out[k] = weights[row, :t, :t]
    return out


# ----------------------------------------------------------------------------------- Figure 2 (sec. 8.1)
def _square(caller: str, matrix, index: int) -> np.ndarray:
    """matrix as a float64 [T,T] array, T >= 1; PipelineError naming the sentence otherwise."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise PipelineError(f"{caller}: matrix {index} has shape {m.shape}; expected a square [T,T] matrix, T >= 1")
    return m


def relative_position_counts(matrices: Iterable, max_distance: int = 50) -> tuple[list[int], list[int]]:
    """[T,T] matrices -> (counts, opportunities) per relative position -1..-max_distance: counts[d-1] predictions
    whose maximal previous word is d words back, opportunities[d-1] predictions with at least d previous words.

    Our reading of 8.1 ("the preceding word with maximal weight ... its relative position"): the predictions are
    rows p >= 1 (row 0, the first word, sees only y_0 and has no preceding word; the EOS row counts); the
    candidates are the words 1..p only (y_0 / s_0 is not a word), word i being at relative position i - (p + 1);
    ties go to the leftmost (numpy's argmax). Words further back than max_distance are not counted (the paper's
    axis ends at -50, its maximum length).
    """
    _positive("relative_position_counts", "max_distance", max_distance)
    counts, opportunities = np.zeros(max_distance, dtype=np.int64), np.zeros(max_distance, dtype=np.int64)
    for index, matrix in enumerate(matrices):
        m = _square("relative_position_counts", matrix, index)
        for p in range(1, m.shape[0]):
            distance = p - int(np.argmax(m[p, 1:p + 1]))  # word i = 1 + argmax, distance p + 1 - i
            opportunities[:min(p, max_distance)] += 1
            if distance <= max_distance:
                counts[distance - 1] += 1
    return counts.tolist(), opportunities.tolist()


def relative_position_shares(matrices: Iterable, max_distance: int = 50) -> list[float | None]:
    """Figure 2: per relative position -1..-max_distance the share of the predictions that had a word that far
    back whose maximal previous word is there, counts / opportunities (relative_position_counts); None where no
    prediction had that many previous words.

    Our reading of "we normalized the count by the number of previous words at the time of each prediction": each
    position's count is divided by the number of predictions at which that position existed, so that far
    positions, reachable only late in long sentences, are not penalised for being rare; the shares do not sum to
    1. Shares of all predictions (summing to 1) are counts / sum(counts), as previous_word_analysis reports too.
    """
    counts, opportunities = relative_position_counts(matrices, max_distance)
    return [c / o if o else None for c, o in zip(counts, opportunities)]


# ------------------------------------------------------------------------ Algorithm 1 (sec. 8.2, Figure 4)
def word_matrix(matrix) -> np.ndarray:
    """A sentence's [T,T] matrix -> Algorithm 1's N x N over its N = T - 1 words: [1:, 1:].

    Our choice: row r is the step that reads word r + 1 (predicting word r + 2, or the EOS for the last word), over
    words 1..r + 1 (the diagonal is the word itself); column 0 (y_0 / s_0, not a word) and row 0 (the first
    prediction, which sees only y_0) are dropped and the rows are not renormalised (only their argmax matters).
    """
    m = _square("word_matrix", matrix, 0)
    return m[1:, 1:]


def _leaf_words(words: int | Sequence, caller: str) -> list:
    """The leaves: the words (a string: its whitespace tokens), or the indices 0..n-1 for an int n >= 1."""
    if isinstance(words, str):
        words = words.split()
    leaves = list(range(words)) if isinstance(words, int) and not isinstance(words, bool) else list(words)
    if not leaves:
        raise PipelineError(f"{caller}: a tree needs at least one word, got none")
    return leaves


def _phrase(words: list) -> Tree:
    """A single word stays a leaf; several words form one flat constituent."""
    return words[0] if len(words) == 1 else tuple(words)


def _right_fold(phrases: list[Tree]) -> Tree:
    """[p1, p2, .., pk] -> (p1, (p2, (.. pk))): SPLIT's tree, a one-child subtree being its child."""
    tree = phrases[-1]
    for phrase in reversed(phrases[:-1]):
        tree = (phrase, tree)
    return tree


def binary_parse_tree(attention, words: int | Sequence | None = None) -> Tree:
    """werlen2018 Algorithm 1: an N x N attention matrix (word_matrix; row r = the step reading word r, over words
    0..r) and N words (default: the indices 0..N-1) -> a binary tree of flat sub-phrases, as nested tuples.

    SPLIT(s, A): i = the end of the first phrase; the phrase s[0:i] is the left child, SPLIT(s[i:n], A[i:n][i:n])
    the right one (none if i = n). The printed loop "while max(A[:][i]) = 0 or i < n do i <- i + 1" would always
    run to n. Our choice, from 8.2 ("splits the sentence into two sub-phrases every time the focus of attention
    changes to a new word, from left-to-right"): "max" is the position of the maximum (the focus) of row i
    (A[:][i] is row i in Python's slicing), taken over the columns 0..i of the current block (the words of the
    remaining sentence read so far; leftmost on ties), "= 0" means the focus is still the block's first word,
    and "or" is "and": i <- 0; while i < n and argmax(A[i][0..i]) = 0 do i <- i + 1. Row 0 focuses word 0, so
    i >= 1 (the recursion ends), and i is exactly the first row whose focus differs from the previous row's: the
    phrase is a focus word and the words that keep attending to it; the next phrase starts where the focus moves
    on. A block's attention to words before it is cut off (A[i:n][i:n]), as printed.
    """
    a = np.asarray(attention, dtype=np.float64)
    if a.ndim != 2:
        raise PipelineError(f"binary_parse_tree: the attention matrix has shape {a.shape}; expected N x N")
    leaves = _leaf_words(a.shape[0] if words is None else words, "binary_parse_tree")
    n = len(leaves)
    if a.shape != (n, n):
        raise PipelineError(f"binary_parse_tree: the attention matrix has shape {a.shape}; expected ({n}, {n}) for "
                            f"{n} words")
    phrases, start = [], 0
    while start < n:  # SPLIT's recursion, unrolled: each pass is one call on A[start:n][start:n]
        block, i = a[start:, start:], 0
        while i < n - start and int(np.argmax(block[i, :i + 1])) == 0:
            i += 1
        phrases.append(_phrase(leaves[start:start + i]))
        start += i
    return _right_fold(phrases)


def right_branching(words: int | Sequence) -> Tree:
    """Footnote 4's baseline: one word and the rest of the sentence, iteratively from left to right: n (leaves
    0..n-1) or the words -> (w0, (w1, (.. (w_{n-2}, w_{n-1})))); one word is the leaf itself."""
    return _right_fold(_leaf_words(words, "right_branching"))


def spans(tree: Tree) -> set[Span]:
    """Constituent spans (start, end) over the leaves, excluding single words (ParsEval, Black et al. 1991, without
    labels); the whole sentence counts (our choice) and repeated spans (unary chains) count once."""
    out: set[Span] = set()
    stack, opens, position = [tree], [], 0
    while stack:
        node = stack.pop()
        if node is _CLOSE:
            start = opens.pop()
            if position - start >= 2:
                out.add((start, position))
        elif isinstance(node, tuple):
            opens.append(position)
            stack.append(_CLOSE)
            stack.extend(reversed(node))
        else:
            position += 1
    return out


def _escape(leaf) -> str:
    """A leaf in bracket notation: PTB's -LRB- / -RRB- for brackets inside a word."""
    return str(leaf).replace("(", "-LRB-").replace(")", "-RRB-")


def render(tree: Tree) -> str:
    """A tree as an unlabelled bracket string: ((The cat) (sat (on (the mat))))."""
    parts: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is _CLOSE:
            parts.append(")")
        elif isinstance(node, tuple):
            parts.append("(")
            stack.append(_CLOSE)
            stack.extend(reversed(node))
        else:
            parts.append(_escape(node))
    return re.sub(r"\( | \)", lambda m: m.group(0).strip(), " ".join(parts))


def _sentences(x) -> list[set[Span]]:
    """One sentence (a set of spans) or a sequence of them -> a list of span sets."""
    if isinstance(x, (set, frozenset)):
        return [set(x)]
    return [set(s) for s in x]


def bracketing_scores(predicted_spans, gold_spans) -> tuple[float | None, float | None, float | None]:
    """Unlabelled ParsEval precision, recall and F1: one sentence (a set of spans each) or aligned sequences of
    sentences (micro-averaged: matched, predicted and gold spans summed over the sentences). Our choice: a score
    whose denominator is 0 is None; F1 is None if P or R is, 0 if both are 0."""
    predicted, gold = _sentences(predicted_spans), _sentences(gold_spans)
    if len(predicted) != len(gold):
        raise PipelineError(f"bracketing_scores: {len(predicted)} predicted sentences but {len(gold)} gold ones; "
                            "expected one gold span set per prediction")
    matched = sum(len(p & g) for p, g in zip(predicted, gold))
    n_predicted, n_gold = sum(map(len, predicted)), sum(map(len, gold))
    precision = matched / n_predicted if n_predicted else None
    recall = matched / n_gold if n_gold else None
    if precision is None or recall is None:
        return precision, recall, None
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


# ------------------------------------------------------------------------------------- gold parses (PTB)
def parse_ptb(line: str, where: str = "parse") -> tuple[list[str], set[Span]]:
    """One Penn-Treebank bracketed tree, e.g. (S (NP (DT The) (NN cat)) (VP (VBD sat))) or with PTB's unlabelled
    outer brackets ( (S ..) ) -> (its leaves, spans as spans() counts them). A node is "(" [label] children ")",
    a child a node or a word; the label is the first token after "(" unless it is a bracket (so (DT The) is a
    preterminal and (NP) an empty constituent). Empty elements (-NONE-) are not removed (our choice: parser
    output has none). PipelineError naming `where` for a malformed tree."""
    tokens = re.findall(r"\(|\)|[^\s()]+", line)

    def fail(reason: str):
        raise PipelineError(f"{where}: malformed parse ({reason}): {line.strip()[:200]!r}; expected one "
                            f"Penn-Treebank bracketed tree per line, e.g. {PTB_EXAMPLE}")

    if not tokens:
        fail("empty line")
    if tokens[0] != "(":
        fail(f"starts with {tokens[0]!r}, not '('")
    leaves: list[str] = []
    out: set[Span] = set()
    opens: list[tuple[int, int]] = []  # (first leaf, children so far) of each open node
    k = 0
    while k < len(tokens):
        token = tokens[k]
        if token == "(":
            if opens:
                opens[-1] = (opens[-1][0], opens[-1][1] + 1)
            elif k > 0:
                fail("text after the end of the tree")
            opens.append((len(leaves), 0))
            if k + 1 < len(tokens) and tokens[k + 1] not in ("(", ")"):
                k += 1  # the label
        elif token == ")":
            if not opens:
                fail("a ')' closes no bracket")
            start, children = opens.pop()
            if children == 0:
                fail("an empty constituent")
            if len(leaves) - start >= 2:
                out.add((start, len(leaves)))
        else:
            if not opens:
                fail(f"the word {token!r} is outside the tree")
            opens[-1] = (opens[-1][0], opens[-1][1] + 1)
            leaves.append(token)
        k += 1
    if opens:
        fail(f"{len(opens)} unclosed '('")
    if not leaves:
        fail("no words")
    return leaves, out


def read_parses(lines: Sequence[str], source: str = "parses") -> list[tuple[list[str], set[Span]]]:
    """One tree per line (parse_ptb) -> per line (leaves, spans); errors name `source` and the 1-based line."""
    return [parse_ptb(line, f"{source}, line {k}") for k, line in enumerate(lines, 1)]


# ----------------------------------------------------------------------------------------- the analysis
def _tokens(tgt_tokens: Sequence, tgt_ids: Sequence[Sequence[int]]) -> list[list[str]]:
    """Per sentence its target words (a string is split on whitespace), as many as its ids."""
    if len(tgt_tokens) != len(tgt_ids):
        raise PipelineError(f"previous_word_analysis: 'tgt_tokens' has {len(tgt_tokens)} sentences but 'tgt_ids' "
                            f"has {len(tgt_ids)}; expected the words of each target")
    out = []
    for k, (words, ids) in enumerate(zip(tgt_tokens, tgt_ids)):
        words = words.split() if isinstance(words, str) else [str(w) for w in words]
        if len(words) != len(ids):
            raise PipelineError(f"previous_word_analysis: sentence {k} has {len(words)} target tokens but "
                                f"{len(ids)} ids; expected one token per id")
        out.append(words)
    return out


def previous_word_analysis(model: nn.Module, src_ids: list[list[int]], tgt_ids: list[list[int]],
                           tgt_tokens: Sequence, sentence: int, parses: list[str] | None, max_distance: int = 50,
                           *, trees: Sequence[int] | None = None, batch_size: int = 50) -> dict:
    """werlen2018 sec. 8.1-8.2 over teacher-forced references, JSON-ready:

    {"n_sentences", "max_distance",
     "fig2": {"distance": [-1..-D], "counts", "opportunities", "shares" (relative_position_shares), "fractions"
              (counts / their sum)},
     "fig3": {"sentence": k, "rows": words predicted (.. "</s>"), "columns": ["<s>" (y_0 / s_0), words..],
              "matrix": [T][T]},
     "fig4": [{"sentence": k, "tree": Algorithm 1's tree as a bracket string}] for the sentences `trees` (default:
              `sentence` and the two after it),
     "parseval": None without parses, else {"algorithm1": {"precision", "recall", "f1"}, "right_branching": {..},
                 "sentences": scored, "gold_spans": n} (micro-averaged; sentences without words are skipped)}.

    Our choice for a model without previous-word attention (the baseline): no error; fig2, fig3, fig4 and
    parseval's "algorithm1" are None (the right-branching scores need no model). `parses`: one PTB tree per
    target sentence, its leaves as many as the sentence's tokens.
    """
    caller = "previous_word_analysis"
    _check_pairs(caller, src_ids, tgt_ids)
    _positive(caller, "max_distance", max_distance)
    words = _tokens(tgt_tokens, tgt_ids)
    n = len(tgt_ids)
    if isinstance(sentence, bool) or not isinstance(sentence, int) or not 0 <= sentence < n:
        raise PipelineError(f"{caller}: argument 'sentence' must be an index in [0, {n}), got {sentence!r}")
    trees = list(range(sentence, min(sentence + 3, n))) if trees is None else list(trees)
    for k in trees:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
            raise PipelineError(f"{caller}: argument 'trees' must hold sentence indices in [0, {n}), got {k!r}")
    gold = None
    if parses is not None:
        if len(parses) != n:
            raise PipelineError(f"{caller}: {len(parses)} parses for {n} sentences; expected one tree per target")
        gold = read_parses(parses)
        for k, (leaves, _) in enumerate(gold):
            if len(leaves) != len(words[k]):
                raise PipelineError(f"parses, line {k + 1}: {len(leaves)} words but target sentence {k} has "
                                    f"{len(words[k])} tokens; expected a parse of the same tokens")
    matrices = previous_word_attention(model, src_ids, tgt_ids, batch_size=batch_size)
    out: dict = {"n_sentences": n, "max_distance": max_distance, "fig2": None, "fig3": None, "fig4": None,
                 "parseval": None}
    predicted = None
    if matrices is not None:
        counts, opportunities = relative_position_counts(matrices, max_distance)
        total = sum(counts)
        out["fig2"] = {"distance": [-d for d in range(1, max_distance + 1)], "counts": counts,
                       "opportunities": opportunities,
                       "shares": [c / o if o else None for c, o in zip(counts, opportunities)],
                       "fractions": [c / total if total else None for c in counts]}
        out["fig3"] = {"sentence": sentence, "rows": words[sentence] + [SPECIALS[EOS]],
                       "columns": [SPECIALS[BOS]] + words[sentence], "matrix": matrices[sentence].tolist()}
        predicted = [binary_parse_tree(word_matrix(m), w) if w else None for m, w in zip(matrices, words)]
        out["fig4"] = [{"sentence": k, "tree": render(predicted[k]) if predicted[k] is not None else None}
                       for k in trees]
    if gold is not None:
        scored = [k for k in range(n) if words[k]]
        gold_spans = [gold[k][1] for k in scored]

        def scores(trees_: list) -> dict:
            p, r, f = bracketing_scores([spans(t) for t in trees_], gold_spans)
            return {"precision": p, "recall": r, "f1": f}

        out["parseval"] = {
            "algorithm1": scores([predicted[k] for k in scored]) if predicted is not None else None,
            "right_branching": scores([right_branching(words[k]) for k in scored]),
            "sentences": len(scored), "gold_spans": sum(map(len, gold_spans))}
    return out
