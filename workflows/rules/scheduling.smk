# Local runs: jobs are scheduled when a job finishes, with no job-rate limit (the default of Snakemake's Python API).
# The command line's default limit (--max-jobs-per-timespan 100/1s) makes Snakemake 9.27 start a 1 s re-scheduling
# timer after every scheduling round. Each finished job adds one more such chain while jobs wait for cores
# (snakemake/snakemake#3744), and each round stats the inputs of every waiting job. 130 jobs into a 574-job tiny
# build on 2 cores, Snakemake used 13% of a core and train jobs ran a fifth slower than alone.
# Non-local executors (the Slurm profile) keep the limit, which spares the cluster's controller.


onstart:
    if workflow.local_exec:
        workflow.scheduler.job_rate_limiter = None
