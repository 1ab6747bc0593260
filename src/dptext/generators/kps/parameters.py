"""The public parameters of a DP-KPS fit, read off its plan (``plan.py``): the options
each stage that runs reads, so the privacy report and the dataset card list what shaped
the release and nothing else (no KDE features or bandwidth on a histogram run).

A stage may state its own with a ``public_options(plan, options)`` method returning option
names; otherwise ``STAGE_OPTIONS`` below names them.
"""

from __future__ import annotations

from typing import Any


def _budget(o, share: str, own: str) -> str:
    """A stage's budget option: its share of a total ε, or its own ε."""
    return share if o.epsilon is not None else own


def _histogram(o, plan) -> tuple[str, ...]:
    names = ("vocab", "vocab_noise", "vocab_noise_terms", "histogram_terms")
    if "kde" in plan.model_specs:  # two model releases: the vocabulary's share is its
        return (*names, _budget(o, "vocab_share", "epsilon_vocab"))
    # alone, it takes what the vocabulary and the sketches would (per stage: the ε the
    # two compose to, ``epsilon_histogram``; of a total ε: the rest)
    return names if o.epsilon is not None else (*names, "epsilon_histogram")


def _sketches(o, plan) -> tuple[str, ...]:
    names = ("kde_noise", "features", "bandwidth", "method", "windows_per_doc",
             "max_terms_per_doc", "sampling", "contrastive_keep")
    if o.method == "iterative":
        names = (*names, "ensemble")
    return (*names, _budget(o, "vocab_share", "epsilon_kde"))


def _embedding(o, plan) -> tuple[str, ...]:
    paper = not any(type(s).__name__ == "ModelSelection" for s in plan.stages)
    reads = plan.selects or "kde" in plan.model_specs or any(
        family == "smoothed" for family, _ in plan.candidates)
    return ("embedder",) if paper or reads else ()


def _selection(o, plan) -> tuple[str, ...]:
    names = ["model", "select"]
    families = {family for family, _ in plan.candidates}
    if not plan.selects:  # the one model as given: its own parameters
        names += [{"histogram": "histogram_power", "smoothed": "smoothing",
                   "hybrid": "mixture", "kde": "contrastive_keep"}[f] for f in sorted(families)]
        if "smoothed" in families:
            names.append("histogram_power")
        return tuple(names)
    names += ["selection_split", "validation_share", "selection_margin", "selection_sequences"]
    return (*names, "selection_share") if plan.shared else tuple(names)


#: the options each stage reads (by the stage's class name): a function of the options
#: and the plan, or a tuple
STAGE_OPTIONS = {
    "LabelSet": lambda o, plan: (_budget(o, "label_set_share", "epsilon_label_set"),),
    "TermsPerDocument": lambda o, plan: ("terms_per_doc", "terms_share"),
    "Vocabulary": lambda o, plan: ("vocab", "vocab_size", "vocab_noise", "vocab_noise_terms",
                                   _budget(o, "vocab_share", "epsilon_vocab")),
    "ClassTermHistogram": _histogram,
    "LabelCounts": lambda o, plan: ("epsilon_labels",) if "labels" in plan.specs else (),
    "Embedding": _embedding,
    "KdeSketches": _sketches,
    "SketchModel": lambda o, plan: ("model", "select"),
    "ModelSelection": _selection,
    "FormProfileStage": lambda o, plan: ("form", _budget(o, "form_share", "epsilon_form")),
}


def plan_parameters(options, plan) -> dict[str, Any]:
    """The public parameters of ``plan`` (``plan.resolve(options)``): the total budget,
    the declared labels, S and L, then what each of its stages reads, in stage order,
    with the values the plan resolves (the vocabulary, the selection's split, a lone
    histogram's ε). Values are plain (str, numbers, tuples)."""
    o = options
    names: list[str] = ["epsilon"] if o.epsilon is not None else []
    if any(spec.kind == "gaussian" for spec in plan.specs.values()):
        names.append("delta")
    if o.labels is not None:
        names.append("labels")
    names += ["terms_per_doc", "length"]
    for stage in plan.stages:
        own = getattr(stage, "public_options", None)
        listed = own(plan, o) if own else STAGE_OPTIONS.get(type(stage).__name__, ())
        names += listed(o, plan) if callable(listed) else list(listed)
    values = {"vocab": plan.vocab,  # as resolved: "auto" and the others by the plan
              "selection_split": "shared" if plan.shared else "holdout",
              "epsilon_histogram": getattr(plan.model_specs.get("histogram"), "epsilon", None)}
    out: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        v = values[name] if name in values else getattr(o, name)
        if v is not None:
            out[name] = v if isinstance(v, str | int | float | tuple) else str(v)
    return out
