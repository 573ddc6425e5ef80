"""Typed entries of the paper-scale corpora: files with URL and checksum, user-supplied files, the members and parts
they hold, and tasks with train/dev/test (style after Sockeye Autopilot's task definitions: a corpus file is a URL
plus checksum, a task names the languages and the members that make its train, dev and test sets)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Union
from urllib.parse import urlparse

from pipeline.errors import PipelineError

# Where params.yaml keeps user-supplied paths; error messages name keys as f"{MANUAL_PARAMS_SECTION}.{key}".
MANUAL_PARAMS_SECTION = "paths.manual"


@dataclass(frozen=True)
class RemoteFile:
    """A downloadable file (archive or text) with its checksum and the public source of that checksum, or, where no
    checksum is published, `no_checksum`: why (tests/data/test_checksums.py lists these files)."""

    key: str
    url: str
    md5: str | None = None
    sha256: str | None = None
    source: str = ""
    local_name: str | None = None  # saved under this name when the URL path does not name the file (e.g. a query)
    no_checksum: str = ""

    @property
    def verified(self) -> bool:
        """True when a checksum is known."""
        return bool(self.md5 or self.sha256)

    @property
    def filename(self) -> str:
        """local_name, else the base name of the URL path."""
        return self.local_name or os.path.basename(urlparse(self.url).path) or self.key

    def describe(self) -> dict:
        """Card entry."""
        card = {"key": self.key, "url": self.url, "md5": self.md5, "sha256": self.sha256,
                "verified": self.verified, "checksum_source": self.source}
        return dict(card, no_checksum=self.no_checksum) if self.no_checksum else card


@dataclass(frozen=True)
class ManualFile:
    """A registration-only file the user supplies; `key` is the params key that holds its local path."""

    key: str
    description: str
    obtain: str

    @property
    def params_key(self) -> str:
        """Full params key to set."""
        return f"{MANUAL_PARAMS_SECTION}.{self.key}"

    def describe(self) -> dict:
        """Card entry (the local path is added when resolved)."""
        return {"manual_key": self.params_key, "description": self.description, "obtain": self.obtain,
                "verified": False}


Source = Union[RemoteFile, ManualFile]


# Column separator of one-file bitexts (e.g. WMT15 Wiki Headlines: "source ||| target" per line).
BITEXT_SEPARATOR = " ||| "


@dataclass(frozen=True)
class Member:
    """One language side: a file and the path inside it (None: the file itself, or a .gz's only member).

    A member that is itself a .gz inside an archive is decompressed; `column` picks one side of a
    one-file bitext whose lines are "side0 ||| side1".
    """

    file: Source
    path: str | None = None
    column: int | None = None


@dataclass(frozen=True)
class ParallelPart:
    """A named parallel corpus part: one Member per language, and further references of a test set (NIST has four
    references per sentence: the first is the target side, the others are written as <split>.<tgt>.1, .2, ...).

    `links`: gold word alignments of a test set, written as <split>.links, one line per sentence pair of
    space-separated "i-j" (sure) or "i?j" (possible) links, i a 0-based source and j a 0-based target word index
    over the whitespace tokens of the two sides (our format; pipeline/papers/zhang2018/alignment.py reads it). A part
    with links has both directions' word indices source first: the task must be registered in one direction only.
    """

    name: str
    sides: tuple[tuple[str, Member], ...]
    more_references: tuple[tuple[str, Member], ...] = ()  # (language, member) of references 1, 2, ...
    links: Member | None = None

    def member(self, lang: str) -> Member:
        """The member holding language `lang`."""
        for code, member in self.sides:
            if code == lang:
                return member
        raise PipelineError(f"part '{self.name}' has no '{lang}' side; expected one of {[c for c, _ in self.sides]}")


def part(name: str, file: Source, paths: dict[str, str | None]) -> ParallelPart:
    """A part whose language sides all come from `file` (paths: language -> member path)."""
    return ParallelPart(name, tuple((lang, Member(file, path)) for lang, path in paths.items()))


@dataclass(frozen=True)
class SacrebleuSet:
    """A dev/test set served by sacrebleu; the language pair is the build direction (e.g. 'en-de')."""

    name: str
    test_set: str


EvalSet = Union[ParallelPart, SacrebleuSet]


@dataclass(frozen=True)
class RemoteTask:
    """A paper-scale task: a language pair, training parts (concatenated in order), a dev and a test set."""

    name: str
    langs: tuple[str, str]
    url: str
    train: tuple[ParallelPart, ...]
    valid: EvalSet
    test: EvalSet
    extra_tests: tuple[EvalSet, ...] = ()  # further test sets, built as test-<name>.{src,tgt}
    both_directions: bool = True  # False: only langs[0] -> langs[1] is registered (e.g. NIST Zh->En)
    # the training parts come Moses-tokenised with XML escapes (&apos;re): the tokenize step unescapes them instead of
    # tokenising again; the dev and test sets (sacreBLEU's, raw) are tokenised as usual
    tokenized_train: bool = False

    def eval_sets(self) -> list[tuple[str, EvalSet]]:
        """(split name, set) of dev and every test set: valid, test, then test-<name> per extra test."""
        return [("valid", self.valid), ("test", self.test)] + [(f"test-{t.name}", t) for t in self.extra_tests]

    def parts(self) -> list[ParallelPart]:
        """Every ParallelPart of the task (train, then dev and test sets when they are parts)."""
        return list(self.train) + [s for _, s in self.eval_sets() if isinstance(s, ParallelPart)]

    def manual_members(self) -> dict[ManualFile, list[str]]:
        """User-supplied files and the member paths expected in each."""
        out: dict[ManualFile, list[str]] = {}
        for p in self.parts():
            for _, member in p.sides + p.more_references + ((("links", p.links),) if p.links else ()):
                if isinstance(member.file, ManualFile):
                    out.setdefault(member.file, []).append(member.path or "(the file itself)")
        return out
