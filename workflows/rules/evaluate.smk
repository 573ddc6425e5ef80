# Decode the test set with beam search, then case-sensitive sacreBLEU against the raw reference (and, for zeng2021,
# tokenised multi-bleu BLEU and the generation metrics of its Table 4, kept with the table that asks for them).


rule translate:
    input:
        model=f"{R}/models/{{exp}}/model.pt",
        src=lambda wc: data(P.experiments[wc.exp].corpus, "bpe", "test.src"),
        src_vocab=lambda wc: data(P.experiments[wc.exp].corpus, "bpe", "vocab.src"),
        tgt_vocab=lambda wc: data(P.experiments[wc.exp].corpus, "bpe", "vocab.tgt"),
    output:
        f"{R}/eval/{{exp}}/test.hyp",
    params:
        spec=lambda wc: q(P.decoding_of(wc.exp)),
        lang=lambda wc: corpus_of(wc).tgt,
    threads: 1
    log:
        f"{R}/logs/translate/{{exp}}.log",
    shell:
        "OMP_NUM_THREADS={threads} python -m pipeline translate --spec {params.spec} --model {input.model} "
        "--src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} --input {input.src} --output {output} "
        "--lang {params.lang} --no-progress > {log} 2>&1"


rule score:
    input:
        hyp=f"{R}/eval/{{exp}}/test.hyp",
        raw=lambda wc: data(P.experiments[wc.exp].corpus, "raw"),
    output:
        f"{R}/eval/{{exp}}/test.json",
    params:
        lang=lambda wc: corpus_of(wc).tgt,
    log:
        f"{R}/logs/score/{{exp}}.log",
    shell:
        "python -m pipeline score --hyp {input.hyp} --ref {input.raw}/test.{params.lang} --lang {params.lang} "
        "--system {wildcards.exp} --test-set test --output {output} > {log} 2>&1"


rule score_tokenized:
    input:
        hyp=f"{R}/eval/{{exp}}/test.hyp",
        ref=lambda wc: data(P.experiments[wc.exp].corpus, "tok", "test.tgt"),
    output:
        f"{R}/tables/{{table}}/multi-bleu/{{exp}}.json",
    params:
        lang=lambda wc: corpus_of(wc).tgt,
    log:
        f"{R}/logs/score_tokenized/{{table}}/{{exp}}.log",
    shell:
        "python -m pipeline score --metric multi-bleu --hyp {input.hyp} --ref {input.ref} --lang {params.lang} "
        "--system {wildcards.exp} --test-set test --output {output} > {log} 2>&1"


rule score_generation:
    input:
        hyp=f"{R}/eval/{{exp}}/test.hyp",
        raw=lambda wc: data(P.experiments[wc.exp].corpus, "raw"),
    output:
        f"{R}/tables/{{table}}/generation/{{exp}}.json",
    params:
        lang=lambda wc: corpus_of(wc).tgt,
    log:
        f"{R}/logs/score_generation/{{table}}/{{exp}}.log",
    shell:
        "python -m pipeline score-generation --hyp {input.hyp} --ref {input.raw}/test.{params.lang} "
        "--lang {params.lang} --system {wildcards.exp} --output {output} > {log} 2>&1"
