"""Corpus options bpe_sides and vocab_size: config checks, learn-bpe/apply-bpe/vocab on hand-made text, the rules'
commands and DVC's stages."""
import copy

import pytest

from pipeline.cli import main
from pipeline.config import parse_params
from pipeline.data.vocab import SPECIALS, UNK, Vocab
from pipeline.dvcgen import dvc_yaml
from pipeline.errors import PipelineError
from workspace import TOY_HAO2019, TOY_SHARED, make_workspace, run

TRAIN_SRC = ["the small house", "the big house", "a small cat"] * 3
TRAIN_TGT = ["das kleine Haus", "das große Haus", "eine kleine Katze"] * 3


def parse(corpus_changes: dict, scale: str = "tiny"):
    """The toy hao2019 params with corpora.<name> updated by corpus_changes[name]."""
    paper = copy.deepcopy(TOY_HAO2019)
    for name, changes in corpus_changes.items():
        paper["corpora"][name].update(changes)
    return parse_params(copy.deepcopy(TOY_SHARED), scale=scale, papers={"hao2019": ("params/hao2019.yaml", paper)})


def test_defaults_and_per_scale_values():
    corpora = parse({}).corpora
    assert corpora["zh-en"].bpe_sides == ("src", "tgt") and corpora["zh-en"].vocab_size == 0
    changes = {"zh-en": {"bpe_sides": {"tiny": ["tgt"], "paper": []}, "vocab_size": {"tiny": 0, "paper": 30000}}}
    tiny, paper = parse(changes).corpora["zh-en"], parse(changes, scale="paper").corpora["zh-en"]
    assert (tiny.bpe_sides, tiny.vocab_size) == (("tgt",), 0)
    assert (paper.bpe_sides, paper.vocab_size) == ((), 30000)
    assert parse({"zh-en": {"bpe_sides": ["tgt", "src"]}}).corpora["zh-en"].bpe_sides == ("src", "tgt")


@pytest.mark.parametrize("name, changes, where, expected", [
    ("en-de", {"bpe_sides": ["tgt"]}, "corpora.en-de.bpe_sides", "joint_bpe: true learns one BPE model on both sides"),
    ("zh-en", {"bpe_sides": ["tgt", "tgt"]}, "corpora.zh-en.bpe_sides", "expected a list of distinct sides"),
    ("zh-en", {"bpe_sides": ["target"]}, "corpora.zh-en.bpe_sides", r"out of src, tgt .*got \['target'\]"),
    ("zh-en", {"bpe_sides": "tgt"}, "corpora.zh-en.bpe_sides", "expected list, got str"),
    ("zh-en", {"bpe_sides": {"tiny": ["tgt"]}}, "corpora.zh-en.bpe_sides.paper", "missing required key"),
    ("zh-en", {"vocab_size": -1}, "corpora.zh-en.vocab_size", "expected an integer >= 0"),
    ("zh-en", {"vocab_size": "30K"}, "corpora.zh-en.vocab_size", "expected int, got str"),
    ("zh-en", {"vocab_sise": 5}, "corpora.zh-en.vocab_sise", "did you mean 'vocab_size'"),
])
def test_bad_options_name_the_file_and_key(name, changes, where, expected):
    with pytest.raises(PipelineError, match=rf"^params/hao2019\.yaml: {where}: .*{expected}"):
        parse({name: changes})


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_target_only_bpe_copies_the_source_side(tmp_path):
    src, tgt = write(tmp_path / "train.src", TRAIN_SRC), write(tmp_path / "train.tgt", TRAIN_TGT)
    codes = tmp_path / "codes"
    codes.mkdir()
    (codes / "codes.src").write_text("#version: 0.2\nt h\n", encoding="utf-8")  # stale: from an earlier setting
    assert main(["learn-bpe", "--langs", "src", "tgt", "--inputs", src, tgt, "--codes-dir", str(codes),
                 "--merges", "10", "--sides", "tgt"]) == 0
    assert sorted(p.name for p in codes.iterdir()) == ["codes.tgt"]
    (tmp_path / "test.src").write_bytes("the small cat\nunseen wörds here\n".encode())
    assert main(["apply-bpe", "--codes-dir", str(codes), "--side", "src", "--input", str(tmp_path / "test.src"),
                 "--output", str(tmp_path / "out.src"), "--copy"]) == 0
    assert (tmp_path / "out.src").read_bytes() == (tmp_path / "test.src").read_bytes()
    assert main(["apply-bpe", "--codes-dir", str(codes), "--side", "tgt", "--input", tgt,
                 "--output", str(tmp_path / "out.tgt")]) == 0
    segmented = (tmp_path / "out.tgt").read_text(encoding="utf-8").splitlines()
    assert [line.replace("@@ ", "") for line in segmented] == TRAIN_TGT and any("@@" in s for s in segmented)


def test_no_bpe_at_all_and_inconsistent_requests(tmp_path, capsys):
    src, tgt = write(tmp_path / "train.src", TRAIN_SRC), write(tmp_path / "train.tgt", TRAIN_TGT)
    none, joint = tmp_path / "none", tmp_path / "joint"
    assert main(["learn-bpe", "--langs", "src", "tgt", "--inputs", src, tgt, "--codes-dir", str(none),
                 "--merges", "10", "--sides"]) == 0
    assert none.is_dir() and not any(none.iterdir())
    for side, text in (("src", src), ("tgt", tgt)):
        assert main(["apply-bpe", "--codes-dir", str(none), "--side", side, "--input", text,
                     "--output", str(tmp_path / f"word.{side}"), "--copy"]) == 0
        assert (tmp_path / f"word.{side}").read_text(encoding="utf-8") == open(text, encoding="utf-8").read()
    assert main(["learn-bpe", "--langs", "src", "tgt", "--inputs", src, tgt, "--codes-dir", str(joint),
                 "--merges", "10", "--joint", "--sides", "tgt"]) == 2
    assert "--joint with --sides tgt" in capsys.readouterr().err and not joint.exists()
    assert main(["learn-bpe", "--langs", "src", "tgt", "--inputs", src, tgt, "--codes-dir", str(joint),
                 "--merges", "10", "--joint"]) == 0
    assert main(["apply-bpe", "--codes-dir", str(joint), "--side", "src", "--input", src,
                 "--output", str(tmp_path / "x.src"), "--copy"]) == 2
    assert "BPE codes that cover side 'src', which is to be copied unsegmented" in capsys.readouterr().err
    assert not (tmp_path / "x.src").exists()


# Counts: a 4, c 3, b 2, d 2, e 1, f 1 (b/d and e/f tie: alphabetical).
VOCAB_TEXT = ["b a c a", "c a d f", "e a c b d"]


def test_vocabulary_cap_keeps_the_most_frequent_types(tmp_path):
    text = write(tmp_path / "train.tgt", VOCAB_TEXT)
    assert main(["vocab", "--inputs", text, "--output", str(tmp_path / "v3"), "--vocab-size", "3"]) == 0
    assert (tmp_path / "v3").read_text(encoding="utf-8").splitlines() == list(SPECIALS) + ["a", "c", "b"]
    assert main(["vocab", "--inputs", text, "--output", str(tmp_path / "v5"), "--vocab-size", "5"]) == 0
    assert (tmp_path / "v5").read_text(encoding="utf-8").splitlines()[4:] == ["a", "c", "b", "d", "e"]
    assert main(["vocab", "--inputs", text, "--output", str(tmp_path / "all")]) == 0
    assert (tmp_path / "all").read_text(encoding="utf-8").splitlines()[4:] == ["a", "c", "b", "d", "e", "f"]
    other = write(tmp_path / "train.src", ["f f f f f"])  # a joint vocabulary counts both files
    assert main(["vocab", "--inputs", text, other, "--output", str(tmp_path / "joint"), "--vocab-size", "2"]) == 0
    assert (tmp_path / "joint").read_text(encoding="utf-8").splitlines()[4:] == ["f", "a"]
    assert main(["vocab", "--inputs", text, "--output", str(tmp_path / "bad"), "--vocab-size", "-1"]) == 2


def test_types_outside_the_cap_map_to_unk(tmp_path):
    vocab = Vocab.build(VOCAB_TEXT, max_size=3)
    assert len(vocab) == len(SPECIALS) + 3
    assert vocab.encode("a d c f zebra b") == [4, UNK, 5, UNK, UNK, 6]
    assert vocab.decode(vocab.encode("a d c")) == "a <unk> c"
    with pytest.raises(PipelineError, match="max_size: expected None or an integer >= 0, got -2"):
        Vocab.build(VOCAB_TEXT, max_size=-2)


def test_dvc_stages_track_the_options_without_changing_commands():
    plain = dvc_yaml(parse({}))
    changed = dvc_yaml(parse({"zh-en": {"bpe_sides": ["tgt"], "vocab_size": 50}}))
    assert changed == plain  # the corpus stage tracks the whole corpora.<name> mapping: the options included
    assert "- corpora.zh-en\n" in plain


@pytest.mark.slow
def test_rule_commands_carry_the_options_and_defaults_keep_their_commands(tmp_path):
    paper = copy.deepcopy(TOY_HAO2019)
    paper["corpora"]["zh-en"].update(bpe_sides=["tgt"], vocab_size=20)
    ws = make_workspace(tmp_path / "ws", papers={"hao2019": paper})
    dry = run(["snakemake", "--profile", "workflows/profiles/local", "-n", "-p", "artifacts/tiny/data/zh-en/ready",
               "artifacts/tiny/data/en-de/ready"], ws)
    lines = [line[line.index("python -m pipeline"):].strip() for line in dry.stdout.splitlines()
             if "python -m pipeline" in line]
    learn = {line.split("--codes-dir ")[1].split("/")[3]: line for line in lines if "learn-bpe" in line}
    assert learn["en-de"].endswith("--merges 30 --joint > artifacts/tiny/logs/learn_bpe/en-de.log 2>&1")
    assert learn["zh-en"].endswith("--merges 30  --sides tgt > artifacts/tiny/logs/learn_bpe/zh-en.log 2>&1")
    applied = [line for line in lines if "apply-bpe" in line]
    copied = sorted(line.split("--output ")[1].split()[0] for line in applied
                    if " --copy " in line)
    assert copied == [f"artifacts/tiny/data/zh-en/bpe/{split}.src" for split in ("test", "train", "valid")]
    vocab = sorted(line.split(" > ")[0] for line in lines if "pipeline vocab" in line)
    assert vocab == [f"python -m pipeline vocab --inputs artifacts/tiny/data/{corpus}/bpe/train.{side} --output "
                     f"artifacts/tiny/data/{corpus}/bpe/vocab.{side}{option}"
                     for corpus, option in (("en-de", ""), ("zh-en", " --vocab-size 20")) for side in ("src", "tgt")]
