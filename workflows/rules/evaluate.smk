# Decode a test set with beam search (one model or an ensemble), then score it with a registered metric against
# every reference of the test set. Score files keep per-sentence statistics, so significance tests never rescore.
from pipeline.data.registry import get_corpus
from pipeline.evaluate.metrics import get_metric


def decode_inputs(wildcards):
    corpus = P.corpus_of(wildcards.system).name
    return {"models": [PATHS.model(m) for m in P.members(wildcards.system)],
            "src": data(corpus, "bpe", f"{wildcards.split}.src"),
            "src_vocab": data(corpus, "bpe", "vocab.src"), "tgt_vocab": data(corpus, "bpe", "vocab.tgt")}


rule translate:
    input:
        unpack(decode_inputs),
    output:
        PATHS.hyp("{system}", "{split}"),
    wildcard_constraints:
        system=alternatives(P.decoded),  # the others' outputs: workflows/rules/combine.smk
    params:
        code=lambda wc: system_code("translate", wc.system),
        spec=lambda wc: q(P.decoding_of(wc.system)),
        cpu_math=cpu_math_of(resources_of("translate").gpu),  # the CPU code path (params.yaml): a change decodes again
        hide_gpus=hide_gpus(resources_of("translate").gpu),
        lang=lambda wc: P.corpus_of(wc.system).tgt,
        models=lambda wc, input: " ".join(f"--model {m}" for m in input.models),
        detruecase=lambda wc: "--detruecase" if P.corpus_of(wc.system).truecase else "",
    threads: threads_of("translate")
    resources:
        **job_resources("translate"),
    log:
        PATHS.log("translate", "{system}.{split}"),
    shell:
        "{params.hide_gpus}OMP_NUM_THREADS={threads} python -m pipeline translate --spec {params.spec} "
        "{params.models} "
        "--src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} --input {input.src} --output {output} "
        "--lang {params.lang} {params.detruecase} --no-progress > {log} 2>&1"


def truecaser(wildcards):
    """The target side's truecasing model where the corpus is truecased and the metric scores tokenised text."""
    corpus = P.corpus_of(wildcards.system)
    return [data(corpus.name, "tc", "model.tgt")] if corpus.truecase and get_metric(wildcards.metric).tokenized else []


rule score:
    input:
        hyp=PATHS.hyp("{system}", "{split}"),
        raw=lambda wc: data(P.corpus_of(wc.system).name, "raw"),
        truecaser=truecaser,
    output:
        PATHS.score("{system}", "{split}", "{metric}"),
    params:
        code=step_code("score"),
        lang=lambda wc: P.corpus_of(wc.system).tgt,
        pretokenized=lambda wc: "--pretokenized" if get_corpus(P.corpus_of(wc.system).source).pretokenized else "",
        truecaser=lambda wc, input: f"--truecaser {input.truecaser} " if input.truecaser else "",
    threads: threads_of("score")
    resources:
        **job_resources("score"),
    log:
        PATHS.log("score", "{system}.{split}.{metric}"),
    shell:
        "python -m pipeline score --metric {wildcards.metric} --hyp {input.hyp} --ref-dir {input.raw} "
        "--test-set {wildcards.split} --lang {params.lang} {params.pretokenized} --system {wildcards.system} "
        "{params.truecaser}"
        "--output {output} > {log} 2>&1"


rule scores:
    input:
        lambda wc: [PATHS.score(wc.system, split, metric) for split, metric in P.scores_of(wc.system)],
    output:
        PATHS.scores("{system}"),
    params:
        code=step_code("scores"),
    threads: threads_of("scores")
    resources:
        **job_resources("scores"),
    log:
        PATHS.log("scores", "{system}"),
    shell:
        "python -m pipeline scores --inputs {input} --output {output} > {log} 2>&1"
