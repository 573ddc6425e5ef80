"""Moses truecasing (werlen2018 6.1): a model learnt from tokenised text, applied and undone, on hand examples."""
import json

import pytest

from pipeline.cli import main
from pipeline.data.truecase import detruecase_lines, learn_truecaser, load_truecaser, truecase_lines
from pipeline.errors import PipelineError
from workspace import TOY_CORPUS, TOY_MODEL, TOY_RECIPE, make_workspace, run

TRAIN = ["The Bank of England opened .", "He saw the Bank and the house .", "We visited the house near the Bank .",
         "The house was old ."]


def test_truecasing_takes_each_words_most_frequent_form_outside_sentence_starts(tmp_path):
    model = tmp_path / "tc" / "model.en"
    learn_truecaser(TRAIN, model)
    forms = dict(line.split(" ", 1) for line in model.read_text().splitlines())
    assert forms["the"] == "(4/4)" and "The" not in forms  # sentence-initial "The" is not counted
    assert forms["Bank"] == "(3/3)" and forms["house"] == "(3/3)"
    assert truecase_lines(["The Bank sold the House .", "", "HOUSE of the BANK"], load_truecaser(model)) == [
        "the Bank sold the house .", "", "house of the Bank"]
    assert [p.name for p in model.parent.iterdir()] == ["model.en"]  # no temporary file left behind


def test_detruecasing_capitalises_the_first_word():
    assert detruecase_lines(["the bank sold the house .", "", "bank ."]) == ["The bank sold the house .", "",
                                                                              "Bank ."]


def test_errors_name_the_model_file(tmp_path):
    with pytest.raises(PipelineError, match="model.de: no training lines"):
        learn_truecaser([], tmp_path / "model.de")
    with pytest.raises(PipelineError, match="missing.de: no truecasing model"):
        load_truecaser(tmp_path / "missing.de")


def test_tokenised_bleu_of_a_truecased_corpus_compares_truecased_tokens(tmp_path):
    """A sentence-initial capital that truecasing lowers counts as a match only with the truecaser."""
    learn_truecaser(TRAIN, tmp_path / "model.en")
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/test.en").write_text("the house was near the Bank.\n", encoding="utf-8")
    (tmp_path / "hyp").write_text("The house was near the Bank.\n", encoding="utf-8")
    scores = {}
    for name, extra in (("plain", []), ("truecased", ["--truecaser", str(tmp_path / "model.en")])):
        out = tmp_path / f"{name}.json"
        assert main(["score", "--metric", "multi-bleu", "--hyp", str(tmp_path / "hyp"), "--ref-dir",
                     str(tmp_path / "raw"), "--test-set", "test", "--lang", "en", "--system", "s", "--output",
                     str(out), *extra]) == 0
        scores[name] = json.loads(out.read_text())["score"]
    assert scores["truecased"] == pytest.approx(100.0) and scores["plain"] < 90


@pytest.mark.slow
def test_a_truecased_corpus_runs_truecasing_before_bpe_and_scores_truecased_tokens(tmp_path):
    """truecase: true adds a model per side and the truecased splits that BPE reads; beam search output is
    detruecased; tokenised metrics truecase hypotheses and references with the target model, sacreBLEU does not."""
    paper = {"corpora": {"t-copy": {"src": "src", "tgt": "tgt", "source": "toy-copy", "joint_bpe": True,
                                    "truecase": True, **TOY_CORPUS}},
             "models": {"t-small": dict(TOY_MODEL)}, "recipes": {"t-recipe": dict(TOY_RECIPE)},
             "experiments": {"t-a": {"corpus": "t-copy", "model": "t-small", "recipe": "t-recipe"}}}
    ws = make_workspace(tmp_path / "ws", papers={"toy2026": paper})
    run(["snakemake", "--cores", "1", "artifacts/tiny/data/t-copy/ready"], ws)
    data = ws / "artifacts/tiny/data/t-copy"
    assert (data / "tc/model.src").is_file() and (data / "tc/model.tgt").is_file()
    model = load_truecaser(data / "tc/model.tgt")
    tok = (data / "tok/test.tgt").read_text(encoding="utf-8").splitlines()
    assert (data / "tc/test.tgt").read_text(encoding="utf-8").splitlines() == truecase_lines(tok, model)
    dry = run(["snakemake", "--cores", "1", "-n", "-p", "artifacts/tiny/eval/t-a/test.multi-bleu.json",
               "artifacts/tiny/eval/t-a/test.sacrebleu.json"], ws).stdout
    translate = [line for line in dry.splitlines() if "pipeline translate" in line]
    scores = {m: [line for line in dry.splitlines() if f"--metric {m} " in line] for m in ("multi-bleu", "sacrebleu")}
    assert translate and all("--detruecase" in line for line in translate)
    assert "--truecaser artifacts/tiny/data/t-copy/tc/model.tgt" in scores["multi-bleu"][0]
    assert "--truecaser" not in scores["sacrebleu"][0]
