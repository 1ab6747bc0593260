"""Silver coreference on LitBank: real passages and DP-KPS and dpft novels under
``--coref-gold``.

The private corpus is played by passages of the LitBank novels past each book's annotated
opening (one passage a novel, at a position drawn by the seed), from the novels of the gold
*train* split only, so no test book's characters reach the silver data. Rows, all scored on
the gold test documents with the default caps of ``CorefConfig``:

* ``real`` — per seed: the model trained on gold train (the ceiling), the model trained on
  the real passages' silver chains (what a synthetic corpus is compared with) and the
  shuffled-chains control; no LLM;
* ``real-short`` — the same passages at the synthetic corpus's size: ``--documents`` of
  them, each cut to its first ``--real-words`` words (the silver model's F1 grows with the
  amount of text, so this is the fair reference for the DP-KPS rows); no LLM;
* ``kps`` — DP-KPS fitted unlabelled on the seed's real passages with its defaults at each
  ``--epsilons`` (ε = 1000 stands for ε → ∞), ``--documents`` passages of at most
  ``--max-tokens`` tokens written by ``--llm`` through ``dptext.synthesize`` (the call of
  ``bench_whole_documents``), then scored exactly as the real passages are;
* ``dpft`` — DP fine-tuning (SmolLM2-135M + LoRA, DP-SGD, its defaults: 128 tokens of
  each passage) unlabelled on the same passages at each ε, ``--documents`` passages of
  ``--max-tokens`` new tokens sampled from the tuned model; no LLM server.

Resumable across sessions: a DP-KPS cell's run folder (the DP releases, the prompts and
the LLM's completions, or dpft's checkpoints and samples; the private corpus is public
LitBank text) lives in the repository
under ``benchmarks/results/coreference/cells/`` and is committed with the results file
``benchmarks/results/coreference/results.jsonl``; an interrupted cell continues without
new noise or repeated prompts, a finished one is skipped. Rows hold scores, never text.

    nice -n 10 python benchmarks/bench_coref.py --rows real,real-short --seeds 0,1,2
    DPTEXT_LLM_THREADS=1 nice -n 10 python benchmarks/bench_coref.py --rows kps \\
        --epsilons 6,1000 --seeds 0,1,2 --documents 24 --max-tokens 200
    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_coref.py --rows dpft \\
        --epsilons 6,1000 --seeds 0,1,2 --documents 24 --max-tokens 200
    python benchmarks/bench_coref.py --report --write

Needs LitBank's ``original.tar.xz`` (the whole novels, ``--original``; by default
``../shared/data/litbank/`` beside the repository).
"""

from __future__ import annotations

import re
import signal
import tarfile
import time
from pathlib import Path

import numpy as np

from bench_whole_documents import Timer, _terminate, generator_documents
from dptext.corpus import Corpus
from dptext.evaluate.coref import DEMO, CorefConfig, read_gold, silver_coreference
from dptext.evaluate.coref.protocol import split_gold
from dptext.evaluate.data import Labelled
from harness.options import add_list, study_parser
from harness.provenance import ROOT, command_line, cpu, src_tree
from harness.report import markdown_table, record
from harness.stats import mean_sd
from harness.store import ResultStore
from synthetic_protocol import BENCH_LLM, BenchData, llm_lock, shared_backend

SECTION = "coreference"
PASSAGE_CHARS = 8000
DOCUMENT_TYPE = "passage from a novel"
HERE = Path(__file__).resolve().parent / "results" / SECTION
RESULTS = HERE / "results.jsonl"
ROW_KINDS = ("real", "real-short", "kps", "dpft")
GENERATORS = {"kps": "DP-KPS", "dpft": "DP fine-tuning"}
KEY = ("row", "epsilon", "seed", "documents", "max_tokens", "real_words", "llm")
SCORES = ("conll_f1", "muc", "b3", "ceafe", "mentions")


def passages(original: Path, books: set[str], seed: int) -> list[str]:
    """One passage of each novel in ``books``, starting at a paragraph drawn past the
    first quarter of the book (well past the annotated opening)."""
    rng = np.random.default_rng(seed)
    novels = {}
    with tarfile.open(original) as tar:  # one pass: an xz stream cannot seek back cheaply
        for m in tar:
            if m.isfile() and Path(m.name).stem in books:
                novels[m.name] = tar.extractfile(m).read().decode("utf-8", errors="replace")
    out = []
    for _, text in sorted(novels.items()):
        start = int(rng.integers(len(text) // 4, max(len(text) // 4 + 1,
                                                     len(text) - 2 * PASSAGE_CHARS)))
        para = text.find("\n\n", start)
        start = para + 2 if 0 <= para < start + PASSAGE_CHARS else start
        out.append(text[start: start + PASSAGE_CHARS])
    return out


def private_passages(original: Path, seed: int) -> list[str]:
    """The seed's private corpus: one passage of each gold-train novel."""
    train, _ = split_gold(read_gold(DEMO), CorefConfig().test_every)
    return passages(original, {d.name.removesuffix("_brat") for d in train}, seed)


def first_words(text: str, n: int) -> str:
    """``text`` up to the end of its ``n``-th word (its spacing kept)."""
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    return text[: ends[min(n, len(ends)) - 1]] if ends else text


def short_passages(texts: list[str], documents: int, words: int, seed: int) -> list[str]:
    """``documents`` of ``texts`` drawn by the seed, each cut to its first ``words`` words."""
    pick = np.random.default_rng([seed, 1]).choice(len(texts), min(documents, len(texts)),
                                                   replace=False)
    return [first_words(texts[i], words) for i in np.sort(pick)]


def silver_scores(texts: list[str], seed: int) -> dict:
    """The protocol with ``texts`` as the corpus to annotate: the gold ceiling, the model
    trained on the texts' silver chains (``synthetic_silver``) and its shuffled control."""
    cfg = CorefConfig(seed=seed)
    t0 = time.perf_counter()
    res = silver_coreference(read_gold(DEMO), texts, None, cfg,
                             progress=lambda msg: print(f"  seed {seed}: {msg}", flush=True))
    kept = [t for t in texts if t.strip()]
    return {"seconds": round(time.perf_counter() - t0, 1),
            "caps": res["caps"], "n_gold_train": res["n_gold_train"],
            "n_gold_test": res["n_gold_test"],
            "mean_words": float(np.mean([len(t.split()) for t in kept])) if kept else 0.0,
            "models": {k: {"conll_f1": v["conll_f1"], "muc": v["muc"]["f1"],
                           "b3": v["b3"]["f1"], "ceafe": v["ceafe"]["f1"],
                           "mentions": v["mentions"]["f1"], "train_docs": v["train_docs"]}
                       for k, v in res["models"].items()}}


def cell_name(method: str, eps: float, seed: int, documents: int, max_tokens: int) -> str:
    return f"{method}-eps{eps:g}-n{documents}-t{max_tokens}-s{seed}"


def generator_row(args, method: str, eps: float, seed: int) -> dict:
    """A generator (``GENERATORS``) unlabelled on the seed's passages, its documents scored
    by ``silver_scores`` (the run resumes from its folder under ``cells/``)."""
    folder = HERE / "cells" / cell_name(method, eps, seed, args.documents, args.max_tokens)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(texts=tuple(private_passages(args.original, seed)), source="litbank")
    data = BenchData(f"litbank-s{seed}", corpus, Labelled(texts=(), labels=()),
                     DOCUMENT_TYPE, args.max_tokens)
    if method == "dpft":
        from dptext.generators.dpft.sample import SamplingConfig

        with Timer(folder) as timer:
            pairs, calls, spent = generator_documents(
                "dpft", data, eps, args.documents, seed, folder, None, 1, labels=None,
                sampling=SamplingConfig(max_new_tokens=args.max_tokens))
    else:
        with Timer(folder) as timer, llm_lock(args.llm_lock):
            pairs, calls, spent = generator_documents(
                "kps", data, eps, args.documents, seed, folder, shared_backend(args.llm), 1,
                labels=None)
    return {"llm_calls": calls, "spent_epsilon": spent, "generate_s": round(timer.total, 1),
            **silver_scores([t for t, _ in pairs], seed)}


def run_row(args, kind: str, eps: float | None, seed: int) -> dict:
    if kind in GENERATORS:
        return generator_row(args, kind, eps, seed)
    texts = private_passages(args.original, seed)
    if kind == "real-short":
        texts = short_passages(texts, args.documents, args.real_words, seed)
    return silver_scores(texts, seed)


def design(args) -> list[dict]:
    """The requested cells in the order they run: the real rows, then each generator by
    seed (every ε of a seed before the next seed); dpft's cells have no LLM."""
    sized = {"documents": args.documents, "max_tokens": args.max_tokens}
    cells = [{"row": "real", "seed": s} for s in args.seeds if "real" in args.rows]
    cells += [{"row": "real-short", "seed": s, "documents": args.documents,
               "real_words": args.real_words} for s in args.seeds if "real-short" in args.rows]
    cells += [{"row": g, "epsilon": e, "seed": s, **sized,
               "llm": args.llm if g == "kps" else None}
              for g in GENERATORS if g in args.rows for s in args.seeds for e in args.epsilons]
    return cells


# ------------------------------------------------------------------ report
def table(store: ResultStore, args) -> str:
    rows = store.rows()
    real = sorted((r for r in rows if r["row"] == "real" and r["seed"] in args.seeds),
                  key=lambda r: r["seed"])
    groups: list[tuple[str, str, list[dict]]] = []
    if real:
        groups.append(("gold train (ceiling)", "gold", real))
        groups.append((f"real passages ({PASSAGE_CHARS:,} characters), silver chains",
                       "synthetic_silver", real))
    short = [r for r in rows if r["row"] == "real-short" and r["seed"] in args.seeds
             and (r["documents"], r["real_words"]) == (args.documents, args.real_words)]
    if short:
        groups.append((f"real passages cut to {args.real_words} words, silver chains",
                       "synthetic_silver", short))
    made = {g: generator_cells(rows, g, args) for g in GENERATORS}
    groups += [(f"{GENERATORS[g]} ε = {eps_label(eps)}, silver chains", "synthetic_silver",
                cell) for g, cells in made.items() for eps, cell in cells.items()]
    if real:
        groups.append(("control: real-passage silver, chains shuffled", "shuffled_control",
                       real))
    if short:
        groups.append((f"control: real passages cut to {args.real_words} words, chains "
                       "shuffled", "shuffled_control", short))
    body = [[label, rs[0]["models"][model]["train_docs"], "–" if model == "gold" else
             mean_sd((r["mean_words"] for r in rs if "mean_words" in r), 0), len(rs),
             *[mean_sd(r["models"][model][s] for r in rs) for s in SCORES]]
            for label, model, rs in groups]
    done = {store.key(r) for r in rows}
    missing = [c for c in design(args) if store.key(c) not in done]
    return (
        "LitBank is fiction, not clinical text: these figures show how the protocol "
        "behaves (a gold ceiling, real text's silver chains, a control that must score "
        "lowest), not what to expect on clinical notes.\n\n"
        + (_protocol(real[0]) if real else "")
        + _sizes(args, made)
        + markdown_table(["trained on", "docs", "mean words", "seeds", "CoNLL F1", "MUC F1",
                          "B³ F1", "CEAF-e F1", "mention F1"], body)
        + _reading(short, made, args)
        + "\n\nCells of the requested design not run (yet):"
        + ("\n\n" + "\n".join(f"* {_cell_text(c)}" for c in missing) if missing
           else " none.")
        + "\n\nNot run here: Aug-PE's synthetic novels (ten LLM calls a document).")


def generator_cells(rows: list[dict], generator: str, args) -> dict[float, list[dict]]:
    """A generator's rows of the requested size, by ε (those with none left out)."""
    llm = args.llm if generator == "kps" else None
    return {eps: cell for eps in args.epsilons if (cell := [
        r for r in rows if r["row"] == generator and r["epsilon"] == eps
        and r["seed"] in args.seeds and r["documents"] == args.documents
        and r["max_tokens"] == args.max_tokens and r.get("llm") == llm])}


def eps_label(eps: float) -> str:
    return "∞ (ε = 1000)" if eps >= 1000 else f"{eps:g}"


def _conll(rows: list[dict], model: str) -> float:
    return float(np.mean([r["models"][model]["conll_f1"] for r in rows]))


def _reading(short: list[dict], made: dict[str, dict[float, list[dict]]], args) -> str:
    """The generators' rows against the reference and the control of the same size."""
    if not (short and any(made.values())):
        return ""
    ref, floor = _conll(short, "synthetic_silver"), _conll(short, "shuffled_control")
    parts = [f"{GENERATORS[g]} (difference to the real passages): " + "; ".join(
        f"ε = {eps_label(eps)}: {_conll(cell, 'synthetic_silver'):.3f} "
        f"({_conll(cell, 'synthetic_silver') - ref:+.3f}; {len(cell)} "
        f"seed{'s' * (len(cell) > 1)})" for eps, cell in cells.items())
        for g, cells in made.items() if cells]
    return (f"\n\nAt the same size ({args.documents} documents of about {args.real_words} "
            f"words), the mean CoNLL F1 of real passages' silver chains is {ref:.3f} and of "
            f"their shuffled control {floor:.3f}. " + ". ".join(parts) + ".\n\n" + READING)


#: what the DP-KPS rows of the committed run show (``--report`` of other cells: reread it)
READING = (
    "What the DP-KPS rows show (the committed cells): at the same amount of text, DP-KPS "
    "novels train a silver model about as well as real passages (the differences are "
    "within the spread over seeds), far above the shuffled control of the long passages "
    "and above that of the short ones, and below the real passages at full length (more "
    "text). ε hardly matters: DP-KPS released about 150 public terms at ε = 6 and about "
    "3,000 at ε → ∞ from these 80 passages, yet the two rows agree within their sd. The "
    "entity structure comes from the LLM, which writes simple stories around one or two "
    "named characters referred to by pronouns, not from the private release: on LitBank "
    "the protocol measures the generator's entity consistency (what it is for) but cannot "
    "tell a good DP release from a poor one. On short documents the shuffled control is a "
    "weaker floor (few chains a document, so a shuffle moves few links): hence its sd. "
    "DP fine-tuning's novels: at ε → ∞ about as good as the real passages of that size, "
    "at ε = 6 lower and shorter (76 words on average): 80 passages give DP-SGD 10 steps "
    "(2 epochs of batches of 16), which barely move SmolLM2-135M-Instruct at that noise, "
    "and many of its documents are then lists, code or chat turns rather than fiction "
    "(its sampler now rules out the chat markers and an empty document: "
    "`docs/dpft.md`).")


def _protocol(r0: dict) -> str:
    caps = r0["caps"]
    return (
        f"Gold: LitBank's coreference layer, {r0['n_gold_train']} train / "
        f"{r0['n_gold_test']} test documents (sorted by name, every 5th is a test "
        f"document, then the first {caps['max_gold_train']} train and "
        f"{caps['max_gold_test']} test documents kept); caps: {caps['max_tokens']} tokens "
        f"a document, {caps['max_docs']} silver documents. The private corpus: one passage of "
        f"{PASSAGE_CHARS:,} characters from each gold-train novel, past its annotated "
        "opening, drawn by the seed. Mentions matched by their head token. Mean ± sd over "
        "seeds (the seed draws the passages, the documents kept, the shuffle and the DP "
        "noise; the gold row does not depend on it). \"mean words\": of the documents "
        "annotated, before the 1000-token cap.\n\n")


def _sizes(args, made: dict[str, dict[float, list[dict]]]) -> str:
    kps = [r for cell in made["kps"].values() for r in cell]
    dpft = [r for cell in made["dpft"].values() for r in cell]
    text = "" if not dpft else (
        f"DP fine-tuning: unlabelled, its defaults at the total ε (SmolLM2-135M + LoRA, "
        f"DP-SGD on the first 128 tokens of each passage), then {args.documents} documents "
        f"of {args.max_tokens} new tokens sampled from the tuned model; a cell took "
        f"{np.mean([r['generate_s'] for r in dpft]) / 60:.0f} min to train and sample "
        "(mean).\n\n")
    if not kps:
        return text
    gen = np.mean([r["generate_s"] for r in kps]) / 60
    return text + (
        f"DP-KPS: unlabelled, its defaults at the total ε (δ = 1e-5), fitted on the seed's "
        f"real passages, then {args.documents} documents (\"{DOCUMENT_TYPE}\", at most "
        f"{args.max_tokens} tokens each) written by `{args.llm}` — fewer and shorter "
        "documents than the real passages (the LLM on a shared 2-core CPU); the row of "
        f"real passages cut to {args.documents} × {args.real_words} words is the reference "
        f"at that size. A DP-KPS cell took {gen:.0f} min to fit and write (mean), its run "
        "folder committed under `benchmarks/results/coreference/cells/`.\n\n")


def _cell_text(c: dict) -> str:
    if c["row"] in GENERATORS:
        return (f"{GENERATORS[c['row']]} ε = {c['epsilon']:g}, seed {c['seed']}, "
                f"{c['documents']} documents of ≤ {c['max_tokens']} tokens")
    return f"{c['row']}, seed {c['seed']}"


def main() -> None:
    ap = study_parser(__doc__, epsilons=[6, 1000], seeds=[0, 1, 2], store=True, report=True)
    add_list(ap, "--rows", default=ROW_KINDS, help="which rows to run")
    ap.add_argument("--original", type=Path,
                    default=ROOT.parent / "shared" / "data" / "litbank" / "original.tar.xz")
    ap.add_argument("--documents", type=int, default=24, help="DP-KPS documents a cell")
    ap.add_argument("--max-tokens", type=int, default=200, help="tokens a DP-KPS document")
    ap.add_argument("--real-words", type=int, default=150,
                    help="words a passage keeps in the real-short row")
    ap.add_argument("--llm", default=BENCH_LLM)
    ap.add_argument("--llm-lock", default=None, help="a lock file held while the LLM runs")
    args = ap.parse_args()
    if set(args.rows) - set(ROW_KINDS):
        ap.error(f"unknown rows {sorted(set(args.rows) - set(ROW_KINDS))}; "
                 f"choose from {', '.join(ROW_KINDS)}")
    store = ResultStore(RESULTS, KEY, resume=args.resume)
    signal.signal(signal.SIGTERM, _terminate)
    if not args.report:
        if not args.original.exists():
            raise SystemExit(f"{args.original}: no LitBank novels (--original)")
        for cell in design(args):
            if not store.has(cell):
                store.add({**cell, "src": src_tree(), "command": command_line(), "cpu": cpu(),
                           **run_row(args, cell["row"], cell.get("epsilon"), cell["seed"])})
    body = table(store, args)
    print(body)
    if args.write:
        record(SECTION, "Silver coreference on LitBank (dptext evaluate --coref-gold)", body)


if __name__ == "__main__":
    main()
