# Per table or figure: significance of proposed rows against their baselines, probing and length analyses,
# then the paper's layout. Everything a table derives lives in artifacts/<scale>/tables/<name>/ (its DVC stage's).


def table_of(wildcards):
    """The params.yaml table or figure behind results/<paper>/<output>.*"""
    for name, spec in P.tables.items():
        if spec.paper == wildcards.paper and spec.output == wildcards.output:
            return name
    raise ValueError(f"no table or figure {wildcards.paper}/{wildcards.output} in params.yaml")


def baseline_of(table, exp):
    """The experiment in the same column of the baseline row, for a proposed system."""
    spec = P.tables[table]
    for row, by_pair in spec.cells.items():
        for pair, name in by_pair.items():
            if name == exp and row in spec.baselines:
                return spec.cells[spec.baselines[row]][pair]
    raise ValueError(f"{exp} has no baseline in table {table}")


rule significance:
    input:
        raw=lambda wc: data(P.experiments[wc.exp].corpus, "raw"),
        baseline=lambda wc: hyp(baseline_of(wc.table, wc.exp)),
        system=lambda wc: hyp(wc.exp),
    output:
        f"{R}/tables/{{table}}/significance/{{exp}}.json",
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


def length_options(wildcards):
    """hao2019: source length, its bins; zeng2021 Figure 8: source and target length, seven bins."""
    if "length_src_tgt" in P.tables[wildcards.table].analyses:
        tgt = data(P.experiments[wildcards.exp].corpus, "tok", "test.tgt")
        return f"--by source target --tgt {tgt} --bins zeng2021"
    return "--by source --bins hao2019"


rule length_bins:
    input:
        src=lambda wc: data(P.experiments[wc.exp].corpus, "tok", "test.src"),
        tgt=lambda wc: data(P.experiments[wc.exp].corpus, "tok", "test.tgt"),
        raw=lambda wc: data(P.experiments[wc.exp].corpus, "raw"),
        hyp=lambda wc: hyp(wc.exp),
    output:
        f"{R}/tables/{{table}}/length/{{exp}}.json",
    params:
        lang=lambda wc: corpus_of(wc).tgt,
        options=length_options,
    log:
        f"{R}/logs/length_bins/{{table}}/{{exp}}.log",
    shell:
        "python -m pipeline length-bins --src {input.src} --hyp {input.hyp} --ref {input.raw}/test.{params.lang} "
        "--lang {params.lang} {params.options} --output {output} > {log} 2>&1"


def test_data(wildcards):
    """The model and its BPE'd test set with vocabularies (attention statistics, speed)."""
    corpus = P.experiments[wildcards.exp].corpus
    return {"model": f"{model_dir(wildcards.exp)}/model.pt",
            "src": data(corpus, "bpe", "test.src"), "tgt": data(corpus, "bpe", "test.tgt"),
            "src_vocab": data(corpus, "bpe", "vocab.src"), "tgt_vocab": data(corpus, "bpe", "vocab.tgt")}


rule attention:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/attention/{{exp}}.json",
    params:
        sentences=P.analysis.get("attention_sentences", 400),
        bins=P.analysis.get("attention_bins", 20),
    threads: 1
    log:
        f"{R}/logs/attention/{{table}}/{{exp}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline attention --model {input.model} --src {input.src} "
        "--tgt {input.tgt} --src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} "
        "--sentences {params.sentences} --bins {params.bins} --output {output} > {log} 2>&1"


rule patterns:
    input:
        f"{R}/models/{{exp}}/model.pt",
    output:
        f"{R}/tables/{{table}}/patterns/{{exp}}.json",
    params:
        size=P.analysis.get("patterns_size", 80),
    log:
        f"{R}/logs/patterns/{{table}}/{{exp}}.log",
    shell:
        "python -m pipeline patterns --model {input} --size {params.size} --output {output} > {log} 2>&1"


def machine_cores():
    """All the cores of a local run, so that the job runs alone; 1 where none are set (on a cluster)."""
    return workflow.resource_settings.cores or 1


SPEED = {"batch_sizes": P.analysis.get("speed_batch_sizes", [100]), "beams": P.analysis.get("speed_beams", [4]),
         "repeats": P.analysis.get("speed_repeats", 3)}


rule speed:
    input:
        unpack(test_data),
    output:
        f"{R}/tables/{{table}}/speed/{{exp}}.json",
    params:
        spec=lambda wc: q({**SPEED, **{k: v for k, v in P.decoding_of(wc.exp).items() if k != "batch_size"}}),
        sentences=P.analysis.get("speed_sentences", 200),
    threads: machine_cores()  # alone on the machine, so that the timings are not shared with other jobs
    log:
        f"{R}/logs/speed/{{table}}/{{exp}}.log",
    shell:
        "OMP_NUM_THREADS=1 python -m pipeline speed --model {input.model} --src {input.src} "
        "--src-vocab {input.src_vocab} --sentences {params.sentences} --spec {params.spec} --output {output} "
        "> {log} 2>&1"


def probing_corpus():
    return P.corpora[P.probing.get("corpus", CORPORA[0])]


rule probing_data:
    input:
        raw=lambda wc: data(probing_corpus().name, "raw"),
    output:
        directory(f"{R}/tables/{{table}}/probing/data"),
    params:
        source="senteval" if P.scale == "paper" else "text",
        lang=lambda wc: probing_corpus().src,
        cache=P.downloads,
        max_per_task=P.probing.get("max_per_task", 6000),
        seed=P.probing.get("seed", 1),
    log:
        f"{R}/logs/probing_data/{{table}}.log",
    shell:
        "python -m pipeline probing-data --source {params.source} --sentences {input.raw}/train.{params.lang} "
        "{input.raw}/valid.{params.lang} {input.raw}/test.{params.lang} --out {output} --cache {params.cache} "
        "--max-per-task {params.max_per_task} --seed {params.seed} > {log} 2>&1"


rule probe:
    input:
        model=f"{R}/models/{{exp}}/model.pt",
        tasks=f"{R}/tables/{{table}}/probing/data",
        codes=lambda wc: data(P.experiments[wc.exp].corpus, "bpe", "codes"),
        src_vocab=lambda wc: data(P.experiments[wc.exp].corpus, "bpe", "vocab.src"),
    output:
        f"{R}/tables/{{table}}/probing/{{exp}}.json",
    params:
        lang=lambda wc: corpus_of(wc).src,
        settings=q({k: v for k, v in P.probing.items() if k in ("seed", "epochs", "hidden", "lr")}),
    threads: 1
    log:
        f"{R}/logs/probe/{{table}}/{{exp}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline probe --model {input.model} --tasks-dir {input.tasks} "
        "--codes-dir {input.codes} --src-vocab {input.src_vocab} --lang {params.lang} --settings {params.settings} "
        "--output {output} > {log} 2>&1"


def table_files(table):
    """row -> pair -> the files behind one cell (score, model summary, significance, probing, length bins)."""
    spec = P.tables[table]
    cells = {}
    for row, by_pair in spec.cells.items():
        for pair, exp in by_pair.items():
            files = {"score": f"{R}/eval/{exp}/test.json", "model": f"{model_dir(exp)}/train.json"}
            if row in spec.baselines:
                files["significance"] = f"{R}/tables/{table}/significance/{exp}.json"
                files["baseline_model"] = f"{model_dir(spec.cells[spec.baselines[row]][pair])}/train.json"
            if spec.probing:
                files["probing"] = f"{R}/tables/{table}/probing/{exp}.json"
            if spec.length_bins or "length_src_tgt" in spec.analyses:
                files["length"] = f"{R}/tables/{table}/length/{exp}.json"
            if "tokenized_bleu" in spec.analyses:
                files["multi_bleu"] = f"{R}/tables/{table}/multi-bleu/{exp}.json"
            if "generation" in spec.analyses:
                files["generation"] = f"{R}/tables/{table}/generation/{exp}.json"
            for analysis in ("attention", "patterns", "speed"):
                if analysis in spec.analyses:
                    files[analysis] = f"{R}/tables/{table}/{analysis}/{exp}.json"
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
    standins = [f"{pair}: {get_corpus(source).description}" for pair, source in sources.items()
                if get_corpus(source).kind == "generation" and source.startswith("standin-")]
    if standins:
        footer["standin"] = "; ".join(standins)
    if "speed" in spec.analyses:
        footer["speed"] = (f"one CPU thread, alone on the machine; the first {P.analysis.get('speed_sentences', 200)} "
                           f"test sentences; median of {SPEED['repeats']} timed passes after one warm-up pass")
    if spec.probing:
        footer["probing"] = (f"{'SentEval probing files' if P.scale == 'paper' else 'text-only tasks built from ' + probing_corpus().source}; "
                             f"mean of the top encoder layer (two encoders: gated), classifier seed "
                             f"{P.probing.get('seed', 1)}")
    return {"cells": table_files(table), "footer": footer}


def table_inputs(wildcards):
    cells = table_files(table_of(wildcards))
    return sorted({f for row in cells.values() for cell in row.values() for f in cell.values()})


TABLE_OUTPUTS = "|".join(sorted(t.output for t in P.tables.values() if not t.figure)) or "none"
FIGURE_OUTPUTS = "|".join(sorted(t.output for t in P.tables.values() if t.figure)) or "none"


rule table:
    input:
        table_inputs,
    output:
        tsv="results/{paper}/{output}.tsv",
        md="results/{paper}/{output}.md",
    wildcard_constraints:
        output=TABLE_OUTPUTS,
    params:
        spec=lambda wc: q(table_spec(table_of(wc))),
        name=table_of,
    log:
        f"{R}/logs/table/{{paper}}-{{output}}.log",
    shell:
        "python -m pipeline table --name {params.name} --spec {params.spec} --output {output.tsv} "
        "--markdown {output.md} > {log} 2>&1"


rule figure:
    input:
        table_inputs,
    output:
        tsv="results/{paper}/{output}.tsv",
        png="results/{paper}/{output}.png",
    wildcard_constraints:
        output=FIGURE_OUTPUTS,
    params:
        spec=lambda wc: q(table_spec(table_of(wc))),
        name=table_of,
    log:
        f"{R}/logs/figure/{{paper}}-{{output}}.log",
    shell:
        "python -m pipeline table --name {params.name} --spec {params.spec} --output {output.tsv} "
        "--figure {output.png} > {log} 2>&1"
