"""N-best reranking by a model's teacher-forced log-probability (pipeline/rerank.py): the forced score of a beam
search hypothesis is the search's own score, batching changes nothing, an ensemble of a model with itself scores as
the model, and the choice follows the (length-normalised) score."""
import math

import pytest
import torch

from pipeline.data.batching import encode_source
from pipeline.ensemble import Ensemble
from pipeline.errors import PipelineError
from pipeline.models.registry import build_model
from pipeline.rerank import prepare_candidates, rerank_choice, sentence_log_probs
from pipeline.beam_search import beam_search_nbest

V_SRC, V_TGT = 11, 13
SHU = {"encoder": "birnn", "cell": "lstm", "decoder": "lstm_attention", "embed": 6, "hidden": 5, "attention_dim": 4,
       "layers": 2, "residual": True, "output_bias": True}
SOURCES = [[4, 5, 6], [7, 8], [9, 10, 4, 5, 6], [5]]


def model(seed=1):
    torch.manual_seed(seed)
    return build_model(SHU, V_SRC, V_TGT).eval()


def test_the_forced_score_of_each_nbest_hypothesis_is_the_search_score():
    m = model()
    src = torch.nn.utils.rnn.pad_sequence([torch.tensor(encode_source(s)) for s in SOURCES], batch_first=True)
    found = beam_search_nbest(m, src, nbest=3, beam=3, length="none", max_len_b=6)
    pairs = [(SOURCES[i], hyp) for i, hyps in enumerate(found) for _, hyp in hyps]
    scores = sentence_log_probs(m, [s for s, _ in pairs], [h for _, h in pairs], batch_size=4)
    searched = [score for hyps in found for score, _ in hyps]
    assert len(scores) == len(searched) == 12
    for (total, tokens), (_, hyp), expected in zip(scores, pairs, searched):
        assert tokens == len(hyp) + 1  # the words and EOS
        assert total == pytest.approx(expected, abs=1e-4)


def test_batching_and_order_do_not_change_the_scores():
    m = model()
    targets = [[4, 5], [6, 7, 8, 9], [10], [4, 4, 4, 4, 4, 4]]
    together = sentence_log_probs(m, SOURCES, targets, batch_size=3)
    alone = [sentence_log_probs(m, [s], [t], batch_size=1)[0] for s, t in zip(SOURCES, targets)]
    assert [n for _, n in together] == [n for _, n in alone] == [3, 5, 2, 7]
    assert [t for t, _ in together] == pytest.approx([t for t, _ in alone], abs=1e-5)
    assert all(t < 0 for t, _ in together)


def test_an_ensemble_of_a_model_with_itself_scores_as_the_model():
    m = model()
    targets = [[4, 5], [6, 7, 8, 9], [10], [4, 4]]
    ensemble, single = sentence_log_probs(Ensemble([m, m]), SOURCES, targets), sentence_log_probs(m, SOURCES, targets)
    assert [n for _, n in ensemble] == [n for _, n in single]
    assert [t for t, _ in ensemble] == pytest.approx([t for t, _ in single], abs=1e-5)


def test_the_choice_is_the_best_per_token_or_summed_score_ties_to_the_first():
    scores = [(-6.0, 3), (-7.0, 5), (-4.0, 1)]          # per token: -2.0, -1.4, -4.0
    assert rerank_choice(scores, "normalize") == 1 and rerank_choice(scores, "none") == 2
    assert rerank_choice([(-2.0, 2), (-1.0, 1), (-2.0, 2)], "normalize") == 0
    assert rerank_choice([(-math.inf, 3), (-9.0, 3)]) == 1
    with pytest.raises(PipelineError, match="without candidates"):
        rerank_choice([])
    with pytest.raises(PipelineError, match="normalize or none"):
        rerank_choice(scores, "penalty")


def test_candidates_are_prepared_as_the_corpus_target_side():
    assert prepare_candidates(["日本 語。"], "ja") == ["日 本 語 。"]  # Japanese in characters, spaces ignored
    assert prepare_candidates(["Hello, world!"], "en") == ["Hello , world !"]
    assert prepare_candidates(["a b"], "xx", pretokenized=True) == ["a b"]


def test_a_source_per_candidate_is_required():
    with pytest.raises(PipelineError, match="one source per candidate"):
        sentence_log_probs(model(), SOURCES, [[4]])


def test_the_rerank_command_refuses_a_vocabulary_that_does_not_fit_a_member(tmp_path, capsys):
    """python -m pipeline rerank: each member of the ensemble is checked against both vocabularies; a misfit is one
    line `error: ...` naming the vocabulary, the model and both sizes, exit 2."""
    from model_variants import save_model, save_vocab
    from pipeline.cli import main
    good = save_model(tmp_path / "good.pt", V_SRC, V_TGT, name="shu-baseline")
    narrow = save_model(tmp_path / "narrow.pt", V_SRC - 3, V_TGT, name="shu-baseline")
    (tmp_path / "src.txt").write_text("w4 w5 w6\nw7\n")
    (tmp_path / "nbest").write_text("0 ||| w4 w5 ||| -1.0\n0 ||| w6 ||| -2.0\n1 ||| w7 ||| -1.0\n")

    def rerank(*models, src_size=V_SRC):
        argv = ["rerank", "--nbest", str(tmp_path / "nbest"), "--src", str(tmp_path / "src.txt"),
                "--src-vocab", str(save_vocab(tmp_path / f"vocab{src_size}.src", src_size)),
                "--tgt-vocab", str(save_vocab(tmp_path / "vocab.tgt", V_TGT)), "--lang", "xx", "--pretokenized",
                "--settings", '{"n": 2, "length": "normalize"}', "--output", str(tmp_path / "out.txt")]
        return main(argv + [arg for m in models for arg in ("--model", str(m))]), capsys.readouterr().err

    assert rerank(good)[0] == 0 and len((tmp_path / "out.txt").read_text().splitlines()) == 2
    for models, src_size, trained in (((good, narrow), V_SRC, V_SRC - 3), ((good,), V_SRC + 7, V_SRC)):
        code, err = rerank(*models, src_size=src_size)
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: {tmp_path / f'vocab{src_size}.src'}: src vocabulary of {src_size} tokens, "
                              f"but {models[-1]} was trained with {trained}"), err
