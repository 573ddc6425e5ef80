# Paired bootstrap of each proposed system against its row's baseline, then the paper's table.


def cell_experiments(table, row):
    return P.tables[table].cells[row]


def baseline_of(table, exp):
    """The experiment in the same column of the baseline row, for a proposed system."""
    spec = P.tables[table]
    for row, by_pair in spec.cells.items():
        for pair, name in by_pair.items():
            if name == exp and row in spec.baselines:
                return spec.cells[spec.baselines[row]][pair]
    raise ValueError(f"{exp} has no baseline in table {table}")


def significance_targets(table):
    spec = P.tables[table]
    return [f"{R}/significance/{table}/{exp}.json"
            for row in spec.baselines for exp in spec.cells[row].values()]


rule significance:
    input:
        raw=lambda wc: data(P.experiments[wc.exp].corpus, "raw"),
        baseline=lambda wc: hyp(baseline_of(wc.table, wc.exp)),
        system=lambda wc: hyp(wc.exp),
    output:
        f"{R}/significance/{{table}}/{{exp}}.json",
    params:
        lang=lambda wc: corpus_of(wc).tgt,
        n=P.significance.get("n_samples", 1000),
        seed=P.significance.get("seed", 12345),
    log:
        f"{R}/logs/significance/{{table}}/{{exp}}.log",
    shell:
        "python -m pipeline significance --ref {input.raw}/test.{params.lang} --baseline {input.baseline} "
        "--system {input.system} --lang {params.lang} --n-samples {params.n} --seed {params.seed} "
        "--output {output} > {log} 2>&1"


def table_files(table):
    """row -> pair -> the score, model summary and (for proposed rows) significance files."""
    spec = P.tables[table]
    cells = {}
    for row, by_pair in spec.cells.items():
        for pair, exp in by_pair.items():
            files = {"score": f"{R}/eval/{exp}/test.json", "model": f"{model_dir(exp)}/train.json"}
            if row in spec.baselines:
                files["significance"] = f"{R}/significance/{table}/{exp}.json"
                files["baseline_model"] = f"{model_dir(spec.cells[spec.baselines[row]][pair])}/train.json"
            cells.setdefault(row, {})[pair] = files
    return cells


def table_spec(table):
    """The cells' files and the footer facts (scale, corpora, test sets, significance settings)."""
    spec = P.tables[table]
    sources = {pair: P.corpora[P.experiments[exp].corpus].source
               for row in spec.cells.values() for pair, exp in row.items()}
    footer = {
        "scale": P.scale,
        "corpora": sources,
        "test_sets": {pair: f"the test split of {source}" for pair, source in sources.items()},
        "significance": {"n_samples": P.significance.get("n_samples", 1000),
                         "seed": P.significance.get("seed", 12345)},
    }
    return {"cells": table_files(table), "footer": footer}


def table_name(wildcards):
    """The params.yaml table behind results/<paper>/table<number>.tsv."""
    for name, spec in P.tables.items():
        if spec.paper == wildcards.paper and str(spec.number) == wildcards.number:
            return name
    raise ValueError(f"no table {wildcards.paper} {wildcards.number} in params.yaml")


def table_inputs(wildcards):
    cells = table_files(table_name(wildcards))
    return sorted({f for row in cells.values() for cell in row.values() for f in cell.values()})


rule table:
    input:
        table_inputs,
    output:
        tsv="results/{paper}/table{number}.tsv",
        md="results/{paper}/table{number}.md",
    params:
        spec=lambda wc: q(table_spec(table_name(wc))),
        name=table_name,
    log:
        f"{R}/logs/table/{{paper}}-table{{number}}.log",
    shell:
        "python -m pipeline table --name {params.name} --spec {params.spec} --output {output.tsv} "
        "--markdown {output.md} > {log} 2>&1"
