"""Building a paper-scale task's raw layout: members made local text files (download, extract, sacrebleu, user
paths), the parts concatenated per split, further references and gold links, and the data card."""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

from pipeline.data.download import archive_kind, download, extract
from pipeline.data.remote.entries import (BITEXT_SEPARATOR, ManualFile, Member, ParallelPart, RemoteFile, RemoteTask,
                                          SacrebleuSet)
from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, write_lines

# Our choice: characters that some readers treat as line breaks (Python's str.splitlines, universal
# newlines) become spaces, so every later tool sees the same line alignment.
_LINE_BREAKS = {c: " " for c in (0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def _fingerprint(path: Path) -> str:
    """Short id of a local file's identity (path, size, mtime): a new file gets a fresh extraction dir."""
    st = path.stat()
    return hashlib.sha1(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]


class _Builder:
    """Turns members into local text files (download, extract, user paths) and records what it used."""

    def __init__(self, cache_dir: Path, manual: dict[str, str] | None, progress: bool):
        self.cache_dir, self.manual, self.progress = Path(cache_dir), dict(manual or {}), progress

    def manual_path(self, file: ManualFile, expected: list[str]) -> Path:
        """The user-supplied path for `file`; missing key or path -> error naming the params key."""
        value = self.manual.get(file.key)
        wanted = ", ".join(expected)
        if not value:
            raise PipelineError(
                f"{file.description} must be supplied by you: set params key '{file.params_key}' to a local "
                f"directory or archive holding {wanted}; obtain it from {file.obtain}")
        path = Path(value).expanduser()
        if not path.exists():
            raise PipelineError(f"params key '{file.params_key}' points to {path}, which does not exist; "
                                f"expected a directory or archive holding {wanted}")
        return path

    def local_text(self, member: Member) -> tuple[Path, dict]:
        """A plain local text file for `member` (one column of it for a bitext member), and its card entry."""
        path, info = self._member_text(member)
        if member.column is None:
            return path, info
        return _bitext_column(path, member.column, self.cache_dir / "extracted" / f"columns-{_fingerprint(path)}"), info

    def _member_text(self, member: Member) -> tuple[Path, dict]:
        """A plain local text file for the whole of `member`, and its card entry."""
        if isinstance(member.file, RemoteFile):
            file = member.file
            archive = download(file.url, self.cache_dir / "downloads" / file.key / file.filename,
                               md5=file.md5, sha256=file.sha256, progress=self.progress)
            info = file.describe()
            return self._open_member(archive, member.path, f"{file.key}-{_fingerprint(archive)}", file.url), info
        file = member.file
        base = self.manual_path(file, [member.path or "(the file itself)"])
        info = dict(file.describe(), path=str(base))
        if base.is_dir():
            if member.path is None:
                raise PipelineError(f"params key '{file.params_key}' points to the directory {base}; expected a file")
            target = base / member.path
            if not target.is_file():
                raise PipelineError(f"params key '{file.params_key}': {target} is missing; expected {member.path} "
                                    f"inside {base}")
            return target, info
        return self._open_member(base, member.path, f"manual-{file.key}-{_fingerprint(base)}", file.params_key), info

    def _open_member(self, archive: Path, path: str | None, cache_name: str, origin: str) -> Path:
        """Extract `path` from `archive` (or use the file itself when it is plain text)."""
        kind = archive_kind(archive)
        if kind == "plain":
            if path is not None:
                raise PipelineError(f"{origin}: {archive} is not an archive, so member {path!r} cannot be read; "
                                    f"expected .tgz, .tar.gz, .tar, .zip or .gz")
            return archive
        if kind in ("tar", "zip") and path is None:
            raise PipelineError(f"{origin}: {archive} is an archive; expected a member path for it in the registry")
        pattern = glob.escape(path) if path is not None else "*"
        found = extract(archive, pattern, self.cache_dir / "extracted" / cache_name)[0]
        if kind in ("tar", "zip") and archive_kind(found) == "gz":  # e.g. giga-fren's *.gz inside a .tar
            plain = found.parent / f"{found.name}.d" / found.name[: -len(".gz")]
            return plain if plain.exists() else extract(found, "*", plain.parent)[0]
        return found

    def sacrebleu_text(self, item: SacrebleuSet, src: str, tgt: str) -> tuple[Path, Path, dict]:
        """Source and reference files of a sacrebleu set (sacrebleu downloads it into cache_dir/sacrebleu)."""
        import sacrebleu
        from sacrebleu.dataset import DATASETS

        pair = f"{src}-{tgt}"
        if item.test_set not in DATASETS:
            raise PipelineError(f"sacrebleu {sacrebleu.__version__} has no test set '{item.test_set}'")
        dataset = DATASETS[item.test_set]
        if pair not in dataset.langpairs:
            raise PipelineError(f"sacrebleu test set '{item.test_set}' has no language pair '{pair}'; "
                                f"expected one of {sorted(dataset.langpairs)}")
        out = self.cache_dir / "eval" / item.test_set.replace("/", "_")
        paths = []
        for field, lang in (("src", src), ("ref", tgt)):
            path = out / f"{pair}.{lang}"
            if not path.exists():
                lines = _sacrebleu_echo(item.test_set, pair, field, self.cache_dir / "sacrebleu")
                with atomic_open(path) as handle:
                    handle.writelines(line + "\n" for line in lines)
            paths.append(path)
        info = {"sacrebleu": item.test_set, "langpair": pair, "urls": list(dataset.data or []),
                "md5": list(dataset.md5 or []), "sacrebleu_version": sacrebleu.__version__,
                "verified": bool(dataset.md5)}
        return paths[0], paths[1], info


def _sacrebleu_echo(test_set: str, pair: str, field: str, sacrebleu_dir: Path) -> list[str]:
    """Lines of one side of a sacrebleu set, via `sacrebleu -t SET -l PAIR --echo FIELD` (downloads on demand)."""
    env = dict(os.environ, SACREBLEU=str(sacrebleu_dir), PYTHONIOENCODING="utf-8")
    cmd = [sys.executable, "-m", "sacrebleu", "-t", test_set, "-l", pair, "--echo", field]
    proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise PipelineError(f"sacrebleu could not provide {test_set} {pair} {field} (it downloads into "
                            f"{sacrebleu_dir}; is the network reachable?): {' | '.join(tail)}")
    text = proc.stdout.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _bitext_column(path: Path, column: int, out_dir: Path) -> Path:
    """Column `column` of a "side0 ||| side1" file, written once to out_dir; a malformed line names file:line."""
    target = out_dir / f"{path.name}.col{column}"
    if target.exists():
        return target
    with open(path, "rb") as source, atomic_open(target) as out:
        for number, raw in enumerate(source, start=1):
            line, _ = _clean(raw, path, number)
            fields = line.split(BITEXT_SEPARATOR)
            if len(fields) <= column:
                raise PipelineError(f"{path}:{number}: {len(fields)} field(s) separated by {BITEXT_SEPARATOR!r}; "
                                    f"expected at least {column + 1}")
            out.write(fields[column].strip() + "\n")
    return target


def _clean(raw: bytes, path: Path, number: int) -> tuple[str, bool]:
    """Decode one raw line strictly; strip its newline; turn inner line-break characters into spaces."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PipelineError(
            f"{path}:{number}: invalid UTF-8 at byte {err.start} of the line; expected UTF-8 text") from None
    text = text.rstrip("\n").rstrip("\r")
    if number == 1:
        text = text.removeprefix("\ufeff")
    cleaned = text.translate(_LINE_BREAKS)
    return cleaned, cleaned != text


def _clean_lines(path: Path) -> list[str]:
    """A file's lines decoded and cleaned as _append_part does."""
    with open(path, "rb") as handle:
        return [_clean(raw, path, number)[0] for number, raw in enumerate(handle, start=1)]


def _append_part(name: str, src_path: Path, tgt_path: Path, out_src: IO, out_tgt: IO) -> tuple[int, int]:
    """Append a part's aligned lines to the open outputs; returns (lines, lines normalised).

    Different line counts -> PipelineError naming the part and both files.
    """
    count = normalised = 0
    with open(src_path, "rb") as fs, open(tgt_path, "rb") as ft:
        for count, (a, b) in enumerate(itertools.zip_longest(fs, ft), start=1):
            if a is None or b is None:
                rest = 1 + sum(1 for _ in (ft if a is None else fs))
                n_src, n_tgt = (count - 1, count - 1 + rest) if a is None else (count - 1 + rest, count - 1)
                raise PipelineError(f"part '{name}': {src_path} has {n_src} lines but {tgt_path} has {n_tgt}; "
                                    f"expected the same number of lines on both sides")
            line_src, fixed_src = _clean(a, src_path, count)
            line_tgt, fixed_tgt = _clean(b, tgt_path, count)
            out_src.write(line_src + "\n")
            out_tgt.write(line_tgt + "\n")
            normalised += fixed_src or fixed_tgt
    return count, normalised


def _check_manual(task: RemoteTask, builder: _Builder) -> None:
    """Fail early, before any download, when a user-supplied path is missing: one error (one line) naming every
    missing or wrong params key of the task at once, so that one run tells the user all they have to supply."""
    problems = []
    for file, members in task.manual_members().items():
        try:
            builder.manual_path(file, members)
        except PipelineError as err:
            problems.append(str(err))
    if len(problems) > 1:
        raise PipelineError(f"{len(problems)} licensed parts of {task.name} are missing: "
                            + "; ".join(f"({i}) {problem}" for i, problem in enumerate(problems, start=1)))
    if problems:
        raise PipelineError(problems[0])


def _materialise(item: ParallelPart | SacrebleuSet, src: str, tgt: str, builder: _Builder) -> tuple[Path, Path, dict]:
    """Local source and target text files of a part or sacrebleu set, and its card entry."""
    if isinstance(item, SacrebleuSet):
        src_path, tgt_path, info = builder.sacrebleu_text(item, src, tgt)
        return src_path, tgt_path, {"set": info}
    src_path, src_info = builder.local_text(item.member(src))
    tgt_path, tgt_info = builder.local_text(item.member(tgt))
    return src_path, tgt_path, {src: dict(src_info, member=item.member(src).path),
                                tgt: dict(tgt_info, member=item.member(tgt).path)}


def _write_split(split: str, items: list, src: str, tgt: str, out_dir: Path) -> dict:
    """Concatenate materialised `items` (name, src path, tgt path, files) in order into {split}.{src|tgt}."""
    entries, total = [], 0
    with atomic_open(out_dir / f"{split}.{src}") as out_src, atomic_open(out_dir / f"{split}.{tgt}") as out_tgt:
        for name, src_path, tgt_path, files in items:
            lines, normalised = _append_part(name, src_path, tgt_path, out_src, out_tgt)
            entries.append({"name": name, "lines": lines, "normalised_lines": normalised, "files": files})
            total += lines
    return {"lines": total, "parts": entries}


def _write_links(split: str, item: ParallelPart, forward: bool, lines: int, builder: _Builder, out_dir: Path) -> dict:
    """Write {split}.links, line-aligned with the split's text (the part's own direction only); its card entry."""
    if not forward:
        raise PipelineError(f"part '{item.name}' has gold links source-first in its task's direction; expected the "
                            f"task built in that direction only")
    path, info = builder.local_text(item.links)
    links = _clean_lines(path)
    if len(links) != lines:
        raise PipelineError(f"{path}: {len(links)} lines, but {split} has {lines} sentence pairs; expected the gold "
                            f"links of {item.name} one line per pair")
    write_lines(out_dir / f"{split}.links", links)
    return dict(info, member=item.links.path)


def _where(side: dict) -> str:
    """Where a card entry's data came from."""
    if "sacrebleu" in side:
        return f"sacrebleu {side['sacrebleu']} {side['langpair']} ({', '.join(side['urls'])})"
    return side.get("url") or f"user-supplied `{side['manual_key']}`"


def _sums(side: dict) -> str:
    """A card entry's checksum(s), or UNVERIFIED."""
    sums = side.get("sha256") or side.get("md5")
    if isinstance(sums, list):
        sums = ", ".join(sums)
    return f"`{sums}`" if sums else "UNVERIFIED"


def _card_markdown(card: dict) -> str:
    """A short human-readable data card."""
    rows = [f"# Data card: {card['name']}", "",
            f"Task {card['task']} ({card['task_url']}), direction {card['src']} -> {card['tgt']}; "
            "plain UTF-8, untokenised.", "",
            "| split | part | lines | source | checksum |", "|---|---|---:|---|---|"]
    for split, info in card["splits"].items():
        for entry in info["parts"]:
            side = next(iter(entry["files"].values()))  # one row per part: its first side names the source
            rows.append(f"| {split} | {entry['name']} | {entry['lines']} | {_where(side)} | {_sums(side)} |")
        rows.append(f"| {split} | **total** | {info['lines']} | | |")
    unverified = card["unverified"]
    rows += ["", f"Unverified inputs (no checksum): {', '.join(unverified) if unverified else 'none'}."]
    return "\n".join(rows) + "\n"


def build_remote(task: RemoteTask, src: str, tgt: str, out_dir: Path, cache_dir: Path, *,
                 manual: dict[str, str] | None = None, name: str | None = None, progress: bool = True) -> dict:
    """Build {out_dir}/train|valid|test[-<name>].{src,tgt} and datacard.json/.md for `task`, src -> tgt."""
    if sorted((src, tgt)) != sorted(task.langs) or src == tgt:
        raise PipelineError(f"task '{task.name}' covers {task.langs[0]}-{task.langs[1]} (either direction); "
                            f"got src='{src}', tgt='{tgt}'")
    if not task.both_directions and (src, tgt) != task.langs:
        raise PipelineError(f"task '{task.name}' is registered for {task.langs[0]}->{task.langs[1]} only; "
                            f"got src='{src}', tgt='{tgt}'")
    out_dir = Path(out_dir)
    builder = _Builder(cache_dir, manual, progress)
    _check_manual(task, builder)
    # Fetch everything first (the long part), then write the outputs.
    inputs = {split: [(item.name, *_materialise(item, src, tgt, builder)) for item in items]
              for split, items in [("train", task.train)] + [(name, [s]) for name, s in task.eval_sets()]}
    splits = {split: _write_split(split, items, src, tgt, out_dir) for split, items in inputs.items()}
    for split, item in task.eval_sets():
        references = [m for lang, m in getattr(item, "more_references", ()) if lang == tgt]
        for k, member in enumerate(references, start=1):  # <split>.<tgt>.k, line-aligned with <split>.<tgt>
            path, info = builder.local_text(member)
            lines = _clean_lines(path)
            if len(lines) != splits[split]["lines"]:
                raise PipelineError(f"{path}: {len(lines)} lines, but {split}.{tgt} has {splits[split]['lines']}; "
                                    f"expected reference {k} of {item.name} to align line by line")
            write_lines(out_dir / f"{split}.{tgt}.{k}", lines)
            splits[split].setdefault("references", []).append(dict(info, member=member.path))
        if getattr(item, "links", None) is not None:
            splits[split]["links"] = _write_links(split, item, (src, tgt) == task.langs, splits[split]["lines"],
                                                  builder, out_dir)
    unverified = sorted({side.get("key") or side.get("manual_key") or side.get("sacrebleu")
                         for s in splits.values() for e in s["parts"] for side in e["files"].values()
                         if not side.get("verified")})
    card = {"name": name or f"{task.name} {src}-{tgt}", "kind": "remote", "src": src, "tgt": tgt,
            "description": f"{task.name} ({task.url}), {src}->{tgt}: training parts concatenated in the order "
                           "listed; plain UTF-8, " + ("the training parts Moses-tokenised and XML-escaped as released"
                                                     if task.tokenized_train else "untokenised"),
            "task": task.name, "task_url": task.url, "pretokenized": False,
            "escaped_splits": ["train"] if task.tokenized_train else [],
            "counts": {split: info["lines"] for split, info in splits.items()}, "splits": splits,
            "unverified": unverified,
            "note": "our choice: line-break-like characters inside a line are replaced by spaces "
                    "(counted per part as normalised_lines)"}
    with atomic_open(out_dir / "datacard.json") as handle:
        json.dump(card, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    with atomic_open(out_dir / "datacard.md") as handle:
        handle.write(_card_markdown(card))
    return card
