# One rule per declared analysis kind (pipeline/analyses.py; a paper's own kinds in pipeline/papers/<paper>/),
# generated from the registry: analysis_<kind> writes artifacts/<scale>/tables/<table>/<kind>/<item>.json for each
# cell system, table column or the whole table ("all"), and the kind's other outputs beside it.
from pipeline.analyses import analyses as declared_analyses, job


def analysis_job(analysis, wildcards):
    return job(P, PATHS, P.tables[wildcards.table], analysis, wildcards.item)


def analysis_outputs(analysis):
    """The kind's outputs: its result and its other files (a suffix ending in "/" is a folder)."""
    result = PATHS.analysis("{table}", analysis.kind, "{item}")
    base = result.removesuffix(".json")
    outputs = {"result": result}
    for name, suffix in analysis.extra_outputs.items():
        outputs[name] = directory(base + suffix[:-1]) if suffix.endswith("/") else base + suffix
    return outputs


for _analysis in declared_analyses().values():

    rule:
        name:
            _analysis.rule
        localrule: _analysis.downloads  # on the submit host: compute nodes need no internet
        input:
            unpack(lambda wc, a=_analysis: dict(a.inputs(analysis_job(a, wc)))),
        output:
            **analysis_outputs(_analysis),
        wildcard_constraints:
            item=r"[^./]+",
        params:
            settings=lambda wc, a=_analysis: q(analysis_job(a, wc).settings),
            inputs=lambda wc, input: q({name: input[name] for name in input.keys()}),  # as resolved above
            context=lambda wc, a=_analysis: q(a.context(analysis_job(a, wc))),
            extra=lambda wc, output, a=_analysis: q({name: output[name] for name in a.extra_outputs}),
            omp=1 if resources_of(_analysis.step).alone else resources_of(_analysis.step).threads,
            hide_gpus=hide_gpus(resources_of(_analysis.step).gpu),
            code=step_code(_analysis.step),
            step=_analysis.step,  # shell: below is evaluated when a job runs, after the loop: only params are bound
        threads: threads_of(_analysis.step)
        resources:
            **job_resources(_analysis.step),
        log:
            PATHS.log("analysis", _analysis.kind, "{table}", "{item}"),
        shell:
            "{params.hide_gpus}OMP_NUM_THREADS={params.omp} python -m pipeline {params.step} "
            "--settings {params.settings} --inputs {params.inputs} --context {params.context} --extra {params.extra} "
            "--output {output.result} > {log} 2>&1"
