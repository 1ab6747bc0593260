"""Membership inference on a released synthetic corpus: can an attacker who holds a
real document tell whether it was in the private corpus?

Members are the private documents (``--private``), non-members real documents that
were not in it (the real test set). Each attack gives every candidate document a
score (higher = "more likely a member") computed from the synthetic corpus alone,
as an attacker holding the release and the candidate could:

* **embedding distance**: the cosine similarity of the document to its nearest
  synthetic document, in the evaluation encoder's embedding space (unit-norm rows,
  so cosine = dot product; the nearest neighbour is the largest similarity);
* **rare n-grams**: the share of the document's *rare* word n-grams (n = 1..3) that
  also occur somewhere in the synthetic corpus, each n-gram weighted by its public
  surprise ``-log10 f``. Rare is judged against public English, never against the
  private corpus: ``f`` is the n-gram's frequency by wordfreq's own rule for phrases
  (``1/f = sum of 1/f_i`` over its words, the ``large`` English list, so the rarest
  word dominates; a word the list lacks counts as ``1e-9``) and an n-gram is rare
  when ``f < 1e-6`` (Zipf below 3: under one occurrence per million words of public
  English — names, places, codes, uncommon terms). A document without rare n-grams
  scores 0.

**Balanced sets without bias.** Non-members whose text equals a member's (the
same tokens; for a keyphrase file the documents, not their phrase sequences) are
dropped first: they are members in all but name. Then, when both
sets are labelled, the two sets are matched within each label (the smaller side's
count of that label is drawn uniformly without replacement from the larger), so
members and non-members have the same class mix and a class-mix difference between
the private corpus and the test split cannot pass for membership; unlabelled sets
are matched as a whole. Above ``max_per_side`` the matched pairs are subsampled
uniformly (both sides keep the same mix). Uniform subsampling within a stratum
leaves each side's score distribution unchanged, so the AUC (which does not depend
on the ratio of the two sets) is not biased; it only gains variance, which the
interval shows. The draws come from a public, seeded ``numpy`` generator.

**Statistics.** AUC (scikit-learn) with a percentile bootstrap interval (members
and non-members resampled separately with replacement, ``resamples`` times, seeded;
the AUC of a replicate by its rank sum). The true-positive rate at 1 % false
positives is read off the ROC curve, interpolated linearly between its vertices
(what a randomised threshold achieves). A 1 % FPR needs at least 100 non-members to
be resolved (1 false positive in 100); with fewer it is reported as ``None`` with
the smallest FPR the set resolves, rather than extrapolated.

These figures are computed on the private corpus: they stay with the curator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dptext.evaluate._shared import tokenize

RARE_BELOW = 1e-6  # public frequency under which an n-gram is rare (Zipf < 3)
UNKNOWN_WORD_FREQ = 1e-9  # a word missing from wordfreq's list
NGRAM_ORDERS = (1, 3)  # n = 1..3
TARGET_FPR = 0.01
MIN_PER_SIDE = 10
NOTE = ("Computed on the private corpus: these figures stay with the curator and are not "
        "part of the release.")


# --------------------------------------------------------------------------- balanced sets


def _key(text: str) -> str:
    return " ".join(tokenize(text))


def balanced_indices(members: Sequence[str], non_members: Sequence[str], *,
                     member_labels: Sequence | None = None,
                     non_member_labels: Sequence | None = None,
                     max_per_side: int = 2000,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of equally many members and non-members (see the module docstring)."""
    member_keys = {_key(t) for t in members}
    keep = np.array([_key(t) not in member_keys for t in non_members], dtype=bool)
    labelled = member_labels is not None and non_member_labels is not None
    m_lab = np.asarray([str(x) for x in member_labels] if labelled else [""] * len(members))
    n_lab = np.asarray([str(x) for x in non_member_labels] if labelled else
                       [""] * len(non_members))
    pick_m, pick_n = [], []
    for lab in np.intersect1d(m_lab, n_lab[keep]):
        m_ix = np.flatnonzero(m_lab == lab)
        n_ix = np.flatnonzero((n_lab == lab) & keep)
        k = min(len(m_ix), len(n_ix))
        pick_m.append(rng.permutation(m_ix)[:k])
        pick_n.append(rng.permutation(n_ix)[:k])
    m_sel = np.concatenate(pick_m) if pick_m else np.zeros(0, dtype=int)
    n_sel = np.concatenate(pick_n) if pick_n else np.zeros(0, dtype=int)
    if len(m_sel) > max_per_side:
        pairs = np.sort(rng.choice(len(m_sel), max_per_side, replace=False))
        m_sel, n_sel = m_sel[pairs], n_sel[pairs]
    return m_sel, n_sel


# --------------------------------------------------------------------------- attacks


def nearest_synthetic_similarity(candidates: np.ndarray, synthetic: np.ndarray,
                                 block: int = 1024) -> np.ndarray:
    """Cosine similarity of each candidate row to its nearest synthetic row (unit-norm
    rows); computed in blocks of candidates to bound memory."""
    synthetic = np.asarray(synthetic, dtype=np.float32)
    out = np.empty(len(candidates), dtype=np.float64)
    for start in range(0, len(candidates), block):
        sims = np.asarray(candidates[start:start + block], dtype=np.float32) @ synthetic.T
        out[start:start + block] = sims.max(axis=1)
    return out


def public_surprise(ngrams: Sequence[str]) -> np.ndarray:
    """``-log10 f`` of each space-joined n-gram, ``f`` by wordfreq's phrase rule
    (``1/f = sum 1/f_i``) over the ``large`` English list; unknown words ``1e-9``."""
    from wordfreq import word_frequency

    words = {w for g in ngrams for w in g.split(" ")}
    freq = {w: word_frequency(w, "en", "large", minimum=UNKNOWN_WORD_FREQ) for w in words}
    inv = np.fromiter((sum(1.0 / freq[w] for w in g.split(" ")) for g in ngrams),
                      dtype=np.float64, count=len(ngrams))
    return np.log10(inv)


def rare_ngram_scores(candidates: Sequence[str], synthetic: Sequence[str],
                      rare_below: float = RARE_BELOW) -> np.ndarray:
    """Per candidate: the surprise-weighted share of its rare n-grams found in the
    synthetic corpus (0 when it has none)."""
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None,
                          ngram_range=NGRAM_ORDERS, binary=True, dtype=np.float64)
    x = vec.fit_transform(candidates)
    surprise = public_surprise(vec.get_feature_names_out())
    weight = np.where(surprise > -np.log10(rare_below), surprise, 0.0)
    in_synthetic = np.asarray(vec.transform(synthetic).sum(axis=0)).ravel() > 0
    total = x @ weight
    shared = x @ (weight * in_synthetic)
    return np.divide(shared, total, out=np.zeros_like(total), where=total > 0)


# --------------------------------------------------------------------------- statistics


def rank_auc(members: np.ndarray, non_members: np.ndarray) -> np.ndarray:
    """AUC of each row pair (``(B, n1)`` against ``(B, n0)``) by the Mann-Whitney rank sum,
    ties counted half."""
    from scipy.stats import rankdata

    n1, n0 = members.shape[1], non_members.shape[1]
    ranks = rankdata(np.concatenate([members, non_members], axis=1), axis=1)
    return (ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)


def bootstrap_auc_interval(members: np.ndarray, non_members: np.ndarray, *,
                           rng: np.random.Generator, resamples: int = 1000,
                           level: float = 0.95, chunk: int = 200) -> tuple[float, float]:
    """Percentile bootstrap interval of the AUC, each side resampled separately."""
    members, non_members = np.asarray(members, float), np.asarray(non_members, float)
    aucs = []
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        mi = rng.integers(0, len(members), (b, len(members)))
        ni = rng.integers(0, len(non_members), (b, len(non_members)))
        aucs.append(rank_auc(members[mi], non_members[ni]))
    lo, hi = np.quantile(np.concatenate(aucs), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, target: float = TARGET_FPR) -> float:
    """TPR of the ROC curve (vertices ``fpr``, ``tpr``, fpr non-decreasing) at ``target``:
    the highest TPR at exactly that FPR, else linear between the vertices around it."""
    i = int(np.searchsorted(fpr, target, side="right")) - 1
    if fpr[i] == target or i + 1 >= len(fpr):
        return float(tpr[i])
    t = (target - fpr[i]) / (fpr[i + 1] - fpr[i])
    return float(tpr[i] + t * (tpr[i + 1] - tpr[i]))


def attack_statistics(member_scores: np.ndarray, non_member_scores: np.ndarray, *,
                      rng: np.random.Generator, resamples: int = 1000, level: float = 0.95,
                      target_fpr: float = TARGET_FPR) -> dict:
    """AUC with its bootstrap interval, TPR at ``target_fpr`` and the ROC points."""
    from sklearn.metrics import roc_auc_score, roc_curve

    y = np.r_[np.ones(len(member_scores)), np.zeros(len(non_member_scores))]
    s = np.r_[member_scores, non_member_scores]
    fpr, tpr, _ = roc_curve(y, s)
    n0 = len(non_member_scores)
    resolvable = n0 * target_fpr >= 1 - 1e-9
    lo, hi = bootstrap_auc_interval(member_scores, non_member_scores, rng=rng,
                                    resamples=resamples, level=level)
    out = {"auc": float(roc_auc_score(y, s)), "auc_ci": [lo, hi],
           "tpr_at_fpr": tpr_at_fpr(fpr, tpr, target_fpr) if resolvable else None,
           "roc": {"fpr": fpr.round(5).tolist(), "tpr": tpr.round(5).tolist()}}
    if not resolvable:
        out["tpr_note"] = (f"{n0} non-members resolve a false-positive rate of "
                           f"{1 / n0:.3g} at best, not {target_fpr:g}")
    return out


# --------------------------------------------------------------------------- the section


def _rows(embed: Callable, texts: tuple[str, ...], idx: np.ndarray) -> np.ndarray:
    """Embeddings of ``texts[idx]``: of the whole tuple (which the evaluation cache has
    usually embedded already) when the sample is at least half of it."""
    if len(texts) <= 2 * len(idx):
        return np.asarray(embed(texts))[idx]
    return np.asarray(embed(tuple(texts[i] for i in idx)))


def membership_report(synthetic, members, non_members, *, embed: Callable,
                      originals: tuple[Sequence[str], Sequence[str]] | None = None,
                      seed: int = 0, max_per_side: int = 2000, resamples: int = 1000,
                      level: float = 0.95, target_fpr: float = TARGET_FPR) -> dict:
    """Both attacks on ``synthetic`` (a ``Labelled``) with ``members`` (the private corpus)
    and ``non_members`` (real documents not in it, e.g. the real test set); either None:
    skipped. ``embed(texts) -> unit-norm rows``. ``originals``: the texts of the member and
    non-member documents when the attacks see another form of them (a keyphrase file's
    phrase sequences): duplicates are judged on the documents, not on that form."""
    if members is None or non_members is None:
        return {"skipped": "membership inference needs the private corpus (--private) and "
                           "real documents that were not in it (--real-test)"}
    rng = np.random.default_rng(seed)
    m_idx, n_idx = balanced_indices(
        *(originals or (members.texts, non_members.texts)), member_labels=members.labels,
        non_member_labels=non_members.labels, max_per_side=max_per_side, rng=rng)
    out: dict = {"note": NOTE, "n_members": len(m_idx), "n_non_members": len(n_idx),
                 "matched_within_labels": members.labels is not None
                 and non_members.labels is not None,
                 "interval": {"method": "percentile bootstrap, each side resampled",
                              "level": level, "resamples": resamples, "seed": seed},
                 "target_fpr": target_fpr}
    if len(m_idx) < MIN_PER_SIDE:
        out["skipped"] = (f"fewer than {MIN_PER_SIDE} members and non-members after matching "
                          "(give a larger --private corpus or real test set)")
        return out
    syn_emb = np.asarray(embed(synthetic.texts))
    candidates = [members.texts[i] for i in m_idx] + [non_members.texts[i] for i in n_idx]
    scores = {
        "embedding_distance": np.r_[
            nearest_synthetic_similarity(_rows(embed, members.texts, m_idx), syn_emb),
            nearest_synthetic_similarity(_rows(embed, non_members.texts, n_idx), syn_emb)],
        "rare_ngrams": rare_ngram_scores(candidates, synthetic.texts),
    }
    k = len(m_idx)
    out["attacks"] = {name: attack_statistics(s[:k], s[k:], rng=rng, resamples=resamples,
                                              level=level, target_fpr=target_fpr)
                      for name, s in scores.items()}
    return out
