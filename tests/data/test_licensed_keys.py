"""Every licensed or user-supplied part a paper reads at paper scale (params key paths.manual.<key>: the corpora its
sources need, the outside systems whose outputs it scores) is named in the README's paper-scale section or in the
paper's own docs/<paper>.md, and every paths.manual key the docs name is one the code reads."""
import re

from pipeline.config import load_params
from pipeline.data.registry import get_corpus
from workspace import ROOT

PAPER_SECTION = "## At paper scale on a Slurm cluster with GPUs"


def code_keys() -> dict[str, set[str]]:
    """paper -> the paths.manual keys its paper-scale params read."""
    keys: dict[str, set[str]] = {}
    params = load_params(ROOT / "params.yaml", scale="paper")
    for corpus in params.corpora.values():
        keys.setdefault(corpus.paper, set()).update(get_corpus(corpus.source).manual_keys)
    for system in params.external.values():
        keys.setdefault(system.paper, set()).add(system.manual)
    return keys


def named(text: str) -> set[str]:
    return set(re.findall(r"paths\.manual\.(\w+)", text))


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(PAPER_SECTION, 1)[1].split("\n## ", 1)[0]


def test_every_licensed_key_of_every_paper_is_documented():
    keys = code_keys()
    assert keys["hao2019"] == {"wmt17_un_zh_en", "wmt17_cwmt_zh_en"}
    assert {"nist12_zh_en_train", "nist_zh_en_eval"} <= keys["zeng2021"]
    readme = named(readme_section())
    for paper, wanted in keys.items():
        doc = named((ROOT / "docs" / f"{paper}.md").read_text(encoding="utf-8"))
        assert wanted <= readme | doc, (paper, sorted(wanted - readme - doc))


def test_every_key_the_docs_name_is_one_the_code_reads():
    every = set().union(*code_keys().values())
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in docs:
        assert named(path.read_text(encoding="utf-8")) <= every, (path.name, named(path.read_text()) - every)
