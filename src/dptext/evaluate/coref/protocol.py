"""The silver-coreference protocol (dp-finetuning paper, coreference sections).

1. Gold documents are split by a fixed public rule: sorted by name, every
   ``test_every``-th document (the 1st, the 6th, …) is a test document, the others train.
2. A model trained on gold train annotates the synthetic documents (silver chains).
3. A fresh model trained on that silver data is scored on gold test.
4. The same with the real private documents in place of the synthetic ones (reference).
5. The gold-trained model on gold test is the ceiling.
6. Negative control: the synthetic silver documents with their chains shuffled (mentions
   kept, chain ids permuted across each document); it must score lower than the ceiling.

Documents are cut to ``max_tokens`` and the corpora to ``max_docs`` so that it runs in
minutes on two cores; the caps are part of the result. The scores read the private
corpus when it is given: they are for the curator.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from dptext.evaluate.coref.documents import CorefDoc
from dptext.evaluate.coref.metrics import score
from dptext.evaluate.coref.model import CorefModel
from dptext.evaluate.coref.parsing import Parsed, parse_gold, parse_texts
from dptext.evaluate.data import Labelled


@dataclass(frozen=True)
class CorefConfig:
    max_tokens: int = 1000  # tokens per document (whole sentences)
    max_docs: int = 200  # synthetic / private documents annotated, at most
    max_gold_train: int = 40
    max_gold_test: int = 20
    test_every: int = 5
    window: int = 30  # antecedent candidates: the previous `window` mentions
    seed: int = 0


def split_gold(docs: Sequence[CorefDoc], every: int) -> tuple[list[CorefDoc], list[CorefDoc]]:
    """(train, test): sorted by name, every ``every``-th document is a test document."""
    if len(docs) < 2:
        raise ValueError(f"need at least 2 gold documents to train and test, got {len(docs)}")
    ordered = sorted(docs, key=lambda d: d.name)
    every = min(every, len(ordered))
    test = [d for i, d in enumerate(ordered) if i % every == 0]
    train = [d for i, d in enumerate(ordered) if i % every != 0]
    return train, test


def shuffle_chains(docs: Sequence[Parsed], rng: np.random.Generator) -> list[Parsed]:
    """The same mentions with chain ids permuted across each document (chain sizes kept)."""
    return [p.annotated(p.mentions, rng.permutation(p.chains)) for p in docs]


def _sample(texts: Sequence[str], k: int, rng: np.random.Generator) -> list[str]:
    if len(texts) <= k:
        return list(texts)
    return [texts[i] for i in np.sort(rng.choice(len(texts), size=k, replace=False))]


def _trained(train: Sequence[Parsed], cfg: CorefConfig) -> tuple[CorefModel, float]:
    t0 = time.perf_counter()
    model = CorefModel(window=cfg.window, seed=cfg.seed).fit(train)
    return model, time.perf_counter() - t0


def _scored(train: Sequence[Parsed], test: Sequence[Parsed], cfg: CorefConfig,
            trained: tuple[CorefModel, float] | None = None) -> dict:
    model, secs = trained or _trained(train, cfg)
    t0 = time.perf_counter()
    pred = model.predict(test)
    out = score([p.clusters() for p in test], [p.clusters() for p in pred])
    out["train_docs"] = len(train)
    out["train_mentions"] = int(sum(len(p.mentions) for p in train))
    out["train_chains"] = int(sum(len(set(p.chains.tolist())) for p in train))
    out["seconds"] = round(secs + time.perf_counter() - t0, 2)
    return out


def silver_coreference(gold: Sequence[CorefDoc], synthetic: Sequence[str],
                       private: Sequence[str] | None = None,
                       cfg: CorefConfig | None = None, progress=None) -> dict:
    """Run the protocol; returns the ``coreference`` section of ``metrics.json``."""
    cfg = cfg or CorefConfig()
    say = progress or (lambda msg: None)
    rng = np.random.default_rng(cfg.seed)
    train, test = split_gold(gold, cfg.test_every)
    train = [d.truncated(cfg.max_tokens) for d in train[: cfg.max_gold_train]]
    test = [d.truncated(cfg.max_tokens) for d in test[: cfg.max_gold_test]]
    say("coreference: parsing the gold documents")
    p_train, p_test = parse_gold(train), parse_gold(test)
    say("coreference: the gold-trained model")
    t0 = time.perf_counter()
    teacher = _trained(p_train, cfg)
    models = {"gold": _scored(p_train, p_test, cfg, teacher)}
    corpora = {"synthetic_silver": synthetic}
    if private is not None:
        corpora["private_silver"] = private
    silver: dict[str, list[Parsed]] = {}
    for name, texts in corpora.items():
        say(f"coreference: annotating and training on {name.split('_')[0]} documents")
        silver[name] = teacher[0].predict(parse_texts(_sample(texts, cfg.max_docs, rng),
                                                   cfg.max_tokens))
        models[name] = _scored(silver[name], p_test, cfg)
    say("coreference: the shuffled-chains control")
    models["shuffled_control"] = _scored(
        shuffle_chains(silver["synthetic_silver"], rng), p_test, cfg)
    conll = {k: v["conll_f1"] for k, v in models.items()}
    return {
        "protocol": "silver coreference (dp-finetuning paper): train on gold, annotate, "
                    "retrain on silver, score on held-out gold",
        "scoring": "mentions matched by their head token",
        "caps": asdict(cfg),
        "n_gold_train": len(train), "n_gold_test": len(test),
        "gold_test_tokens": int(sum(len(p) for p in p_test)),
        "models": models,
        "control_below_synthetic": conll["shuffled_control"] < conll["synthetic_silver"],
        "control_below_gold": conll["shuffled_control"] < conll["gold"],
        "seconds": round(time.perf_counter() - t0, 2),
    }


def coreference_section(synthetic: Labelled, private: Labelled | None,
                        gold: Sequence[CorefDoc], cfg: CorefConfig, progress=None) -> dict:
    """The ``coreference`` section of an evaluation run (skipped for a keyphrase file)."""
    if synthetic.keyphrase_only:
        return {"skipped": "a keyphrase file has no text to annotate"}
    return silver_coreference(gold, synthetic.texts,
                              None if private is None else private.texts, cfg, progress)
