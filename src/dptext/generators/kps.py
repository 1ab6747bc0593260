"""DP-KPS keyphrase engine: from a private corpus to DP keyphrase sequences.

``KeyphraseSeeder.fit`` makes every release of private information, each through
``dptext.privacy`` and into ``ledger_``:

1. the DP vocabulary Ṽ (appendix B.1): each document's first S distinct public
   vocabulary terms, a noisy histogram over the whole public vocabulary, top N;
2. optionally a noisy label histogram (to size classes in proportion);
3. per class, the noisy sums of random-Fourier-feature sketches of the documents'
   keyphrase sequences (one sketch, or the linear or logarithmic ensemble).

``sample`` only post-processes those releases, so it can be called any number of
times at no further privacy cost. Everything ``fit`` keeps (``released_vocabulary_``,
``sketches_``, ``label_counts_``) is released data; the corpus is not retained.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dptext.corpus import Corpus, InputError
from dptext.generators.kps_models import (
    MODELS,
    NEEDS,
    HistogramModel,
    KdeModel,
    MixtureModel,
    SmoothedHistogramModel,
    describe,
    neighbour_kernel,
)
from dptext.generators.kps_select import SELECTION_NAME, presence_matrix, select_model
from dptext.kde.histogram import HISTOGRAM_NAME, noise_floor_of, release_histogram
from dptext.kde.rff import FourierFeatures
from dptext.kde.sampler import (
    SAMPLING,
    SamplingStats,
    candidate_sets,
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
from dptext.privacy.selection import FIT_FOLD, VALIDATION_FOLD, fold_of
from dptext.privacy.split import split_budget

METHODS = ("independent", "iterative")
SELECT = ("auto", "none")
SMOOTHING_NEIGHBOURS = 10  # released terms each kept count is spread over (smoothed model)
ASSUMED_KERNEL_CONTRAST = 0.1  # typical spread of kernel values between related/unrelated terms


def noise_floor(released: Release, size: int, false_terms: float) -> float:
    """Noisy count above which ≤ ``false_terms`` zero-count terms are expected to lie.

    Top-N of a noisy histogram over a large public vocabulary is mostly terms whose
    true count is 0 but whose noise is the largest of ``size`` draws. Keeping only
    terms above this floor is post-processing of the released histogram (no privacy
    cost) and uses only the recorded noise scale. ``false_terms >= size`` keeps all
    (the paper's plain top-N).
    """
    return noise_floor_of(released.noise_scale, released.mechanism, size, false_terms)


def release_vocabulary(texts, vocab, noise: NoiseSpec, ledger: PrivacyLedger, *,
                       terms_per_doc: int, size: int, noise_terms: float,
                       min_terms: int) -> tuple[str, ...]:
    """The DP vocabulary Ṽ (appendix B.1): each document's first S distinct public terms,
    a noisy histogram over the public vocabulary (recorded in ``ledger``), the top
    ``size`` terms above the noise floor.

    Only terms above the floor are kept, however few: a term below it is as likely
    to be noise as signal, and padding Ṽ with such terms would present noise as the
    corpus's content. Fewer than ``min_terms`` kept terms gives a warning (naming only
    released numbers); the caller's sequences or prompts are then shorter.
    """
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
    if kept.size < min_terms:
        warnings.warn(f"only {kept.size} vocabulary terms rise above the noise at {noise}; "
                      f"keeping only those (terms below the noise floor would be noise "
                      "presented as signal), so sequences are shorter. Raise --epsilon, "
                      "or use a smaller public vocabulary.", stacklevel=4)
    return tuple(vocab.terms[i] for i in kept)


def _composed_epsilon(specs) -> float:
    """The ε that releases with these noise specs compose to (the ledger's own rule)."""
    from dptext.privacy import compose

    recs = [Release(name="planned", mechanism=spec.kind, neighbouring="planned",
                    sensitivity_norm="L2", sensitivity=1.0, sensitivity_reason="planned",
                    noise_scale=1.0, dimension=1, epsilon=spec.epsilon, delta=spec.delta,
                    noise_multiplier=gaussian_noise_multiplier(spec.epsilon, spec.delta)
                    if spec.kind == "gaussian" else 1.0)
            for spec in specs]
    return compose(recs).epsilon


def _positions(terms: tuple[str, ...], wanted: tuple[str, ...]) -> np.ndarray:
    """Index in ``terms`` of each of ``wanted`` (all present)."""
    where = {t: i for i, t in enumerate(terms)}
    return np.fromiter((where[t] for t in wanted), dtype=np.int64, count=len(wanted))


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
    """Expected signal-to-noise of a class's KDE scores (shown to the curator only)."""

    label: str | None
    documents: int
    snr: float


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
    allow_noisy_classes: bool = False
    cache_dir: Any = None
    model: str = "auto"  # auto, kde, histogram, smoothed, hybrid (generators/kps_models.py)
    select: str = "auto"  # auto: choose model and parameters privately; none: as given
    mixture: float = 0.5  # the hybrid's histogram weight λ (select="none")
    histogram_power: float = 1.0  # purity exponent p of the histogram weights (select="none")
    smoothing: float = 0.7  # the smoothed histogram's kernel bandwidth (select="none")
    validation_share: float = 0.1  # documents in the selection's validation fold
    histogram_terms: int = 5000  # most kept histogram columns in Ṽ
    selection_sequences: int = 200  # sequences per class per candidate, to score it

    # fitted (released) state
    ledger_: PrivacyLedger = field(init=False, repr=False)
    released_vocabulary_: tuple[str, ...] = field(init=False, repr=False)
    sketches_: ReleasedSketches = field(init=False, repr=False)
    label_counts_: dict | None = field(init=False, repr=False, default=None)
    class_signal_: list[ClassSignal] = field(init=False, repr=False)
    sampling_stats_: SamplingStats = field(init=False, repr=False)
    embeddings_: np.ndarray = field(init=False, repr=False)  # of the released vocabulary
    unigram_: dict = field(init=False, repr=False)  # per class, noisy score of every term
    candidates_: dict = field(init=False, repr=False)  # per class, indices into it
    model_: Any = field(init=False, repr=False, default=None)  # the KeyphraseModel sampled
    histogram_: Any = field(init=False, repr=False, default=None)  # ReleasedHistogram
    selection_: dict | None = field(init=False, repr=False, default=None)

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
        for name, value, choices in (("model", self.model, MODELS),
                                     ("select", self.select, SELECT)):
            if value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
        if not (number(self.histogram_power) and 0 <= self.histogram_power <= 10):
            raise ValueError(f"histogram_power must be in [0, 10], got {self.histogram_power!r}")
        positive("smoothing", self.smoothing)
        if not (number(self.mixture) and 0 <= self.mixture <= 1):
            raise ValueError(f"mixture must be in [0, 1], got {self.mixture!r}")
        if not (number(self.validation_share) and 0 < self.validation_share <= 0.5):
            raise ValueError(f"validation_share must be in (0, 0.5], got "
                             f"{self.validation_share!r}")
        for name in ("histogram_terms", "selection_sequences"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.model in ("histogram", "smoothed", "hybrid") and self.method != "independent":
            raise ValueError(f"model={self.model!r} samples independently; method="
                             f"'iterative' needs model='kde' (or 'auto')")
        if self._gaussian_stages() and not (number(self.delta) and 0 < self.delta < 1):
            raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {self.delta!r}")

    def _gaussian_stages(self) -> list[str]:
        return [s for s, k in (("vocab", self.vocab_noise), ("kde", self.kde_noise))
                if k == "gaussian"]

    def noise_specs(self) -> dict[str, NoiseSpec]:
        """The noise of each stage: from the total ε (split by ``split_budget``), or from
        the per-stage ε with the run's δ split evenly over its Gaussian stages."""
        kinds = {"vocab": self.vocab_noise, "kde": self.kde_noise}
        if self.epsilon is not None:
            return split_budget(self.epsilon, self.delta,
                                {"vocab": self.vocab_share, "kde": 1 - self.vocab_share}, kinds)
        eps = {"vocab": self.epsilon_vocab, "kde": self.epsilon_kde}
        n_gauss = len(self._gaussian_stages())
        return {s: NoiseSpec(k, eps[s], self.delta / n_gauss if k == "gaussian" else 0.0)
                for s, k in kinds.items()}

    def planned_releases(self) -> list[Release]:
        """The releases ``fit`` will make, with the (ε, δ) the ledger will record (an upper
        bound for Laplace, whose rounding slack only lowers ε). Used to check a run
        against a corpus's remaining budget before touching the data."""
        self._validate()

        def planned(name: str, spec: NoiseSpec, group: str | None = None,
                    fold: str | None = None) -> Release:
            mult = gaussian_noise_multiplier(spec.epsilon, spec.delta) \
                if spec.kind == "gaussian" else 1.0
            return Release(name=name, mechanism=spec.kind, neighbouring="planned",
                           sensitivity_norm="L1" if spec.kind == "laplace" else "L2",
                           sensitivity=1.0, sensitivity_reason="planned", noise_scale=mult,
                           noise_multiplier=mult, dimension=1, epsilon=spec.epsilon,
                           delta=spec.delta, partition="planned" if group else None,
                           parallel_group=group, fold=fold)

        if not self._legacy():
            return self._planned_model_releases(planned)
        specs = self.noise_specs()
        out = [planned("vocabulary histogram", specs["vocab"])]
        if self.epsilon_labels > 0:
            out.append(planned("label histogram", NoiseSpec("laplace", self.epsilon_labels)))
        out.append(planned("KDE sketch sums", specs["kde"], "KDE"))
        return out

    # ------------------------------------------------- keyphrase models and selection
    def _family(self) -> str:
        """The model family: ``model``, with "auto" meaning the KDE for iterative sampling
        (only the KDE scores a term against a prefix)."""
        return "kde" if self.model == "auto" and self.method == "iterative" else self.model

    def _legacy(self) -> bool:
        """The KDE without selection: the paper's path, releases exactly as before."""
        return self._family() == "kde" and self.select == "none"

    def _needs(self) -> tuple[str, ...]:
        family = self._family()
        return NEEDS["histogram" if family == "auto" and self.select == "none" else family]

    def model_noise_specs(self) -> dict[str, NoiseSpec]:
        """Noise of the model releases: the class × term histogram takes the vocabulary's
        share (it replaces the vocabulary release), the sketches theirs; a histogram
        alone takes the whole ε (``epsilon``, or what ``epsilon_vocab`` and ``epsilon_kde``
        compose to)."""
        if "kde" in self._needs():
            specs = self.noise_specs()
            return {"histogram": specs["vocab"], "kde": specs["kde"]}
        eps = self.epsilon if self.epsilon is not None else _composed_epsilon(
            self.noise_specs().values())  # what the two stages would have composed to
        gauss = self.vocab_noise == "gaussian"
        return {"histogram": NoiseSpec(self.vocab_noise, eps, self.delta if gauss else 0.0)}

    def candidate_specs(self) -> list[tuple[str, float | None]]:
        """(family, parameter) of each candidate model: the histogram weight λ of a
        hybrid, the contrastive keep share of a KDE. All are post-processing of the same
        releases, so the candidates share them and none pays separately."""
        family = self._family()
        if self.select == "none":
            family = "histogram" if family == "auto" else family
            param = {"hybrid": self.mixture, "kde": self.contrastive_keep,
                     "histogram": self.histogram_power,
                     "smoothed": (self.smoothing, self.histogram_power)}[family]
            return [(family, param)]
        keeps = [("kde", k) for k in dict.fromkeys((self.contrastive_keep, 0.3))]
        hybrids = [("hybrid", m) for m in (0.25, 0.5, 0.75)]
        powers = dict.fromkeys((self.histogram_power, 2.0, 3.0))
        hists = [("histogram", p) for p in powers]
        smoothed = [("smoothed", (h, p)) for h in dict.fromkeys((self.smoothing, 0.5))
                    for p in powers]
        # auto: the histogram's purity powers, which all share ONE release (the KDE and the
        # hybrid need a second one, which would halve the histogram's budget; smoothing
        # lost to the plain histogram on both dev corpora: docs/benchmarks.md)
        return {"kde": keeps, "histogram": hists, "smoothed": [*hists, *smoothed],
                "hybrid": hybrids, "auto": hists}[family]

    def _selecting(self, labels: list) -> bool:
        return self.select == "auto" and len(self.candidate_specs()) > 1 and len(labels) > 1

    def _planned_model_releases(self, planned) -> list[Release]:
        specs = self.model_noise_specs()
        # an upper bound: with one class (known only after reading labels) nothing is selected
        fold = FIT_FOLD if self.select == "auto" and len(self.candidate_specs()) > 1 else None
        out = [planned(HISTOGRAM_NAME, specs["histogram"], fold=fold)]
        if self.epsilon_labels > 0:
            out.append(planned("label histogram", NoiseSpec("laplace", self.epsilon_labels)))
        if "kde" in specs:
            out.append(planned("KDE sketch sums", specs["kde"], "KDE", fold=fold))
        if fold is not None:
            out.append(planned(SELECTION_NAME, NoiseSpec("laplace", self._selection_epsilon()),
                               fold=VALIDATION_FOLD))
        return out

    def _selection_epsilon(self) -> float:
        """The selection's ε: as much as the fit fold's releases cost together, since the
        validation fold holds other documents (parallel composition: the run's ε does not
        grow)."""
        return _composed_epsilon(self.model_noise_specs().values())

    # ---------------------------------------------------------------- fitting
    def fit(self, corpus: Corpus, *, rng: np.random.Generator | None = None,
            progress=None) -> KeyphraseSeeder:
        """Make all DP releases for ``corpus``; see the module docstring."""
        from dptext.embed import default_cache_dir, load_embedder
        from dptext.text.vocabulary import PublicVocabulary, load_vocabulary

        self._validate()
        rng = np.random.default_rng() if rng is None else rng
        step = progress or (lambda msg: None)
        labels = self._class_labels(corpus)
        step("public vocabulary")
        vocab = self.vocab if isinstance(self.vocab, PublicVocabulary) else load_vocabulary(
            self.vocab)
        if self.vocab_size > len(vocab):
            raise ValueError(f"vocab_size={self.vocab_size} exceeds the public vocabulary "
                             f"({len(vocab)} terms)")
        blocks = ensemble_blocks(self.method, self.length, self.ensemble)
        index = corpus.class_indices()  # before any release: a refusal spends nothing
        self.class_signal_ = self._check_class_sizes(
            {c: len(index.get(c, ())) for c in labels}, len(blocks))
        self.ledger_ = PrivacyLedger()
        if not self._legacy():
            self._fit_models(corpus, labels, vocab, rng, step)
            return self
        step("DP vocabulary")
        self.released_vocabulary_ = self._release_vocabulary(corpus, vocab)

        if self.epsilon_labels > 0:
            step("DP label counts")
            self.label_counts_ = self._release_label_counts(corpus, labels)

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
                                          self.noise_specs()["kde"], self.ledger_,
                                          max_windows=self.windows_per_doc)
        self.embeddings_ = embeddings
        self.unigram_ = unigram_scores(self.sketches_, embeddings)
        self.candidates_ = candidate_sets(self.unigram_, self.sampling, self.contrastive_keep,
                                          min_keep=2 * self.length)
        self.model_ = KdeModel(self.sketches_, self.unigram_, self.candidates_, embeddings,
                               self.method)
        return self

    def _fit_models(self, corpus: Corpus, labels: list, vocab, rng: np.random.Generator,
                    step) -> None:
        """The histogram / hybrid path: the class × term histogram (it also gives Ṽ), the
        KDE sketches over Ṽ when a candidate needs them, then the private selection."""
        selecting = self._selecting(labels)
        specs = self.model_noise_specs()
        fit_fold = FIT_FOLD if selecting else None
        step("public vocabulary terms of every document")
        firsts = vocab.extractor().extract_many(corpus.texts, max_terms=self.terms_per_doc,
                                                distinct=True)
        lookup = {c: i for i, c in enumerate(labels)}
        class_ids = np.zeros(len(corpus), dtype=np.int64) if corpus.labels is None else \
            np.fromiter((lookup.get(c, -1) for c in corpus.labels), dtype=np.int64,
                        count=len(corpus))
        val = fold_of(corpus.texts, self.validation_share) if selecting else \
            np.zeros(len(corpus), dtype=bool)
        fit_idx, val_idx = np.flatnonzero(~val), np.flatnonzero(val)
        step("DP class × term histogram")
        hist = release_histogram([firsts[i] for i in fit_idx], class_ids[fit_idx], labels,
                                 vocab.terms, specs["histogram"], self.ledger_,
                                 terms_per_doc=self.terms_per_doc,
                                 false_cells=self.vocab_noise_terms,
                                 max_terms=self.histogram_terms, fold=fit_fold)
        self.histogram_ = hist
        self.released_vocabulary_ = hist.terms
        if len(hist.terms) < self.length:
            warnings.warn(f"only {len(hist.terms)} terms rose above the noise floor of the "
                          "class × term histogram; sequences will be shorter than "
                          f"{self.length} (no noise terms are added). Raise --epsilon or use "
                          "a smaller public vocabulary.", stacklevel=3)
        if self.epsilon_labels > 0:
            step("DP label counts")
            self.label_counts_ = self._release_label_counts(corpus, labels)
        # each document's terms as indices into Ṽ, in order of appearance
        to_released = np.full(len(vocab), -1, dtype=np.int64)
        to_released[_positions(vocab.terms, hist.terms)] = np.arange(len(hist.terms))
        released_terms = [m[m >= 0] for m in (to_released[f] for f in firsts)]

        histogram = HistogramModel(hist, self.histogram_power)
        kde = None
        specs_c = self.candidate_specs()
        self.sketches_ = ReleasedSketches(features=(), sums={c: () for c in labels})
        self.embeddings_ = np.zeros((len(hist.terms), 0), dtype=np.float32)
        if len(hist.terms) and ("kde" in specs or any(f == "smoothed" for f, _ in specs_c)):
            self.embeddings_ = self._embed_released(step)
        if "kde" in specs and len(hist.terms):
            kde = self._fit_kde(released_terms, fit_idx, class_ids, labels, specs["kde"],
                                fit_fold, rng, step)
        kernels: dict = {}
        cands = []
        for family, param in specs_c:
            if family == "smoothed" and len(hist.terms):
                h, p = param
                if h not in kernels:
                    kernels[h] = neighbour_kernel(self.embeddings_, SMOOTHING_NEIGHBOURS, h)
                cands.append(SmoothedHistogramModel(hist, kernels[h], h, p))
            elif family in ("histogram", "smoothed") or kde is None:
                cands.append(replace(histogram, power=param if family == "histogram"
                                     else self.histogram_power))
            elif family == "kde":
                cands.append(kde if param == self.contrastive_keep else
                             replace(kde, candidates=candidate_sets(
                                 kde.unigram, self.sampling, param, min_keep=2 * self.length)))
            else:
                cands.append(MixtureModel(histogram, kde, param))
        self.model_ = cands[0]
        if selecting:
            step("private model selection")
            x = presence_matrix([released_terms[i] for i in val_idx], len(hist.terms))
            chosen = select_model(cands, labels, x, class_ids[val_idx],
                                  epsilon=self._selection_epsilon(), ledger=self.ledger_,
                                  per_class=self.selection_sequences, length=self.length,
                                  rng=rng)
            self.model_ = cands[chosen]
        self.selection_ = {"candidates": [describe(m) for m in cands],
                           "chosen": describe(self.model_), "selected": selecting,
                           "validation_share": self.validation_share if selecting else 0.0}

    def _embed_released(self, step) -> np.ndarray:
        """Embeddings of the released vocabulary (public terms only: the cache is safe)."""
        from dptext.embed import default_cache_dir, load_embedder

        step("embedding the released vocabulary")
        cache = default_cache_dir() if self.cache_dir is None else self.cache_dir
        embedder = load_embedder(self.embedder, cache_dir=cache) if isinstance(
            self.embedder, str) else self.embedder
        return np.ascontiguousarray(embedder.encode(list(self.released_vocabulary_)),
                                    dtype=np.float32)

    def _fit_kde(self, released_terms, fit_idx, class_ids, labels, noise, fold, rng,
                 step) -> KdeModel:
        embeddings = self.embeddings_
        limit = self.max_terms_per_doc or self.length
        by_class = {c: [] for c in labels}
        for i in fit_idx:
            if class_ids[i] >= 0:
                by_class[labels[class_ids[i]]].append(released_terms[i][:limit])
        features = [FourierFeatures.draw(embeddings.shape[1], b, self.features, self.bandwidth,
                                         rng)
                    for b in ensemble_blocks(self.method, self.length, self.ensemble)]
        step("DP KDE sketches")
        self.sketches_ = release_sketches(by_class, embeddings, features, noise, self.ledger_,
                                          max_windows=self.windows_per_doc, fold=fold)
        self.unigram_ = unigram_scores(self.sketches_, embeddings)
        self.candidates_ = candidate_sets(self.unigram_, self.sampling, self.contrastive_keep,
                                          min_keep=2 * self.length)
        return KdeModel(self.sketches_, self.unigram_, self.candidates_, embeddings, self.method)

    def _class_labels(self, corpus: Corpus) -> list[str | None]:
        if corpus.labels is None:
            if self.labels:
                raise InputError("labels were declared but the corpus has no label column")
            return [None]
        present = sorted(set(corpus.labels))
        if self.labels is None:
            return present
        unknown = sorted(set(present) - set(self.labels))
        if unknown:
            raise InputError(f"{corpus.source}: labels {unknown} are not among the declared "
                             f"labels {list(self.labels)}; declare them or fix the data")
        return list(self.labels)

    def _release_vocabulary(self, corpus: Corpus, vocab) -> tuple[str, ...]:
        return release_vocabulary(corpus.texts, vocab, self.noise_specs()["vocab"], self.ledger_,
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

    def _check_class_sizes(self, sizes: dict, n_sketches: int) -> list[ClassSignal]:
        """Warn (or refuse) when a class is too small for its sketch noise.

        Score noise has std ≈ σ·√I per sketch coordinate set, while the signal of a
        class of n documents spreads by about n·I·c (c = ASSUMED_KERNEL_CONTRAST).
        This uses exact class sizes: it is advice to the curator, never released.
        """
        total = n_sketches * self.features
        spec = self.noise_specs()["kde"]
        if spec.kind == "laplace":
            sigma = math.sqrt(2) * math.sqrt(2) * total / spec.epsilon
        else:
            sigma = gaussian_noise_multiplier(spec.epsilon, spec.delta) * math.sqrt(2 * total)
        out, weak = [], []
        for label, n in sizes.items():
            snr = n * ASSUMED_KERNEL_CONTRAST * math.sqrt(self.features) / sigma
            out.append(ClassSignal(label, n, snr))
            if snr < 1:
                weak.append((label, n, snr))
        if weak:
            worst = min(w[2] for w in weak)
            listing = ", ".join(f"{lab!r} ({n} documents, signal/noise ≈ "
                                f"{snr:.2g})" for lab, n, snr in weak)
            advice = ("Raise --epsilon-kde, use --kde-noise gaussian, lower --features, "
                      "use --method independent, or merge small classes.")
            if worst < 0.2 and not self.allow_noisy_classes:
                raise InputError(f"classes too small for the requested privacy: {listing}. "
                                 f"Their keyphrases would be pure noise. {advice} "
                                 "(--allow-noisy-classes to go on anyway)")
            warnings.warn(f"weak signal in classes {listing}: their sequences will be noisy. "
                          f"{advice}", stacklevel=3)
        return out

    # ---------------------------------------------------------------- reporting
    def released_signal(self) -> list[dict]:
        """Per class, the signal its released histogram row carries: how many of its terms
        rose above the noise floor and how far its strongest count stands above the noise
        (σ). Computed from released values only, so it may be shown and stored."""
        h = self.histogram_
        if h is None:
            return []
        return [{"label": label, "terms_above_noise": int(np.count_nonzero(row)),
                 "strongest_over_noise": float(row.max() / h.noise_scale) if row.any() else 0.0}
                for label, row in zip(h.labels, h.counts, strict=True)]

    def summary_lines(self) -> list[str]:
        """What the curator should know about the model and the signal (released values)."""
        sel = self.selection_
        if not sel:
            return []
        lines = []
        if sel["selected"]:
            eps = next(r.epsilon for r in self.ledger_.releases if r.mechanism ==
                       "report-noisy-max")
            lines.append(f"keyphrase model: {sel['chosen']}, chosen privately among "
                         f"{len(sel['candidates'])} candidates on a held-out fold of about "
                         f"{sel['validation_share']:.0%} of the documents (ε = {eps:.3g}, "
                         "parallel to the releases on the other documents)")
        else:
            lines.append(f"keyphrase model: {sel['chosen']} (as given)")
        signal = self.released_signal()
        weak = [s for s in signal if s["terms_above_noise"] < self.length]
        lines.append(f"released vocabulary: {len(self.released_vocabulary_)} terms above the "
                     "noise floor")
        if weak:
            names = ", ".join(f"{s['label']!s} ({s['terms_above_noise']})" for s in weak[:10])
            more = f" and {len(weak) - 10} more" if len(weak) > 10 else ""
            lines.append(f"weak classes (fewer than L = {self.length} terms above the noise; "
                         f"their sequences lean on the KDE or are shorter): {names}{more}")
        return lines

    # ---------------------------------------------------------------- sampling
    def class_sizes(self, n_per_class: int | None = None, total: int | None = None) -> dict:
        """How many sequences to draw per class: equal, or in proportion to DP counts."""
        labels = list(self.sketches_.sums)
        if (n_per_class is None) == (total is None):
            raise ValueError("give exactly one of n_per_class or total")
        if n_per_class is not None:
            return dict.fromkeys(labels, int(n_per_class))
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
            pos = self.model_.sample(label, n, self.length, rng, self.sampling_stats_)
            terms = vocab[np.maximum(pos, 0)] if len(vocab) else np.full(pos.shape, "", object)
            for row, valid in zip(terms, pos >= 0, strict=True):
                out.append(KeyphraseSequence(label, tuple(row[valid].tolist())))
        return out
