"""Fairness of the downstream classifier across subgroups (fine-tuning paper §3.5, app. C).

For a demographic column with subgroups D and each class (one-vs-rest):

* equality differences  XED = Σ_{d∈D} |XR_overall − XR_d|  for X ∈ {FP, FN, TP, TN};
* equalized odds        EO  = max(max_d TPR_d − min_d TPR_d, max_d FPR_d − min_d FPR_d)
  (fairlearn's ``equalized_odds_difference``).

Multi-class scores are averaged over classes (macro). Values near 0 are fairer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RATES = ("fpr", "fnr", "tpr", "tnr")
ED_NAMES = {"fpr": "FPED", "fnr": "FNED", "tpr": "TPED", "tnr": "TNED"}


def _rates(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    pos, neg = y == 1, y == 0
    tp, fn = np.sum(p[pos] == 1), np.sum(p[pos] == 0)
    fp, tn = np.sum(p[neg] == 1), np.sum(p[neg] == 0)
    nan = float("nan")
    return {"tpr": tp / (tp + fn) if tp + fn else nan, "fnr": fn / (tp + fn) if tp + fn else nan,
            "fpr": fp / (fp + tn) if fp + tn else nan, "tnr": tn / (fp + tn) if fp + tn else nan}


def binary_fairness(y_true: np.ndarray, y_pred: np.ndarray, groups: Sequence[str]) -> dict:
    """Equality differences and equalized odds for one binary task."""
    from fairlearn.metrics import MetricFrame, equalized_odds_difference

    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    groups = np.asarray(groups, dtype=object)
    metrics = {r: (lambda yt, yp, r=r: _rates(np.asarray(yt), np.asarray(yp))[r]) for r in RATES}
    frame = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    overall, by_group = frame.overall, frame.by_group
    out = {}
    for r in RATES:
        diffs = np.abs(by_group[r].to_numpy(dtype=float) - float(overall[r]))
        out[ED_NAMES[r]] = float(np.nansum(diffs))
    out["equalized_odds"] = float(equalized_odds_difference(
        y_true, y_pred, sensitive_features=groups, agg="worst_case"))
    out["per_group"] = {str(g): {r: float(by_group.loc[g, r]) for r in RATES}
                        for g in by_group.index}
    return out


def multiclass_fairness(y_true: np.ndarray, y_pred: np.ndarray, groups: Sequence[str],
                        classes: Sequence[str], multilabel: bool) -> dict:
    """One-vs-rest per class, averaged (macro) over the classes present in ``y_true``."""
    per_class = {}
    for c, name in enumerate(classes):
        if multilabel:
            yt, yp = y_true[:, c], y_pred[:, c]
        else:
            yt, yp = (y_true == c).astype(int), (y_pred == c).astype(int)
        if yt.sum() == 0:
            continue
        per_class[name] = binary_fairness(yt, yp, groups)
    keys = [*ED_NAMES.values(), "equalized_odds"]
    macro = {k: float(np.nanmean([v[k] for v in per_class.values()])) if per_class else None
             for k in keys}
    return {**macro, "per_class": per_class}


def fairness_report(test, y_test: np.ndarray | None, preds: dict, classes: Sequence[str],
                    multilabel: bool, group_columns: Sequence[str]) -> dict:
    """Fairness of each trained classifier (synthetic and ceiling) for each group column."""
    if y_test is None or not preds:
        return {"skipped": "no labelled utility run to assess"}
    out: dict = {"groups": {}}
    main = next((k for k in ("mlp/synthetic", "finetune/synthetic", "tfidf/synthetic")
                 if k in preds), next(iter(preds)))
    for col in group_columns:
        if col not in test.columns:
            out["groups"][col] = {"skipped": f"the real test set has no column {col!r}"}
            continue
        groups = test.columns[col]
        res = {"subgroups": sorted(set(groups)), "classifier": main, "runs": {}}
        for key, p in preds.items():
            r = multiclass_fairness(y_test, p, groups, classes, multilabel)
            res["runs"][key] = r
        res.update({k: v for k, v in res["runs"][main].items() if k != "per_class"})
        out["groups"][col] = res
    return out
