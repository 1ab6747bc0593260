"""Before and after a change to the document checks, on the same keyphrase sequences.

Takes finished DP-KPS cells of ``bench_whole_documents.py``, copies each cell's run folder
(its DP releases and its LLM journal) and writes the documents again with this commit's
checks (``dptext.llm.checked``): the journal answers every prompt the cell already asked,
so only the new retries reach the LLM. Per cell: the documents the current ``check_meta``
flags (meta-text or a refusal: an echo of the task, since the echo check), the new LLM
calls, and the downstream accuracy of the old and the new documents (the whole-documents
classifier, the cell's seed), side by side in one process.

    python benchmarks/bench_meta_checks.py --cells complaints-kps-eps3-n100-s0,... \
        [--llm local:qwen2.5-0.5b] [--from ~/.cache/dptext-bench/whole-documents] [--write]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from bench_keyphrase_models import append_row, load_rows, mean_sd, src_tree
from bench_whole_documents import corpus_data, generator_documents
from dptext.llm.quality import check_meta
from record import bench_dir, command_line, markdown_table, record
from synthetic_protocol import BENCH_LLM, downstream, shared_backend

RESULTS = Path(__file__).resolve().parent / "results" / "meta-checks.jsonl"
CELL = re.compile(r"(?P<corpus>.+)-kps-eps(?P<eps>[\d.]+)-n(?P<per_class>\d+)-s(?P<seed>\d+)$")


def flagged(texts: list[str]) -> int:
    """Documents in which the current ``check_meta`` finds meta-text or a refusal."""
    return sum(m.refusal or m.stripped for m in map(check_meta, texts))


def _lines(path: Path) -> list[str]:
    """A JSONL file's lines (split at newlines only, as it was written; the file closed)."""
    with path.open(encoding="utf-8") as f:
        return list(f)


def recheck(name: str, source: Path, work: Path, llm: str, concurrency: int) -> dict:
    m = CELL.match(name)
    if m is None:
        raise SystemExit(f"{name}: not a DP-KPS cell name (CORPUS-kps-epsE-nN-sS)")
    old = [json.loads(line) for line in _lines(source / name / "synthetic.jsonl")]
    folder = work / name
    run = folder / "synthetic.jsonl.run"
    if not run.exists():
        shutil.copytree(source / name / "synthetic.jsonl.run", run)
    journal = run / "journal.jsonl"
    asked = len(_lines(journal))
    data, seed = corpus_data(m["corpus"]), int(m["seed"])
    new, _, _ = generator_documents("kps", data, float(m["eps"]), int(m["per_class"]), seed,
                                    folder, shared_backend(llm), concurrency)
    before = downstream([d["text"] for d in old], [d["label"] for d in old], data, seed=seed)
    after = downstream([t for t, _ in new], [lab for _, lab in new], data, seed=seed)
    return {"cell": name, "corpus": m["corpus"], "epsilon": float(m["eps"]), "seed": seed,
            "documents": len(new), "flagged_before": flagged([d["text"] for d in old]),
            "flagged_after": flagged([t for t, _ in new]),
            "new_llm_calls": len(_lines(journal)) - asked,
            "accuracy_before": before["accuracy"], "accuracy_after": after["accuracy"]}


def report(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["corpus"], r["epsilon"]), []).append(r)
    table = []
    for (corpus, eps), cell in sorted(groups.items()):
        n = sum(r["documents"] for r in cell)
        table.append([corpus, f"{eps:g}", ", ".join(str(r["seed"]) for r in cell),
                      f"{sum(r['flagged_before'] for r in cell) / n:.2%}",
                      f"{sum(r['flagged_after'] for r in cell) / n:.2%}",
                      f"{sum(r['new_llm_calls'] for r in cell) / n:.2%}",
                      mean_sd([r["accuracy_before"] for r in cell]),
                      mean_sd([r["accuracy_after"] for r in cell]),
                      mean_sd([r["accuracy_after"] - r["accuracy_before"] for r in cell])])
    commands = sorted({r["command"] for r in rows})
    return ("The same DP keyphrase sequences written twice: by the whole-documents benchmark "
            "before the echo check existed, and again with this commit's checks (the cell's "
            "journal answers what was asked before; only the new retries reach the LLM). "
            "\"Flagged\": documents in which the current `check_meta` finds meta-text or a "
            "refusal. Accuracy: the whole-documents classifier (MiniLM + MLP, the cell's "
            "seed), tested on the same real documents; mean ± sd over seeds, the difference "
            "paired per seed. Computed by: " + "; ".join(f"`{c}`" for c in commands) + ".\n\n"
            + markdown_table(["corpus", "ε", "seeds", "flagged before", "flagged after",
                              "new LLM calls per document", "accuracy before",
                              "accuracy after", "after − before"], table))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", default="", help="comma-separated DP-KPS cell names")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="the whole-documents work dir holding the cells")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--llm", default=BENCH_LLM, help="the LLM the cells were written with")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args()
    source = args.source or bench_dir("whole-documents")
    work = args.work_dir or bench_dir("meta-checks")
    done = {r["cell"] for r in load_rows(RESULTS)}
    for name in filter(None, args.cells.split(",")):
        if name in done:
            continue
        row = {**recheck(name, source / "cells", work / "cells", args.llm, args.concurrency),
               "llm": args.llm, "src": src_tree(), "command": command_line()}
        append_row(RESULTS, row)
        print(json.dumps(row), flush=True)
    text = report(load_rows(RESULTS))
    if args.write:
        record("meta-checks", "Document checks before and after, on the same sequences", text)
    else:
        print(text)


if __name__ == "__main__":
    main()
