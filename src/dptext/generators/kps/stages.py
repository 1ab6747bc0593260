"""DP-KPS's stages: each states the releases it will make (``planned``) and makes them
(``run``) on a ``Fitting``. ``plan.py`` lists them: the paper's path and the models'.

A stage reads the options and the plan's noise, and what earlier stages left in the
``Fitting`` (the public classes, the fold, how a document's keyphrases are read in Ṽ);
it writes the released state onto the seeder. Every release goes into the ledger the
fit was given.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dptext.compute import map_sum
from dptext.corpus import Corpus
from dptext.generators.kps.budget import planned_release
from dptext.generators.kps.form import FORM_GROUP, FORM_NAME, release_form_profile
from dptext.generators.kps.models import (
    HistogramModel,
    KdeModel,
    MixtureModel,
    SmoothedHistogramModel,
    describe,
    neighbour_kernel,
)
from dptext.generators.kps.multilabel import fit_label_sets, label_contrast
from dptext.generators.kps.releases import (
    DocumentTerms,
    class_ids,
    embed_terms,
    release_kde,
    release_label_counts,
    release_vocabulary,
    released_index,
)
from dptext.generators.kps.report import class_signal
from dptext.generators.kps.selection import SELECTION_NAME, presence_matrix, select_model
from dptext.kde.sampler import candidate_sets
from dptext.kde.sketch import ReleasedSketches, ensemble_blocks
from dptext.keyphrases.histogram import HISTOGRAM_NAME, ClassTermCounts, release_counts
from dptext.keyphrases.terms_per_doc import TERMS_CHOICE_NAME, TermCountScores, choose_terms_per_doc
from dptext.privacy import NoiseSpec, PrivacyLedger, Release
from dptext.privacy.labels import LABEL_SET, planned_value_set, release_label_set
from dptext.privacy.selection import FIT_FOLD, VALIDATION_FOLD, fold_of
from dptext.text.form import form_vectors

SMOOTHING_NEIGHBOURS = 10  # released terms each kept count is spread over (smoothed model)


@dataclass
class Fitting:
    """A fit in progress: its inputs, and what earlier stages leave for later ones."""

    seeder: Any  # the KeyphraseSeeder: options in, released state out
    plan: Any
    corpus: Corpus
    vocab: Any  # the public vocabulary
    ledger: PrivacyLedger
    rng: np.random.Generator
    step: Callable[[str], None]
    labels: list  # the public classes: [None], the declared labels or the DP label set
    counted: np.ndarray | None = None  # each document's class in the releases (−1: none)
    class_ids: np.ndarray | None = None  # each document's class (index into labels)
    fold: str | None = None  # of the releases on the fit fold (a holdout selection)
    selecting: bool = False  # a private selection runs (planned, and more than one class)
    shared: bool = False  # it scores documents that the releases count
    share: float = 0.0  # of the documents it scores
    validation: np.ndarray | None = None  # their indices
    validation_terms: list | None = None  # their terms, as indices into Ṽ
    sequences_of: DocumentTerms | None = None  # a document's keyphrases in Ṽ (the sketches')
    kde: KdeModel | None = None
    form_profile: Any = None  # the released form profile (kps.form.FormProfile), if any
    done: bool = False  # no class to model: the later stages have nothing to do
    # multi-label (kps/multilabel.py): ``corpus`` holds one row per (document, label),
    # ``documents`` the documents, ``rows`` the most rows a document has
    documents: Corpus | None = None
    rows: int = 1


class Stage:
    """One step of a fit; ``applies``: whether a plan includes it."""

    def applies(self, plan) -> bool:
        return True

    def planned(self, plan) -> list[Release]:
        return []

    def run(self, f: Fitting) -> None:
        raise NotImplementedError


class LabelSet(Stage):
    """The DP label set (``privacy.labels``) of a labelled corpus without declared labels;
    documents whose label is not released are in no class."""

    def applies(self, plan) -> bool:
        return LABEL_SET in plan.specs

    def planned(self, plan) -> list[Release]:
        return [planned_value_set(plan.specs[LABEL_SET])]

    def public_options(self, plan, o) -> tuple[str, ...]:
        share = "label_set_share" if o.epsilon is not None else "epsilon_label_set"
        return (share, "max_labels_per_doc", "label_set_model") if plan.multilabel \
            else (share,)

    def run(self, f: Fitting) -> None:
        if f.plan.multilabel:
            f.step("DP label sets")
            fit_label_sets(f)
        else:
            f.step("DP label set")
            f.seeder.label_set_ = release_label_set(
                f.corpus.labels, f.plan.specs[LABEL_SET], ledger=f.ledger)
        released = f.seeder.label_set_
        f.labels = list(released.values["label"])
        if not f.labels:
            warnings.warn(f"no label reached the DP label set's threshold (a noisy count of "
                          f"{released.threshold:.0f}): there is no class to draw "
                          "sequences for. Declare the label set with --labels, or raise "
                          "--epsilon or --label-set-share.", stacklevel=3)


class TermsPerDocument(Stage):
    """S chosen privately over every document's count of distinct public terms
    (``keyphrases.terms_per_doc``); without this stage S is as given."""

    def applies(self, plan) -> bool:
        return "terms" in plan.specs

    def planned(self, plan) -> list[Release]:
        return [planned_release(TERMS_CHOICE_NAME, plan.specs["terms"])]

    def run(self, f: Fitting) -> None:
        f.step("DP choice of terms per document")
        scores = map_sum(TermCountScores(f.vocab.extractor()),
                         (f.documents or f.corpus).texts)
        f.seeder.terms_per_doc_ = choose_terms_per_doc(
            scores.tolist(), epsilon=f.plan.specs["terms"].epsilon, ledger=f.ledger)


class Vocabulary(Stage):
    """The paper's DP vocabulary Ṽ (appendix B.1); a document's keyphrases are then its
    first L distinct terms of Ṽ."""

    def planned(self, plan) -> list[Release]:
        return [planned_release("vocabulary histogram", plan.specs["vocab"])]

    def run(self, f: Fitting) -> None:
        from dptext.text.vocabulary import PublicVocabulary

        o = f.seeder
        f.step("DP vocabulary")
        o.released_vocabulary_ = release_vocabulary(
            f.corpus.texts, f.vocab, f.plan.specs["vocab"], f.ledger,
            terms_per_doc=o.terms_per_doc_, size=o.vocab_size,
            noise_terms=o.vocab_noise_terms, min_terms=o.length)
        released = PublicVocabulary("released", o.released_vocabulary_)
        f.sequences_of = DocumentTerms(released.extractor(), o.max_terms_per_doc or o.length)
        f.counted = class_ids(f.corpus, f.labels)


class LabelCounts(Stage):
    """DP class sizes (to size classes in proportion): the Laplace label histogram, or
    without declared labels the label set's noisy counts, at no further cost."""

    def applies(self, plan) -> bool:
        return "labels" in plan.specs or LABEL_SET in plan.specs

    def planned(self, plan) -> list[Release]:
        return [planned_release("label histogram", plan.specs["labels"])] \
            if "labels" in plan.specs else []

    def run(self, f: Fitting) -> None:
        o = f.seeder
        if "labels" in f.plan.specs:
            f.step("DP label counts")
            o.label_counts_ = release_label_counts(f.corpus, f.labels, o.epsilon_labels,
                                                   f.ledger)
        elif o.epsilon_labels > 0:
            o.label_counts_ = dict(o.label_set_.counts["label"])  # already released


class Embedding(Stage):
    """Embeddings of Ṽ (public terms): for the sketches, the smoothed model and the
    selection; ``always``: also when Ṽ is empty or nothing reads them (the paper's path)."""

    def __init__(self, always: bool):
        self.always = always

    def run(self, f: Fitting) -> None:
        o, terms = f.seeder, f.seeder.released_vocabulary_
        reads = f.selecting or "kde" in f.plan.model_specs or any(
            family == "smoothed" for family, _ in f.plan.candidates)
        if self.always or (len(terms) and reads):
            f.step("embedding the released vocabulary")
            o.embeddings_ = embed_terms(terms, o.embedder, o.cache_dir)
        else:
            o.embeddings_ = np.zeros((len(terms), 0), dtype=np.float32)


class KdeSketches(Stage):
    """Per class, the noisy sums of the random-Fourier-feature sketches of the documents'
    keyphrase sequences (one sketch, or the linear or logarithmic ensemble)."""

    def __init__(self, always: bool):
        self.always = always  # also over an empty Ṽ (the paper's path)

    def applies(self, plan) -> bool:
        return "kde" in plan.model_specs

    def planned(self, plan) -> list[Release]:
        return [planned_release("KDE sketch sums", plan.model_specs["kde"], "KDE",
                                fold=plan.fold)]

    def run(self, f: Fitting) -> None:
        o = f.seeder
        if not (self.always or len(o.released_vocabulary_)):
            return
        f.step("DP KDE sketches")
        items = list(zip(f.corpus.texts, f.counted.tolist(), strict=True))
        o.sketches_, o.unigram_, o.candidates_ = release_kde(
            o, items, f.sequences_of, f.labels, o.embeddings_, f.plan.model_specs["kde"],
            f.ledger, f.rng, fold=f.fold)
        f.kde = KdeModel(o.sketches_, o.unigram_, o.candidates_, o.embeddings_, o.method)


class SketchModel(Stage):
    """The paper's model: the KDE as given; warns of classes whose sketches look too
    noisy (from released counts only)."""

    def run(self, f: Fitting) -> None:
        o = f.seeder
        o.class_signal_ = class_signal(
            f.labels, o.released_class_counts(),
            len(ensemble_blocks(o.method, o.length, o.ensemble)), o.features,
            f.plan.specs["kde"])
        o.model_ = f.kde


class SelectionFolds(Stage):
    """Which documents the model releases count and which the private selection scores (a
    keyed-hash sample: shared, counted by the releases too; or a holdout fold, not)."""

    def run(self, f: Fitting) -> None:
        o = f.seeder
        if not f.labels:  # no label reached the DP label set (said): no class to model
            o.released_vocabulary_ = ()
            o.sketches_ = ReleasedSketches(features=(), sums={})
            o.embeddings_ = np.zeros((0, 0), dtype=np.float32)
            o.class_signal_ = []
            o.selection_ = {"candidates": [], "chosen": None, "selected": False,
                            "validation_share": 0.0}
            f.done = True
            return
        f.selecting = f.plan.selects and len(f.labels) > 1
        f.shared = f.selecting and f.plan.shared
        f.fold = FIT_FOLD if f.selecting and not f.shared else None
        f.class_ids = class_ids(f.corpus, f.labels)
        f.share = o.validation_share or (0.5 if f.shared else 0.1)
        val = fold_of(f.corpus.texts, f.share) if f.selecting else \
            np.zeros(len(f.corpus), dtype=bool)
        f.validation = np.flatnonzero(val)
        # holdout validation documents: class −1, not counted; a shared sample stays in
        f.counted = f.class_ids if f.shared else np.where(val, -1, f.class_ids)


class ClassTermHistogram(Stage):
    """The class × term histogram (``keyphrases.histogram``): it also gives Ṽ; a document's
    keyphrases are then its first S distinct public terms that are in Ṽ."""

    def planned(self, plan) -> list[Release]:
        return [planned_release(HISTOGRAM_NAME, plan.model_specs["histogram"],
                                fold=plan.fold)]

    def run(self, f: Fitting) -> None:
        o, vocab, s = f.seeder, f.vocab, f.seeder.terms_per_doc_
        f.step("DP class × term histogram")
        # exact counts summed over batches on the current engine (dptext.compute); noise
        # once, on the driver
        exact = map_sum(ClassTermCounts(vocab.extractor(), s, len(f.labels)),
                        list(zip(f.corpus.texts, f.counted.tolist(), strict=True)))
        floors = [p[1] for family, p in f.plan.candidates if family == "histogram"]
        hist = release_counts(exact, f.labels, vocab.terms, f.plan.model_specs["histogram"],
                              f.ledger, terms_per_doc=s,
                              false_cells=max(floors, default=o.vocab_noise_terms),
                              max_terms=o.histogram_terms, fold=f.fold, rows=f.rows)
        o.histogram_ = hist
        o.released_vocabulary_ = hist.terms
        if len(hist.terms) < o.length:
            warnings.warn(f"only {len(hist.terms)} terms rose above the noise floor of the "
                          "class × term histogram; sequences will be shorter than "
                          f"{o.length} (no noise terms are added). Raise --epsilon or use "
                          "a smaller public vocabulary.", stacklevel=3)
        to_released = released_index(vocab.terms, hist.terms)
        f.sequences_of = DocumentTerms(vocab.extractor(), s, to_released,
                                       o.max_terms_per_doc or o.length)
        f.validation_terms = DocumentTerms(vocab.extractor(), s, to_released)(
            [f.corpus.texts[i] for i in f.validation])
        o.sketches_ = ReleasedSketches(features=(), sums={c: () for c in f.labels})


class ModelSelection(Stage):
    """The candidate models (post-processing of the releases) and, when more than one
    class and candidate, the private choice among them (``kps.selection``)."""

    def planned(self, plan) -> list[Release]:
        if plan.shared:
            return [planned_release(SELECTION_NAME, plan.specs["selection"])]
        if plan.fold is not None:
            return [planned_release(SELECTION_NAME,
                                    NoiseSpec("laplace", plan.selection_epsilon),
                                    fold=VALIDATION_FOLD)]
        return []

    def run(self, f: Fitting) -> None:
        o, hist = f.seeder, f.seeder.histogram_
        cands = candidate_models(o, f.plan.candidates, hist, f.kde, o.embeddings_)
        o.model_ = cands[0]
        o.class_signal_ = []  # the KDE's estimate; released_signal() tells the histogram's
        chosen = 0  # with form="auto", cands + the same with a form: index len(cands) + i
        if f.selecting:
            f.step("private model selection")
            x = presence_matrix(f.validation_terms, len(hist.terms))
            val_forms = form_vectors([f.corpus.texts[i] for i in f.validation]) \
                if f.form_profile is not None else None
            chosen = select_model(cands, f.labels, x, f.class_ids[f.validation],
                                  term_embeddings=o.embeddings_,
                                  epsilon=f.plan.selection_epsilon, ledger=f.ledger,
                                  per_class=o.selection_sequences, length=o.length,
                                  rng=f.rng, margin=o.selection_margin,
                                  fold=None if f.shared else VALIDATION_FOLD,
                                  form_profile=f.form_profile, validation_forms=val_forms)
            o.model_ = cands[chosen % len(cands)]
        if f.plan.multilabel:  # each label sampled by its row's contrast
            o.model_ = label_contrast(hist)
        with_form = chosen >= len(cands)
        if with_form:
            o.form_profile_ = f.form_profile
        o.selection_ = {"candidates": [describe(m) for m in cands],
                        "chosen": describe(o.model_), "selected": f.selecting,
                        "validation_share": f.share if f.selecting else 0.0,
                        "margin": o.selection_margin if f.selecting else 0.0,
                        "split": ("shared" if f.shared else "holdout") if f.selecting
                        else None,
                        **({"form": with_form} if f.selecting and f.form_profile is not None
                           else {})}


class FormProfileStage(Stage):
    """Per class, the noisy sum of the documents' public form features (``kps/form.py``),
    on every document of a released class. With ``form=True`` the last release (the
    others are as without it) and every sequence carries a form; with ``form="auto"``
    (``auto``) released just before the private selection, which chooses whether the
    sequences use it (``ModelSelection``). Released as planned even when the selection
    finds one class and makes none (then unused): a planned Gaussian release left out
    would leave its δ unspent, and the ledger's ε at the smaller δ above the run's."""

    def __init__(self, auto: bool = False):
        self.auto = auto

    def applies(self, plan) -> bool:
        return plan.form == ("auto" if self.auto else "given")

    def planned(self, plan) -> list[Release]:
        return [planned_release(FORM_NAME, plan.specs["form"], FORM_GROUP)]

    def run(self, f: Fitting) -> None:
        f.step("DP form profile")
        items = zip(f.corpus.texts, class_ids(f.corpus, f.labels).tolist(), strict=True)
        f.form_profile = release_form_profile(items, f.labels, f.plan.specs["form"],
                                              f.ledger)
        if not self.auto:
            f.seeder.form_profile_ = f.form_profile


def candidate_models(o, candidates, hist, kde: KdeModel | None,
                     embeddings: np.ndarray) -> list:
    """The keyphrase model of each (family, parameter) candidate, over the releases."""
    histogram = HistogramModel(hist, o.histogram_power, o.vocab_noise_terms)
    kernels: dict = {}
    cands = []
    for family, param in candidates:
        if family == "smoothed" and len(hist.terms):
            h, p = param
            if h not in kernels:
                kernels[h] = neighbour_kernel(embeddings, SMOOTHING_NEIGHBOURS, h)
            cands.append(SmoothedHistogramModel(hist, kernels[h], h, p, o.vocab_noise_terms))
        elif family == "histogram":
            cands.append(replace(histogram, power=param[0], false_cells=param[1]))
        elif family == "smoothed" or kde is None:
            cands.append(histogram)
        elif family == "kde":
            cands.append(kde if param == o.contrastive_keep else
                         replace(kde, candidates=candidate_sets(
                             kde.unigram, o.sampling, param, min_keep=2 * o.length)))
        else:
            cands.append(MixtureModel(histogram, kde, param))
    return cands
