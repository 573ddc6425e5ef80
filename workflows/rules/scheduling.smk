# Local runs: jobs are scheduled when a job finishes, with no job-rate limit (the default of Snakemake's Python API).
# The command line's default limit (--max-jobs-per-timespan 100/1s) makes Snakemake 9.27 start a 1 s re-scheduling
# timer after every scheduling round. Each finished job adds one more such chain while jobs wait for cores
# (snakemake/snakemake#3744). By the end of zeng2021's tiny build (574 jobs on 2 cores) that was hundreds of rounds a
# second, each stat-ing the inputs of every waiting job: Snakemake took up to half a core from training.
# Non-local executors (the Slurm profile) keep the limit, which spares the cluster's controller.


onstart:
    if workflow.local_exec:
        workflow.scheduler.job_rate_limiter = None
