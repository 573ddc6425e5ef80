# Config validated up front (errors name the key), and the path helpers every rule file uses.
import json
import re
import shlex

from pipeline.config import parse_params
from pipeline.data.registry import get_corpus
from pipeline.errors import PipelineError

try:
    P = parse_params(config, source="params.yaml (with --config overrides)")
except PipelineError as err:
    raise WorkflowError(f"invalid configuration: {err}")

R = P.root  # artifacts/<scale>: tiny and paper runs never mix
CORPORA = list(P.corpora)
EXPERIMENTS = list(P.experiments)
TABLES = list(P.tables)


wildcard_constraints:
    corpus="|".join(map(re.escape, CORPORA)) or "none",
    exp="|".join(map(re.escape, EXPERIMENTS)) or "none",
    table="|".join(map(re.escape, TABLES)) or "none",
    side="src|tgt",
    paper="|".join(sorted({re.escape(t.paper) for t in P.tables.values()})) or "none",
    split="train|valid|test",


def q(obj):
    """A JSON argument, quoted for the shell."""
    return shlex.quote(json.dumps(obj, sort_keys=True))


def corpus_of(wildcards):
    return P.corpora[P.experiments[wildcards.exp].corpus]


def lang(corpus, side):
    return corpus.src if side == "src" else corpus.tgt


def data(corpus_name, *parts):
    return "/".join((R, "data", corpus_name) + parts)


def model_dir(exp):
    return f"{R}/models/{exp}"


def hyp(exp):
    return f"{R}/eval/{exp}/test.hyp"
