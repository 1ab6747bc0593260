"""DP-KPS's options: every public parameter of a ``KeyphraseSeeder`` and their checks.

The defaults here are the one source of the CLI's and the API's DP-KPS defaults
(``cli/options.py`` reads them), the budget's form among them (``budget_form``): one total
ε, ``DEFAULT_EPSILON`` when nothing is given, split by the plan; per-stage ε (the paper's
interface) only when a per-stage option is given. Defaults were chosen by measurement on BBC News
(docs/method.md, and ``benchmarks/bench_keyphrase_utility.py`` in docs/benchmarks.md);
the paper's own setting is ``vocab_noise="laplace", kde_noise="laplace",
terms_per_doc=10, sampling="proportional", vocab_noise_terms=inf, features=1000``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dptext.generators.base import DEFAULT_EPSILON
from dptext.generators.kps.models import MODELS
from dptext.kde.sampler import SAMPLING
from dptext.kde.sketch import ENSEMBLES
from dptext.privacy import NOISE_KINDS
from dptext.privacy.label_sets import SET_MODELS
from dptext.privacy.selection import SELECTION_MARGIN

METHODS = ("independent", "iterative")
PER_STAGE_TERMS_PER_DOC = 80  # S under per-stage budgets (no share of a total ε to choose it)
SELECT = ("auto", "none")
SELECTION_SPLITS = ("auto", "shared", "holdout")
#: the paper's split, for a per-stage option not given beside the other one
PER_STAGE_EPSILONS = {"epsilon_vocab": 1.0, "epsilon_kde": 5.0}
#: L, keyphrases a sequence, when none is given: 10, and 30 for a multi-label corpus,
#: whose documents hold their labels' terms past their first ones (radiology reports:
#: 30 against 10 in 8 of 9 cells of docs/benchmarks.md, section multi-label)
LENGTH, MULTILABEL_LENGTH = 10, 30


def with_default_length(options: dict, multilabel: bool) -> dict:
    """``options`` (KeyphraseSeeder's keyword arguments) with L set where none is given
    (absent or None): ``MULTILABEL_LENGTH`` for a multi-label corpus, else ``LENGTH``.
    The one rule for the CLI and ``dptext.synthesize``."""
    if options.get("length") is not None:
        return options
    return {**options, "length": MULTILABEL_LENGTH if multilabel else LENGTH}


def budget_form(epsilon: float | None, epsilon_vocab: float | None = None,
                epsilon_kde: float | None = None) -> dict[str, float]:
    """The budget a DP-KPS run is given: ``{"epsilon": E}``, one total split by the plan
    (``DEFAULT_EPSILON`` when no ε is given), or, when a per-stage ε is given,
    ``{"epsilon_vocab": ..., "epsilon_kde": ...}`` (the other from ``PER_STAGE_EPSILONS``).
    The one rule for the CLI, ``dptext.synthesize`` and ``KeyphraseSeeder``."""
    stages = {"epsilon_vocab": epsilon_vocab, "epsilon_kde": epsilon_kde}
    if all(v is None for v in stages.values()):
        return {"epsilon": DEFAULT_EPSILON if epsilon is None else epsilon}
    if epsilon is not None:
        raise ValueError("give either a total epsilon (--epsilon) or the per-stage "
                         "epsilon_vocab/epsilon_kde (--epsilon-vocab/--epsilon-kde), not both")
    return {k: PER_STAGE_EPSILONS[k] if v is None else v for k, v in stages.items()}


FORM_CHOICES = (True, False, "auto")


@dataclass
class SeederOptions:
    """The public parameters of DP-KPS (all of them may be shown and stored). The budget
    is resolved on construction (``budget_form``): ``epsilon`` the total, or None and the
    two per-stage ε."""

    vocab: Any = "auto"  # a spec or a PublicVocabulary; auto: AUTO_VOCAB by model
    embedder: Any = "minilm"
    epsilon_vocab: float | None = None  # per stage (then epsilon is None); budget_form
    epsilon_kde: float | None = None
    delta: float = 1e-5
    epsilon: float | None = None  # the total; None given: DEFAULT_EPSILON unless per stage
    vocab_share: float = 0.5
    vocab_noise: str = "gaussian"
    kde_noise: str = "gaussian"
    terms_per_doc: int | str = "auto"  # S; auto: chosen privately (keyphrases/terms_per_doc.py)
    terms_share: float = 0.05  # of a total epsilon, for choosing S (terms_per_doc="auto")
    vocab_size: int = 1000
    vocab_noise_terms: float = 10.0
    method: str = "independent"
    ensemble: str = "log"
    length: int = LENGTH
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
    model: str = "auto"  # auto, kde, histogram, smoothed, hybrid (kps/models.py)
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
    # the form profile (kps/form.py): per class, the noisy sum of the documents' public
    # form features, and a form drawn with each sequence. auto: released when a private
    # selection runs, which then also chooses whether the sequences carry a form
    form: bool | str = "auto"
    form_share: float = 0.1  # of a total epsilon, for the form profile
    epsilon_form: float = 1.0  # the form profile's ε with per-stage epsilon_vocab/epsilon_kde
    # a multi-label corpus: labels a document keeps at most (privacy/label_sets.py); the
    # class × term histogram's noise grows as √min(max_labels_per_doc, labels released).
    # 10, not 4: on radlabels with 10 findings half the reports hold more than 4, and the
    # labels the cap drops teach the classifier they are absent (docs/benchmarks.md,
    # multi-label)
    max_labels_per_doc: int = 10
    # how synthetic label sets are drawn (privacy/label_sets.py): from the released labels
    # and set sizes (marginal) or from the released sets (joint). Marginal: on radlabels
    # never far behind and far ahead with 10 labels, where most sets are rare
    # (docs/benchmarks.md, multi-label)
    label_set_model: str = "marginal"

    def __post_init__(self) -> None:
        form = budget_form(self.epsilon, self.epsilon_vocab, self.epsilon_kde)
        self.epsilon = form.get("epsilon")
        self.epsilon_vocab, self.epsilon_kde = (form.get(k) for k in PER_STAGE_EPSILONS)

    def validate(self) -> None:
        """Refuse options out of range, before any release (plain ValueErrors)."""
        def number(value) -> bool:  # a real number, not a bool or a string
            return isinstance(value, int | float) and not isinstance(value, bool) \
                and not math.isnan(value)

        def positive(name: str, value: float) -> None:
            if not (number(value) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")

        budget_form(self.epsilon, self.epsilon_vocab, self.epsilon_kde)  # one form, not both
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
        positive("epsilon_form", self.epsilon_form)
        if not any(self.form is c or (isinstance(c, str) and self.form == c)
                   for c in FORM_CHOICES):
            raise ValueError(f"form must be True, False or 'auto', got {self.form!r}")
        if not (number(self.form_share) and 0 < self.form_share < 1):
            raise ValueError(f"form_share must be in (0, 1), got {self.form_share!r}")
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
        for name in ("vocab_size", "length", "features", "windows_per_doc",
                     "max_labels_per_doc"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name, value, choices in (("vocab_noise", self.vocab_noise, NOISE_KINDS),
                                     ("kde_noise", self.kde_noise, NOISE_KINDS),
                                     ("method", self.method, METHODS),
                                     ("ensemble", self.ensemble, ENSEMBLES),
                                     ("sampling", self.sampling, SAMPLING),
                                     ("label_set_model", self.label_set_model, SET_MODELS)):
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
        if ("gaussian" in (self.vocab_noise, self.kde_noise)
                or self.form_planned(self.select == "auto")) and not (
                number(self.delta) and 0 < self.delta < 1):
            raise ValueError(f"Gaussian noise needs 0 < delta < 1, got {self.delta!r}")

    def form_planned(self, selects: bool) -> bool:
        """Whether a fit releases the form profile: with ``form=True``, or with "auto" when
        a private selection is planned (``selects``) to decide whether it is used and the
        budget is one total ε (its ``form_share``). Per-stage budgets (the paper's
        interface: each stage exactly the ε it is given) add no stage that was not asked
        for: there "auto" plans none."""
        return self.form is True or (self.form == "auto" and selects
                                     and self.epsilon is not None)

    def given_terms_per_doc(self) -> int:
        """S when none is chosen privately: as given; with "auto" under per-stage budgets
        (the paper's interface: each stage exactly its own ε) ``PER_STAGE_TERMS_PER_DOC``."""
        return PER_STAGE_TERMS_PER_DOC if self.terms_per_doc == "auto" else self.terms_per_doc
