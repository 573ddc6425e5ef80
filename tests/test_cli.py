"""Bad input through the real command line: a clear error naming the file/line/key, exit 2, nothing left behind."""
import subprocess
import sys

import yaml

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
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["recipes"]["base"]["max_stpes"] = params["recipes"]["base"].pop("max_steps")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    proc = pipeline("check-config", "--params", str(tmp_path / "params.yaml"))
    assert proc.returncode == 2
    assert "recipes.base.max_stpes: unknown key; did you mean 'max_steps'?" in proc.stderr

    params["recipes"]["base"]["max_steps"] = params["recipes"]["base"].pop("max_stpes")
    params["experiments"]["ende-big"]["model"] = "transformer-huge"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    proc = pipeline("check-config", "--params", str(tmp_path / "params.yaml"))
    assert proc.returncode == 2
    assert "experiments.ende-big.model: unknown model preset 'transformer-huge'" in proc.stderr


def test_snakemake_refuses_a_bad_params_file_up_front(tmp_path):
    from workspace import make_workspace, toy_params
    params = toy_params()
    params["models"]["toy"]["d_modle"] = 16
    ws = make_workspace(tmp_path / "ws", params)
    proc = subprocess.run(["snakemake", "-n", "--cores", "1"], cwd=ws, env=env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "models.toy: unknown model option 'd_modle'" in proc.stdout + proc.stderr
    assert not (ws / "artifacts").exists()


def test_project_params_check_ok():
    proc = pipeline("check-config")
    assert proc.returncode == 0, proc.stderr
    assert "params.yaml: OK (scale tiny" in proc.stdout
