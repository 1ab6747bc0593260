"""Silver coreference on LitBank: the reference rows of ``dptext evaluate --coref-gold``.

The private corpus is played by passages of the LitBank novels past each book's annotated
opening (one passage a novel, at a position drawn by the seed), from the novels of the gold
*train* split only, so no test book's characters reach the silver data. Rows: the model
trained on gold train (the ceiling), the model trained on the real passages' silver
chains (what a synthetic corpus is compared with), and the shuffled-chains control, all
scored on the gold test documents with the default caps of ``CorefConfig``. No LLM is
involved (generating synthetic novels does not fit a CPU session).

    nice -n 10 python benchmarks/bench_coref.py --seeds 0,1,2 --write

Needs LitBank's ``original.tar.xz`` (the whole novels, ``--original``; by default
``../shared/data/litbank/`` beside the repository). Each seed's scores are appended to
``coref/results.jsonl`` in the work directory (a rerun skips the seeds done with the same
``src/``); no text is written.
"""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

import numpy as np

from dptext.evaluate.coref import DEMO, CorefConfig, read_gold, silver_coreference
from dptext.evaluate.coref.protocol import split_gold
from harness.options import study_parser
from harness.provenance import ROOT, src_tree
from harness.report import markdown_table, record
from harness.stats import mean_sd
from harness.store import ResultStore

SECTION = "coreference"
PASSAGE_CHARS = 8000
ROWS = (("gold", "gold train (ceiling)"), ("synthetic_silver", "real passages, silver chains"),
        ("shuffled_control", "control: real-passage silver, chains shuffled"))


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


def run_seed(original: Path, seed: int) -> dict:
    gold = read_gold(DEMO)
    cfg = CorefConfig(seed=seed)
    train, _ = split_gold(gold, cfg.test_every)
    books = {d.name.removesuffix("_brat") for d in train}
    t0 = time.perf_counter()
    res = silver_coreference(gold, passages(original, books, seed), None, cfg,
                             progress=lambda msg: print(f"  seed {seed}: {msg}", flush=True))
    return {"seed": seed, "seconds": round(time.perf_counter() - t0, 1),
            "caps": res["caps"], "n_gold_train": res["n_gold_train"],
            "n_gold_test": res["n_gold_test"],
            "models": {k: {"conll_f1": v["conll_f1"], "muc": v["muc"]["f1"],
                           "b3": v["b3"]["f1"], "ceafe": v["ceafe"]["f1"],
                           "mentions": v["mentions"]["f1"], "train_docs": v["train_docs"]}
                       for k, v in res["models"].items()}}


def table(results: list[dict]) -> str:
    def cell(key: str, score: str) -> str:
        return mean_sd(r["models"][key][score] for r in results)

    rows = [[label, results[0]["models"][key]["train_docs"],
             *[cell(key, s) for s in ("conll_f1", "muc", "b3", "ceafe", "mentions")]]
            for key, label in ROWS]
    r0 = results[0]
    caps = r0["caps"]
    return (
        "LitBank is fiction, not clinical text: these figures show how the protocol "
        "behaves (a gold ceiling, real text's silver chains, a control that must score "
        "lowest), not what to expect on clinical notes.\n\n"
        f"Gold: LitBank's coreference layer, {r0['n_gold_train']} train / "
        f"{r0['n_gold_test']} test documents (sorted by name, every 5th is a test "
        f"document, then the first {caps['max_gold_train']} train and "
        f"{caps['max_gold_test']} test documents kept); caps: {caps['max_tokens']} tokens "
        f"a document, {caps['max_docs']} silver documents. The private corpus: one passage of "
        f"{PASSAGE_CHARS:,} characters from each gold-train novel, past its annotated "
        "opening, drawn by the seed. Mentions matched by their head token. Mean ± sd over "
        f"seeds {', '.join(str(r['seed']) for r in results)} (the seed draws the passages "
        "and the shuffle; the gold row does not depend on it); "
        f"{np.mean([r['seconds'] for r in results]):.0f} s a seed.\n\n"
        + markdown_table(["trained on", "docs", "CoNLL F1", "MUC F1", "B³ F1", "CEAF-e F1",
                          "mention F1"], rows)
        + "\n\nNot run here: DP-KPS (unlabelled, ε = 6 and ε → ∞), Aug-PE and dpft "
          "synthetic novels — generating them needs an LLM session that does not fit a "
          "2-core CPU; run `dptext evaluate --coref-gold demo:litbank` on such a release "
          "and compare its row with the real-passages row.")


def main() -> None:
    ap = study_parser(__doc__, seeds=[0, 1, 2], work_dir="coref", store=True, report=True)
    ap.add_argument("--original", type=Path,
                    default=ROOT.parent / "shared" / "data" / "litbank" / "original.tar.xz")
    args = ap.parse_args()
    store = ResultStore(args.work_dir / "results.jsonl", ("seed", "src"), resume=args.resume)
    src = src_tree()
    if not args.report:
        if not args.original.exists():
            raise SystemExit(f"{args.original}: no LitBank novels (--original)")
        for seed in args.seeds:
            if not store.has({"seed": seed, "src": src}):
                store.add({**run_seed(args.original, seed), "src": src})
    rows = {r["seed"]: r for r in store.rows()}
    seeds = args.seeds
    body = table([rows[s] for s in seeds if s in rows])
    print(body)
    if args.write:
        record(SECTION, "Silver coreference on LitBank (dptext evaluate --coref-gold)", body)


if __name__ == "__main__":
    main()
