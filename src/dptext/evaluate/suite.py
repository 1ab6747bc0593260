"""One evaluation run: utility, fidelity/diversity, leakage, membership inference, fairness,
coherence, coreference -> metrics.

``evaluate(...)`` returns the ``metrics.json`` dictionary; ``report.write_report``
turns it into the HTML page. Every section can be switched off, and a section
whose inputs are missing (no private corpus, no group columns) is recorded as
skipped with the reason, never silently left out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from dptext.evaluate.coref import CorefConfig, CorefDoc
from dptext.evaluate.data import Labelled
from dptext.evaluate.utility import (
    LabelSpace,
    MLPConfig,
    classification_metrics,
    finetune_classifier,
    headline,
    headline_name,
    mlp_head,
    text_free_floor,
    tfidf_logreg,
)


@dataclass
class EvalConfig:
    classifiers: tuple[str, ...] = ("tfidf", "mlp")
    encoder: str = "minilm"
    coral_weight: float = 1.0
    mlp_epochs: int = 40
    finetune_epochs: int = 1
    seed: int = 0
    leakage: bool = True
    ner: bool = True
    ner_max_docs: int = 2000
    ner_backend: str = "spacy"
    canaries: tuple[str, ...] = ()
    fidelity: bool = True
    map_points: int = 800
    coherence: bool = True
    membership: bool = True
    coherence_max_docs: int = 200
    nli_backend: str = "onnx"
    group_columns: tuple[str, ...] = ()
    coref: CorefConfig = field(default_factory=CorefConfig)
    extra: dict = field(default_factory=dict)


def _timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, round(time.perf_counter() - t0, 2)


class _EmbeddingCache:
    """Embeds each corpus once (test, synthetic, private, unlabelled)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self._cache: dict[int, np.ndarray] = {}

    def __call__(self, texts: tuple[str, ...]) -> np.ndarray:
        key = id(texts)
        if key not in self._cache:
            self._cache[key] = self.encoder.encode(list(texts))
        return self._cache[key]


def run_utility(synthetic: Labelled, test: Labelled | None, private: Labelled | None,
                unlabeled: Labelled | None, cfg: EvalConfig, embed) -> tuple[dict, dict]:
    """Train each classifier on synthetic (and on real = ceiling); returns (metrics, preds)."""
    if test is None:
        return {"skipped": "no real test set (--real-test)"}, {}
    if synthetic.labels is None or test.labels is None:
        return {"skipped": "the synthetic corpus or the real test set has no labels"}, {}
    trains = {"synthetic": synthetic}
    if private is not None and private.labels is not None:
        trains["ceiling"] = private
    space = LabelSpace.of(*(t.labels for t in trains.values()), test.labels)
    y_test = space.encode(test.labels)
    n_classes = len(space.classes)
    result: dict = {"task": "multi-label" if space.multilabel else "single-label",
                    "classes": list(space.classes), "n_test": len(test),
                    "keyphrase_only": synthetic.keyphrase_only, "classifiers": {}}
    preds: dict[str, np.ndarray] = {}
    target = unlabeled.texts if unlabeled is not None else None
    for name in cfg.classifiers:
        res: dict = {}
        for role, data in trains.items():
            y = space.encode(data.labels)
            runs = [(role, 0.0)]
            if role == "synthetic" and target is not None and name != "tfidf" \
                    and cfg.coral_weight > 0:
                runs.append(("synthetic_coral", cfg.coral_weight))
            for key, cw in runs:
                if name == "tfidf":
                    p, secs = _timed(tfidf_logreg, data.texts, y, test.texts, space.multilabel,
                                     n_classes, cfg.seed)
                elif name == "mlp":
                    mcfg = MLPConfig(epochs=cfg.mlp_epochs, coral_weight=cw)
                    p, secs = _timed(mlp_head, embed(data.texts), y, embed(test.texts),
                                     space.multilabel, n_classes, mcfg,
                                     embed(target) if cw > 0 else None, cfg.seed)
                elif name == "finetune":
                    from dptext.evaluate._shared import get_torch_model

                    p, secs = _timed(finetune_classifier, get_torch_model(cfg.encoder),
                                     data.texts, y, test.texts, space.multilabel, n_classes,
                                     epochs=cfg.finetune_epochs, target_texts=target,
                                     coral_weight=cw, seed=cfg.seed)
                else:
                    raise ValueError(f"unknown classifier {name!r}")
                m = classification_metrics(y_test, p, space.multilabel, space.classes)
                m["n_train"] = len(data)
                m["seconds"] = secs
                res[key] = m
                preds[f"{name}/{key}"] = p
        if "ceiling" in res:
            ceil = headline(res["ceiling"])
            res["ratio"] = headline(res["synthetic"]) / ceil if ceil > 0 else None
            if "synthetic_coral" in res:
                res["ratio_coral"] = headline(res["synthetic_coral"]) / ceil if ceil > 0 else None
        result["classifiers"][name] = res
    result["floor"] = text_free_floor(y_test, space.multilabel)
    result["y_test"] = y_test
    return result, preds


def evaluate(synthetic: Labelled, test: Labelled | None, *, private: Labelled | None = None,
             unlabeled: Labelled | None = None, privacy: dict | None = None,
             cfg: EvalConfig | None = None, encoder=None, progress=None,
             coref_gold: Sequence[CorefDoc] | None = None) -> dict:
    """Run every section and return the metrics dictionary (JSON-serialisable).

    Without a real test set (``test=None``: an unlabelled corpus evaluated on gold
    coreference documents only) the sections that compare with it are skipped."""
    cfg = cfg or EvalConfig()
    say = progress or (lambda msg: None)
    if encoder is None:
        from dptext.evaluate._shared import get_encoder

        encoder = get_encoder(cfg.encoder)
    embed = _EmbeddingCache(encoder)
    metrics: dict = {
        "inputs": {"synthetic": synthetic.source, "n_synthetic": len(synthetic),
                   "real_test": None if test is None else test.source,
                   "n_test": None if test is None else len(test),
                   "private": None if private is None else private.source,
                   "n_private": None if private is None else len(private),
                   "unlabeled": None if unlabeled is None else unlabeled.source,
                   "n_unlabeled": None if unlabeled is None else len(unlabeled),
                   "encoder": cfg.encoder},
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("extra", "canaries")},
        "privacy": privacy,
        "timings_s": {},
    }

    # Keyphrase-only protocol: real documents become phrase sequences over the release.
    test_u, private_u, unlabeled_u = test, private, unlabeled
    if synthetic.keyphrase_only:
        from dptext.evaluate.keyphrases import as_sequences, release_vocabulary, sequence_length

        terms = release_vocabulary(synthetic.keyphrases or ())
        k = sequence_length(synthetic.keyphrases or ())
        test_u = None if test is None else as_sequences(test, terms, k)
        private_u = None if private is None else as_sequences(private, terms, k)
        unlabeled_u = None if unlabeled is None else as_sequences(unlabeled, terms, k)
        metrics["keyphrase_protocol"] = {"vocabulary_size": len(terms), "k": k}

    say("utility: training classifiers")
    (util, preds), metrics["timings_s"]["utility"] = _timed(
        run_utility, synthetic, test_u, private_u, unlabeled_u, cfg, embed)
    y_test = util.pop("y_test", None)
    metrics["utility"] = util

    if cfg.fidelity and test is None:
        metrics["fidelity"] = {"skipped": "no real test set (--real-test) to compare with"}
    elif cfg.fidelity:
        from dptext.evaluate.fidelity import fidelity_and_diversity

        # a keyphrase file is compared with the real documents' phrase sequences (same form)
        say("fidelity and diversity")
        metrics["fidelity"], metrics["timings_s"]["fidelity"] = _timed(
            fidelity_and_diversity, synthetic, test_u, embed, cfg.map_points, cfg.seed,
            reference=private_u)

    if cfg.leakage or cfg.canaries:
        from dptext.evaluate.leakage import leakage_report

        say("privacy leakage")
        metrics["leakage"], metrics["timings_s"]["leakage"] = _timed(
            leakage_report, synthetic, private, canaries=cfg.canaries,
            ner=cfg.ner and cfg.leakage, ngrams=cfg.leakage, ner_max_docs=cfg.ner_max_docs,
            ner_backend=cfg.ner_backend, seed=cfg.seed)

    if cfg.membership:
        from dptext.evaluate.membership import membership_report

        # in the keyphrase-only protocol the real documents are compared as phrase sequences
        say("membership inference")
        metrics["membership"], metrics["timings_s"]["membership"] = _timed(
            membership_report, synthetic, private_u, test_u, embed=embed, seed=cfg.seed,
            originals=None if private is None or test is None
            else (private.texts, test.texts))

    if cfg.group_columns and test is not None:
        from dptext.evaluate.fairness import fairness_report

        say("fairness")
        metrics["fairness"], metrics["timings_s"]["fairness"] = _timed(
            fairness_report, test, y_test, preds, util.get("classes", []),
            util.get("task") == "multi-label", cfg.group_columns)

    if cfg.coherence and not synthetic.keyphrase_only:
        from dptext.evaluate.coherence import coherence_report

        say("coherence (NLI)")
        metrics["coherence"], metrics["timings_s"]["coherence"] = _timed(
            coherence_report, synthetic, cfg.nli_backend, cfg.coherence_max_docs, cfg.seed)

    if coref_gold is not None:
        from dptext.evaluate.coref import coreference_section

        say("coreference (silver chains)")
        metrics["coreference"], metrics["timings_s"]["coreference"] = _timed(
            coreference_section, synthetic, private, coref_gold, cfg.coref, say)

    metrics["summary"] = summary_rows(metrics)
    return metrics


def _fmt(x, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{100 * x:.1f}%" if pct else f"{x:.3g}"


def summary_rows(m: dict) -> list[dict]:
    """The summary table on top of the report: (what, value, how to read it)."""
    rows = []
    g = m.get("privacy")
    if g and g.get("epsilon") is not None:
        delta = g.get("delta")
        rows.append({"metric": "Privacy guarantee of the release",
                     "value": f"ε = {g['epsilon']:.3g}" + (f", δ = {delta:.1g}" if delta else "")
                     + (f" ({g['method']})" if g.get("method") else ""),
                     "note": "Smaller ε = stronger privacy. Spent by the generator, read from "
                             "privacy.json."})
    else:
        rows.append({"metric": "Privacy guarantee of the release", "value": "unknown",
                     "note": "No privacy.json beside the synthetic file."})
    floor = m.get("utility", {}).get("floor")
    for name, res in m.get("utility", {}).get("classifiers", {}).items():
        syn = headline(res["synthetic"])
        label = {"tfidf": "TF-IDF + logistic regression", "mlp": "sentence encoder + MLP",
                 "finetune": "fine-tuned encoder"}.get(name, name)
        val = f"{_fmt(syn, True)} {headline_name(res['synthetic'])}"
        if "ceiling" in res:
            val += f" vs {_fmt(headline(res['ceiling']), True)} on real data " \
                   f"(ratio {_fmt(res.get('ratio'))})"
        if "synthetic_coral" in res:
            val += f"; with CORAL {_fmt(headline(res['synthetic_coral']), True)}"
        if floor:
            val += f"; {_fmt(headline(floor), True)} reading no text ({floor['predicts']})"
        rows.append({"metric": f"Utility: {label}", "value": val,
                     "note": "A classifier trained on the synthetic data, tested on real data; "
                             "ratio 1 = as good as training on the real data; it must pass "
                             "the score of reading no text."})
    lk = m.get("leakage", {})
    ng = lk.get("ngrams")
    if ng:
        r7 = ng["overlap"].get("7")
        rows.append({"metric": "Leakage: 7-word sequences copied from the private data",
                     "value": f"{ng['copied_7grams']} ({_fmt(r7, True)} of synthetic 7-grams)",
                     "note": "Long word sequences shared with the private corpus; near 0 is "
                             "expected for a DP release."})
    ent = lk.get("entities")
    if ent and "n_private_entities" in ent:
        rows.append({"metric": "Leakage: private named entities reappearing",
                     "value": f"{ent['n_leaked']} of {ent['n_private_entities']} "
                              f"({ent['n_leaked_with_context'].get('1', 0)} with 1 word of "
                              "context)",
                     "note": "Names, places, organisations… of the private data found again."})
    can = lk.get("canaries")
    if can:
        rows.append({"metric": "Leakage: planted canaries found",
                     "value": f"{can['n_found']} of {can['n_canaries']} "
                              f"(secrets: {can['n_secret_found']})",
                     "note": "Should be 0: a canary seen only once must not come back."})
    fid = m.get("fidelity", {})
    if "frechet_distance" in fid:
        rows.append({"metric": "Fidelity: embedding distance to real test data",
                     "value": f"{_fmt(fid['frechet_distance'])} (real train vs test: "
                              f"{_fmt(fid.get('frechet_reference'))})" if
                     fid.get("frechet_reference") is not None else
                     _fmt(fid["frechet_distance"]),
                     "note": "Fréchet distance between embedding distributions; lower = closer."})
    coh = m.get("coherence", {})
    if "mean_score" in coh:
        rows.append({"metric": "Coherence (NLI score)", "value": _fmt(coh["mean_score"], True),
                     "note": "Share of consecutive sentence pairs that do not contradict."})
    cor = m.get("coreference", {}).get("models")
    if cor:
        val = f"CoNLL F1 {_fmt(cor['synthetic_silver']['conll_f1'], True)} trained on " \
              f"synthetic silver vs {_fmt(cor['gold']['conll_f1'], True)} on gold"
        if "private_silver" in cor:
            val += f", {_fmt(cor['private_silver']['conll_f1'], True)} on real silver"
        val += f" (shuffled control {_fmt(cor['shuffled_control']['conll_f1'], True)})"
        rows.append({"metric": "Coreference: silver chains", "value": val,
                     "note": "A coreference model trained on the synthetic documents' silver "
                             "chains, tested on held-out gold documents; the control must be "
                             "lowest."})
    fair = m.get("fairness", {})
    for col, res in fair.get("groups", {}).items():
        rows.append({"metric": f"Fairness over {col!r}: equalized odds",
                     "value": _fmt(res.get("equalized_odds")),
                     "note": "Largest TPR/FPR gap between subgroups; 0 = equal."})
    return rows
