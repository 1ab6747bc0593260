"""DP-KPS keyphrase seeder: from a private corpus to DP keyphrase sequences.

``KeyphraseSeeder.fit`` makes every release of private information, each through
``dptext.privacy`` and into the ledger it is given (``ledger_``), stage by stage as the
options' plan lists them (``plan.py``, ``stages.py``); given none, it first charges the
plan to the corpus's persistent budget, as the run lifecycle does (``fit``):

0. unless ``labels`` declares the label set (public, free), the DP label set
   (``privacy.labels``: thresholded noisy label counts); documents whose label is
   not released are in no class and take part in no per-class release;
1. the DP vocabulary Ṽ (appendix B.1): each document's first S distinct public
   vocabulary terms, a noisy histogram over the whole public vocabulary, top N — or,
   for the keyphrase models, the class × term histogram, which also gives Ṽ;
2. optionally a noisy label histogram (to size classes in proportion; without
   declared labels the label set's noisy counts serve, at no further cost);
3. per class, the noisy sums of random-Fourier-feature sketches of the documents'
   keyphrase sequences (one sketch, or the linear or logarithmic ensemble);
4. the private choice among the candidate models, when there is one;
5. with ``form``, per class, the noisy sum of the documents' public form features
   (``kps/form.py``); ``sample`` then draws a form with each sequence.

A multi-label corpus (``Corpus.label_sets``) releases its capped label SETS in step 0
and counts each document in the class of each of its labels (``kps/multilabel.py``);
``sample`` then draws label sets and merges their labels' keyphrases.

With a total ``epsilon`` every stage is inside the one split (``budget.py``): the
ledger composes to that ε. ``sample`` only post-processes those releases, so it
can be called any number of times at no further privacy cost. Everything ``fit`` keeps
(``released_vocabulary_``, ``sketches_``, ``label_counts_``, ``label_set_``,
``class_signal_``) is released data or computed from it; the corpus is not retained,
and no exact private count is kept, printed or branched on.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dptext.corpus import Corpus
from dptext.generators.base import check_declared_labels
from dptext.generators.kps.multilabel import draw_multilabel_sequences
from dptext.generators.kps.options import SeederOptions
from dptext.generators.kps.plan import Plan, candidate_specs, resolve, vocab_spec
from dptext.generators.kps.report import ClassSignal, summary_lines
from dptext.generators.kps.sampling import (
    KeyphraseSequence,
    class_sizes,
    draw_sequences,
    with_forms,
)
from dptext.generators.kps.stages import Fitting
from dptext.kde.sampler import SamplingStats
from dptext.kde.sketch import ReleasedSketches, ensemble_blocks
from dptext.privacy import NoiseSpec, PrivacyLedger, Release
from dptext.privacy.budget import CorpusBudget, open_budget, settle_run
from dptext.privacy.label_sets import ReleasedLabelSets
from dptext.privacy.labels import ReleasedValues

CHARGED_COMMAND = "python api: KeyphraseSeeder.fit"  # the run's name in the corpus's ledger


@dataclass
class KeyphraseSeeder(SeederOptions):
    """DP-KPS estimator: ``fit`` on a private corpus, then ``sample`` sequences
    (the options: ``SeederOptions``)."""

    # fitted (released) state
    ledger_: PrivacyLedger = field(init=False, repr=False)
    released_vocabulary_: tuple[str, ...] = field(init=False, repr=False)
    sketches_: ReleasedSketches = field(init=False, repr=False)
    label_counts_: dict | None = field(init=False, repr=False, default=None)
    label_set_: ReleasedValues | ReleasedLabelSets | None = field(init=False, repr=False,
                                                                  default=None)
    class_signal_: list[ClassSignal] = field(init=False, repr=False)
    sampling_stats_: SamplingStats = field(init=False, repr=False)
    embeddings_: np.ndarray = field(init=False, repr=False)  # of the released vocabulary
    unigram_: dict = field(init=False, repr=False)  # per class, noisy score of every term
    candidates_: dict = field(init=False, repr=False)  # per class, indices into it
    model_: Any = field(init=False, repr=False, default=None)  # the KeyphraseModel sampled
    histogram_: Any = field(init=False, repr=False, default=None)  # ReleasedHistogram
    selection_: dict | None = field(init=False, repr=False, default=None)
    terms_per_doc_: int = field(init=False, repr=False, default=0)  # S used (released)
    form_profile_: Any = field(init=False, repr=False, default=None)  # kps.form.FormProfile

    # ---------------------------------------------------------------- the plan
    def plan(self, labelled: bool = True, multilabel: bool = False) -> Plan:
        """The stages a fit on a labelled (True: the upper bound) or unlabelled corpus, or
        a multi-label one, runs and their noise; checks the options first."""
        self.validate()
        return resolve(self, labelled, multilabel)

    def planned_releases(self, labelled: bool = True,
                         multilabel: bool = False) -> list[Release]:
        """The releases ``fit`` will make, with the (ε, δ) the ledger will record (an upper
        bound for Laplace, whose rounding slack only lowers ε). Used to check a run
        against a corpus's remaining budget before touching the data; ``labelled``:
        whether the corpus has labels (True plans for a label set when none is
        declared, which is the upper bound; ``multilabel``: a multi-label corpus)."""
        return self.plan(labelled, multilabel).planned_releases()

    def noise_specs(self, labelled: bool = True) -> dict[str, NoiseSpec]:
        """The noise of each stage, as the plan splits the budget (``budget.noise_specs``)."""
        return self.plan(labelled).specs

    def vocab_spec(self) -> str | Any:
        """The public vocabulary: ``vocab``, with "auto" resolved by the model family
        (``plan.AUTO_VOCAB``: function words for the histogram models, not for the KDE)."""
        return vocab_spec(self)

    def candidate_specs(self) -> list[tuple[str, Any]]:
        """(family, parameter) of each candidate model (``plan.candidate_specs``)."""
        return candidate_specs(self)

    # ---------------------------------------------------------------- fitting
    def fit(self, corpus: Corpus, *, rng: np.random.Generator | None = None,
            progress=None, ledger: PrivacyLedger | None = None,
            budget: CorpusBudget | None = None,
            allow_budget_overrun: bool = False) -> KeyphraseSeeder:
        """Make all DP releases for ``corpus`` (see the module docstring).

        Without ``ledger`` (the documented call) the whole plan is first charged to the
        corpus's persistent budget (``budget``: that ledger; default ``open_budget(corpus)``),
        refused when over its total unless ``allow_budget_overrun``, and settled to the
        releases made once the fit ends — a failed fit's too — as the run lifecycle does: no
        release of this API is outside a persistent ledger. ``ledger``: the run's, from a
        caller that charges the corpus itself (the run lifecycle, ``dptext keyphrases``) or whose
        corpus is no one's (the audits' made-up ones); every release goes into it and its
        cap applies to each."""
        if ledger is not None:
            return self._fit(corpus, rng, progress, ledger)
        planned = self.planned_releases(corpus.labelled, corpus.multilabel)  # checks first
        check_declared_labels(corpus, self.labels)
        budget = budget if budget is not None else open_budget(corpus)
        run_id = uuid.uuid4().hex
        budget.commit(PrivacyLedger(releases=planned), command=CHARGED_COMMAND,
                      parameters={"method": "kps", "epsilon": self.epsilon,
                                  "epsilon_vocab": self.epsilon_vocab,
                                  "epsilon_kde": self.epsilon_kde, "delta": self.delta},
                      allow_overrun=allow_budget_overrun, run_id=run_id)
        ledger = PrivacyLedger()
        try:
            self._fit(corpus, rng, progress, ledger)
        finally:  # the releases made replace the plan (never costing more)
            settle_run(budget, run_id, ledger.releases)
        return self

    def _fit(self, corpus: Corpus, rng: np.random.Generator | None, progress,
             ledger: PrivacyLedger) -> KeyphraseSeeder:
        from dptext.text.vocabulary import PublicVocabulary, load_vocabulary

        plan = self.plan(corpus.labelled, corpus.multilabel)  # before any release: checks
        rng = np.random.default_rng() if rng is None else rng
        step = progress or (lambda msg: None)
        check_declared_labels(corpus, self.labels)
        step("public vocabulary")
        vocab = self.vocab if isinstance(self.vocab, PublicVocabulary) else load_vocabulary(
            plan.vocab)
        if self.vocab_size > len(vocab):
            raise ValueError(f"vocab_size={self.vocab_size} exceeds the public vocabulary "
                             f"({len(vocab)} terms)")
        ensemble_blocks(self.method, self.length, self.ensemble)  # checked before releases
        self.ledger_ = ledger
        self.label_counts_ = self.label_set_ = self.form_profile_ = None
        self.terms_per_doc_ = self.given_terms_per_doc()
        labels = [None] if not corpus.labelled else list(self.labels or ())
        run = Fitting(self, plan, corpus, vocab, self.ledger_, rng, step, labels)
        for stage in plan.stages:
            if run.done:
                break
            stage.run(run)
        return self

    def released_class_counts(self) -> dict | None:
        """DP estimates of the class sizes: the label histogram's noisy counts, else the
        label set's; None when neither was released."""
        if self.label_counts_ is not None:
            return self.label_counts_
        if self.label_set_ is not None:
            return self.label_set_.counts["label"]
        return None

    def summary_lines(self) -> list[str]:
        """What the curator should know about the model and the signal (released values)."""
        return summary_lines(self)

    # ---------------------------------------------------------------- sampling
    def class_sizes(self, n_per_class: int | None = None, total: int | None = None) -> dict:
        """How many sequences to draw per class: equal, or in proportion to DP counts."""
        return class_sizes(list(self.sketches_.sums), self.released_class_counts(),
                           n_per_class, total)

    def sample(self, n_per_class: int | None = None, *, total: int | None = None,
               rng: np.random.Generator | None = None) -> list[KeyphraseSequence]:
        """Draw keyphrase sequences (post-processing: no privacy cost), each with a form
        drawn from its class's form profile when one was released."""
        if not hasattr(self, "sketches_"):
            raise RuntimeError("call fit() before sample()")
        rng = np.random.default_rng() if rng is None else rng
        self.sampling_stats_ = SamplingStats()
        if isinstance(self.label_set_, ReleasedLabelSets):  # a multi-label corpus
            if (n_per_class is None) == (total is None):
                raise ValueError("give exactly one of n_per_class or total")
            total = len(self.sketches_.sums) * n_per_class if total is None else total
            return draw_multilabel_sequences(self.model_, self.released_vocabulary_,
                                             self.label_set_, total, self.length, rng,
                                             self.sampling_stats_)
        seqs = draw_sequences(self.model_, self.released_vocabulary_,
                              self.class_sizes(n_per_class, total), self.length, rng,
                              self.sampling_stats_)
        return seqs if self.form_profile_ is None else with_forms(seqs, self.form_profile_,
                                                                  rng)
