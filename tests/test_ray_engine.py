"""``--engine ray``: the corpus-wide counts on a real Ray cluster give the local engine's
exact sums, the same release records, and leave no private text in Ray's logs.

The cluster (``tests/ray_cluster.py``): a head node and one worker node (two raylets, one
CPU each) on loopback, in a short temporary folder of their own, shared by the Ray tests.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import dptext
from dptext.compute import RAY_ASSUMPTION, LocalEngine, map_sum, use_engine
from dptext.corpus import read_corpus
from dptext.generators.kps.releases import DocumentTerms
from dptext.kde.rff import FourierFeatures
from dptext.kde.sketch import corpus_sketch_sums, exact_sums
from dptext.keyphrases.histogram import ClassTermCounts
from dptext.keyphrases.terms_per_doc import GRID, TermCountScores
from dptext.text import PublicVocabulary, load_vocabulary
from dptext.text.extract import FirstTermCounts

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

CANARY = "Quentin Zephyrine-Vallombrosa was admitted with a zorblatt fracture on ward 77"
LABELS = ("business", "entertainment", "politics", "sports", "tech")


@pytest.fixture(scope="module")
def corpus():
    train = read_corpus("demo:bbc-news/train")
    df = pd.DataFrame({"text": train.texts, "label": train.labels})
    return df.groupby("label").head(40).reset_index(drop=True)


def _same(a, b) -> None:
    a = a.toarray() if hasattr(a, "toarray") else a
    b = b.toarray() if hasattr(b, "toarray") else b
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b)


def test_sums_before_noise_are_the_local_engines_bit_for_bit(cluster, corpus):
    address, *_ = cluster
    vocab = load_vocabulary("english:20000")
    texts = list(corpus.text)
    ids = [LABELS.index(x) if x in LABELS else -1 for x in corpus.label]
    ids[::7] = [-1] * len(ids[::7])  # some documents counted in no row (the validation fold)
    vocab_fn = FirstTermCounts(vocab.extractor(), 80)
    hist_fn = ClassTermCounts(vocab.extractor(), 80, len(LABELS))
    s_fn = TermCountScores(vocab.extractor())  # the scores S is chosen from
    pairs = list(zip(texts, ids, strict=True))
    local_vocab = LocalEngine().map_sum(vocab_fn, texts, 10_000)  # one batch: today's path
    local_hist = LocalEngine().map_sum(hist_fn, pairs, 10_000)
    local_s = LocalEngine().map_sum(s_fn, texts, 10_000)
    # the KDE sketches over a released vocabulary of 300 terms: the local path as before
    # engines (each class's sequences, then exact_sums) against the batches on Ray
    released = PublicVocabulary("released", vocab.terms[:300])
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((300, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    feats = [FourierFeatures.draw(16, b, 200, 1.0, rng) for b in (1, 2)]
    terms = DocumentTerms(released.extractor(), 10)
    seqs = terms(texts)
    local_kde = [np.concatenate(exact_sums([s for s, c in zip(seqs, ids, strict=True)
                                            if c == k], emb, feats, 8))
                 for k in range(len(LABELS))]
    with use_engine("ray", address) as engine:
        assert engine.name == "ray"
        for batch in (16, 64):
            _same(map_sum(vocab_fn, texts, batch), local_vocab)
            _same(map_sum(hist_fn, pairs, batch), local_hist)
            _same(map_sum(s_fn, texts, batch), local_s)
        on_ray = corpus_sketch_sums(pairs, len(LABELS), terms, emb, feats, 8, batch_size=40)
        for a, b in zip(on_ray, local_kde, strict=True):
            _same(a, b)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2  # head + worker node
        # a corpus streamed from an iterator, and no documents at all
        _same(map_sum(vocab_fn, iter(texts), 50), local_vocab)
        _same(map_sum(vocab_fn, [], 50), np.zeros(len(vocab), dtype=np.int64))
    assert not ray.is_initialized()  # the engine disconnected what it connected
    assert local_vocab.sum() > 0 and local_hist.sum() > 0
    assert local_s.shape == (len(GRID),) and local_s.min() > 0


def _keyphrases(path: Path, out: Path, model: list[str], *extra: str):
    from dptext.cli import app

    return CliRunner().invoke(app, [
        "keyphrases", "--input", str(path), "--label-column", "label",
        "--labels", ",".join(LABELS), "--vocab", "english:5000", "--vocab-size", "200",
        "--embedder", "model2vec", "--epsilon", "3", "--sequences-per-class", "3",
        "--features", "300", "--seed", "1", "--allow-budget-overrun", "--out", str(out),
        # S fixed: its private choice is a noisy output (two runs may choose two S), and
        # every later record's sensitivity follows it; its input sums are compared above
        "--terms-per-doc", "80",
        *model, *extra])


# the default (class × term histogram, model chosen on a held-out fold) and the hybrid
# (histogram + KDE sketches: both counting stages on the engine)
@pytest.mark.parametrize("model", [[], ["--model", "hybrid", "--select", "none"]],
                         ids=["default", "hybrid"])
def test_keyphrases_on_ray_make_the_same_releases_and_leave_no_private_text(
        cluster, corpus, tmp_path, model):
    address, ray_dir, _ = cluster
    df = pd.concat([corpus, pd.DataFrame({"text": [CANARY] * 3, "label": ["tech"] * 3})])
    path = tmp_path / "notes.csv"
    df.to_csv(path, index=False)
    local = _keyphrases(path, tmp_path / "local.jsonl", model, "--engine", "local")
    assert local.exit_code == 0, local.output
    on_ray = _keyphrases(path, tmp_path / "ray.jsonl", model, "--engine", "ray",
                         "--ray-address", address)
    assert on_ray.exit_code == 0, on_ray.output
    a = json.loads((tmp_path / "local.privacy.json").read_text())
    b = json.loads((tmp_path / "ray.privacy.json").read_text())
    # the release records (mechanism, sensitivity, noise scale, ε, δ, …) are identical;
    # only the noisy values (not in the report) and the timestamps differ
    assert a["releases"] == b["releases"] and len(a["releases"]) >= 2
    if model:
        assert sum(r["name"] == "KDE sketch sums" for r in b["releases"]) == len(LABELS)
    assert a["guarantee"] == b["guarantee"]
    for report in (a, b):  # the privately chosen model (and form) are noisy outputs too
        for choice in ("chosen", "form"):
            report["parameters"].get("model_selection", {}).pop(choice, None)
    assert a["parameters"] == b["parameters"]
    assert a["engine"] == {"name": "local"}
    assert b["engine"] == {"name": "ray", "address": address}
    assert RAY_ASSUMPTION in b["assumptions"] and RAY_ASSUMPTION not in a["assumptions"]
    # nothing private in Ray's folder (its logs, spilled objects, …) nor in the outputs
    assert any(ray_dir.rglob("*.log")) or any(ray_dir.rglob("*.out"))
    needles = [CANARY.encode(), b"Zephyrine", b"zorblatt"]
    for f in [*ray_dir.rglob("*"), *tmp_path.glob("*.json*")]:
        if f.is_file() and not f.is_socket() and f.name != "notes.csv":
            data = f.read_bytes()
            assert not any(n in data for n in needles), f"private text in {f.name}"
    # the control: what a worker prints does land in that folder, so the search above
    # looked where a leak would be
    probe = b"dptext-log-probe-3141"
    ray.init(address=address, log_to_driver=False)
    try:
        ray.get(ray.remote(lambda: print(probe.decode(), flush=True)).remote())
    finally:
        ray.shutdown()
    assert _found(ray_dir, probe)


def _found(folder: Path, needle: bytes, wait: float = 10.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if any(f.is_file() and needle in f.read_bytes() for f in folder.rglob("worker-*")):
            return True
        time.sleep(0.5)
    return False


def test_synthesize_on_ray_same_releases_and_no_private_text_in_prompts(cluster, corpus,
                                                                        tmp_path):
    from dptext.corpus import Corpus
    from dptext.llm.recording import RecordingBackend

    address, *_ = cluster
    texts = (*corpus.text, CANARY, CANARY)
    data = Corpus(texts, (*corpus.label, "tech", "tech"), source="ray test")
    options = dict(epsilon=3.0, labels=LABELS, embedder="model2vec", vocab="english:3000",
                   vocab_size=200, per_class=1, seed=2, allow_budget_overrun=True,
                   terms_per_doc=80)  # fixed, as in _keyphrases
    local = dptext.synthesize(data, "kps", out=tmp_path / "local.jsonl",
                              llm=RecordingBackend(), **options)
    llm = RecordingBackend()
    on_ray = dptext.synthesize(data, "kps", out=tmp_path / "ray.jsonl", llm=llm,
                               engine="ray", ray_address=address, **options)
    assert on_ray.report["releases"] == local.report["releases"]
    assert on_ray.report["engine"]["name"] == "ray" and local.report["engine"]["name"] == "local"
    assert RAY_ASSUMPTION in on_ray.report["assumptions"]
    assert llm.prompts and not any("Zephyrine" in str(p) for p in llm.prompts)


def test_a_worker_killed_mid_stage_loses_nothing(cluster, corpus, monkeypatch):
    """A node dies while its batches run: Ray recomputes them elsewhere (they draw no
    noise, so a retry gives the same counts) and the sum is still exact. A batch lost
    without an error (Ray's wait then never returns it) is resubmitted after a stall."""
    import threading

    from dptext import compute

    monkeypatch.setattr(compute, "MIN_STALL_S", 5.0)

    address, _, c = cluster
    doomed = c.add_node(num_cpus=1, node_ip_address="127.0.0.1",
                        object_store_memory=80 * 2**20)
    c.wait_for_nodes()
    vocab = load_vocabulary("english:20000")
    texts = list(corpus.text) * 3
    base = FirstTermCounts(vocab.extractor(), 80)

    def slow(batch):  # pickled by value: a worker needs only dptext
        import time as _t

        _t.sleep(0.2)
        return base(batch)

    expected = LocalEngine().map_sum(base, texts, 10)
    with use_engine("ray", address) as engine:
        engine.connect()
        # every node is on 127.0.0.1, so the driver may have attached to any raylet: kill
        # a worker node it is not attached to (a cluster's driver runs beside its head)
        from ray._private.test_utils import get_other_nodes

        others = get_other_nodes(c, exclude_head=True)
        doomed = doomed if doomed in others else others[0]
        killer = threading.Timer(1.5, lambda: c.remove_node(doomed, allow_graceful=False))
        killer.start()
        started = time.monotonic()
        got = map_sum(slow, texts, 10)
        elapsed = time.monotonic() - started
    killer.join()
    # the node really died, and during the stage (60 batches of 0.2 s on 3 CPUs)
    assert doomed not in c.worker_nodes and elapsed > 1.5
    _same(got, expected)


def test_a_batch_that_never_returns_is_submitted_again(cluster, monkeypatch, tmp_path):
    """A batch whose task hangs (no error ever reaches the driver) is cancelled after the
    stall limit and computed again; the sum counts it once."""
    from dptext import compute

    monkeypatch.setattr(compute, "MIN_STALL_S", 3.0)
    marker = tmp_path / "hung-once"

    def hangs_once(batch):  # pickled by value
        import time as _t
        from pathlib import Path as _P

        if 7 in batch and not _P(marker).exists():
            _P(marker).touch()
            _t.sleep(3600)
        return np.array([len(batch), sum(batch)], dtype=np.int64)

    address, _, _ = cluster
    with use_engine("ray", address):
        got = map_sum(hangs_once, range(40), 5)
    assert marker.exists()
    assert got.tolist() == [40, sum(range(40))]


def test_a_node_with_other_dptext_code_is_refused(cluster, monkeypatch):
    """The driver checks, once per connection, that every node runs its dptext source."""
    from dptext import compute

    address, *_ = cluster
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setattr(compute, "code_fingerprint", lambda: "not-the-nodes-code")
    with pytest.raises(ValueError, match="is not the driver's"), use_engine("ray", address):
        map_sum(lambda batch: np.array([len(batch)]), range(10), 5)
