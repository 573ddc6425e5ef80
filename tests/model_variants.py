"""What the model tests share: the small variants of every model kind (VARIANTS: Transformer, hao2019's recurrence
models and related approaches, zeng2021's patterns, the RNN encoder-decoders of werlen2018, zhang2018 and shu2016), a
seeded small model and a padded batch of them, padded sources to search on, a model without incremental state that a
cached search must equal (Recompute), a copy-task training loop, the Transformer's parameter formula, and a small
model's file (save_model), damaged (damage), and a vocabulary file of any size (save_vocab)."""
import torch
import torch.nn.functional as F

from pipeline.data.batch_plan import token_batches
from pipeline.data.batching import make_batch
from pipeline.data.vocab import EOS, PAD
from pipeline.errors import PipelineError
from pipeline.models import build_model, validate_model
from pipeline.models.seq2seq import Seq2Seq

torch.set_num_threads(1)

T = {"encoder": "transformer", "decoder": "transformer"}
R = {"encoder": "recurrence", "decoder": "recurrence"}
MC = {"encoder": "multicolumn", "decoder": "transformer"}
RNN = {"encoder": "birnn", "decoder": "cgru"}
RNMT = {"encoder": "rnmt", "decoder": "cgru", "readout": "maxout"}
SHU = {"encoder": "birnn", "decoder": "lstm_attention", "cell": "lstm"}
SMALL = dict(d_model=16, ffn_dim=24, heads=2, enc_layers=2, dec_layers=2, dropout=0.1, attention_dropout=0.1)
SMALL_RNN = dict(embed=12, hidden=10, dropout=0.1)
VARIANTS = {
    "transformer": dict(T),  # three untied tables (the default)
    "transformer-shared": {**T, "share_embeddings": True},
    "transformer-tied": {**T, "tie_output": True},
    "biarn-stack-top": dict(R),
    "biarn-gated-top": {**R, "integration": "gated"},
    "biarn2-stack-all": {**R, "rec_layers": 2, "integrate_into": "all", "rec_steps": 3},
    "biarnJ2-gated-all": {**R, "rec_steps": 0, "rec_layers": 2, "integration": "gated", "integrate_into": "all"},
    "birnn-stack-top": {**R, "rec_type": "birnn"},
    "birnn2-gated-all": {**R, "rec_type": "birnn", "rec_layers": 2, "integration": "gated", "integrate_into": "all"},
    # hao2019 Table 4's related approaches (tests/papers/hao2019/test_related_models.py checks what defines them)
    "relpos": {**T, "rel_pos_k": 4},
    "disan": {**T, "disan": True},
    "relpos-disan": {**T, "rel_pos_k": 4, "disan": True},
    "multicolumn": {**MC, "rnn_layers": 2},
    "biarn-relpos": {**R, "rel_pos_k": 4, "rec_steps": 3},
    # zeng2021 (tests/papers/zeng2021/test_ran.py checks what defines them)
    "ran-e": {**T, "enc_self_attn": "ran", "ran_max_len": 16, "ran_attention_dropout": 0.1},
    "ran-d": {**T, "dec_self_attn": "ran", "ran_max_len": 16},
    "ran-all": {**T, "enc_self_attn": "ran", "dec_self_attn": "ran", "ran_max_len": 16},
    "hcsa": {**T, "enc_self_attn": "hcsa", "dec_self_attn": "hcsa"},
    "synr": {**T, "enc_self_attn": "synr", "dec_self_attn": "synr", "ran_max_len": 16},
    # the RNN encoder-decoders: dl4mt and werlen2018's decoders (their equations:
    # tests/papers/werlen2018/test_werlen2018_models.py)
    "dl4mt": dict(RNN),
    "dl4mt-lstm-encoder": {**RNN, "cell": "lstm"},
    "mean-residual": {**RNN, "summary": "mean"},
    "attentive-residual": {**RNN, "summary": "attention"},
    "attentive-residual-scope": {**RNN, "summary": "attention", "summary_score": "content_scope"},
    "memory-rnn": {**RNN, "state_attention": "memory"},
    "self-attentive-rnn": {**RNN, "state_attention": "self", "attention_dim": 7},
    # zhang2018's RNNsearch, RNNsearch* (cgru, maxout readout) and RNMT (their equations:
    # tests/papers/zhang2018/test_zhang2018_models.py)
    "rnnsearch": {**RNN, "decoder": "rnnsearch"},
    "rnnsearch-star": {**RNN, "readout": "maxout"},
    "rnmt": {**RNMT, "hidden": 12, "rn_widths": [1, 3], "rn_channels": [4, 6], "rn_hidden": 8},
    "rnmt-rnnsearch-tanh": {**RNMT, "decoder": "rnnsearch", "readout": "tanh", "hidden": 12, "rn_widths": [3],
                            "rn_channels": [5], "rn_hidden": 6, "rn_gp_layers": 1, "rn_mlp_layers": 1},
    # shu2016's four decoders (tests/papers/shu2016/test_shu2016_models.py: eq. 7-8, 11-13 by hand); an LSTM encoder as
    # the paper's
    "shu-baseline": {**SHU, "attention_dim": 7},
    "shu-enlarged": {**SHU, "attention_dim": 7, "dec_hidden": 14},
    "shu-stacked": {**SHU, "attention_dim": 7, "layers": 2},
    "shu-residual": {**SHU, "attention_dim": 7, "layers": 2, "residual": True, "output_bias": True},
}
V_SRC, V_TGT = 11, 13
SRC_LENS, TGT_LENS = [5, 3, 7], [4, 6, 2]


def spec_of(name, **override):
    """The flat spec of a small variant."""
    rnn = VARIANTS[name]["encoder"] in ("birnn", "rnmt")
    return {**(SMALL_RNN if rnn else SMALL), **VARIANTS[name], **override}


def make(name, seed=0, **override):
    """A seeded small model of a variant, in eval mode."""
    torch.manual_seed(seed)
    v_src = V_TGT if VARIANTS[name].get("share_embeddings") else V_SRC
    return build_model(spec_of(name, **override), v_src, V_TGT).eval()


def save_model(path, v_src=V_SRC, v_tgt=V_TGT, name="transformer", seed=0):
    """A seeded small model of a variant, written to `path` as the trainer writes model.pt; returns `path`."""
    from pipeline.checkpoint import model_record, save_atomic
    torch.manual_seed(seed)
    spec = spec_of(name)
    meta = {"model": spec, "src_vocab_size": v_src, "tgt_vocab_size": v_tgt}
    save_atomic(model_record(build_model(spec, v_src, v_tgt).eval(), meta, 1), path)
    return path


def damage(path, size=4096):
    """Flip `size` bytes in the middle of the file at `path`; returns `path`."""
    data = path.read_bytes()
    middle = len(data) // 2 - size // 2
    path.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + size]) + data[middle + size:])
    return path


def save_vocab(path, size):
    """A vocabulary file of `size` tokens: the specials, then w4, w5, ...; returns `path`."""
    from pipeline.data.vocab import SPECIALS, Vocab
    Vocab(list(SPECIALS) + [f"w{i}" for i in range(len(SPECIALS), size)]).save(path)
    return path


def save_test_data(path) -> dict:
    """A model, its vocabularies and a three-pair test set (w40 is unknown) under `path`: an analysis's inputs."""
    (path / "test.src").write_text("w4 w5 w6\nw7 w40\nw8\n")
    (path / "test.tgt").write_text("w9\nw10 w11\nw12 w4\n")
    return {"model": str(save_model(path / "model.pt")), "src": str(path / "test.src"),
            "tgt": str(path / "test.tgt"), "src_vocab": str(save_vocab(path / "vocab.src", V_SRC)),
            "tgt_vocab": str(save_vocab(path / "vocab.tgt", V_TGT))}


def batch(v_src=V_TGT, seed=1):
    """Right-padded src [3,7] (EOS last) and tgt_in [3,6] (BOS first) of different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(SRC_LENS), max(SRC_LENS), dtype=torch.long)
    tgt = torch.zeros(len(TGT_LENS), max(TGT_LENS), dtype=torch.long)
    for i, (s, t) in enumerate(zip(SRC_LENS, TGT_LENS)):
        src[i, :s - 1] = torch.randint(4, min(v_src, V_SRC), (s - 1,), generator=g)
        src[i, s - 1] = 2
        tgt[i, 0] = 1
        tgt[i, 1:t] = torch.randint(4, V_TGT, (t - 1,), generator=g)
    return src, tgt


def sources(vocab, lengths=(4, 2, 6), seed=3):
    """Right-padded sources [3,6], EOS last."""
    g = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n - 1] = torch.randint(4, vocab, (n - 1,), generator=g)
        src[i, n - 1] = EOS
    return src


class Recompute(Seq2Seq):
    """A wrapper without incremental state: every step reruns the wrapped model's full forward pass."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def encode(self, src):
        return {"src": src}

    def decode_step(self, prev_tokens, memory, state):
        return self.model(memory["src"], prev_tokens)[:, -1], {}


def train_copy(model, ids, steps=250, lr=3e-3, warmup=50, batch_tokens=1000, label_smoothing=0.1):
    """Adam with linear warm-up then inverse square root, label-smoothed cross entropy (the trainer's defaults); a
    loop of its own so that the test checks the model, not the trainer (tests/train/test_train_*.py)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    lengths = [len(x) for x in ids]
    step, epoch = 0, 0
    model.train()
    while step < steps:
        for chunk in token_batches(lengths, lengths, batch_tokens, seed=1, epoch=epoch):
            src, tgt_in, tgt_out = make_batch([ids[i] for i in chunk], [ids[i] for i in chunk])
            loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=PAD,
                                   label_smoothing=label_smoothing)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step == steps:
                break
        epoch += 1
    return model.eval()


def transformer_formula(d, f, enc, dec, v_src, v_tgt, shared=False, tied=False):
    """Parameters of the post-LN Transformer: attention 4(d^2+d), FFN 2df+f+d, LayerNorm 2d; no output bias;
    three embedding tables unless shared (one) or tied (target = output)."""
    attn, ffn, ln = 4 * (d * d + d), 2 * d * f + f + d, 2 * d
    emb = v_src * d + (0 if shared else v_tgt * d) + (0 if shared or tied else v_tgt * d)
    return enc * (attn + ffn + 2 * ln) + dec * (2 * attn + ffn + 3 * ln) + emb


def assert_causal(model, src, tgt, t=2):
    """Changing target tokens after position t leaves the logits up to t unchanged and changes the later ones."""
    changed = tgt.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 1 - 4) % (V_TGT - 4) + 4
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    assert (before[:, :t + 1] - after[:, :t + 1]).abs().max().item() < 1e-6
    assert (before[:, t + 1:] - after[:, t + 1:]).abs().max().item() > 1e-3


def assert_option_error(spec, words):
    """Both validating and building the model spec raise a PipelineError holding every one of `words`."""
    for check in (lambda: validate_model(spec), lambda: build_model(spec, V_SRC, V_TGT)):
        try:
            check()
        except PipelineError as err:
            assert all(w in str(err) for w in words), str(err)
        else:
            raise AssertionError(f"no error for {spec}")
