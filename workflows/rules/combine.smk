# Systems made from other systems' outputs (params `combinations:`) and systems whose outputs the user supplies
# (params `external:`). Each writes eval/<system>/<split>.hyp like `translate`, so scoring, significance and the
# tables treat them as any system. A combination's n-best inputs live in its own folder: eval/<combination>/nbest/.
from pipeline.data.registry import get_corpus
from pipeline.steps.decoding import nbest_decoding


def combos(method):
    return alternatives(name for name, c in P.combinations.items() if c.method == method)


def nbest_file(combo, system, split):
    return PATHS.nbest(combo, system, split)


def pretokenized(system):
    return "--pretokenized" if get_corpus(P.corpus_of(system).source).pretokenized else ""


def target_truecaser(system, tokenized=True):
    corpus = P.corpus_of(system)
    return [data(corpus.name, "tc", "model.tgt")] if corpus.truecase and tokenized else []


def nbest_spec(wildcards):
    """The system's decoding settings asking for the combination's n best (pipeline/steps/decoding.py)."""
    return nbest_decoding(P.decoding_of(wildcards.system), P.combinations[wildcards.combo].settings["n"])


rule nbest_decode:
    input:
        unpack(decode_inputs),  # evaluate.smk: the system's models, the split's subwords, the vocabularies
    output:
        hyp=PATHS.nbest("{combo}", "{system}", "{split}", "hyp"),
        nbest=PATHS.nbest("{combo}", "{system}", "{split}"),
    wildcard_constraints:
        combo=alternatives(P.combinations),
        system=alternatives(P.decoded),
    params:
        code=lambda wc: system_code("translate", wc.system),
        spec=lambda wc: q(nbest_spec(wc)),
        cpu_math=cpu_math_of(resources_of("translate").gpu),
        hide_gpus=hide_gpus(resources_of("translate").gpu),
        lang=lambda wc: P.corpus_of(wc.system).tgt,
        models=lambda wc, input: " ".join(f"--model {m}" for m in input.models),
        detruecase=lambda wc: "--detruecase" if P.corpus_of(wc.system).truecase else "",
    threads: threads_of("translate")
    resources:
        **job_resources("translate"),
    log:
        PATHS.log("nbest", "{combo}", "{system}.{split}"),
    shell:
        "{params.hide_gpus}OMP_NUM_THREADS={threads} python -m pipeline translate --spec {params.spec} "
        "{params.models} "
        "--src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} --input {input.src} --output {output.hyp} "
        "--lang {params.lang} {params.detruecase} --no-progress > {log} 2>&1"


def external_args(wildcards):
    system = P.external[wildcards.system]
    return f"--key {system.manual} --dir {shlex.quote(P.manual.get(system.manual, ''))} --system {system.name}"


def raw_source(system, split):
    """The raw source side of a split of the system's corpus (its sentence count is what outputs must match)."""
    corpus = P.corpus_of(system)
    return data(corpus.name, "raw", f"{split}.{corpus.src}")


rule external_hyp:
    input:
        raw=lambda wc: data(P.corpus_of(wc.system).name, "raw"),
    output:
        PATHS.hyp("{system}", "{split}"),
    wildcard_constraints:
        system=alternatives(P.external),
    params:
        code=step_code("external"),
        args=external_args,
        source=lambda wc: raw_source(wc.system, wc.split),
    threads: threads_of("external")
    resources:
        **job_resources("external"),
    log:
        PATHS.log("external", "{system}.{split}"),
    shell:
        "python -m pipeline external {params.args} --split {wildcards.split} --source {params.source} "
        "--output {output} > {log} 2>&1"


rule external_nbest:
    input:
        raw=lambda wc: data(P.corpus_of(wc.system).name, "raw"),
    output:
        PATHS.nbest("{combo}", "{system}", "{split}"),
    wildcard_constraints:
        combo=alternatives(P.combinations),
        system=alternatives(P.external),
    params:
        code=step_code("external"),
        args=external_args,
        source=lambda wc: raw_source(wc.system, wc.split),
        n=lambda wc: P.combinations[wc.combo].settings["n"],
    threads: threads_of("external")
    resources:
        **job_resources("external"),
    log:
        PATHS.log("external", "{combo}", "{system}.{split}"),
    shell:
        "python -m pipeline external {params.args} --split {wildcards.split} --source {params.source} "
        "--nbest {params.n} --output {output} > {log} 2>&1"


def rerank_inputs(wildcards):
    combo = P.combinations[wildcards.combo]
    scorer, corpus = combo.inputs["scorer"], P.corpus_of(wildcards.combo)
    files = {"nbest": nbest_file(wildcards.combo, combo.inputs["nbest"], wildcards.split),
             "models": [PATHS.model(m) for m in P.members(scorer)],
             "src": data(corpus.name, "bpe", f"{wildcards.split}.src"),
             "src_vocab": data(corpus.name, "bpe", "vocab.src"), "tgt_vocab": data(corpus.name, "bpe", "vocab.tgt"),
             "truecaser": target_truecaser(wildcards.combo)}
    if "tgt" in corpus.bpe_sides:
        files["codes"] = data(corpus.name, "bpe", "codes")
    return files


rule rerank:
    input:
        unpack(rerank_inputs),
    output:
        PATHS.hyp("{combo}", "{split}"),
    wildcard_constraints:
        combo=combos("rerank"),
    params:
        code=lambda wc: system_code("rerank", wc.combo),
        settings=lambda wc: q(P.combinations[wc.combo].settings),
        cpu_math=cpu_math_of(resources_of("rerank").gpu),
        hide_gpus=hide_gpus(resources_of("rerank").gpu),
        lang=lambda wc: P.corpus_of(wc.combo).tgt,
        models=lambda wc, input: " ".join(f"--model {m}" for m in input.models),
        extra=lambda wc, input: " ".join(
            ([f"--truecaser {input.truecaser}"] if input.truecaser else [])
            + ([f"--codes-dir {input.codes}"] if "codes" in input.keys() else []) + [pretokenized(wc.combo)]),
    threads: threads_of("rerank")
    resources:
        **job_resources("rerank"),
    log:
        PATHS.log("rerank", "{combo}.{split}"),
    shell:
        "{params.hide_gpus}OMP_NUM_THREADS={threads} python -m pipeline rerank {params.models} --nbest {input.nbest} "
        "--src {input.src} "
        "--src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} --lang {params.lang} "
        "--settings {params.settings} {params.extra} --output {output} > {log} 2>&1"


def gmbr_nbest(combo, split):
    return [nbest_file(combo, system, split) for system in P.combinations[combo].inputs["systems"]]


def gmbr_metric_tokenized(combo):
    from pipeline.evaluate.metrics import get_metric
    return get_metric(P.combinations[combo].settings["metric"]).tokenized


rule gmbr_tune:
    input:
        nbest=lambda wc: gmbr_nbest(wc.combo, P.combinations[wc.combo].settings["tune_split"]),
        raw=lambda wc: data(P.corpus_of(wc.combo).name, "raw"),
        truecaser=lambda wc: target_truecaser(wc.combo, gmbr_metric_tokenized(wc.combo)),
    output:
        PATHS.gmbr_weights("{combo}"),
    wildcard_constraints:
        combo=combos("gmbr"),
    params:
        code=step_code("gmbr-tune"),
        settings=lambda wc: q(P.combinations[wc.combo].settings),
        split=lambda wc: P.combinations[wc.combo].settings["tune_split"],
        lang=lambda wc: P.corpus_of(wc.combo).tgt,
        extra=lambda wc, input: " ".join(([f"--truecaser {input.truecaser}"] if input.truecaser else [])
                                         + [pretokenized(wc.combo)]),
    threads: threads_of("gmbr-tune")
    resources:
        **job_resources("gmbr-tune"),
    log:
        PATHS.log("gmbr_tune", "{combo}"),
    shell:
        "python -m pipeline gmbr-tune --nbest {input.nbest} --ref-dir {input.raw} --split {params.split} "
        "--lang {params.lang} --settings {params.settings} {params.extra} --output {output} > {log} 2>&1"


rule gmbr:
    input:
        nbest=lambda wc: gmbr_nbest(wc.combo, wc.split),
        theta=PATHS.gmbr_weights("{combo}"),
        raw=lambda wc: data(P.corpus_of(wc.combo).name, "raw"),
        truecaser=lambda wc: target_truecaser(wc.combo, gmbr_metric_tokenized(wc.combo)),
    output:
        PATHS.hyp("{combo}", "{split}"),
    wildcard_constraints:
        combo=combos("gmbr"),
    params:
        code=step_code("gmbr"),
        lang=lambda wc: P.corpus_of(wc.combo).tgt,
        source=lambda wc: raw_source(wc.combo, wc.split),
        extra=lambda wc, input: " ".join(([f"--truecaser {input.truecaser}"] if input.truecaser else [])
                                         + [pretokenized(wc.combo)]),
    threads: threads_of("gmbr")
    resources:
        **job_resources("gmbr"),
    log:
        PATHS.log("gmbr", "{combo}.{split}"),
    shell:
        "python -m pipeline gmbr --nbest {input.nbest} --theta {input.theta} --source {params.source} "
        "--lang {params.lang} {params.extra} --output {output} > {log} 2>&1"


rule length_switch:
    input:
        source=lambda wc: data(P.corpus_of(wc.combo).name, "tok", f"{wc.split}.src"),
        short=lambda wc: PATHS.hyp(P.combinations[wc.combo].inputs["short"], wc.split),
        long=lambda wc: PATHS.hyp(P.combinations[wc.combo].inputs["long"], wc.split),
    output:
        PATHS.hyp("{combo}", "{split}"),
    wildcard_constraints:
        combo=combos("length"),
    params:
        code=step_code("length-switch"),
        threshold=lambda wc: P.combinations[wc.combo].settings["threshold"],
    threads: threads_of("length-switch")
    resources:
        **job_resources("length-switch"),
    log:
        PATHS.log("length_switch", "{combo}.{split}"),
    shell:
        "python -m pipeline length-switch --source {input.source} --short {input.short} --long {input.long} "
        "--threshold {params.threshold} --output {output} > {log} 2>&1"
