"""Writing a built corpus: {split}.{src|tgt} files and datacard.json/.md (embedded, synthetic and generation corpora),
with mean sentence lengths in words, or characters for zh/ja."""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fileio import atomic_open, write_lines

CHAR_LANGS = frozenset({"zh", "ja"})  # lengths counted in characters, not words


def text_length(text: str, lang: str) -> int:
    """Length in words, or in characters (spaces excluded) for zh/ja."""
    if lang in CHAR_LANGS:
        return len(text.replace(" ", ""))
    return len(text.split())


def mean_length(lines: list[str], lang: str) -> float:
    """Mean length of lines in words (characters for zh/ja), rounded to 2 decimals; 0 for no lines."""
    return round(sum(text_length(line, lang) for line in lines) / len(lines), 2) if lines else 0.0


def write_corpus(out_dir: Path, src: str, tgt: str, splits: dict[str, list[tuple[str, str]]],
                 card: dict) -> dict:
    """Write {split}.{src}/{split}.{tgt} and datacard.json/.md atomically; return the completed card.

    The card gains "counts" and "mean_length" (per split and side), measured on what was written.
    """
    out_dir = Path(out_dir)
    counts, lengths = {}, {}
    for split in ("train", "valid", "test"):
        src_lines = [s for s, _ in splits[split]]
        tgt_lines = [t for _, t in splits[split]]
        for lines in (src_lines, tgt_lines):
            bad = next((line for line in lines if "\n" in line or "\r" in line), None)
            if bad is not None:
                raise PipelineError(f"{out_dir}/{split}: sentence contains a line break: {bad!r}")
        write_lines(out_dir / f"{split}.{src}", src_lines)
        write_lines(out_dir / f"{split}.{tgt}", tgt_lines)
        counts[split] = len(src_lines)
        lengths[split] = {src: mean_length(src_lines, src), tgt: mean_length(tgt_lines, tgt)}
    card = {**card, "counts": counts, "mean_length": lengths}
    with atomic_open(out_dir / "datacard.json") as handle:
        json.dump(card, handle, indent=2, ensure_ascii=False, sort_keys=False)
        handle.write("\n")
    with atomic_open(out_dir / "datacard.md") as handle:
        handle.write(render_card(card))
    return card


def render_card(card: dict) -> str:
    """The data card as Markdown."""
    src, tgt = card["src"], card["tgt"]
    out = [f"# Data card: {card['name']} ({src}-{tgt})", "", card.get("description", ""), ""]
    if card.get("sources"):
        out += ["## Sources", "", "| package | version | licence | sha256 | pairs kept |", "|---|---|---|---|---|"]
        out += [f"| {s['package']} | {s['version']} | {s['license']} | `{s['sha256']}` | {s['pairs']} |"
                for s in card["sources"]]
        out.append("")
    units = {lang: "characters" if lang in CHAR_LANGS else "words" for lang in (src, tgt)}
    out += ["## Splits", "", f"| split | pairs | mean {src} length ({units[src]}) | mean {tgt} length ({units[tgt]}) |",
            "|---|---|---|---|"]
    out += [f"| {split} | {card['counts'][split]} | {card['mean_length'][split][src]} | "
            f"{card['mean_length'][split][tgt]} |" for split in ("train", "valid", "test")]
    if card.get("dropped"):
        out += ["", "## Dropped", "", "| reason | count |", "|---|---|"]
        out += [f"| {reason} | {count} |" for reason, count in card["dropped"].items()]
    out += ["", "## Settings", "", "```json", json.dumps(card.get("settings", {}), indent=2), "```", ""]
    return "\n".join(out)
