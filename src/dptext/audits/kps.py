"""Audits of DP-KPS's releases and of the whole DP-KPS fit.

* ``audit_vocabulary``: the DP vocabulary histogram (``kps.release_vocabulary``), Laplace
  (the paper's) or Gaussian (the default); the adversarial document holds 2·S terms, of
  which the first S may count.
* ``audit_label_counts``: the DP label histogram.
* ``audit_kde``: the per-class KDE sketch sums, with random features chosen so that the
  adversarial document hits the √2 per-coordinate bound (the worst case).
* ``audit_dpkps``: ``KeyphraseSeeder.fit`` + ``sample`` end to end in the paper's setting
  (Laplace vocabulary + Laplace KDE, per-stage ε, one feature).
* ``audit_dpkps_defaults``: the same with the defaults — one total ``epsilon`` split by
  ``split_budget``, Gaussian vocabulary and Gaussian sketches, the ``independent`` or the
  ``iterative`` sampling method (log ensemble) — on a small vocabulary with one feature per
  sketch so that thousands of fits run in seconds. The statistic is the Gaussian
  likelihood ratio of the composed releases (vocabulary histogram and the canary class's
  sketches), so the audit sees the composition's μ, not one stage's.

The claimed ε is always the one the run's ledger reports.
"""

from __future__ import annotations

import time

import numpy as np

from dptext.audits.common import (
    audit_claim,
    canary_copies,
    gaussian_llr,
    memoised_calibration,
    quiet,
    terms,
)
from dptext.corpus import Corpus
from dptext.embed.hashing import HashEmbedder
from dptext.kde.rff import FEATURE_BOUND, FourierFeatures
from dptext.kde.sketch import ensemble_blocks, exact_sums, release_sketches
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.privacy.auditing import AuditRow, broken_noise, observe_releases
from dptext.text.vocabulary import PublicVocabulary


# ------------------------------------------------------------------ vocabulary histogram
def audit_vocabulary(noise: str = "laplace", epsilon: float | None = None, delta: float = 1e-3,
                     *, runs: int = 2000, terms_per_doc: int = 3, confidence: float = 0.95,
                     broken: str = "none") -> AuditRow:
    """``release_vocabulary`` on D and on D' = D + a document of 2·S new terms (the first S
    may count). Laplace: the clipped likelihood ratio over those S terms; Gaussian: the
    projection of the noisy histogram on them (its likelihood ratio)."""
    from dptext.generators.kps.releases import release_vocabulary

    started = time.perf_counter()
    if epsilon is None:
        epsilon = 1.0 if noise == "laplace" else 2.0
    spec = NoiseSpec(noise, epsilon, delta if noise == "gaussian" else 0.0)
    vocab = PublicVocabulary("audit", terms(40))
    rng = np.random.default_rng(0)
    base = [" ".join(rng.choice(vocab.terms[:20], 5, replace=False)) for _ in range(30)]
    adversary_terms = list(vocab.terms[30:30 + 2 * terms_per_doc])  # 2·S terms: only S may count
    copies = canary_copies(broken)
    d = Corpus(tuple(base))
    d_prime = Corpus((*base, *[" ".join(adversary_terms)] * copies))
    firsts = vocab.extractor().extract_many(d.texts, max_terms=terms_per_doc, distinct=True)
    exact_d = np.bincount(np.concatenate(firsts), minlength=len(vocab)).astype(np.float64)
    # the first S distinct terms are what the contribution bound lets through
    adv = np.array([vocab.terms.index(t) for t in adversary_terms[:terms_per_doc]])
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = PrivacyLedger()
    with broken_noise(broken), quiet():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                ledger = PrivacyLedger()
                with observe_releases() as seen:
                    release_vocabulary(corpus.texts, vocab, spec, ledger,
                                       terms_per_doc=terms_per_doc, size=len(vocab),
                                       noise_terms=len(vocab), min_terms=1)
                shift = seen[0][2][adv] - exact_d[adv]
                # Laplace: likelihood ratio of a +copies shift on each of the S terms;
                # Gaussian: the projection on the shift (its likelihood ratio)
                samples[name].append(float(np.sum(np.clip(shift, 0, copies))
                                           if noise == "laplace" else np.sum(shift)))
    return audit_claim(
        ledger, f"vocabulary histogram (S = {terms_per_doc}, {noise})",
        [(np.array(samples["D"]), np.array(samples["D'"]),
          "likelihood ratio over the adversary's first S terms")],
        confidence=confidence, started=started, broken=broken)


# ------------------------------------------------------------------ label histogram
def audit_label_counts(epsilon: float = 1.0, *, runs: int = 3000, confidence: float = 0.95,
                       broken: str = "none") -> AuditRow:
    from dptext.generators.kps.releases import release_label_counts

    started = time.perf_counter()
    texts = tuple(f"t{i:03d}" for i in range(20))
    labels = tuple("a" if i < 8 else "b" for i in range(20))
    copies = canary_copies(broken)
    d = Corpus(texts, labels)
    d_prime = Corpus((*texts, *["t001"] * copies), (*labels, *["a"] * copies))
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    with broken_noise(broken):
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                ledger = PrivacyLedger()
                with observe_releases() as seen:
                    release_label_counts(corpus, ["a", "b"], epsilon, ledger)
                samples[name].append(float(seen[0][2][0]))
    return audit_claim(ledger, "label histogram (Laplace)",
                       [(np.array(samples["D"]), np.array(samples["D'"]),
                         "noisy count of the adversary's class")],
                       confidence=confidence, started=started, broken=broken)


# ------------------------------------------------------------------ KDE sketches
def _worst_case_features(emb_adv: np.ndarray, features: int) -> FourierFeatures:
    """Features whose β puts the adversarial document at f = +√2 on every coordinate."""
    blocks = emb_adv.shape[0]
    ff = FourierFeatures.draw(emb_adv.shape[1], blocks, features, 1.0, np.random.default_rng(11))
    phase = sum(ff.block_phase(emb_adv[b:b + 1], b)[0] for b in range(blocks))
    return FourierFeatures(ff.omega, (-phase).astype(np.float32) % np.float32(2 * np.pi), 1.0)


def audit_kde(noise: str = "laplace", epsilon: float | None = None, delta: float = 1e-3, *,
              runs: int = 12, classes: int = 250, confidence: float = 0.95,
              broken: str = "none") -> AuditRow:
    """Per-class sketches of disjoint documents are independent draws of the neighbouring
    pair, so each run gives ``classes`` samples per side (parallel composition)."""
    started = time.perf_counter()
    if epsilon is None:
        epsilon = 1.0 if noise == "laplace" else 4.0
    spec = NoiseSpec(noise, epsilon, delta if noise == "gaussian" else 0.0)
    features = 1 if noise == "laplace" else 8
    emb = HashEmbedder().encode(terms(10))
    ff = _worst_case_features(emb[[7, 8]], features)
    base = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5])]
    planted = [np.array([7, 8])] * canary_copies(broken)
    samples = {}
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for name, docs in (("D", base), ("D'", [*base, *planted])):
            draws: list[float] = []
            for _ in range(runs):
                ledger = PrivacyLedger()
                sk = release_sketches(dict.fromkeys(range(classes), docs), emb, [ff], spec,
                                      ledger, max_windows=4)
                # the shift is +√2 on every coordinate: the projection on it is the
                # likelihood ratio for Gaussian noise (and the coordinate itself for I = 1)
                draws.extend(float(np.sum(sk.sums[c][0])) for c in range(classes))
            samples[name] = np.asarray(draws)
    return audit_claim(
        ledger, f"KDE sketch sums ({noise}, I = {features}, worst-case features)",
        [(samples["D"], samples["D'"], "projection on the adversary's feature vector")],
        confidence=confidence, started=started, broken=broken)


# ------------------------------------------------------------------ DP-KPS end to end
def _e2e_setup():
    vocab = PublicVocabulary("audit", terms(40))
    rng = np.random.default_rng(1)
    texts, labels = [], []
    for label, lo in (("a", 0), ("b", 10)):
        for _ in range(12):
            texts.append(" ".join(rng.choice(vocab.terms[lo:lo + 10], 4, replace=False)))
            labels.append(label)
    canary = vocab.terms[35]
    return vocab, Corpus(tuple(texts), tuple(labels)), canary


def _with_canary(d: Corpus, canary: str, broken: str) -> Corpus:
    copies = canary_copies(broken)
    return Corpus((*d.texts, *[canary] * copies), (*d.labels, *["a"] * copies))


def _canary_features(embedder, canary: str, blocks: tuple[int, ...], features: int,
                     bandwidth: float, tries: int = 20_000) -> tuple[int, list[np.ndarray]]:
    """A seed for the run's public randomness (the random features, drawn in ``fit`` from
    that seed) under which the canary document moves its class's sketches nearly as far as
    the stated sensitivity allows (|f| > 0.95·√2 on every coordinate), and the canary's
    exact contribution to each sketch. The auditor may pick the worst public randomness."""
    x = embedder.encode([canary])
    seq = [np.array([0])]
    for seed in range(tries):
        rng = np.random.default_rng(seed)
        ff = [FourierFeatures.draw(embedder.dim, b, features, bandwidth, rng) for b in blocks]
        contrib = exact_sums(seq, x, ff, max_windows=8)
        if all(np.all(np.abs(c) > 0.95 * FEATURE_BOUND) for c in contrib):
            return seed, contrib
    raise RuntimeError("no worst-case seed found")  # pragma: no cover


def audit_dpkps(epsilon_vocab: float = 0.5, epsilon_kde: float = 1.5, *, runs: int = 1500,
                confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The whole DP-KPS fit (+ sampling) on D and on D' = D + one canary document, in the
    paper's setting (Laplace + Laplace, per-stage ε, one feature)."""
    from dptext.generators.kps import KeyphraseSeeder

    started = time.perf_counter()
    vocab, d, canary = _e2e_setup()
    d_prime = _with_canary(d, canary, broken)
    embedder = HashEmbedder()
    bandwidth = 1.0
    seed, contrib = _canary_features(embedder, canary, (1,), 1, bandwidth)
    sign = float(np.sign(contrib[0][0]))
    params = dict(vocab=vocab, embedder=embedder, epsilon_vocab=epsilon_vocab,
                  epsilon_kde=epsilon_kde, vocab_noise="laplace", kde_noise="laplace",
                  terms_per_doc=4, vocab_size=len(vocab), vocab_noise_terms=len(vocab),
                  method="independent", length=2, features=1, bandwidth=bandwidth,
                  sampling="proportional", labels=("a", "b"), cache_dir=None,
                  model="kde", select="none")  # the paper's path, which this row audits
    kde_stat: dict[str, list[float]] = {"D": [], "D'": []}
    rank_stat: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = None
    with broken_noise(broken), quiet():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                # a made-up corpus: its releases are the audit's (no persistent budget)
                seeder = KeyphraseSeeder(**params).fit(corpus, rng=np.random.default_rng(seed),
                                                       ledger=PrivacyLedger())
                seeder.sample(1, rng=np.random.default_rng(0))  # the pipeline runs to the end
                kde_stat[name].append(sign * float(seeder.sketches_.sums["a"][0][0]))
                rank_stat[name].append(-float(seeder.released_vocabulary_.index(canary)))
                ledger = seeder.ledger_
    return audit_claim(
        ledger, "DP-KPS end to end (Laplace vocabulary + Laplace KDE)",
        [(np.array(kde_stat["D"]), np.array(kde_stat["D'"]),
          "released sketch of the canary's class"),
         (np.array(rank_stat["D"]), np.array(rank_stat["D'"]),
          "rank of the canary term in the released vocabulary")],
        confidence=confidence, started=started, broken=broken)


def audit_dpkps_defaults(method: str = "independent", epsilon: float = 2.0, delta: float = 1e-2,
                         *, runs: int = 3000, confidence: float = 0.95,
                         broken: str = "none") -> AuditRow:
    """``KeyphraseSeeder(epsilon=…)`` on its KDE path (``model="kde", select="none"``) with
    its default noise kinds, split and ensemble, fitted and sampled on D and on D' = D + a
    one-term canary document of class "a". (The default model since this row was written
    is the class × term histogram with a private selection: its releases are audited by
    ``tests/test_kps_models_privacy.py``.)

    S = 1 keeps the canary's vocabulary contribution at the stated sensitivity; one feature
    per sketch and a worst-case feature seed keep its sketch contribution near the bound.
    """
    from dptext.generators.kps import KeyphraseSeeder

    started = time.perf_counter()
    vocab, d, canary = _e2e_setup()
    d_prime = _with_canary(d, canary, broken)
    embedder = HashEmbedder()
    length = 4
    blocks = ensemble_blocks(method, length)
    seed, contrib = _canary_features(embedder, canary, blocks, 1, 1.0)
    params = dict(vocab=vocab, embedder=embedder, epsilon=epsilon, delta=delta,
                  terms_per_doc=1, vocab_size=len(vocab), vocab_noise_terms=len(vocab),
                  method=method, length=length, features=1, labels=("a", "b"),
                  model="kde", select="none", cache_dir=None)
    canary_index = vocab.terms.index(canary)
    vocab_shift = np.zeros(len(vocab))
    vocab_shift[canary_index] = 1.0
    kde_shift = np.concatenate(contrib)
    stat: dict[str, list[float]] = {"D": [], "D'": []}
    ledger = PrivacyLedger()
    with broken_noise(broken), quiet(), memoised_calibration():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                with observe_releases() as seen:
                    seeder = KeyphraseSeeder(**params).fit(
                        corpus, rng=np.random.default_rng(seed), ledger=PrivacyLedger())
                seeder.sample(1, rng=np.random.default_rng(0))  # the pipeline runs to the end
                ledger = seeder.ledger_
                sigma_vocab, sigma_kde = ledger.releases[0].noise_scale, \
                    ledger.releases[-1].noise_scale
                sketch = np.concatenate(seeder.sketches_.sums["a"])
                stat[name].append(gaussian_llr([seen[0][2], sketch], [vocab_shift, kde_shift],
                                               [sigma_vocab, sigma_kde]))
    return audit_claim(
        ledger, f"DP-KPS end to end, KDE path with default noise ({method}; Gaussian vocabulary + "
        f"Gaussian KDE, ε split)",
        [(np.array(stat["D"]), np.array(stat["D'"]),
          "likelihood ratio of the vocabulary histogram and the canary class's sketches")],
        confidence=confidence, started=started, broken=broken)
