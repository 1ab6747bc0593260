"""Whole synthetic documents at a size people use: every generator beside real documents,
the LLM-only floor and one outside peer, scored by one downstream classifier.

A cell is (corpus, method, ε, seed). Methods (``--methods``):

* ``real`` — ``--per-class`` real training documents per class (the reference; no ε);
* ``floor`` — the LLM alone: each document is written from ten terms drawn uniformly
  from the 2,000 most frequent public English words, with a label drawn uniformly at
  random and never shown to the LLM (no private signal, class names not given): what a
  classifier learns from the LLM's text with nothing private in it;
* ``kps``, ``augpe``, ``pate``, ``dpft`` — dptext's generators through
  ``dptext.synthesize`` with their defaults at total ε, the label set declared (public
  class names; no generator puts them in a prompt except PATE, whose public candidates
  are written from them), ``--per-class`` documents per class;
* ``invisibleink`` — the outside peer InvisibleInk (``peers/invisibleink.py``; GPL-3, run
  from its own virtual environment, never imported by dptext) with the same open model
  family as the LLM of the other methods (Qwen2.5-0.5B, dequantised from the same GGUF),
  at most n // 7 documents for a class of n (each output document consumes 7 private
  references).

Every synthetic set (and the real one) trains ``synthetic_protocol.downstream`` (MiniLM +
the evaluation suite's MLP head) and is tested on the same fixed sample of real test
documents. For DP-KPS the same classifier is also trained on the keyphrase sequences the
documents were written from (their terms joined, no LLM): the gap between the two is what
the LLM stage adds or loses (kept in the cell's row). For Aug-PE the population after each
iteration t (its run saves them) is scored too: accuracy against the LLM calls spent so
far, which prices "the LLM calls Aug-PE needs to reach DP-KPS's accuracy".

Per cell the results file keeps accuracy, macro-F1 (and for DP-KPS the keyphrases-only
accuracy), documents, LLM calls (the prompts answered for the final documents, journaled
ones included) and wall seconds summed over the invocations that worked on it; the report
gives LLM calls and wall hours per 1,000 documents for each method. The results file is
``benchmarks/results/whole-documents.jsonl``, in the repository: the design takes days of
CPU, more than one session's machine keeps its cache, so every finished cell is committed
and the next session (on any machine) adds to it. It also holds ``summary`` rows: figures
published before the results were kept here, whose per-seed rows were lost with a
machine's cache (mean, sd and seeds as published); the report pools them with new seeds of
the same cell (exact pooled mean and sd).

Resumable and polite: each cell runs in its own folder under ``--work-dir`` (outside the
repository; DP releases, LLM completions and InvisibleInk's output are journaled there, so
a killed run continues without new noise or repeated prompts); finished cells (in the
results file) are skipped; ``--llm-lock FILE`` holds a lock while a cell's LLM work runs,
so LLM jobs sharing a machine take turns. Run it under ``nice``, one LLM job per core
(``DPTEXT_LLM_THREADS``). ``--report`` only renders what exists; the table names every
cell of the requested design that has not run, by ``--llm`` or any ``--also-llm``.

    nice -n 10 python benchmarks/bench_whole_documents.py --corpora bbc-news \\
        --methods real,kps,floor --epsilons 3,6 --seeds 0,1,2 --per-class 100
    python benchmarks/bench_whole_documents.py --report --write

On a GPU server: ``--llm openai:MODEL@URL --concurrency 64`` (vLLM; docs/llm.md); on one
this machine cannot reach, ``llm_stage_offload.py`` carries the DP-KPS and floor cells'
document stage there and back (``--report --also-llm SPEC`` shows them).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from dptext.files import write_json_atomic

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_keyphrase_models import append_row, load_rows, src_tree
from record import bench_dir, command_line, cpu, markdown_table, record, record_readme
from synthetic_protocol import (
    BENCH_LLM,
    DATASETS,
    BenchData,
    downstream,
    llm_documents,
    llm_lock,
    load_data,
    real_sample,
    shared_backend,
)

METHODS = ("real", "kps", "floor", "pate", "augpe", "invisibleink", "dpft")
PRIVATE = ("kps", "pate", "augpe", "invisibleink", "dpft")  # the methods with an ε
FLOOR_WORDS, FLOOR_TERMS = 2000, 10
PEER_MODEL = "qwen2.5-0.5b"
DELTA = 1e-5
RESULTS = Path(__file__).resolve().parent / "results" / "whole-documents.jsonl"


def cell_name(corpus: str, method: str, eps: float | None, seed: int, per_class: int) -> str:
    e = "none" if eps is None else f"{eps:g}"
    return f"{corpus}-{method}-eps{e}-n{per_class}-s{seed}"


class Timer:
    """Wall seconds a cell has taken, summed over the invocations that worked on it. A
    killed invocation adds its time too: SIGTERM is turned into an exception, and the total
    is saved every ``every`` seconds while the cell runs, so a SIGKILL or a machine's
    restart loses at most that much (a two-hour Aug-PE cell, restarted with its machine,
    once kept only its second invocation's 26 minutes)."""

    def __init__(self, folder: Path, every: float = 60.0):
        self.path = folder / "seconds.json"
        self.before = json.loads(self.path.read_text())["seconds"] if self.path.exists() else 0.0
        self.every = every
        self._stop = threading.Event()

    def __enter__(self):
        self.start = time.perf_counter()
        self._saver = threading.Thread(target=self._save_every, daemon=True)
        self._saver.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._saver.join()
        self._save()

    def _save_every(self) -> None:
        while not self._stop.wait(self.every):
            self._save()

    def _save(self) -> None:
        # atomic: a kill mid-write must not leave a file the next invocation cannot read
        write_json_atomic(self.path, {"seconds": self.total})

    @property
    def total(self) -> float:
        return self.before + time.perf_counter() - self.start


def _terminate(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


# ------------------------------------------------------------------ the methods
def floor_documents(data: BenchData, per_class: int, seed: int, folder: Path, llm,
                    concurrency: int) -> tuple[list[tuple[str, str]], int]:
    """Documents from uniformly drawn public words, labels at random (no private signal)."""
    from dptext.generators.kps import KeyphraseSequence
    from dptext.text.vocabulary import load_vocabulary

    rng = np.random.default_rng([seed, 7])
    words = np.asarray(load_vocabulary(f"english:{FLOOR_WORDS}").terms, dtype=object)
    n = per_class * len(data.classes)
    labels = rng.choice(np.asarray(data.classes, dtype=object), n)
    seqs = [KeyphraseSequence(label, tuple(rng.choice(words, FLOOR_TERMS, replace=False)))
            for label in labels]
    docs, stats = llm_documents(seqs, data, folder / "journal.jsonl", backend=llm, seed=seed,
                                concurrency=concurrency)
    return [(d.text, d.label) for d in docs], stats.total


def generator_documents(method: str, data: BenchData, eps: float, per_class: int, seed: int,
                        folder: Path, llm, concurrency: int, **extra) -> tuple[
                            list[tuple[str, str]], int, float]:
    """One dptext generator through ``dptext.synthesize`` (resumable in ``folder``);
    ``extra``: more of its options (e.g. DP-KPS's ``form``)."""
    import dptext

    options: dict = {"labels": data.classes, **extra}
    if method == "dpft":
        options["documents"] = per_class * len(data.classes)
    else:
        options.update(per_class=per_class, document_type=data.document_type,
                       max_tokens=data.max_tokens)
    out = folder / "synthetic.jsonl"
    result = dptext.synthesize(
        data.train, method, out=out, epsilon=eps, delta=DELTA, llm=llm,
        resume=(folder / "synthetic.jsonl.run").exists(), seed=seed,
        dataset_id=f"bench-whole-documents-{data.name}", allow_budget_overrun=True,
        concurrency=concurrency, progress=True, say=say_for(folder.name), **options)
    # the run's own count (retries included), which a resumed run keeps for what it loaded
    # from its run folder; this process's ``result.stats`` counts only what it ran
    calls = result.report["parameters"].get("llm_calls", 0)  # dpft: no chat calls
    return [(d["text"], d["label"]) for d in result.documents], calls, \
        result.ledger.guarantee().epsilon


def say_for(cell: str) -> Callable[[str], None]:
    """A generator's phase messages, stamped with the time and the cell, on stderr: a run of
    hours in a log shows where it is (its progress bars print there as each phase ends)."""
    def say(message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {cell}: {message}", file=sys.stderr, flush=True)
    return say


def peer_documents(data: BenchData, eps: float, per_class: int, seed: int, folder: Path,
                   threads: int) -> tuple[list[tuple[str, str]], int]:
    from peers import invisibleink

    pairs = invisibleink.generate(
        data.train.texts, data.train.labels, per_class=per_class, epsilon=eps,
        description=data.document_type, model_alias=PEER_MODEL,
        root=bench_dir(), work_dir=folder, delta=DELTA,
        max_tokens=data.max_tokens, seed=seed, threads=threads)
    return pairs, 0  # no chat-completion calls: B forward passes per token instead


# ------------------------------------------------------------------ one cell
def run_cell(args, data: BenchData, method: str, eps: float | None, seed: int) -> dict:
    folder = args.work_dir / "cells" / cell_name(data.name, method, eps, seed, args.per_class)
    folder.mkdir(parents=True, exist_ok=True)
    spent = None
    calls = 0
    with Timer(folder) as timer:
        if method == "real":
            texts, labels = real_sample(data, args.per_class, seed)
            pairs = list(zip(texts, labels, strict=True))
        else:
            llm = None if method == "invisibleink" else shared_backend(args.llm)
            with llm_lock(args.llm_lock):
                if method == "floor":
                    pairs, calls = floor_documents(data, args.per_class, seed, folder, llm,
                                                   args.concurrency)
                elif method == "invisibleink":
                    pairs, calls = peer_documents(data, eps, args.per_class, seed, folder,
                                                  args.threads)
                    spent = eps
                else:
                    pairs, calls, spent = generator_documents(
                        method, data, eps, args.per_class, seed, folder, llm, args.concurrency)
    scores = downstream([t for t, _ in pairs], [lab for _, lab in pairs], data, seed=seed)
    row = {"documents": len(pairs), "accuracy": scores["accuracy"],
           "macro_f1": scores["macro_f1"], "llm_calls": calls, "wall_s": timer.total,
           "spent_epsilon": spent, "cpu": cpu()}
    if method == "kps":
        row["keyphrases_only"] = keyphrases_only(folder, data, seed)
    if method == "augpe":
        row["by_iteration"] = augpe_by_iteration(folder, data, seed)
    if method == "pate":  # its candidate pool's seed (older rows: 0 for every seed)
        run = json.loads((folder / "synthetic.jsonl.run" / "run.json").read_text())
        row["public_seed"] = run["config"]["release"]["seed"]
    if method == "invisibleink":
        from peers import invisibleink

        row["written_on"] = invisibleink.written_on(folder)
    if method == "dpft":  # what `--dtype auto` loaded here (rows without it: bfloat16)
        from dptext.generators.dpft.model import base_dtype

        row["base_dtype"] = base_dtype()
    return row


@cache
def corpus_data(corpus: str) -> BenchData:
    """A corpus's bench data, read once per process (its test embeddings are kept on it)."""
    return load_data(corpus)


def keyphrases_only(folder: Path, data: BenchData, seed: int) -> float:
    """Accuracy of the downstream classifier trained on the keyphrases of a DP-KPS cell's
    documents instead of the documents (the same sequences, the same classifier)."""
    rows = [json.loads(line) for line in (folder / "synthetic.jsonl").open()]
    return downstream([" ".join(r["keyphrases"]) for r in rows], [r["label"] for r in rows],
                      data, seed=seed)["accuracy"]


def augpe_by_iteration(folder: Path, data: BenchData, seed: int) -> list[list[float]]:
    """Aug-PE's population after each iteration t (its run saves them), scored by the same
    classifier: ``[t, accuracy, LLM calls]``, the calls the run had made when population t
    was complete (``RunState.counts``: retries included; a run folder from before that
    counts N per iteration)."""
    from dptext.generators.augpe.state import RunState

    state = RunState(folder / "synthetic.jsonl.run" / "augpe")
    populations = []
    while (population := state.population(len(populations))) is not None:
        populations.append(population)
    calls = np.cumsum([state.counts(t)["llm_calls"] for t in range(len(populations))])
    return [[t, downstream([text for text, _ in p], [label for _, label in p], data,
                           seed=seed)["accuracy"], int(n)]
            for t, (p, n) in enumerate(zip(populations, calls, strict=True))]


# ------------------------------------------------------------------ results and report
def key(corpus: str, method: str, eps, seed: int, per_class: int, llm: str) -> tuple:
    return (corpus, method, None if eps is None else float(eps), seed, per_class, llm)


def is_summary(row: dict) -> bool:
    return row.get("kind") == "summary"


def seed_keys(r: dict) -> set[tuple]:
    """The (cell, seed) keys a row gives a result for: its seed, or each seed of a summary."""
    return {key(r["corpus"], r["method"], r["epsilon"], seed, r["per_class"], r["llm"])
            for seed in (r["seeds"] if is_summary(r) else [r["seed"]])}


#: PATE's public candidates per document (its default, which every cell here used)
CANDIDATES_PER_DOC = 4


def older_pate(r: dict) -> bool:
    """Whether a PATE row ran before two fixes the design needs: each seed its own pool of
    public candidates (a row without ``public_seed`` reused seed 0's; a summary's seeds all
    did), and candidates the LLM refused or looped in asked again (commit 236afd6; before
    it a cell made exactly one call per candidate and kept the refusals)."""
    return r.get("public_seed") is None and (
        is_summary(r) or r["seed"] != 0 or r["llm_calls"] == CANDIDATES_PER_DOC * r["documents"])


def stale(r: dict) -> bool:
    """A row the design wants redone: an older PATE row."""
    return r["method"] == "pate" and older_pate(r)


def done_keys(rows: list[dict]) -> set[tuple]:
    """Every (cell, seed) with a result, except stale PATE rows: a run redoes their seeds,
    each with its own pool."""
    return set().union(*(seed_keys(r) for r in rows if not stale(r)))


def current(rows: list[dict]) -> list[dict]:
    """The rows a report stands on: a stale PATE row gives way once any of its seeds is
    redone (a summary cannot give up one seed and keep the others)."""
    redone = done_keys(rows)
    return [r for r in rows if not (stale(r) and seed_keys(r) & redone)]


def design(args) -> list[tuple[str, str, float | None, int]]:
    """Every requested cell, seed-major: a partial run has whole comparisons for seed 0."""
    out = []
    for seed in args.seeds:
        for corpus in args.corpora:
            for method in args.methods:
                for eps in (args.epsilons if method in PRIVATE else [None]):
                    out.append((corpus, method, eps, seed))
    return out


@dataclass
class Pooled:
    """Values over seeds kept as count, mean and sum of squared deviations, so a published
    summary (n, mean, sd) and new per-seed values pool exactly (Chan et al.'s merge)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, n: int, mean: float, sd: float = 0.0) -> None:
        total = self.n + n
        delta = mean - self.mean
        self.m2 += sd ** 2 * (n - 1) + delta ** 2 * self.n * n / total
        self.mean += delta * n / total
        self.n = total

    @property
    def sd(self) -> float:
        """The sample sd over the seeds (n ≥ 2)."""
        return math.sqrt(self.m2 / (self.n - 1))

    def __str__(self) -> str:
        if self.n == 0:
            return "–"
        if self.n == 1:
            return f"{self.mean:.3f} (1 seed)"
        return f"{self.mean:.3f} ± {self.sd:.3f}"


def pooled_cell(rows: list[dict]) -> dict:
    """One line of the report from the cell rows and summary rows of one cell."""
    acc, f1, kp, diff = Pooled(), Pooled(), Pooled(), Pooled()
    seeds, docs, calls, hours = [], 0, 0.0, 0.0
    for r in rows:
        if is_summary(r):
            n = len(r["seeds"])
            acc.add(n, *r["accuracy"])
            f1.add(n, *r["macro_f1"])
            if r.get("keyphrases_only"):
                kp.add(n, *r["keyphrases_only"])
                diff.add(n, *r["documents_minus_keyphrases"])
            seeds += r["seeds"]
            d = n * r["documents_per_seed"]
            docs += d
            calls += (r["llm_calls_per_1000"] or 0) * d / 1000
            hours += (r["wall_hours_per_1000"] or 0) * d / 1000
        else:
            acc.add(1, r["accuracy"])
            f1.add(1, r["macro_f1"])
            if r.get("keyphrases_only") is not None:
                kp.add(1, r["keyphrases_only"])
                diff.add(1, r["accuracy"] - r["keyphrases_only"])
            seeds.append(r["seed"])
            docs += r["documents"]
            calls += r["llm_calls"]
            hours += r["wall_s"] / 3600
    return {"seeds": sorted(seeds), "accuracy": acc, "macro_f1": f1, "keyphrases": kp,
            "difference": diff, "documents": docs, "calls": calls, "hours": hours}


def augpe_curve(rows: list[dict]) -> list[tuple[int, Pooled, float]]:
    """Aug-PE's accuracy after each iteration t over the seeds of one cell, with the LLM
    calls per 1,000 final documents that population t had cost."""
    docs = sum(r["documents"] for r in rows)
    curve = []
    for t in range(min(len(r["by_iteration"]) for r in rows)):
        acc = Pooled()
        for r in rows:
            acc.add(1, r["by_iteration"][t][1])
        curve.append((t, acc, 1000 * sum(r["by_iteration"][t][2] for r in rows) / docs))
    return curve


def first_reaching(curve: list[tuple[int, Pooled, float]], target: float):
    """The first ``(t, accuracy, calls)`` of a curve whose mean accuracy reaches ``target``."""
    return next((point for point in curve if point[1].mean >= target), None)


def augpe_against_kps(got: dict[tuple, list[dict]]) -> str:
    """Aug-PE's accuracy by iteration beside DP-KPS at the same (corpus, ε, size), and the
    LLM calls Aug-PE spends to reach DP-KPS's mean accuracy."""
    table, verdicts = [], []
    for (corpus, method, eps, per_class), cell in sorted(got.items(), key=group_order):
        rows = [r for r in cell if r.get("by_iteration")]
        if method != "augpe" or not rows:
            continue
        curve = augpe_curve(rows)
        kps = got.get((corpus, "kps", eps, per_class))
        k = pooled_cell(kps) if kps else None
        k_calls = 1000 * k["calls"] / k["documents"] if k else None
        seeds = ", ".join(str(r["seed"]) for r in rows)
        for t, acc, calls in curve:
            table.append([corpus, f"{eps:g}", seeds, t, acc, f"{calls:.0f}",
                          k["accuracy"] if k else "–", f"{k_calls:.0f}" if k else "–"])
        if not k:
            continue
        reached = first_reaching(curve, k["accuracy"].mean)
        best = max(curve, key=lambda point: point[1].mean)
        verdicts.append(
            f"* {corpus}, ε = {eps:g}: " + (
                f"Aug-PE reaches DP-KPS's {k['accuracy'].mean:.3f} after iteration "
                f"{reached[0]} with {reached[2] / k_calls:.1f}× DP-KPS's LLM calls"
                if reached else
                f"Aug-PE does not reach DP-KPS's {k['accuracy'].mean:.3f} in {len(curve) - 1} "
                f"iterations (best {best[1].mean:.3f} after iteration {best[0]}) and spends "
                f"{curve[-1][2] / k_calls:.1f}× DP-KPS's LLM calls"))
    if not table:
        return ""
    return (
        "\n\n**Aug-PE by iteration, beside DP-KPS.** Aug-PE's population after iteration t "
        "(saved by its run) scored by the same classifier, beside the LLM calls the run had "
        "made when it was complete, as the run saved them per iteration (retries included; "
        "N per iteration for run folders from before Aug-PE retried loops and refusals). "
        "Every population t is post-processing of releases within the run's ε.\n\n"
        + markdown_table(["corpus", "ε", "seeds", "Aug-PE iteration t", "Aug-PE accuracy",
                          "Aug-PE LLM calls per 1,000 documents", "DP-KPS accuracy",
                          "DP-KPS LLM calls per 1,000 documents"], table)
        + ("\n\n" + "\n".join(verdicts) if verdicts else ""))


def welch(a: Pooled, b: Pooled) -> tuple[float, float]:
    """Welch's t and its two-sided p for the means of two pooled cells (≥ 2 seeds each)."""
    from scipy.stats import ttest_ind_from_stats

    t, pvalue = ttest_ind_from_stats(a.mean, a.sd, a.n, b.mean, b.sd, b.n, equal_var=False)
    return float(t), float(pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment: the p of each test within its family, so that the
    tests with adjusted p < α are discoveries at family-wise error α."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p)
    stepped = np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p))))
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted.tolist()


def kps_against_others(got: dict[tuple, list[dict]]) -> str:
    """DP-KPS against every other private method at the same (corpus, ε, size): the
    difference of mean accuracies and Welch's test over seeds. "Ahead" or "behind" only
    where p < 0.05; a cell with one seed is not tested. Holm's adjusted p says which
    verdicts stand as a family (a reader picking single rows out of many)."""
    pairs, tally = [], {}
    for (corpus, method, eps, per_class), cell in sorted(got.items(), key=group_order):
        kps = got.get((corpus, "kps", eps, per_class))
        if method not in PRIVATE or method == "kps" or not kps:
            continue
        k, o = pooled_cell(kps)["accuracy"], pooled_cell(cell)["accuracy"]
        t, pvalue = welch(k, o) if min(k.n, o.n) >= 2 else (None, None)
        verdict = ("not tested (1 seed)" if t is None else "not settled" if pvalue >= 0.05
                   else "DP-KPS ahead" if t > 0 else "DP-KPS behind")
        tally.setdefault(verdict, []).append(f"{corpus} {method} ε = {eps:g}")
        name = f"{method} (older runs)" if method == "pate" and older(cell) else method
        pairs.append((corpus, eps, name, o, k, t, pvalue, verdict))
    if not pairs:
        return ""
    adjusted = iter(holm([pair[6] for pair in pairs if pair[6] is not None]))
    table = [[corpus, f"{eps:g}", name, o, k, f"{k.mean - o.mean:+.3f}",
              *(["–"] * 3 if t is None else [f"{t:.1f}", f"{p:.3f}", f"{next(adjusted):.3f}"]),
              verdict]
             for corpus, eps, name, o, k, t, p, verdict in pairs]
    return (
        "\n\n**DP-KPS against each other method at equal ε.** The rows above, paired by "
        "(corpus, ε, documents per class): the difference of mean accuracies and Welch's t "
        "test over the seeds (two-sided p). \"Ahead\" and \"behind\" where p < 0.05; "
        "with 3 seeds a side and equal sds that takes a difference of 2.3 sds (t ≥ 2.78 at "
        "4 degrees of freedom). PATE cells marked \"older runs\" hold rows from before "
        "two fixes: `dptext.synthesize` gave PATE the run's seed (before it, every seed "
        "shared one pool of public candidates, folds and queried subset, so the sd leaves "
        "out the pool's variation and a verdict against them is surer than it should be), "
        "and PATE asked refused or looping candidates again (before it, refusals stayed in "
        "the pool as candidates). "
        "Each such seed is listed below to run again; its new row replaces the old. "
        "\"Holm p\" adjusts p for the table's tests as one family: a row "
        "taken on its own out of this many wants it below 0.05. The claim \"DP-KPS is "
        "ahead of every other method\" needs no adjustment (it holds only if every row's "
        "own test says so).\n\n"
        + markdown_table(["corpus", "ε", "method", "its accuracy", "DP-KPS accuracy",
                          "DP-KPS − it", "Welch t", "p", "Holm p", "verdict"], table)
        + "\n\n" + "\n".join(f"* {verdict}: {', '.join(cells)}"
                               for verdict, cells in sorted(tally.items())))


def report_order(corpus: str, method: str, eps: float | None) -> tuple:
    """Where a cell stands in the report: by corpus, then methods as ``METHODS`` lists them,
    then ε."""
    return corpus, METHODS.index(method), eps or 0


def group_order(item: tuple[tuple, list[dict]]) -> tuple:
    """Sort key of a ``((corpus, method, ε, per class[, LLM]), rows)`` group of the
    report."""
    (corpus, method, eps, per_class, *llm), _ = item
    return *report_order(corpus, method, eps), per_class, *llm


COLUMNS = ["corpus", "method", "ε", "per class", "seeds", "accuracy",
           "keyphrases only (same sequences)", "documents − keyphrases", "macro-F1",
           "documents per seed", "LLM calls per 1,000 documents",
           "wall hours per 1,000 documents"]


def older(cell: list[dict]) -> bool:
    """Whether some of a PATE cell's rows ran before its fixes (``older_pate``)."""
    return any(map(older_pate, cell))


def cell_line(corpus: str, method: str, eps: float | None, per_class: int,
              cell: list[dict]) -> list:
    """One line of a report table: a cell pooled over its seeds."""
    p = pooled_cell(cell)
    docs, priced = p["documents"], p["documents"] and method != "real"
    seeds = ", ".join(map(str, p["seeds"]))
    if method == "pate" and older(cell):
        seeds += " (older runs)"
    return [corpus, method, "–" if eps is None else f"{eps:g}", per_class,
            seeds, p["accuracy"], p["keyphrases"],
            p["difference"], p["macro_f1"], f"{docs / len(p['seeds']):.0f}",
            f"{1000 * p['calls'] / docs:.0f}" if priced else "–",
            f"{1000 * p['hours'] / docs:.2f}" if priced else "–"]


def cpus_note(rows: list[dict]) -> str:
    """Which CPUs the timed rows ran on: sessions got different machines, and the same
    work can take several times as long on one as on another (``dpft-dtype``)."""
    tally = Counter(r.get("cpu", "not recorded (rows from before a row named its CPU)")
                    for r in rows if r["method"] != "real")
    return ("machines that differed between sessions, so wall hours compare methods only "
            "roughly; rows by CPU: "
            + "; ".join(f"{name}: {n}" for name, n in tally.most_common()))


def computed_by(rows: Iterable[dict]) -> str:
    """The commands that computed these cell rows (summary rows have none), in backticks."""
    return "; ".join(f"`{c}`" for c in sorted({r["command"] for r in rows
                                                if not is_summary(r)}))


def also_llm_table(others: dict[tuple, list[dict]]) -> str:
    """The cells whose LLM stage ran on a GPU server (``llm_stage_offload.py``): the same
    model, served there by llama.cpp's server."""
    if not others:
        return ""
    table = [[*cell_line(*group[:4], cell), f"`{group[4]}`"]
             for group, cell in sorted(others.items(), key=group_order)]
    commands = computed_by(r for cell in others.values() for r in cell)
    return ("\n\n**The same model served by llama.cpp's server.** Cells whose document "
            "stage went through the OpenAI-compatible backend to `llama-server` serving the "
            "same GGUF weights, with top-k moved before DRY (`docs/llm.md`): on a GPU "
            "(`benchmarks/llm_stage_offload.py`: the DP releases made here, the document "
            "stage written there by dptext's own code, the cell scored here), here on the "
            "CPU, or both (a cell the GPU lease cut off, finished here from its journal by "
            "the CPU build of the same llama.cpp). Same prompts, another runtime and sampler "
            "order than `local:`, so not the same samples. Wall hours: the fit, the LLM "
            "stage and the scoring, wherever each ran; not comparable with the table above."
            + (f" Computed by: {commands}." if commands else "")
            + "\n\n" + markdown_table([*COLUMNS, "LLM"], table))


def peer_note(got: dict[tuple, list[dict]]) -> str:
    """Where InvisibleInk's documents were written (its cells' ``written_on``): its wall
    hours are its processes' seconds there, not this machine's."""
    lines = []
    for (corpus, method, eps, _), cell in sorted(got.items(), key=group_order):
        where: dict[str, int] = {}
        for r in cell:
            for device, n in r.get("written_on", {}).items():
                where[device] = where.get(device, 0) + n
        if method == "invisibleink" and where:
            lines.append(f"* {corpus}, ε = {eps:g}: " + ", ".join(
                f"{n:,} documents on {'this machine' if d == 'cpu' else 'a lent ' + d}"
                for d, n in sorted(where.items(), key=lambda kv: -kv[1]) if n))
    if not lines:
        return ""
    return ("\n\n**Where InvisibleInk wrote.** "
            "Its cells were written on a GPU (`benchmarks/peers/invisibleink_offload.py`: one"
            " runner process per class, 14 at a time sharing the GPU, as "
            "`benchmarks/gpu/peer.sh` runs them; what the lease left unwritten was finished "
            "here on one core) and scored here. Its wall hours are the sum of its processes' "
            "seconds (model loads included) plus the scoring: on a GPU that 14 processes "
            "share, not this machine's CPU time as in the other rows. Its ε is InvisibleInk's"
            " own accounting (each document a zCDP composition over its tokens; parallel over"
            " disjoint references). It makes no chat-completion calls (0 in the table): "
            "each token costs B = 8 forward passes instead, 7 over private references."
            "\n\n" + "\n".join(lines))


NAMES = {"real": "real documents", "floor": "LLM-only floor", "kps": "**DP-KPS**",
         "pate": "PATE", "augpe": "Aug-PE", "invisibleink": "InvisibleInk (peer)",
         "dpft": "DP fine-tuning"}
LIMIT = 100.0  # a cell at ε ≥ LIMIT stands for the configuration's ε → ∞ limit


GLANCE_NOTES = {
    "¹": "PATE rows from before its seeds got their own candidate pools and its refused "
         "candidates were asked again; redone seeds replace them (see DP-KPS against each "
         "other method)",
    "²": "documents written through llama.cpp's server (the served table in "
         "`docs/benchmarks.md`)"}


def glance_row(corpus: str, method: str, cells: dict, served: bool, small: list[float],
               wanted: float | None) -> list:
    """One row of the summary: the (corpus, method)'s cells by ε, pooled over seeds and
    marked as ``GLANCE_NOTES`` says; its limit is its largest ε ≥ ``LIMIT``."""
    pooled = {e: pooled_cell(c) for e, c in cells.items()}
    limit = max((e for e in pooled if e is not None and e >= LIMIT), default=None)

    def shown(eps: float | None) -> str:
        if eps not in pooled:
            return "–"
        mark = "¹" if method == "pate" and older(cells[eps]) else ""
        mark += "²" if served else ""
        other = f" (ε = {eps:g})" if eps is not None and eps == limit != wanted else ""
        return f"{pooled[eps]['accuracy']}{mark}{other}"

    calls = sorted({round(1000 * p["calls"] / p["documents"]) for p in pooled.values()})
    return [corpus, NAMES[method], shown(None), *map(shown, small),
            "–" if limit is None else shown(limit),
            "–" if method == "real" else f"{calls[0]:,}" + (
                f"–{calls[-1]:,}" if len(calls) > 1 else "")]


def glance_table(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                 args) -> str:
    """One row per (corpus, method) at the design's size: its accuracy at no ε, at each
    requested ε below ``LIMIT`` and at its largest ε (the ε → ∞ limit), and its LLM calls
    per 1,000 documents. A (corpus, method) with no cell of ``args.llm`` shows its served
    cells (``args.also_llm``), marked. Heading, table and notes; the README's summary is
    the table and notes (``--write`` copies them)."""
    table, notes = glance_body(got, others, args)
    wanted = max((e for e in args.epsilons if e >= LIMIT), default=None)
    return (
        f"**At a glance** ({args.per_class} documents per class; accuracy, mean ± sd over "
        f"the seeds; ε → ∞ is the same configuration at ε = {wanted or LIMIT:g}):\n\n"
        + table + "".join(f"\n\n{n}" for n in notes) + "\n\n") if table else ""


def glance_body(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                args) -> tuple[str, list[str]]:
    """The at-a-glance table and the notes for the marks it uses."""
    small = sorted(e for e in args.epsilons if e < LIMIT)
    wanted = max((e for e in args.epsilons if e >= LIMIT), default=None)
    pairs: dict[tuple, tuple[bool, dict]] = {}
    for groups, served in ((got, False), (others, True)):
        for (corpus, method, eps, per_class, *_), cell in groups.items():
            if per_class != args.per_class:
                continue
            was_served, cells = pairs.setdefault((corpus, method), (served, {}))
            if was_served == served:
                cells.setdefault(eps, []).extend(cell)
    order = {c: i for i, c in enumerate(args.corpora)}
    table = [glance_row(corpus, method, cells, served, small, wanted)
             for (corpus, method), (served, cells) in sorted(pairs.items(), key=lambda kv: (
                 order.get(kv[0][0], len(order)), kv[0][0], METHODS.index(kv[0][1])))]
    if not table:
        return "", []
    text = markdown_table(["corpus", "method", "no ε", *(f"ε = {e:g}" for e in small),
                           "ε → ∞", "LLM calls per 1,000 documents"], table)
    return text, [f"{m} {note}" for m, note in GLANCE_NOTES.items() if m in text]


def readme_summary(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                   args) -> str:
    """The README's copy of the at-a-glance table, its notes as one wrapped paragraph."""
    table, notes = glance_body(got, others, args)
    notes = "".join(f"{n}. " for n in notes) + "–: not run, or no such cell."
    return table + "\n\n" + textwrap.fill(notes, 88, break_on_hyphens=False,
                                           break_long_words=False)


def missing_command(corpus: str, method: str, epsilons: list[float | None],
                    seeds: Iterable[int], args) -> str:
    """The command that runs these missing cells (resumable), as the design asked them."""
    given = [f"{e:g}" for e in epsilons if e is not None]
    return (f"nice -n 10 python benchmarks/bench_whole_documents.py --per-class "
            f"{args.per_class} --corpora {corpus} --methods {method}"
            + (f" --epsilons {','.join(given)}" if given else "")
            + f" --seeds {','.join(map(str, seeds))}"
            + ("" if args.llm == BENCH_LLM else f" --llm {args.llm}"))


def cells_by_llm(rows: list[dict], args) -> tuple[dict[tuple, list[dict]], dict]:
    """The rows of ``args.llm`` by (corpus, method, ε, size), and those of ``args.also_llm``
    by (corpus, method, ε, size, llm)."""
    got: dict[tuple, list[dict]] = {}
    others: dict[tuple, list[dict]] = {}
    for r in current(rows):
        group = (r["corpus"], r["method"], r["epsilon"], r["per_class"])
        if r["llm"] == args.llm:
            got.setdefault(group, []).append(r)
        elif r["llm"] in args.also_llm and r["method"] != "real":
            others.setdefault((*group, r["llm"]), []).append(r)
    return got, others


def report(rows: list[dict], args) -> str:
    """Every row of ``args.llm`` (any size), grouped by corpus, method, ε and size; then the
    cells of the requested design that have not run. The rows of ``args.also_llm`` (the
    same model served elsewhere) come in their own table."""
    got, others = cells_by_llm(rows, args)
    table = [cell_line(*group, cell) for group, cell in sorted(got.items(), key=group_order)]
    done = done_keys(rows)
    missing = [c for c in design(args)
               if all(key(*c, args.per_class, llm) not in done
                      for llm in [args.llm, *args.also_llm])]
    seeds_missing: dict[tuple, list[int]] = {}
    for c, m, e, s in missing:
        seeds_missing.setdefault((c, m, e), []).append(s)
    runs: dict[tuple, list[float | None]] = {}  # the ε of a (corpus, method, seeds) run
    for (c, m, e), s in sorted(seeds_missing.items(), key=lambda kv: report_order(*kv[0])):
        runs.setdefault((c, m, tuple(sorted(s))), []).append(e)
    lines = [f"* {c} / {m} / ε = {', '.join('–' if e is None else f'{e:g}' for e in es)} / "
             f"seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))}: "
             f"`{missing_command(c, m, es, s, args)}`"
             for (c, m, s), es in runs.items()]
    mine = [r for cell in got.values() for r in cell]
    commands = computed_by(mine)
    sources = sorted({r["source"] for r in mine if is_summary(r)})
    return (
        ("Cells computed by (resumable, under `nice`): "
         + commands + ". " if commands else "")
        + "".join(f"Seeds carried from {s}. " for s in sources)
        + f"Every cell: `{RESULTS.relative_to(RESULTS.parents[2])}`. LLM: `{args.llm}`; "
        "\"per class\": documents per class requested (InvisibleInk: at most n // 7 for a "
        "class of n); δ = 1e-5; labels declared. Downstream: MiniLM + the evaluation "
        "suite's MLP head trained on each synthetic set, tested on a fixed sample of ≤ 2,000 "
        "real test documents; mean ± sd over seeds. \"Keyphrases only\": the same classifier "
        "trained on the DP-KPS sequences the documents were written from (terms joined), "
        "tested on the same real documents; \"documents − keyphrases\": the "
        "difference per seed (paired: the same sequences), mean ± sd. LLM calls and wall "
        "hours per 1,000 documents are summed over seeds (wall time includes fitting, on "
        f"the machine of the session that finished the cell: {cpus_note(mine)}).\n\n"
        + glance_table(got, others, args)
        + "**Every cell** (any size):\n\n"
        + markdown_table(COLUMNS, table)
        + kps_against_others(got)
        + peer_note(got)
        + augpe_against_kps(got)
        + also_llm_table(others)
        + f"\n\nCells of the requested design ({args.per_class} per class) not run (yet) "
        "by any LLM above:"
        + ("\n\n" + "\n".join(lines) if lines else " none.")
    )


def split_design(args, methods: tuple[str, ...]) -> None:
    """``args``'s comma-separated --corpora, --methods, --epsilons and --seeds as lists, in
    place; unknown methods (of ``methods``) or corpora are refused."""
    args.corpora = args.corpora.split(",")
    args.methods = args.methods.split(",")
    unknown = set(args.methods) - set(methods) or set(args.corpora) - set(DATASETS)
    if unknown:
        raise SystemExit(f"unknown {sorted(unknown)}; methods: {', '.join(methods)}; corpora: "
                         f"{', '.join(DATASETS)}")
    args.epsilons = [float(e) for e in args.epsilons.split(",")]
    args.seeds = [int(s) for s in args.seeds.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpora", default="bbc-news,health-tweets,complaints,banking77")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--epsilons", default="3,6")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--llm", default=BENCH_LLM, help="the LLM of every method but the peer")
    ap.add_argument("--also-llm", action="append", default=[],
                    help="report: also the cells of this LLM (the same model served "
                    "elsewhere), in their own table")
    ap.add_argument("--concurrency", type=int, default=4, help="prompts in flight")
    ap.add_argument("--threads", type=int, default=1, help="InvisibleInk's torch threads")
    ap.add_argument("--llm-lock", default=None, help="a lock file held while the LLM runs")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="caches: DP releases, journals, peers (default: outside the repo)")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the results file (default: the committed one)")
    ap.add_argument("--report", action="store_true", help="only render the results")
    ap.add_argument("--write", action="store_true",
                    help="write docs/benchmarks.md (with --report also the README's summary)")
    args = ap.parse_args()
    split_design(args, METHODS)
    args.work_dir = args.work_dir or bench_dir("whole-documents")
    results = args.results
    signal.signal(signal.SIGTERM, _terminate)
    if not args.report:
        done = done_keys(load_rows(results))
        for corpus, method, eps, seed in design(args):
            if key(corpus, method, eps, seed, args.per_class, args.llm) in done:
                continue
            row = {"corpus": corpus, "method": method, "epsilon": eps, "seed": seed,
                   "per_class": args.per_class, "llm": args.llm, "src": src_tree(),
                   "command": command_line(),
                   **run_cell(args, corpus_data(corpus), method, eps, seed)}
            append_row(results, row)
            print(f"{corpus} {method} ε={eps} seed {seed}: accuracy {row['accuracy']:.3f}, "
                  f"{row['documents']} documents, {row['llm_calls']} LLM calls, "
                  f"{row['wall_s']:.0f} s", flush=True)
            if args.write:
                rows = load_rows(results)
                record("whole-documents", TITLE, report(rows, args))
    rows = load_rows(results)
    text = report(rows, args)
    if args.write:
        record("whole-documents", TITLE, text)
        if args.report:  # the whole design's summary, not a partial run's
            record_readme("whole-documents", readme_summary(*cells_by_llm(rows, args), args))
    else:
        print(text)


TITLE = "Whole synthetic documents: every generator, the LLM-only floor and InvisibleInk"

if __name__ == "__main__":
    main()
