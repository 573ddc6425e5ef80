"""A dry run's reasons in a few words (pipeline.reasons) and the plan's lines (pipeline.planning), on reason lines in
the form Snakemake 9 prints them."""
from pipeline.dry_run import PlannedJob
from pipeline.planning import plan_lines, total_line
from pipeline.reasons import explain, params_diff

PARAMS = "Params have changed since last execution: Union of exclusive params before and now across all output: "


def test_a_params_change_is_spelt_as_the_keys_that_changed():
    before = repr("""'{"model": {"d_model": 512}, "recipe": {"lr": 0.0007, "max_steps": 100000}, "seed": 1}'""")
    now = repr("""'{"model": {"d_model": 512}, "recipe": {"lr": 0.001, "max_steps": 100000}, "seed": 1}'""")
    code_before, code_now = repr({"pipeline/a.py": "1" * 64, "pipeline/b.py": "2"}), repr({"pipeline/a.py": "3" * 64,
                                                                                            "pipeline/b.py": "2"})
    reason = f"{PARAMS}before: {before},{code_before} now: {now},{code_now} "
    assert explain(reason) == ("params changed: recipe.lr: 0.0007 -> 0.001; pipeline/a.py: "
                               f"{'1' * 47}… -> {'3' * 47}…")


def test_an_option_list_with_json_gains_a_key():
    before = repr("--source wmt17-zh-en --src zh --manual '{}'")
    now = repr("""--source wmt17-zh-en --src zh --manual '{"wmt17_un_zh_en": "/data/un"}'""")
    assert explain(f"Input files updated by another job: a, b; {PARAMS}before: {before} now: {now} ") == (
        "an input is rebuilt, params changed: manual.wmt17_un_zh_en: (none) -> /data/un")


def test_scalars_and_other_causes():
    assert params_diff([60], [80]) == ["60 -> 80"]
    assert params_diff(["a"], []) == ["a -> (none)"]
    assert explain("Missing output files: x/y.pt") == "missing output"
    assert explain("Missing output files: x/y.pt; Input files updated by another job: a") == "missing output"
    assert explain("Code has changed since last execution; Missing output files: x") == \
        "the rule's command changed, missing output"


def test_plan_lines_group_jobs_by_rule_and_reason_with_their_gpu_hours():
    jobs = [PlannedJob("train", {"exp": f"e{i}"}, {"gpu": "8"}, reason="Missing output files: m") for i in range(8)]
    jobs += [PlannedJob("fetch", {"corpus": "zh-en"}, {}, reason="Missing output files: raw"),
             PlannedJob("score", {"system": "e0", "split": "test"}, {}, reason="Input files updated by another job: h")]
    lines = plan_lines(jobs, lambda job: 2.5 if job.rule == "train" else 0.0)
    assert lines == ["  train x8 (e0, e1, e2, e3, e4, e5, +2 more): missing output [20.0 GPU-h]",
                     "  fetch (zh-en): missing output",
                     "  score (e0.test): an input is rebuilt"]
    assert total_line(jobs, lambda job: 2.5 if job.rule == "train" else 0.0, "V100") == \
        "10 jobs: 8 training runs, 8 on GPUs; 20.0 GPU-h on V100 (20.0 training, 0.0 model steps)"
    assert total_line(jobs[8:], None, None) == "2 jobs: 0 training runs, 0 on GPUs"
