"""DP-KDE sketches and samplers: exactness, contribution bounds, privacy, sampling rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptext.kde.rff import FEATURE_BOUND, FourierFeatures
from dptext.kde.sampler import (
    SamplingStats,
    _draw_rows,
    candidate_sets,
    sample_independent,
    sample_iterative,
    score_matrix,
)
from dptext.kde.sketch import (
    document_contributions,
    document_windows,
    ensemble_blocks,
    exact_sums,
    release_sketches,
    sketch_for_prefix,
    sketch_sensitivity,
)
from dptext.privacy import NoiseSpec, PrivacyLedger, mechanisms
from dptext.privacy.auditing import epsilon_lower_bound

D = 16


def unit_vectors(n: int, d: int = D, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_kde(embeddings, docs, query, blocks, bandwidth):
    """Σ_docs mean over windows of exp(−‖window − zero-padded query‖² / (h²·blocks))."""
    total = 0.0
    for doc in docs:
        windows, _ = document_windows([np.asarray(doc)], blocks, max_windows=8)
        vals = []
        for w in windows:
            dist = 0.0
            for b in range(blocks):
                x = embeddings[w[b]] if w[b] >= 0 else np.zeros(embeddings.shape[1])
                y = embeddings[query[b]] if b < len(query) else np.zeros(embeddings.shape[1])
                dist += float(np.sum((x - y) ** 2))
            vals.append(math.exp(-dist / (bandwidth**2 * blocks)))
        total += float(np.mean(vals))
    return total


@pytest.mark.parametrize("blocks,query_len", [(1, 1), (2, 2), (4, 3), (4, 2)])
def test_rff_scores_match_exact_kde_within_expected_error(blocks, query_len):
    emb = unit_vectors(30)
    rng = np.random.default_rng(3)
    docs = [rng.choice(30, size=int(rng.integers(1, 9)), replace=False) for _ in range(40)]
    features = 20_000
    ff = FourierFeatures.draw(D, blocks, features, bandwidth=0.8, rng=rng)
    (sums,) = exact_sums(docs, emb, [ff], max_windows=8)
    errors, values = [], []
    for _ in range(10):
        q = rng.choice(30, size=query_len, replace=False)
        prefix = ff.sequence_phase(emb, q[None, :-1])
        cand = ff.block_phase(emb[q[-1:]], query_len - 1)
        rff = score_matrix(ff, sums.astype(np.float32), prefix, cand)[0, 0] / features
        exact = exact_kde(emb, docs, q, blocks, 0.8)
        errors.append(abs(rff - exact))
        values.append(exact)
    # RFF error of a sum over n documents is O(n / √I); allow 4 standard deviations
    assert max(errors) < 4 * len(docs) / math.sqrt(features)
    assert np.ptp(values) > 4 * len(docs) / math.sqrt(features)  # the test can tell queries apart


def test_zero_padding_scales_prefix_kde_by_a_constant():
    """Theorem B.2: a zero-padded prefix query = prefix KDE × exp(−u(L−ℓ)) for unit blocks."""
    emb = unit_vectors(12)
    docs = [np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7]), np.array([1, 2, 8, 9])]
    blocks, h = 4, 1.0
    u = 1.0 / (h**2 * blocks)
    for q in ([1, 2], [4, 5], [0, 9]):
        padded = exact_kde(emb, docs, q, blocks, h)
        prefix_only = 0.0
        for doc in docs:
            windows, _ = document_windows([doc], blocks, 8)
            prefix_only += np.mean([math.exp(-u * sum(
                float(np.sum((emb[w[b]] - emb[q[b]]) ** 2)) for b in range(len(q))))
                for w in windows])
        assert padded == pytest.approx(prefix_only * math.exp(-u * (blocks - len(q))), rel=1e-6)


def test_ensembles():
    assert ensemble_blocks("independent", 10) == (1,)
    assert ensemble_blocks("iterative", 10, "linear") == tuple(range(1, 11))
    assert ensemble_blocks("iterative", 10, "log") == (1, 2, 4, 8, 10)
    assert ensemble_blocks("iterative", 1, "log") == (1,)
    assert ensemble_blocks("iterative", 8, "log") == (1, 2, 4, 8)
    blocks = ensemble_blocks("iterative", 10, "log")
    for i in range(1, 11):
        b = blocks[sketch_for_prefix(blocks, i)]
        assert i <= b < 2 * i or b == i  # at most half of the query is padding
    with pytest.raises(ValueError):
        ensemble_blocks("iterative", 10, "cubic")


def test_document_windows_weights_and_padding():
    seqs = [np.array([5, 6, 7, 8, 9]), np.array([1]), np.array([], dtype=int), np.array([2, 3])]
    windows, weights = document_windows(seqs, blocks=2, max_windows=3)
    # doc0: 3 windows (capped), doc1: 1 padded, doc2: none, doc3: 1
    assert len(windows) == 5
    assert sorted(map(tuple, windows.tolist())) == sorted(
        [(5, 6), (6, 7), (7, 8), (1, -1), (2, 3)])
    assert weights.sum() == pytest.approx(3.0)  # one unit of weight per non-empty document


@settings(max_examples=40, deadline=None)
@given(
    docs=st.lists(st.lists(st.integers(0, 19), max_size=12), min_size=0, max_size=6),
    extra=st.lists(st.integers(0, 19), min_size=0, max_size=30),
    blocks=st.sampled_from([1, 2, 3]),
)
def test_one_document_moves_each_feature_by_at_most_sqrt2(docs, extra, blocks):
    emb = unit_vectors(20)
    ff = FourierFeatures.draw(D, blocks, 64, 1.0, np.random.default_rng(0))
    seqs = [np.asarray(d, dtype=np.int64) for d in docs]
    base = exact_sums(seqs, emb, [ff], max_windows=8)[0]
    more = exact_sums([*seqs, np.asarray(extra, dtype=np.int64)], emb, [ff], max_windows=8)[0]
    assert np.max(np.abs(more - base)) <= FEATURE_BOUND  # exactly: no rounding slack


def test_score_matrix_equals_direct_cosines():
    emb = unit_vectors(10)
    ff = FourierFeatures.draw(D, 3, 50, 1.0, np.random.default_rng(1))
    noisy = np.random.default_rng(2).normal(size=50).astype(np.float32)
    seq = np.array([[1, 2], [3, 4]])
    prefix = ff.sequence_phase(emb, seq)
    cand = ff.block_phase(emb, 2)
    fast = score_matrix(ff, noisy, prefix, cand)
    direct = np.array([[np.sum(noisy * ff.feature_values(prefix[r] + cand[c]))
                        for c in range(10)] for r in range(2)])
    np.testing.assert_allclose(fast, direct, rtol=1e-4, atol=1e-3)


def test_draw_rows_clips_negatives_and_falls_back_to_uniform():
    stats = SamplingStats()
    weights = np.array([[-5.0, 2.0, -1.0], [-1.0, -2.0, -3.0]])
    allowed = np.array([[True, True, True], [True, False, True]])
    rng = np.random.default_rng(0)
    picks = np.array([_draw_rows(weights, allowed, rng, stats) for _ in range(300)])
    assert set(picks[:, 0]) == {1}  # the only positive score
    assert set(picks[:, 1]) == {0, 2}  # degenerate row: uniform over allowed
    assert stats.uniform_fallbacks == 300


def test_independent_sampling_follows_scores_and_is_distinct():
    scores = np.array([100.0, 1.0, -3.0, 0.0, 50.0])
    stats = SamplingStats()
    seqs = sample_independent(scores, 2000, 2, np.random.default_rng(0), stats)
    assert np.all(seqs[:, 0] != seqs[:, 1])
    assert set(np.unique(seqs)) <= {0, 1, 4}  # never a non-positive score
    first = np.bincount(seqs[:, 0], minlength=5) / 2000
    assert first[0] == pytest.approx(100 / 151, abs=0.04)
    # asking for more terms than have positive scores gives short sequences, flagged
    short = sample_independent(scores, 10, 4, np.random.default_rng(0), stats)
    assert np.all(short[:, 3] == -1) and stats.short_sequences == 10


def test_contrastive_candidates_prefer_class_specific_terms():
    uni = {"a": np.array([10.0, 10.0, 1.0, -1.0]), "b": np.array([10.0, 0.5, 10.0, -1.0])}
    cands = candidate_sets(uni, "contrastive", keep=0.25)
    assert cands["a"].tolist() == [1] and cands["b"].tolist() == [2]
    assert candidate_sets(uni, "proportional", 0.25)["a"].tolist() == [0, 1, 2, 3]


def _two_cluster_setup(kde_noise, epsilon):
    """Classes a/b whose documents are word pairs from two disjoint clusters."""
    emb = unit_vectors(40, seed=5)
    emb[:20] += 2.0 * emb[0]
    emb[20:] += 2.0 * emb[20]
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    rng = np.random.default_rng(0)
    docs = {"a": [rng.choice(20, 4, replace=False) for _ in range(300)],
            "b": [20 + rng.choice(20, 4, replace=False) for _ in range(300)]}
    blocks = ensemble_blocks("iterative", 4, "log")
    feats = [FourierFeatures.draw(D, b, 500, 0.5, rng) for b in blocks]
    ledger = PrivacyLedger()
    noise = NoiseSpec(kde_noise, epsilon, 1e-5 if kde_noise == "gaussian" else 0.0)
    return emb, release_sketches(docs, emb, feats, noise, ledger, max_windows=4), ledger


def test_iterative_sampling_recovers_class_structure():
    emb, sk, ledger = _two_cluster_setup("gaussian", 8.0)
    stats = SamplingStats()
    seqs = sample_iterative(sk, "a", emb, np.arange(40), 200, 4, np.random.default_rng(1), stats)
    assert all(len(set(row)) == 4 for row in seqs.tolist())  # distinct within a sequence
    assert np.mean(seqs[:, 0] < 20) > 0.95  # class a's terms
    assert np.mean(seqs < 20) > 0.75
    g = ledger.guarantee()
    assert g.epsilon == pytest.approx(8.0, rel=1e-6)  # two classes in parallel cost ε once
    assert len(ledger.releases) == 2


def test_noise_really_enters_the_sketch():
    _, sk1, _ = _two_cluster_setup("laplace", 0.01)
    _, sk2, _ = _two_cluster_setup("laplace", 0.01)
    assert not np.allclose(sk1.sums["a"][0], sk2.sums["a"][0])


# ------------------------------------------------------------------ statistical tests
def _worst_case_features(emb_adv: np.ndarray, blocks: int, features: int) -> FourierFeatures:
    """Features whose β puts the planted document at f = +√2 on every coordinate."""
    ff = FourierFeatures.draw(D, blocks, features, 1.0, np.random.default_rng(11))
    phase = sum(ff.block_phase(emb_adv[b:b + 1], b)[0] for b in range(blocks))
    return FourierFeatures(ff.omega, (-phase).astype(np.float32) % np.float32(2 * np.pi), 1.0)


@pytest.mark.parametrize("blocks", [1, 2])
def test_neighbouring_sums_never_differ_by_more_than_the_stated_sensitivity(blocks):
    """A document's contribution is computed on its own, in float64, clamped to its bound,
    and the contributions are summed exactly: D and D ± one document differ by at most the
    stated sensitivity, with no rounding slack, even for large sums (float32
    accumulation, as before, overshot the bound)."""
    emb = unit_vectors(40, seed=5)
    planted = np.arange(7, 7 + blocks)
    ff = _worst_case_features(emb[planted], blocks, 256)  # the planted document hits +√2
    rng = np.random.default_rng(0)
    base = [rng.choice(np.arange(9, 40), size=int(rng.integers(1, 10)), replace=False)
            for _ in range(3000)]
    sens = sketch_sensitivity([ff])
    before = exact_sums(base, emb, [ff], max_windows=8)[0]
    assert np.max(np.abs(before)) > 100  # large sums: where float32 rounding bites
    for where in (len(base), 0, 1234):  # appended, first, in the middle (batches shift)
        after = exact_sums([*base[:where], planted, *base[where:]], emb, [ff],
                           max_windows=8)[0]
        diff = after - before
        assert np.max(np.abs(diff)) <= FEATURE_BOUND
        assert np.sum(np.abs(diff)) <= sens.l1
        assert np.linalg.norm(diff) <= sens.l2
        assert np.max(diff) > FEATURE_BOUND - 1e-6  # the planted document reaches the bound
        # the difference is exactly the planted document's own (clamped) contribution
        own = document_contributions([planted], emb, ff, max_windows=8)[0]
        assert np.array_equal(diff, own)


def _sketch_samples(noise: NoiseSpec, features: int, runs: int, classes: int = 250):
    """Released sketches on D and on D' = D + one planted document per class.

    Classes hold disjoint documents, so each class's sketch is an independent draw of
    the neighbouring pair: ``classes`` samples per run.
    """
    emb = unit_vectors(10, seed=9)
    ff = _worst_case_features(emb[[7, 8]], 2, features)
    base = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5])]
    planted = np.array([7, 8])
    d = {c: base for c in range(classes)}
    d_prime = {c: [*base, planted] for c in range(classes)}
    out = {}
    for name, corpus in (("D", d), ("D'", d_prime)):
        draws = []
        for _ in range(runs):
            sk = release_sketches(corpus, emb, [ff], noise, PrivacyLedger(), max_windows=4)
            draws.extend(np.sum(sk.sums[c][0]) for c in range(classes))  # projection on the shift
        out[name] = np.asarray(draws)
    return out["D"], out["D'"]


@pytest.mark.statistical
def test_kde_sketch_laplace_within_claim_and_catches_half_noise(monkeypatch):
    eps = 1.0
    a, b = _sketch_samples(NoiseSpec("laplace", eps), features=1, runs=40)
    honest = epsilon_lower_bound(a, b).epsilon_lower_bound
    assert 0.4 * eps < honest <= eps
    broken = mechanisms._laplace
    monkeypatch.setattr(mechanisms, "_laplace",
                        lambda size, l1, e: (broken(size, l1, 2 * e)[0], l1 / e, e))
    a, b = _sketch_samples(NoiseSpec("laplace", eps), features=1, runs=40)
    assert epsilon_lower_bound(a, b).epsilon_lower_bound > eps


@pytest.mark.statistical
def test_kde_sketch_gaussian_within_claim_and_catches_half_noise(monkeypatch):
    eps, delta = 4.0, 1e-3
    a, b = _sketch_samples(NoiseSpec("gaussian", eps, delta), features=8, runs=40)
    honest = epsilon_lower_bound(a, b, delta=delta).epsilon_lower_bound
    assert 1.0 < honest <= eps
    broken = mechanisms._gaussian
    monkeypatch.setattr(mechanisms, "_gaussian",
                        lambda size, l2, e, dl: broken(size, l2 / 2, e, dl))
    a, b = _sketch_samples(NoiseSpec("gaussian", eps, delta), features=8, runs=40)
    assert epsilon_lower_bound(a, b, delta=delta).epsilon_lower_bound > eps
