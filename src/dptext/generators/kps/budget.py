"""DP-KPS's budget: the noise of every stage, split once from the options.

With a total ``epsilon`` every stage is inside one ``split_budget`` (``privacy/split.py``)
and the ledger composes to that ε: the label histogram takes ``epsilon_labels`` of it,
the label set ``label_set_share``, S's choice ``terms_share``, a shared selection
``selection_share``, the form profile (``form=True``, or "auto" with a selection)
``form_share``, and the vocabulary
and the sketches share the rest by ``vocab_share``. Per stage (the paper's interface):
each stage its own ε (the label set ``epsilon_label_set``, the form profile
``epsilon_form``), the run's δ split evenly over the Gaussian stages (half of it
first set aside for the label set's threshold).
"""

from __future__ import annotations

from dptext.privacy import NoiseSpec, Release, compose, gaussian_noise_multiplier
from dptext.privacy.labels import LABEL_SET
from dptext.privacy.split import split_budget, threshold_deltas


def label_stages(options, labelled: bool, multilabel: bool = False) -> tuple[bool, bool]:
    """(DP label set, Laplace label histogram): which label releases the run makes.

    The label set when the corpus is labelled and ``labels`` is not declared, and always
    for a multi-label corpus (declared labels do not say which sets occur); the
    histogram when ``epsilon_labels > 0`` and there is no label set (whose noisy
    counts serve instead)."""
    label_set = labelled and (options.labels is None or multilabel)
    return label_set, options.epsilon_labels > 0 and not label_set


def noise_specs(options, labelled: bool = True, single: bool = False,
                shared_selection: bool = False, multilabel: bool = False,
                form: bool = False) -> dict[str, NoiseSpec]:
    """The noise of each stage: "vocab" and "kde", or with ``single`` one "histogram" in
    their place (it takes the share of both, or per stage the ε the two would compose
    to); "label set" / "labels" as ``label_stages`` says; "terms" when S is chosen
    privately (``terms_per_doc="auto"`` with a total ε; per stage S is
    ``PER_STAGE_TERMS_PER_DOC``, no release); "selection" for a shared private selection
    of a labelled corpus (``shared_selection``); "form" (Gaussian) for the form profile
    (``form``: ``options.form_planned``)."""
    o = options
    label_set, histogram = label_stages(o, labelled, multilabel)
    kinds = {"histogram": o.vocab_noise} if single else \
        {"vocab": o.vocab_noise, "kde": o.kde_noise}
    if label_set:
        kinds[LABEL_SET] = o.vocab_noise
    thresholds = [LABEL_SET] if label_set else []
    if o.terms_per_doc == "auto" and o.epsilon is not None:
        kinds["terms"] = "laplace"  # report-noisy-max: pure ε
    if labelled and shared_selection:
        kinds["selection"] = "laplace"  # report-noisy-max: pure ε
    if form:
        kinds["form"] = "gaussian"  # L2 sensitivity √blocks (kps/form.py)
    if o.epsilon is not None:
        fixed = {"terms": o.terms_share} if "terms" in kinds else {}
        if "selection" in kinds:
            fixed["selection"] = o.selection_share
        if histogram:
            fixed["labels"] = o.epsilon_labels / o.epsilon
            kinds["labels"] = "laplace"
        if label_set:
            fixed[LABEL_SET] = o.label_set_share
        if form:
            fixed["form"] = o.form_share
        rest = 1.0 - sum(fixed.values())
        if not rest > 0:
            raise ValueError("epsilon_labels, label_set_share, terms_share, "
                             "selection_share and form_share leave nothing of the total "
                             "epsilon for the vocabulary and the sketches")
        shares = {"histogram": rest} if single else \
            {"vocab": o.vocab_share * rest, "kde": (1 - o.vocab_share) * rest}
        return split_budget(o.epsilon, o.delta, {**shares, **fixed}, kinds, thresholds)
    eps = {"vocab": o.epsilon_vocab, "kde": o.epsilon_kde, LABEL_SET: o.epsilon_label_set,
           "form": o.epsilon_form}
    if single:  # what the two stages would have composed to
        two = noise_specs(o, labelled=False)
        eps["histogram"] = composed_epsilon([two["vocab"], two["kde"]])
    gauss = [s for s, k in kinds.items() if k == "gaussian"]
    thr, noise_delta = threshold_deltas(o.delta, thresholds, bool(gauss))
    specs = {s: NoiseSpec(k, eps[s], noise_delta / len(gauss) if k == "gaussian" else 0.0,
                          threshold_delta=thr if s == LABEL_SET else 0.0)
             for s, k in kinds.items()}
    if histogram:
        specs["labels"] = NoiseSpec("laplace", o.epsilon_labels)
    return specs


def planned_release(name: str, spec: NoiseSpec, group: str | None = None,
                    fold: str | None = None) -> Release:
    """A release as the plan states it: the (ε, δ) the ledger will record (an upper bound
    for Laplace, whose rounding slack only lowers ε)."""
    mult = gaussian_noise_multiplier(spec.epsilon, spec.delta) \
        if spec.kind == "gaussian" else 1.0
    return Release(name=name, mechanism=spec.kind, neighbouring="planned",
                   sensitivity_norm="L1" if spec.kind == "laplace" else "L2",
                   sensitivity=1.0, sensitivity_reason="planned", noise_scale=mult,
                   noise_multiplier=mult, dimension=1, epsilon=spec.epsilon,
                   delta=spec.delta, partition="planned" if group else None,
                   parallel_group=group, fold=fold)


def composed_epsilon(specs) -> float:
    """The ε that releases with these noise specs compose to (the ledger's own rule)."""
    recs = [Release(name="planned", mechanism=spec.kind, neighbouring="planned",
                    sensitivity_norm="L2", sensitivity=1.0, sensitivity_reason="planned",
                    noise_scale=1.0, dimension=1, epsilon=spec.epsilon,
                    delta=spec.total_delta, threshold_delta=spec.threshold_delta,
                    noise_multiplier=gaussian_noise_multiplier(spec.epsilon, spec.delta)
                    if spec.kind == "gaussian" else 1.0)
            for spec in specs]
    return compose(recs).epsilon if recs else 0.0
