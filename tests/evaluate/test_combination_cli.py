"""The steps behind combined and supplied systems (python -m pipeline external | gmbr-tune | gmbr | length-switch |
curve) on small hand-made files: formats read, values written, and errors that name the file, line or key."""
import json

import pytest

from pipeline.cli import main
from pipeline.fileio import read_lines, read_nbest, write_nbest

REFS = ["the cat sat on the mat", "a dog ran home", "it rains"]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- external
def test_supplied_outputs_are_read_in_moses_and_our_nbest_formats(tmp_path, capsys):
    supplied = tmp_path / "t2s"
    supplied.mkdir()
    source = write(tmp_path / "test.en", ["s1", "s2"])
    write(supplied / "test.hyp", ["first one", "second one"])
    write(supplied / "test.nbest", ["0 ||| first one ||| lm=-1 tm=-2 ||| -3.5", "0 ||| first two ||| lm=-2 ||| -4",
                                    "0 ||| first three ||| lm=-3 ||| -5", "1 ||| second one ||| -1.25"])
    common = ["external", "--key", "t2s_outputs", "--dir", supplied, "--system", "t2s", "--split", "test",
              "--source", source]
    assert run(capsys, *common, "--output", tmp_path / "test.hyp")[0] == 0
    assert read_lines(tmp_path / "test.hyp") == ["first one", "second one"]
    assert run(capsys, *common, "--nbest", 2, "--output", tmp_path / "test.nbest")[0] == 0
    assert read_nbest(tmp_path / "test.nbest") == [[(-3.5, "first one"), (-4.0, "first two")],
                                                    [(-1.25, "second one")]]


@pytest.mark.parametrize("hyp, nbest, dir_given, words", [
    (["one"], ["0 ||| a ||| -1", "1 ||| b ||| -1"], True, ["test.hyp", "1 lines; expected 2"]),
    (["one", "two"], ["0 ||| a ||| -1"], True, ["test.nbest", "no hypotheses for 1 sentence(s)", "index 1"]),
    (["one", "two"], ["0 ||| a", "1 ||| b ||| -1"], True, ["test.nbest:1", "Moses"]),
    (["one", "two"], ["0 ||| a ||| -1", "2 ||| b ||| -1"], True, ["test.nbest:2", "sentence index 2"]),
    (["one", "two"], [], False, ["paths.manual.t2s_outputs", "t2s"]),
])
def test_bad_supplied_outputs_are_named(tmp_path, capsys, hyp, nbest, dir_given, words):
    supplied = tmp_path / "t2s"
    supplied.mkdir()
    source = write(tmp_path / "test.en", ["s1", "s2"])
    write(supplied / "test.hyp", hyp)
    write(supplied / "test.nbest", nbest)
    common = ["external", "--key", "t2s_outputs", "--dir", supplied if dir_given else "", "--system", "t2s",
              "--split", "test", "--source", source]
    code, err = run(capsys, *common, "--output", tmp_path / "out.hyp")
    if code == 0:  # the 1-best file was fine: the n-best file is the bad one
        code, err = run(capsys, *common, "--nbest", 5, "--output", tmp_path / "out.nbest")
    assert code == 2 and all(w in err for w in words), err
    assert not (tmp_path / "out.nbest").exists()


# -------------------------------------------------------------------------------------------------- GMBR
def _nbest(tmp_path, name, lists):
    path = tmp_path / name
    write_nbest(path, [[(-float(k), text) for k, text in enumerate(hyps)] for hyps in lists])
    return path


def test_gmbr_tunes_on_development_lists_and_picks_the_consensus(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    write(raw / "valid.en", REFS)
    first = _nbest(tmp_path, "a.nbest", [["the cat sat on the mat", "cat the"], ["a dog ran home", "dog"],
                                         ["it rains", "rain"]])
    second = _nbest(tmp_path, "b.nbest", [["the cat sat on a mat", "the cat sat on the mat"],
                                          ["a dog ran home", "a dog went home"], ["it rains", "it pours"]])
    settings = {"metric": "multi-bleu", "tune_sentences": 2, "trials": 20, "seed": 1}  # the first 2 of 3
    code, err = run(capsys, "gmbr-tune", "--nbest", first, second, "--ref-dir", raw, "--split", "valid", "--lang",
                    "en", "--settings", json.dumps(settings), "--pretokenized", "--output", tmp_path / "gmbr.json")
    assert code == 0, err
    tuned = json.loads((tmp_path / "gmbr.json").read_text())
    assert sorted(tuned["theta"]) == ["bp", "nkt", "p1", "p2", "p3", "p4"]
    assert sum(tuned["theta"].values()) == pytest.approx(1.0)
    assert tuned["sentences"] == 2 and tuned["candidates"] == 8
    assert tuned["tuned_score"] == pytest.approx(100.0)  # every reference is among the candidates and wins
    assert tuned["first_candidate_score"] == pytest.approx(100.0)
    source = write(tmp_path / "valid.src", ["x", "y", "z"])
    code, err = run(capsys, "gmbr", "--nbest", first, second, "--theta", tmp_path / "gmbr.json", "--source", source,
                    "--lang", "en", "--pretokenized", "--output", tmp_path / "valid.hyp")
    assert code == 0, err
    assert read_lines(tmp_path / "valid.hyp") == REFS


def test_gmbr_over_one_system_with_one_candidate_returns_its_one_best(tmp_path, capsys):
    only = _nbest(tmp_path, "a.nbest", [["b a c"], ["x y"]])
    (tmp_path / "gmbr.json").write_text(json.dumps({"theta": dict(p1=0.5, p2=0.5, p3=0, p4=0, bp=0, nkt=0),
                                                    "metric": "multi-bleu"}))
    code, err = run(capsys, "gmbr", "--nbest", only, "--theta", tmp_path / "gmbr.json", "--source",
                    write(tmp_path / "src", ["1", "2"]), "--lang", "en", "--pretokenized", "--output",
                    tmp_path / "out")
    assert code == 0, err
    assert read_lines(tmp_path / "out") == ["b a c", "x y"]


def test_length_switch_takes_the_short_system_below_the_threshold(tmp_path, capsys):
    source = write(tmp_path / "test.src", ["one two three", "one", "a b c d"])
    short = write(tmp_path / "short.hyp", ["S1", "S2", "S3"])
    long = write(tmp_path / "long.hyp", ["L1", "L2", "L3"])
    code, err = run(capsys, "length-switch", "--source", source, "--short", short, "--long", long, "--threshold", 3,
                    "--output", tmp_path / "out.hyp")
    assert code == 0, err
    assert read_lines(tmp_path / "out.hyp") == ["L1", "S2", "L3"]
    assert "1 of 3 sentences below 3 source words" in err


# ------------------------------------------------------------------------------------------------ curves
def curves(capsys, folder):
    """`python -m pipeline curves` (shu2016 Figure 2) of folder/nll.tsv and folder/train.json, the first 3 epochs."""
    return run(capsys, "curves", "--settings", json.dumps({"curve": "valid/nll", "epochs": 3}),
               "--inputs", json.dumps({"curve": str(folder / "nll.tsv"), "summary": str(folder / "train.json")}),
               "--output", folder / "out.json")


def test_a_curve_is_cut_after_its_first_epochs(tmp_path, capsys):
    write(tmp_path / "nll.tsv", ["step\tnll", "20\t5.0", "40\t4.0", "60\t3.5", "80\t3.0", "100\t2.9"])
    (tmp_path / "train.json").write_text(json.dumps({"steps": 100, "epochs": 4.0}))
    code, err = curves(capsys, tmp_path)
    assert code == 0, err
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["steps_per_epoch"] == 25.0 and out["points"] == [[20, 5.0], [40, 4.0], [60, 3.5]]


@pytest.mark.parametrize("lines, summary, words", [
    (["step\tnll", "20\tfive"], {"steps": 10, "epochs": 1.0}, ["nll.tsv:2", "<step><TAB><value>"]),
    (["nll"], {"steps": 10, "epochs": 1.0}, ["nll.tsv:1", "header"]),
    (["step\tnll", "20\t5"], {"steps": 10}, ["train.json", "'epochs' > 0"]),
])
def test_bad_curve_files_are_named(tmp_path, capsys, lines, summary, words):
    write(tmp_path / "nll.tsv", lines)
    (tmp_path / "train.json").write_text(json.dumps(summary))
    code, err = curves(capsys, tmp_path)
    assert code == 2 and all(w in err for w in words), err
