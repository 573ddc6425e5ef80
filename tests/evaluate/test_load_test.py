"""load_test (pipeline/evaluate/test_data.py), how the teacher-forced analyses read a model and test pairs: ids by
the given vocabularies, and a vocabulary of another size than the model's refused naming both files."""
import pytest

from model_variants import V_SRC, V_TGT, save_test_data, save_vocab
from pipeline.errors import PipelineError
from pipeline.evaluate.test_data import load_test


@pytest.fixture
def inputs(tmp_path):
    return save_test_data(tmp_path)


def test_the_first_pairs_as_ids_of_the_vocabularies(inputs):
    model, info, src_ids, tgt_ids = load_test(inputs, 2)
    assert info["src_vocab_size"] == V_SRC and src_ids == [[4, 5, 6], [7, 3]] and tgt_ids == [[9], [10, 11]]
    assert load_test(inputs, 3, with_target=False)[2:] == ([[4, 5, 6], [7, 3], [8]], None)


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_a_vocabulary_of_another_size_than_the_models_is_refused(inputs, tmp_path, side):
    size = {"src": V_SRC, "tgt": V_TGT}[side] + 2
    inputs[f"{side}_vocab"] = str(save_vocab(tmp_path / f"other.{side}", size))
    with pytest.raises(PipelineError, match=f"other.{side}: {side} vocabulary of {size} tokens, but .*model.pt was "
                                            f"trained with {size - 2}"):
        load_test(inputs, 2)
