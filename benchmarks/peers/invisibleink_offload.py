"""Carry InvisibleInk's cells to a GPU machine and back: the peer's generation only.

On one core InvisibleInk writes a 64-token BBC document in about 100 s (B forward passes per
token), so its cells of ``bench_whole_documents.py`` need a GPU. One runner process keeps a
GPU nearly idle (one document at a time, most of each token's time in Python and numpy), so
``run`` keeps WORKERS of them on one GPU, each writing one class of one cell.

* ``pack`` (here, with dptext): the private training documents of each corpus, written by
  the same code as the benchmark's own runs (so a cell resumed here has the same input
  hash), and ``plan.json``: one unit per (cell, class), corpus by corpus in the order given,
  then ε in the order given, then seed (the first cells finish first), without the cells
  the benchmark's results file already holds.
* ``run`` (there; standard library only, never dptext): the units through
  ``invisibleink_runner.py --device cuda --classes LABEL``, WORKERS at a time, each to its
  own ``WORK/CELL/LABEL.jsonl``. Resumable: the runner skips what a unit has written.
* ``land`` (here): each cell's units merged into the cell's folder of
  ``bench_whole_documents.py`` (``invisibleink.jsonl`` in sorted class order, as one run
  writes it, and its ``.meta.json``), except cells already scored; a unit's document whose
  statistics were not yet written when the machine went back is dropped (the runner writes
  it again). Then ``bench_whole_documents.py --methods invisibleink`` resumes each cell
  (on the CPU, for what the GPU did not finish) and scores it.
* ``throughput`` (here): the lease's documents per second, from ``peer.sh``'s samples
  (``gpu.txt`` of each call) and the units' statistics, kept in ``benchmarks/results/`` and
  written into docs/benchmarks.md (``--record``).

The private documents travel only to the machine that runs the peer, as they must; they
are never packed back (``WORK`` holds outputs, statistics and logs without text). Seconds:
each unit's generation and model-load seconds are in its runs (``runs`` of the meta file);
``land`` starts the cell's wall clock (``seconds.json``) at their sum, the processes'
seconds on a GPU shared by WORKERS of them.

    python benchmarks/peers/invisibleink_offload.py pack --corpora bbc-news \\
        --epsilons 6,1000,3 --seeds 0,1,2 --out .gpu/peer
    python3 benchmarks/peers/invisibleink_offload.py run --plan .gpu/peer \\
        --model-dir MODEL --work /tmp/gpu/peer --workers 14          # there
    python benchmarks/peers/invisibleink_offload.py land --shards WORK --work-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/: imported lazily, never by ``run``
RUNNER = HERE / "invisibleink_runner.py"
PLAN = "plan.json"


def input_name(corpus: str) -> str:
    return f"{corpus}.private.jsonl"


# ------------------------------------------------------------------ pack (here)
def scored_cells() -> set[str]:
    """The InvisibleInk cells the benchmark's results file holds (scored: never redone)."""
    import bench_whole_documents as bench

    return {bench.cell_name(corpus, method, eps, seed, per_class)
            for corpus, method, eps, seed, per_class, _ in
            bench.done_keys(bench.load_rows(bench.RESULTS)) if method == "invisibleink"}


def pack(corpora: list[str], epsilons: list[float], seeds: list[int], per_class: int,
         out: Path) -> dict:
    """Write ``out/<corpus>.private.jsonl`` and ``out/plan.json``; return the plan."""
    import invisibleink

    import bench_whole_documents as bench
    from synthetic_protocol import load_data

    out.mkdir(parents=True, exist_ok=True)
    scored = scored_cells()
    data = {corpus: load_data(corpus) for corpus in corpora}
    for corpus, d in data.items():
        invisibleink._write_private(out / input_name(corpus), d.train.texts, d.train.labels)
    cells = [{"cell": bench.cell_name(corpus, "invisibleink", eps, seed, per_class),
              "input": input_name(corpus), "labels": list(d.classes),
              "args": ["--per-class", str(per_class), "--epsilon", str(eps), "--delta",
                       str(bench.DELTA), "--max-tokens", str(d.max_tokens),
                       "--description", d.document_type, "--seed", str(seed)]}
             for corpus, d in data.items() for eps in epsilons for seed in seeds]
    cells = [c for c in cells if c["cell"] not in scored]
    plan = {"cells": cells}
    (out / PLAN).write_text(json.dumps(plan, indent=1) + "\n")
    return plan


# ------------------------------------------------------------------ run (there)
def run(plan_dir: Path, model_dir: Path, work: Path, workers: int, device: str,
        python: str) -> int:
    """Every unit of the plan, ``workers`` runner processes at a time; failures counted."""
    plan = json.loads((plan_dir / PLAN).read_text())
    units = [(c, label) for c in plan["cells"] for label in c["labels"]]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    lock, failed, started = threading.Lock(), [], time.time()

    def one(unit: tuple[dict, str]) -> None:
        cell, label = unit
        folder = work / cell["cell"]
        folder.mkdir(parents=True, exist_ok=True)
        name = label.replace("/", "_")
        cmd = [python, str(RUNNER), "--input", str(plan_dir / cell["input"]),
               "--model-dir", str(model_dir), *cell["args"], "--device", device,
               "--classes", label, "--out", str(folder / f"{name}.jsonl")]
        with open(folder / f"{name}.log", "a") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=log, env=env).returncode
        with lock:
            if rc:
                failed.append(f"{cell['cell']}/{label}")
            print(f"[{time.time() - started:6.0f} s] {cell['cell']} / {label}: "
                  f"{'failed, rc ' + str(rc) if rc else 'done'}", flush=True)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, units))
    print(f"{len(units) - len(failed)} of {len(units)} units done"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


# ------------------------------------------------------------------ land (here)
def _kept(out: Path) -> tuple[list[tuple[str, str]], str, dict, dict]:
    """A unit's (text, label) pairs, its class, statistics and meta, both cut to the
    documents written with their statistics (a snapshot can hold one without the other)."""
    from invisibleink import read_output  # a torn last line is skipped
    from invisibleink_runner import _summarise

    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    [(label, stats)] = meta["classes"].items()
    pairs = read_output(out)[:len(stats["tokens"])]
    n = len(pairs)
    for key in ("epsilon_spent", "tokens", "seconds_per_document"):
        stats[key] = stats[key][:n]
    _summarise(stats, n)
    return pairs, label, stats, meta


def land(shards: Path, work_dir: Path) -> list[str]:
    """Merge each cell's units into ``work_dir/cells/CELL``; the cells landed. Cells the
    results file holds are left alone (a later lease packs the earlier one's units too)."""
    landed, scored = [], scored_cells()
    for folder in sorted(p for p in shards.iterdir() if p.is_dir() and p.name not in scored):
        units = sorted(p for p in folder.glob("*.jsonl")
                       if p.with_name(p.name + ".meta.json").exists())
        if not units:
            continue
        pairs, classes, runs, configs = [], {}, [], set()
        for unit in units:
            kept, label, stats, meta = _kept(unit)
            classes[label] = stats
            if any(lab != label for _, lab in kept):
                raise ValueError(f"{unit}: a document of another class than {label!r}")
            pairs += kept
            runs += [{**r, "classes": [label]} for r in meta["runs"]]
            configs.add(json.dumps(meta["config"], sort_keys=True))
        if len(configs) != 1:
            raise ValueError(f"{folder}: its units were run with different settings")
        dest = work_dir / "cells" / folder.name
        out = dest / "invisibleink.jsonl"
        if out.exists() and len(out.read_text(encoding="utf-8").splitlines()) > len(pairs):
            raise ValueError(f"{out} holds more documents than the units landed: it was "
                             "resumed since; land a newer snapshot or move it away")
        dest.mkdir(parents=True, exist_ok=True)
        pairs.sort(key=lambda pair: pair[1])  # sorted class order; stable within a class
        config = json.loads(configs.pop())
        spent = [e for s in classes.values() for e in s["epsilon_spent"]]
        meta = {"peer": "InvisibleInk", "config": config,
                "classes": dict(sorted(classes.items())), "runs": runs,
                "epsilon_guarantee": max(spent, default=0.0), "delta": config["delta"]}
        out.write_text("".join(json.dumps({"text": text, "label": label}, ensure_ascii=False)
                               + "\n" for text, label in pairs), encoding="utf-8")
        out.with_name(out.name + ".meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        seconds = dest / "seconds.json"
        if not seconds.exists():
            total = sum(r["seconds"] + r.get("load_seconds", 0.0) for r in runs)
            seconds.write_text(json.dumps({"seconds": total}))
        landed.append(folder.name)
    return landed


# ------------------------------------------------------------------ throughput (here)
SAMPLE = re.compile(r"^(\d+) s: (\d+) documents; (\d+) %")


def units_summary(shards: Path) -> dict[str, dict]:
    """Per unit (``CELL/LABEL``): the documents, tokens and seconds it wrote on the GPU
    (statistics only, no text), for keeping beside the results."""
    out = {}
    for meta_path in sorted(shards.glob("*/*.jsonl.meta.json")):
        meta = json.loads(meta_path.read_text())
        (label, stats), = meta["classes"].items()
        out[f"{meta_path.parent.name}/{label}"] = {
            "device": sorted({r["device"] for r in meta["runs"]}),
            "documents": stats["documents"], "tokens": stats["tokens"],
            "seconds_per_document": stats["seconds_per_document"]}
    return out


def throughput(units: dict[str, dict], samples: list[list[str]], workers: int) -> str:
    """Markdown: documents/s of the runner processes together, over each call's samples
    from the first with a document written (model loads left out), and per cell."""
    from harness.report import markdown_table

    docs = secs = 0.0
    busy = []
    for lines in samples:
        matched = [m for m in map(SAMPLE.match, lines) if m]
        if matched[0][2] == "0":  # before the first document: the model loads
            matched = [m for m in matched if int(m[2]) > 0]
        points = [(int(m[1]), int(m[2])) for m in matched]
        busy += [int(m[3]) for m in matched]
        docs += points[-1][1] - points[0][1]
        secs += points[-1][0] - points[0][0]
    by_cell: dict[str, list[dict]] = {}
    for name, unit in units.items():
        by_cell.setdefault(name.split("/")[0], []).append(unit)
    rows = []
    for cell, cell_units in sorted(by_cell.items()):
        n = sum(u["documents"] for u in cell_units)
        toks = sum(sum(u["tokens"]) for u in cell_units)
        s = sum(sum(u["seconds_per_document"]) for u in cell_units)
        rows.append([cell, len(cell_units), n, f"{toks / n:.1f}" if n else "–",
                     f"{s / n:.1f}" if n else "–", f"{toks / s:.1f}" if s else "–"])
    device = sorted({d for u in units.values() for d in u["device"]})
    tokens = sum(sum(u["tokens"]) for u in units.values())
    seconds = sum(sum(u["seconds_per_document"]) for u in units.values())
    return (
        f"{workers} runner processes of InvisibleInk (`invisibleink_offload.py run`, one "
        f"class each) sharing one {', '.join(device)}: **{docs / secs:.2f} documents/s "
        f"together** ({docs:.0f} documents in {secs:.0f} s of `peer.sh`'s samples, model "
        f"loads left out); one process wrote {tokens / seconds:.1f} tokens/s "
        f"({seconds / sum(u['documents'] for u in units.values()):.1f} s a document). "
        f"nvidia-smi read the GPU busy {sum(busy) / len(busy):.0f} % at its samples "
        "(a kernel running, not the SMs' load): the processes take turns on it.\n\n"
        + markdown_table(["cell", "units (classes)", "documents on the GPU", "mean tokens",
                          "seconds a document (one process)", "tokens/s (one process)"],
                         rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("pack", help="here: the private inputs and the plan")
    p.add_argument("--corpora", required=True)
    p.add_argument("--epsilons", required=True, help="in the order the cells should run")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--per-class", type=int, default=100)
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run", help="there: the units on the GPU")
    r.add_argument("--plan", type=Path, required=True)
    r.add_argument("--model-dir", type=Path, required=True)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--workers", type=int, default=14)
    r.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    r.add_argument("--python", default=sys.executable, help="an interpreter with invink")
    ld = sub.add_parser("land", help="here: the units into the benchmark's cell folders")
    ld.add_argument("--shards", type=Path, required=True, help="the unpacked WORK folder")
    ld.add_argument("--work-dir", type=Path, required=True,
                    help="bench_whole_documents.py's --work-dir")
    t = sub.add_parser("throughput", help="here: a lease's documents per second")
    t.add_argument("--results", type=Path, required=True,
                   help="a folder of benchmarks/results: units.json and gpu-*.txt")
    t.add_argument("--shards", type=Path, help="the unpacked WORK folder: (re)writes units.json")
    t.add_argument("--gpu-logs", type=Path, nargs="*", default=[],
                   help="peer.sh's OUT/gpu.txt of each call, in order: copied as gpu-N.txt")
    t.add_argument("--workers", type=int, default=14, help="the runner processes that ran")
    t.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    if args.verb == "throughput":
        return show_throughput(args)
    if args.verb == "pack":
        plan = pack(args.corpora.split(","), [float(e) for e in args.epsilons.split(",")],
                    [int(s) for s in args.seeds.split(",")], args.per_class, args.out)
        print(f"{args.out}: {len(plan['cells'])} cells, "
              f"{sum(len(c['labels']) for c in plan['cells'])} units")
        return 0
    if args.verb == "run":
        return run(args.plan, args.model_dir, args.work, args.workers, args.device,
                   args.python)
    for cell in land(args.shards, args.work_dir):
        print(f"landed {cell}")
    return 0


def show_throughput(args) -> int:
    args.results.mkdir(parents=True, exist_ok=True)
    if args.shards:
        (args.results / "units.json").write_text(
            json.dumps(units_summary(args.shards), indent=1) + "\n")
    for i, log in enumerate(args.gpu_logs, 1):
        (args.results / f"gpu-{i}.txt").write_text(log.read_text())
    units = json.loads((args.results / "units.json").read_text())
    samples = [p.read_text().splitlines() for p in sorted(args.results.glob("gpu-*.txt"))]
    body = throughput(units, samples, args.workers)
    print(body)
    if args.record:
        from harness.report import record

        record("peer-gpu", "InvisibleInk on a GPU: runner processes sharing it", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
