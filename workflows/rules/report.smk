# Per table or figure: significance of proposed rows against their baselines, the analyses the table asks for, then
# the paper's layout. What a table derives lives in artifacts/<scale>/tables/<name>/ (its DVC stage's output).
import glob
import os

from pipeline.analyses import PER_COLUMN
from pipeline.data.registry import get_corpus
from pipeline.report.page import display_name


def table_of(wildcards):
    """The table or figure behind results/<paper>/<output>.*: <paper>-<output> in params/<paper>.yaml."""
    return f"{wildcards.paper}-{wildcards.output}"


def position(table, system):
    """The (row, column) of a system's cell; a system with a baseline first (it is the one tested)."""
    spec = P.tables[table]
    found = [(row, col) for row, by_col in spec.cells.items() for col, name in by_col.items() if name == system]
    if not found:
        raise ValueError(f"{system} is not in table {table}")
    return next(((r, c) for r, c in found if spec.baseline(r, c)), found[0])


def test_set(table, system):
    return P.tables[table].test_sets[position(table, system)[1]]


def tested_cell(table, system, split):
    """The (row, column) where `system` is tested on test set `split` (a system may fill several columns)."""
    spec = P.tables[table]
    found = [(row, col) for row, by_col in spec.cells.items() for col, name in by_col.items()
             if name == system and spec.test_sets[col] == split and spec.baseline(row, col)]
    if not found:
        raise ValueError(f"{system} is not tested on {split} in table {table}")
    return found[0]


def significance_inputs(wildcards):
    spec = P.tables[wildcards.table]
    row, col = tested_cell(wildcards.table, wildcards.system, wildcards.split)
    metric, _ = spec.tested()
    return {"system": score_file(wildcards.system, wildcards.split, metric),
            "baseline": score_file(spec.baseline(row, col), wildcards.split, metric)}


rule significance:
    input:
        unpack(significance_inputs),
    output:
        f"{R}/tables/{{table}}/significance/{{system}}.{{split}}.json",
    wildcard_constraints:
        system=r"[^./]+",
        split=r"test[^./]*",
    params:
        settings=lambda wc: q({k: getattr(P.tables[wc.table].significance, k) for k in ("test", "n_samples", "seed")}),
        field=lambda wc: P.tables[wc.table].tested()[1],
    log:
        f"{R}/logs/significance/{{table}}/{{system}}.{{split}}.log",
    shell:
        "python -m pipeline significance --baseline {input.baseline} --system {input.system} "
        "--settings {params.settings} --field '{params.field}' --output {output} > {log} 2>&1"


def analysis(table, kind):
    return P.tables[table].analyses[kind]


def test_data(wildcards):
    """A trained model and its BPE'd test set with vocabularies (attention statistics, speed)."""
    corpus = P.corpus_of(wildcards.system).name
    split = test_set(wildcards.table, wildcards.system)
    return {"model": f"{model_dir(wildcards.system)}/model.pt",
            "src": data(corpus, "bpe", f"{split}.src"), "tgt": data(corpus, "bpe", f"{split}.tgt"),
            "src_vocab": data(corpus, "bpe", "vocab.src"), "tgt_vocab": data(corpus, "bpe", "vocab.tgt")}


def length_inputs(wildcards):
    corpus = P.corpus_of(wildcards.system).name
    split = test_set(wildcards.table, wildcards.system)
    files = {"src": data(corpus, "tok", f"{split}.src"), "tgt": data(corpus, "tok", f"{split}.tgt"),
             "raw": data(corpus, "raw"), "hyp": hyp(wildcards.system, split)}
    metric = analysis(wildcards.table, "length")["metric"]
    return {**files, "scores": score_file(wildcards.system, split, metric)} if metric else files


rule analysis_length:
    input:
        unpack(length_inputs),
    output:
        f"{R}/tables/{{table}}/length/{{system}}.json",
    params:
        settings=lambda wc: q(analysis(wc.table, "length")),
        lang=lambda wc: P.corpus_of(wc.system).tgt,
        split=lambda wc: test_set(wc.table, wc.system),
        scores=lambda wc, input: f"--scores {input.scores} " if "scores" in input.keys() else "",
    log:
        f"{R}/logs/length/{{table}}/{{system}}.log",
    shell:
        "python -m pipeline length-bins --src {input.src} --tgt {input.tgt} --hyp {input.hyp} "
        "--ref {input.raw}/{params.split}.{params.lang} --lang {params.lang} --settings {params.settings} "
        "{params.scores}--output {output} > {log} 2>&1"


rule analysis_attention:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/attention/{{system}}.json",
    params:
        settings=lambda wc: analysis(wc.table, "attention"),
    threads: 1
    log:
        f"{R}/logs/attention/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline attention --model {input.model} --src {input.src} "
        "--tgt {input.tgt} --src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} "
        "--sentences {params.settings[sentences]} --bins {params.settings[bins]} --output {output} > {log} 2>&1"


rule analysis_patterns:
    input:
        f"{R}/models/{{system}}/model.pt",
    output:
        f"{R}/tables/{{table}}/patterns/{{system}}.json",
    params:
        size=lambda wc: analysis(wc.table, "patterns")["size"],
    log:
        f"{R}/logs/patterns/{{table}}/{{system}}.log",
    shell:
        "python -m pipeline patterns --model {input} --size {params.size} --output {output} > {log} 2>&1"


rule analysis_previous_words:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/previous_words/{{system}}.json",
    params:
        settings=lambda wc: q(analysis(wc.table, "previous_words")),
    threads: 1
    log:
        f"{R}/logs/previous_words/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline previous-words --model {input.model} --src {input.src} "
        "--tgt {input.tgt} --src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} --settings {params.settings} "
        "--output {output} > {log} 2>&1"


rule analysis_alignment:
    input:
        unpack(test_data),
        raw=lambda wc: data(P.corpus_of(wc.system).name, "raw"),
    output:
        f"{R}/tables/{{table}}/alignment/{{system}}.json",
    params:
        settings=lambda wc: q(analysis(wc.table, "alignment")),
        split=lambda wc: test_set(wc.table, wc.system),
    threads: 1
    log:
        f"{R}/logs/alignment/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline alignment --model {input.model} --src {input.src} "
        "--tgt {input.tgt} --src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} "
        "--gold {input.raw}/{params.split}.links --settings {params.settings} --output {output} > {log} 2>&1"


rule analysis_perplexity:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/perplexity/{{system}}.json",
    params:
        settings=lambda wc: analysis(wc.table, "perplexity"),
    threads: 1
    log:
        f"{R}/logs/perplexity/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline perplexity --model {input.model} --src {input.src} "
        "--tgt {input.tgt} --src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} "
        "--sentences {params.settings[sentences]} --batch-size {params.settings[batch_size]} --output {output} "
        "> {log} 2>&1"


rule analysis_curves:
    input:
        curve=lambda wc: f"{R}/curves/{wc.system}/{analysis(wc.table, 'curves')['curve']}.tsv",
        summary=f"{R}/models/{{system}}/train.json",
    output:
        f"{R}/tables/{{table}}/curves/{{system}}.json",
    params:
        settings=lambda wc: q(analysis(wc.table, "curves")),
    log:
        f"{R}/logs/curves/{{table}}/{{system}}.log",
    shell:
        "python -m pipeline curve --curve {input.curve} --summary {input.summary} --settings {params.settings} "
        "--output {output} > {log} 2>&1"


def column_systems(table, column):
    """row -> system of one column of a table, in row order."""
    return {row: by_col[column] for row, by_col in P.tables[table].cells.items() if column in by_col}


def ranking_inputs(wildcards):
    """The column's systems' test translations, its corpus's raw test set, and any filled-in sheets."""
    systems = column_systems(wildcards.table, wildcards.column)
    split = P.tables[wildcards.table].test_sets[wildcards.column]
    sheets = analysis(wildcards.table, "ranking")["sheets"]
    filled = sorted(glob.glob(f"{sheets}/{wildcards.column}*.tsv")) if sheets else []
    return {"hyps": [hyp(system, split) for system in systems.values()],
            "raw": data(P.corpus_of(next(iter(systems.values()))).name, "raw"), "filled": filled}


rule analysis_ranking:
    input:
        unpack(ranking_inputs),
    output:
        result=f"{R}/tables/{{table}}/ranking/{{column}}.json",
        sheet=f"{R}/tables/{{table}}/ranking/{{column}}.sheet.tsv",
        key=f"{R}/tables/{{table}}/ranking/{{column}}.key.json",
    wildcard_constraints:
        column=r"[^./]+",
    params:
        hyps=lambda wc, input: " ".join(f"--hyp {row}={path}"
                                        for row, path in zip(column_systems(wc.table, wc.column), input.hyps)),
        settings=lambda wc: analysis(wc.table, "ranking"),
        split=lambda wc: P.tables[wc.table].test_sets[wc.column],
        corpus=lambda wc: P.corpus_of(next(iter(column_systems(wc.table, wc.column).values()))),
        filled=lambda wc, input: " ".join(["--filled"] + list(input.filled)) if input.filled else "",
    log:
        f"{R}/logs/ranking/{{table}}/{{column}}.log",
    shell:
        "python -m pipeline ranking {params.hyps} --src {input.raw}/{params.split}.{params.corpus.src} "
        "--ref {input.raw}/{params.split}.{params.corpus.tgt} --sentences {params.settings[sentences]} "
        "--seed {params.settings[seed]} --sheet {output.sheet} --key {output.key} {params.filled} "
        "--output {output.result} > {log} 2>&1"


def machine_cores():
    """All the cores of a local run, so that the job runs alone; 1 where none are set (on a cluster)."""
    return workflow.resource_settings.cores or 1


def speed_spec(wildcards):
    settings = analysis(wildcards.table, "speed")
    decoding = {k: v for k, v in P.decoding_of(wildcards.system).items() if k not in ("batch_size", "beam")}
    return {**decoding, **{k: settings[k] for k in ("batch_sizes", "beams", "repeats")}}


rule analysis_speed:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/speed/{{system}}.json",
    params:
        spec=lambda wc: q(speed_spec(wc)),
        sentences=lambda wc: analysis(wc.table, "speed")["sentences"],
    threads: machine_cores()  # alone on the machine, so that the timings are not shared with other jobs
    log:
        f"{R}/logs/speed/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS=1 python -m pipeline speed --model {input.model} --src {input.src} "
        "--src-vocab {input.src_vocab} --sentences {params.sentences} --spec {params.spec} --output {output} "
        "> {log} 2>&1"


def probing_corpus(table):
    return P.corpora[analysis(table, "probing")["corpus"]]


rule analysis_probing_data:
    input:
        raw=lambda wc: data(probing_corpus(wc.table).name, "raw"),
    output:
        directory(f"{R}/tables/{{table}}/probing/data"),
    params:
        source="senteval" if P.scale == "paper" else "text",
        lang=lambda wc: probing_corpus(wc.table).src,
        cache=P.downloads,
        settings=lambda wc: analysis(wc.table, "probing"),
    log:
        f"{R}/logs/probing_data/{{table}}.log",
    shell:
        "python -m pipeline probing-data --source {params.source} --sentences {input.raw}/train.{params.lang} "
        "{input.raw}/valid.{params.lang} {input.raw}/test.{params.lang} --out {output} --cache {params.cache} "
        "--max-per-task {params.settings[max_per_task]} --seed {params.settings[seed]} > {log} 2>&1"


rule analysis_probing:
    input:
        model=f"{R}/models/{{system}}/model.pt",
        tasks=f"{R}/tables/{{table}}/probing/data",
        codes=lambda wc: data(P.corpus_of(wc.system).name, "bpe", "codes"),
        src_vocab=lambda wc: data(P.corpus_of(wc.system).name, "bpe", "vocab.src"),
    output:
        f"{R}/tables/{{table}}/probing/{{system}}.json",
    params:
        lang=lambda wc: P.corpus_of(wc.system).src,
        settings=lambda wc: q({k: v for k, v in analysis(wc.table, "probing").items()
                               if k in ("seed", "epochs", "hidden", "lr")}),
    threads: 1
    log:
        f"{R}/logs/probe/{{table}}/{{system}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline probe --model {input.model} --tasks-dir {input.tasks} "
        "--codes-dir {input.codes} --src-vocab {input.src_vocab} --lang {params.lang} --settings {params.settings} "
        "--output {output} > {log} 2>&1"


def cell_files(table):
    """row -> column -> the files behind one cell: score files per metric, run summary, significance, analyses."""
    spec = P.tables[table]
    cells = {}
    for row, by_col in spec.cells.items():
        for col, system in by_col.items():
            split = spec.test_sets[col]
            cell = {"system": system,
                    "scores": {m: score_file(system, split, m) for m in spec.metrics()},
                    "train": [f"{model_dir(m)}/train.json" for m in P.members(system)],
                    "analyses": {kind: f"{R}/tables/{table}/{kind}/{col if kind in PER_COLUMN else system}.json"
                                 for kind in spec.analyses}}
            baseline = spec.baseline(row, col)
            if baseline is not None:
                cell["significance"] = f"{R}/tables/{table}/significance/{system}.{split}.json"
                cell["baseline"] = {"system": baseline,
                                    "scores": {m: score_file(baseline, split, m) for m in spec.metrics()},
                                    "train": [f"{model_dir(m)}/train.json" for m in P.members(baseline)]}
            cells.setdefault(row, {})[col] = cell
    return cells


def table_spec(table):
    """What the generic table step reads (cells' files) and the facts its footer states."""
    spec = P.tables[table]
    columns = sorted({col for row in spec.cells.values() for col in row})
    corpus = {col: P.corpus_of(next(r[col] for r in spec.cells.values() if col in r)) for col in columns}
    significance = None
    if spec.significance is not None:
        significance = {k: getattr(spec.significance, k) for k in ("value", "test", "n_samples", "seed")}
    facts = {"table": table, "scale": P.scale, "columns": columns,
             "corpora": {col: c.source for col, c in corpus.items()},
             "corpus_descriptions": {col: get_corpus(c.source).description for col, c in corpus.items()},
             "test_sets": dict(spec.test_sets), "significance": significance, "analyses": dict(spec.analyses),
             "combinations": {name: {"method": c.method, "inputs": c.inputs, "settings": c.settings}
                              for name, c in P.combinations.items() if name in spec.systems()}}
    return {"layout": spec.layout, "values": dict(spec.values), "cells": cell_files(table), "facts": facts}


def table_inputs(wildcards):
    files = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key != "system":
                    walk(value)
        elif isinstance(node, list):
            files.update(node)
        else:
            files.add(node)

    walk(cell_files(table_of(wildcards)))
    return sorted(files)


TABLE_OUTPUTS = alternatives(t.output for t in P.tables.values() if not t.figure)
FIGURE_OUTPUTS = alternatives(t.output for t in P.tables.values() if t.figure)


rule table:
    input:
        table_inputs,
    output:
        tsv="results/{paper}/{output}.tsv",
        md="results/{paper}/{output}.md",
        cells=f"{R}/tables/{{paper}}-{{output}}/cells.json",
    wildcard_constraints:
        output=TABLE_OUTPUTS,
    params:
        spec=lambda wc: q(table_spec(table_of(wc))),
    log:
        f"{R}/logs/table/{{paper}}-{{output}}.log",
    shell:
        "python -m pipeline table --spec {params.spec} --output {output.tsv} --markdown {output.md} "
        "--cells {output.cells} > {log} 2>&1"


rule figure:
    input:
        table_inputs,
    output:
        tsv="results/{paper}/{output}.tsv",
        png="results/{paper}/{output}.png",
        cells=f"{R}/tables/{{paper}}-{{output}}/cells.json",
    wildcard_constraints:
        output=FIGURE_OUTPUTS,
    params:
        spec=lambda wc: q(table_spec(table_of(wc))),
    log:
        f"{R}/logs/figure/{{paper}}-{{output}}.log",
    shell:
        "python -m pipeline table --spec {params.spec} --output {output.tsv} --figure {output.png} "
        "--cells {output.cells} > {log} 2>&1"


# Snakemake's report (`make report`): one self-contained HTML page per table and figure, read from results/ as it
# stands (a fresh clone's committed files need no rebuild), flagged for the report and grouped by paper.
def page(table):
    """The report page of a table or figure (params entry)."""
    return f"{R}/report/{table.paper}/{table.output}.html"


rule report_page:
    input:
        tsv="results/{paper}/{output}.tsv",
        rendering=lambda wc: P.tables[table_of(wc)].rendering,
        code="pipeline/report/page.py",  # a change of the page's layout renders every page again
    output:
        report(f"{R}/report/{{paper}}/{{output}}.html", caption="../report/page.rst", category="{paper}",
               subcategory=lambda wc: "Figures" if P.tables[table_of(wc)].figure else "Tables",
               labels=lambda wc: {"name": display_name(wc.output)}),
    wildcard_constraints:
        output=alternatives(t.output for t in P.tables.values()),
    params:
        name=lambda wc: f"{wc.paper} {display_name(wc.output)}",
    log:
        f"{R}/logs/report_page/{{paper}}-{{output}}.log",
    shell:
        "python -m pipeline report-page --tsv {input.tsv} --rendering {input.rendering} --name {params.name:q} "
        "--output {output} > {log} 2>&1"


rule report_pages:  # the tables and figures results/ holds (workflows/report.sh names the others)
    input:
        [page(table) for table in P.tables.values() if os.path.exists(table.target)],
