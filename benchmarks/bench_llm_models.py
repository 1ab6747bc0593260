"""Which local LLM to default to: downstream utility per hour of each GGUF model.

For each seed, one DP-KPS fit at ε (dptext's defaults) draws ``--per-class`` keyphrase
sequences per class; every model writes one document per sequence — the same
sequences for every model, so the models differ only in how they write. For each
(model, seed): the documents' downstream accuracy (``synthetic_protocol.downstream``:
MiniLM + the evaluation suite's MLP head, tested on real whole test documents), the
generation's wall time (model loading excluded) and so documents per hour. Beside
them, with no LLM: the same sequences' keyphrases joined as training texts (what the
LLM has to work from), the same configuration's sequences at ε → ∞ (fitted at
ε = 1000), and real training documents at the same size.

Resumable: the sequences of a seed and every model's documents are journaled under
``--work-dir``; a finished (model, seed) is a line of ``results.jsonl`` and is skipped.
Run under ``nice``, nothing else on the machine (one llama.cpp process at a time).

    nice -n 10 python benchmarks/bench_llm_models.py --corpus bbc-news \\
        --models qwen2.5-1.5b qwen2.5-0.5b smollm2-135m --per-class 30 --seeds 0 1 2 --write
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from bench_keyphrase_models import mean_sd
from record import bench_dir, markdown_table, record
from synthetic_protocol import DATASETS, downstream, llm_documents, load_data, real_sample

INF_EPSILON = 1e3


def sequences(data, epsilon: float, per_class: int, seed: int, work_dir: Path) -> list:
    """The seed's DP keyphrase sequences (saved: a resumed run reuses its release)."""
    from dptext.generators.kps import KeyphraseSeeder, KeyphraseSequence

    path = work_dir / f"{data.name}-eps{epsilon:g}-n{per_class}-s{seed}.sequences.json"
    if not path.exists():
        seeder = KeyphraseSeeder(epsilon=epsilon, delta=1e-5)
        rng = np.random.default_rng([seed, 0])
        seeder.fit(data.train, rng=rng)
        seqs = seeder.sample(per_class, rng=np.random.default_rng([seed, 1]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"terms_per_doc": seeder.terms_per_doc_,
                                    "sequences": [s.to_dict() for s in seqs]}))
    return [KeyphraseSequence.from_dict(d)
            for d in json.loads(path.read_text())["sequences"]]


def write_documents(data, seqs: list, model: str, seed: int, work_dir: Path) -> dict:
    """One document per sequence with ``local:model``; wall time excludes loading."""
    from dptext.llm import PromptBuilder, SamplingParams, make_backend

    backend = make_backend(f"local:{model}")
    backend.complete([PromptBuilder("note", params=SamplingParams(max_tokens=1)).build(["x"])])
    started = time.perf_counter()
    docs, stats = llm_documents(
        seqs, data, work_dir / f"{data.name}-{model}-n{len(seqs)}-s{seed}.journal.jsonl",
        backend=backend, seed=seed)
    wall = time.perf_counter() - started
    backend.close()
    # a resumed cell computed only part of its prompts: the rate is of those
    share = stats.computed / max(stats.total, 1)
    return {"texts": [d.text for d in docs], "labels": [d.label for d in docs], "wall": wall,
            "per_hour": 3600 * len(docs) * share / wall if stats.computed else None,
            "prompts": stats.total, "computed": stats.computed,
            "tokens": stats.completion_tokens,
            "coverage": float(np.mean([d.coverage for d in docs])),
            "quality": stats.quality_summary()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="bbc-news", choices=sorted(DATASETS))
    ap.add_argument("--models", nargs="+",
                    default=["qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2-135m"])
    ap.add_argument("--epsilon", type=float, default=6.0)
    ap.add_argument("--per-class", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--work-dir", type=Path, default=bench_dir("llm-models"))
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args()
    data = load_data(args.corpus)
    results = args.work_dir / "results.jsonl"
    done = {}
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            done[(r["corpus"], r["what"], r["epsilon"], r["per_class"], r["seed"])] = r

    def cell(what: str, eps: float, seed: int, run) -> dict:
        key = (args.corpus, what, eps, args.per_class, seed)
        if key not in done:
            r = {"corpus": args.corpus, "what": what, "epsilon": eps,
                 "per_class": args.per_class, "seed": seed, **run()}
            args.work_dir.mkdir(parents=True, exist_ok=True)
            with results.open("a") as f:
                f.write(json.dumps(r) + "\n")
            done[key] = r
            print(json.dumps(r), flush=True)
        return done[key]

    def keyphrases_only(eps: float, seed: int) -> dict:
        seqs = sequences(data, eps, args.per_class, seed, args.work_dir)
        return downstream([" ".join(s.keyphrases) for s in seqs], [s.label for s in seqs],
                          data, seed)

    def model_cell(model: str, seed: int) -> dict:
        seqs = sequences(data, args.epsilon, args.per_class, seed, args.work_dir)
        out = write_documents(data, seqs, model, seed, args.work_dir)
        scores = downstream(out.pop("texts"), out.pop("labels"), data, seed)
        return {**scores, **out}

    rows = {}
    for seed in args.seeds:
        rows.setdefault("real", []).append(cell("real", 0.0, seed, lambda s=seed: downstream(
            *real_sample(data, args.per_class, s), data, s)))
        for eps in (args.epsilon, INF_EPSILON):
            rows.setdefault(f"kp{eps:g}", []).append(
                cell("keyphrases", eps, seed, lambda e=eps, s=seed: keyphrases_only(e, s)))
        for model in args.models:
            rows.setdefault(model, []).append(
                cell(f"local:{model}", args.epsilon, seed, lambda m=model, s=seed:
                     model_cell(m, s)))
    n_docs = args.per_class * len(data.classes)
    table = [["real training documents (no privacy)", "–", mean_sd(
        [r["accuracy"] for r in rows["real"]]), "–", "–", "–", "–"]]
    for eps, name in ((args.epsilon, f"ε = {args.epsilon:g}"), (INF_EPSILON, "ε → ∞")):
        table.append([f"DP-KPS keyphrases only, {name} (no LLM)", "–", mean_sd(
            [r["accuracy"] for r in rows[f"kp{eps:g}"]]), "–", "–", "–", "–"])
    for model in args.models:
        got = rows[model]
        per_hour = [r["per_hour"] for r in got if r["per_hour"]]
        table.append([f"`local:{model}` documents, ε = {args.epsilon:g}",
                      f"{statistics.fmean(r['tokens'] / n_docs for r in got):.0f}",
                      mean_sd([r["accuracy"] for r in got]),
                      mean_sd([r["macro_f1"] for r in got]),
                      f"{statistics.fmean(per_hour):,.0f}" if per_hour else "–",
                      f"{statistics.fmean(r['prompts'] for r in got) / n_docs:.2f}",
                      f"{statistics.fmean(r['coverage'] for r in got):.0%}"])
    body = markdown_table(["training set", "completion tokens per document",
                           "downstream accuracy", "macro-F1", "documents per hour",
                           "prompts per document", "keyphrase coverage"], table)
    text = (f"Corpus {args.corpus}: {args.per_class} DP-KPS keyphrase sequences per class "
            f"({n_docs} documents per model and seed), dptext's defaults at ε = "
            f"{args.epsilon:g}, δ = 1e-5; document type \"{data.document_type}\", at most "
            f"{data.max_tokens} tokens; the same sequences for every model within a seed; "
            f"seeds {', '.join(map(str, args.seeds))} (mean ± sd). Downstream: MiniLM + the "
            "evaluation suite's MLP head, tested on a fixed sample of "
            f"{len(data.test.texts)} real whole test documents. Documents per hour: the "
            "document stage's wall time with the default local backend (2 llama threads, 4 "
            "slots on 2 cores), model loading excluded, nothing else running. ε → ∞: the "
            f"same configuration fitted at ε = {INF_EPSILON:g} (keyphrases only).\n\n" + body)
    print(text)
    if args.write:
        record(f"llm-models-{args.corpus}", f"Local LLMs: downstream utility per hour "
               f"({args.corpus})", text)


if __name__ == "__main__":
    main()
