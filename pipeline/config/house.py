"""_House: collects the papers' definitions (names are global), then resolves references between them."""
from __future__ import annotations

from typing import Any

from pipeline.config.reader import (_check_model, _check_test, _corpus, _decoding, _model_spec, _Reader, _recipe,
                                    _value_source)
from pipeline.config.types import (PAPER_KEYS, SIGNIFICANCE_KEYS, SYSTEM_KEYS, Combination, Corpus, EnsembleSpec,
                                   Experiment, External, ModelPreset, RecipeSpec, Significance, TableSpec)
from pipeline.errors import PipelineError


class _House:
    """Collects the papers' definitions (names are global), then resolves references between them."""

    def __init__(self, scale: str, significance: dict, precision: str, smoke_gpus: int = 1):
        self.scale, self.significance, self.precision, self.smoke_gpus = scale, significance, precision, smoke_gpus
        self.corpora: dict[str, Corpus] = {}
        self.models: dict[str, ModelPreset] = {}
        self.recipes: dict[str, RecipeSpec] = {}
        self.experiments: dict[str, Experiment] = {}
        self.ensembles: dict[str, EnsembleSpec] = {}
        self.external: dict[str, External] = {}
        self.combinations: dict[str, Combination] = {}
        self.tables: dict[str, TableSpec] = {}
        self.where: dict[tuple[str, str], str] = {}  # (kind, name) -> "file: key", for duplicate errors
        self.raw_systems: list = []   # (reader, paper, key, name, spec, params_keys)
        self.raw_ensembles: list = []
        self.raw_external: list = []
        self.raw_combinations: list = []
        self.raw_tables: list = []

    def _claim(self, r: _Reader, kind: str, name: str, key: str) -> None:
        if (kind, name) in self.where:
            r.fail(key, f"the {kind} name '{name}' is already defined at {self.where[(kind, name)]}")
        self.where[(kind, name)] = f"{r.source}: {key}"

    def read(self, paper: str, path: str, raw: Any) -> None:
        r = _Reader(path, self.scale)
        raw = r.mapping(raw if raw is not None else {}, "(top level)")
        r.keys(raw, "", PAPER_KEYS)
        for name, spec in r.mapping(raw.get("corpora") or {}, "corpora").items():
            self._claim(r, "corpus", name, f"corpora.{name}")
            self.corpora[name] = _corpus(r, paper, name, spec)
        for name, spec in r.mapping(raw.get("models") or {}, "models").items():
            self._claim(r, "model preset", name, f"models.{name}")
            self.models[name] = ModelPreset(name, paper, _model_spec(r, f"models.{name}", spec))
        for name, spec in r.mapping(raw.get("recipes") or {}, "recipes").items():
            self._claim(r, "recipe", name, f"recipes.{name}")
            self.recipes[name] = _recipe(r, paper, name, spec, self.precision, self.smoke_gpus)
        for name, spec in r.mapping(raw.get("experiments") or {}, "experiments").items():
            self.raw_systems.append((r, paper, f"experiments.{name}", name, r.mapping(spec, f"experiments.{name}"),
                                     ((path, f"experiments.{name}"),)))
        grids = {}
        for grid, spec in r.mapping(raw.get("grids") or {}, "grids").items():
            grids[grid] = self._grid(r, paper, path, grid, spec)
        for name, spec in r.mapping(raw.get("ensembles") or {}, "ensembles").items():
            self.raw_ensembles.append((r, paper, name, spec, ((path, f"ensembles.{name}"),)))
        for group_key, todo in (("external", self.raw_external), ("combinations", self.raw_combinations)):
            for name, spec in r.mapping(raw.get(group_key) or {}, group_key).items():
                todo.append((r, paper, name, spec, ((path, f"{group_key}.{name}"),)))
        for group in ("tables", "figures"):
            for name, spec in r.mapping(raw.get(group) or {}, group).items():
                self.raw_tables.append((r, paper, group, name, spec, grids, ((path, f"{group}.{name}"),)))

    def _grid(self, r: _Reader, paper: str, path: str, grid: str, spec: Any) -> dict:
        """Expand grids.<grid>: every direction x system is the system <grid>-<direction>-<system>."""
        key = f"grids.{grid}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("directions", "systems"), required=("directions", "systems"))
        directions = r.mapping(spec["directions"], f"{key}.directions")
        systems = r.mapping(spec["systems"], f"{key}.systems")
        cells = {}
        for system, by_system in systems.items():
            by_system = r.mapping(by_system, f"{key}.systems.{system}")
            for direction, by_direction in directions.items():
                by_direction = r.mapping(by_direction, f"{key}.directions.{direction}")
                merged = {**by_direction, **by_system}
                for part in ("options", "decoding"):
                    merged[part] = {**(by_direction.get(part) or {}), **(by_system.get(part) or {})}
                name = f"{grid}-{direction}-{system}"
                self.raw_systems.append((r, paper, f"{key} ({direction} x {system})", name, merged,
                                         ((path, f"{key}.directions.{direction}"), (path, f"{key}.systems.{system}"))))
                cells.setdefault(system, {})[direction] = name
        return cells

    def resolve(self) -> None:
        for r, paper, key, name, spec, keys in self.raw_systems:
            self._claim(r, "system", name, key)
            self.experiments[name] = self._experiment(r, paper, key, name, spec, keys)
        for name, exp in self.experiments.items():
            if exp.init is not None:
                r, key = self._origin(name)
                r.name_ref(exp.init, f"{key}.init", self.experiments, "experiment")
                if exp.init == name:
                    r.fail(f"{key}.init", "a system cannot start from itself")
        for r, paper, name, spec, keys in self.raw_ensembles:
            self._claim(r, "system", name, f"ensembles.{name}")
            self.ensembles[name] = self._ensemble(r, paper, name, spec, keys)
        for r, paper, name, spec, keys in self.raw_external:
            self._claim(r, "system", name, f"external.{name}")
            self.external[name] = self._external(r, paper, name, spec, keys)
        for r, paper, name, spec, keys in self.raw_combinations:
            self._claim(r, "system", name, f"combinations.{name}")
        self._combinations()
        for r, paper, group, name, spec, grids, keys in self.raw_tables:
            self._claim(r, "table or figure", name, f"{group}.{name}")
            self.tables[name] = self._table(r, paper, group, name, spec, grids, keys)

    def _origin(self, system: str) -> tuple[_Reader, str]:
        for r, _, key, name, _, _ in self.raw_systems:
            if name == system:
                return r, key
        raise KeyError(system)

    def _experiment(self, r, paper, key, name, spec, keys) -> Experiment:
        r.keys(spec, key, SYSTEM_KEYS, required=("corpus", "model", "recipe"))
        model = r.name_ref(spec["model"], f"{key}.model", self.models, "model preset")
        recipe = r.name_ref(spec["recipe"], f"{key}.recipe", self.recipes, "recipe")
        options = r.resolved(r.mapping(spec.get("options") or {}, f"{key}.options"), f"{key}.options")
        _check_model(r, f"{key}.options", {**self.models[model].spec, **options})
        decoding = _decoding(r, spec.get("decoding") or {}, f"{key}.decoding")
        init = r.value(spec["init"], f"{key}.init", str) if spec.get("init") is not None else None
        seed = r.value(spec["seed"], f"{key}.seed", int) if spec.get("seed") is not None else None
        tracked = keys + ((self._file(model, "model preset"), f"models.{model}"),
                          (self._file(recipe, "recipe"), f"recipes.{recipe}"))
        return Experiment(name=name, paper=paper, model=model, recipe=recipe, init=init, options=options,
                          corpus=r.name_ref(spec["corpus"], f"{key}.corpus", self.corpora, "corpus"),
                          decoding=decoding, params_keys=tracked, seed=seed)

    def _file(self, name: str, kind: str) -> str:
        return self.where[(kind, name)].split(": ", 1)[0]

    def _ensemble(self, r, paper, name, spec, keys) -> EnsembleSpec:
        key = f"ensembles.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("members", "decoding"), required=("members",))
        members = spec["members"]
        if not isinstance(members, list) or len(members) < 2:
            r.fail(f"{key}.members", f"expected a list of at least two experiments, got {members!r}")
        members = tuple(r.name_ref(m, f"{key}.members[{i}]", self.experiments, "experiment")
                        for i, m in enumerate(members))
        corpora = {self.experiments[m].corpus for m in members}
        if len(corpora) != 1:
            r.fail(f"{key}.members", f"expected members trained on one corpus, got {', '.join(sorted(corpora))}")
        decoding = _decoding(r, spec.get("decoding") or {}, f"{key}.decoding")
        return EnsembleSpec(name=name, paper=paper, members=members, corpus=corpora.pop(), decoding=decoding,
                        params_keys=keys)

    def _external(self, r, paper, name, spec, keys) -> External:
        key = f"external.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("corpus", "manual", "description"), required=("corpus", "manual", "description"))
        return External(name=name, paper=paper, corpus=r.name_ref(spec["corpus"], f"{key}.corpus", self.corpora, "corpus"),
                        manual=r.value(spec["manual"], f"{key}.manual", str),
                        description=r.value(spec["description"], f"{key}.description", str), params_keys=keys)

    def _combinations(self) -> None:
        """Resolve combinations in dependency order (one may read another); a cycle is an error naming it."""
        from pipeline.derived_systems import check_combination  # torch-free
        raw = {name: (r, paper, spec, keys) for r, paper, name, spec, keys in self.raw_combinations}
        known = {**{n: "experiment" for n in self.experiments}, **{n: "ensemble" for n in self.ensembles},
                 **{n: "external" for n in self.external}, **{n: "combination" for n in raw}}
        parsed, state = {}, {}

        def resolve(name: str, chain: tuple) -> None:
            if state.get(name) == "done":
                return
            r, paper, spec, keys = raw[name]
            key = f"combinations.{name}"
            if state.get(name) == "open":
                r.fail(key, f"reads itself through {' -> '.join(chain + (name,))}; expected no cycle")
            state[name] = "open"
            try:
                method, inputs, settings = check_combination(r.resolved(r.mapping(spec, key), key), known)
            except PipelineError as err:
                r.fail(key, str(err))
            for system in [s for v in inputs.values() for s in (v if isinstance(v, list) else [v])]:
                if system in raw:
                    resolve(system, chain + (name,))
            parsed[name] = Combination(name=name, paper=paper, method=method, inputs=inputs, settings=settings,
                                       corpus="", params_keys=keys)
            corpora = {self._corpus_of(s) for s in parsed[name].systems()}
            if len(corpora) != 1:
                r.fail(key, f"expected systems of one corpus, got {', '.join(sorted(corpora))}")
            parsed[name] = Combination(**{**parsed[name].__dict__, "corpus": corpora.pop()})
            self.combinations[name] = parsed[name]
            state[name] = "done"

        for name in raw:
            resolve(name, ())

    def _table(self, r, paper, group, name, spec, grids, keys) -> TableSpec:
        key = f"{group}.{name}"
        spec = r.mapping(spec, key)
        r.keys(spec, key, ("layout", "cells", "grid", "test_sets", "values", "significance", "analyses"))
        output = name[len(paper) + 1:]
        if not name.startswith(f"{paper}-") or not output.replace("_", "").isalnum():
            r.fail(key, f"expected a name '{paper}-<file stem>' such as {paper}-table3 (it writes "
                        f"results/{self.scale}/{paper}/<file stem>.tsv), got {name!r}")
        systems = {**self.experiments, **self.ensembles, **self.external, **self.combinations}
        if ("cells" in spec) == ("grid" in spec):
            r.fail(key, "expected exactly one of 'cells' (row -> column -> system) and 'grid' (a grid's name)")
        if "grid" in spec:
            grid = r.name_ref(spec["grid"], f"{key}.grid", grids, "grid of this paper")
            cells = grids[grid]
        else:
            cells = {}
            for row, by_col in r.mapping(spec["cells"], f"{key}.cells").items():
                by_col = r.mapping(by_col, f"{key}.cells.{row}")
                cells[str(row)] = {str(col): r.name_ref(system, f"{key}.cells.{row}.{col}", systems, "system")
                                   for col, system in by_col.items()}
        columns = sorted({col for row in cells.values() for col in row})
        test_sets = self._test_sets(r, f"{key}.test_sets", spec.get("test_sets", "test"), cells, columns)
        values = {k: _value_source(r, f"{key}.values.{k}", v)
                  for k, v in r.mapping(spec.get("values") or {}, f"{key}.values").items()}
        significance = None
        if "significance" in spec:
            significance = self._significance(r, f"{key}.significance", spec["significance"], cells, values)
        analyses = {}
        for kind, settings in r.mapping(spec.get("analyses") or {}, f"{key}.analyses").items():
            from pipeline.analyses import check_settings
            settings = r.resolved(r.mapping(settings or {}, f"{key}.analyses.{kind}"), f"{key}.analyses.{kind}")
            try:
                analyses[kind] = check_settings(kind, settings)
            except PipelineError as err:
                r.fail(f"{key}.analyses.{kind}", str(err))
            if "corpus" in analyses[kind]:
                r.name_ref(analyses[kind]["corpus"], f"{key}.analyses.{kind}.corpus", self.corpora, "corpus")
        if not values and not analyses:
            r.fail(key, "expected 'values' (what each cell shows) or 'analyses', or both")
        layout = r.value(spec.get("layout", name), f"{key}.layout", str)
        return TableSpec(name=name, paper=paper, output=output, scale=self.scale, cells=cells, test_sets=test_sets,
                     values=values, significance=significance, analyses=analyses, figure=group == "figures",
                     layout=layout, params_keys=keys)

    def _test_sets(self, r, key, raw, cells, columns) -> dict:
        """column -> test set: one name for every column or a mapping; each must be a test set of the corpus."""
        raw, key = r.scaled(raw, key)
        by_col = {col: raw for col in columns} if isinstance(raw, str) else r.mapping(raw, key)
        out = {}
        for col in columns:
            if col not in by_col:
                r.fail(key, f"missing the test set of column '{col}'")
            corpora = {self._corpus_of(s) for row in cells.values() for c, s in row.items() if c == col}
            for corpus in corpora:
                if by_col[col] not in self.corpora[corpus].test_sets:
                    r.fail(f"{key}.{col}" if isinstance(raw, dict) else key,
                           f"unknown test set '{by_col[col]}' of corpus {corpus}; expected one of "
                           f"{', '.join(self.corpora[corpus].test_sets)}")
            out[col] = by_col[col]
        return out

    def _corpus_of(self, system: str) -> str:
        for kind in (self.experiments, self.ensembles, self.external, self.combinations):
            if system in kind:
                return kind[system].corpus
        raise KeyError(system)

    def _significance(self, r, key, raw, cells, values) -> Significance:
        raw = r.mapping(raw, key)
        r.keys(raw, key, ("value", "baselines") + tuple(SIGNIFICANCE_KEYS), required=("value", "baselines"))
        value = r.name_ref(raw["value"], f"{key}.value", values, "value of this table")
        if values[value].startswith("train."):
            r.fail(f"{key}.value", f"expected a value scored by a metric, got '{value}' ({values[value]})")
        baselines = {}
        for row, base in r.mapping(raw["baselines"], f"{key}.baselines").items():
            r.name_ref(row, f"{key}.baselines.{row}", cells, "table row")
            baselines[row] = r.name_ref(base, f"{key}.baselines.{row}", cells, "table row")
            missing = set(cells[row]) - set(cells[baselines[row]])
            if missing:
                r.fail(f"{key}.baselines.{row}", f"the baseline row '{base}' has no system in column(s) "
                                                 f"{', '.join(sorted(missing))}")
        settings = {**self.significance, **{k: r.value(raw[k], f"{key}.{k}", t)
                                            for k, t in SIGNIFICANCE_KEYS.items() if k in raw}}
        _check_test(r, settings["test"], f"{key}.test")
        return Significance(value=value, baselines=baselines, **settings)


