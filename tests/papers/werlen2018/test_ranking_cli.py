"""`python -m pipeline ranking` (werlen2018 Table 5): a blind sheet and its key, then the tally of the sheet filled in through the key."""
import json

from pipeline.cli import main
from pipeline.papers.werlen2018.ranking import COLUMNS

SYSTEMS = ("baseline", "mean", "self-attentive")
LINES = 8
# The judge: item -> ranks of (baseline, mean, self-attentive), 1 = best, ties and a gap included. By hand, over the
# 5 items, for the pairs in the order of the --hyp systems (counts better / equal / worse of the first system):
#   baseline vs. mean:           item 4 better; 1 equal; 2, 3, 5 worse     -> 1 / 1 / 3 = 20 / 20 / 60 %
#   baseline vs. self-attentive: items 3, 4 better; 1 equal; 2, 5 worse   -> 2 / 1 / 2 = 40 / 20 / 40 %
#   mean vs. self-attentive:     item 3 better; 1, 2, 4 equal; 5 worse     -> 1 / 3 / 1 = 20 / 60 / 20 %
JUDGE = {1: (1, 1, 1), 2: (2, 1, 1), 3: (2, 1, 3), 4: (1, 3, 3), 5: (3, 2, 1)}
EXPECTED = [("baseline", "mean", 1, 1, 3, 20.0, 20.0, 60.0),
            ("baseline", "self-attentive", 2, 1, 2, 40.0, 20.0, 40.0),
            ("mean", "self-attentive", 1, 3, 1, 20.0, 60.0, 20.0)]


def test_ranking_cli_writes_a_blind_sheet_and_tallies_it_filled(tmp_path):
    src, ref = tmp_path / "test.es", tmp_path / "test.en"
    src.write_text("".join(f"frase fuente {i}\n" for i in range(LINES)), encoding="utf-8")
    ref.write_text("".join(f"reference line {i}\n" for i in range(LINES)), encoding="utf-8")
    hyps = []
    for k, system in enumerate(SYSTEMS):  # texts free of the system names: the sheet must stay blind
        path = tmp_path / f"hyp{k}.txt"
        path.write_text("".join(f"output {k} of line {i}\n" for i in range(LINES)), encoding="utf-8")
        hyps.append(str(path))
    sheet, key, out = tmp_path / "en.sheet.tsv", tmp_path / "en.key.json", tmp_path / "en.json"

    def ranking(filled: list[str]) -> int:
        return main(["ranking", "--settings", json.dumps({"sentences": 5, "seed": 1}),
                     "--inputs", json.dumps({"hyps": hyps, "raw": str(tmp_path), "filled": filled}),
                     "--context", json.dumps({"rows": list(SYSTEMS), "split": "test", "src": "es", "tgt": "en"}),
                     "--extra", json.dumps({"sheet": str(sheet), "key": str(key)}), "--output", str(out)])

    assert ranking([]) == 0
    first = json.loads(out.read_text(encoding="utf-8"))
    assert first == {"sheet": str(sheet), "key": str(key), "items": 5, "systems": list(SYSTEMS), "filled": [],
                     "tally": None}
    text = sheet.read_text(encoding="utf-8")
    assert not any(system in text for system in SYSTEMS)  # the sheet names no system
    assert not any(word in text.lower() for word in ("mean", "attentive"))
    header_and_rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
    assert header_and_rows[0] == COLUMNS and len(header_and_rows) == 1 + 5 * 3
    key_data = json.loads(key.read_text(encoding="utf-8"))
    assert key_data["systems"] == list(SYSTEMS) and sorted(key_data["items"]) == ["1", "2", "3", "4", "5"]
    lines = [entry["line"] for _, entry in sorted(key_data["items"].items())]
    assert lines == sorted(lines) and len(set(lines)) == 5 and all(1 <= n <= LINES for n in lines)

    # Fill the ranks through the key (a judge who knows which letter is which system), as a spreadsheet saves it.
    filled_lines = []
    for line in text.splitlines():
        fields = line.split("\t")
        if line.startswith("#") or fields[0] == "item":
            filled_lines.append(line)
            continue
        item, letter = int(fields[0]), fields[4]
        entry = key_data["items"][str(item)]
        system = entry["order"]["ABC".index(letter)]
        assert int(fields[1]) == entry["line"]  # the row is the keyed test line ...
        assert fields[5] == f"output {SYSTEMS.index(system)} of line {entry['line'] - 1}"  # ... and system's text
        fields[6] = str(JUDGE[item][SYSTEMS.index(system)])
        filled_lines.append("\t".join(fields))
    filled = tmp_path / "sheets" / "en.tsv"
    filled.parent.mkdir()
    filled.write_text("\n".join(filled_lines) + "\n", encoding="utf-8")

    assert ranking([str(filled)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert sheet.read_text(encoding="utf-8") == text  # seeded: the same sheet again
    assert result["filled"] == [str(filled)] and result["items"] == 5
    assert result["tally"]["items"] == 5 and result["tally"]["sheets"] == 1
    got = [(p["first"], p["second"], p["better"], p["equal"], p["worse"], p["better_pct"], p["equal_pct"],
            p["worse_pct"]) for p in result["tally"]["pairs"]]
    assert got == EXPECTED
    assert all(p["items"] == 5 for p in result["tally"]["pairs"])
