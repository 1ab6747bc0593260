"""DP-KPS keyphrase engine: from a private corpus to DP keyphrase sequences.

``KeyphraseSeeder.fit`` makes every release of private information, each through
``dptext.privacy`` and into ``ledger_``:

0. unless ``labels`` declares the label set (public, free), the DP label set
   (``privacy.labels``: thresholded noisy label counts); documents whose label is
   not released are in no class and take part in no per-class release;
1. the DP vocabulary Ṽ (appendix B.1): each document's first S distinct public
   vocabulary terms, a noisy histogram over the whole public vocabulary, top N;
2. optionally a noisy label histogram (to size classes in proportion; without
   declared labels the label set's noisy counts serve, at no further cost);
3. per class, the noisy sums of random-Fourier-feature sketches of the documents'
   keyphrase sequences (one sketch, or the linear or logarithmic ensemble).

With a total ``epsilon`` every stage is inside the one split (``privacy/split.py``):
the ledger composes to that ε. ``sample`` only post-processes those releases, so it
can be called any number of times at no further privacy cost. Everything ``fit`` keeps
(``released_vocabulary_``, ``sketches_``, ``label_counts_``, ``label_set_``,
``class_signal_``) is released data or computed from it; the corpus is not retained,
and no exact private count is kept, printed or branched on.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dptext.corpus import Corpus, InputError
from dptext.kde.rff import FourierFeatures
from dptext.kde.sampler import (
    SAMPLING,
    SamplingStats,
    candidate_sets,
    sample_independent,
    sample_iterative,
    unigram_scores,
)
from dptext.kde.sketch import ENSEMBLES, ReleasedSketches, ensemble_blocks, release_sketches
from dptext.privacy import (
    NOISE_KINDS,
    NoiseSpec,
    PrivacyLedger,
    Release,
    Sensitivity,
    gaussian_noise_multiplier,
    release,
)
from dptext.privacy.labels import (
    LABEL_SET,
    ReleasedValues,
    check_declared,
    planned_value_set,
    release_label_set,
)
from dptext.privacy.split import split_budget, threshold_deltas

METHODS = ("independent", "iterative")
ASSUMED_KERNEL_CONTRAST = 0.1  # typical spread of kernel values between related/unrelated terms


def noise_floor(released: Release, size: int, false_terms: float) -> float:
    """Noisy count above which ≤ ``false_terms`` zero-count terms are expected to lie.

    Top-N of a noisy histogram over a large public vocabulary is mostly terms whose
    true count is 0 but whose noise is the largest of ``size`` draws. Keeping only
    terms above this floor is post-processing of the released histogram (no privacy
    cost) and uses only the recorded noise scale. ``false_terms >= size`` keeps all
    (the paper's plain top-N).
    """
    p = min(false_terms / size, 1.0)
    if p >= 0.5:
        return -math.inf
    if released.mechanism == "laplace":  # P(X > t) = exp(-t/b) / 2
        return released.noise_scale * math.log(1.0 / (2.0 * p))
    return released.noise_scale * float(stats.norm.isf(p))


def release_vocabulary(texts, vocab, noise: NoiseSpec, ledger: PrivacyLedger, *,
                       terms_per_doc: int, size: int, noise_terms: float,
                       min_terms: int) -> tuple[str, ...]:
    """The DP vocabulary Ṽ (appendix B.1): each document's first S distinct public terms,
    a noisy histogram over the public vocabulary (recorded in ``ledger``), the top
    ``size`` terms above the noise floor (at least ``min_terms`` of them)."""
    extractor = vocab.extractor()
    firsts = extractor.extract_many(texts, max_terms=terms_per_doc, distinct=True)
    counts = np.zeros(len(vocab), dtype=np.float64)
    if any(len(f) for f in firsts):
        flat = np.concatenate([np.asarray(f, dtype=np.int64) for f in firsts])
        counts = np.bincount(flat, minlength=len(vocab)).astype(np.float64)
    s = terms_per_doc
    sens = Sensitivity(l1=s, l2=math.sqrt(s),
                       reason=f"one document adds +1 to at most S={s} distinct terms")
    noisy = release(counts, sens, noise, ledger=ledger,
                    name=f"vocabulary histogram ({vocab.name})")
    top = np.argsort(-noisy, kind="stable")[:size]
    floor = noise_floor(ledger.releases[-1], len(vocab), noise_terms)
    kept = top[noisy[top] > floor]
    if kept.size < min_terms:  # too little signal: keep the top terms anyway
        warnings.warn(f"only {kept.size} vocabulary terms rise above the noise at "
                      f"{noise}; keeping the top {min_terms}. "
                      "Raise --epsilon-vocab or use a smaller public vocabulary.",
                      stacklevel=4)
        kept = top[:min_terms]
    return tuple(vocab.terms[i] for i in kept)


@dataclass(frozen=True)
class KeyphraseSequence:
    """One DP keyphrase sequence and the class it was drawn for."""

    label: str | None
    keyphrases: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "keyphrases": list(self.keyphrases)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KeyphraseSequence:
        return cls(label=d.get("label"), keyphrases=tuple(d["keyphrases"]))


@dataclass
class ClassSignal:
    """Expected signal-to-noise of a class's KDE scores, from released values only.

    ``documents`` is a DP estimate (the noisy label count of the label set or of the
    label histogram), never the exact class size; None when no count was released
    (declared labels without ``epsilon_labels``), and then ``snr`` is None too.
    """

    label: str | None
    documents: float | None
    snr: float | None


@dataclass
class KeyphraseSeeder:
    """DP-KPS estimator: ``fit`` on a private corpus, then ``sample`` sequences.

    Defaults were chosen by measurement on BBC News (docs/method.md, and
    ``benchmarks/bench_keyphrase_utility.py`` in docs/benchmarks.md); the paper's own
    setting is ``vocab_noise="laplace", kde_noise="laplace", terms_per_doc=10,
    sampling="proportional", vocab_noise_terms=inf, features=1000``.
    """

    vocab: Any = "english:20000"
    embedder: Any = "minilm"
    epsilon_vocab: float | None = 1.0
    epsilon_kde: float | None = 5.0
    delta: float = 1e-5
    epsilon: float | None = None  # total budget: overrides epsilon_vocab/epsilon_kde
    vocab_share: float = 0.5
    vocab_noise: str = "gaussian"
    kde_noise: str = "gaussian"
    terms_per_doc: int = 80
    vocab_size: int = 1000
    vocab_noise_terms: float = 10.0
    method: str = "independent"
    ensemble: str = "log"
    length: int = 10
    features: int = 4000
    bandwidth: float = 1.0
    sampling: str = "contrastive"
    contrastive_keep: float = 0.1
    max_terms_per_doc: int | None = None  # None: the sequence length L
    windows_per_doc: int = 8
    labels: tuple[str, ...] | None = None
    epsilon_labels: float = 0.0
    label_set_share: float = 0.1  # of a total epsilon, for the DP label set (undeclared labels)
    epsilon_label_set: float = 1.0  # the label set's ε with per-stage epsilon_vocab/epsilon_kde
    cache_dir: Any = None

    # fitted (released) state
    ledger_: PrivacyLedger = field(init=False, repr=False)
    released_vocabulary_: tuple[str, ...] = field(init=False, repr=False)
    sketches_: ReleasedSketches = field(init=False, repr=False)
    label_counts_: dict | None = field(init=False, repr=False, default=None)
    label_set_: ReleasedValues | None = field(init=False, repr=False, default=None)
    class_signal_: list[ClassSignal] = field(init=False, repr=False)
    sampling_stats_: SamplingStats = field(init=False, repr=False)
    embeddings_: np.ndarray = field(init=False, repr=False)  # of the released vocabulary
    unigram_: dict = field(init=False, repr=False)  # per class, noisy score of every term
    candidates_: dict = field(init=False, repr=False)  # per class, indices into it

    # ---------------------------------------------------------------- checks
    def _validate(self) -> None:
        def number(value) -> bool:  # a real number, not a bool or a string
            return isinstance(value, int | float) and not isinstance(value, bool) \
                and not math.isnan(value)

        def positive(name: str, value: float) -> None:
            if not (number(value) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")

        if self.epsilon is None:
            positive("epsilon_vocab", self.epsilon_vocab)
            positive("epsilon_kde", self.epsilon_kde)
        else:
            positive("epsilon", self.epsilon)
            if not 0 < self.vocab_share < 1:
                raise ValueError(f"vocab_share must be in (0, 1), got {self.vocab_share!r}")
        positive("bandwidth", self.bandwidth)
        if not (number(self.epsilon_labels) and math.isfinite(self.epsilon_labels)
                and self.epsilon_labels >= 0):
            raise ValueError(f"epsilon_labels must be >= 0, got {self.epsilon_labels!r}")
        positive("epsilon_label_set", self.epsilon_label_set)
        if not (number(self.label_set_share) and 0 < self.label_set_share < 1):
            raise ValueError(f"label_set_share must be in (0, 1), got {self.label_set_share!r}")
        if self.epsilon is not None and self.epsilon_labels >= self.epsilon:
            raise ValueError(f"epsilon_labels ({self.epsilon_labels:g}) must be less than the "
                             f"total epsilon ({self.epsilon:g}), which includes it")
        if self.labels is not None and not (
                isinstance(self.labels, tuple | list) and self.labels
                and all(isinstance(x, str) for x in self.labels)):
            raise ValueError("labels must be a non-empty sequence of label names, or None")
        for name in ("terms_per_doc", "vocab_size", "length", "features", "windows_per_doc"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name, value, choices in (("vocab_noise", self.vocab_noise, NOISE_KINDS),
                                     ("kde_noise", self.kde_noise, NOISE_KINDS),
                                     ("method", self.method, METHODS),
                                     ("ensemble", self.ensemble, ENSEMBLES),
                                     ("sampling", self.sampling, SAMPLING)):
            if value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
        if self.max_terms_per_doc is not None and not (
                isinstance(self.max_terms_per_doc, int)
                and not isinstance(self.max_terms_per_doc, bool) and self.max_terms_per_doc >= 1):
            raise ValueError("max_terms_per_doc must be a positive integer or None")
        if not (number(self.vocab_noise_terms) and self.vocab_noise_terms >= 0):
            raise ValueError("vocab_noise_terms must be a number >= 0 (inf: plain top-N)")
        if not (number(self.contrastive_keep) and 0 < self.contrastive_keep <= 1):
            raise ValueError("contrastive_keep must be in (0, 1]")
        if self._gaussian_stages() and not (number(self.delta) and 0 < self.delta < 1):
            raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {self.delta!r}")

    def _gaussian_stages(self) -> list[str]:
        return [s for s, k in (("vocab", self.vocab_noise), ("kde", self.kde_noise))
                if k == "gaussian"]

    def _label_stages(self, labelled: bool) -> tuple[bool, bool]:
        """(DP label set, Laplace label histogram): which label releases the run makes.

        The label set when the corpus is labelled and ``labels`` is not declared; the
        histogram when ``epsilon_labels > 0`` and there is no label set (whose noisy
        counts serve instead)."""
        label_set = labelled and self.labels is None
        return label_set, self.epsilon_labels > 0 and not label_set

    def noise_specs(self, labelled: bool = True) -> dict[str, NoiseSpec]:
        """The noise of each stage ("vocab", "kde", and "label set" / "labels" as
        ``_label_stages`` says; ``labelled``: whether the corpus has labels).

        With a total ε every stage is inside one ``split_budget``: the label histogram
        takes ``epsilon_labels`` of it, the label set ``label_set_share``, and the
        vocabulary and the sketches share the rest by ``vocab_share`` — the ledger then
        composes to the total. Per stage: each stage its own ε (the label set
        ``epsilon_label_set``), the run's δ split evenly over the Gaussian stages (half
        of it first set aside for the label set's threshold)."""
        label_set, histogram = self._label_stages(labelled)
        kinds = {"vocab": self.vocab_noise, "kde": self.kde_noise}
        if label_set:
            kinds[LABEL_SET] = self.vocab_noise
        thresholds = [LABEL_SET] if label_set else []
        if self.epsilon is not None:
            fixed = {}
            if histogram:
                fixed["labels"] = self.epsilon_labels / self.epsilon
                kinds["labels"] = "laplace"
            if label_set:
                fixed[LABEL_SET] = self.label_set_share
            rest = 1.0 - sum(fixed.values())
            if not rest > 0:
                raise ValueError("epsilon_labels and label_set_share leave nothing of the "
                                 "total epsilon for the vocabulary and the sketches")
            shares = {"vocab": self.vocab_share * rest, "kde": (1 - self.vocab_share) * rest,
                      **fixed}
            return split_budget(self.epsilon, self.delta, shares, kinds, thresholds)
        eps = {"vocab": self.epsilon_vocab, "kde": self.epsilon_kde,
               LABEL_SET: self.epsilon_label_set}
        gauss = [s for s, k in kinds.items() if k == "gaussian"]
        thr, noise_delta = threshold_deltas(self.delta, thresholds, bool(gauss))
        specs = {s: NoiseSpec(k, eps[s], noise_delta / len(gauss) if k == "gaussian" else 0.0,
                              threshold_delta=thr if s == LABEL_SET else 0.0)
                 for s, k in kinds.items()}
        if histogram:
            specs["labels"] = NoiseSpec("laplace", self.epsilon_labels)
        return specs

    def planned_releases(self, labelled: bool = True) -> list[Release]:
        """The releases ``fit`` will make, with the (ε, δ) the ledger will record (an upper
        bound for Laplace, whose rounding slack only lowers ε). Used to check a run
        against a corpus's remaining budget before touching the data; ``labelled``:
        whether the corpus has labels (True plans for a label set when none is
        declared, which is the upper bound)."""
        self._validate()

        def planned(name: str, spec: NoiseSpec, group: str | None = None) -> Release:
            mult = gaussian_noise_multiplier(spec.epsilon, spec.delta) \
                if spec.kind == "gaussian" else 1.0
            return Release(name=name, mechanism=spec.kind, neighbouring="planned",
                           sensitivity_norm="L1" if spec.kind == "laplace" else "L2",
                           sensitivity=1.0, sensitivity_reason="planned", noise_scale=mult,
                           noise_multiplier=mult, dimension=1, epsilon=spec.epsilon,
                           delta=spec.delta, partition="planned" if group else None,
                           parallel_group=group)

        specs = self.noise_specs(labelled)
        out = [planned_value_set(specs[LABEL_SET])] if LABEL_SET in specs else []
        out.append(planned("vocabulary histogram", specs["vocab"]))
        if "labels" in specs:
            out.append(planned("label histogram", specs["labels"]))
        out.append(planned("KDE sketch sums", specs["kde"], "KDE"))
        return out

    # ---------------------------------------------------------------- fitting
    def fit(self, corpus: Corpus, *, rng: np.random.Generator | None = None,
            progress=None) -> KeyphraseSeeder:
        """Make all DP releases for ``corpus``; see the module docstring."""
        from dptext.embed import default_cache_dir, load_embedder
        from dptext.text.vocabulary import PublicVocabulary, load_vocabulary

        self._validate()
        rng = np.random.default_rng() if rng is None else rng
        step = progress or (lambda msg: None)
        specs = self.noise_specs(corpus.labels is not None)  # before any release: checks
        self._check_labels(corpus)
        step("public vocabulary")
        vocab = self.vocab if isinstance(self.vocab, PublicVocabulary) else load_vocabulary(
            self.vocab)
        if self.vocab_size > len(vocab):
            raise ValueError(f"vocab_size={self.vocab_size} exceeds the public vocabulary "
                             f"({len(vocab)} terms)")
        blocks = ensemble_blocks(self.method, self.length, self.ensemble)
        self.ledger_ = PrivacyLedger()
        self.label_counts_ = self.label_set_ = None
        if LABEL_SET in specs:
            step("DP label set")
        labels = self._class_labels(corpus, specs)
        step("DP vocabulary")
        self.released_vocabulary_ = self._release_vocabulary(corpus, vocab, specs["vocab"])

        if "labels" in specs:
            step("DP label counts")
            self.label_counts_ = self._release_label_counts(corpus, labels)
        elif self.label_set_ is not None and self.epsilon_labels > 0:
            self.label_counts_ = dict(self.label_set_.counts["label"])  # already released

        step("embedding the released vocabulary")
        # only public vocabulary terms are embedded here, so the on-disk cache is safe
        cache = default_cache_dir() if self.cache_dir is None else self.cache_dir
        embedder = load_embedder(self.embedder, cache_dir=cache) if isinstance(
            self.embedder, str) else self.embedder
        embeddings = np.ascontiguousarray(embedder.encode(list(self.released_vocabulary_)),
                                          dtype=np.float32)

        step("document keyphrases")
        released = PublicVocabulary("released", self.released_vocabulary_)
        sequences = released.extractor().extract_many(
            corpus.texts, max_terms=self.max_terms_per_doc or self.length, distinct=True)
        by_class = self._sequences_by_class(corpus, labels, sequences)

        features = [FourierFeatures.draw(embeddings.shape[1], b, self.features, self.bandwidth,
                                         rng) for b in blocks]
        step("DP KDE sketches")
        self.sketches_ = release_sketches(by_class, embeddings, features,
                                          specs["kde"], self.ledger_,
                                          max_windows=self.windows_per_doc)
        self.embeddings_ = embeddings
        self.unigram_ = unigram_scores(self.sketches_, embeddings)
        self.candidates_ = candidate_sets(self.unigram_, self.sampling, self.contrastive_keep,
                                          min_keep=2 * self.length) if labels else {}
        self.class_signal_ = self._class_signal(labels, len(blocks), specs["kde"])
        return self

    def _check_labels(self, corpus: Corpus) -> None:
        """Before any release: the declared labels cover the data (else an input error
        whose private detail goes to the curator's terminal only)."""
        if corpus.labels is None:
            if self.labels:
                raise InputError("labels were declared but the corpus has no label column")
        elif self.labels is not None:
            check_declared(corpus.labels, self.labels, source=corpus.source)

    def _class_labels(self, corpus: Corpus, specs: dict) -> list[str | None]:
        """The public classes: [None] (unlabelled), the declared labels, or the DP label set
        (released here, into ``ledger_``). Documents of a label outside them take part in
        no per-class release."""
        if corpus.labels is None:
            return [None]
        if self.labels is not None:
            return list(self.labels)
        self.label_set_ = release_label_set(corpus.labels, specs[LABEL_SET], ledger=self.ledger_)
        released = list(self.label_set_.values["label"])
        if not released:
            warnings.warn(f"no label reached the DP label set's threshold (a noisy count of "
                          f"{self.label_set_.threshold:.0f}): there is no class to draw "
                          "sequences for. Declare the label set with --labels, or raise "
                          "--epsilon or --label-set-share.", stacklevel=3)
        return released

    def _release_vocabulary(self, corpus: Corpus, vocab, spec: NoiseSpec | None = None
                            ) -> tuple[str, ...]:
        spec = spec or self.noise_specs(corpus.labels is not None)["vocab"]
        return release_vocabulary(corpus.texts, vocab, spec, self.ledger_,
                                  terms_per_doc=self.terms_per_doc, size=self.vocab_size,
                                  noise_terms=self.vocab_noise_terms, min_terms=self.length)

    def _release_label_counts(self, corpus: Corpus, labels: list) -> dict:
        present = np.asarray(corpus.labels if corpus.labels is not None else [None] * len(corpus),
                             dtype=object)
        exact = np.array([(present == c).sum() for c in labels], dtype=np.float64)
        sens = Sensitivity(l1=1.0, l2=1.0, reason="one document changes one class count by 1")
        noisy = release(exact, sens, NoiseSpec("laplace", self.epsilon_labels),
                        ledger=self.ledger_, name="label histogram")
        return {c: float(max(v, 0.0)) for c, v in zip(labels, noisy, strict=True)}

    @staticmethod
    def _sequences_by_class(corpus: Corpus, labels: list, sequences: list) -> dict:
        index = corpus.class_indices()
        empty = np.empty(0, dtype=np.int64)
        return {c: [sequences[i] for i in index.get(c, empty)] for c in labels}

    def released_class_counts(self) -> dict | None:
        """DP estimates of the class sizes: the label histogram's noisy counts, else the
        label set's; None when neither was released."""
        if self.label_counts_ is not None:
            return self.label_counts_
        if self.label_set_ is not None:
            return self.label_set_.counts["label"]
        return None

    def _class_signal(self, labels: list, n_sketches: int, spec: NoiseSpec
                      ) -> list[ClassSignal]:
        """Warn when a class looks too small for its sketch noise — from released values
        only (noisy label counts), never from exact class sizes; never refuses.

        Score noise has std ≈ σ·√I per sketch coordinate set, while the signal of a
        class of n documents spreads by about n·I·c (c = ASSUMED_KERNEL_CONTRAST); n is
        the DP estimate. Without released counts nothing is estimated (and nothing said).
        """
        counts = self.released_class_counts()
        if counts is None:
            return [ClassSignal(label, None, None) for label in labels]
        total = n_sketches * self.features
        if spec.kind == "laplace":
            sigma = math.sqrt(2) * math.sqrt(2) * total / spec.epsilon
        else:
            sigma = gaussian_noise_multiplier(spec.epsilon, spec.delta) * math.sqrt(2 * total)
        out, weak = [], []
        for label in labels:
            n = max(float(counts.get(label, 0.0)), 0.0)
            snr = n * ASSUMED_KERNEL_CONTRAST * math.sqrt(self.features) / sigma
            out.append(ClassSignal(label, n, snr))
            if snr < 1:
                weak.append((label, n, snr))
        if weak:
            listing = ", ".join(f"{lab!r} (about {n:.0f} documents by its noisy count, "
                                f"signal/noise ≈ {snr:.2g})" for lab, n, snr in weak)
            warnings.warn(f"weak signal in classes {listing}: their sequences will be noisy. "
                          "Raise --epsilon, use --kde-noise gaussian, lower --features, "
                          "use --method independent, or merge small classes.", stacklevel=3)
        return out

    # ---------------------------------------------------------------- sampling
    def class_sizes(self, n_per_class: int | None = None, total: int | None = None) -> dict:
        """How many sequences to draw per class: equal, or in proportion to DP counts."""
        labels = list(self.sketches_.sums)
        if (n_per_class is None) == (total is None):
            raise ValueError("give exactly one of n_per_class or total")
        if n_per_class is not None:
            return dict.fromkeys(labels, int(n_per_class))
        if not labels:
            return {}
        if self.label_counts_ is None:
            return {c: total // len(labels) + (i < total % len(labels))
                    for i, c in enumerate(labels)}
        weights = np.array([self.label_counts_[c] for c in labels]) + 1e-9
        raw = total * weights / weights.sum()
        sizes = np.floor(raw).astype(int)
        sizes[np.argsort(-(raw - sizes))[: total - sizes.sum()]] += 1
        return dict(zip(labels, sizes.tolist(), strict=True))

    def sample(self, n_per_class: int | None = None, *, total: int | None = None,
               rng: np.random.Generator | None = None) -> list[KeyphraseSequence]:
        """Draw keyphrase sequences (post-processing: no privacy cost)."""
        if not hasattr(self, "sketches_"):
            raise RuntimeError("call fit() before sample()")
        rng = np.random.default_rng() if rng is None else rng
        self.sampling_stats_ = SamplingStats()
        out: list[KeyphraseSequence] = []
        vocab = np.asarray(self.released_vocabulary_, dtype=object)
        for label, n in self.class_sizes(n_per_class, total).items():
            if n <= 0:
                continue
            cand = self.candidates_[label]
            if self.method == "independent":
                pos = sample_independent(self.unigram_[label][cand], n, self.length, rng,
                                         self.sampling_stats_)
            else:
                pos = sample_iterative(self.sketches_, label, self.embeddings_, cand, n,
                                       self.length, rng, self.sampling_stats_)
            terms = vocab[cand[np.maximum(pos, 0)]]
            for row, valid in zip(terms, pos >= 0, strict=True):
                out.append(KeyphraseSequence(label, tuple(row[valid].tolist())))
        return out
