"""Blind ranking sheets: seeded sample and orders, blind TSV, a simulated judge, pairwise tally, error messages."""
import json

import pytest

from pipeline.errors import PipelineError
from pipeline.papers.werlen2018.ranking import (COLUMNS, build_sheet, read_key, read_sheet, tally, write_key,
                                       write_sheet)

SYSTEMS = ["baseline", "mean", "self"]
LINES = 12
SOURCES = [f"quelle satz nummer {i}" for i in range(LINES)]
REFERENCES = [f"reference sentence {i}" for i in range(LINES)]
# Texts free of the system names (the sheet must stay blind); system k's line i is "output k of sentence i".
HYPOTHESES = {name: [f"output {k} of sentence {i}" for i in range(LINES)] for k, name in enumerate(SYSTEMS)}

# The simulated judge: item -> (rank of baseline, mean, self), ties and gaps included. By hand, over 10 items:
#   self vs baseline: better on 1-5, equal on 6-8, worse on 9-10        -> 5 / 3 / 2 = 50 / 30 / 20 %
#   mean vs baseline: better on 1, 2, 5; equal on 3, 6, 7; worse on 4, 8, 9, 10 -> 30 / 30 / 40 %
#   self vs mean:     better on 1, 3, 4, 8; equal on 2, 6, 7, 10; worse on 5, 9 -> 40 / 40 / 20 %
JUDGE = {1: (3, 2, 1), 2: (2, 1, 1), 3: (2, 2, 1), 4: (2, 3, 1), 5: (3, 1, 2),
         6: (1, 1, 1), 7: (2, 2, 2), 8: (1, 3, 1), 9: (1, 2, 3), 10: (1, 2, 2)}
PAIRS = [("mean", "baseline"), ("self", "baseline"), ("self", "mean")]


def sheet(tmp_path, seed: int = 7, n: int = 10):
    """Build and write a sheet and its key; (sheet path, key path, rows, key)."""
    rows, key = build_sheet(SOURCES, REFERENCES, HYPOTHESES, n=n, seed=seed)
    write_sheet(rows, tmp_path / "sheet.tsv")
    write_key(key, tmp_path / "key.json")
    return tmp_path / "sheet.tsv", tmp_path / "key.json", rows, key


def fill(path, key: dict, judge: dict) -> None:
    """Fill the rank column as a judge who sees the systems through the key (the test's cheat)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        fields = line.split("\t")
        if len(fields) != len(COLUMNS) or fields[0] == "item" or line.startswith("#"):
            continue
        item, letter = int(fields[0]), fields[4]
        system = key["items"][item]["order"]["ABC".index(letter)]
        fields[6] = str(judge[item][SYSTEMS.index(system)])
        lines[i] = "\t".join(fields)
    path.write_text("\n".join(lines), encoding="utf-8")


def data_line(path, item: int, letter: str) -> int:
    """1-based line number of an item's candidate row in the sheet file."""
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        fields = line.split("\t")
        if len(fields) == len(COLUMNS) and fields[0] == str(item) and fields[4] == letter:
            return number
    raise AssertionError(f"no row for item {item} candidate {letter}")


def edit(path, number: int, column: int, value: str | None) -> None:
    """Set one cell of the 1-based line `number` (value None deletes the line)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if value is None:
        del lines[number - 1]
    else:
        fields = lines[number - 1].split("\t")
        fields[column] = value
        lines[number - 1] = "\t".join(fields)
    path.write_text("\n".join(lines), encoding="utf-8")


def test_sample_and_orders_are_seeded():
    rows, key = build_sheet(SOURCES, REFERENCES, HYPOTHESES, n=10, seed=7)
    again = build_sheet(SOURCES, REFERENCES, HYPOTHESES, n=10, seed=7)
    other = build_sheet(SOURCES, REFERENCES, HYPOTHESES, n=10, seed=8)
    assert (rows, key) == again
    assert key != other[1]
    lines = [row["line"] for row in rows]
    assert lines == sorted(set(lines)) and len(lines) == 10 and 1 <= lines[0] and lines[-1] <= LINES
    assert [row["item"] for row in rows] == list(range(1, 11))
    assert key["systems"] == SYSTEMS and key["seed"] == 7 and key["n"] == 10
    orders = [tuple(key["items"][item]["order"]) for item in range(1, 11)]
    assert all(sorted(order) == SYSTEMS for order in orders)
    assert len(set(orders)) > 1
    assert orders != [tuple(other[1]["items"][item]["order"]) for item in range(1, 11)]


def test_rows_hold_the_systems_translations_in_key_order():
    rows, key = build_sheet(SOURCES, REFERENCES, HYPOTHESES, n=10, seed=7)
    for row in rows:
        entry = key["items"][row["item"]]
        assert entry["line"] == row["line"]
        assert row["source"] == SOURCES[row["line"] - 1] and row["reference"] == REFERENCES[row["line"] - 1]
        assert row["translations"] == [HYPOTHESES[s][row["line"] - 1] for s in entry["order"]]
    no_refs, _ = build_sheet(SOURCES, None, HYPOTHESES, n=3, seed=7)
    assert "reference" not in no_refs[0]


def test_all_lines_when_fewer_than_n():
    rows, key = build_sheet(SOURCES, None, HYPOTHESES, n=50, seed=1)
    assert [row["line"] for row in rows] == list(range(1, LINES + 1))
    assert sorted(key["items"]) == list(range(1, LINES + 1))


def test_sheet_is_blind_and_key_round_trips(tmp_path):
    path, key_path, rows, key = sheet(tmp_path)
    text = path.read_text(encoding="utf-8")
    for name in SYSTEMS:
        assert name not in text.lower()
    lines = text.split("\n")
    comments = [line for line in lines if line.startswith("#")]
    assert comments and any("1 1 2" in line for line in comments)
    header = lines[len(comments)]
    assert header.split("\t") == ["item", "line", "source", "reference", "candidate", "translation", "rank"]
    data = [line.split("\t") for line in lines[len(comments) + 1:] if line]
    assert len(data) == 30 and all(fields[6] == "" for fields in data)
    assert [fields[4] for fields in data[:3]] == ["A", "B", "C"]
    assert json.loads(key_path.read_text(encoding="utf-8"))["systems"] == SYSTEMS
    assert read_key(key_path) == key
    assert not list(tmp_path.glob(".*.tmp"))


def test_texts_with_tabs_and_newlines_stay_on_one_row(tmp_path):
    hyps = {"x": ["a\tb\nc"], "y": ['say "hi"']}
    rows, key = build_sheet(["src"], None, hyps, n=1, seed=0)
    write_sheet(rows, tmp_path / "s.tsv")
    fill_ranks = {1: {"x": 1, "y": 2}}
    lines = (tmp_path / "s.tsv").read_text(encoding="utf-8").split("\n")
    out = []
    for line in lines:
        if line.startswith("1\t"):
            letter = line.split("\t")[4]
            line = line + str(fill_ranks[1][key["items"][1]["order"]["AB".index(letter)]])
        out.append(line)
    (tmp_path / "s.tsv").write_text("\n".join(out), encoding="utf-8")
    assert sum(line.startswith("1\t") for line in out) == 2
    ranks = read_sheet(tmp_path / "s.tsv", key)
    result = tally([(ranks, key)], [("x", "y")])
    assert (result["pairs"][0]["better"], result["pairs"][0]["equal"], result["pairs"][0]["worse"]) == (1, 0, 0)


def test_filled_sheet_tallies_to_hand_computed_percentages(tmp_path):
    path, key_path, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    ranks = read_sheet(path)
    assert sorted(ranks) == list(range(1, 11)) and all(sorted(r) == ["A", "B", "C"] for r in ranks.values())
    assert ranks == read_sheet(path, read_key(key_path))
    result = tally([(ranks, read_key(key_path))], PAIRS + [("baseline", "self")])
    assert result["items"] == 10 and result["sheets"] == 1
    got = [(p["first"], p["second"], p["better"], p["equal"], p["worse"], p["items"]) for p in result["pairs"]]
    assert got == [("mean", "baseline", 3, 3, 4, 10), ("self", "baseline", 5, 3, 2, 10),
                   ("self", "mean", 4, 4, 2, 10), ("baseline", "self", 2, 3, 5, 10)]
    pcts = [(p["better_pct"], p["equal_pct"], p["worse_pct"]) for p in result["pairs"]]
    assert pcts == [(30.0, 30.0, 40.0), (50.0, 30.0, 20.0), (40.0, 40.0, 20.0), (20.0, 30.0, 50.0)]


def test_sheets_are_pooled(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir(), second.mkdir()
    path1, _, _, key1 = sheet(first, seed=7)
    path2, _, _, key2 = sheet(second, seed=8)
    fill(path1, key1, JUDGE)
    fill(path2, key2, {item: (1, 1, 1) for item in range(1, 11)})
    result = tally([(read_sheet(path1), key1), (read_sheet(path2), key2)], [("self", "baseline")])
    pair = result["pairs"][0]
    assert (result["items"], result["sheets"]) == (20, 2)
    assert (pair["better"], pair["equal"], pair["worse"], pair["items"]) == (5, 13, 2, 20)
    assert (pair["better_pct"], pair["equal_pct"], pair["worse_pct"]) == (25.0, 65.0, 10.0)


def test_non_dense_ranks_and_spreadsheet_padding_are_read(tmp_path):
    path, _, _, key = sheet(tmp_path, n=2)
    fill(path, key, {1: (1, 1, 3), 2: (5, 2, 2)})
    text = path.read_text(encoding="utf-8").replace("\n", "\t\t\n")   # a spreadsheet's trailing empty cells
    path.write_text("\ufeff" + text, encoding="utf-8")
    ranks = read_sheet(path, key)
    by_system = {item: {key["items"][item]["order"]["ABC".index(c)]: r for c, r in ranks[item].items()}
                 for item in ranks}
    assert by_system == {1: {"baseline": 1, "mean": 1, "self": 3}, 2: {"baseline": 5, "mean": 2, "self": 2}}


@pytest.mark.parametrize("value, words", [("", "no rank"), ("x", "rank 'x'"), ("0", "rank '0'"),
                                          ("1.5", "rank '1.5'")])
def test_bad_rank_names_file_and_line(tmp_path, value, words):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    number = data_line(path, 4, "B")
    edit(path, number, 6, value)
    with pytest.raises(PipelineError) as err:
        read_sheet(path)
    assert f"{path}:{number}:" in str(err.value) and words in str(err.value)
    assert "candidate B of item 4" in str(err.value)


def test_missing_candidate_names_file_and_line(tmp_path):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    first = data_line(path, 3, "A")
    edit(path, data_line(path, 3, "B"), 0, None)
    for with_key in (None, key):
        with pytest.raises(PipelineError) as err:
            read_sheet(path, with_key)
        assert f"{path}:{first}: item 3 has candidates A, C; missing B" in str(err.value)


def test_unknown_item_names_file_and_line(tmp_path):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    number = data_line(path, 5, "C")
    edit(path, number, 0, "99")
    with pytest.raises(PipelineError) as err:
        read_sheet(path, key)
    assert f"{path}:{number}: unknown item 99" in str(err.value)
    edit(path, number, 0, "five")
    with pytest.raises(PipelineError) as err:
        read_sheet(path)
    assert f"{path}:{number}: item 'five'" in str(err.value)


def test_duplicate_candidate_and_header_mismatch(tmp_path):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    number = data_line(path, 2, "C")
    edit(path, number, 4, "A")
    with pytest.raises(PipelineError) as err:
        read_sheet(path)
    assert f"{path}:{number}: duplicate candidate A of item 2" in str(err.value)
    path, _, _, key = sheet(tmp_path)
    header = data_line(path, "item", "candidate")
    edit(path, header, 6, "score")
    with pytest.raises(PipelineError) as err:
        read_sheet(path)
    assert f"{path}:{header}: header" in str(err.value) and "rank" in str(err.value)


def test_wrong_line_against_key(tmp_path):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    number = data_line(path, 1, "A")
    line = key["items"][1]["line"]
    edit(path, number, 1, str(line + 100))
    with pytest.raises(PipelineError) as err:
        read_sheet(path, key)
    assert f"{path}:{number}: item 1 is test line {line + 100}; expected line {line}" in str(err.value)


def test_hypothesis_length_mismatch_names_system_and_counts():
    short = dict(HYPOTHESES, mean=HYPOTHESES["mean"][:11])
    with pytest.raises(PipelineError, match=r"system 'mean' have 11 lines, sources have 12"):
        build_sheet(SOURCES, REFERENCES, short, n=10, seed=7)
    with pytest.raises(PipelineError, match=r"references have 3 lines, sources have 12"):
        build_sheet(SOURCES, REFERENCES[:3], HYPOTHESES, n=10, seed=7)


def test_tally_errors(tmp_path):
    path, _, _, key = sheet(tmp_path)
    fill(path, key, JUDGE)
    ranks = read_sheet(path)
    with pytest.raises(PipelineError, match=r"names system 'ensemble', not in the key"):
        tally([(ranks, key)], [("ensemble", "baseline")])
    fewer = {item: r for item, r in ranks.items() if item != 4}
    with pytest.raises(PipelineError, match=r"missing \[4\]"):
        tally([(fewer, key)], PAIRS)
    with pytest.raises(PipelineError, match=r"two different systems"):
        tally([(ranks, key)], [("self", "self")])
