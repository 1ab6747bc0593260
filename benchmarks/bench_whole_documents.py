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

Resumable and polite: each cell runs in its own folder under ``--work-dir`` (DP releases,
LLM completions and InvisibleInk's output are journaled there, so a killed run continues
without new noise or repeated prompts); the generators' prompt cache is ``--work-dir``'s
``llm-cache.jsonl`` (hashed prompts and their public completions), so cells that ask the
same prompts share them on any machine the folder is committed to: PATE's ε cells of one
seed write one candidate pool, not three. Finished cells (in the results file) are
skipped; ``--llm-lock FILE`` holds a lock while a cell's LLM work runs, so LLM jobs
sharing a machine take turns. Run it under ``nice``, one LLM job per core
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

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from dptext.files import write_atomic, write_json_atomic
from dptext.llm import PromptCache
from harness.options import add_list, study_parser
from harness.provenance import bench_dir, command_line, cpu, src_tree
from harness.report import record, record_readme
from harness.store import append_row, load_rows
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
from whole_documents_report import (
    METHODS,
    RESULTS,
    cells_by_llm,
    design,
    done_keys,
    key,
    readme_summary,
    report,
)

FLOOR_WORDS, FLOOR_TERMS = 2000, 10
PEER_MODEL = "qwen2.5-0.5b"
PROMPT_CACHE = "llm-cache.jsonl"  # in --work-dir: committed with the cells it serves
DELTA = 1e-5


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
    """Documents from uniformly drawn public words, labels at random (no private signal);
    kept in ``folder/synthetic.jsonl`` when all are written, like a generator's cells (the
    membership study scores them as a release that holds nothing private)."""
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
    write_atomic(folder / "synthetic.jsonl", "".join(
        json.dumps({"text": d.text, "label": d.label}, ensure_ascii=False) + "\n"
        for d in docs))
    return [(d.text, d.label) for d in docs], stats.total


def generator_documents(method: str, data: BenchData, eps: float, per_class: int, seed: int,
                        folder: Path, llm, concurrency: int, prompt_cache=True,
                        **extra) -> tuple[list[tuple[str, str]], int, float]:
    """One dptext generator through ``dptext.synthesize`` (resumable in ``folder``);
    ``prompt_cache``: its ``PromptCache`` (True: the machine's); ``extra``: more of its
    options, or others in place of these (e.g. DP-KPS's ``form``, dpft's ``sampling``)."""
    import dptext

    options: dict = {"labels": data.classes}
    if method == "dpft":  # an unlabelled corpus (no classes) is one class
        options["documents"] = per_class * max(1, len(data.classes))
    else:
        options.update(per_class=per_class, document_type=data.document_type,
                       max_tokens=data.max_tokens)
    options.update(extra)
    out = folder / "synthetic.jsonl"
    result = dptext.synthesize(
        data.train, method, out=out, epsilon=eps, delta=DELTA, llm=llm,
        resume=(folder / "synthetic.jsonl.run").exists(), seed=seed, cache=prompt_cache,
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
                        method, data, eps, args.per_class, seed, folder, llm, args.concurrency,
                        prompt_cache=PromptCache(args.work_dir / PROMPT_CACHE))
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


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news", "health-tweets", "complaints", "banking77"],
                      epsilons=[3, 6], seeds=[0, 1, 2], work_dir="whole-documents", report=True)
    add_list(ap, "--methods", default=METHODS)
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--llm", default=BENCH_LLM, help="the LLM of every method but the peer")
    ap.add_argument("--also-llm", action="append", default=[],
                    help="report: also the cells of this LLM (the same model served "
                    "elsewhere), in their own table")
    ap.add_argument("--concurrency", type=int, default=4, help="prompts in flight")
    ap.add_argument("--threads", type=int, default=1, help="InvisibleInk's torch threads")
    ap.add_argument("--llm-lock", default=None, help="a lock file held while the LLM runs")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the result store (default: the committed one, so a fresh machine "
                         "carries on from it)")
    args = ap.parse_args()
    unknown = set(args.methods) - set(METHODS) or set(args.corpora) - set(DATASETS)
    if unknown:
        raise SystemExit(f"unknown {sorted(unknown)}; methods: {', '.join(METHODS)}; corpora: "
                         f"{', '.join(DATASETS)}")
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
