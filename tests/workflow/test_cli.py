"""Bad input through the real command line: a clear error naming the file/line/key, exit 2, nothing left behind."""
import subprocess
import sys

import pytest

from workspace import ROOT, env


def pipeline(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd or ROOT, env=env(),
                          capture_output=True, text=True, timeout=120)


def test_parallel_files_of_different_length(tmp_path):
    (tmp_path / "a.src").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "a.tgt").write_text("eins\nzwei\n", encoding="utf-8")
    proc = pipeline("clean", "--src-in", str(tmp_path / "a.src"), "--tgt-in", str(tmp_path / "a.tgt"),
                    "--src-out", str(tmp_path / "o.src"), "--tgt-out", str(tmp_path / "o.tgt"),
                    "--report", str(tmp_path / "r.json"), "--max-len", "10")
    assert proc.returncode == 2
    assert f"{tmp_path / 'a.src'} has 3 lines, {tmp_path / 'a.tgt'} has 2" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.src", "a.tgt"]   # no output, no temp file


def test_invalid_utf8_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"fine line\nbroken \xff\xfe line\n")
    proc = pipeline("tokenize", "--lang", "en", "--input", str(bad), "--output", str(tmp_path / "out.en"))
    assert proc.returncode == 2
    assert f"{bad}:2: invalid UTF-8" in proc.stderr
    assert not (tmp_path / "out.en").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.en"]


def test_misspelled_key_and_unknown_model_in_params(tmp_path):
    from workspace import project_params, write_params
    shared, papers = project_params()
    recipe = papers["hao2019"]["recipes"]["base"]
    recipe["max_stpes"] = recipe.pop("max_steps")
    write_params(tmp_path, shared, papers)
    proc = pipeline("check-config", "--params", str(tmp_path / "params.yaml"))
    assert proc.returncode == 2
    assert "params/hao2019.yaml: recipes.base.max_stpes: unknown" in proc.stderr

    recipe["max_steps"] = recipe.pop("max_stpes")
    papers["hao2019"]["experiments"]["ende-big"]["model"] = "transformer-huge"
    write_params(tmp_path, shared, papers)
    proc = pipeline("check-config", "--params", str(tmp_path / "params.yaml"))
    assert proc.returncode == 2
    assert "experiments.ende-big.model: unknown model preset 'transformer-huge'" in proc.stderr


def test_snakemake_refuses_a_bad_params_file_up_front(tmp_path):
    import copy

    from workspace import TOY_HAO2019, make_workspace
    paper = copy.deepcopy(TOY_HAO2019)
    paper["models"]["toy"]["d_modle"] = 16
    with pytest.raises(AssertionError, match="d_modle"):  # even generating dvc.yaml refuses it
        make_workspace(tmp_path / "ws", papers={"hao2019": paper})
    ws = tmp_path / "ws"
    proc = subprocess.run(["snakemake", "-n", "--cores", "1"], cwd=ws, env=env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "params/hao2019.yaml: models.toy: " in proc.stdout + proc.stderr and "d_modle" in proc.stdout + proc.stderr
    assert not (ws / "artifacts").exists()


@pytest.mark.slow
def test_snakemake_called_by_its_path_runs_the_rules_with_its_own_python(tmp_path):
    """`.venv/bin/snakemake` with the venv not on PATH: the rules' `python` is still the venv's (common.smk)."""
    from workspace import BIN, make_workspace
    ws = make_workspace(tmp_path / "ws")
    target = "artifacts/tiny/data/zh-en/ready"
    proc = subprocess.run([str(BIN / "snakemake"), "--cores", "1", target], cwd=ws,
                          env={**env(), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (ws / target).exists()


def test_missing_input_file_is_one_line_naming_it(tmp_path):
    missing = tmp_path / "nope.hyp"
    proc = pipeline("score", "--metric", "sacrebleu", "--hyp", str(missing), "--ref-dir", str(tmp_path),
                    "--test-set", "test", "--lang", "en", "--system", "x", "--output", str(tmp_path / "out.json"))
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()


def test_project_params_check_ok():
    proc = pipeline("check-config")
    assert proc.returncode == 0, proc.stderr
    assert "paper file(s): OK (scale tiny" in proc.stdout


OS_ERRORS = {  # case -> (the output path, given tmp_path and the tmpfs fixture) and the line's end
    "full disk": (lambda d, fs: fs("full", "2m") / "out.en",
                  "No space left on device; free space on its file system (or write elsewhere) and run again"),
    "read-only": (lambda d, fs: fs("ro", "1m", read_only=True) / "out.en",
                  "Read-only file system; the file system is read-only: write elsewhere or remount it read-write"),
    "folder is a file": (lambda d, fs: d / "file" / "out.en",
                         "Not a directory; the path is under a file, not a folder: choose a path whose folders are "
                         "folders"),
    "under a file": (lambda d, fs: d / "file" / "sub" / "out.en",
                     "Not a directory; the path is under a file, not a folder: choose a path whose folders are "
                     "folders"),
}


@pytest.mark.parametrize("case", OS_ERRORS)
def test_os_errors_are_one_line_naming_the_output_and_what_to_do(tmp_path, tmpfs, case):
    """A full disk (a 2 MB tmpfs), a read-only file system, an output path under a file: exit 2, one line, nothing
    written (not a traceback ending in [Errno 28])."""
    (tmp_path / "file").write_text("a file\n", encoding="utf-8")
    (tmp_path / "in.en").write_text("a b c d e f g h\n" * 200_000, encoding="utf-8")  # 3.2 MB: more than 2 MB
    where, end = OS_ERRORS[case]
    out = where(tmp_path, tmpfs)
    proc = pipeline("tokenize", "--lang", "en", "--pretokenized", "--input", str(tmp_path / "in.en"),
                    "--output", str(out))
    assert (proc.returncode, proc.stderr.splitlines()) == (2, [f"error: {out}: {end}"]), proc.stderr
    assert not out.exists()
    if out.parent.is_dir():
        assert [p.name for p in out.parent.iterdir()] == []   # no temp file left on the full or read-only disk


def test_tokenize_refuses_a_language_it_does_not_support(tmp_path):
    (tmp_path / "in.xx").write_text("Hello, world.\n", encoding="utf-8")
    proc = pipeline("tokenize", "--lang", "xx", "--input", str(tmp_path / "in.xx"), "--output", str(tmp_path / "o"))
    assert (proc.returncode, proc.stderr.splitlines()) == (2, [
        "error: --lang xx: not a language tokenize supports; expected ca cs de el en es fi fr hu is it lv nl pl pt ro "
        "ru sk sl sv ta tr (Moses), zh (jieba), ja (characters), doc sum ctx rsp (English stand-ins) or lm (a language "
        "model's source side)"])
    assert not (tmp_path / "o").exists()
    from pipeline.config import load_params
    from pipeline.data.registry import get_corpus
    from pipeline.data.tokenize import TOKENIZE_LANGS
    for scale in ("tiny", "paper"):   # every language the project's corpora are tokenised in is supported
        corpora = load_params(ROOT / "params.yaml", scale=scale).corpora
        tokenised = {lang for c in corpora.values() if not get_corpus(c.source).pretokenized for lang in (c.src, c.tgt)}
        assert tokenised and tokenised <= TOKENIZE_LANGS, tokenised - TOKENIZE_LANGS


def test_clean_refuses_empty_corpus_files(tmp_path):
    for name in ("a.src", "a.tgt"):
        (tmp_path / name).write_text("", encoding="utf-8")
    proc = pipeline("clean", "--src-in", str(tmp_path / "a.src"), "--tgt-in", str(tmp_path / "a.tgt"),
                    "--src-out", str(tmp_path / "o.src"), "--tgt-out", str(tmp_path / "o.tgt"),
                    "--report", str(tmp_path / "r.json"), "--max-len", "10")
    assert (proc.returncode, proc.stderr.splitlines()) == (2, [
        f"error: {tmp_path / 'a.src'}, {tmp_path / 'a.tgt'}: no lines; expected a parallel corpus with at least one "
        "pair of 1..10 tokens per side"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.src", "a.tgt"]   # no output, report or temp file
