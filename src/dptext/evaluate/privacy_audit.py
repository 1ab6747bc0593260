"""Privacy audits of DP-KPS's mechanisms and of the whole pipeline (``dptext audit``).

Each audit runs the real code path many times on a corpus D and on D' = D plus one
adversarial document, reduces every output to a statistic chosen by an auditor who
knows D, the adversarial document and all public randomness, and hands the samples
to ``dptext.privacy.auditing`` (ε lower bound + hockey-stick test at the claimed ε).

* ``laplace`` / ``gaussian``: the noise mechanisms (``privacy.release``).
* ``vocabulary``: the DP vocabulary histogram (``KeyphraseSeeder``'s first release);
  the adversarial document holds 2·S terms, of which the first S may count.
* ``labels``: the DP label histogram.
* ``label-set``: the DP label set (``privacy.labels``: thresholded noisy counts, the
  partition selection made when labels are not declared); see ``audit_label_set``.
* ``kde``: the per-class KDE sketch sums, with random features chosen so that the
  adversarial document hits the √2 per-coordinate bound (the worst case).
* ``dpkps``: ``KeyphraseSeeder.fit`` + ``sample`` end to end on a small labelled
  corpus; the statistics are read from what the fit keeps (its released state):
  the KDE sketch of the adversarial document's class and the rank of its term in
  the released vocabulary. The claimed ε is the one the run's ledger reports.

Samples come from the runs; the default sizes keep the whole audit near a minute.
"""

from __future__ import annotations

import hashlib
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from dptext.corpus import Corpus
from dptext.kde.rff import FEATURE_BOUND, FourierFeatures
from dptext.kde.sketch import release_sketches
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.privacy.auditing import (
    AuditRow,
    audit_gaussian,
    audit_laplace,
    audit_statistics,
    broken_noise,
    observe_releases,
)
from dptext.text.vocabulary import PublicVocabulary

AUDITS = ("laplace", "gaussian", "vocabulary", "labels", "kde", "kde-gaussian", "dpkps",
          "label-set")


@dataclass(frozen=True)
class HashEmbedder:
    """A deterministic stand-in embedder (unit vectors from a hash of the phrase).

    Public and data-independent, like a real model; it keeps audits fast.
    """

    dim_: int = 16
    name: str = "audit-hash"

    @property
    def dim(self) -> int:
        return self.dim_

    def encode(self, phrases: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        out = np.empty((len(phrases), self.dim_), dtype=np.float32)
        for i, p in enumerate(phrases):
            seed = int.from_bytes(hashlib.sha256(p.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim_)
            out[i] = v / np.linalg.norm(v)
        return out


def _terms(n: int) -> tuple[str, ...]:
    return tuple(f"t{i:03d}" for i in range(n))


# ------------------------------------------------------------------ vocabulary histogram
def audit_vocabulary(epsilon: float = 1.0, *, runs: int = 2000, terms_per_doc: int = 3,
                     confidence: float = 0.95, broken: str = "none") -> AuditRow:
    from dptext.generators.kps import KeyphraseSeeder

    started = time.perf_counter()
    vocab = PublicVocabulary("audit", _terms(40))
    rng = np.random.default_rng(0)
    base = [" ".join(rng.choice(vocab.terms[:20], 5, replace=False)) for _ in range(30)]
    adversary_terms = list(vocab.terms[30:30 + 2 * terms_per_doc])  # 2·S terms: only S may count
    d = Corpus(tuple(base))
    d_prime = Corpus((*base, " ".join(adversary_terms)))
    seeder = KeyphraseSeeder(vocab=vocab, epsilon_vocab=epsilon, vocab_noise="laplace",
                             terms_per_doc=terms_per_doc, vocab_size=len(vocab),
                             vocab_noise_terms=len(vocab), length=1)
    firsts = vocab.extractor().extract_many(d.texts, max_terms=terms_per_doc, distinct=True)
    exact_d = np.bincount(np.concatenate(firsts), minlength=len(vocab)).astype(np.float64)
    # the first S distinct terms are what the contribution bound lets through
    adv = np.array([vocab.terms.index(t) for t in adversary_terms[:terms_per_doc]])
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    claimed = None
    with broken_noise(broken), _quiet_block():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                seeder.ledger_ = PrivacyLedger()
                with observe_releases() as seen:
                    seeder._release_vocabulary(corpus, vocab)
                noisy = seen[0][2]
                # Laplace likelihood ratio for a +1 shift on each of the adversary's terms
                samples[name].append(float(np.sum(np.clip(noisy[adv] - exact_d[adv], 0, 1))))
                claimed = seeder.ledger_.guarantee()
    return audit_statistics(
        f"vocabulary histogram (S = {terms_per_doc}, Laplace)",
        [(np.array(samples["D"]), np.array(samples["D'"]),
          "Laplace log-likelihood ratio over the adversary's first S terms")],
        epsilon=claimed.epsilon, delta=claimed.delta, confidence=confidence, started=started,
        broken=broken)


class _quiet_block:
    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


# ------------------------------------------------------------------ label histogram
def audit_label_counts(epsilon: float = 1.0, *, runs: int = 3000, confidence: float = 0.95,
                       broken: str = "none") -> AuditRow:
    from dptext.generators.kps import KeyphraseSeeder

    started = time.perf_counter()
    texts = tuple(f"t{i:03d}" for i in range(20))
    labels = tuple("a" if i < 8 else "b" for i in range(20))
    d = Corpus(texts, labels)
    d_prime = Corpus((*texts, "t001"), (*labels, "a"))
    seeder = KeyphraseSeeder(epsilon_labels=epsilon)
    samples: dict[str, list[float]] = {"D": [], "D'": []}
    with broken_noise(broken):
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                seeder.ledger_ = PrivacyLedger()
                with observe_releases() as seen:
                    seeder._release_label_counts(corpus, ["a", "b"])
                samples[name].append(float(seen[0][2][0]))
    claimed = seeder.ledger_.guarantee()
    return audit_statistics("label histogram (Laplace)",
                            [(np.array(samples["D"]), np.array(samples["D'"]),
                              "noisy count of the adversary's class")],
                            epsilon=claimed.epsilon, delta=claimed.delta, confidence=confidence,
                            started=started, broken=broken)


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
    emb = HashEmbedder().encode(_terms(10))
    ff = _worst_case_features(emb[[7, 8]], features)
    base = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5])]
    planted = np.array([7, 8])
    samples = {}
    ledger = PrivacyLedger()
    with broken_noise(broken):
        for name, docs in (("D", base), ("D'", [*base, planted])):
            draws: list[float] = []
            for _ in range(runs):
                ledger = PrivacyLedger()
                sk = release_sketches(dict.fromkeys(range(classes), docs), emb, [ff], spec,
                                      ledger, max_windows=4)
                # the shift is +√2 on every coordinate: the projection on it is the
                # likelihood ratio for Gaussian noise (and the coordinate itself for I = 1)
                draws.extend(float(np.sum(sk.sums[c][0])) for c in range(classes))
            samples[name] = np.asarray(draws)
    claimed = ledger.guarantee()
    return audit_statistics(
        f"KDE sketch sums ({noise}, I = {features}, worst-case features)",
        [(samples["D"], samples["D'"], "projection on the adversary's feature vector")],
        epsilon=claimed.epsilon, delta=claimed.delta, confidence=confidence, started=started,
        broken=broken)


# ------------------------------------------------------------------ DP-KPS end to end
def _e2e_setup():
    vocab = PublicVocabulary("audit", _terms(40))
    rng = np.random.default_rng(1)
    texts, labels = [], []
    for label, lo in (("a", 0), ("b", 10)):
        for _ in range(12):
            texts.append(" ".join(rng.choice(vocab.terms[lo:lo + 10], 4, replace=False)))
            labels.append(label)
    canary = vocab.terms[35]
    return vocab, Corpus(tuple(texts), tuple(labels)), canary


def _worst_case_seed(embedder: HashEmbedder, canary: str, bandwidth: float) -> tuple[int, float]:
    """A seed for the run's public randomness whose single random feature puts the canary
    document near the √2 bound (the auditor may pick the worst public randomness)."""
    x = embedder.encode([canary])
    for seed in range(10_000):
        ff = FourierFeatures.draw(embedder.dim, 1, 1, bandwidth, np.random.default_rng(seed))
        f = float(ff.feature_values(ff.block_phase(x, 0))[0, 0])
        if abs(f) > 0.99 * FEATURE_BOUND:
            return seed, math.copysign(1.0, f)
    raise RuntimeError("no worst-case seed found")  # pragma: no cover


def audit_dpkps(epsilon_vocab: float = 0.5, epsilon_kde: float = 1.5, *, runs: int = 1500,
                confidence: float = 0.95, broken: str = "none") -> AuditRow:
    """The whole DP-KPS fit (+ sampling) on D and on D' = D + one canary document."""
    from dptext.generators.kps import KeyphraseSeeder

    started = time.perf_counter()
    vocab, d, canary = _e2e_setup()
    d_prime = Corpus((*d.texts, canary), (*d.labels, "a"))
    embedder = HashEmbedder()
    bandwidth = 1.0
    seed, sign = _worst_case_seed(embedder, canary, bandwidth)
    params = dict(vocab=vocab, embedder=embedder, epsilon_vocab=epsilon_vocab,
                  epsilon_kde=epsilon_kde, vocab_noise="laplace", kde_noise="laplace",
                  terms_per_doc=4, vocab_size=len(vocab), vocab_noise_terms=len(vocab),
                  method="independent", length=2, features=1, bandwidth=bandwidth,
                  sampling="proportional", labels=("a", "b"), cache_dir=None,
                  model="kde", select="none")  # the paper's path, which this row audits
    kde_stat: dict[str, list[float]] = {"D": [], "D'": []}
    rank_stat: dict[str, list[float]] = {"D": [], "D'": []}
    claimed = None
    with broken_noise(broken), _quiet_block():
        for name, corpus in (("D", d), ("D'", d_prime)):
            for _ in range(runs):
                seeder = KeyphraseSeeder(**params).fit(corpus, rng=np.random.default_rng(seed))
                seeder.sample(1, rng=np.random.default_rng(0))  # the pipeline runs to the end
                kde_stat[name].append(sign * float(seeder.sketches_.sums["a"][0][0]))
                rank_stat[name].append(-float(seeder.released_vocabulary_.index(canary)))
                claimed = seeder.ledger_.guarantee()
    return audit_statistics(
        "DP-KPS end to end (Laplace vocabulary + Laplace KDE)",
        [(np.array(kde_stat["D"]), np.array(kde_stat["D'"]),
          "released sketch of the canary's class"),
         (np.array(rank_stat["D"]), np.array(rank_stat["D'"]),
          "rank of the canary term in the released vocabulary")],
        epsilon=claimed.epsilon, delta=claimed.delta, confidence=confidence, started=started,
        broken=broken)


# ------------------------------------------------------------------ DP label set
LABEL_SET_BROKEN = ("none", "half-noise", "no-threshold")


@contextmanager
def _broken_label_set(variant: str) -> Iterator[None]:
    """The label set's negative controls: ``half-noise`` (half the σ, the full one claimed)
    and ``no-threshold`` (every label whose noisy count is positive is released)."""
    from dptext.privacy import labels as mod

    if variant not in LABEL_SET_BROKEN:
        raise ValueError(f"broken variant must be one of {', '.join(LABEL_SET_BROKEN)}; "
                         f"got {variant!r}")
    if variant == "none":
        yield
        return
    honest = mod._threshold_measurement

    def broken(kind, k, epsilon, delta, threshold_delta):
        cal = honest(kind, k, epsilon, delta, threshold_delta)
        scale, threshold = (cal.scale / 2, cal.threshold) if variant == "half-noise" \
            else (cal.scale, 0.0)
        return replace(cal, measurement=mod._make(kind, scale, threshold))

    mod._threshold_measurement = broken
    try:
        yield
    finally:
        mod._threshold_measurement = honest


def audit_label_set(epsilon: float = 4.0, delta: float = 1e-3, *, samples: int = 20_000,
                    count: int = 20, confidence: float = 0.95,
                    broken: str = "none") -> AuditRow:
    """The DP label set (Gaussian, as with the defaults), two neighbouring pairs:

    * a label of ``count`` documents against ``count`` + 1 (always released): its
      noisy count, the noise's likelihood ratio — catches too little noise;
    * a label absent against one held by a single document: its noisy count if it is
      released, 0 if not — catches a missing or too low threshold.

    Labels are independent partitions of one release, so one release of 2·``samples``
    labels gives ``samples`` draws of each side (as ``auditing._shifted_release``).
    The claim is the ledger's: the noise's (ε, δ) plus the threshold's δ."""
    from dptext.privacy.labels import release_label_set, standalone_spec

    started = time.perf_counter()
    spec = standalone_spec("gaussian", epsilon, delta)
    names = [f"c{i}" for i in range(samples)]
    d = [lab for lab in names for _ in range(count)]
    ones = [f"one{i}" for i in range(samples)]
    d_prime = [*d, *names, *ones]  # every label one document more, and labels of one
    ledger = PrivacyLedger()
    with _broken_label_set(broken):
        out_d = release_label_set(d, spec, ledger=ledger).counts["label"]
        out_p = release_label_set(d_prime, spec, ledger=ledger).counts["label"]
    low = np.array([out_d.get(x, 0.0) for x in names])  # `count` documents
    high = np.array([out_p.get(x, 0.0) for x in names])  # `count` + 1
    absent = np.array([out_d.get(x, 0.0) for x in ones])  # never in D
    once = np.array([out_p.get(x, 0.0) for x in ones])  # one document in D'
    claimed = PrivacyLedger(releases=ledger.releases[:1]).guarantee()  # one release's claim
    return audit_statistics(
        "DP label set (Gaussian partition selection)",
        [(low, high, f"noisy count of a label of {count} vs {count} + 1 documents"),
         (absent, once, "a label of one document: its noisy count if released, else 0")],
        epsilon=claimed.epsilon, delta=claimed.delta, confidence=confidence,
        started=started, broken=broken)


def run_audits(which: Sequence[str] = AUDITS, *, scale: float = 1.0, broken: str = "none",
               confidence: float = 0.95,
               progress: Callable[[str], None] | None = None) -> list[AuditRow]:
    """Run the named audits; ``scale`` multiplies every sample count (``--runs``)."""
    unknown = sorted(set(which) - set(AUDITS))
    if unknown:
        raise ValueError(f"unknown audits {unknown}; choose from {', '.join(AUDITS)}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the run scale must be a positive number, got {scale!r}")

    def n(x: int) -> int:
        return max(20, round(x * scale))

    table = {
        "laplace": lambda: audit_laplace(samples=n(20_000), confidence=confidence, broken=broken),
        "gaussian": lambda: audit_gaussian(samples=n(20_000), confidence=confidence,
                                           broken=broken),
        "vocabulary": lambda: audit_vocabulary(runs=n(2000), confidence=confidence,
                                               broken=broken),
        "labels": lambda: audit_label_counts(runs=n(3000), confidence=confidence,
                                             broken=broken),
        "kde": lambda: audit_kde(runs=max(1, round(12 * scale)), confidence=confidence,
                                 broken=broken),
        # Gaussian at δ = 1e-3 needs ~10,000 samples a side to see half the noise reliably
        "kde-gaussian": lambda: audit_kde("gaussian", runs=max(1, round(40 * scale)),
                                          confidence=confidence, broken=broken),
        "dpkps": lambda: audit_dpkps(runs=n(1500), confidence=confidence, broken=broken),
        "label-set": lambda: audit_label_set(samples=n(20_000), confidence=confidence,
                                             broken=broken),
    }
    rows = []
    for name in which:
        if progress:
            progress(name)
        rows.append(table[name]())
    return rows
