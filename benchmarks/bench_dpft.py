"""dpft on the CPU: downstream accuracy at ε ∈ {4, 8, ∞} beside DP-KPS, canary ranks,
and one multi-task + PPLM row.

The private corpus of every row is a stratified subset of a demo training split
(--classes largest classes × --per-class documents, truncated to --max-length tokens;
one document = one DP-SGD sample). Each generator — dpft at each ε, DP-KPS at the same
total ε through ``synthetic_protocol.kps_documents`` (dptext defaults + the shared local
LLM), and real documents as the reference — yields --synthetic-per-class documents per
class, scored by ``synthetic_protocol.downstream`` (MiniLM + MLP head, real test set).

Canaries (Carlini et al.; the fine-tuning paper's table 4): three canaries inserted 1, 10
and 100 times into a --canary-dataset subset, fine-tuned at ε = 8 and without DP; the
rank of each true 4-digit secret among all 10,000 candidates.

Every finished row is appended at once to ``<work-dir>/results.jsonl`` (by default under
``$DPTEXT_BENCH_DIR`` or ``~/.cache/dptext-bench``, then ``dpft/``); re-running the same
command skips the rows already there (so a killed run continues), and --write renders
whatever rows exist into docs/benchmarks.md.

    python benchmarks/bench_dpft.py --write          # ~1 h on 2 shared cores
    python benchmarks/bench_dpft.py --quick          # a smoke run (tiny sizes, no record)
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

from dptext.corpus import Corpus
from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig
from dptext.generators.dpft.model import base_dtype
from harness.options import study_parser
from harness.report import markdown_table, record
from harness.store import ResultStore
from synthetic_protocol import BenchData, downstream, kps_documents, llm_lock, load_data

TITLE = "dpft: DP fine-tuning (SmolLM2-135M + LoRA, DP-SGD)"


def subset(corpus: Corpus, classes, per_class: int, seed: int) -> Corpus:
    """``per_class`` documents of each of ``classes`` (fixed by ``seed``)."""
    rng = np.random.default_rng(seed)
    members = corpus.class_indices()
    idx = np.sort(np.concatenate([rng.permutation(members[c])[:per_class] for c in classes]))
    return Corpus(tuple(corpus.texts[i] for i in idx), tuple(corpus.labels[i] for i in idx),
                  source=f"{corpus.source}[{len(classes)}x{per_class}]")


def bench_data(name: str, args) -> BenchData:
    """The shared test sample restricted to the largest classes, train = the subset."""
    data = load_data(name, test_docs=args.test_docs)
    sizes = {c: len(v) for c, v in data.train.class_indices().items()}
    classes = sorted(sorted(sizes, key=lambda c: -sizes[c])[: args.classes])
    keep = [i for i, y in enumerate(data.test.labels) if y in classes]
    test = dataclasses.replace(data.test, texts=tuple(data.test.texts[i] for i in keep),
                               labels=tuple(data.test.labels[i] for i in keep))
    return dataclasses.replace(data, train=subset(data.train, classes, args.per_class,
                                                  args.seed), test=test)


def config(args, **kw) -> DPFTConfig:
    return DPFTConfig(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
                      max_length=args.max_length, **kw)


def dpft_row(data: BenchData, eps: float, args, *, multitask: bool = False) -> dict:
    t0 = time.time()
    gen = DPFineTuneGenerator(eps, args.delta, config=config(args, multitask=multitask),
                              seed=args.seed, progress=False).fit(data.train)
    t_fit = time.time() - t0
    n = args.synthetic_per_class * len(data.classes)
    sampling = SamplingConfig(max_new_tokens=args.new_tokens, batch_size=args.gen_batch)
    rows = []
    for pplm in ([False, True] if multitask else [False]):
        t1 = time.time()
        m = args.pplm_per_class * len(data.classes) if pplm else n
        docs = gen.generate(m, sampling=sampling, pplm=pplm,
                            rng=np.random.default_rng(args.seed))
        t_gen = time.time() - t1
        score = downstream([d["text"] for d in docs], [d["label"] for d in docs], data)
        plan = gen.plan_
        rows.append({
            "generator": ("dpft multi-task" + (" + PPLM" if pplm else "")) if multitask
            else "dpft", "epsilon": eps, **score, "documents": m,
            "spent_epsilon": gen.guarantee().epsilon if math.isfinite(eps) else math.inf,
            "sigma": plan.noise_multiplier, "steps": plan.steps, "q": plan.sampling_rate,
            "fit_s": t_fit, "generate_s": t_gen,  # batch losses are private: not kept
            "sample": f"[{docs[0]['label']}] {docs[0]['text'][:120]}"})
    return rows


def base_row(data: BenchData, args) -> list[dict]:
    """The control: the base model, not fine-tuned, prompted with each label's codes.
    Uses the label names only (public, as in every row), no document."""
    from dptext.generators.dpft.codes import LABEL_FIELD, format_codes
    from dptext.generators.dpft.model import load_base
    from dptext.generators.dpft.sample import generate

    lm, tok = load_base(dtype=config(args).dtype)
    labels = [c for c in data.classes for _ in range(args.synthetic_per_class)]
    t0 = time.time()
    texts = generate(lm, tok, [format_codes({LABEL_FIELD: y}) for y in labels],
                     SamplingConfig(max_new_tokens=args.new_tokens, batch_size=args.gen_batch),
                     seed=args.seed)
    score = downstream(texts, labels, data)
    return [{"generator": "SmolLM2 base, not fine-tuned (codes as prompt)", "epsilon": 0.0,
             **score, "documents": len(texts), "seconds": time.time() - t0,
             "sample": f"[{labels[0]}] {texts[0][:120]}"}]


def kps_row(data: BenchData, eps: float, args) -> list[dict]:
    n = args.synthetic_per_class * len(data.classes)
    with llm_lock(args.llm_lock):
        run = kps_documents(data, eps, n, work_dir=args.work_dir / "kps", delta=args.delta,
                            seed=args.seed)
    score = downstream([t for t, _ in run.docs], [y for _, y in run.docs], data)
    return [{"generator": "DP-KPS + LLM", "epsilon": eps, **score, "documents": len(run.docs),
             "spent_epsilon": run.epsilon, "seconds": run.seconds,
             "sample": f"[{run.docs[0][1]}] {run.docs[0][0][:120]}"}]


def real_row(data: BenchData, args) -> list[dict]:
    rng = np.random.default_rng(args.seed)
    members = data.train.class_indices()
    idx = np.concatenate([rng.permutation(members[c])[: args.synthetic_per_class]
                          for c in data.classes])
    score = downstream([data.train.texts[i] for i in idx],
                       [data.train.labels[i] for i in idx], data)
    return [{"generator": "real documents (not private)", "epsilon": math.inf, **score,
             "documents": len(idx)}]


def canary_rows(eps: float, args) -> list[dict]:
    from dptext.generators.dpft.canary import canary_experiment

    data = bench_data(args.canary_dataset, _with(args, per_class=args.canary_per_class))
    t0 = time.time()
    rows = canary_experiment(data.train, [eps], delta=args.delta,
                             config=config(args), seed=args.seed)
    for r in rows:
        r.update(documents=len(data.train), fit_s=time.time() - t0)
    return rows


def _lock_busy(path: Path | None) -> bool:
    """Whether another process holds ``path`` now (then the LLM rows wait till the end)."""
    if path is None:
        return False
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def _with(args, **kw):
    return argparse.Namespace(**{**vars(args), **kw})


def _e(x) -> str:
    return "∞" if not math.isfinite(x) else f"{x:.3g}"


def tasks(args):
    """(key, thunk, uses the shared LLM) in the order they run: the claims first."""
    out = []
    data: dict[str, BenchData] = {}

    def get(name):
        if name not in data:
            data[name] = bench_data(name, args)
        return data[name]

    for name in args.corpora:
        out.append((f"{name}|real", lambda n=name: real_row(get(n), args), False))
        for eps in args.epsilons:
            out.append((f"{name}|dpft|{_e(eps)}",
                        lambda n=name, e=eps: dpft_row(get(n), e, args), False))
        out.append((f"{name}|base", lambda n=name: base_row(get(n), args), False))
        if not args.no_canary and name == args.corpora[0]:
            for eps in (8.0, math.inf):
                out.append((f"canary|{_e(eps)}", lambda e=eps: canary_rows(e, args), False))
        if not args.no_kps:
            for eps in (e for e in args.epsilons if math.isfinite(e)):
                out.append((f"{name}|kps|{_e(eps)}",
                            lambda n=name, e=eps: kps_row(get(n), e, args), True))
        if args.multitask_eps is not None and name == args.corpora[0]:
            out.append((f"{name}|multitask|{_e(args.multitask_eps)}",
                        lambda n=name: dpft_row(get(n), args.multitask_eps, args,
                                                multitask=True), False))
    return out


def render(results: dict, args) -> str:
    body = [
        f"Private corpus per dataset: the {args.classes} largest classes × {args.per_class} "
        f"training documents (stratified, seed {args.seed}), each truncated to "
        f"{args.max_length} tokens (codes included) and one DP-SGD sample. dpft: "
        f"SmolLM2-135M ({base_dtype(config(args).dtype)} base, fp32 LoRA r=4 on q/v), "
        f"{args.epochs:g} epochs, expected "
        f"Poisson batch {args.batch_size}, lr {args.lr:g}, clip 1.0, δ = {args.delta:g} "
        "(5 % of ε and 10 % of δ to the control-code histogram); "
        f"{args.new_tokens} new tokens, top-k 50, top-p 0.95. Every generator yields "
        f"{args.synthetic_per_class} documents per class (codes drawn from the released "
        "histogram for dpft); DP-KPS + LLM: `synthetic_protocol.kps_documents` (dptext "
        "defaults, the shared local LLM) fitted on the same private subset. Accuracy and "
        "macro-F1: `synthetic_protocol.downstream` (MiniLM + MLP head trained on the "
        f"synthetic set, tested on the shared real test sample of those classes); chance "
        f"= {1 / args.classes:.2f}. Torch threads: {args.threads}.",
    ]
    for name in args.corpora:
        rows = []
        for key, rs in results.items():
            if not key.startswith(name + "|"):
                continue
            for r in rs:
                train = ""
                if r.get("steps"):
                    train = (f"σ={r['sigma']:.3g}, " if r.get("sigma") else "no DP, ") + \
                        f"{r['steps']} steps, q={r['q']:.3f}" + (
                            f", loss {r['final_loss']:.2f}" if "final_loss" in r else "")
                t = (f"fit {r['fit_s']:.0f} s, generate {r['generate_s']:.0f} s"
                     if "fit_s" in r else f"{r['seconds']:.0f} s" if "seconds" in r else "")
                spent = r.get("spent_epsilon")
                rows.append([r["generator"], _e(r["epsilon"]),
                             "—" if spent is None else _e(spent), r["documents"],
                             r["accuracy"], r["macro_f1"], train, t])
        if rows:
            body += ["", f"**{name}**", "", markdown_table(
                ["generator", "ε target", "ε spent", "docs", "accuracy", "macro-F1",
                 "DP-SGD", "time"], rows)]
    canary = [r for k, rs in results.items() if k.startswith("canary|") for r in rs]
    if canary:
        body += ["", f"**Canary exposure** ({args.canary_dataset}: {args.classes} × "
                 f"{args.canary_per_class} documents + three canaries inserted 1, 10 and 100 "
                 "times; same training settings). Rank of the true 4-digit secret among all "
                 "10,000 candidates by the fine-tuned model's likelihood (1 = memorised, "
                 "~5,000 = chance); exposure = log2(10,000) − log2(rank).", "",
                 markdown_table(["ε", "insertions", "rank", "exposure", "fit"],
                                [[_e(r["epsilon"]), r["insertions"], r["secret_rank"],
                                  f"{r['exposure']:.2f}", f"{r['fit_s']:.0f} s"]
                                 for r in canary])]
    missing = [t[0] for t in tasks(args) if t[0] not in results]
    if missing:
        body += ["", f"Not run yet: {', '.join(missing)} — the same command continues "
                 "from the saved rows."]
    samples = [(k, r["sample"]) for k, rs in results.items() for r in rs if r.get("sample")]
    if samples:
        body += ["", "First generated document of each row (truncated):", ""]
        body += [f"* {k}: {s!r}" for k, s in samples]
    return "\n".join(body)


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news", "health-tweets"],
                      epsilons=[math.inf, 8.0, 4.0], work_dir="dpft")
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--per-class", type=int, default=80)
    ap.add_argument("--synthetic-per-class", type=int, default=50)
    ap.add_argument("--test-docs", type=int, default=2000)
    ap.add_argument("--epochs", type=float, default=4.0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--max-length", type=int, default=48)
    ap.add_argument("--new-tokens", type=int, default=40)
    ap.add_argument("--gen-batch", type=int, default=64)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--canary-dataset", default="health-tweets")
    ap.add_argument("--canary-per-class", type=int, default=50)
    ap.add_argument("--no-canary", action="store_true")
    ap.add_argument("--no-kps", action="store_true")
    ap.add_argument("--multitask-eps", type=float, default=8.0,
                    help="ε of the multi-task + PPLM row (on the first dataset)")
    ap.add_argument("--no-multitask", dest="multitask_eps", action="store_const", const=None)
    ap.add_argument("--pplm-per-class", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; on a shared machine 1 is steadier than 2")
    ap.add_argument("--llm-lock", type=Path, help="flock this file while the LLM runs")
    ap.add_argument("--only", help="run only the rows whose key contains this (e.g. kps)")
    ap.add_argument("--only-write", action="store_true",
                    help="render the rows in results.jsonl without running anything")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="dpft", help="docs/benchmarks.md section name")
    args = ap.parse_args()
    if args.quick:
        args.corpora, args.epsilons, args.per_class, args.synthetic_per_class = (
            args.corpora[:1], [8.0], 8, 4)
        args.canary_per_class, args.pplm_per_class, args.test_docs = 4, 2, 200
        args.new_tokens, args.no_kps, args.epochs = 8, True, 1.0
        args.work_dir, args.write = args.work_dir / "quick", False
    import torch

    torch.set_num_threads(args.threads)
    store = ResultStore(args.work_dir / "results.jsonl", ("row",))
    if not args.only_write:
        todo = [t for t in tasks(args) if not store.has({"row": t[0]})
                and (args.only or "") in t[0]]
        while todo:
            i = next((i for i, t in enumerate(todo) if not (t[2] and _lock_busy(args.llm_lock))),
                     0)  # an LLM row waits while another process holds the lock, if it can
            key, run, _ = todo.pop(i)
            t0 = time.time()
            store.add({"row": key, "result": run()})
            print(f"{key}: {time.time() - t0:.0f} s", json.dumps(store.rows()[-1])[:600],
                  flush=True)
    # every row, those other invocations (--only) appended meanwhile included
    results = {r["row"]: r["result"] for r in ResultStore(store.path, ("row",)).rows()}
    text = render(results, args)
    print(text)
    if args.write:
        # the recorded command is the one that runs (or resumes) these rows: drop the
        # render-only flag and the machine-local lock path
        drop = {"--only-write"}
        argv = [a for i, a in enumerate(sys.argv)
                if a not in drop and a != "--llm-lock" and sys.argv[i - 1] != "--llm-lock"]
        sys.argv[:] = argv
        record(args.name, TITLE, text)


if __name__ == "__main__":
    main()
