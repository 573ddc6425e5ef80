"""hao2019 Table 5 probing: text-task building, SentEval files, encoder means, the gated probe, end to end."""
import hashlib
import random
from collections import Counter

import pytest
import torch

from pipeline.errors import PipelineError
from pipeline.papers.hao2019.probing import (SENTEVAL_FILES, SENTEVAL_GIT_BLOBS, SPLITS, TASKS, TEXT_TASKS, GatedProbe,
                                             build_text_tasks, encoder_means, fetch_senteval, read_task, run_probing,
                                             train_probe)
from pipeline.models.registry import build_model

torch.set_num_threads(1)

N_WORDS = 40  # content words c00..c39; word i occurs in 100 - 2i sentences
SMALL = dict(d_model=16, ffn_dim=32, heads=2, enc_layers=2, dec_layers=1, dropout=0.1)


def invented_corpus() -> list[str]:
    """Unique invented sentences: a unique number, one content word, 1..11 digit fillers (lengths 3..13 uniform)."""
    rng = random.Random(7)
    words = [f"c{i:02d}" for i in range(N_WORDS) for _ in range(100 - 2 * i)]
    rng.shuffle(words)
    sentences = []
    for j, word in enumerate(words):
        fillers = [str(rng.randrange(1, 6)) for _ in range(1 + j % 11)]
        fillers.insert(rng.randrange(len(fillers) + 1), word)
        sentences.append(" ".join([f"{j}.{j}"] + fillers))
    return sentences


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return invented_corpus()


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("probing")
    info = build_text_tasks(corpus, out, seed=3, wc_words=10)
    return out, info, {task: read_task(out / f"{task}.txt") for task in TEXT_TASKS}


def rows(data):
    """(split, label, sentence) triples of a read_task result."""
    return [(s, label, sent) for s in SPLITS for label, sent in zip(*data[s])]


def test_text_tasks_exact_labels_and_balanced_classes(built):
    out, info, data = built
    assert info["SeLen"]["bins"] == [[3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 13]]
    assert info["SeLen"]["labels"] == ["0", "1", "2", "3", "4", "5"]
    assert info["WC"]["labels"] == [f"c{i:02d}" for i in range(10)]  # the 10 most frequent content words
    assert info["BShif"]["labels"] == ["I", "O"]
    for task in TEXT_TASKS:
        counts = Counter(label for _, label, _ in rows(data[task]))
        assert sorted(counts) == info[task]["labels"]
        assert len(set(counts.values())) == 1, (task, counts)  # balanced
        for split in SPLITS:  # every class in every split, ~80/10/10
            assert set(data[task][split][0]) == set(counts), (task, split)
        assert info[task]["n"] == sum(counts.values()) == sum(info[task]["splits"].values())
        assert info[task]["splits"]["tr"] >= 0.75 * info[task]["n"]
    assert info["WC"]["n"] == 10 * 82  # cut to the rarest target word, c09 (100 - 18 sentences)
    sel = rows(data["SeLen"])
    for _, label, sentence in sel:
        lo, hi = info["SeLen"]["bins"][int(label)]
        assert lo <= len(sentence.split()) <= hi


def test_no_sentence_in_two_splits(built):
    _, _, data = built
    for task in TEXT_TASKS:
        seen = {}
        for split, _, sentence in rows(data[task]):
            assert seen.setdefault(sentence, split) == split, (task, sentence)
        assert len(seen) == len(rows(data[task]))


def test_bshif_is_one_adjacent_swap_of_a_corpus_sentence(built, corpus):
    _, _, data = built
    originals = set(corpus)
    swapped = 0
    for _, label, sentence in rows(data["BShif"]):
        if label == "O":
            assert sentence in originals
            continue
        assert sentence not in originals
        tokens = sentence.split()
        sources = [i for i in range(1, len(tokens) - 1)
                   if " ".join(tokens[:i] + [tokens[i + 1], tokens[i]] + tokens[i + 2:]) in originals]
        assert len(sources) == 1 and tokens[sources[0]] != tokens[sources[0] + 1]
        swapped += 1
    assert swapped == len(rows(data["BShif"])) // 2


def test_wc_sentences_hold_exactly_one_target_word(built):
    _, info, data = built
    targets = set(info["WC"]["labels"])
    for _, label, sentence in rows(data["WC"]):
        assert [t for t in sentence.split() if t in targets] == [label]


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, corpus, built):
    out, _, _ = built
    build_text_tasks(corpus, tmp_path / "again", seed=3, wc_words=10)
    build_text_tasks(corpus, tmp_path / "other", seed=4, wc_words=10)
    for task in TEXT_TASKS:
        assert (tmp_path / "again" / f"{task}.txt").read_bytes() == (out / f"{task}.txt").read_bytes()
        assert (tmp_path / "other" / f"{task}.txt").read_bytes() != (out / f"{task}.txt").read_bytes()
    assert not list((tmp_path / "again").glob(".*.tmp"))


def test_too_small_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(PipelineError, match="probing task SeLen: .* expected at least 10"):
        build_text_tasks(["a b c", "a b c d", "x y"], tmp_path)
    assert not (tmp_path / "SeLen.txt").exists()


@pytest.mark.parametrize("line, number", [("tr\tA\ta b\nva\tB\tc d\nxx\tA\te f\n", 3),
                                          ("tr\tA\ta b\nva\tB\n", 2),
                                          ("tr\t\ta b\n", 1),
                                          ("tr\tA\ta b\nva\tA\t  \n", 2)])
def test_read_task_names_file_and_line(tmp_path, line, number):
    path = tmp_path / "task.txt"
    path.write_text(line)
    with pytest.raises(PipelineError, match=f"{path}:{number}: expected 'split<TAB>label<TAB>sentence'"):
        read_task(path)


def test_read_task_needs_every_split_and_reads_senteval_layout(tmp_path):
    path = tmp_path / "task.txt"
    path.write_text("tr\tA\ta b\nva\tB\tc d\n")
    with pytest.raises(PipelineError, match=f"{path}: no instances of split.* te"):
        read_task(path)
    path.write_text("tr\tA\textra\ta b\n\nva\tB \tc d\nte\tA\te  f\n")  # SentEval: sentence is the last field
    assert read_task(path) == {"tr": (["A"], ["a b"]), "va": (["B"], ["c d"]), "te": (["A"], ["e  f"])}


@pytest.mark.parametrize("arch", ["transformer", "recurrence"])
def test_encoder_means_hand_computed_and_padding_free(arch):
    torch.manual_seed(0)
    model = build_model({"encoder": arch, "decoder": arch, **SMALL}, 20, 20)
    model.train()
    batch = [[5, 6, 7, 2], [8, 2], [9, 10, 11, 12, 13, 2]]
    enc, rec = encoder_means(model, [batch[:2], batch[2:]])
    assert model.training  # mode restored
    assert enc.shape == (3, 16) and (rec is None) == (arch == "transformer")
    model.eval()
    with torch.no_grad():
        padded = model.encode(torch.tensor([[5, 6, 7, 2], [8, 2, 0, 0]]))
        for row, ids in enumerate(batch):
            alone = model.encode(torch.tensor([ids]))
            assert torch.allclose(enc[row], alone["enc"][0].mean(0), atol=1e-5)
            if rec is not None:
                assert torch.allclose(rec[row], alone["rec"][0].mean(0), atol=1e-5)
        assert torch.allclose(enc[1], padded["enc"][1, :2].mean(0), atol=1e-5)
        assert not torch.allclose(enc[1], padded["enc"][1].mean(0), atol=1e-3)  # padding would change it


def split_features(x, labels, b=None):
    """train/dev/test = 60/20/20 of features and labels."""
    n = len(labels)
    cuts = [(0, int(0.6 * n)), (int(0.6 * n), int(0.8 * n)), (int(0.8 * n), n)]
    return [((x[i:j], None if b is None else b[i:j]), labels[i:j]) for i, j in cuts]


def test_probe_decodes_linear_labels_and_not_random_ones():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3000, 16, generator=g) * 3 + 1
    scores = x @ torch.randn(16, 3, generator=g)
    top2 = scores.topk(2, dim=1).values
    x, scores = x[top2[:, 0] - top2[:, 1] > 2][:1000], scores[top2[:, 0] - top2[:, 1] > 2][:1000]  # a margin
    labels = [str(i) for i in scores.argmax(1).tolist()]
    result = train_probe(*split_features(x, labels), seed=1, lr=1e-2)  # lr 1e-3 needs ~200 epochs here
    assert result["test"] >= 98 and result["n_classes"] == 3 and result["n_train"] == 600
    random_labels = [random.Random(i).choice("AB") for i in range(1000)]
    chance = train_probe(*split_features(x, random_labels), seed=1)
    assert 35 <= chance["test"] <= 65
    mlp = train_probe(*split_features(x, labels), seed=1, hidden=32, lr=1e-2)
    assert mlp["test"] >= 95
    assert train_probe(*split_features(x, labels), seed=1, lr=1e-2) == result  # seeded


def test_gate_in_unit_interval_and_both_encoders_get_gradient():
    torch.manual_seed(0)
    probe = GatedProbe(8, 3, two_inputs=True)
    a, b = torch.randn(5, 8, requires_grad=True), torch.randn(5, 8, requires_grad=True)
    g = probe.gate(a, b)
    assert g.shape == (5, 8) and bool(((g > 0) & (g < 1)).all())
    torch.nn.functional.cross_entropy(probe(a, b), torch.tensor([0, 1, 2, 0, 1])).backward()
    assert a.grad.abs().sum() > 0 and b.grad.abs().sum() > 0
    w = probe.gate_proj.weight.grad
    assert w[:, :8].abs().sum() > 0 and w[:, 8:].abs().sum() > 0


def test_gate_learns_to_prefer_the_informative_encoder():
    gen = torch.Generator().manual_seed(1)
    a, noise = torch.randn(1000, 8, generator=gen), torch.randn(1000, 8, generator=gen)
    labels = ["P" if v > 0 else "N" for v in a[:, 0].tolist()]
    on_a = train_probe(*split_features(a, labels, noise), seed=1, lr=1e-2)
    on_b = train_probe(*split_features(noise, labels, a), seed=1, lr=1e-2)
    assert on_a["test"] >= 90 and on_b["test"] >= 90
    assert on_a["gate"] > 0.5 > on_b["gate"]


def test_train_probe_rejects_mismatched_inputs():
    x = torch.randn(10, 4)
    ok = ((x, None), list("ABABABABAB"))
    with pytest.raises(PipelineError, match="dev labels \\['C'\\] never occur in train"):
        train_probe(ok, ((x, None), list("ABABABABAC")), ok)
    with pytest.raises(PipelineError, match="test features"):
        train_probe(ok, ok, ((x, x), list("ABABABABAB")))


@pytest.fixture(scope="module")
def vocab(corpus):
    tokens = sorted({t for s in corpus for t in s.split()})
    return {t: i + 4 for i, t in enumerate(tokens)}


@pytest.mark.parametrize("arch", ["transformer", "recurrence"])
def test_run_probing_end_to_end_deterministic_and_frozen(arch, built, vocab):
    out, _, _ = built
    torch.manual_seed(0)
    spec = {"encoder": arch, "decoder": arch, **SMALL, **({"rec_steps": 3} if arch == "recurrence" else {})}
    model = build_model(spec, len(vocab) + 4, 9)
    before = {k: v.clone() for k, v in model.state_dict().items()}

    def encode_lines(lines):
        return [[vocab.get(t, 3) for t in line.split()] for line in lines]

    files = {task: out / f"{task}.txt" for task in TEXT_TASKS}
    first = run_probing(model, encode_lines, files, seed=2, epochs=15, lr=1e-2)
    assert list(first) == list(TEXT_TASKS)
    for task, result in first.items():
        assert 0 <= result["test"] <= 100 and ("gate" in result) == (arch == "recurrence")
    assert first["SeLen"]["test"] > 28  # length is in the mean (positions); chance 16.7, its sd ~3.2 here
    assert run_probing(model, encode_lines, files, seed=2, epochs=15, lr=1e-2) == first
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def git_blob(body: bytes) -> str:
    """`git hash-object` of `body`."""
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def test_fetch_senteval_from_loopback(server, tmp_path):
    assert tuple(SENTEVAL_FILES) == TASKS and len(set(SENTEVAL_FILES.values())) == 10
    assert set(SENTEVAL_GIT_BLOBS) == set(SENTEVAL_FILES.values())
    blobs = {}
    for i, name in enumerate(SENTEVAL_FILES.values()):
        body = f"tr\tA\tw{i} x\ntr\tB\ty z\nva\tA\tu v\nte\tB\tq r\n".encode()
        server.files[f"/probing/{name}"], blobs[name] = body, git_blob(body)
    info = fetch_senteval(tmp_path / "out", tmp_path / "cache", base_url=server.url("/probing/"), git_blobs=blobs)
    assert list(info) == list(TASKS)
    assert info["WC"] == {"path": str(tmp_path / "out" / "WC.txt"), "n": 4, "labels": ["A", "B"],
                          "splits": {"tr": 2, "va": 1, "te": 1}}
    assert read_task(tmp_path / "out" / "CoIn.txt")["tr"] == (["A", "B"], ["w9 x", "y z"])
    n_requests = len(server.requests)
    fetch_senteval(tmp_path / "out2", tmp_path / "cache", base_url=server.url("/probing"), git_blobs=blobs)  # reused
    assert len(server.requests) == n_requests
    (tmp_path / "cache" / "tree_depth.txt").write_text("tr\tA\n")  # a damaged cached file is fetched again
    fetch_senteval(tmp_path / "out3", tmp_path / "cache", base_url=server.url("/probing"), git_blobs=blobs)
    assert len(server.requests) == n_requests + 1
    assert read_task(tmp_path / "out3" / "TrDep.txt")["te"] == (["B"], ["q r"])
    bad = b"tr\tA\n"
    server.files["/probing/tree_depth.txt"] = bad
    (tmp_path / "cache" / "tree_depth.txt").unlink()
    with pytest.raises(PipelineError, match=rf"checksum mismatch for {server.url('/probing/tree_depth.txt')}"):
        fetch_senteval(tmp_path / "out4", tmp_path / "cache", base_url=server.url("/probing"), git_blobs=blobs)
    with pytest.raises(PipelineError, match=r"tree_depth.txt:1: expected"):  # its blob id matches: the format does not
        fetch_senteval(tmp_path / "out4", tmp_path / "cache", base_url=server.url("/probing"),
                       git_blobs=dict(blobs, **{"tree_depth.txt": git_blob(bad)}))
    assert not (tmp_path / "out4" / "TrDep.txt").exists()


def test_the_probing_analysis_refuses_a_vocabulary_of_another_size_than_the_models(tmp_path):
    from model_variants import V_SRC, save_model, save_vocab
    from pipeline.analyses import Task
    from pipeline.papers.hao2019.analyses import ProbingSettings, probing
    (tmp_path / "codes").write_text("#version: 0.2\nw 1\n")
    (tmp_path / "tasks").mkdir()
    inputs = {"model": str(save_model(tmp_path / "model.pt")), "tasks": str(tmp_path / "tasks"),
              "codes": str(tmp_path), "src_vocab": str(save_vocab(tmp_path / "vocab.src", V_SRC + 1))}
    task = Task(inputs=inputs, settings=ProbingSettings(corpus="toy"), context={"lang": "en"}, outputs={})
    with pytest.raises(PipelineError, match=f"vocab.src: src vocabulary of {V_SRC + 1} tokens, but .*model.pt was "
                                            f"trained with {V_SRC}"):
        probing(task)
