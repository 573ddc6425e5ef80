"""make run's comparison of a rebuilt table with the committed one: identical, or the differing cells by label."""
from pipeline.report.compare import compare_tables

HEADER = "System\tArchitecture\tBLEU (ours)\n"


def write(path, rows, footer=("scale: tiny",)):
    path.write_text(HEADER + "".join("\t".join(r) + "\n" for r in rows) + "".join(f"# {f}\n" for f in footer),
                    encoding="utf-8")
    return path


def test_identical_tables(tmp_path):
    rows = [("this work", "Base", "10.00"), ("this work", "+ BiARN", "11.00⇑")]
    same, lines = compare_tables(write(tmp_path / "a.tsv", rows), write(tmp_path / "b.tsv", rows))
    assert same and lines == [f"{tmp_path / 'b.tsv'}: identical to the committed table"]


def test_differing_cells_new_and_gone_rows_are_named(tmp_path):
    old = [("this work", "Base", "10.00"), ("this work", "+ BiARN", "11.00⇑"), ("this work", "+ BiARN", "12.00"),
           ("this work", "Old row", "1.00")]
    new = [("this work", "Base", "10.00"), ("this work", "Base, continued", "10.50"),
           ("this work", "+ BiARN", "11.00⇑"), ("this work", "+ BiARN", "12.50↑")]
    same, lines = compare_tables(write(tmp_path / "a.tsv", old), write(tmp_path / "b.tsv", new, ("scale: paper",)))
    assert not same
    assert lines[1:] == ["  row this work / Base, continued: new",
                         "  this work / + BiARN (#2) | BLEU (ours): committed 12.00, rebuilt 12.50↑",
                         "  row this work / Old row: gone",
                         "  footer: committed 'scale: tiny', rebuilt 'scale: paper'"]


def test_missing_committed_table(tmp_path):
    same, lines = compare_tables(tmp_path / "none.tsv", write(tmp_path / "b.tsv", [("a", "b", "1")]))
    assert not same and "no committed table" in lines[0]
