"""Deep CORAL domain adaptation (Sun & Saenko 2016; DP-KPS appendix C.1.2).

The classifier's loss gains ``||C_S - C_T||_F^2 / (4 d^2)``, the distance between the
covariance matrices of a layer's activations on the source batch (synthetic,
labelled) and on a target batch (the client's unlabelled documents — never the
test set). With a frozen encoder the term is applied to the head's last hidden
layer, the first place where the features can move.
"""

from __future__ import annotations


def covariance(h):
    """Unbiased covariance of the rows of ``h`` (n, d) -> (d, d)."""
    n = h.shape[0]
    centred = h - h.mean(dim=0, keepdim=True)
    return centred.T @ centred / max(n - 1, 1)


def coral_loss(source, target):
    """``||C_S - C_T||_F^2 / (4 d^2)`` for activations ``source`` and ``target`` (n, d)."""
    d = source.shape[1]
    diff = covariance(source) - covariance(target)
    return (diff * diff).sum() / (4.0 * d * d)
