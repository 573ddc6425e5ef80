"""The decoder's attention over the source read by a forward hook, teacher-forced: each row equals the weights of the
step that predicted that target token in incremental decoding; padding and batching change nothing; and the alignment
analysis turns subword matrices into word links scored against gold (zhang2018 Table 4, Figure 4)."""
import numpy as np
import pytest
import torch

from pipeline.data.batching import encode_source, pad
from pipeline.data.vocab import BOS
from pipeline.errors import PipelineError
from pipeline.papers.zhang2018.alignment import alignment_analysis, read_gold
from pipeline.papers.zhang2018.source_attention import source_attention
from pipeline.models import build_model

torch.set_num_threads(1)
SPECS = {"rnnsearch": {"encoder": "birnn", "decoder": "rnnsearch"},
         "rnnsearch*": {"encoder": "birnn", "decoder": "cgru", "readout": "maxout"},
         "rnmt": {"encoder": "rnmt", "decoder": "cgru", "readout": "maxout", "rn_widths": [3], "rn_channels": [4],
                  "rn_hidden": 5}}
SRC = [[5, 6, 7, 8], [9, 5]]
TGT = [[6, 7, 8], [5, 9, 6, 7, 8]]


def model(name):
    torch.manual_seed(0)
    return build_model({**SPECS[name], "embed": 8, "hidden": 8, "dropout": 0.0}, 12, 12).eval()


def stepwise(m, src, tgt) -> np.ndarray:
    """[len(tgt), len(src)] weights of incremental decoding fed the reference prefix, one sentence."""
    rows = []
    handle = m.decoder.source_attention().register_forward_hook(lambda mod, args, out: rows.append(out[1]))
    with torch.no_grad():
        memory, state = m.encode(pad([encode_source(src)])), None
        for t in range(len(tgt)):
            _, state = m.decode_step(torch.tensor([[BOS] + tgt[:t]]), memory, state)
    handle.remove()
    return torch.cat(rows, 0)[:, :len(src)].double().numpy()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_rows_equal_incremental_steps_and_batching_changes_nothing(name):
    m = model(name)
    together = source_attention(m, SRC, TGT, batch_size=2)
    for k in range(2):
        alone = source_attention(m, [SRC[k]], [TGT[k]])[0]
        assert together[k].shape == (len(TGT[k]), len(SRC[k]))
        np.testing.assert_allclose(together[k], alone, atol=1e-6)
        np.testing.assert_allclose(together[k], stepwise(m, SRC[k], TGT[k]), atol=1e-6)
        # every row is a distribution over the source tokens and EOS (the EOS column is cut off)
        assert (together[k] >= 0).all() and (together[k].sum(1) <= 1 + 1e-9).all()
    assert m.training is False


def test_a_decoder_without_source_attention_is_named():
    m = build_model({"encoder": "none", "decoder": "lstm", "embed": 4, "hidden": 4}, 12, 12)
    with pytest.raises(PipelineError, match="offers no source attention"):
        source_attention(m, SRC, TGT)
    with pytest.raises(PipelineError, match="2 sources and 1 targets"):
        source_attention(model("rnnsearch"), SRC, TGT[:1])


def test_alignment_analysis_by_hand():
    # sentence 1: source "a@@ b c" (words ab, c), target "x y" -> x: c (0.7), y: ab (0.6)
    # sentence 2: source "d e", target "z" -> z: e
    matrices = [np.array([[0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]), np.array([[0.4, 0.6]])]
    gold = read_gold(["1-0 0-1", "0?0"])  # S = {1-0, 0-1}; P also holds 0?0 of sentence 2
    result = alignment_analysis(matrices, ["a@@ b c", "d e"], ["x y", "z"], gold, shown=[1])
    # A = {1-0, 0-1} + {1-0}: |A| = 3, |S| = 2, A&S = 2, A&P = 2 -> AER = 1 - 4/5
    assert result["aer"] == pytest.approx(0.2)
    assert result["precision"] == pytest.approx(2 / 3) and result["recall"] == 1.0
    shown = result["shown"][0]
    assert shown["source"] == ["ab", "c"] and shown["target"] == ["x", "y"]
    assert shown["attention"] == [[0.3, 0.7], [0.6, 0.4]]
    assert shown["predicted"] == [[0, 1], [1, 0]] and shown["sure"] == [[0, 1], [1, 0]]
    with pytest.raises(PipelineError, match=r"gold.txt, line 2: link 2-0 outside a pair of 2 source and 1 target"):
        alignment_analysis(matrices, ["a@@ b c", "d e"], ["x y", "z"], read_gold(["1-0", "2-0"]), where="gold.txt")
    with pytest.raises(PipelineError, match="shown sentence 3; expected 1..2"):
        alignment_analysis(matrices, ["a@@ b c", "d e"], ["x y", "z"], gold, shown=[3])
