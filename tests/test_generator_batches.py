"""The generators' vote stages as batch functions (``dptext.compute.map_sum``): Aug-PE's
``VoteCounts`` and PATE's ``TeacherVotes`` give exactly the vote histograms of the direct
formula, whatever the batching, and the runs release them as before (fast, no models:
a deterministic hash embedder; ``tests/test_ray_generators.py`` runs them on Ray)."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

from dptext.compute import LocalEngine, map_sum
from dptext.corpus import Corpus
from dptext.generators.augpe import AugPEConfig, nearest_votes, run_augpe
from dptext.generators.augpe import evolution as augpe_evolution
from dptext.generators.augpe import privacy as augpe_privacy
from dptext.generators.augpe.privacy import VoteCounts
from dptext.generators.pate.shards import shard_of
from dptext.generators.pate.teachers import TeacherVotes, _teacher_predictions, teacher_votes
from dptext.llm.recording import RecordingBackend

CANARY = "Quentin Zephyrine-Vallombrosa was admitted with a zorblatt fracture on ward 77"
CLASSES = ["cardiology", "oncology", "surgery"]


class HashEmbedder:
    """A stand-in embedder (picklable, no model): each text's vector is drawn from a seed
    hashed from the text, so it does not depend on the batch it comes in."""

    def __init__(self, dim: int = 16):
        self.dim = dim

    def encode(self, texts):
        return np.stack([np.random.default_rng(
            int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
        ).standard_normal(self.dim).astype(np.float32) for t in texts]) if texts else (
            np.zeros((0, self.dim), dtype=np.float32))


def _unit(x):
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def direct_votes(private: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
    """The vote histogram as the Aug-PE paper defines it: each private row's nearest
    synthetic row (cosine), counted; no blocks, no batches."""
    if len(private) == 0:
        return np.zeros(len(synthetic), dtype=np.int64)
    best = np.argmax(_unit(private) @ _unit(synthetic).T, axis=1)
    return np.bincount(best, minlength=len(synthetic)).astype(np.int64)


# ------------------------------------------------------------------ Aug-PE
def test_augpe_vote_counts_are_the_direct_histograms_for_any_batching(monkeypatch):
    monkeypatch.setattr(augpe_privacy, "BLOCK", 5)  # several matrix blocks per batch
    rng = np.random.default_rng(0)
    synthetic = [rng.standard_normal((n, 16)) for n in (4, 6, 3)]
    private = rng.standard_normal((40, 16)).astype(np.float32)
    position = rng.integers(0, 2, 40)  # class 2 has no private document
    items = list(zip(private, position.tolist(), strict=True))
    fn = VoteCounts(synthetic)
    expected = np.zeros((3, 6), dtype=np.int64)
    for k, syn in enumerate(synthetic):
        expected[k, :len(syn)] = direct_votes(private[position == k], syn)
        # the float64 histogram ``release_votes`` releases is the same counts
        assert np.array_equal(nearest_votes(private[position == k], syn),
                              expected[k, :len(syn)].astype(np.float64))
    assert expected.sum() == 40 and expected[2].sum() == 0
    for batch in (1, 7, 40, 1000):
        got = LocalEngine().map_sum(fn, items, batch)
        assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(fn([]), np.zeros((3, 6), dtype=np.int64))
    # texts embedded by the batch function itself (an embedder object) count the same
    texts = [f"note {i}" for i in range(40)]
    vectors = HashEmbedder().encode(texts)
    by_vector = map_sum(fn, list(zip(vectors, position.tolist(), strict=True)), 9)
    by_text = map_sum(VoteCounts(synthetic, HashEmbedder()),
                      list(zip(texts, position.tolist(), strict=True)), 9)
    assert np.array_equal(by_text, by_vector) and by_text.sum() == 40


def _answer(prompt) -> str:
    """A stand-in LLM: the parent with its blanks filled, or a fixed opening."""
    last = prompt.messages[-1].content
    if "\n\n" in last:
        body = last.split("\n\n")[1].replace("_", "ward")
        return f"{body} Note {prompt.params.seed % 97}."
    return f"A clinical note, draft {prompt.params.seed % 1009}."


def augpe_corpus() -> Corpus:
    """A few dozen notes: three public classes, one label outside them, a canary."""
    rng = np.random.default_rng(3)
    words = ["pain", "chest", "scan", "tumour", "suture", "fever", "dose", "ward", "rest"]
    texts, labels = [], []
    for i in range(30):
        texts.append(" ".join(rng.choice(words, 8)) + f" patient {i}.")
        labels.append(CLASSES[i % 3] if i % 10 else "dermatology")  # 3 outside the classes
    texts.append(CANARY)
    labels.append("oncology")
    return Corpus(texts=tuple(texts), labels=tuple(labels), source="vote test")


def run_augpe_votes(corpus: Corpus, embedder, run_dir, monkeypatch, iterations: int = 2,
                    said: list | None = None):
    """A tiny Aug-PE run (no vocabulary): the result and, per iteration, the exact counts
    handed to ``release_histograms`` (``said``: collects the run's messages)."""
    captured: list[dict] = []
    said = [] if said is None else said
    release = augpe_privacy.release_histograms  # the real one, even when patched twice

    def capture(counts, noise, ledger, t):
        captured.append({c: np.array(v) for c, v in counts.items()})
        return release(counts, noise, ledger, t)

    monkeypatch.setattr(augpe_evolution, "release_histograms", capture)
    cfg = AugPEConfig(document_type="clinical note", per_class=3, iterations=iterations,
                      random_words=0, embedder=embedder, max_tokens=32)
    result = run_augpe(corpus, cfg, cfg.noise(4.0, 1e-5), RecordingBackend(answer=_answer),
                       run_dir, classes=CLASSES, seed=5, epsilon_cap=4.0, say=said.append)
    return result, captured


def expected_augpe_votes(corpus: Corpus, population, embedder) -> dict:
    private = np.asarray(embedder.encode(list(corpus.texts)), dtype=np.float32)
    syn = np.asarray(embedder.encode([t for t, _ in population]), dtype=np.float32)
    out = {}
    for c in CLASSES:
        mine = [i for i, lab in enumerate(corpus.labels) if lab == c]
        out[c] = direct_votes(private[mine],
                              syn[[i for i, (_, lab) in enumerate(population) if lab == c]])
    return out


def test_augpe_run_releases_the_direct_vote_histograms(tmp_path, monkeypatch):
    corpus = augpe_corpus()
    encoded: list[int] = []

    class Counting(HashEmbedder):
        def encode(self, texts):
            encoded.append(len(texts))
            return super().encode(texts)

    result, captured = run_augpe_votes(corpus, Counting(), tmp_path / "run", monkeypatch)
    assert len(captured) == 2
    for t, counts in enumerate(captured, start=1):
        expected = expected_augpe_votes(corpus, result.populations[t - 1], HashEmbedder())
        assert list(counts) == CLASSES
        for c in CLASSES:
            assert np.array_equal(counts[c], expected[c]), (t, c)
        assert sum(int(v.sum()) for v in counts.values()) == 28  # 3 documents vote nowhere
    # the local engine embedded the private corpus once, not once per iteration
    assert encoded.count(len(corpus.texts)) == 1
    # one release per class and iteration, sensitivity 1, one parallel group each
    releases = result.ledger.releases
    assert [(r.parallel_group, r.partition, r.sensitivity, r.dimension) for r in releases] == [
        (f"votes, iteration {t}", c, 1.0, 3) for t in (1, 2) for c in CLASSES]


# ------------------------------------------------------------------ PATE
def old_teacher_votes(x_private, y_private, shards, n_teachers, x_candidates, folds,
                      queried, n_classes):
    """The teacher loop as it was before the engines (folds outer, teachers inner)."""
    votes = np.zeros((queried.size, n_classes + 1), dtype=np.float64)
    order = [np.flatnonzero(shards == m) for m in range(n_teachers)]
    for f in (0, 1):
        rows = np.flatnonzero(folds[queried] == f)
        if rows.size == 0:
            continue
        x_neg = x_candidates[folds != f]
        x_q = x_candidates[queried[rows]]
        for idx in order:
            pred = _teacher_predictions(x_private[idx], y_private[idx], x_neg, x_q, n_classes)
            np.add.at(votes, (rows, pred), 1.0)
    return votes


def pate_inputs(n_docs: int = 60, n_teachers: int = 8, n_classes: int = 3, seed: int = 1):
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((n_classes, 16)))
    y = rng.integers(0, n_classes, n_docs)
    x_priv = _unit(centres[y] + 0.3 * rng.standard_normal((n_docs, 16))).astype(np.float64)
    texts = [f"doc {i}" for i in range(n_docs)]
    shards = shard_of(texts, n_teachers, b"batch test salt".ljust(32, b"."))
    x_cand = _unit(rng.standard_normal((30, 16))).astype(np.float64)
    folds, queried = np.arange(30) % 2, np.arange(0, 30, 3)
    return x_priv, y, shards, n_teachers, x_cand, folds, queried, n_classes


@pytest.mark.parametrize("case", ["many", "empty-shards", "one-fold"])
def test_pate_teacher_votes_are_the_old_loops_for_any_batching(case):
    args = list(pate_inputs(n_docs=6 if case == "empty-shards" else 60,
                            n_teachers=12 if case == "empty-shards" else 8))
    if case == "one-fold":
        args[6] = np.arange(0, 30, 2)  # every queried candidate in fold 0
    x_priv, y, shards, n_teachers, x_cand, folds, queried, n_classes = args
    if case == "empty-shards":
        assert len(set(shards.tolist())) < n_teachers
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning escapes
        old = old_teacher_votes(*args)
        calls: list[tuple[int, int]] = []
        new = teacher_votes(*args, progress=lambda d, t: calls.append((d, t)))
    assert new.dtype == np.float64 and np.array_equal(new, old)
    assert np.all(new.sum(axis=1) == n_teachers)
    assert calls[-1] == (2 * n_teachers, 2 * n_teachers)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    fn = TeacherVotes(x_cand, folds, queried, n_classes)
    items = [(x_priv[shards == m], y[shards == m]) for m in range(n_teachers)]
    for batch in (1, 3, 100):
        got = LocalEngine().map_sum(fn, items, batch)
        assert got.dtype == np.int64 and np.array_equal(got, old)
    assert np.array_equal(fn([]), np.zeros((queried.size, n_classes + 1), dtype=np.int64))

