# One trained system per experiment. Checkpoints live in runs/<exp> (not an output), so a killed or
# preempted job resumes when rerun; the outputs are the kept model, the run summary and the learning curves.

# the learning curves of every run, collected by `dvc plots show` (see dvc.yaml)
from pipeline.evaluate.curves import CURVES
from pipeline.data.token_store import STORE_SUFFIXES


def train_inputs(wildcards):
    exp = P.experiments[wildcards.exp]
    files = {
        f"{split}_{side}{suffix.replace('.', '_')}": data(exp.corpus, "bin", f"{split}.{side}{suffix}")
        for split in ("train", "valid")
        for side in ("src", "tgt")
        for suffix in STORE_SUFFIXES
    }
    files.update(src_vocab=data(exp.corpus, "bpe", "vocab.src"), tgt_vocab=data(exp.corpus, "bpe", "vocab.tgt"))
    if exp.init:
        files["init"] = PATHS.model(exp.init)
    return files


def train_spec(wildcards):
    """Everything that defines the trained weights; a change reruns the job (Snakemake's params trigger)."""
    exp = P.experiments[wildcards.exp]
    return {"experiment": exp.name, "model": P.model_spec(exp.name), "recipe": P.recipes[exp.recipe].train,
            "seed": P.seed_of(exp.name), "init": exp.init}


def code_of(wildcards):
    """The hashes of the code that defines the weights (the trainer's and the model's files, the fixed-order kernel's
    where it computes the products): an edit reruns the job (the params trigger), whose run key then differs, so it
    trains afresh."""
    fixed = cpu_math.fixed_products(recipe_resources("gpu")(wildcards))
    return file_digests(CODE_FACTS.weights_files(P.model_spec(wildcards.exp), fixed))


def launcher(wildcards, resources):
    """One process per GPU through torchrun (DDP); plain python on one GPU or the CPU. A GPU job is told how many it
    asked for (PIPELINE_GPUS), so that where torch sees none it stops at once with one line naming the CUDA wheel
    (pipeline/device.py require_given_gpus: in the train step, and before torchrun starts any rank). Not a param (a
    function of resources): a change retrains nothing."""
    if resources.gpu > 1:
        return (f"PIPELINE_GPUS={resources.gpu} python -m pipeline.device "
                f"torchrun --standalone --nproc_per_node {resources.gpu} -m pipeline")
    return f"PIPELINE_GPUS={resources.gpu} python -m pipeline" if resources.gpu else "python -m pipeline"


def recipe_resources(key):
    return lambda wildcards: getattr(P.recipes[P.experiments[wildcards.exp].recipe].resources, key)


def job_minutes(wildcards):
    """One job's time limit: the run's minutes (P.train_minutes: with GPUs, twice its cost estimate on params.yaml's
    gpu_model; on the CPU, its recipe's runtime), at most max_job_minutes (params.yaml); a longer run takes several
    jobs (time slices), each resuming from the last checkpoint. Not a param: a change retrains nothing."""
    return min(P.train_minutes(wildcards.exp), P.max_job_minutes)


STOP_WARNING_S = 90  # our choice: finishing an update or a validation and writing a Transformer-Big checkpoint


def stop_warning(wildcards):
    """sbatch --signal: SIGTERM STOP_WARNING_S before the job's time limit, so that the trainer checkpoints after the
    update in hand and exits with status 75, losing no update (pipeline/train/stopping.py); a retry resumes. Slurm may
    send it up to a minute early, so a job under 10 minutes is not warned: the limit's own SIGTERM, then Slurm's
    KillWait (30 s by default), is time enough to checkpoint a model that trains in minutes."""
    return f"--signal=TERM@{STOP_WARNING_S}" if job_minutes(wildcards) >= 10 else ""


# a job stopped at its time limit is submitted again, as often as the longest run has slices less one: each slice
# resumes from the last checkpoint (bitwise as one uninterrupted run); the last retry is the spare one of the
# profile's `retries: 1` for a preempted job (attempts: the slices + 1). Only the submitting Snakemake retries:
# inside a cluster job (Snakemake's remote mode) a stopped trainer ends its job, and the next slice is a new job.
TRAIN_RETRIES = max((P.train_slices(name) for name in P.experiments), default=1)


rule train:
    input:
        unpack(train_inputs),
    output:
        model=PATHS.model("{exp}"),
        summary=PATHS.train_summary("{exp}"),
        curves=[PATHS.curve("{exp}", curve) for curve in CURVES],
    params:
        spec=lambda wc: q(train_spec(wc)),
        code=code_of,
        cpu_math=lambda wc: cpu_math_of(recipe_resources("gpu")(wc)),  # the CPU code path: a change retrains a CPU run
        init=lambda wc, input: f"--init {input.init}" if "init" in input.keys() else "",
        stores=lambda wc: " ".join(f"--{split}-{side} {data(P.experiments[wc.exp].corpus, 'bin', f'{split}.{side}')}"
                                   for split in ("train", "valid") for side in ("src", "tgt")),
        run_dir=PATHS.run_dir("{exp}"),
        out_dir=PATHS.model_dir("{exp}"),
        curves_dir=PATHS.curves_dir("{exp}"),
        launcher=launcher,
        hide_gpus=lambda wc, resources: hide_gpus(resources.gpu),  # a recipe without GPUs trains on the CPU anywhere
        omp=lambda wc, threads, resources: max(1, threads // max(resources.gpu, 1)),  # per rank: the job's cores shared
    threads: lambda wc: recipe_resources("cpus")(wc)
    retries: TRAIN_RETRIES if workflow.is_main_process else 0
    resources:
        gpu=recipe_resources("gpu"),
        runtime=job_minutes,
        mem_mb=recipe_resources("mem_mb"),
        attempt=lambda wc, attempt: attempt,  # a retry finishes a run its earlier attempt finished (not a param:
                                              # a params change would retrain)
        slurm_extra=stop_warning,
    log:
        PATHS.log("train", "{exp}"),
    shell:
        # the shell and tee ignore SIGTERM (Slurm signals every process of the job step), so the log stays open
        # while the trainer writes its checkpoint, and the job's status is the trainer's
        "trap '' TERM USR1; "
        "{params.hide_gpus}OMP_NUM_THREADS={params.omp} {params.launcher} train --spec {params.spec} "
        "{params.stores} "
        "--src-vocab {input.src_vocab} --tgt-vocab {input.tgt_vocab} {params.init} "
        "--run-dir {params.run_dir} --out-dir {params.out_dir} --curves-dir {params.curves_dir} --no-progress "
        "--attempt {resources.attempt} "
        "2>&1 | tee {log}"  # progress lines in the job log and on the terminal
