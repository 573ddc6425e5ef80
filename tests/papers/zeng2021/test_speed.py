"""decoding_speed: row structure, token counts equal to the decoded outputs, determinism, input checks.

No timing assertions: speed targets belong to benchmark scripts, not tests. A run with a cells file keeps each
finished cell; a stopped run (SIGTERM, as at Slurm's time limit, or any error) resumes from them."""
import json
import os
import signal
import time

import pytest
import torch

from pipeline.data.batching import encode_source, pad
from pipeline.errors import PipelineError, Stopped
from pipeline.papers.zeng2021.speed import decoding_speed
from pipeline.models import build_model
from pipeline.beam_search import beam_search

torch.set_num_threads(1)

VOCAB = 12
SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=1, dec_layers=1, dropout=0.1)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model({"encoder": "transformer", "decoder": "transformer", **SMALL}, VOCAB, VOCAB)


@pytest.fixture(scope="module")
def sources():
    g = torch.Generator().manual_seed(5)
    return [torch.randint(4, VOCAB, (n,), generator=g).tolist() for n in (3, 7, 1, 5, 4)]


def decoded_tokens(model, sources, beam):
    """Output tokens of per-sentence beam search (the reference count)."""
    return sum(len(beam_search(model, pad([encode_source(s)]), beam=beam, max_len_b=4)[0]) for s in sources)


def test_rows_structure_and_token_counts(model, sources):
    rows = decoding_speed(model, sources, batch_sizes=[2, 5], beams=[1, 3], repeats=2, max_len_b=4)
    assert [(r["batch_size"], r["beam"]) for r in rows] == [(2, 1), (2, 3), (5, 1), (5, 3)]
    expected = {beam: decoded_tokens(model, sources, beam) for beam in (1, 3)}
    assert all(0 < n <= len(sources) * (1.2 * 8 + 4) for n in expected.values())
    for row in rows:
        assert set(row) == {"batch_size", "beam", "tokens_per_s", "sentences_per_s", "runs", "threads"}
        assert row["threads"] == torch.get_num_threads() == 1
        assert len(row["runs"]) == 2
        for run in row["runs"]:
            assert run["sentences"] == len(sources) and run["tokens"] == expected[row["beam"]]
            assert run["seconds"] > 0
        rates = sorted(r["tokens"] / r["seconds"] for r in row["runs"])
        assert row["tokens_per_s"] == pytest.approx(sum(rates) / 2)  # median of two runs
        assert row["sentences_per_s"] == pytest.approx(row["tokens_per_s"] * len(sources) / expected[row["beam"]])


def test_token_counts_are_deterministic(model, sources):
    first = decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=3, max_len_b=4)
    second = decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=1, max_len_b=4)
    counts = [r["tokens"] for r in first[0]["runs"] + second[0]["runs"]]
    assert len(set(counts)) == 1 and counts[0] == decoded_tokens(model, sources, 2)
    assert model.training  # beam search restores the caller's mode


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_sizes=[], beams=[1]), r"batch_sizes = \[\]; expected a non-empty list of positive integers"),
    (dict(batch_sizes=[2], beams=[0]), r"beams = \[0\]; expected"),
    (dict(batch_sizes=[2], beams=[1], repeats=0), r"repeats = 0; expected a positive integer"),
])
def test_bad_settings_are_rejected(model, sources, kwargs, message):
    with pytest.raises(PipelineError, match=message):
        decoding_speed(model, sources, **kwargs)


def test_empty_sources_are_rejected(model):
    with pytest.raises(PipelineError, match="src_ids is empty"):
        decoding_speed(model, [], batch_sizes=[1], beams=[1])


def test_bfloat16_precision_times_the_model_in_bfloat16(model, sources):
    """decoding_speed runs the search at the given precision (the model's training precision)."""
    seen = []
    hook = model.output_proj.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    try:
        decoding_speed(model, sources, batch_sizes=[3], beams=[2], repeats=1, max_len_b=4, precision="bfloat16")
    finally:
        hook.remove()
    assert seen and set(seen) == {torch.bfloat16}


# ------------------------------------------------------------------ kept cells: a stopped run resumes
CELLS = dict(batch_sizes=[2, 5], beams=[1, 3], repeats=2, max_len_b=4)
ORDER = [(2, 1), (2, 3), (5, 1), (5, 3)]


def cell_of(row):
    return row["batch_size"], row["beam"]


def kept_rows(path):
    return [json.loads(line)["row"] for line in path.read_text().splitlines()]


def stop_after(n, measured, how="sigterm"):
    """on_cell hook: record each newly measured cell; after the n-th, stop as Slurm's time limit does (SIGTERM to
    this process) or by an error."""
    def hook(row):
        measured.append(cell_of(row))
        if len(measured) == n:
            if how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises before this ends
            raise RuntimeError("stopped")
    return hook


def test_a_run_stopped_by_sigterm_keeps_its_cells_and_the_rerun_measures_only_the_others(model, sources, tmp_path,
                                                                                          capsys):
    cells, first = tmp_path / "runs" / "speed.cells.jsonl", []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped, match=r"stopped by SIGTERM .*after 3 of 4 cells; the finished ones are kept "
                                            rf"in {cells}, where a rerun resumes"):
        decoding_speed(model, sources, **CELLS, cells=cells, model_id="m1", on_cell=stop_after(3, first))
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is restored
    assert first == ORDER[:3]
    stopped = kept_rows(cells)
    assert [cell_of(r) for r in stopped] == ORDER[:3]
    assert [p.name for p in cells.parent.iterdir()] == [cells.name]  # no temporary file left behind
    capsys.readouterr()

    second = []
    rows = decoding_speed(model, sources, **CELLS, cells=cells, model_id="m1",
                          on_cell=lambda r: second.append(cell_of(r)))
    assert second == ORDER[3:]  # only the remaining cell is measured
    assert capsys.readouterr().err.splitlines() == ["resuming: 3 of 4 cells measured by an earlier attempt"]
    assert rows[:3] == stopped  # the kept cells as they were measured, exactly
    assert [cell_of(r) for r in rows] == ORDER
    expected = {beam: decoded_tokens(model, sources, beam) for beam in (1, 3)}
    for row in rows:  # the layout of an uninterrupted run
        assert set(row) == {"batch_size", "beam", "tokens_per_s", "sentences_per_s", "runs", "threads"}
        assert [r["tokens"] for r in row["runs"]] == [expected[row["beam"]]] * 2
    assert not cells.exists()  # all measured: nothing left to resume, nothing a later run (other code) could reuse


def test_an_uninterrupted_run_with_a_cells_file_gives_the_rows_of_one_without(model, sources, tmp_path):
    with_cells = decoding_speed(model, sources, **CELLS, cells=tmp_path / "c.jsonl", model_id="m1")
    without = decoding_speed(model, sources, **CELLS)
    assert [cell_of(r) for r in with_cells] == [cell_of(r) for r in without] == ORDER
    assert [[r["tokens"] for r in row["runs"]] for row in with_cells] == [[r["tokens"] for r in row["runs"]]
                                                                            for row in without]
    assert [set(r) for r in with_cells] == [set(r) for r in without] and not (tmp_path / "c.jsonl").exists()


@pytest.mark.parametrize("change, named", [
    (dict(model_id="m2"), "model"),
    (dict(repeats=1), "repeats"),
    (dict(max_len_b=5), "search"),
    (dict(precision="bfloat16"), "precision"),
    ("device", "device"),
])
def test_cells_measured_under_other_settings_are_ignored_and_measured_again(model, sources, tmp_path, capsys,
                                                                             monkeypatch, change, named):
    """Ignored (one line), not refused: the kept cells are a cache of one job's attempts; stale ones (a retrained
    model, edited settings, another GPU type on the retry's node) must not be mixed in, but stopping the job for
    them would need a person to delete a file for nothing: measuring them again is always right."""
    cells, first = tmp_path / "c.jsonl", []
    with pytest.raises(RuntimeError, match="stopped"):  # any failure keeps the finished cells
        decoding_speed(model, sources, **CELLS, cells=cells, model_id="m1", on_cell=stop_after(2, first, "error"))
    assert len(kept_rows(cells)) == 2
    capsys.readouterr()
    settings = {**CELLS, "model_id": "m1"}
    if change == "device":
        monkeypatch.setattr("pipeline.papers.zeng2021.speed.device_name", lambda device: "cpu: another one")
    else:
        settings.update(change)
    second = []
    rows = decoding_speed(model, sources, **settings, cells=cells, on_cell=lambda r: second.append(cell_of(r)))
    assert second == ORDER and [cell_of(r) for r in rows] == ORDER  # every cell measured again
    assert capsys.readouterr().err.splitlines() == [
        f"note: {cells}: 2 kept cell(s) measured under other settings ({named}) ignored; they are measured again"]


def test_kept_cells_of_other_batch_sizes_and_unreadable_lines_are_ignored(model, sources, tmp_path, capsys):
    cells, first = tmp_path / "c.jsonl", []
    with pytest.raises(RuntimeError):
        decoding_speed(model, sources, **CELLS, cells=cells, model_id="m1", on_cell=stop_after(3, first, "error"))
    cells.write_text(cells.read_text() + "{not json\n")
    capsys.readouterr()
    second = []
    rows = decoding_speed(model, sources, **{**CELLS, "batch_sizes": [2, 4]}, cells=cells, model_id="m1",
                          on_cell=lambda r: second.append(cell_of(r)))
    assert second == [(4, 1), (4, 3)] and [cell_of(r) for r in rows] == [(2, 1), (2, 3), (4, 1), (4, 3)]
    assert capsys.readouterr().err.splitlines() == [
        f"note: {cells}: 2 kept cell(s) measured under other settings (not asked for, unreadable) ignored; they are "
        "measured again", "resuming: 2 of 4 cells measured by an earlier attempt"]


def test_a_cells_file_needs_the_model_identity(model, sources, tmp_path):
    with pytest.raises(PipelineError, match="a cells file needs model_id"):
        decoding_speed(model, sources, **CELLS, cells=tmp_path / "c.jsonl")


def test_the_speed_step_resumes_from_its_cells_file_and_refuses_another_checkpoints(tmp_path, monkeypatch, capsys):
    """The step as the rule runs it (python -m pipeline speed ...): stopped by SIGTERM it exits non-zero with one
    line and no result, so that Snakemake retries; the retry measures the remaining cells; a retrained model.pt
    (another checksum) is not credited with the old cells."""
    from model_variants import save_model, save_test_data
    from pipeline.cli import main
    from pipeline.papers.zeng2021 import speed as speed_module
    inputs = save_test_data(tmp_path)
    cells, output = tmp_path / "runs/tables/fig3/speed/sys.cells.jsonl", tmp_path / "tables/fig3/speed/sys.json"
    context = {"decoding": {"length": "penalty", "length_penalty": 0.6, "max_len_a": 1.0, "max_len_b": 3},
               "cells": str(cells)}
    argv = ["speed", "--settings", json.dumps({"sentences": 3, "batch_sizes": [1, 2], "beams": [1, 2], "repeats": 1}),
            "--inputs", json.dumps(inputs), "--context", json.dumps(context), "--output", str(output)]
    measure, measured = speed_module._measure, []

    def measure_then_stop(*args):
        row = measure(*args)
        measured.append((row["batch_size"], row["beam"]))
        return row

    def stopping(*args):
        row = measure_then_stop(*args)
        if len(measured) == 3:
            signal.raise_signal(signal.SIGTERM)  # arrives as the third cell ends: it is not kept
        return row

    monkeypatch.setattr(speed_module, "_measure", stopping)
    assert main(argv) == 75
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (f"decoding_speed: stopped by SIGTERM (a time limit?) after 2 of 4 cells; "
                                    f"the finished ones are kept in {cells}, where a rerun resumes")
    assert not output.exists() and len(kept_rows(cells)) == 2
    kept = kept_rows(cells)

    measured.clear()
    monkeypatch.setattr(speed_module, "_measure", measure_then_stop)
    assert main(argv) == 0
    assert measured == [(2, 1), (2, 2)]
    assert "resuming: 2 of 4 cells measured by an earlier attempt" in capsys.readouterr().err
    result = json.loads(output.read_text())
    assert set(result) == {"rows", "sentences", "device"} and result["sentences"] == 3
    assert [(r["batch_size"], r["beam"]) for r in result["rows"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert result["rows"][:2] == kept and not cells.exists()

    # the cells of another checkpoint: a stopped run, then the model retrained (another seed, another checksum)
    measured.clear()
    monkeypatch.setattr(speed_module, "_measure", stopping)
    assert main(argv) == 75 and len(kept_rows(cells)) == 2
    save_model(tmp_path / "model.pt", seed=1)
    measured.clear()
    monkeypatch.setattr(speed_module, "_measure", measure_then_stop)
    assert main(argv) == 0
    assert measured == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert f"note: {cells}: 2 kept cell(s) measured under other settings (model) ignored" in capsys.readouterr().err


def test_the_speed_jobs_keep_their_cells_under_runs_outside_every_output():
    """Snakemake deletes a failed job's outputs and DVC a stage's outs before it reruns: the cells file is neither."""
    from pipeline.analyses import analyses, table_jobs
    from pipeline.config import load_params
    from pipeline.paths import Paths
    from workspace import ROOT
    params = load_params(ROOT / "params.yaml", scale="paper")
    jobs = [j for a, j in table_jobs(params, Paths(params.root), params.tables["zeng2021-fig3"]) if a.kind == "speed"]
    assert {j.item for j in jobs} == {"z-en-de-transf", "z-en-de-ran-all"}
    for j in jobs:
        context = analyses()["speed"].context(j)
        assert context["cells"] == f"artifacts/paper/runs/tables/zeng2021-fig3/speed/{j.item}.cells.jsonl"
        assert set(context["decoding"]) == {"length", "length_penalty", "max_len_a", "max_len_b"}
