"""What a fitted DP-KPS seeder tells the curator, from released values only: the expected
signal of each class's sketches and histogram row, and the summary of the run."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from dptext.generators.kps.form import FORM_NAME
from dptext.generators.kps.selection import SELECTION_NAME
from dptext.keyphrases.terms_per_doc import TERMS_CHOICE_NAME
from dptext.privacy import NoiseSpec, gaussian_noise_multiplier
from dptext.text.form import FORM_BLOCKS

ASSUMED_KERNEL_CONTRAST = 0.1  # typical spread of kernel values between related/unrelated terms


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


def class_signal(labels: list, counts: dict | None, n_sketches: int, features: int,
                 spec: NoiseSpec) -> list[ClassSignal]:
    """Warn when a class looks too small for its sketch noise — from released values
    only (``counts``: noisy label counts), never from exact class sizes; never refuses.

    Score noise has std ≈ σ·√I per sketch coordinate set, while the signal of a
    class of n documents spreads by about n·I·c (c = ASSUMED_KERNEL_CONTRAST); n is
    the DP estimate. Without released counts nothing is estimated (and nothing said).
    """
    if counts is None:
        return [ClassSignal(label, None, None) for label in labels]
    total = n_sketches * features
    if spec.kind == "laplace":
        sigma = math.sqrt(2) * math.sqrt(2) * total / spec.epsilon
    else:
        sigma = gaussian_noise_multiplier(spec.epsilon, spec.delta) * math.sqrt(2 * total)
    out, weak = [], []
    for label in labels:
        n = max(float(counts.get(label, 0.0)), 0.0)
        snr = n * ASSUMED_KERNEL_CONTRAST * math.sqrt(features) / sigma
        out.append(ClassSignal(label, n, snr))
        if snr < 1:
            weak.append((label, n, snr))
    if weak:
        listing = ", ".join(f"{lab!r} (about {n:.0f} documents by its noisy count, "
                            f"signal/noise ≈ {snr:.2g})" for lab, n, snr in weak)
        warnings.warn(f"weak signal in classes {listing}: their sequences will be noisy. "
                      "Raise --epsilon, use --kde-noise gaussian, lower --features, "
                      "use --method independent, or merge small classes.", stacklevel=4)
    return out


def released_signal(histogram) -> list[dict]:
    """Per class, the signal its released histogram row carries: how many of its terms
    rose above the noise floor and how far its strongest count stands above the noise
    (σ). Computed from released values only, so it may be shown and stored."""
    h = histogram
    if h is None:
        return []
    return [{"label": label, "terms_above_noise": int(np.count_nonzero(row)),
             "strongest_over_noise": float(row.max() / h.noise_scale) if row.any() else 0.0}
            for label, row in zip(h.labels, h.counts, strict=True)]


def summary_lines(seeder) -> list[str]:
    """What the curator should know about the model and the signal (released values)."""
    lines = []
    eps = next((r.epsilon for r in seeder.ledger_.releases
                if r.name.startswith(TERMS_CHOICE_NAME)), None)
    if eps is not None:
        lines.append(f"terms per document: S = {seeder.terms_per_doc_}, chosen privately "
                     f"from the documents' counts of public terms (ε = {eps:.3g})")
    eps = next((r.epsilon for r in seeder.ledger_.releases if r.name == FORM_NAME), None)
    sel = seeder.selection_
    if eps is not None:
        chosen = (sel or {}).get("form")
        if seeder.form_profile_ is not None:
            use = ("the private selection chose to use it: " if chosen else "") + \
                "a form drawn from it is stated in each sequence's prompt"
        else:
            use = ("the private selection chose not to use it" if chosen is False else
                   "no private selection ran to choose it") + ": the prompts state no form"
        lines.append(f"form profile: per class, {len(FORM_BLOCKS)} public form features "
                     f"released (ε = {eps:.3g}, parallel over classes); {use}")
    if not sel or sel["chosen"] is None:
        return lines
    if sel["selected"]:
        eps = next(r.epsilon for r in seeder.ledger_.releases
                   if r.name.startswith(SELECTION_NAME))
        where = (f"scored on a sample of about {sel['validation_share']:.0%} of the "
                 f"documents (ε = {eps:.3g} of the total)") if sel.get("split") == "shared" \
            else (f"on a held-out fold of about {sel['validation_share']:.0%} of the "
                  f"documents (ε = {eps:.3g}, parallel to the releases on the other "
                  "documents)")
        lines.append(f"keyphrase model: {sel['chosen']}, chosen privately among "
                     f"{len(sel['candidates'])} candidates"
                     + (", each with and without a form," if "form" in sel else "")
                     + f" {where}; another candidate "
                     f"than {sel['candidates'][0]} had to get right "
                     f"{sel.get('margin', 0.0):.0%} of the documents that one got wrong")
    else:
        lines.append(f"keyphrase model: {sel['chosen']} (as given)")
    signal = released_signal(seeder.histogram_)
    weak = [s for s in signal if s["terms_above_noise"] < seeder.length]
    lines.append(f"released vocabulary: {len(seeder.released_vocabulary_)} terms above the "
                 "noise floor")
    if weak:
        names = ", ".join(f"{s['label']!s} ({s['terms_above_noise']})" for s in weak[:10])
        more = f" and {len(weak) - 10} more" if len(weak) > 10 else ""
        lines.append(f"weak classes (fewer than L = {seeder.length} terms above the noise; "
                     f"their sequences lean on the KDE or are shorter): {names}{more}")
        if 2 * len(weak) > len(signal):
            lines.append(
                f"most classes ({len(weak)} of {len(signal)}) are weak: at this ε their "
                "sequences carry little class signal. Raise ε, merge small classes or add "
                "documents (measured on Banking77 at ε = 6: 33 documents per intent left "
                "61 of 77 intents weak and cost 0.41 of downstream accuracy, 127 left 2 "
                "and cost 0.09)")
    return lines
