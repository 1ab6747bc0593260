"""``pate``'s privacy pieces: the budget split meets ε through the ledger, one document
touches one teacher (keyed-hash shards), GNMax's vote release passes a privacy audit on
neighbouring corpora while its broken variants are caught, and the tutor's selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptext.generators.pate.plan import (
    TUTOR_SENSITIVITY,
    plan_noise,
    rdp_cross_check,
    vote_sensitivity,
)
from dptext.generators.pate.shards import deduplicate, new_salt, normalise, shard_of
from dptext.generators.pate.student import select, student_scores, tutor_counts
from dptext.generators.pate.teachers import gnmax, teacher_votes
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.privacy.auditing import audit_statistics, broken_noise


@pytest.mark.parametrize("epsilon", [1.0, 4.0, 8.0])
@pytest.mark.parametrize("tutor,vocab", [(True, False), (True, True), (False, False)])
def test_noise_plan_meets_epsilon_through_the_ledger(epsilon, tutor, vocab):
    queries, delta = 120, 1e-5
    specs = plan_noise(epsilon, delta, tutor=tutor, vocab=vocab, tutor_share=0.05,
                       vocab_share=0.2)
    assert set(specs) == {"votes"} | ({"tutor"} if tutor else set()) | (
        {"vocab"} if vocab else set())
    ledger = PrivacyLedger()
    gnmax(np.zeros((queries, 4)), specs["votes"], ledger)
    if tutor:
        release(np.zeros(3), TUTOR_SENSITIVITY, specs["tutor"], ledger=ledger, name="tutor")
    if vocab:
        release(np.zeros(50), Sensitivity(80, math.sqrt(80), "S = 80"), specs["vocab"],
                ledger=ledger, name="vocab")
    g = ledger.guarantee()
    assert g.delta == pytest.approx(delta)
    assert epsilon * 0.995 <= g.epsilon <= epsilon  # spent, and not a bit more
    vote = ledger.releases[0]
    assert vote.sensitivity == pytest.approx(math.sqrt(2 * queries))
    # the per-query RDP cross-check agrees within RDP's known looseness
    rdp = rdp_cross_check(ledger.releases, queries, vote.name, delta)
    assert g.epsilon <= rdp <= 1.25 * g.epsilon


def test_noise_plan_with_the_dp_label_set_meets_epsilon():
    from dptext.generators.pate.plan import planned_releases
    from dptext.privacy import compose

    specs = plan_noise(4.0, 1e-5, tutor=True, vocab=True, tutor_share=0.05, vocab_share=0.2,
                       label_set_share=0.1)
    assert specs["label set"].threshold_delta > 0
    planned = planned_releases(specs)
    assert planned[0].name == "label set"
    g = compose(planned)
    assert 3.98 <= g.epsilon <= 4.0 and g.delta == pytest.approx(1e-5)


def test_undeclared_label_error_names_no_private_value():
    from dptext.corpus import Corpus
    from dptext.generators.pate.generator import _classes
    from dptext.privacy.labels import PrivateValuesError

    c = Corpus(("a", "b"), ("sport", "Zebulon ward"))
    with pytest.raises(PrivateValuesError) as err:
        _classes(c, ("sport",))
    assert "Zebulon" not in str(err.value) and "Zebulon ward" in err.value.detail
    assert _classes(c, None) is None  # not declared: the DP label set decides
    assert _classes(Corpus(("a",)), None) == [None]


def test_plan_refuses_shares_that_leave_nothing_for_the_votes():
    with pytest.raises(ValueError, match="nothing for the teacher votes"):
        plan_noise(4.0, 1e-5, tutor=True, vocab=True, tutor_share=0.5, vocab_share=0.5)


def _teacher_sets(texts, labels, n, salt):
    texts, labels = deduplicate(texts, labels)
    shards = shard_of(texts, n, salt)
    pairs = list(zip(texts, labels, shards, strict=True))
    return [sorted((normalise(t), lab) for t, lab, s in pairs if s == m) for m in range(n)]


def test_one_added_document_changes_exactly_one_teachers_training_set():
    rng = np.random.default_rng(0)
    texts = [f"note {i} " + " ".join(rng.choice(list("abcdefgh"), 5)) for i in range(300)]
    labels = [str(i % 3) for i in range(300)]
    salt = new_salt()
    before = _teacher_sets(texts, labels, 25, salt)
    for k, added in enumerate(["a brand new note", texts[7].upper(), "another  new\tnote"]):
        # added first: assignment by position would shift every other document
        after = _teacher_sets([added, *texts], [str(k % 3), *labels], 25, salt)
        changed = [m for m in range(25) if before[m] != after[m]]
        if k == 1:  # a duplicate (up to case) of a document present: nothing changes
            assert labels[7] == "1" and changed == []
            continue
        assert len(changed) == 1
        m = changed[0]
        assert set(after[m]) - set(before[m]) == {(normalise(added), str(k % 3))}
    # the order of the corpus does not matter, and the salt does
    assert _teacher_sets(texts[::-1], labels[::-1], 25, salt) == before
    assert _teacher_sets(texts, labels, 25, new_salt()) != before


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_teacher_votes_move_by_at_most_one_vote_per_query():
    rng = np.random.default_rng(1)
    x_priv, y = _unit(rng.standard_normal((200, 16))), rng.integers(0, 3, 200)
    texts = [f"doc {i}" for i in range(200)]
    x_cand = _unit(rng.standard_normal((40, 16)))
    folds, queried = np.arange(40) % 2, np.arange(0, 40, 2)
    salt = new_salt()
    votes = teacher_votes(x_priv, y, shard_of(texts, 12, salt), 12, x_cand, folds, queried, 3)
    assert votes.shape == (20, 4) and np.all(votes.sum(axis=1) == 12)
    for j in range(5):  # neighbours: each document removed in turn
        keep = np.arange(200) != j * 31
        kept = [t for t, k in zip(texts, keep, strict=True) if k]
        v2 = teacher_votes(x_priv[keep], y[keep], shard_of(kept, 12, salt), 12, x_cand, folds,
                           queried, 3)
        diff = np.abs(v2 - votes)
        assert np.all(diff.sum(axis=1) <= 2)  # one vote moved: −1 in one bin, +1 in another
        assert np.linalg.norm(v2 - votes) <= vote_sensitivity(20).l2 + 1e-12


def test_query_budget_shapes_the_release():
    ledger = PrivacyLedger()
    spec = plan_noise(4.0, 1e-5, tutor=False, vocab=False, tutor_share=0, vocab_share=0)
    noisy = gnmax(np.zeros((7, 3)), spec["votes"], ledger)
    assert noisy.shape == (7, 3)
    r = ledger.releases[0]
    assert r.dimension == 21 and r.sensitivity == pytest.approx(math.sqrt(14))
    assert "7 queries" in r.name


def test_tutor_counts_and_selection():
    assert tutor_counts(np.array([30.2, -4.0, 10.1]), 8).tolist() == [6, 0, 2]
    assert tutor_counts(np.array([-1.0, -2.0]), 3).sum() == 3
    scores = np.array([[0.9, 0.8], [0.7, 0.95], [0.6, 0.1], [0.2, 0.3]])
    eligible = np.ones_like(scores, dtype=bool)
    eligible[1, 1] = False
    chosen = select(scores, eligible, np.array([2, 1]))
    assert chosen == [(0, 0), (1, 0), (3, 1)]  # each candidate once, counts respected


def test_student_learns_from_noisy_votes_only():
    rng = np.random.default_rng(2)
    centres = _unit(rng.standard_normal((3, 8)))
    x = _unit(centres[np.arange(60) % 3] + 0.1 * rng.standard_normal((60, 8)))
    votes = np.eye(3)[np.arange(60) % 3] * 20 + rng.normal(0, 3, (60, 3))
    scores = student_scores(x[:30], votes[:30], x)
    assert scores.shape == (60, 3)
    assert np.mean(np.argmax(scores[30:], axis=1) == np.arange(30, 60) % 3) > 0.9
    one = student_scores(x[:5], np.tile([0.0, 9.0, 0.0], (5, 1)), x)
    assert np.all(one[:, 1] == 1.0)


# ------------------------------------------------------------------ privacy audit
def _audit_votes(broken: str, samples: int = 5000):
    """D and D' = D plus one adversarial document placed on the queried candidate; the
    auditor knows both exact vote histograms and projects each noisy release on their
    difference (the likelihood-ratio statistic of a Gaussian shift)."""
    rng = np.random.default_rng(0)
    n_teachers, n_classes = 20, 2
    x_priv, y = _unit(rng.standard_normal((6, 8))), np.arange(6) % 2
    texts = [f"doc {i}" for i in range(6)]
    x_cand = _unit(rng.standard_normal((10, 8)))
    folds, queried = np.arange(10) % 2, np.array([0])
    salt = b"audit salt".ljust(32, b".")
    shards = shard_of(texts, n_teachers, salt)
    # the adversary picks a document that lands in an empty shard, on the queried text
    adv = next(f"adversary {k}" for k in range(1000)
               if shard_of([f"adversary {k}"], n_teachers, salt)[0] not in shards)
    adv_shard = int(shard_of([adv], n_teachers, salt)[0])
    x_n, y_n, s_n = np.vstack([x_priv, x_cand[:1]]), np.r_[y, 0], np.r_[shards, adv_shard]
    if broken == "two-shards":  # a broken sharding: the document trains two teachers
        other = next(m for m in range(n_teachers) if m not in s_n)
        x_n, y_n, s_n = np.vstack([x_n, x_cand[:1]]), np.r_[y_n, 0], np.r_[s_n, other]
    v_d = teacher_votes(x_priv, y, shards, n_teachers, x_cand, folds, queried, n_classes)
    v_n = teacher_votes(x_n, y_n, s_n, n_teachers, x_cand, folds, queried, n_classes)
    assert np.abs(v_n - v_d).sum() >= 2  # the adversary moved a vote: the audit has power
    direction = (v_n - v_d).ravel() / np.linalg.norm(v_n - v_d)
    spec = NoiseSpec("gaussian", 4.0, 1e-3)
    claimed = PrivacyLedger()
    gnmax(v_d, spec, claimed)
    out = {}
    with broken_noise("half-noise" if broken == "half-noise" else "none"):
        for name, v in (("D", v_d), ("D'", v_n)):
            out[name] = np.array([float((gnmax(v, spec, PrivacyLedger()) - v_d).ravel()
                                        @ direction) for _ in range(samples)])
    g = claimed.guarantee()
    return audit_statistics(f"GNMax votes ({broken})",
                            [(out["D"], out["D'"], "projection on the vote difference")],
                            epsilon=g.epsilon, delta=g.delta)


@pytest.mark.statistical
def test_gnmax_votes_audit_within_claim_and_broken_variants_caught():
    honest = _audit_votes("none")
    assert not honest.violation
    assert 0.5 < honest.epsilon_lower_bound <= honest.claimed_epsilon  # the audit has power
    # 5,000 samples cap the lower bound near the claim: half the noise sat at 4.1-4.8
    # against the claimed 4 in 8 repeats and missed once in CI (3.94); at 15,000 it sits
    # at 4.7-5.1 (8 of 8). A vote moved twice (two shards) behaves the same: 3.9-4.4 at
    # 5,000, 4.7-5.1 at 15,000 (5 of 5)
    assert _audit_votes("half-noise", samples=15_000).violation
    assert _audit_votes("two-shards", samples=15_000).violation
