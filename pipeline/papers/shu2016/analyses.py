"""shu2016's analysis kind (pipeline/analyses.py): Figure 2's learning curves over the first epochs."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.analyses import Job, Task, register_analysis
from pipeline.settings import require


@dataclass(frozen=True)
class CurveSettings:
    """A learning curve of the run (pipeline/evaluate/curves.py: CURVES) over its first `epochs` epochs (0: all)."""
    curve: str = "valid/nll"
    epochs: int = 0

    def check(self) -> None:
        from pipeline.evaluate.curves import CURVES
        require(self.curve in CURVES, "curve", f"one of {', '.join(CURVES)}", self.curve)
        require(self.epochs >= 0, "epochs", "an integer >= 0 (0: the whole run)", self.epochs)


def curve_inputs(job: Job) -> dict:
    return {"curve": job.paths.curve(job.item, job.settings["curve"]),
            "summary": f"{job.paths.model_dir(job.item)}/train.json"}


@register_analysis("curves", CurveSettings, inputs=curve_inputs, code=("pipeline.evaluate.curves",),
                   help="a run's learning curve over its first epochs")
def curves(task: Task) -> dict:
    """A run's learning curve over its first epochs."""
    from pipeline.evaluate.curves import first_epochs, read_curve, steps_per_epoch
    from pipeline.fileio import read_json
    s = task.settings
    per_epoch = steps_per_epoch(read_json(task.inputs["summary"]), where=task.inputs["summary"])
    points = first_epochs(read_curve(task.inputs["curve"]), per_epoch, s.epochs)
    print(f"{len(points)} points of {s.curve} ({per_epoch:.1f} updates per epoch)")
    return {"curve": s.curve, "epochs": s.epochs, "steps_per_epoch": per_epoch,
            "points": [[step, value] for step, value in points]}
