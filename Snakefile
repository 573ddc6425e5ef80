# Rebuild the tables of five NMT papers. params.yaml (shared settings) and params/<paper>.yaml (one paper's corpora,
# models, recipes, systems, tables and figures) are the one source of truth, shared with DVC.
#   snakemake --cores 2 results/tiny/hao2019/table3.tsv                         # local, tiny scale by default
#   snakemake results/paper/hao2019/table3.tsv --profile slurm --config scale=paper   # the papers' corpora and
#                                                    sizes on a Slurm cluster (./slurm -> workflows/profiles/slurm)
#   snakemake results/smoke/hao2019/table3.tsv --profile slurm --config scale=smoke   # first: the paper scale's models
#                                                    and code paths on the embedded corpora, minutes on one GPU node
configfile: "params.yaml"
report: "workflows/report/workflow.rst"  # the report's front page (make report)

include: "workflows/rules/common.smk"
include: "workflows/rules/scheduling.smk"
include: "workflows/rules/data.smk"
include: "workflows/rules/train.smk"
include: "workflows/rules/evaluate.smk"
include: "workflows/rules/combine.smk"
include: "workflows/rules/analyses.smk"
include: "workflows/rules/report.smk"


rule all:
    default_target: True
    input:
        [out for table in P.tables.values() for out in (table.target, table.rendering)],
