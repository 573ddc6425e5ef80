"""Where a step's model runs (pipeline/device.py): on the device the step is given, by default the job's GPU when it
has one, else the CPU; a job given a GPU that torch cannot use says so."""
import pytest
import torch

from model_variants import save_test_data
from pipeline.device import job_device, load_model_for_job
from pipeline.evaluate.test_data import load_test
from pipeline.steps.decoding import load_systems


@pytest.fixture
def files(tmp_path):
    return save_test_data(tmp_path)


def places(model) -> set[str]:
    return {str(t.device) for t in [*model.parameters(), *model.buffers()]}


def test_decoding_and_the_analyses_put_the_model_on_the_device_they_are_given(files):
    """`meta` stands in for a GPU here: every parameter and buffer goes there, none stays on the CPU."""
    vocabs = {"src": files["src_vocab"], "tgt": files["tgt_vocab"]}
    assert places(load_systems([files["model"]], vocabs, device="meta")[0]) == {"meta"}
    assert places(load_systems([files["model"]] * 2, vocabs, device="meta")[0]) == {"meta"}   # an ensemble
    assert places(load_test(files, 2, device="meta")[0]) == {"meta"}
    assert places(load_model_for_job(files["model"], "meta")[0]) == {"meta"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU-less machine's default: here torch sees a GPU")
def test_without_a_gpu_the_job_device_is_the_cpu_and_a_gpu_torch_cannot_use_is_named(files, monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")       # a job that asked for no GPU (the rules hide them)
    assert job_device() == torch.device("cpu") and capsys.readouterr().err == ""
    assert places(load_test(files, 2)[0]) == {"cpu"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")      # a GPU job on a node whose torch cannot use it
    assert job_device() == torch.device("cpu")
    assert "given GPU 0 (CUDA_VISIBLE_DEVICES) but torch" in capsys.readouterr().err
