"""Every shell command in the README's and docs/*.md's code blocks still works, so the docs cannot drift.

Commands come from ```bash, ```sh, ```shell and ```console blocks (a console block's commands are its `$ ` lines),
one a line: `\\` continuations joined, `# comments` and blank lines dropped, `{a,b}` expanded as bash does. Each is
checked without building anything:

- `make <target> [VAR=value]`: the target is a rule of the Makefile and `make -n` of the command succeeds;
- `snakemake ...`: a dry run (`-n` added) in the repository root, which writes only `.snakemake/`; a `--profile`
  must be a folder of the checkout with a config.yaml (`--profile slurm` dry-runs without a cluster). Commands
  that differ only in their targets run as one dry run of all their targets (one per paper would take minutes);
- `dvc repro ...` / `dvc exp run ...`: their options are in their `--help`, their targets are stages of dvc.yaml,
  and each `-S` override, applied by DVC's own code to a copy of the params files, leaves params that
  `python -m pipeline check-config` accepts at both scales. The slow test also runs them with `--dry` in a copy
  of the checkout (DVC writes .dvc/tmp, and `exp run` stashes and makes refs): about 2 minutes together;
- any other `dvc <command>`: `dvc <command> --help` succeeds and lists every option the docs use;
- `python -m pipeline <step>`: run for real when the step only reads (READ_ONLY_STEPS), else
  `python -m pipeline <step> --help` succeeds and lists every option the docs use;
- `python <script>.py ...`: the same `--help` check (the benchmarks are argparse scripts);
- `bash <script> ...`: the script exists and `bash -n` parses it; if it dispatches on its first argument
  (`case "${1...}" in`), that argument is one of its cases (none of the scripts answers --help);
- `pytest ...`: `pytest --collect-only -q` with the same arguments collects;
- SHOWN_ONLY: commands only shown, each with the reason.

Anything else, and any pipe, redirection or `&&`, fails the test: a new kind of command needs a decision here.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pipeline.scales import SCALES

from workspace import ROOT, env, run

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELL_FENCES = {"bash", "sh", "shell", "console"}
OPERATORS = {"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", ">&", "<&", "(", ")"}

# `python -m pipeline <step>` that only read files and print: safe to run for real in the checkout
READ_ONLY_STEPS = {"check-config", "targets", "describe", "compare"}

# commands only shown, never run or checked here: argv prefix -> why
SHOWN_ONLY = {
    ("source", ".venv/bin/activate"): "changes the reader's own shell; `make run` / `make venv` (checked) make .venv",
    ("git", "clone"): "needs the network and the reader's URL; a fresh clone is what the end-to-end tests build",
}

# Snakemake options that write even in a dry run: a command using one needs its own check
SNAKEMAKE_WRITES_DESPITE_DRY_RUN = {"--report", "--unlock", "--cleanup-metadata", "--cleanup-shadow", "--archive",
                                    "--delete-all-output", "--delete-temp-output", "--generate-unit-tests",
                                    "--touch", "-t", "--containerize", "--export-cwl"}

DVC_GROUPS = {"exp", "experiments", "metrics", "plots", "params", "remote", "stage", "cache", "data", "queue",
              "artifacts"}   # dvc <group> <command> ...
# the options that take a value, so that the word after one is not taken for a target
DVC_VALUE_OPTIONS = {("repro",): {"--cwd"},
                     ("exp", "run"): {"-S", "--set-param", "-n", "--name", "-m", "--message", "-j", "--jobs", "-C",
                                      "--copy-paths"}}


class UncheckedCommand(Exception):
    """The docs show a command this test does not know how to check: teach `Checker.check` (or SHOWN_ONLY)."""


@dataclass(frozen=True)
class Command:
    where: str              # file:line of the command's first line
    argv: tuple[str, ...]   # shell words, braces expanded

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.argv)}"


def expand_braces(word: str) -> list[str]:
    """bash's brace expansion of one word: results/t{1,2}.tsv -> results/t1.tsv results/t2.tsv."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not match:
        return [word]
    return [expanded for part in match.group(1).split(",")
            for expanded in expand_braces(word[:match.start()] + part + word[match.end():])]


def shell_words(line: str) -> list[str]:
    """The words of one shell line, quotes removed, `# comment` dropped, operators as words of their own."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return [expanded for word in lexer for expanded in expand_braces(word)]


def commands_in(text: str, name: str) -> list[Command]:
    """Every command of the shell code blocks of one markdown text."""
    found, lines, fence, i = [], text.splitlines(), None, 0
    while i < len(lines):
        line = lines[i]
        opening = re.match(r"\s*```+\s*([\w-]*)", line)
        if opening:
            fence = None if fence is not None else opening.group(1).lower()  # opens a block, or closes one
            i += 1
            continue
        start = i
        while line.rstrip().endswith("\\") and i + 1 < len(lines):   # continuation lines
            i += 1
            line = line.rstrip()[:-1] + " " + lines[i]
        i += 1
        if fence not in SHELL_FENCES:
            continue
        if fence == "console":
            if not line.lstrip().startswith("$ "):
                continue   # a console block's output
            line = line.lstrip()[2:]
        words = shell_words(line)
        if words:
            found.append(Command(f"{name}:{start + 1}", tuple(words)))
    return found


def doc_commands() -> list[Command]:
    return [command for path in DOCS
            for command in commands_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]


def options_of(args) -> list[str]:
    """The options a command line uses (`--name=value` -> `--name`)."""
    return [arg.split("=", 1)[0] for arg in args if arg.startswith("-") and arg not in ("-", "--")]


def makefile_rules(makefile: Path) -> set[str]:
    rules = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        match = re.match(r"([^\s:=#][^:=]*?)\s*::?(?!=)", line)
        if match:
            rules.update(match.group(1).split())
    return rules


def dvc_stages(dvc_yaml: Path) -> set[str]:
    """The targets DVC accepts for a dvc.yaml's stages: each stage's name, and `<name>@<scale>` for a stage named for
    the active scale (a foreach over it) at every scale."""
    names = set()
    for name, spec in yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))["stages"].items():
        keys = spec.get("foreach") if isinstance(spec, dict) else None
        names.add(name)
        names.update(f"{name}@{key}" for key in (SCALES if keys == ["${scale}"] else keys or ()))
    return names


def set_params(args) -> list[str]:
    """The values of every -S / --set-param of a `dvc exp run` command line."""
    values, args = [], list(args)
    for i, arg in enumerate(args):
        if arg in ("-S", "--set-param") and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith("--set-param="):
            values.append(arg.split("=", 1)[1])
    return values


def positionals(args, value_options=frozenset()) -> list[str]:
    """The targets of a command line: words that are neither options nor the values of value_options."""
    found, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in value_options:
            skip = True
        elif not arg.startswith("-"):
            found.append(arg)
    return found


def apply_set_params(values: list[str], root: Path) -> None:
    """Apply `dvc exp run -S` values to the params files under root, as DVC does (Hydra's override grammar)."""
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import apply_overrides

    for path, overrides in to_path_overrides(values).items():
        target = root / path
        assert target.is_file(), f"-S names {path}, which is not a file of the checkout"
        try:
            apply_overrides(target, overrides)
        except Exception as error:  # DVC's InvalidArgumentError, chained to Hydra's reason
            raise AssertionError(f"DVC rejects -S {overrides}: {error}: {error.__cause__}") from error


def script_cases(script: Path) -> set[str] | None:
    """The case labels of a script that dispatches on its first argument (`*` left out), else None."""
    text = script.read_text(encoding="utf-8")
    if not re.search(r'case\s+"?\$\{?1\b', text):
        return None
    labels = set()
    for match in re.finditer(r"^\s*([\w.|-]+)\)", text, flags=re.M):
        labels.update(match.group(1).split("|"))
    return labels


def comparable(value) -> str:
    """A parsed option's value as text that equal settings share (a settings object: its fields, not its address)."""
    text = repr(value)
    return repr(vars(value)) if " object at 0x" in text and hasattr(value, "__dict__") else text


class Checker:
    """Checks one command without building anything (see the module's docstring). `check` returns how it checked;
    it raises AssertionError when the command fails its check and UncheckedCommand when it knows no check."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        # dry runs grouped by their options: options -> (options, targets, the commands grouped), run by run_dry_runs
        self.snakemake_runs: dict[tuple, tuple[list[str], list[str], list[str]]] = {}
        self.passed: dict[tuple[str, ...], str] = {}   # a command the docs show twice is checked once
        self.helps: dict[tuple[str, ...], str] = {}

    def check(self, argv: tuple[str, ...] | list[str]) -> str:
        if tuple(argv) not in self.passed:
            self.passed[tuple(argv)] = self._check(list(argv))
        return self.passed[tuple(argv)]

    def help(self, command: list[str], options: list[str]) -> str:
        """`<command> --help` (run once) succeeds and names every option; returns the help text."""
        if tuple(command) not in self.helps:
            self.helps[tuple(command)] = run([*command, "--help"], self.root).stdout
        text = self.helps[tuple(command)]
        missing = [opt for opt in options
                   if opt not in ("-h", "--help") and not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text)]
        assert not missing, f"{shlex.join(command)} has no option {', '.join(missing)} (its --help:\n{text})"
        return text

    def _check(self, argv: list[str]) -> str:
        for prefix, reason in SHOWN_ONLY.items():
            if tuple(argv[:len(prefix)]) == prefix:
                return f"shown only: {reason}"
        operators = [word for word in argv if word in OPERATORS]
        if operators:
            raise UncheckedCommand(f"{shlex.join(argv)}: one command a line, without {' '.join(operators)}")
        program, args = argv[0], argv[1:]
        if program == "make":
            return self.make(args)
        if program == "snakemake":
            return self.snakemake(args)
        if program == "dvc":
            return self.dvc(args)
        if program in ("python", "python3") and args[:2] == ["-m", "pipeline"]:
            return self.pipeline(args[2:])
        if program in ("python", "python3") and args and args[0].endswith(".py"):
            script = self.root / args[0]
            assert script.is_file(), f"{args[0]} is not a file of the checkout"
            self.help(["python", args[0]], options_of(args[1:]))
            return f"python {args[0]} --help lists {options_of(args[1:]) or 'no options'}"
        if program == "bash" and args and not args[0].startswith("-"):
            return self.bash(args)
        if program == "pytest":
            run(["pytest", "--collect-only", "-q", *args], self.root)
            return "pytest --collect-only"
        raise UncheckedCommand(f"{shlex.join(argv)}: no check for `{program}` (teach Checker.check or SHOWN_ONLY)")

    def make(self, args: list[str]) -> str:
        targets = [arg for arg in args if not arg.startswith("-") and "=" not in arg]
        assert targets, f"make {shlex.join(args)}: name the target"
        unknown = set(targets) - makefile_rules(self.root / "Makefile")
        assert not unknown, f"make {shlex.join(args)}: no rule {', '.join(sorted(unknown))} in the Makefile"
        run(["make", "-n", *args], self.root)
        return "make -n"

    def snakemake(self, args: list[str]) -> str:
        from snakemake.cli import get_argument_parser

        writes = [arg for arg in options_of(args) if arg in SNAKEMAKE_WRITES_DESPITE_DRY_RUN]
        if writes:
            raise UncheckedCommand(f"snakemake {shlex.join(args)}: {' '.join(writes)} writes even in a dry run")
        try:
            parsed = get_argument_parser().parse_args(args)
        except SystemExit as error:
            raise AssertionError(f"snakemake rejects its command line: {shlex.join(args)}") from error
        for profile in parsed.profile or []:   # a list: Snakemake 9 takes --profile more than once
            folder = self.root / profile
            assert (folder / "config.yaml").is_file(), f"--profile {profile}: no {profile}/config.yaml in the checkout"
        options = list(args)
        for target in parsed.targets:
            options.remove(target)
        if "--" in options:
            options.remove("--")
        if not parsed.dryrun:
            options.insert(0, "-n")
        key = tuple(sorted((name, comparable(value))
                           for name, value in vars(get_argument_parser().parse_args(options)).items()))
        group = self.snakemake_runs.setdefault(key, (options, [], []))
        group[1].extend(target for target in parsed.targets if target not in group[1])
        group[2].append(shlex.join(["snakemake", *args]))
        return f"snakemake {shlex.join(options)}, dry run of its targets"

    def run_dry_runs(self) -> list[str]:
        """The grouped Snakemake dry runs; returns the failures, each naming its commands and the output's end."""
        failures = []
        for options, targets, commands in self.snakemake_runs.values():
            proc = run(["snakemake", *options, "--", *targets], self.root, check=False)
            if proc.returncode != 0:
                failures.append(f"snakemake {shlex.join(options)} -- {' '.join(targets)} failed, the dry run of:\n  "
                                + "\n  ".join(commands) + f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        self.snakemake_runs.clear()
        return failures

    def dvc(self, args: list[str]) -> str:
        assert args and not args[0].startswith("-"), f"dvc {shlex.join(args)}: the command first, please"
        command = args[:2] if args[0] in DVC_GROUPS and len(args) > 1 and not args[1].startswith("-") else args[:1]
        rest = args[len(command):]
        value_options = DVC_VALUE_OPTIONS.get(tuple(command), set())
        self.help(["dvc", *command], options_of(rest))
        if command not in (["repro"], ["exp", "run"]):
            return f"dvc {' '.join(command)} --help lists {options_of(rest) or 'no options'}"
        stages = dvc_stages(self.root / "dvc.yaml")
        unknown = [target for target in positionals(rest, value_options) if target not in stages]
        assert not unknown, f"dvc {' '.join(command)}: {', '.join(unknown)} is not a stage of dvc.yaml"
        values = set_params(rest)
        if values:
            self.check_set_params(values)
        return (f"dvc {' '.join(command)}: options in --help, targets are stages"
                + (", -S applied to a copy of the params, check-config passes" if values else ""))

    def check_set_params(self, values: list[str]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            shutil.copy2(self.root / "params.yaml", copy / "params.yaml")
            shutil.copytree(self.root / "params", copy / "params")
            apply_set_params(values, copy)
            for scale in ("tiny", "smoke", "paper"):
                run(["python", "-m", "pipeline", "check-config", "--params", str(copy / "params.yaml"),
                     "--scale", scale], self.root)

    def pipeline(self, args: list[str]) -> str:
        if not args or args[0] in ("-h", "--help"):
            run(["python", "-m", "pipeline", *args], self.root)
            return "python -m pipeline --help, run"
        step = args[0]
        if step in READ_ONLY_STEPS or (step == "dvc-yaml" and "--check" in args):
            run(["python", "-m", "pipeline", *args], self.root)
            return f"python -m pipeline {step}: read-only, run"
        options = options_of(args[1:])
        self.help(["python", "-m", "pipeline", step], options)
        return f"python -m pipeline {step} --help lists {options or 'no options'}"

    def bash(self, args: list[str]) -> str:
        script = self.root / args[0]
        assert script.is_file(), f"bash {args[0]}: no such script in the checkout"
        run(["bash", "-n", str(script)], self.root)
        cases = script_cases(script)
        if cases is not None:
            first = args[1] if len(args) > 1 else None
            assert first is None or first in cases, f"bash {args[0]} {first}: not one of its cases {sorted(cases)}"
            return f"bash -n, and {first or 'its default'} is one of its cases"
        return "bash -n"


def checkout_copy(dest: Path) -> Path:
    """The working tree as it stands (tracked and untracked files, not the ignored ones) with its .git."""
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT).stdout.split("\0")
    for name in filter(None, files):
        source, target = ROOT / name, dest / name
        if not (source.exists() or source.is_symlink()):
            continue   # deleted in the working tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    shutil.copytree(ROOT / ".git", dest / ".git", symlinks=True)
    return dest


def test_every_command_of_the_docs_is_checked():
    checker = Checker()
    commands = doc_commands()
    assert len(commands) >= 20, [str(c) for c in commands]   # the blocks were found
    unchecked, failures, report = [], [], []
    for command in commands:
        try:
            report.append(f"{command}  -> {checker.check(command.argv)}")
        except UncheckedCommand as error:
            unchecked.append(f"{command.where}: {error}")
        except AssertionError as error:
            failures.append(f"{command}\n{error}")
    failures += checker.run_dry_runs()
    print("\n".join(report))
    assert not unchecked, "commands this test cannot check:\n" + "\n".join(unchecked)
    assert not failures, "commands of the docs that fail:\n" + "\n\n".join(failures)


def test_the_checker_rejects_what_does_not_work():
    checker = Checker()
    for bad in (["python", "-m", "pipeline", "no-such-step"],
                ["python", "-m", "pipeline", "train", "--no-such-option", "1"],
                ["python", "-m", "pipeline", "describe", "no-such-system"],
                ["make", "no-such-target"],
                ["dvc", "repro", "table-no-such-paper-table1"],
                ["dvc", "push", "--no-such-option"],
                ["dvc", "exp", "run", "-S", "params/zeng2021.yaml:grids.z.systems.ran-all.options.ran_fixed=true"],
                ["snakemake", "--profile", "no-such-profile", "results/tiny/hao2019/table3.tsv"],
                ["bash", "benchmarks/workflow.sh", "no-such-mode"],
                ["bash", "no-such-script.sh"]):
        with pytest.raises(AssertionError):
            checker.check(bad)
    for unknown in (["frobnicate", "--all"], ["make", "run", "&&", "make", "test"], ["snakemake", "--unlock"]):
        with pytest.raises(UncheckedCommand):
            checker.check(unknown)
    checker.check(["snakemake", "--profile", "workflows/profiles/local", "results/no-such-paper/table9.tsv"])
    assert checker.run_dry_runs(), "a dry run of a target no rule makes must fail"


def test_commands_are_read_as_a_shell_would():
    text = "\n".join([
        "```bash",
        "make run    # a comment",
        "            # a comment alone",
        "",
        "snakemake --profile slurm results/t{1,2}.tsv \\",
        "          results/f.tsv   # continued",
        "dvc exp run -S 'params/a.yaml:x.y=1'",
        "```",
        "```",
        "not a shell block",
        "```",
        "```console",
        "$ pytest -q",
        "output line",
        "```"])
    assert [(c.where, c.argv) for c in commands_in(text, "doc")] == [
        ("doc:2", ("make", "run")),
        ("doc:5", ("snakemake", "--profile", "slurm", "results/t1.tsv", "results/t2.tsv", "results/f.tsv")),
        ("doc:7", ("dvc", "exp", "run", "-S", "params/a.yaml:x.y=1")),
        ("doc:13", ("pytest", "-q"))]


@pytest.mark.slow
def test_dvc_commands_of_the_docs_dry_run(tmp_path):
    """`dvc repro` and `dvc exp run` of the docs with --dry, in a copy of the checkout (they write .dvc/tmp, and
    `exp run` stashes and makes refs). The `exp run` commands without targets run as one (about a minute each)."""
    copy = checkout_copy(tmp_path / "repo")
    dvc_env = {**env(), "DVC_SITE_CACHE_DIR": str(tmp_path / "dvc-site-cache")}
    repros, exp_sets = [], []
    for command in doc_commands():
        argv = list(command.argv)
        if argv[:2] == ["dvc", "repro"]:
            dry = argv if "--dry" in argv else [*argv[:2], "--dry", *argv[2:]]
            if dry not in repros:
                repros.append(dry)
        elif argv[:3] == ["dvc", "exp", "run"]:
            rest = argv[3:]
            assert not positionals(rest, DVC_VALUE_OPTIONS[("exp", "run")]) \
                and set(options_of(rest)) <= {"-S", "--set-param"}, \
                f"{command}: teach this test to dry-run it"
            exp_sets += [value for value in set_params(rest) if value not in exp_sets]
    runs = repros + ([["dvc", "exp", "run", "--dry", *(arg for value in exp_sets for arg in ("-S", value))]]
                     if exp_sets else [])
    assert runs
    for argv in runs:
        proc = subprocess.run(argv, cwd=copy, env=dvc_env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{shlex.join(argv)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert "Running stage '" in proc.stdout, f"{shlex.join(argv)} planned nothing:\n{proc.stdout[-2000:]}"
