"""References scored as a language written in another script are an error (pipeline/evaluate/metric_text.py
check_script), where `score` and `gmbr-tune` read them, and so is a hypothesis `score` reads: Japanese scored with
--lang de would give 0.0 silently."""
import json

import pytest

from pipeline.cli import main
from pipeline.errors import PipelineError
from pipeline.evaluate.metric_text import check_script, cjk_share
from sentences import corpus

JA = ["本研究では新しい翻訳手法を提案する。", "実験の結果、精度が向上した。", "今後の課題について述べる。"] * 10
ZH = ["我们明天一起去图书馆看书。", "小明的猫喜欢在窗台上睡觉。"] * 10
EN = corpus(1, 30)


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def score(tmp_path, capsys, lang, refs, hyps=None, extra_refs=(), flags=()):
    """Run `score` (sacreBLEU) on refs written as raw/test.<lang>[.1, ...]; (exit code, stderr, the score or None)."""
    for k, lines in enumerate([refs, *extra_refs]):
        write(tmp_path / "raw" / (f"test.{lang}" + (f".{k}" if k else "")), lines)
    write(tmp_path / "hyp", refs if hyps is None else hyps)
    out = tmp_path / "score.json"
    code = main(["score", "--metric", "sacrebleu", "--hyp", str(tmp_path / "hyp"), "--ref-dir", str(tmp_path / "raw"),
                 "--test-set", "test", "--lang", lang, "--system", "s", "--output", str(out), *flags])
    return code, capsys.readouterr().err, json.loads(out.read_text())["score"] if out.exists() else None


def test_cjk_share_counts_non_space_characters_of_a_sample():
    assert cjk_share(["日本語 abc", " x y "]) == (3 / 8, 8)  # 日本語abc + xy: 3 of 8
    assert cjk_share(["한국어 ok"]) == (3 / 5, 5) and cjk_share(["かな カナ"]) == (1.0, 4)
    assert cjk_share([]) == (0.0, 0)
    assert cjk_share((["日本"] + ["abcd"] * 3) * 500) == (1.0, 1000)  # every 4th of 2000 lines: the 500 "日本"


def test_japanese_references_scored_as_german_are_an_error_naming_file_share_and_lang(tmp_path, capsys):
    code, err, result = score(tmp_path, capsys, "de", JA)
    assert (code, result) == (2, None)  # nothing written
    assert err == (f"error: {tmp_path / 'raw/test.de'}: 91% of the non-space characters are CJK ideographs, kana or "
                   "hangul; expected de text, which has almost none (--lang de); check --lang\n")


def test_english_references_scored_as_japanese_are_an_error(tmp_path, capsys):
    code, err, result = score(tmp_path, capsys, "ja", EN)
    assert (code, result) == (2, None)
    assert err == (f"error: {tmp_path / 'raw/test.ja'}: 0% of the non-space characters are CJK ideographs, kana or "
                   "hangul; expected ja text, which is mostly written in them (--lang ja); check --lang\n")


def test_a_japanese_hypothesis_scored_as_german_against_german_references_is_an_error(tmp_path, capsys):
    """The hypothesis is checked as the references are: it scored BLEU 0.00 with exit 0."""
    code, err, result = score(tmp_path, capsys, "de", EN, hyps=JA)
    assert (code, result) == (2, None)
    assert err == (f"error: {tmp_path / 'hyp'}: 91% of the non-space characters are CJK ideographs, kana or hangul; "
                   "expected de text, which has almost none (--lang de); check --hyp\n")


def test_every_reference_stream_is_checked(tmp_path, capsys):
    code, err, _ = score(tmp_path, capsys, "en", EN, extra_refs=[EN, JA])
    assert code == 2 and f"{tmp_path / 'raw/test.en.2'}: 91% of the non-space" in err


# the last three codes are not checked; Japanese through 13a is one word a sentence: no n-grams beyond 1, BLEU 0
@pytest.mark.parametrize("lang, refs, bleu", [("ja", JA, 100.0), ("zh", ZH, 100.0), ("de", EN, 100.0),
                                              ("en", EN, 100.0), ("tgt", JA, 0.0), ("sum", JA, 0.0), ("xx", EN, 100.0)])
def test_references_in_the_script_of_their_language_or_of_an_unknown_code_score(tmp_path, capsys, lang, refs, bleu):
    code, err, result = score(tmp_path, capsys, lang, refs)
    assert (code, result) == (0, pytest.approx(bleu)), err


def test_a_pretokenised_corpus_is_language_free_whatever_its_code(tmp_path, capsys):
    """Synthetic corpora (--pretokenized in the rules) keep the codes of the entries tests shrink to toy size."""
    toy = ["a4 n6 v5 n11", "a1 a0 a1 n0 v2 n10", "a3 a2 n6 v4 a4 a2 a4 a1 n7"] * 5
    code, err, result = score(tmp_path, capsys, "zh", toy, flags=["--pretokenized"])
    assert (code, result) == (0, pytest.approx(100.0)), err
    code, err, _ = score(tmp_path, capsys, "zh", toy)
    assert code == 2 and "test.zh: 0% of the non-space characters" in err


def test_mixed_text_within_the_thresholds_and_short_files_pass():
    mixed = ["PCR法を用いてDNAを増幅した。"] * 2  # 10 of 17 characters are CJK: Japanese
    assert cjk_share(mixed) == (20 / 34, 34)
    check_script("test.ja", mixed, "ja")
    with pytest.raises(PipelineError, match=r"^test\.en: 59% of the non-space characters .* expected en text"):
        check_script("test.en", mixed, "en")
    check_script("test.en", ["東京"], "en")  # 2 characters: too little to tell
    check_script("test.zh", ["Beijing 2008: the Olympic Games, 北京奥运会."], "zh")  # 5 of 34: 15%
    with pytest.raises(PipelineError, match=r"^test\.zh: 4% of the non-space characters .* expected zh text"):
        check_script("test.zh", ["We met in 北 today, all of us, at ten."], "zh")  # 1 of 28


def test_gmbr_tune_checks_its_references(tmp_path, capsys):
    write(tmp_path / "raw/valid.zh", EN)
    nbest = write(tmp_path / "a.nbest", [f"{i} ||| {line} ||| -1.0" for i, line in enumerate(EN)])
    settings = {"metric": "sacrebleu", "tune_sentences": 5, "trials": 2, "seed": 1}
    code = main(["gmbr-tune", "--nbest", str(nbest), "--ref-dir", str(tmp_path / "raw"), "--split", "valid",
                 "--lang", "zh", "--settings", json.dumps(settings), "--output", str(tmp_path / "gmbr.json")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "gmbr.json").exists()
    assert f"{tmp_path / 'raw/valid.zh'}: 0% of the non-space characters" in err and "(--lang zh)" in err
