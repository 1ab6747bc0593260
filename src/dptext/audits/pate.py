"""Audits of PATE's releases: the tutor's label histogram and the GNMax teacher votes.

The real code runs: ``plan_noise`` splits (ε, δ) between the tutor and the votes at the
default shares, ``deduplicate`` and ``shard_of`` (keyed hash) place documents in teacher
shards, ``teacher_votes`` trains the teachers and counts their votes, ``gnmax`` releases
them, and the tutor's histogram goes through ``release`` with ``TUTOR_SENSITIVITY`` as in
``PateGenerator``. D' adds one adversarial document, chosen so that it lands in a shard of its
own and sits on the queried candidate: its teacher's vote moves from "public" to its
class (the stated √2 per query), and its class count moves by 1.

Both exact outputs are deterministic, so the auditor computes them once for D and D' and
projects every noisy release on their difference (the Gaussian likelihood ratio).
``unbounded``: the document trains two teachers and is counted twice by the tutor.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from dptext.audits.common import audit_claim, canary_copies, gaussian_llr
from dptext.privacy import PrivacyLedger, release
from dptext.privacy.auditing import AuditRow, broken_noise

TEACHERS, CLASSES = 20, 2


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@lru_cache(maxsize=8)  # deterministic, and each call trains 2 × ``teachers`` classifiers
def _setup(copies: int, docs: int = 12, teachers: int = TEACHERS, words: str = "adversary"):
    """Exact tutor counts and vote histograms on D and on D' (``copies`` of the document),
    and the corpora: D's texts and labels, and the adversary's texts (class "0": ``words``
    and a number). Read-only: the results are shared between calls."""
    from dptext.generators.pate.shards import deduplicate, shard_of
    from dptext.generators.pate.teachers import teacher_votes

    rng = np.random.default_rng(0)
    texts = [f"doc {i}" for i in range(docs)]
    labels = [str(i % CLASSES) for i in range(docs)]
    emb = dict(zip(texts, _unit(rng.standard_normal((docs, 8))), strict=True))
    x_cand = _unit(rng.standard_normal((10, 8)))
    folds, queried = np.arange(10) % 2, np.array([0])
    salt = b"audit salt".ljust(32, b".")
    used = set(shard_of(texts, teachers, salt).tolist())
    # the adversary's document: a text that lands in an empty shard, on the queried candidate
    free = [t for t in (f"{words} {k}" for k in range(2000))
            if int(shard_of([t], teachers, salt)[0]) not in used]
    adversary = free[:copies]  # "unbounded": one document placed in two shards
    for t in adversary:
        emb[t] = x_cand[0]

    def exact(docs: list[str], labs: list[str]) -> tuple[np.ndarray, np.ndarray]:
        docs, labs = deduplicate(docs, labs)
        y = np.array([int(lab) for lab in labs])
        tutor = np.bincount(y, minlength=CLASSES).astype(np.float64)
        votes = teacher_votes(np.array([emb[t] for t in docs]), y,
                              shard_of(docs, teachers, salt), teachers, x_cand, folds,
                              queried, CLASSES)
        return tutor, votes

    on_d = exact(texts, labels)
    on_nb = exact([*texts, *adversary], [*labels, *["0"] * copies])
    return on_d, on_nb, (tuple(texts), tuple(labels), tuple(adversary))


def _specs(epsilon: float, delta: float):
    from dptext.generators.pate.generator import PateConfig
    from dptext.generators.pate.plan import plan_noise

    cfg = PateConfig(epsilon=epsilon, delta=delta)
    return plan_noise(epsilon, delta, tutor=True, vocab=False, tutor_share=cfg.tutor_share,
                      vocab_share=cfg.vocab_share)


def audit_pate(epsilon: float = 2.0, delta: float = 1e-2, *, runs: int = 3000,
               confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The composed PATE release (tutor histogram + GNMax votes) at the default split."""
    from dptext.generators.pate.plan import TUTOR_SENSITIVITY
    from dptext.generators.pate.teachers import gnmax

    started = time.perf_counter()
    specs = _specs(epsilon, delta)
    d_exact, nb_exact, _ = _setup(canary_copies(broken))
    honest_nb = _setup(1)[1] if broken == "unbounded" else nb_exact
    shifts = [honest_nb[0] - d_exact[0], honest_nb[1] - d_exact[1]]  # one document's move
    if np.abs(shifts[1]).sum() < 2:  # pragma: no cover - a broken setup, not a broken mechanism
        raise RuntimeError("the adversary moved no teacher vote: the audit would have no power")
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for name, (tutor, votes) in (("D", d_exact), ("D'", nb_exact)):
            for _ in range(runs):
                ledger = PrivacyLedger()
                noisy_tutor = release(tutor, TUTOR_SENSITIVITY, specs["tutor"], ledger=ledger,
                                      name="label histogram (tutor)")
                noisy_votes = gnmax(votes, specs["votes"], ledger)
                sigmas = [r.noise_scale for r in ledger.releases]
                samples[name].append(gaussian_llr(
                    [noisy_tutor - d_exact[0], noisy_votes - d_exact[1]], shifts, sigmas))
    return audit_claim(
        ledger, "PATE tutor histogram + GNMax votes (Gaussian, default split)",
        [(np.array(samples["D"]), np.array(samples["D'"]),
          "likelihood ratio of the tutor and vote releases")],
        confidence=confidence, started=started, broken=broken)


def audit_pate_tutor(epsilon: float = 8.0, delta: float = 1e-2, *, runs: int = 3000,
                     confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The tutor's label histogram alone, at the noise the default split gives it (its own
    small share of the run's budget): a tutor-only mistake would vanish in the composed row.
    The run's ε = 8 gives the tutor ε ≈ 1.2, which a few thousand samples can audit (at the
    tutor's share of ε = 2, ε ≈ 0.33, half the noise needs ~8,000 samples a side)."""
    from dptext.generators.pate.plan import TUTOR_SENSITIVITY

    started = time.perf_counter()
    spec = _specs(epsilon, delta)["tutor"]
    tutor = np.array([6.0, 6.0])
    neighbour = tutor + np.array([canary_copies(broken), 0.0])
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for name, exact in (("D", tutor), ("D'", neighbour)):
            for _ in range(runs):
                ledger = PrivacyLedger()
                noisy = release(exact, TUTOR_SENSITIVITY, spec, ledger=ledger,
                                name="label histogram (tutor)")
                samples[name].append(float(noisy[0]))
    return audit_claim(
        ledger, "PATE tutor histogram alone (Gaussian, its share of the split)",
        [(np.array(samples["D"]), np.array(samples["D'"]), "noisy count of the adversary's class")],
        confidence=confidence, started=started, broken=broken)
