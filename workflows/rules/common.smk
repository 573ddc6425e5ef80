# Config validated up front (errors name the file and key), and the path helpers every rule file uses.
import json
import re
import shlex

from pipeline.config import parse_params, read_paper_files
from pipeline.errors import PipelineError

try:
    P = parse_params(config, source="params.yaml (with --config overrides)", papers=read_paper_files())
except PipelineError as err:
    raise WorkflowError(f"invalid configuration: {err}")

R = P.root  # artifacts/<scale>: tiny and paper runs never mix


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


def data(corpus_name, *parts):
    return "/".join((R, "data", corpus_name) + parts)


def model_dir(exp):
    return f"{R}/models/{exp}"


def hyp(system, test_set):
    return f"{R}/eval/{system}/{test_set}.hyp"


def score_file(system, test_set, metric):
    return f"{R}/eval/{system}/{test_set}.{metric}.json"
