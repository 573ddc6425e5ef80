"""A training job given GPUs whose torch sees none (the CPU wheel `make venv` installs, or no driver) stops within
seconds with one line naming the CUDA wheel to install, instead of holding its GPUs while it trains on the CPU for its
whole time limit (pipeline/device.py require_given_gpus). A job given no GPU (the rules hide them: CUDA_VISIBLE_DEVICES
empty) trains on the CPU as before."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

from pipeline.device import given_gpus
from train_helpers import train_cli
from workspace import ROOT

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch that sees no GPU")

MODEL = {"encoder": "transformer", "decoder": "transformer", "d_model": 16, "ffn_dim": 32, "heads": 2, "enc_layers": 1,
         "dec_layers": 1, "dropout": 0.0}
RECIPE = {"lr": 0.01, "batch_size": 200, "max_steps": 2, "checkpoint_every": 2, "valid_every": 2}


@pytest.fixture(scope="module")
def train_command(tmp_path_factory):
    """`python -m pipeline train` on a tiny corpus and model, as the train rule runs it."""
    root = tmp_path_factory.mktemp("gpu-required")
    return train_cli(root, MODEL, RECIPE), root


def run_train(command, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PIPELINE_GPUS")}
    start = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env},
                          capture_output=True, text=True, timeout=300)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("env", [{"CUDA_VISIBLE_DEVICES": "0"},                            # Slurm's, for a GPU job
                                 {"CUDA_VISIBLE_DEVICES": "0,1", "PIPELINE_GPUS": "2"},    # and the train rule's
                                 {"PIPELINE_GPUS": "1"}],                                   # a local GPU job
                         ids=["slurm", "slurm-and-rule", "rule"])
def test_a_gpu_job_whose_torch_sees_no_gpu_stops_in_seconds_naming_the_cuda_wheel(train_command, env):
    command, root = train_command
    proc, seconds = run_train(command, **env)
    assert proc.returncode != 0 and seconds < 30, (proc.returncode, seconds)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stdout == "", proc.stderr + proc.stdout
    assert lines[0].startswith("error: this job was given ") and "but torch" in lines[0]
    wheel = f"-m pip install torch=={torch.__version__.split('+')[0]} --index-url <PyTorch's cu"
    if torch.version.cuda is None:    # the CPU wheel: the command that installs the CUDA one
        assert "CPU-only build" in lines[0] and wheel in lines[0]
    assert not (root / "run").exists()   # nothing read or written


def test_a_job_on_several_gpus_stops_before_torchrun_starts_a_rank(train_command):
    """The train rule's launcher for a job of several GPUs (workflows/rules/train.smk): the check, then torchrun."""
    command, root = train_command
    launcher = [sys.executable, "-m", "pipeline.device", "torchrun", "--standalone", "--nproc_per_node", "2", "-m",
                "pipeline"]
    proc, seconds = run_train(launcher + command[3:], CUDA_VISIBLE_DEVICES="0,1", PIPELINE_GPUS="2")
    assert proc.returncode == 2 and seconds < 30
    assert len(proc.stderr.splitlines()) == 1 and "but torch" in proc.stderr and proc.stdout == ""
    assert not (root / "run").exists()
    proc, _ = run_train([sys.executable, "-m", "pipeline.device", sys.executable, "-c", "print('ran')"],
                        CUDA_VISIBLE_DEVICES="")   # given no GPU: the command runs in its place
    assert proc.returncode == 0 and proc.stdout == "ran\n"


def test_a_job_given_no_gpu_trains_on_the_cpu(train_command):
    command, root = train_command
    proc, _ = run_train(command, CUDA_VISIBLE_DEVICES="")   # the rules' prefix for a job that asks for no GPU
    assert proc.returncode == 0, proc.stderr
    assert json.loads((root / "out" / "train.json").read_text(encoding="utf-8"))["steps"] == 2
    # given stand-in GPUs (the test cluster's) with PIPELINE_ALLOW_CPU=1: the CPU, as asked
    proc, _ = run_train(command[:command.index("--run-dir")] + ["--run-dir", str(root / "run2"), "--out-dir",
                                                                str(root / "out2"), "--curves-dir", str(root / "c2"),
                                                                "--no-progress"],
                        CUDA_VISIBLE_DEVICES="0", PIPELINE_ALLOW_CPU="1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((root / "out2" / "train.json").read_text(encoding="utf-8"))["steps"] == 2


@pytest.mark.parametrize("env, gpus", [({}, 0), ({"CUDA_VISIBLE_DEVICES": ""}, 0), ({"CUDA_VISIBLE_DEVICES": "-1"}, 0),
                                       ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, 0), ({"CUDA_VISIBLE_DEVICES": "2"}, 1),
                                       ({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, 4),
                                       ({"CUDA_VISIBLE_DEVICES": "", "PIPELINE_GPUS": "8"}, 8)])
def test_the_gpus_a_job_was_given(monkeypatch, env, gpus):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PIPELINE_GPUS", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert given_gpus() == gpus
