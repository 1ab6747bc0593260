"""DP-KPS's plan: the options resolved once into the list of stages a fit runs.

Each stage (``stages.py``) states the releases it will make and makes them, so
``KeyphraseSeeder.planned_releases`` (the budget check before the data is read) and
``KeyphraseSeeder.fit`` read the same list. The budget is split once
(``budget.noise_specs``) and each stage takes its share. The paper's path (the KDE
without selection: the DP vocabulary, then the sketches over it) is one list
(``PAPER``); the keyphrase models' (the class × term histogram, optionally the sketches,
then a private choice among the candidate models) another (``MODELS_PATH``). Both end
with the form profile when ``form`` is True (``stages.FormProfileStage``); with
``form="auto"`` the models' path releases it just before the private selection, which
then also chooses whether the sequences carry a form.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dptext.generators.kps import stages
from dptext.generators.kps.budget import composed_epsilon, noise_specs
from dptext.generators.kps.models import NEEDS
from dptext.privacy import NoiseSpec, Release
from dptext.privacy.labels import LABEL_SET
from dptext.privacy.selection import FIT_FOLD

#: ``vocab="auto"``: the histogram models count function words too ("why", "not", "my":
#: in short texts much of the class signal); the KDE keeps the paper's content words
AUTO_VOCAB = {"histogram": "english:20000+function-words", "kde": "english:20000"}
#: the floors the private selection tries, as multiples of ``vocab_noise_terms`` expected
#: false cells (one release kept at the lowest floor serves them all)
FLOOR_FACTORS = (1.0, 10.0)

#: the paper's path (appendix B): the DP vocabulary Ṽ, then the KDE sketches over it
PAPER = (stages.LabelSet(), stages.TermsPerDocument(), stages.Vocabulary(),
         stages.LabelCounts(), stages.Embedding(always=True),
         stages.KdeSketches(always=True), stages.SketchModel(), stages.FormProfileStage())
#: the keyphrase models: the class × term histogram (it also gives Ṽ), the sketches over
#: Ṽ when a candidate needs them, the private choice among the candidates
MODELS_PATH = (stages.LabelSet(), stages.TermsPerDocument(), stages.SelectionFolds(),
               stages.ClassTermHistogram(), stages.LabelCounts(),
               stages.Embedding(always=False), stages.KdeSketches(always=False),
               stages.FormProfileStage(auto=True), stages.ModelSelection(),
               stages.FormProfileStage())


def model_family(options) -> tuple[str, bool, tuple[str, ...]]:
    """(family, paper, needs): the model family (``model``, with "auto" meaning the KDE for
    iterative sampling: only the KDE scores a term against a prefix), whether the run
    takes the paper's path (the KDE without selection), and the releases its models
    need (``models.NEEDS``)."""
    family = "kde" if options.model == "auto" and options.method == "iterative" \
        else options.model
    paper = family == "kde" and options.select == "none"
    needs = NEEDS["histogram" if family == "auto" and options.select == "none" else family]
    return family, paper, needs


def vocab_spec(options) -> Any:
    """The public vocabulary: ``vocab``, with "auto" resolved by the model family
    (``AUTO_VOCAB``: function words for the histogram models, not for the KDE)."""
    if options.vocab != "auto":
        return options.vocab
    _, paper, needs = model_family(options)
    return AUTO_VOCAB["kde" if paper or "kde" in needs else "histogram"]


def candidate_specs(options, family: str | None = None) -> list[tuple[str, Any]]:
    """(family, parameter) of each candidate model: the histogram weight λ of a
    hybrid, the contrastive keep share of a KDE. All are post-processing of the same
    releases, so the candidates share them and none pays separately. The first is the
    reference that the selection's margin favours (``privacy.selection.margin_scores``)."""
    o = options
    family = model_family(o)[0] if family is None else family
    if o.select == "none":
        family = "histogram" if family == "auto" else family
        param = {"hybrid": o.mixture, "kde": o.contrastive_keep,
                 "histogram": (o.histogram_power, o.vocab_noise_terms),
                 "smoothed": (o.smoothing, o.histogram_power)}[family]
        return [(family, param)]
    keeps = [("kde", k) for k in dict.fromkeys((o.contrastive_keep, 0.3))]
    hybrids = [("hybrid", m) for m in dict.fromkeys((o.mixture, 0.25, 0.5, 0.75))]
    powers = dict.fromkeys((o.histogram_power, 0.0, 0.5, 2.0))
    floors = dict.fromkeys(f * o.vocab_noise_terms for f in FLOOR_FACTORS)
    hists = [("histogram", (p, f)) for f in floors for p in powers]
    smoothed = [("smoothed", (h, p)) for h in dict.fromkeys((o.smoothing, 0.5))
                for p in powers]
    # auto: the histogram's purity powers, which all share ONE release (the KDE and the
    # hybrid need a second one, which would halve the histogram's budget; smoothing
    # lost to the plain histogram on both dev corpora: docs/benchmarks.md). Power 0
    # (sampling by class frequency alone) won on short texts, 0.5-1 on long ones; a
    # floor at 100 expected false cells on long ones, 10 on short ones (the rest is noise)
    return {"kde": keeps, "histogram": hists, "smoothed": [*hists, *smoothed],
            "hybrid": hybrids, "auto": hists}[family]


def check_multilabel(options, paper: bool, needs) -> None:
    """A multi-label corpus takes the histogram models' path: the KDE sketches and the
    form profile have no per-label-set analysis yet (refused, not run single-label)."""
    if paper or "kde" in needs or options.model == "smoothed":
        raise ValueError("a multi-label corpus (--label-sep) works with DP-KPS's histogram "
                         "models only: use --model auto or histogram, and independent "
                         "sampling (each label's keyphrases are drawn from its histogram "
                         "row's contrast; the KDE sketches and the smoothing are "
                         "single-label)")
    if options.form is True:
        raise ValueError("the form profile (--form on) is single-label; leave it auto or "
                         "off for a multi-label corpus (--label-sep), where auto plans none")


@dataclass(frozen=True)
class Plan:
    """What a fit of these options on a corpus (labelled or not) will do and release.

    ``specs``: the noise of every stage (``budget.noise_specs``); ``model_specs``: that
    of the model releases — the class × term histogram takes the vocabulary's share (it
    replaces the vocabulary release) and the sketches theirs, a histogram alone what both
    would; ``selects``: a private selection is planned (an upper bound: with one class,
    known only after reading the labels, nothing is selected); ``shared``: it scores a
    sample of the documents the releases count, paying ``selection_share`` of the total
    ε, rather than a disjoint holdout fold (``fold`` of the releases: ``FIT_FOLD``)."""

    stages: tuple
    candidates: tuple
    specs: dict[str, NoiseSpec]
    model_specs: dict[str, NoiseSpec]
    selects: bool
    shared: bool
    fold: str | None
    selection_epsilon: float
    vocab: Any
    multilabel: bool = False  # a multi-label corpus (kps/multilabel.py)
    form: str | None = None  # the form profile: "given" (form=True), "auto" or None
    def planned_releases(self) -> list[Release]:
        return [r for stage in self.stages for r in stage.planned(self)]


def resolve(options, labelled: bool = True, multilabel: bool = False) -> Plan:
    """The plan of ``options`` for a labelled (True: the upper bound, a label set when none
    is declared) or unlabelled corpus, or a multi-label one (``multilabel``: the label
    sets' release, the histogram models only). Raises ValueError when the budget leaves
    nothing for the vocabulary and the sketches."""
    o = options
    family, paper, needs = model_family(o)
    if multilabel:
        check_multilabel(o, paper, needs)
    single = not paper and "kde" not in needs  # one histogram: the only model release
    candidates = tuple(candidate_specs(o, family))
    # a multi-label corpus samples the histogram's label contrast (kps/multilabel.py),
    # which no candidate's parameter changes: nothing to choose, no ε spent on choosing
    selects = o.select == "auto" and len(candidates) > 1 and not multilabel
    # Shared: the selection pays selection_share of the total ε (sequential composition);
    # holdout: a disjoint fold composes in parallel but its documents the releases lose.
    # Measured on Banking77 at ε = 6: losing 10 % of the documents cost more (0.77
    # against 0.80) than 5 % of ε. Per-stage budgets (each stage exactly its own ε): holdout
    split = o.selection_split if o.selection_split != "auto" else (
        "shared" if o.epsilon is not None else "holdout")
    shared_selection = selects and split == "shared"
    # auto: the form profile only where a selection on labelled documents will choose
    # (single-label ones: check_multilabel)
    form = "given" if o.form is True else "auto" if o.form_planned(
        selects and labelled and not multilabel) else None
    specs = noise_specs(o, labelled, single, shared_selection, multilabel,
                        form is not None)
    model_specs = {"histogram": specs["vocab"], "kde": specs["kde"]} if "kde" in needs \
        else {"histogram": specs["histogram"]}
    shared = labelled and shared_selection
    if "selection" in specs or not selects:
        selection_epsilon = specs["selection"].epsilon if "selection" in specs else 0.0
    else:  # a holdout fold holds other documents than the fit fold (parallel composition):
        # it may cost what the fit fold's releases add to those made on all documents (the
        # label stages, S's choice and the form profile), so the run's ε does not grow
        on_all = [specs[s] for s in (LABEL_SET, "labels", "terms", "form") if s in specs]
        selection_epsilon = composed_epsilon(on_all + list(model_specs.values())) \
            - composed_epsilon(on_all)
    plan = Plan(stages=(), candidates=candidates, specs=specs,
                model_specs=model_specs, selects=selects, shared=shared,
                fold=FIT_FOLD if selects and not shared else None,
                selection_epsilon=selection_epsilon, vocab=vocab_spec(o),
                multilabel=multilabel, form=form)
    return replace(plan, stages=tuple(s for s in (PAPER if paper else MODELS_PATH)
                                      if s.applies(plan)))
