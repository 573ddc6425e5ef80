"""Tokenization, cleaning and BPE on small invented inputs (real perl, jieba and subword-nmt)."""
import time

import pytest

from pipeline.data.clean import clean_parallel
from pipeline.data.subword import apply_bpe, codes_for, learn_bpe, remove_bpe
from pipeline.data.tokenize import detokenize_file, detokenize_lines, tokenize_file, tokenize_lines
from pipeline.errors import PipelineError

EN = ["The well-known author's new book costs $12.50, doesn't it?",
      'Grandma said: "Tea & cake at 5 p.m." (maybe).']
EN_TOK = ["The well @-@ known author 's new book costs $ 12.50 , doesn 't it ?",
          'Grandma said : " Tea & cake at 5 p.m. " ( maybe ) .']
DE = ["Die Katze (3 Jahre alt) schläft auf dem E-Mail-Sofa, nicht wahr?",
      "Er kauft 2,5 kg Äpfel für 3,99 €."]
DE_TOK = ["Die Katze ( 3 Jahre alt ) schläft auf dem E @-@ Mail @-@ Sofa , nicht wahr ?",
          "Er kauft 2,5 kg Äpfel für 3,99 € ."]
ZH = ["我们明天一起去图书馆看书。", "小明的猫喜欢在窗台上睡觉，你知道吗？"]
ZH_TOK = ["我们 明天 一起 去 图书馆 看书 。", "小明 的 猫 喜欢 在 窗台上 睡觉 ， 你 知道 吗 ？"]


# --- tokenization -------------------------------------------------------------------------------

def test_moses_english_exact_tokens_no_xml_escaping():
    assert tokenize_lines(EN, "en") == EN_TOK


def test_moses_german_exact_tokens():
    assert tokenize_lines(DE, "de") == DE_TOK


def test_empty_and_blank_lines_keep_their_place():
    assert tokenize_lines(["", "   ", "Hi!"], "en") == ["", "", "Hi !"]


def test_carriage_returns_and_unicode_separators_keep_lines_aligned():
    lines = ["a\rb c", "d\u2028e", "f\x0bg", "h\x85i"]
    assert tokenize_lines(lines, "en") == ["a b c", "d e", "f g", "h i"]
    assert detokenize_lines(["p\rq", "r s ."], "en") == ["p q", "r s."]


def test_jieba_segmentation_is_exact_and_deterministic():
    first = tokenize_lines(ZH, "zh")
    assert first == ZH_TOK
    assert tokenize_lines(ZH, "zh") == first


def test_japanese_is_split_into_characters():
    assert tokenize_lines(["猫が 好きです。"], "ja") == ["猫 が 好 き で す 。"]


@pytest.mark.parametrize("lang,text", [("en", EN), ("de", DE), ("zh", ZH), ("ja", ["猫が好きです。"])])
def test_detokenize_inverts_tokenize_on_simple_text(lang, text):
    assert detokenize_lines(tokenize_lines(text, lang), lang) == text


def test_zh_detok_drops_spaces_only_next_to_cjk():
    assert detokenize_lines(["我 爱 Python 3.8 ！ 好 的"], "zh") == ["我爱 Python 3.8！好的"]


def test_bad_language_code_is_named():
    with pytest.raises(PipelineError, match="lang"):
        tokenize_lines(["x"], "English")


def test_tokenize_file_roundtrip(tmp_path):
    src, tok, detok = tmp_path / "in.de", tmp_path / "tok.de", tmp_path / "detok.de"
    src.write_text("\n".join(DE) + "\n", encoding="utf-8")
    tokenize_file(src, tok, "de")
    assert tok.read_text(encoding="utf-8") == "\n".join(DE_TOK) + "\n"
    detokenize_file(tok, detok, "de")
    assert detok.read_text(encoding="utf-8") == src.read_text(encoding="utf-8")


def test_escaped_tokenised_text_is_unescaped_into_our_tokens(tmp_path):
    """zhang2018's WMT17 release is Moses-tokenised with XML escapes; tokenised again it became `& apos ; re`."""
    from pipeline.cli import main

    released, ours = tmp_path / "train.en", tmp_path / "train.src"
    released.write_text("you &apos;re right &amp; &quot; so &quot; &#124; x\n", encoding="utf-8")
    assert main(["tokenize", "--lang", "en", "--input", str(released), "--output", str(ours), "--escaped"]) in (0, None)
    assert ours.read_text(encoding="utf-8") == "you 're right & \" so \" | x\n"
    assert tokenize_lines(["you're right & \"so\" | x"], "en") == ["you 're right & \" so \" | x"]  # the same tokens


def test_invalid_utf8_names_file_and_line_and_writes_nothing(tmp_path):
    src, dst = tmp_path / "bad.en", tmp_path / "out.en"
    src.write_bytes(b"fine line\nbroken \xff\xfe line\n")
    with pytest.raises(PipelineError, match=rf"{src}:2:"):
        tokenize_file(src, dst, "en")
    assert list(tmp_path.iterdir()) == [src]


def test_twenty_thousand_lines_take_seconds():
    lines = [f"Sentence {i}: the cat's hat-stand costs ${i}.50, really?" for i in range(20000)]
    start = time.perf_counter()
    out = tokenize_lines(lines, "en")
    elapsed = time.perf_counter() - start
    assert len(out) == 20000
    assert out[7] == "Sentence 7 : the cat 's hat @-@ stand costs $ 7.50 , really ?"
    assert elapsed < 30, elapsed


# --- cleaning -----------------------------------------------------------------------------------

def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def test_clean_exact_report_and_output(tmp_path):
    src = ["a b c", "", "a b", "one two three four five six", "x", "p q", "  spaced   out  "]
    tgt = ["d e f", "y", "", "t", "1 2 3 4", "r s", "ok then"]
    _write(tmp_path / "s", src)
    _write(tmp_path / "t", tgt)
    report = clean_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "so", tmp_path / "to",
                            max_len=5, max_ratio=3.0)
    # pairs: kept, empty(src), empty(tgt), long(src 6), ratio(1 vs 4), kept, kept
    assert report == {"kept": 3, "dropped_empty": 2, "dropped_long": 1, "dropped_ratio": 1}
    assert (tmp_path / "so").read_text(encoding="utf-8") == "a b c\np q\nspaced out\n"
    assert (tmp_path / "to").read_text(encoding="utf-8") == "d e f\nr s\nok then\n"


def test_clean_without_ratio_keeps_unbalanced_pairs(tmp_path):
    _write(tmp_path / "s", ["x", "a b"])
    _write(tmp_path / "t", ["1 2 3 4", "c d"])
    report = clean_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "so", tmp_path / "to", max_len=4)
    assert report == {"kept": 2, "dropped_empty": 0, "dropped_long": 0, "dropped_ratio": 0}


def test_clean_mismatched_lines_is_a_clear_error_and_leaves_no_output(tmp_path):
    _write(tmp_path / "s", ["a", "b", "c"])
    _write(tmp_path / "t", ["a", "b"])
    with pytest.raises(PipelineError, match=r"has 3 lines.*has 2"):
        clean_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "so", tmp_path / "to", max_len=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s", "t"]


@pytest.mark.parametrize("kwargs,key", [({"max_len": 0}, "max_len"), ({"max_len": 5, "max_ratio": 0.5}, "max_ratio")])
def test_clean_bad_limits_name_the_key(tmp_path, kwargs, key):
    _write(tmp_path / "s", ["a"])
    _write(tmp_path / "t", ["b"])
    with pytest.raises(PipelineError, match=key):
        clean_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "so", tmp_path / "to", **kwargs)


# --- BPE ----------------------------------------------------------------------------------------

# Word frequencies of the classic BPE toy example: low 5, lower 2, newest 6, widest 3.
TOY = ["low low low low", "low lower lower newest", "newest newest newest newest",
       "newest widest widest widest"]
TOY_CODES = ["#version: 0.2", "s t</w>", "e st</w>", "l o", "w est</w>", "n e", "ne west</w>",
             "lo w</w>", "w i", "wi d", "wid est</w>"]


def test_learn_apply_remove_exact(tmp_path):
    _write(tmp_path / "train.en", TOY)
    learn_bpe({"en": tmp_path / "train.en"}, tmp_path / "bpe", merges=10, joint=False)
    codes = tmp_path / "bpe" / "codes.en"
    assert codes.read_text(encoding="utf-8").splitlines() == TOY_CODES
    _write(tmp_path / "test.en", ["lowest newer wider low", "", "widest"])
    apply_bpe(codes, tmp_path / "test.en", tmp_path / "test.bpe.en")
    segmented = (tmp_path / "test.bpe.en").read_text(encoding="utf-8").splitlines()
    assert segmented == ["lo@@ west ne@@ w@@ e@@ r wid@@ e@@ r low", "", "widest"]
    assert [remove_bpe(line) for line in segmented] == ["lowest newer wider low", "", "widest"]


def test_remove_bpe_handles_line_final_marker():
    assert remove_bpe("ab@@ c d@@") == "abc d"
    assert remove_bpe("no marks here") == "no marks here"


def test_joint_and_separate_files_and_codes_for(tmp_path):
    _write(tmp_path / "train.en", TOY)
    _write(tmp_path / "train.de", ["neue neueste neueste weiteste", "weiteste neue neue"])
    inputs = {"en": tmp_path / "train.en", "de": tmp_path / "train.de"}
    out = tmp_path / "bpe"
    learn_bpe(inputs, out, merges=8, joint=False)
    assert sorted(p.name for p in out.iterdir()) == ["codes.de", "codes.en"]
    assert codes_for(out, "de") == out / "codes.de"
    learn_bpe(inputs, out, merges=8, joint=True)
    assert sorted(p.name for p in out.iterdir()) == ["codes"]  # stale separate codes removed
    assert codes_for(out, "de") == out / "codes" and codes_for(out, "en") == out / "codes"
    joint = (out / "codes").read_text(encoding="utf-8").splitlines()
    assert len(joint) == 9 and "n e" in joint  # merges seen on both sides


def test_bpe_is_deterministic(tmp_path):
    lines = [" ".join(f"w{(i * 7 + j * 3) % 23}x{j % 5}" for j in range(12)) for i in range(60)]
    _write(tmp_path / "train.en", lines)
    learn_bpe({"en": tmp_path / "train.en"}, tmp_path / "a", merges=40, joint=True)
    learn_bpe({"en": tmp_path / "train.en"}, tmp_path / "b", merges=40, joint=True)
    assert (tmp_path / "a" / "codes").read_bytes() == (tmp_path / "b" / "codes").read_bytes()
    apply_bpe(tmp_path / "a" / "codes", tmp_path / "train.en", tmp_path / "x.bpe")
    restored = [remove_bpe(line) for line in (tmp_path / "x.bpe").read_text(encoding="utf-8").splitlines()]
    assert restored == lines


def test_codes_for_without_codes_is_an_error(tmp_path):
    with pytest.raises(PipelineError, match="no codes or codes.en"):
        codes_for(tmp_path, "en")


def test_malformed_codes_name_file_and_line(tmp_path):
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\na b\nthree symbols here\n", encoding="utf-8")
    _write(tmp_path / "in", ["ab"])
    with pytest.raises(PipelineError, match=rf"{codes}:3:"):
        apply_bpe(codes, tmp_path / "in", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_corpus_without_repeated_pairs_is_an_error_and_leaves_no_codes(tmp_path):
    _write(tmp_path / "train.en", ["ab cd"])
    with pytest.raises(PipelineError, match="no symbol pair occurs twice"):
        learn_bpe({"en": tmp_path / "train.en"}, tmp_path / "bpe", merges=5, joint=False)
    assert list((tmp_path / "bpe").iterdir()) == []


def test_bad_merges_is_named(tmp_path):
    _write(tmp_path / "train.en", TOY)
    with pytest.raises(PipelineError, match="merges"):
        learn_bpe({"en": tmp_path / "train.en"}, tmp_path / "bpe", merges=0, joint=True)
