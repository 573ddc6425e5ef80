# Config validated up front (errors name the file and key), and the path helpers every rule file uses.
import functools
import json
import os
import re
import shlex
import sys

from pipeline import cpu_math
from pipeline.code_deps import file_digests
from pipeline.code_facts import CodeFacts
from pipeline.config import SCALES, parse_params, read_paper_files
from pipeline.errors import PipelineError
from pipeline.paths import Paths
from pipeline.steps import load_steps

try:
    P = parse_params(config, source="params.yaml (with --config overrides)", papers=read_paper_files())
except PipelineError as err:
    raise WorkflowError(f"invalid configuration: {err}")

cpu_math.apply(P.cpu_math)  # the jobs inherit it (a Slurm job reads this file again): same bits on any x86-64 CPU
# the rules' `python` is the one running Snakemake (a venv's even where it was called as .venv/bin/snakemake)
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])

R = P.root  # artifacts/<scale>: tiny and paper runs never mix
RESULTS = f"results/{P.scale}"  # results/<scale>/<paper>/: the committed tiny tables beside a paper-scale build
PATHS = Paths(R)
STEPS = load_steps()
# which files each step, model and layout runs, kept between starts (finding them parses the code, imports torch)
CODE_FACTS = CodeFacts()


@functools.cache
def step_code(step):
    """The hashes of the files a step's code runs (pipeline/code_deps.py, as dvc.yaml's stages list them): as a param,
    an edit reruns the step's jobs (Snakemake's params trigger) and `plan` names the file. Decoding, scoring,
    combinations, significance, analyses and tables carry it, and training its own (train.smk); the corpus steps do
    not (our choice: a corpus rebuilt to the same bytes is newer, and would retrain every system downstream)."""
    return file_digests(CODE_FACTS.step_files(step))


def table_code(table):
    """step_code of the table step with the hashes of the code of the table's layout (its paper's module)."""
    return {**step_code("table"), **file_digests(CODE_FACTS.layout_files(P.tables[table].layout))}


def system_code(step, system):
    """step_code with the hashes of the code the system's models are built from (a job that runs them)."""
    return {**step_code(step),
            **file_digests({f for m in P.members(system) for f in CODE_FACTS.model_files(P.model_spec(m))})}


def alternatives(names):
    return "|".join(map(re.escape, sorted(names))) or "none"


wildcard_constraints:
    corpus=alternatives(P.corpora),
    exp=alternatives(P.experiments),
    system=alternatives(P.systems),
    table=alternatives(P.tables),
    paper=alternatives(P.files),
    metric="[a-z0-9-]+",
    side="src|tgt",
    split="train|valid|test[A-Za-z0-9_-]*",


def q(obj):
    """A JSON argument, quoted for the shell."""
    return shlex.quote(json.dumps(obj, sort_keys=True))


def lang(corpus, side):
    return corpus.src if side == "src" else corpus.tgt


data = PATHS.data  # the rules' most frequent path


def machine_cores():
    """All the cores of a local run; 1 where none are set (on a cluster)."""
    return workflow.resource_settings.cores or 1


def resources_of(step):
    """A step's declared resources at the active scale (pipeline/steps/)."""
    return STEPS[step].resources[P.scale]


def threads_of(step):
    """The cores a step's job takes: its threads, or every core of a local run for a step that runs alone."""
    declared = resources_of(step)
    return machine_cores() if declared.alone else declared.threads


def hide_gpus(gpus):
    """A job's shell prefix: a job that asks for no GPU sees none, so it computes on the CPU on any machine
    (pipeline/device.py); one that asks for GPUs sees those it was given."""
    return "" if gpus else "CUDA_VISIBLE_DEVICES= "


def cpu_math_of(gpus):
    """A model job's cpu_math param: the CPU code path (params.yaml) where the job computes on the CPU, so that a change
    reruns it; None where it computes on GPUs, which that path does not touch (an edit of the paper scale's cpu_math
    retrains and decodes nothing)."""
    return None if gpus else P.cpu_math


def job_resources(step):
    """Snakemake's resources of a step's job: memory, wall time, GPUs."""
    declared = resources_of(step)
    return {"mem_mb": declared.mem_mb, "runtime": declared.runtime, "gpu": declared.gpu}
