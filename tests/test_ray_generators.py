"""The generators' vote stages on a real Ray cluster (``tests/ray_cluster.py``): Aug-PE's
vote histograms (the workers embed their documents with the embedder named in the run)
and PATE's teacher votes give the local engine's exact sums and the same release
records, and a canary planted in the private texts appears nowhere in Ray's folder."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.compute import use_engine
from test_generator_batches import (  # the tiny corpora and the direct formulas
    CANARY,
    CLASSES,
    augpe_corpus,
    expected_augpe_votes,
    old_teacher_votes,
    pate_inputs,
    run_augpe_votes,
)

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]


def _no_canary_in(folder) -> None:
    assert any(folder.rglob("*.log")) or any(folder.rglob("*.out"))
    needles = [CANARY.encode(), b"Zephyrine", b"zorblatt"]
    for f in folder.rglob("*"):
        if f.is_file() and not f.is_socket():
            data = f.read_bytes()
            assert not any(n in data for n in needles), f"private text in {f.name}"


def test_augpe_votes_on_ray_are_the_local_engines(cluster, tmp_path, monkeypatch):
    from dptext.embed import load_embedder

    address, ray_dir, _ = cluster
    corpus = augpe_corpus()
    said_local: list[str] = []
    said_ray: list[str] = []
    local, local_counts = run_augpe_votes(corpus, "model2vec", tmp_path / "local",
                                          monkeypatch, said=said_local)
    with use_engine("ray", address):
        on_ray, ray_counts = run_augpe_votes(corpus, "model2vec", tmp_path / "ray",
                                             monkeypatch, said=said_ray)
    assert not ray.is_initialized()
    # the local run embedded the private documents on the driver, once; the Ray run never
    assert sum("embedding the private documents" in m for m in said_local) == 1
    assert not any("embedding the private documents" in m for m in said_ray)
    assert sum("Ray workers embed" in m for m in said_ray) == 1
    assert len(local_counts) == len(ray_counts) == 2
    # population 0 is the same in both runs (the stand-in LLM is deterministic): the exact
    # votes of iteration 1 are the same bits; later populations follow the noisy votes, so
    # each iteration is checked against the direct formula on its own population
    assert on_ray.populations[0] == local.populations[0]
    for c in CLASSES:
        assert local_counts[0][c].dtype == ray_counts[0][c].dtype
        assert np.array_equal(local_counts[0][c], ray_counts[0][c])
    emb = load_embedder("model2vec", cache_dir=None)
    for t, counts in enumerate(ray_counts, start=1):
        expected = expected_augpe_votes(corpus, on_ray.populations[t - 1], emb)
        for c in CLASSES:
            assert np.array_equal(counts[c], expected[c]), (t, c)
    # the same release records: sensitivities, noise scales, ε, δ, partitions, groups
    assert on_ray.ledger.releases == local.ledger.releases
    assert len(on_ray.ledger.releases) == 2 * len(CLASSES)
    _no_canary_in(ray_dir)


def test_pate_teacher_votes_on_ray_are_the_local_engines(cluster):
    from dptext.generators.pate.teachers import teacher_votes

    address, ray_dir, _ = cluster
    args = pate_inputs(n_docs=60, n_teachers=8)
    expected = old_teacher_votes(*args)
    local = teacher_votes(*args)
    calls: list[tuple[int, int]] = []
    with use_engine("ray", address):
        on_ray = teacher_votes(*args, progress=lambda d, t: calls.append((d, t)))
        in_pairs = teacher_votes(*args, batch_size=3)
    for got in (local, on_ray, in_pairs):
        assert got.dtype == np.float64 and np.array_equal(got, expected)
    assert calls[-1] == (16, 16)
    _no_canary_in(ray_dir)


def test_pate_teachers_embed_their_shards_on_ray(cluster):
    """On Ray each teacher's task embeds its own shard's texts (by the embedder's name):
    the votes equal those from the driver's embeddings of the whole corpus."""
    from dptext.embed import private_vectors
    from dptext.generators.pate.shards import shard_of
    from dptext.generators.pate.teachers import teacher_votes

    address, ray_dir, _ = cluster
    topics = ("goal match team", "vote party minister", "shares profit market")
    texts = [f"{topics[i % 3]} report {i}" for i in range(45)] + [CANARY]
    y = np.array([i % 3 for i in range(45)] + [0])
    shards = shard_of(texts, 6, b"ray pate salt".ljust(32, b"."))
    cand = [f"{t} candidate {j}" for t in topics for j in range(6)]
    x_cand = private_vectors("model2vec", cand).astype(np.float64)
    folds, queried = np.arange(len(cand)) % 2, np.arange(0, len(cand), 2)
    x_priv = private_vectors("model2vec", texts).astype(np.float64)
    args = (shards, 6, x_cand, folds, queried, 3)
    driver = teacher_votes(x_priv, y, *args)
    with use_engine("ray", address):
        workers = teacher_votes(texts, y, *args, embedder="model2vec", batch_size=2)
    assert np.array_equal(workers, driver) and driver.sum() == 6 * len(queried)
    _no_canary_in(ray_dir)


@pytest.mark.parametrize("method", ["augpe", "pate"])
def test_augpe_and_pate_run_end_to_end_on_ray(cluster, tmp_path, method):
    """``dptext.synthesize(..., engine="ray")``: the run completes with the local run's
    release records (stage, partition, sensitivity, noise scale) and its document count."""
    import dptext
    from dptext.corpus import read_corpus
    from dptext.llm.recording import RecordingBackend

    bbc = read_corpus("demo:bbc-news/train")
    keep = [i for c in ("sports", "tech") for i in
            np.flatnonzero(np.asarray(bbc.labels) == c)[:25]]
    path = tmp_path / "c.csv"
    import pandas as pd

    pd.DataFrame({"text": [bbc.texts[i] for i in keep],
                  "label": [bbc.labels[i] for i in keep]}).to_csv(path, index=False)
    options = (dict(per_class=1, iterations=1, random_words=0, max_tokens=40)
               if method == "augpe" else dict(documents=4, teachers=4, max_tokens=40))
    address, *_ = cluster
    runs = {}
    for engine in ("local", "ray"):
        runs[engine] = dptext.synthesize(
            str(path), method, epsilon=2.0, out=tmp_path / engine / "o.jsonl",
            label_column="label", labels=("sports", "tech"), embedder="model2vec",
            llm=RecordingBackend(), engine=engine,
            ray_address=address if engine == "ray" else None, **options)

    def records(r):
        return [(x.name, x.partition, x.sensitivity, x.noise_scale) for x in r.ledger.releases]

    assert records(runs["ray"]) == records(runs["local"]) and records(runs["local"])
    assert len(runs["ray"].documents) == len(runs["local"].documents) > 0
