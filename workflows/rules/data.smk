# Corpus -> raw train/valid/test sets -> Moses/jieba tokens -> cleaned training pairs -> BPE -> vocabularies.
from pipeline.data.registry import get_corpus
from pipeline.data.token_store import STORE_SUFFIXES

localrules:
    fetch,  # downloads run on the submit host: cluster compute nodes often have no internet


def fetch_args(corpus):
    """The fetch step's arguments: exactly what the corpus's raw files depend on, so that an edit of anything else
    (another corpus's licensed key, a BPE setting, the download cache's place) plans no fetch: its source and direction,
    the split sizes and the seed where its source samples the splits (a remote corpus's are fixed), the licensed keys
    its source reads (paths.manual.<key>) and its test sets (those its source lacks are cut from its test split)."""
    spec = get_corpus(corpus.source)
    args = ["--source", corpus.source, "--src", corpus.src, "--tgt", corpus.tgt]
    if spec.size_keys:
        args += ["--seed", P.seed, "--valid-size", corpus.valid_size, "--test-size", corpus.test_size]
    if spec.manual_keys:
        args += ["--manual", json.dumps({k: P.manual[k] for k in spec.manual_keys if k in P.manual}, sort_keys=True)]
    if corpus.test_sets != ("test",):
        args += ["--test-sets", *corpus.test_sets]
    return " ".join(shlex.quote(str(arg)) for arg in args)


DOWNLOADS = P.downloads  # the download cache: where the files wait, not what they are, so not a param of fetch


rule fetch:
    output:
        directory(data("{corpus}", "raw")),
    params:
        args=lambda wc: fetch_args(P.corpora[wc.corpus]),
    threads: threads_of("fetch")
    resources:
        **job_resources("fetch"),
    log:
        PATHS.log("fetch", "{corpus}"),
    shell:
        "python -m pipeline fetch {params.args} --out {output} --cache {DOWNLOADS:q} > {log} 2>&1"


def tokenize_mode(corpus, split):
    """--pretokenized (toy corpora), --escaped (a split that comes Moses-tokenised and escaped) or nothing."""
    spec = get_corpus(corpus.source)
    return "--pretokenized" if spec.pretokenized else ("--escaped" if split in spec.escaped_splits else "")


rule tokenize:
    input:
        data("{corpus}", "raw"),
    output:
        data("{corpus}", "tok", "{split}.{side}"),
    params:
        lang=lambda wc: lang(P.corpora[wc.corpus], wc.side),
        pretokenized=lambda wc: tokenize_mode(P.corpora[wc.corpus], wc.split),
    threads: threads_of("tokenize")
    resources:
        **job_resources("tokenize"),
    log:
        PATHS.log("tokenize", "{corpus}.{split}.{side}"),
    shell:
        "python -m pipeline tokenize --lang {params.lang} --input {input}/{wildcards.split}.{params.lang} "
        "--output {output} {params.pretokenized} --workers {threads} > {log} 2>&1"


def cased(corpus_name):
    """The stage holding a corpus's tokenised text as the models see it: truecased ("tc") or as tokenised."""
    return "tc" if P.corpora[corpus_name].truecase else "tok"


rule learn_truecaser:
    input:
        data("{corpus}", "tok", "train.{side}"),
    output:
        data("{corpus}", "tc", "model.{side}"),
    threads: threads_of("learn-truecaser")
    resources:
        **job_resources("learn-truecaser"),
    log:
        PATHS.log("learn_truecaser", "{corpus}.{side}"),
    shell:
        "python -m pipeline learn-truecaser --input {input} --model {output} > {log} 2>&1"


rule truecase:
    input:
        model=data("{corpus}", "tc", "model.{side}"),
        text=data("{corpus}", "tok", "{split}.{side}"),
    output:
        data("{corpus}", "tc", "{split}.{side}"),
    wildcard_constraints:
        split=r"(train|valid|test)[^.]*",
    threads: threads_of("truecase")
    resources:
        **job_resources("truecase"),
    log:
        PATHS.log("truecase", "{corpus}.{split}.{side}"),
    shell:
        "python -m pipeline truecase --model {input.model} --input {input.text} --output {output} --workers {threads} "
        "> {log} 2>&1"


rule clean:
    input:
        src=lambda wc: data(wc.corpus, cased(wc.corpus), "train.src"),
        tgt=lambda wc: data(wc.corpus, cased(wc.corpus), "train.tgt"),
    output:
        src=data("{corpus}", "clean", "train.src"),
        tgt=data("{corpus}", "clean", "train.tgt"),
        report=data("{corpus}", "clean", "report.json"),
    params:
        max_len=lambda wc: P.corpora[wc.corpus].max_len,
    threads: threads_of("clean")
    resources:
        **job_resources("clean"),
    log:
        PATHS.log("clean", "{corpus}"),
    shell:
        "python -m pipeline clean --src-in {input.src} --tgt-in {input.tgt} --src-out {output.src} "
        "--tgt-out {output.tgt} --report {output.report} --max-len {params.max_len} > {log} 2>&1"


def bpe_sides_option(corpus):
    """' --sides ...' when BPE segments fewer than both sides (corpus.bpe_sides; none: no codes), else nothing."""
    if corpus.bpe_sides == ("src", "tgt"):
        return ""
    return " --sides" + "".join(f" {side}" for side in corpus.bpe_sides)


rule learn_bpe:
    input:
        src=data("{corpus}", "clean", "train.src"),
        tgt=data("{corpus}", "clean", "train.tgt"),
    output:
        directory(data("{corpus}", "bpe", "codes")),
    params:
        merges=lambda wc: P.corpora[wc.corpus].bpe_merges,
        joint=lambda wc: "--joint" if P.corpora[wc.corpus].joint_bpe else "",
        sides=lambda wc: bpe_sides_option(P.corpora[wc.corpus]),
    threads: threads_of("learn-bpe")
    resources:
        **job_resources("learn-bpe"),
    log:
        PATHS.log("learn_bpe", "{corpus}"),
    shell:
        "python -m pipeline learn-bpe --langs src tgt --inputs {input.src} {input.tgt} --codes-dir {output} "
        "--merges {params.merges} {params.joint}{params.sides} > {log} 2>&1"


def bpe_input(wildcards):
    stage = "clean" if wildcards.split == "train" else cased(wildcards.corpus)
    return data(wildcards.corpus, stage, f"{wildcards.split}.{wildcards.side}")


rule apply_bpe:
    input:
        codes=data("{corpus}", "bpe", "codes"),
        text=bpe_input,
    output:
        data("{corpus}", "bpe", "{split}.{side}"),
    params:
        unsegmented=lambda wc: "" if wc.side in P.corpora[wc.corpus].bpe_sides else " --copy",  # a side left as words
    threads: threads_of("apply-bpe")
    resources:
        **job_resources("apply-bpe"),
    log:
        PATHS.log("apply_bpe", "{corpus}.{split}.{side}"),
    shell:
        "python -m pipeline apply-bpe --codes-dir {input.codes} --side {wildcards.side} --input {input.text} "
        "--output {output}{params.unsegmented} --workers {threads} > {log} 2>&1"


def vocab_inputs(wildcards):
    """One side's training text, or both sides' for a joint vocabulary (vocab.src = vocab.tgt)."""
    sides = ("src", "tgt") if P.corpora[wildcards.corpus].joint_vocab else (wildcards.side,)
    return [data(wildcards.corpus, "bpe", f"train.{side}") for side in sides]


rule vocab:
    input:
        vocab_inputs,
    output:
        data("{corpus}", "bpe", "vocab.{side}"),
    params:
        size=lambda wc: f" --vocab-size {P.corpora[wc.corpus].vocab_size}" if P.corpora[wc.corpus].vocab_size else "",
    threads: threads_of("vocab")
    resources:
        **job_resources("vocab"),
    log:
        PATHS.log("vocab", "{corpus}.{side}"),
    shell:
        "python -m pipeline vocab --inputs {input} --output {output}{params.size} > {log} 2>&1"


rule binarize:
    input:
        text=data("{corpus}", "bpe", "{split}.{side}"),
        vocab=data("{corpus}", "bpe", "vocab.{side}"),
    output:
        multiext(data("{corpus}", "bin", "{split}.{side}"), *STORE_SUFFIXES),
    wildcard_constraints:
        split="train|valid",
        side="src|tgt",
    params:
        prefix=lambda wc: data(wc.corpus, "bin", f"{wc.split}.{wc.side}"),
    threads: threads_of("binarize")
    resources:
        **job_resources("binarize"),
    log:
        PATHS.log("binarize", "{corpus}.{split}.{side}"),
    shell:
        "python -m pipeline binarize --input {input.text} --vocab {input.vocab} --output {params.prefix} > {log} 2>&1"


def corpus_files(wildcards):
    """Everything a system of this corpus reads: subword splits and test sets, vocabularies, tokenised test sets,
    the training and validation token stores."""
    corpus = P.corpora[wildcards.corpus]
    files = [data(corpus.name, "bpe", f"{split}.{side}") for split in ("train", "valid") + corpus.test_sets
             for side in ("src", "tgt")]
    files += [data(corpus.name, "tok", f"{split}.{side}") for split in corpus.test_sets for side in ("src", "tgt")]
    files += [data(corpus.name, "bin", f"{split}.{side}{suffix}") for split in ("train", "valid")
              for side in ("src", "tgt") for suffix in STORE_SUFFIXES]
    return files + [data(corpus.name, "bpe", f"vocab.{side}") for side in ("src", "tgt")]


localrules:
    corpus,


rule corpus:
    input:
        corpus_files,
    output:
        data("{corpus}", "ready"),
    threads: threads_of("corpus-ready")
    resources:
        **job_resources("corpus-ready"),
    log:
        PATHS.log("corpus", "{corpus}"),
    shell:
        "python -m pipeline corpus-ready --files {input} --output {output} > {log} 2>&1"
