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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dptext.compute import map_sum
from dptext.corpus import Corpus
from dptext.generators.base import check_declared_labels
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
from dptext.kde.histogram import HISTOGRAM_NAME, ClassTermCounts, noise_floor_of, release_counts
from dptext.kde.rff import FourierFeatures
from dptext.kde.sampler import (
    SAMPLING,
    SamplingStats,
    candidate_sets,
    unigram_scores,
)
from dptext.kde.sketch import (
    ENSEMBLES,
    ReleasedSketches,
    ensemble_blocks,
    release_corpus_sketches,
)
from dptext.kde.terms_per_doc import TERMS_CHOICE_NAME, TermCountScores, choose_terms_per_doc
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
    planned_value_set,
    release_label_set,
)
from dptext.privacy.selection import FIT_FOLD, SELECTION_MARGIN, VALIDATION_FOLD, fold_of
from dptext.privacy.split import split_budget, threshold_deltas
from dptext.text.extract import FirstTermCounts

METHODS = ("independent", "iterative")
PER_STAGE_TERMS_PER_DOC = 80  # S under per-stage budgets (no share of a total ε to choose it)
SELECT = ("auto", "none")
SELECTION_SPLITS = ("auto", "shared", "holdout")
#: ``vocab="auto"``: the histogram models count function words too ("why", "not", "my":
#: in short texts much of the class signal); the KDE keeps the paper's content words
AUTO_VOCAB = {"histogram": "english:20000+function-words", "kde": "english:20000"}
#: the floors the private selection tries, as multiples of ``vocab_noise_terms`` expected
#: false cells (one release kept at the lowest floor serves them all)
FLOOR_FACTORS = (1.0, 10.0)
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
    # exact counts, summed over batches on the current engine (dptext.compute); the noise
    # is added once, below, on the driver
    counts = map_sum(FirstTermCounts(vocab.extractor(), terms_per_doc),
                     texts).astype(np.float64)
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
                    noise_scale=1.0, dimension=1, epsilon=spec.epsilon,
                    delta=spec.total_delta, threshold_delta=spec.threshold_delta,
                    noise_multiplier=gaussian_noise_multiplier(spec.epsilon, spec.delta)
                    if spec.kind == "gaussian" else 1.0)
            for spec in specs]
    return compose(recs).epsilon if recs else 0.0


def _class_ids(corpus: Corpus, labels: list) -> np.ndarray:
    """Each document's index into ``labels`` (−1: a label outside them); 0 for every
    document of an unlabelled corpus (its one class)."""
    if corpus.labels is None:
        return np.zeros(len(corpus), dtype=np.int64)
    lookup = {c: i for i, c in enumerate(labels)}
    return np.fromiter((lookup.get(c, -1) for c in corpus.labels), dtype=np.int64,
                       count=len(corpus))


class DocumentTerms:
    """A document's keyphrase sequence, as the sketches and the selection read it: its first
    ``terms_per_doc`` distinct terms of ``extractor``'s vocabulary in order of appearance,
    mapped through ``to_released`` (public index → index into Ṽ, −1: not released) when
    given, the first ``limit`` kept. Picklable (public parameters only), so the batches
    that call it may run on any engine."""

    def __init__(self, extractor, terms_per_doc: int, to_released: np.ndarray | None = None,
                 limit: int | None = None):
        self.extractor = extractor
        self.terms_per_doc = terms_per_doc
        self.to_released = to_released
        self.limit = limit

    def __call__(self, texts) -> list[np.ndarray]:
        firsts = self.extractor.extract_many(texts, max_terms=self.terms_per_doc,
                                             distinct=True)
        if self.to_released is not None:
            firsts = [m[m >= 0] for m in (self.to_released[f] for f in firsts)]
        return firsts if self.limit is None else [f[:self.limit] for f in firsts]


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

    vocab: Any = "auto"  # a spec or a PublicVocabulary; auto: AUTO_VOCAB by model
    embedder: Any = "minilm"
    epsilon_vocab: float | None = 1.0
    epsilon_kde: float | None = 5.0
    delta: float = 1e-5
    epsilon: float | None = None  # total budget: overrides epsilon_vocab/epsilon_kde
    vocab_share: float = 0.5
    vocab_noise: str = "gaussian"
    kde_noise: str = "gaussian"
    terms_per_doc: int | str = "auto"  # S; auto: chosen privately (kde/terms_per_doc.py)
    terms_share: float = 0.05  # of a total epsilon, for choosing S (terms_per_doc="auto")
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
    model: str = "auto"  # auto, kde, histogram, smoothed, hybrid (generators/kps_models.py)
    select: str = "auto"  # auto: choose model and parameters privately; none: as given
    mixture: float = 0.5  # the hybrid's histogram weight λ (select="none")
    histogram_power: float = 1.0  # purity exponent p of the histogram weights (select="none")
    smoothing: float = 0.7  # the smoothed histogram's kernel bandwidth (select="none")
    # documents the selection scores (a keyed-hash sample); None: half of them for a
    # shared selection (the releases count them anyway), a tenth for a holdout fold
    validation_share: float | None = None
    selection_split: str = "auto"  # shared, holdout; auto: shared with a total ε (below)
    selection_share: float = 0.05  # of a total epsilon, for a shared selection
    # the share of the first candidate's errors another must remove to be chosen
    # (privacy.selection.margin_scores)
    selection_margin: float = SELECTION_MARGIN
    histogram_terms: int = 5000  # most kept histogram columns in Ṽ
    selection_sequences: int = 200  # sequences per class per candidate, to score it

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
    model_: Any = field(init=False, repr=False, default=None)  # the KeyphraseModel sampled
    histogram_: Any = field(init=False, repr=False, default=None)  # ReleasedHistogram
    selection_: dict | None = field(init=False, repr=False, default=None)
    terms_per_doc_: int = field(init=False, repr=False, default=0)  # S used (released)

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
        if self.terms_per_doc != "auto" and not (
                isinstance(self.terms_per_doc, int) and not isinstance(self.terms_per_doc, bool)
                and self.terms_per_doc >= 1):
            raise ValueError(f"terms_per_doc must be a positive integer or 'auto', got "
                             f"{self.terms_per_doc!r}")
        if not (number(self.terms_share) and 0 < self.terms_share < 1):
            raise ValueError(f"terms_share must be in (0, 1), got {self.terms_share!r}")
        for name in ("vocab_size", "length", "features", "windows_per_doc"):
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
        if self.validation_share is not None and not (
                number(self.validation_share) and 0 < self.validation_share <= 0.5):
            raise ValueError(f"validation_share must be None or in (0, 0.5], got "
                             f"{self.validation_share!r}")
        if not (number(self.selection_margin) and 0 <= self.selection_margin <= 0.5):
            raise ValueError(f"selection_margin must be in [0, 0.5], got "
                             f"{self.selection_margin!r}")
        if self.selection_split not in SELECTION_SPLITS:
            raise ValueError(f"selection_split must be one of {', '.join(SELECTION_SPLITS)}; "
                             f"got {self.selection_split!r}")
        if self.selection_split == "shared" and self.epsilon is None:
            raise ValueError("selection_split='shared' pays a share of a total epsilon; give "
                             "epsilon (or use 'holdout' with per-stage budgets)")
        if not (number(self.selection_share) and 0 < self.selection_share < 1):
            raise ValueError(f"selection_share must be in (0, 1), got {self.selection_share!r}")
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

    def _label_stages(self, labelled: bool) -> tuple[bool, bool]:
        """(DP label set, Laplace label histogram): which label releases the run makes.

        The label set when the corpus is labelled and ``labels`` is not declared; the
        histogram when ``epsilon_labels > 0`` and there is no label set (whose noisy
        counts serve instead)."""
        label_set = labelled and self.labels is None
        return label_set, self.epsilon_labels > 0 and not label_set

    def noise_specs(self, labelled: bool = True, single: bool = False
                    ) -> dict[str, NoiseSpec]:
        """The noise of each stage ("vocab" and "kde", or with ``single`` one "histogram"
        in their place; and "label set" / "labels" as ``_label_stages`` says;
        ``labelled``: whether the corpus has labels).

        With a total ε every stage is inside one ``split_budget``: the label histogram
        takes ``epsilon_labels`` of it, the label set ``label_set_share``, and the
        vocabulary and the sketches share the rest by ``vocab_share`` — the ledger then
        composes to the total. Per stage: each stage its own ε (the label set
        ``epsilon_label_set``), the run's δ split evenly over the Gaussian stages (half
        of it first set aside for the label set's threshold). A single histogram takes
        the share of both stages, or per stage the ε the two would compose to. With
        ``terms_per_doc="auto"`` and a total ε, a "terms" stage chooses S with
        ``terms_share`` of it (per stage: S = ``PER_STAGE_TERMS_PER_DOC``, no release), and
        a shared private selection (``_shared_selection``) takes ``selection_share``."""
        label_set, histogram = self._label_stages(labelled)
        kinds = {"histogram": self.vocab_noise} if single else \
            {"vocab": self.vocab_noise, "kde": self.kde_noise}
        if label_set:
            kinds[LABEL_SET] = self.vocab_noise
        thresholds = [LABEL_SET] if label_set else []
        if self.terms_per_doc == "auto" and self.epsilon is not None:
            kinds["terms"] = "laplace"  # report-noisy-max: pure ε
        if labelled and self._shared_selection():
            kinds["selection"] = "laplace"  # report-noisy-max: pure ε
        if self.epsilon is not None:
            fixed = {"terms": self.terms_share} if "terms" in kinds else {}
            if "selection" in kinds:
                fixed["selection"] = self.selection_share
            if histogram:
                fixed["labels"] = self.epsilon_labels / self.epsilon
                kinds["labels"] = "laplace"
            if label_set:
                fixed[LABEL_SET] = self.label_set_share
            rest = 1.0 - sum(fixed.values())
            if not rest > 0:
                raise ValueError("epsilon_labels, label_set_share, terms_share and "
                                 "selection_share leave nothing of the total epsilon for the "
                                 "vocabulary and the sketches")
            shares = {"histogram": rest} if single else \
                {"vocab": self.vocab_share * rest, "kde": (1 - self.vocab_share) * rest}
            return split_budget(self.epsilon, self.delta, {**shares, **fixed}, kinds,
                                thresholds)
        eps = {"vocab": self.epsilon_vocab, "kde": self.epsilon_kde,
               LABEL_SET: self.epsilon_label_set}
        if single:  # what the two stages would have composed to
            two = self.noise_specs(labelled=False)
            eps["histogram"] = _composed_epsilon([two["vocab"], two["kde"]])
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

        specs = self.noise_specs(labelled, single=self._single())
        out = [planned_value_set(specs[LABEL_SET])] if LABEL_SET in specs else []
        if "terms" in specs:
            out.append(planned(TERMS_CHOICE_NAME, specs["terms"]))
        if not self._legacy():
            return out + self._planned_model_releases(planned, labelled)
        out.append(planned("vocabulary histogram", specs["vocab"]))
        if "labels" in specs:
            out.append(planned("label histogram", specs["labels"]))
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

    def vocab_spec(self) -> str | Any:
        """The public vocabulary: ``vocab``, with "auto" resolved by the model family
        (``AUTO_VOCAB``: function words for the histogram models, not for the KDE)."""
        if self.vocab != "auto":
            return self.vocab
        return AUTO_VOCAB["kde" if self._legacy() or "kde" in self._needs() else "histogram"]

    def _single(self) -> bool:
        """Whether one class × term histogram is the run's only model release (no KDE)."""
        return not self._legacy() and "kde" not in self._needs()

    def model_noise_specs(self, labelled: bool = True) -> dict[str, NoiseSpec]:
        """Noise of the model releases: the class × term histogram takes the vocabulary's
        share (it replaces the vocabulary release), the sketches theirs; a histogram
        alone takes what both would (``noise_specs(single=True)``). The label stages
        keep their own shares."""
        specs = self.noise_specs(labelled, single=self._single())
        if "kde" in self._needs():
            return {"histogram": specs["vocab"], "kde": specs["kde"]}
        return {"histogram": specs["histogram"]}

    def candidate_specs(self) -> list[tuple[str, float | None]]:
        """(family, parameter) of each candidate model: the histogram weight λ of a
        hybrid, the contrastive keep share of a KDE. All are post-processing of the same
        releases, so the candidates share them and none pays separately. The first is the
        reference that the selection's margin favours (``privacy.selection.margin_scores``)."""
        family = self._family()
        if self.select == "none":
            family = "histogram" if family == "auto" else family
            param = {"hybrid": self.mixture, "kde": self.contrastive_keep,
                     "histogram": (self.histogram_power, self.vocab_noise_terms),
                     "smoothed": (self.smoothing, self.histogram_power)}[family]
            return [(family, param)]
        keeps = [("kde", k) for k in dict.fromkeys((self.contrastive_keep, 0.3))]
        hybrids = [("hybrid", m) for m in dict.fromkeys((self.mixture, 0.25, 0.5, 0.75))]
        powers = dict.fromkeys((self.histogram_power, 0.0, 0.5, 2.0))
        floors = dict.fromkeys(f * self.vocab_noise_terms for f in FLOOR_FACTORS)
        hists = [("histogram", (p, f)) for f in floors for p in powers]
        smoothed = [("smoothed", (h, p)) for h in dict.fromkeys((self.smoothing, 0.5))
                    for p in powers]
        # auto: the histogram's purity powers, which all share ONE release (the KDE and the
        # hybrid need a second one, which would halve the histogram's budget; smoothing
        # lost to the plain histogram on both dev corpora: docs/benchmarks.md). Power 0
        # (sampling by class frequency alone) won on short texts, 0.5-1 on long ones; a
        # floor at 100 expected false cells on long ones, 10 on short ones (the rest is noise)
        return {"kde": keeps, "histogram": hists, "smoothed": [*hists, *smoothed],
                "hybrid": hybrids, "auto": hists}[family]

    def _selects(self) -> bool:
        """Whether a private selection is planned: ``select="auto"`` with more than one
        candidate (an upper bound: with one class, known only after reading the labels,
        nothing is selected — ``_selecting``)."""
        return self.select == "auto" and len(self.candidate_specs()) > 1

    def _selecting(self, labels: list) -> bool:
        return self._selects() and len(labels) > 1

    def _shared_selection(self) -> bool:
        """Whether the private selection scores a sample of the same documents the releases
        count, paying ``selection_share`` of the total ε (sequential composition) — rather
        than a disjoint holdout fold, which composes in parallel (no ε of its own) but
        whose documents the releases lose. Measured on Banking77 at ε = 6: losing 10 % of
        the documents cost more (0.77 against 0.80) than 5 % of ε. Without a total ε
        (per-stage budgets: each stage exactly its own ε) the holdout fold is used."""
        if not self._selects():
            return False
        split = self.selection_split
        if split == "auto":
            split = "shared" if self.epsilon is not None else "holdout"
        return split == "shared"

    def _planned_model_releases(self, planned, labelled: bool = True) -> list[Release]:
        specs = self.model_noise_specs(labelled)
        shared = labelled and self._shared_selection()
        fold = FIT_FOLD if self._selects() and not shared else None
        out = [planned(HISTOGRAM_NAME, specs["histogram"], fold=fold)]
        label_specs = self.noise_specs(labelled, single=self._single())
        if "labels" in label_specs:
            out.append(planned("label histogram", label_specs["labels"]))
        if "kde" in specs:
            out.append(planned("KDE sketch sums", specs["kde"], "KDE", fold=fold))
        if shared:
            out.append(planned(SELECTION_NAME, label_specs["selection"]))
        elif fold is not None:
            out.append(planned(SELECTION_NAME,
                               NoiseSpec("laplace", self._selection_epsilon(labelled)),
                               fold=VALIDATION_FOLD))
        return out

    def _selection_epsilon(self, labelled: bool = True) -> float:
        """The selection's ε. Shared: its own share of the total. Holdout: the validation
        fold holds other documents than the fit fold
        (parallel composition), so it may cost what the fit fold's releases add to the
        releases made on all documents (the label stages and S's choice): the run's ε does
        not grow."""
        stages = self.noise_specs(labelled, single=self._single())
        if "selection" in stages:
            return stages["selection"].epsilon
        shared = [stages[s] for s in (LABEL_SET, "labels", "terms") if s in stages]
        model = list(self.model_noise_specs(labelled).values())
        return _composed_epsilon(shared + model) - _composed_epsilon(shared)

    # ---------------------------------------------------------------- fitting
    def fit(self, corpus: Corpus, *, rng: np.random.Generator | None = None,
            progress=None) -> KeyphraseSeeder:
        """Make all DP releases for ``corpus``; see the module docstring."""
        from dptext.embed import default_cache_dir, load_embedder
        from dptext.text.vocabulary import PublicVocabulary, load_vocabulary

        self._validate()
        rng = np.random.default_rng() if rng is None else rng
        step = progress or (lambda msg: None)
        labelled = corpus.labels is not None
        specs = self.noise_specs(labelled, single=self._single())  # before any release: checks
        self._check_labels(corpus)
        step("public vocabulary")
        vocab = self.vocab if isinstance(self.vocab, PublicVocabulary) else load_vocabulary(
            self.vocab_spec())
        if self.vocab_size > len(vocab):
            raise ValueError(f"vocab_size={self.vocab_size} exceeds the public vocabulary "
                             f"({len(vocab)} terms)")
        blocks = ensemble_blocks(self.method, self.length, self.ensemble)
        self.ledger_ = PrivacyLedger()
        self.label_counts_ = self.label_set_ = None
        if LABEL_SET in specs:
            step("DP label set")
        labels = self._class_labels(corpus, specs)
        self.terms_per_doc_ = self._choose_terms_per_doc(corpus, vocab, specs, step)
        if not self._legacy():
            self._fit_models(corpus, labels, vocab, specs, rng, step)
            return self
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

        released = PublicVocabulary("released", self.released_vocabulary_)
        features = [FourierFeatures.draw(embeddings.shape[1], b, self.features, self.bandwidth,
                                         rng) for b in blocks]
        step("DP KDE sketches")
        # each document's keyphrases and sketch contributions, summed per class over batches
        # on the current engine (dptext.compute); noise once per class, on the driver
        items = list(zip(corpus.texts, _class_ids(corpus, labels).tolist(), strict=True))
        self.sketches_ = release_corpus_sketches(
            items, labels, DocumentTerms(released.extractor(),
                                         self.max_terms_per_doc or self.length),
            embeddings, features, specs["kde"], self.ledger_, max_windows=self.windows_per_doc)
        self.embeddings_ = embeddings
        self.unigram_ = unigram_scores(self.sketches_, embeddings)
        self.candidates_ = candidate_sets(self.unigram_, self.sampling, self.contrastive_keep,
                                          min_keep=2 * self.length) if labels else {}
        self.class_signal_ = self._class_signal(labels, len(blocks), specs["kde"])
        self.model_ = KdeModel(self.sketches_, self.unigram_, self.candidates_, embeddings,
                               self.method)
        return self

    def _fit_models(self, corpus: Corpus, labels: list, vocab, stage_specs: dict,
                    rng: np.random.Generator, step) -> None:
        """The histogram / hybrid path: the class × term histogram (it also gives Ṽ), the
        KDE sketches over Ṽ when a candidate needs them, then the private selection.
        Documents of a label outside ``labels`` (not in the DP label set) take part in no
        release."""
        selecting = self._selecting(labels)
        specs = self.model_noise_specs(corpus.labels is not None)
        if not labels:  # no label reached the DP label set (said): no class to model
            self.released_vocabulary_ = ()
            self.sketches_ = ReleasedSketches(features=(), sums={})
            self.embeddings_ = np.zeros((0, 0), dtype=np.float32)
            self.class_signal_ = []
            self.selection_ = {"candidates": [], "chosen": None, "selected": False,
                               "validation_share": 0.0}
            return
        shared = selecting and self._shared_selection()
        fit_fold = FIT_FOLD if selecting and not shared else None
        class_ids = _class_ids(corpus, labels)
        share = self.validation_share or (0.5 if shared else 0.1)
        val = fold_of(corpus.texts, share) if selecting else np.zeros(len(corpus), dtype=bool)
        val_idx = np.flatnonzero(val)
        step("DP class × term histogram")
        # exact counts of the fit fold (holdout validation documents: class −1, not counted;
        # a shared selection's sample stays in), summed over batches on the current engine
        # (dptext.compute); noise once, on the driver
        counted = class_ids if shared else np.where(val, -1, class_ids)
        exact = map_sum(ClassTermCounts(vocab.extractor(), self.terms_per_doc_, len(labels)),
                        list(zip(corpus.texts, counted.tolist(), strict=True)))
        specs_c = self.candidate_specs()
        floors = [p[1] for f, p in specs_c if f == "histogram"]
        hist = release_counts(exact, labels, vocab.terms, specs["histogram"], self.ledger_,
                              terms_per_doc=self.terms_per_doc_,
                              false_cells=max(floors, default=self.vocab_noise_terms),
                              max_terms=self.histogram_terms, fold=fit_fold)
        self.histogram_ = hist
        self.released_vocabulary_ = hist.terms
        if len(hist.terms) < self.length:
            warnings.warn(f"only {len(hist.terms)} terms rose above the noise floor of the "
                          "class × term histogram; sequences will be shorter than "
                          f"{self.length} (no noise terms are added). Raise --epsilon or use "
                          "a smaller public vocabulary.", stacklevel=3)
        if "labels" in stage_specs:
            step("DP label counts")
            self.label_counts_ = self._release_label_counts(corpus, labels)
        elif self.label_set_ is not None and self.epsilon_labels > 0:
            self.label_counts_ = dict(self.label_set_.counts["label"])  # already released
        # each document's terms as indices into Ṽ, in order of appearance (the KDE's batches
        # find them for the fit fold; here only the validation fold's, for the selection)
        to_released = np.full(len(vocab), -1, dtype=np.int64)
        to_released[_positions(vocab.terms, hist.terms)] = np.arange(len(hist.terms))
        val_terms = DocumentTerms(vocab.extractor(), self.terms_per_doc_, to_released)(
            [corpus.texts[i] for i in val_idx])

        histogram = HistogramModel(hist, self.histogram_power, self.vocab_noise_terms)
        kde = None
        self.sketches_ = ReleasedSketches(features=(), sums={c: () for c in labels})
        self.embeddings_ = np.zeros((len(hist.terms), 0), dtype=np.float32)
        if len(hist.terms) and (selecting or "kde" in specs
                                or any(f == "smoothed" for f, _ in specs_c)):
            self.embeddings_ = self._embed_released(step)
        if "kde" in specs and len(hist.terms):
            items = list(zip(corpus.texts, counted.tolist(), strict=True))
            kde = self._fit_kde(items, DocumentTerms(
                vocab.extractor(), self.terms_per_doc_, to_released,
                self.max_terms_per_doc or self.length), labels, specs["kde"], fit_fold, rng,
                step)
        kernels: dict = {}
        cands = []
        for family, param in specs_c:
            if family == "smoothed" and len(hist.terms):
                h, p = param
                if h not in kernels:
                    kernels[h] = neighbour_kernel(self.embeddings_, SMOOTHING_NEIGHBOURS, h)
                cands.append(SmoothedHistogramModel(hist, kernels[h], h, p,
                                                    self.vocab_noise_terms))
            elif family == "histogram":
                cands.append(replace(histogram, power=param[0], false_cells=param[1]))
            elif family == "smoothed" or kde is None:
                cands.append(histogram)
            elif family == "kde":
                cands.append(kde if param == self.contrastive_keep else
                             replace(kde, candidates=candidate_sets(
                                 kde.unigram, self.sampling, param, min_keep=2 * self.length)))
            else:
                cands.append(MixtureModel(histogram, kde, param))
        self.model_ = cands[0]
        self.class_signal_ = []  # the KDE's estimate; released_signal() tells the histogram's
        if selecting:
            step("private model selection")
            x = presence_matrix(val_terms, len(hist.terms))
            chosen = select_model(cands, labels, x, class_ids[val_idx],
                                  term_embeddings=self.embeddings_,
                                  epsilon=self._selection_epsilon(corpus.labels is not None),
                                  ledger=self.ledger_,
                                  per_class=self.selection_sequences, length=self.length,
                                  rng=rng, margin=self.selection_margin,
                                  fold=None if shared else VALIDATION_FOLD)
            self.model_ = cands[chosen]
        self.selection_ = {"candidates": [describe(m) for m in cands],
                           "chosen": describe(self.model_), "selected": selecting,
                           "validation_share": share if selecting else 0.0,
                           "margin": self.selection_margin if selecting else 0.0,
                           "split": ("shared" if shared else "holdout") if selecting else None}

    def _embed_released(self, step) -> np.ndarray:
        """Embeddings of the released vocabulary (public terms only: the cache is safe)."""
        from dptext.embed import default_cache_dir, load_embedder

        step("embedding the released vocabulary")
        cache = default_cache_dir() if self.cache_dir is None else self.cache_dir
        embedder = load_embedder(self.embedder, cache_dir=cache) if isinstance(
            self.embedder, str) else self.embedder
        return np.ascontiguousarray(embedder.encode(list(self.released_vocabulary_)),
                                    dtype=np.float32)

    def _fit_kde(self, items, sequences_of, labels, noise, fold, rng, step) -> KdeModel:
        """The KDE sketches of ``items`` ((text, class id) pairs; −1: in no class), each
        document's keyphrases given by ``sequences_of``."""
        embeddings = self.embeddings_
        features = [FourierFeatures.draw(embeddings.shape[1], b, self.features, self.bandwidth,
                                         rng)
                    for b in ensemble_blocks(self.method, self.length, self.ensemble)]
        step("DP KDE sketches")
        self.sketches_ = release_corpus_sketches(items, labels, sequences_of, embeddings,
                                                 features, noise, self.ledger_,
                                                 max_windows=self.windows_per_doc, fold=fold)
        self.unigram_ = unigram_scores(self.sketches_, embeddings)
        self.candidates_ = candidate_sets(self.unigram_, self.sampling, self.contrastive_keep,
                                          min_keep=2 * self.length)
        return KdeModel(self.sketches_, self.unigram_, self.candidates_, embeddings, self.method)

    def _check_labels(self, corpus: Corpus) -> None:
        """Before any release: the declared labels cover the data (else an input error
        whose private detail goes to the curator's terminal only)."""
        check_declared_labels(corpus, self.labels)

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

    def _choose_terms_per_doc(self, corpus: Corpus, vocab, specs: dict, step) -> int:
        """S: ``terms_per_doc``, or with "auto" a private choice over every document's
        count of distinct public terms (``kde.terms_per_doc``; one release)."""
        if "terms" not in specs:
            return self._given_terms_per_doc()
        step("DP choice of terms per document")
        scores = map_sum(TermCountScores(vocab.extractor()), corpus.texts)
        return choose_terms_per_doc(scores.tolist(), epsilon=specs["terms"].epsilon,
                                    ledger=self.ledger_)

    def _given_terms_per_doc(self) -> int:
        """S when none is chosen: as given; with "auto" under per-stage budgets (the
        paper's interface: each stage exactly its own ε) ``PER_STAGE_TERMS_PER_DOC``."""
        return PER_STAGE_TERMS_PER_DOC if self.terms_per_doc == "auto" else self.terms_per_doc

    def _release_vocabulary(self, corpus: Corpus, vocab, spec: NoiseSpec | None = None
                            ) -> tuple[str, ...]:
        spec = spec or self.noise_specs(corpus.labels is not None)["vocab"]
        return release_vocabulary(corpus.texts, vocab, spec, self.ledger_,
                                  terms_per_doc=self.terms_per_doc_ or
                                  self._given_terms_per_doc(), size=self.vocab_size,
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
        lines = []
        eps = next((r.epsilon for r in self.ledger_.releases
                    if r.name.startswith(TERMS_CHOICE_NAME)), None)
        if eps is not None:
            lines.append(f"terms per document: S = {self.terms_per_doc_}, chosen privately "
                         f"from the documents' counts of public terms (ε = {eps:.3g})")
        sel = self.selection_
        if not sel or sel["chosen"] is None:
            return lines
        if sel["selected"]:
            eps = next(r.epsilon for r in self.ledger_.releases
                       if r.name.startswith(SELECTION_NAME))
            where = (f"scored on a sample of about {sel['validation_share']:.0%} of the "
                     f"documents (ε = {eps:.3g} of the total)") if sel.get("split") == "shared" \
                else (f"on a held-out fold of about {sel['validation_share']:.0%} of the "
                      f"documents (ε = {eps:.3g}, parallel to the releases on the other "
                      "documents)")
            lines.append(f"keyphrase model: {sel['chosen']}, chosen privately among "
                         f"{len(sel['candidates'])} candidates {where}; another candidate "
                         f"than {sel['candidates'][0]} had to get right "
                         f"{sel.get('margin', 0.0):.0%} of the documents that one got wrong")
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
            if 2 * len(weak) > len(signal):
                lines.append(
                    f"most classes ({len(weak)} of {len(signal)}) are weak: at this ε their "
                    "sequences carry little class signal. Raise ε, merge small classes or add "
                    "documents (measured on Banking77 at ε = 6: 33 documents per intent left "
                    "61 of 77 intents weak and cost 0.41 of downstream accuracy, 127 left 2 "
                    "and cost 0.09)")
        return lines

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
        counts = self.released_class_counts()
        if counts is None:
            return {c: total // len(labels) + (i < total % len(labels))
                    for i, c in enumerate(labels)}
        weights = np.array([max(counts.get(c, 0.0), 0.0) for c in labels]) + 1e-9
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
