"""The shared protocol of the benchmarks that compare generators through an LLM.

Every such benchmark (DP-KPS vs Aug-PE, PATE, ...) uses the same pieces so that their
tables can be read side by side:

* ``load_data`` — a demo corpus's train split (the private corpus) and a fixed sample of
  its test split, with the document type and token limit the prompts use;
* ``shared_backend`` — one local LLM for every method (``BENCH_LLM``), loaded once;
* ``kps_documents`` — DP-KPS end to end at a total ε: dptext's default seeder, then one
  LLM document per DP keyphrase sequence, journaled in ``work_dir`` (a killed benchmark
  resumes without repeating prompts);
* ``llm_lock`` — hold a lock file while the LLM runs, so that benchmarks sharing one
  machine take turns instead of halving each other's speed;
* ``downstream`` — the one downstream classifier: MiniLM embeddings + the evaluation
  suite's three-layer MLP head, trained on the synthetic set, tested on the real test set.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

from dptext.corpus import Corpus, read_corpus
from dptext.evaluate.data import Labelled

BENCH_LLM = "local:qwen2.5-0.5b"

#: per dataset: what the prompts call a document, and a token limit that keeps a 2-core run
#: within the hour (BBC articles are cut to a paragraph; tweets are short anyway)
DATASETS = {
    "bbc-news": ("news article", 64),
    "health-tweets": ("health news tweet", 40),
    "complaints": ("consumer complaint about a financial product", 96),
    "banking77": ("customer question to a bank", 32),
    "drug-reviews": ("patient review of a medicine", 96),
}


@dataclass
class BenchData:
    name: str
    train: Corpus          # the private corpus
    test: Labelled         # real test documents (a fixed sample)
    document_type: str
    max_tokens: int
    _test_x: np.ndarray | None = field(default=None, repr=False)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.test.labels)))


def load_data(name: str, test_docs: int = 2000) -> BenchData:
    """``name``: a key of ``DATASETS``; the test sample is fixed (seed 0)."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    train = read_corpus(f"demo:{name}/train")
    test = read_corpus(f"demo:{name}/test")
    keep = np.arange(len(test))
    if len(test) > test_docs:
        keep = np.sort(np.random.default_rng(0).choice(len(test), test_docs, replace=False))
    doc_type, max_tokens = DATASETS[name]
    return BenchData(name, train,
                     Labelled(texts=tuple(test.texts[i] for i in keep),
                              labels=tuple(test.labels[i] for i in keep), source=test.source),
                     doc_type, max_tokens)


@lru_cache(maxsize=1)
def shared_backend(spec: str = BENCH_LLM):
    """One backend (one loaded model) for the whole process."""
    from dptext.llm import make_backend

    return make_backend(spec)


@contextlib.contextmanager
def llm_lock(path: str | Path | None):
    """Hold ``path`` (flock) while the shared LLM runs, if asked to."""
    if path is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@lru_cache(maxsize=1)
def _encoder():
    from dptext.embed import load_embedder

    return load_embedder("minilm")  # no cache: test and synthetic texts are not phrases


def downstream(texts, labels, data: BenchData, seed: int = 0) -> dict:
    """Accuracy and macro-F1 on ``data.test`` of the MLP head trained on (texts, labels)."""
    from dptext.evaluate.utility import MLPConfig, classification_metrics, mlp_head

    classes = data.classes
    index = {c: i for i, c in enumerate(classes)}
    pairs = [(t, index[lab]) for t, lab in zip(texts, labels, strict=True)
             if t.strip() and lab in index]
    if not pairs:
        return {"accuracy": float("nan"), "macro_f1": float("nan"), "n_train": 0}
    enc = _encoder()
    if data._test_x is None:
        data._test_x = np.asarray(enc.encode(list(data.test.texts)))
    x = np.asarray(enc.encode([t for t, _ in pairs]))
    y = np.array([c for _, c in pairs], dtype=np.int64)
    pred = mlp_head(x, y, data._test_x, False, len(classes), MLPConfig(), seed=seed)
    y_test = np.array([index[lab] for lab in data.test.labels], dtype=np.int64)
    return {**classification_metrics(y_test, pred, False), "n_train": len(pairs)}


def real_sample(data: BenchData, per_class: int, seed: int = 0) -> tuple[list, list]:
    """``per_class`` real training documents per class: the non-private reference at the
    same size as a synthetic set."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(data.train.labels, dtype=object)
    idx = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:per_class]
                          for c in data.classes])
    return [data.train.texts[i] for i in idx], [data.train.labels[i] for i in idx]


def llm_documents(seqs, data: BenchData, journal: str | Path, *, backend=None, seed: int = 0,
                  concurrency: int = 4):
    """One document per keyphrase sequence with the protocol's prompts (``backend``: the
    shared one unless given), journaled at ``journal``; (documents, RunStats)."""
    from dptext.llm import (
        DocumentOptions,
        Journal,
        PromptBuilder,
        RunStats,
        SamplingParams,
        generate_documents,
    )

    builder = PromptBuilder(data.document_type, params=SamplingParams(max_tokens=data.max_tokens))
    stats = RunStats()
    docs = generate_documents(seqs, backend or shared_backend(), builder,
                              DocumentOptions(seed=seed, concurrency=concurrency),
                              journal=Journal(journal), stats=stats)
    return docs, stats


@dataclass
class KpsRun:
    docs: list[tuple[str, str]]  # (text, label)
    prompts: int
    epsilon: float
    seconds: float


def kps_documents(data: BenchData, epsilon: float, n_docs: int, *, work_dir: str | Path,
                  delta: float = 1e-5, seed: int = 0) -> KpsRun:
    """DP-KPS with dptext's defaults at total ``epsilon``, ``n_docs`` LLM documents
    (split by the DP label set's counts), journaled under ``work_dir``."""
    from dptext.generators.kps import KeyphraseSeeder, KeyphraseSequence

    started = time.perf_counter()
    work_dir = Path(work_dir)
    stem = f"kps-{data.name}-eps{epsilon:g}-n{n_docs}-s{seed}"
    saved = work_dir / f"{stem}.sequences.json"
    if saved.exists():  # a resumed benchmark reuses its DP release (no new noise)
        state = json.loads(saved.read_text())
    else:
        seeder = KeyphraseSeeder(epsilon=epsilon, delta=delta)
        rng = np.random.default_rng(seed)
        seeder.fit(data.train, rng=rng)
        state = {"epsilon": seeder.ledger_.guarantee().epsilon,
                 "sequences": [s.to_dict() for s in seeder.sample(total=n_docs, rng=rng)]}
        work_dir.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(state))
    seqs = [KeyphraseSequence.from_dict(d) for d in state["sequences"]]
    docs, stats = llm_documents(seqs, data, work_dir / f"{stem}.journal.jsonl", seed=seed)
    return KpsRun([(d.text, d.label) for d in docs], stats.total, state["epsilon"],
                  time.perf_counter() - started)
