"""Recipe: validation errors name the key; pipeline.recipe imports without torch."""
import json
import subprocess
import sys

import pytest
from workspace import ROOT

from pipeline.errors import PipelineError
from pipeline.recipe import Recipe


def test_recipe_validation_names_the_key():
    base = {"lr": 1e-3, "warmup": 10, "max_steps": 20, "batch_size": 100}
    recipe = Recipe.from_dict(base)
    assert recipe.adam_betas == (0.9, 0.98) and recipe.optimizer == "adam" and recipe.keep == "last"
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    assert Recipe.from_dict({**base, "adam_betas": [0.9, 0.997]}).adam_betas == (0.9, 0.997)
    cases = [
        ({**base, "lr_rate": 1.0}, r"recipe\.lr_rate: unknown recipe key"),
        ({**base, "batch_tokens": 100}, r"recipe\.batch_tokens: unknown recipe key"),   # the old key
        ({k: v for k, v in base.items() if k != "batch_size"}, r"recipe\.batch_size: missing"),
        ({**base, "lr": "1e-3"}, r"recipe\.lr: got '1e-3' \(str\); expected a number > 0 \(write .*1\.0e-3"),
        ({**base, "lr": 0.0}, r"recipe\.lr: invalid value 0\.0; expected a number > 0"),
        ({**base, "schedule": "cosine"}, r"recipe\.schedule: invalid value 'cosine'; expected one of inverse_sqrt"),
        ({**base, "optimizer": "rmsprop"}, r"recipe\.optimizer: .*expected one of adam, adadelta, sgd"),
        ({**base, "batch_unit": "words"}, r"recipe\.batch_unit"),
        ({**base, "loss_norm": "batch"}, r"recipe\.loss_norm"),
        ({**base, "keep": "best"}, r"recipe\.keep"),
        ({**base, "label_smoothing": 1.5}, r"recipe\.label_smoothing"),
        ({**base, "max_steps": True}, r"recipe\.max_steps: got True \(bool\)"),
        ({**base, "clip_norm": False}, r"recipe\.clip_norm: got False \(bool\)"),
        ({**base, "batch_size": 10.0}, r"recipe\.batch_size: got 10\.0 \(float\)"),
        ({**base, "adam_betas": [0.9]}, r"recipe\.adam_betas"),
        ({**base, "max_epochs": 3}, r"recipe\.max_steps: .*exactly one of them > 0"),
        ({**base, "max_steps": 0}, r"recipe\.max_steps: .*exactly one of them > 0"),
        ({**base, "keep": "average"}, r"recipe\.average_last: got 0; expected an integer >= 2"),
        ({**base, "schedule": "halve_last_epochs"}, r"recipe\.max_epochs: .*halve_last_epochs counts epochs"),
        ({**base, "max_steps": 0, "max_epochs": 6, "schedule": "halve_last_epochs", "halve_epochs": 7},
         r"recipe\.halve_epochs: got 7"),
        ({**base, "plateau_patience": 0}, r"recipe\.plateau_patience"),
    ]
    for values, message in cases:
        with pytest.raises(PipelineError, match=message):
            Recipe.from_dict(values)
    with pytest.raises(PipelineError, match=r"recipes\.big\.lr: got '1e-3'"):
        Recipe.from_dict({**base, "lr": "1e-3"}, where="recipes.big")
    with pytest.raises(PipelineError, match=r"recipe\.sgd_momentum: invalid value 1\.5"):
        Recipe(lr=1.0, batch_size=8, max_steps=1, sgd_momentum=1.5)


def test_recipe_module_imports_without_torch():
    code = "import sys, pipeline.recipe; bad = {'torch', 'numpy'} & set(sys.modules); assert not bad, bad"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr

