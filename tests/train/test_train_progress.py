"""The trainer's progress lines in the job log (pipeline/train/curves.py CurveLog.report): without a bar (the rules'
--no-progress) one every PROGRESS_EVERY_S seconds and one at each validation, with step, rates and time left;
they change nothing the run computes."""
import re

import pytest

from pipeline.train import curves
from train_helpers import equal_weights, read_curve, toy_fit

LINE = re.compile(r"^step (\d+)/(\d+) \((\d+)%\), ([\d.e-]+) steps/s, ([\d,]+) target tokens/s, ~([\d.]+) (s|min|h) "
                  r"left(?:, (.*))?$")
SECONDS = {"s": 1, "min": 60, "h": 3600}


def progress_lines(err: str) -> list[dict]:
    """The progress lines of a stderr, parsed; every line starting with "step " must parse."""
    lines = [line for line in err.splitlines() if line.startswith("step ")]
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    return [{"step": int(m[1]), "total": int(m[2]), "percent": int(m[3]), "steps_per_s": float(m[4]),
             "tokens_per_s": float(m[5].replace(",", "")), "left_s": float(m[6]) * SECONDS[m[7]], "unit": m[7],
             "detail": m[8] or ""} for m in parsed]


def test_a_line_every_interval_and_at_each_validation_up_to_max_steps(toy, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 0.0)  # every update is due
    summary, _ = toy_fit(toy, tmp_path)  # 30 steps, validation every 3
    err = capsys.readouterr().err
    lines = progress_lines(err)
    assert "nan" not in err
    assert [line["step"] for line in lines] == list(range(1, 31))  # one a step: validation steps are not doubled
    assert {line["total"] for line in lines} == {30}
    assert [line["percent"] for line in lines] == [round(100 * step / 30) for step in range(1, 31)]
    last = lines[-1]
    assert (last["step"], last["percent"], last["left_s"]) == (30, 100, 0.0)
    for line in lines:  # time left: the steps left at the line's own rate (as printed: 2 digits, whole units)
        left = (30 - line["step"]) / line["steps_per_s"]
        assert line["left_s"] == pytest.approx(left, rel=0.06, abs=0.5 * SECONDS[line["unit"]])
    # target tokens per step, from the printed rates, is the run's (every step counted from its start)
    assert last["tokens_per_s"] / last["steps_per_s"] == pytest.approx(summary["tokens"] / 30, rel=0.06)
    nll = read_curve(tmp_path / "curves" / "valid" / "nll.tsv")
    validations = [line for line in lines if line["detail"].startswith("valid nll")]
    assert [line["step"] for line in validations] == list(range(3, 31, 3))
    assert [line["detail"].split()[2] for line in validations] == [f"{nll[step]:.2f}" for step in range(3, 31, 3)]
    # a training loss from the first logged window (log_every 3) on; none before it (it was "train loss nan")
    assert [line["detail"] for line in lines[:2]] == ["", ""]
    assert all(line["detail"].startswith("train loss ") for line in lines[2:] if line not in validations)


def test_a_last_step_off_the_validation_cadence_logs_once(toy, tmp_path, monkeypatch, capsys):
    """Two epochs of 10 batches: validations at 3, 6, ..., 18, then the final one at step 20."""
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 0.0)
    summary, _ = toy_fit(toy, tmp_path, max_steps=0, max_epochs=2)
    lines = progress_lines(capsys.readouterr().err)
    assert summary["steps"] == 20 and [line["step"] for line in lines] == list(range(1, 21))
    assert {line["total"] for line in lines} == {20}
    assert lines[-1]["detail"].startswith("valid nll") and lines[-2]["detail"].startswith("train loss")


def test_without_the_interval_passing_only_validations_log(toy, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 3600.0)
    toy_fit(toy, tmp_path, max_steps=10)
    assert [line["step"] for line in progress_lines(capsys.readouterr().err)] == [3, 6, 9, 10]


def test_a_continued_run_counts_its_rates_from_where_it_resumed(toy, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 0.0)
    first, _ = toy_fit(toy, tmp_path, max_steps=12)
    capsys.readouterr()
    second, _ = toy_fit(toy, tmp_path, max_steps=30)  # a finished run continued (restart policy keeps it)
    lines = progress_lines(capsys.readouterr().err)
    assert [line["step"] for line in lines] == list(range(13, 31))
    assert lines[0]["percent"] == 43 and lines[-1]["left_s"] == 0.0
    tokens_per_step = (second["tokens"] - first["tokens"]) / 18
    assert lines[-1]["tokens_per_s"] / lines[-1]["steps_per_s"] == pytest.approx(tokens_per_step, rel=0.06)


def test_progress_lines_change_no_weights(toy, tmp_path, monkeypatch):
    _, quiet = toy_fit(toy, tmp_path / "quiet", max_steps=12)
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 0.0)
    _, chatty = toy_fit(toy, tmp_path / "chatty", max_steps=12)
    assert equal_weights(quiet.state_dict(), chatty.state_dict())


def test_a_named_run_names_itself_in_each_line(toy, tmp_path, monkeypatch, capsys):
    # parallel jobs share make run's terminal: each line says which system it is about
    monkeypatch.setattr(curves, "PROGRESS_EVERY_S", 3600.0)
    toy_fit(toy, tmp_path, max_steps=6, meta={"experiment": "ende-big"})
    err = capsys.readouterr().err
    named = [line.removeprefix("ende-big: ") for line in err.splitlines() if line.startswith("ende-big: step ")]
    assert [line["step"] for line in progress_lines("\n".join(named))] == [3, 6]
    assert not [line for line in err.splitlines() if line.startswith("step ")]
