"""The jobs of a Snakemake dry run (`snakemake -n`), read from its printout: how `plan` and `cost` see a build."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlannedJob:
    """One job block of a dry run: its rule, wildcards, resources, why it runs and, with -p, its shell command (as
    Snakemake printed them)."""
    rule: str
    wildcards: dict
    resources: dict
    shell: str = field(default="", compare=False)
    reason: str = field(default="", compare=False)

    @property
    def gpus(self) -> int:
        """The GPUs the job asks for (0 where its resources name none)."""
        return int(self.resources.get("gpu", 0) or 0)

    @property
    def gpu_hours_asked(self) -> float:
        """Its GPUs x its time limit, in hours."""
        return self.gpus * int(self.resources.get("runtime", 0) or 0) / 60


def _pairs(line: str | None) -> dict:
    return dict(item.split("=", 1) for item in line.split(", ") if "=" in item) if line else {}


def planned_jobs(text: str) -> list[PlannedJob]:
    """Every job block (a `[<time>]` line, `rule <name>:` or `localrule <name>:`, its indented fields and, with -p,
    its shell command) of a dry run's printout."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]\n]+\]\n)", text):
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        if rule is None:
            continue
        fields = dict(re.findall(r"^ +(wildcards|resources|reason): (.*)$", block, re.M))
        shell = re.search(r"^Shell command: (.*)$", block, re.M)
        jobs.append(PlannedJob(rule.group(1), _pairs(fields.get("wildcards")), _pairs(fields.get("resources")),
                               shell.group(1) if shell else "", fields.get("reason", "")))
    return jobs
