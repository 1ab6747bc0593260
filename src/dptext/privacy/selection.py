"""Private selection: report-noisy-max over bounded per-document scores, and data folds.

**Selection.** Each candidate c has a score u_c = Σ over the documents of a validation
fold of a per-document score in {0, 1} (e.g. "a classifier trained on candidate c's
released sequences labels this document right"). Under add/remove-one-document
neighbours every u_c moves by at most 1 and all of them move in the same direction
(the document's scores are added or taken away): sensitivity 1 in L∞, *monotone*.
``margin_scores`` gives a reference candidate a head start (a share of its errors
counted as right); the scores stay integer and monotone, with the sensitivity it returns.
``select_noisy_max`` releases only the index of the best noisy score, with OpenDP's
report-noisy-max (exponential noise, the permute-and-flip equivalent of McKenna &
Sheldon 2020): ε = Δ/scale for monotone scores (2·Δ/scale otherwise), as OpenDP's own
privacy map certifies. The release is recorded in the ledger like any other.

**Folds.** ``fold_of`` puts each document in a fold by a keyed hash (HMAC-SHA256) of
its own text under a per-run secret salt from ``secrets``: a document's fold depends
on nothing but itself, so adding or removing it changes exactly one fold. Releases
made on disjoint folds compose in parallel (``Release.fold``; see ``ledger.compose``),
also adaptively: the selection on the validation fold may read the fit fold's
releases. The salt is never stored, printed or returned.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np
import opendp.prelude as dp

from dptext.privacy.ledger import PrivacyLedger, Release
from dptext.privacy.mechanisms import _TAPS, NEIGHBOURING

dp.enable_features("contrib")

SELECTION_MECHANISM = "report-noisy-max"
FIT_FOLD, VALIDATION_FOLD = "fit", "validation"
# the share of the reference candidate's errors another must remove to be chosen (DP-KPS's
# default; measured on development splits of the training documents: generators/kps/selection.py)
SELECTION_MARGIN = 0.1


def fold_of(texts: Sequence[str], validation_share: float) -> np.ndarray:
    """True where a document falls in the validation fold (keyed hash, fresh secret salt).

    Each document's fold is a function of its own text and a salt drawn here from
    ``secrets`` and discarded on return, so the split is independent of every other
    document and unpredictable to anyone who sees the output.
    """
    if not 0 < validation_share < 1:
        raise ValueError(f"validation_share must be in (0, 1), got {validation_share!r}")
    salt = secrets.token_bytes(32)
    cut = int(validation_share * 2**64)
    out = np.empty(len(texts), dtype=bool)
    for i, text in enumerate(texts):  # one HMAC per document; ~1 µs each
        digest = hmac.new(salt, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        out[i] = int.from_bytes(digest[:8], "big") < cut
    del salt
    return out


def margin_scores(correct: np.ndarray, margin: float) -> tuple[list[int], int]:
    """Integer scores for report-noisy-max from ``correct`` (scored documents ×
    candidates, 0/1), and their L∞ sensitivity, with a head start for candidate 0 (the
    reference): it is scored as if it had got ``margin`` of its errors right, so another
    candidate wins only by removing more than that share of them. With margin = a/b
    (b ≤ 100): candidate k ≠ 0 scores b per document it labels right; candidate 0 b − a
    per document it labels right and a per scored document. Adding one scored document
    adds 0 to b to every score (a or b to candidate 0's): all scores move the same way,
    by at most b (monotone)."""
    m, correct = Fraction(margin).limit_denominator(100), np.asarray(correct, dtype=np.int64)
    a, b = m.numerator, m.denominator
    scores = b * correct.sum(axis=0)
    scores[0] = (b - a) * correct[:, 0].sum() + a * correct.shape[0]
    return [int(s) for s in scores], b


@lru_cache(maxsize=64)
def _noisy_max(size: int, sensitivity: int, epsilon: float, monotonic: bool):
    """OpenDP report-noisy-max whose own map gives ε ≤ ``epsilon`` at L∞ ``sensitivity``."""
    scale = (1.0 if monotonic else 2.0) * sensitivity / epsilon
    space = (dp.vector_domain(dp.atom_domain(T=int), size=size),
             dp.linf_distance(T=int, monotonic=monotonic))
    for _ in range(4):
        meas = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)
        spent = meas.map(sensitivity)
        if spent <= epsilon:
            return meas, scale, spent
        scale *= spent / epsilon * (1 + 1e-12)
    raise RuntimeError("could not calibrate report-noisy-max")  # pragma: no cover


def select_noisy_max(scores: Sequence[int], *, sensitivity: int, epsilon: float,
                     ledger: PrivacyLedger, name: str, reason: str,
                     monotonic: bool = True, fold: str | None = VALIDATION_FOLD) -> int:
    """Index of the candidate with the highest noisy score; recorded in ``ledger``.

    ``scores`` are exact integer sums of per-document scores (private); ``sensitivity``
    bounds how far one document moves any of them (L∞), and ``monotonic`` states that
    one document moves all of them in the same direction.
    """
    values = [int(s) for s in scores]
    if not values:
        raise ValueError(f"selection {name!r}: no candidates")
    if not (isinstance(sensitivity, int) and sensitivity >= 1):
        raise ValueError("sensitivity must be a positive integer")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    meas, scale, spent = _noisy_max(len(values), sensitivity, float(epsilon), monotonic)
    choice = int(meas(values))
    ledger.record(Release(
        name=name, mechanism=SELECTION_MECHANISM, neighbouring=NEIGHBOURING,
        sensitivity_norm="Linf" + (" (monotone)" if monotonic else ""),
        sensitivity=float(sensitivity), sensitivity_reason=reason, noise_scale=scale,
        noise_multiplier=scale / sensitivity, dimension=len(values), epsilon=spent,
        delta=0.0, fold=fold))
    for tap in _TAPS:
        tap(name, None, np.array([choice], dtype=np.float64))
    return choice
