"""Hao et al. (2019) Table 5: probing tasks (Conneau et al. 2018) on mean-pooled frozen encoder states.

Task files use SentEval's format, one instance a line: split TAB label TAB sentence, split in tr/va/te.
Paper scale downloads SentEval's 10 files; tiny scale builds the three text-only tasks from plain sentences.
"""
from __future__ import annotations

import copy
import logging
import random
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pipeline.data.batching import encode_source, pad
from pipeline.data.download import download
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_path, read_lines, write_lines

log = logging.getLogger(__name__)

TASKS = ("SeLen", "WC", "TrDep", "ToCo", "BShif", "Tense", "SubN", "ObjN", "SoMo", "CoIn")  # Table 5's order
TEXT_TASKS = ("SeLen", "WC", "BShif")  # buildable from plain sentences, no parser needed
SENTEVAL_FILES: dict[str, str] = {
    "SeLen": "sentence_length.txt",
    "WC": "word_content.txt",
    "TrDep": "tree_depth.txt",
    "ToCo": "top_constituents.txt",
    "BShif": "bigram_shift.txt",
    "Tense": "past_present.txt",
    "SubN": "subj_number.txt",
    "ObjN": "obj_number.txt",
    "SoMo": "odd_man_out.txt",
    "CoIn": "coordination_inversion.txt",
}
# pinned to the commit whose blob ids are below (main's head when they were read)
SENTEVAL_BASE_URL = ("https://raw.githubusercontent.com/facebookresearch/SentEval/"
                     "5d6dc117d1ac30357ddaeb7347fb5684e9b87015/data/probing")
# The files' git blob ids, which download() checks: `git ls-tree -r 5d6dc117d1ac30357ddaeb7347fb5684e9b87015
# data/probing` in facebookresearch/SentEval (main's head; the files are unchanged since commit 45a41660 added them).
SENTEVAL_GIT_BLOBS: dict[str, str] = {
    "sentence_length.txt": "9799e50a7579b5b60294b708cedc063aea16f0be",
    "word_content.txt": "596d6fc7c624a989342f5aef2fa035d0d84f65b7",
    "tree_depth.txt": "91567ad524de360c38105afc39d29fb7ef6b5eb8",
    "top_constituents.txt": "1d00fe9b16f71303af7f0471fa028077f742d8b0",
    "bigram_shift.txt": "1226c0467bd342c92132dd2fd26e54b7bd066bd7",
    "past_present.txt": "d11394b28383bb1a8148670e33d39e5fcd326b16",
    "subj_number.txt": "dee5770953ad194ceafc68106bd9c071986c6d2a",
    "obj_number.txt": "c5a6f758f2293d0ed0774de327ff8199322d12ee",
    "odd_man_out.txt": "ca1ec154df17e366330c542b48bdca5cfa65bf1c",
    "coordination_inversion.txt": "281888217fd1ed7faef2c63c5350d2ff1b8e64ce",
}
SPLITS = ("tr", "va", "te")
MIN_PER_CLASS = 10  # fewer instances of a class than this cannot fill tr/va/te sensibly
FORMAT = "'split<TAB>label<TAB>sentence' with split one of tr/va/te and a non-empty label and sentence"


# ---------------------------------------------------------------- building the text-only tasks (tiny scale)

def _unique_sentences(sentences: Sequence[str]) -> list[str]:
    """Whitespace-normalised, non-empty, de-duplicated sentences in first-seen order (no sentence in two splits)."""
    seen: dict[str, None] = {}
    for line in sentences:
        text = " ".join(line.split())
        if text:
            seen.setdefault(text, None)
    return list(seen)


def _split_rows(groups: Mapping[str, list[str]], rng: random.Random) -> list[str]:
    """Stratified ~80/10/10 split of equally sized, already shuffled classes -> SentEval lines ordered tr, va, te,
    shuffled within each split."""
    rows: dict[str, list[str]] = {s: [] for s in SPLITS}
    for label in sorted(groups):
        items = groups[label]
        n_held = max(1, round(0.1 * len(items)))
        parts = {"va": items[:n_held], "te": items[n_held:2 * n_held], "tr": items[2 * n_held:]}
        for split, part in parts.items():
            rows[split].extend(f"{split}\t{label}\t{sentence}" for sentence in part)
    out = []
    for split in SPLITS:
        rng.shuffle(rows[split])
        out.extend(rows[split])
    return out


def _balanced(groups: Mapping[str, list[str]], per_class: int, rng: random.Random, task: str) -> dict[str, list[str]]:
    """Each class cut to the same size min(per_class, smallest class), sampled by `rng`."""
    if len(groups) < 2:
        raise PipelineError(f"probing task {task}: only {len(groups)} class(es) could be built; expected at least 2 "
                            "(the corpus is too small or too uniform)")
    n = min(per_class, *(len(items) for items in groups.values()))
    if n < MIN_PER_CLASS:
        sizes = {label: len(items) for label, items in sorted(groups.items())}
        raise PipelineError(f"probing task {task}: {n} instances per class (class sizes {sizes}); expected at least "
                            f"{MIN_PER_CLASS}: give more sentences")
    return {label: rng.sample(items, n) for label, items in sorted(groups.items())}


def length_bins(lengths: Sequence[int], n_classes: int) -> list[tuple[int, int]]:
    """Contiguous word-count ranges [lo, hi] holding about equal numbers of sentences (quantile bins, our choice)."""
    counts = Counter(lengths)
    total, bins, lo, seen = len(lengths), [], None, 0
    for length in sorted(counts):
        lo = length if lo is None else lo
        seen += counts[length]
        if len(bins) < n_classes - 1 and seen >= total * (len(bins) + 1) / n_classes:
            bins.append((lo, length))
            lo = None
    if lo is not None:
        bins.append((lo, max(counts)))
    return bins


def _selen(sentences: list[str], rng: random.Random, max_n: int, n_classes: int) -> tuple[list[str], dict]:
    """SeLen: class = quantile bin of the word count (SentEval's fixed bins assume 5-28 words; ours adapt)."""
    lengths = [len(s.split()) for s in sentences]
    bins = length_bins(lengths, n_classes)
    groups: dict[str, list[str]] = {}
    for sentence, length in zip(sentences, lengths):
        label = next(str(i) for i, (lo, hi) in enumerate(bins) if lo <= length <= hi)
        groups.setdefault(label, []).append(sentence)
    groups = _balanced(groups, max_n // len(bins), rng, "SeLen")
    return _split_rows(groups, rng), {"bins": [list(b) for b in bins]}


def _middle_frequency_words(sentences: list[str]) -> list[str]:
    """Words ranked by frequency after the most frequent ones that cover half of all tokens (function words; our
    choice, SentEval skips the top 2k ranks of a far larger vocabulary); only words with a letter."""
    counts = Counter(token for s in sentences for token in s.split())
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    total, covered, start = sum(counts.values()), 0, 0
    while start < len(ranked) and covered < total / 2:
        covered += counts[ranked[start]]
        start += 1
    return [w for w in ranked[start:] if any(c.isalpha() for c in w)]


def _wc_groups(sentences: list[str], targets: set[str]) -> dict[str, list[str]]:
    """Target word -> sentences holding exactly one target-word occurrence (that word, once)."""
    groups: dict[str, list[str]] = {}
    for sentence in sentences:
        hits = [t for t in sentence.split() if t in targets]
        if len(hits) == 1:
            groups.setdefault(hits[0], []).append(sentence)
    return groups


def _wc(sentences: list[str], rng: random.Random, max_n: int, n_words: int) -> tuple[list[str], dict]:
    """WC: the n_words most frequent middle-frequency words that each have >= MIN_PER_CLASS sentences holding
    exactly one target word exactly once; label = that word; classes cut to the rarest one's size."""
    once = Counter(t for s in sentences for t, k in Counter(s.split()).items() if k == 1)
    candidates = [w for w in _middle_frequency_words(sentences) if once[w] >= MIN_PER_CLASS]
    chosen, pos = candidates[:n_words], n_words
    while True:  # drop words that lose too many sentences to co-occurring targets, refill from the ranking
        groups = _wc_groups(sentences, set(chosen))
        keep = [w for w in chosen if len(groups.get(w, ())) >= MIN_PER_CLASS]
        if len(keep) == len(chosen):
            break
        refill = candidates[pos:pos + n_words - len(keep)]
        pos += len(refill)
        chosen = keep + refill
    groups = _balanced(groups, max_n // max(1, len(groups)), rng, "WC")
    return _split_rows(groups, rng), {"words": sorted(groups)}


def _swap_positions(tokens: list[str]) -> list[int]:
    """Positions i of swappable pairs (i, i+1): not the first token (SentEval excludes the sentence start),
    both tokens with a letter or digit (no punctuation), and different tokens (the swap must change the text)."""
    return [i for i in range(1, len(tokens) - 1)
            if tokens[i] != tokens[i + 1] and all(any(c.isalnum() for c in t) for t in tokens[i:i + 2])]


def _swap(sentence: str, rng: random.Random, taken: set[str]) -> str | None:
    """The sentence with one random swappable adjacent pair inverted, avoiding texts in `taken`; None if none."""
    tokens = sentence.split()
    positions = _swap_positions(tokens)
    rng.shuffle(positions)
    for i in positions:
        text = " ".join(tokens[:i] + [tokens[i + 1], tokens[i]] + tokens[i + 2:])
        if text not in taken:
            return text
    return None


def _bshif(sentences: list[str], rng: random.Random, max_n: int) -> tuple[list[str], dict]:
    """BShif: half of the sentences get two adjacent tokens swapped (label I), the others are kept (label O);
    a swapped sentence never equals a corpus sentence."""
    corpus = set(sentences)
    pool = [s for s in sentences if _swap_positions(s.split())]
    rng.shuffle(pool)
    half = min(max_n, len(pool)) // 2
    groups: dict[str, list[str]] = {"I": [], "O": []}
    for sentence in pool:
        swapped = _swap(sentence, rng, corpus) if len(groups["I"]) < half else None
        if swapped is not None:
            corpus.add(swapped)
            groups["I"].append(swapped)
        elif len(groups["O"]) < half:
            groups["O"].append(sentence)
        elif len(groups["I"]) >= half:
            break
    groups = _balanced(groups, half, rng, "BShif")
    return _split_rows(groups, rng), {}


def build_text_tasks(sentences: list[str], out_dir: Path, *, seed: int = 1, max_per_task: int = 6000,
                     selen_classes: int = 6, wc_words: int = 30) -> dict:
    """Write out_dir/<task>.txt for TEXT_TASKS in SentEval's format, atomically, from plain tokenised sentences.

    Returns {task: {"path", "n", "labels", "splits": {split: n}, ...}}; SeLen adds "bins", WC adds "words".
    Classes are balanced and split ~80/10/10 per class; each task draws with random.Random(f"{seed}/{task}").
    """
    if max_per_task < 2 * MIN_PER_CLASS or selen_classes < 2 or wc_words < 2:
        raise PipelineError(f"build_text_tasks: max_per_task={max_per_task}, selen_classes={selen_classes}, "
                            f"wc_words={wc_words}; expected >= {2 * MIN_PER_CLASS}, >= 2 and >= 2")
    unique = _unique_sentences(sentences)
    builders = {
        "SeLen": lambda rng: _selen(unique, rng, max_per_task, selen_classes),
        "WC": lambda rng: _wc(unique, rng, max_per_task, wc_words),
        "BShif": lambda rng: _bshif(unique, rng, max_per_task),
    }
    out_dir = Path(out_dir)
    info = {}
    for task in TEXT_TASKS:
        lines, extra = builders[task](random.Random(f"{seed}/{task}"))
        path = out_dir / f"{task}.txt"
        write_lines(path, lines)
        info[task] = {"path": str(path), **_summary(lines), **extra}
        log.info("probing task %s: %d instances, %d classes -> %s", task, info[task]["n"],
                 len(info[task]["labels"]), path)
    return info


def _summary(lines: list[str]) -> dict:
    """{"n", "labels" (sorted), "splits": {split: count}} of SentEval lines."""
    fields = [line.split("\t") for line in lines]
    return {"n": len(lines), "labels": sorted({f[1] for f in fields}),
            "splits": {s: sum(f[0] == s for f in fields) for s in SPLITS}}


# ---------------------------------------------------------------- SentEval files (paper scale)

def read_task(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """split -> (labels, sentences) of a SentEval probing file; blank lines are skipped, a malformed line or a
    missing split is a PipelineError naming file:line and the expected format."""
    path = Path(path)
    data: dict[str, tuple[list[str], list[str]]] = {s: ([], []) for s in SPLITS}
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3 or fields[0] not in data or not fields[1].strip() or not fields[-1].strip():
            raise PipelineError(f"{path}:{number}: expected {FORMAT}; got {line[:80]!r}")
        data[fields[0]][0].append(fields[1].strip())
        data[fields[0]][1].append(fields[-1].strip())
    missing = [s for s in SPLITS if not data[s][0]]
    if missing:
        raise PipelineError(f"{path}: no instances of split(s) {', '.join(missing)}; expected lines of {FORMAT}")
    return data


def fetch_senteval(out_dir: Path, cache_dir: Path, *, base_url: str = SENTEVAL_BASE_URL,
                   git_blobs: Mapping[str, str] = SENTEVAL_GIT_BLOBS) -> dict:
    """Download SentEval's 10 probing files into cache_dir, verify them against their git blob ids (`git_blobs`,
    by file name), check their format, copy them to out_dir/<task>.txt.

    Returns {task: {"path", "n", "labels", "splits"}}. A file that does not match its blob id is refused.
    """
    out_dir, cache_dir = Path(out_dir), Path(cache_dir)
    info = {}
    for task in TASKS:
        name = SENTEVAL_FILES[task]
        url = f"{base_url.rstrip('/')}/{name}"
        cached = download(url, cache_dir / name, git_blob=git_blobs[name], progress=False)
        data = read_task(cached)
        dest = out_dir / f"{task}.txt"
        with atomic_path(dest) as tmp:
            shutil.copyfile(cached, tmp)
        info[task] = {"path": str(dest), "n": sum(len(data[s][0]) for s in SPLITS),
                      "labels": sorted({label for s in SPLITS for label in data[s][0]}),
                      "splits": {s: len(data[s][0]) for s in SPLITS}}
    return info


# ---------------------------------------------------------------- sentence features of a frozen encoder

def masked_mean(h: Tensor, pad_mask: Tensor) -> Tensor:
    """h [B,L,d], pad_mask [B,L] (True at padding) -> mean over the real positions [B,d]."""
    keep = (~pad_mask).unsqueeze(-1).to(h.dtype)
    return (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)


def _encoder_outputs(model: nn.Module) -> tuple[str, ...]:
    """Memory entries holding the encoder's top-layer states: ("enc",), or ("enc", "rec") with Hao et al. (2019)'s second
    encoder; PipelineError for more than two (the gated probe combines at most two)."""
    names = tuple(getattr(getattr(model, "encoder", None), "outputs", ("enc",)))
    if not 1 <= len(names) <= 2:
        raise PipelineError(f"encoder_means: the encoder writes {len(names)} state entries {list(names)}; "
                            "expected one or two (Hao et al. 2019, 5.4, gate two encoders)")
    return names


@torch.no_grad()
def encoder_means(model: nn.Module, batches: list[list[list[int]]]) -> tuple[Tensor, Tensor | None]:
    """Per sentence, the mean of the top encoder layer [N,d] ("enc") and of a second encoder's states [N,d] (the
    recurrence encoder's "rec", Hao et al. 2019, 5.4) or None, on the CPU (the probes train there). Ids are taken as
    the model sees them (callers append EOS with encode_source); eval mode."""
    if not batches or not all(batches):
        raise PipelineError("encoder_means: expected a non-empty list of non-empty batches of id lists")
    names = _encoder_outputs(model)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    means: list[list[Tensor]] = [[] for _ in names]
    try:
        for batch in batches:  # encoded on the model's device (the job's GPU), the means kept on the CPU
            memory = model.encode(pad(batch).to(device))
            for name, out in zip(names, means):
                out.append(masked_mean(memory[name], memory[f"{name}_pad"]).cpu())
    finally:
        model.train(was_training)
    return torch.cat(means[0]), (torch.cat(means[1]) if len(names) > 1 else None)


# ---------------------------------------------------------------- the probe classifier

class GatedProbe(nn.Module):
    """Optional gate over two sentence vectors, then a linear (hidden=0) or one-hidden-layer classifier."""

    def __init__(self, dim: int, n_classes: int, *, two_inputs: bool, hidden: int = 0):
        super().__init__()
        self.gate_proj = nn.Linear(2 * dim, dim) if two_inputs else None
        if hidden > 0:  # SentEval-like MLP: linear, sigmoid, linear (our choice, no dropout)
            self.classifier = nn.Sequential(nn.Linear(dim, hidden), nn.Sigmoid(), nn.Linear(hidden, n_classes))
        else:
            self.classifier = nn.Linear(dim, n_classes)

    def gate(self, a: Tensor, b: Tensor) -> Tensor:
        """g = sigmoid(W[a;b] + c), element-wise like eq. 17: a, b [N,d] -> [N,d] in (0,1)."""
        return torch.sigmoid(self.gate_proj(torch.cat([a, b], dim=-1)))

    def represent(self, a: Tensor, b: Tensor | None = None) -> Tensor:
        """The sentence vector [N,d]: a alone, or g*a + (1-g)*b (Hao et al. 2019, 5.4, as eq. 15)."""
        if self.gate_proj is None:
            return a
        g = self.gate(a, b)
        return g * a + (1.0 - g) * b

    def forward(self, a: Tensor, b: Tensor | None = None) -> Tensor:
        """a [N,d] (and b [N,d]) -> logits [N,C]."""
        return self.classifier(self.represent(a, b))


Features = tuple[tuple[Tensor, Tensor | None], list[str]]


def _check_split(name: str, split: Features, two: bool | None, dim: int | None) -> None:
    """PipelineError unless features and labels agree in count and match the train split's layout."""
    (a, b), labels = split
    if a.dim() != 2 or a.size(0) != len(labels) or (b is not None and tuple(b.shape) != tuple(a.shape)):
        raise PipelineError(f"train_probe: {name} features {tuple(a.shape)} / {None if b is None else tuple(b.shape)} "
                            f"with {len(labels)} labels; expected [N,d] (both encoders alike) and N labels")
    if two is not None and ((b is not None) != two or a.size(1) != dim):
        raise PipelineError(f"train_probe: {name} features differ from train's in dimension or number of encoders")


def _standardise(x: Tensor | None, mean: Tensor | None, std: Tensor | None) -> Tensor | None:
    """(x - mean) / std with train statistics (our choice: helps Adam; SentEval feeds raw vectors)."""
    return None if x is None else (x.float() - mean) / std


@torch.no_grad()
def _accuracy(probe: GatedProbe, a: Tensor, b: Tensor | None, y: Tensor) -> float:
    """Accuracy in percent."""
    probe.eval()
    return 100.0 * int((probe(a, b).argmax(dim=-1) == y).sum()) / len(y)


def train_probe(train: Features, dev: Features, test: Features, *, seed: int = 1, epochs: int = 50, hidden: int = 0,
                lr: float = 1e-3, batch_size: int = 64, patience: int = 10) -> dict:
    """Train a (gated) probe with Adam on minibatches, seeded; keep the epoch with the best dev accuracy.

    train/dev/test = ((a [N,d], b [N,d] or None), labels). Returns {"dev", "test" (percent), "n_train",
    "n_classes", "best_epoch", "epochs"} and "gate" (mean test gate on a) with two encoders. Stops after
    `patience` epochs without a better dev accuracy (our choice, as SentEval's early stopping).
    """
    _check_split("train", train, None, None)
    (a_tr, b_tr), labels_tr = train
    two, dim = b_tr is not None, a_tr.size(1)
    _check_split("dev", dev, two, dim)
    _check_split("test", test, two, dim)
    classes = sorted(set(labels_tr))
    if len(classes) < 2:
        raise PipelineError(f"train_probe: train labels {classes}; expected at least 2 classes")
    index = {label: i for i, label in enumerate(classes)}

    def prepare(name: str, split: Features) -> tuple[Tensor, Tensor | None, Tensor]:
        (a, b), labels = split
        unknown = sorted(set(labels) - set(index))
        if unknown:
            raise PipelineError(f"train_probe: {name} labels {unknown[:5]} never occur in train; expected train's "
                                f"labels {classes[:10]}")
        return (_standardise(a, *stats_a), _standardise(b, *stats_b),
                torch.tensor([index[label] for label in labels], dtype=torch.long))

    def stats(x: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
        return (None, None) if x is None else (x.float().mean(0), x.float().std(0).clamp(min=1e-6))

    stats_a, stats_b = stats(a_tr), stats(b_tr)
    (a, b, y), dev_t, test_t = prepare("train", train), prepare("dev", dev), prepare("test", test)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        probe = GatedProbe(dim, len(classes), two_inputs=two, hidden=hidden)
    optimiser = torch.optim.Adam(probe.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    best_acc, best_state, best_epoch, epoch = -1.0, None, 0, 0
    for epoch in range(1, epochs + 1):
        probe.train()
        for idx in torch.randperm(len(y), generator=generator).split(batch_size):
            loss = F.cross_entropy(probe(a[idx], None if b is None else b[idx]), y[idx])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        acc = _accuracy(probe, *dev_t)
        if acc >= best_acc:  # ties go to the later, longer-trained epoch (our choice)
            best_acc, best_state, best_epoch = acc, copy.deepcopy(probe.state_dict()), epoch
        elif epoch - best_epoch >= patience:
            break
    probe.load_state_dict(best_state)
    result = {"dev": best_acc, "test": _accuracy(probe, *test_t), "n_train": len(y), "n_classes": len(classes),
              "best_epoch": best_epoch, "epochs": epoch}
    if two:
        with torch.no_grad():
            result["gate"] = probe.gate(test_t[0], test_t[1]).mean().item()
    return result


# ---------------------------------------------------------------- end to end

def sentence_features(model: nn.Module, ids: list[list[int]], batch_size: int) -> tuple[Tensor, Tensor | None]:
    """Encoder means of id lists (EOS appended as in training), batched by length, returned in input order."""
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
    batches = [[encode_source(ids[i]) for i in order[k:k + batch_size]] for k in range(0, len(order), batch_size)]
    enc, rec = encoder_means(model, batches)
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
    return enc[inverse], (None if rec is None else rec[inverse])


def run_probing(model: nn.Module, encode_lines: Callable[[list[str]], list[list[int]]],
                task_files: Mapping[str, Path], *, seed: int = 1, batch_size: int = 128,
                **probe_kwargs) -> dict[str, dict]:
    """Probe a frozen model on each task file: {task: train_probe result}; encode_lines maps sentences to ids."""
    if batch_size < 1:
        raise PipelineError(f"run_probing: batch_size={batch_size}; expected a positive integer")
    results = {}
    for task, path in task_files.items():
        started = time.perf_counter()
        data = read_task(path)
        splits = {}
        for split in SPLITS:
            labels, sentences = data[split]
            ids = encode_lines(sentences)
            if len(ids) != len(sentences):
                raise PipelineError(f"{path}: encode_lines returned {len(ids)} id lists for {len(sentences)} "
                                    f"'{split}' sentences; expected one per sentence")
            splits[split] = (sentence_features(model, ids, batch_size), labels)
        results[task] = train_probe(splits["tr"], splits["va"], splits["te"], seed=seed, **probe_kwargs)
        log.info("probing %s: dev %.2f test %.2f (%.1fs)", task, results[task]["dev"], results[task]["test"],
                 time.perf_counter() - started)
    return results
