"""Keyphrase models on five corpora: the table-5 protocol and the whole-document yardstick.

For each corpus (BBC News, health tweets, complaints, Banking77, drug reviews), each ε
(and ε → ∞: the same configuration at ε = 1e3 — at 1e6 the default's private selection
cannot be calibrated: its accounting asks for a 15 GiB grid — noise multipliers ≤ 0.08 per
stage, ≤ 0.03 on the term histogram), each
seed and each keyphrase model, fit ``KeyphraseSeeder`` on the train split with δ = 1e-5,
draw ``per_class`` sequences per class (500; 300 for more than 16 classes), train one
classifier (MiniLM embeddings of the joined keyphrases + logistic regression) and test it

* (A) on the first L released terms of each real test document (the DP-KPS paper's
  table-5 protocol), and
* (B) on the whole real test documents (MiniLM truncates each at 256 word pieces).

Beside them, per corpus: the real-data ceiling (the same classifier trained on real
training documents: whole documents for B; for A, their keyphrases under the exact,
non-private top-N vocabulary) and the majority class of the test sample.

Models (``--models``): ``default`` (``KeyphraseSeeder()`` as it is at the commit that
runs), ``auto`` (``select="auto"``), or a model name (``model=NAME, select="none"``).
Each cell is appended to ``results.jsonl`` in ``--work-dir`` (outside the repository),
keyed by corpus, model, ε, seed, sizes and the tree of ``src/``; a rerun skips finished
cells, so an interrupted run resumes (``--resume``: from other stores too, e.g. a
committed copy). Whole test documents (and the ceiling's training documents) are
embedded once per corpus and their embeddings cached there as .npy; no text is
written. ``--report`` writes the table from the JSONL without running anything
(``--write``: into docs/benchmarks.md).

    nice -n 10 python benchmarks/bench_keyphrase_models.py --epsilons 6,inf --seeds 0,1,2
    python benchmarks/bench_keyphrase_models.py --epsilons 1,3,6,10,inf --report --write
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

from dptext.corpus import read_corpus
from dptext.embed import load_embedder
from dptext.generators.kps import KeyphraseSeeder
from dptext.text.vocabulary import load_vocabulary
from harness.options import add_list, study_parser
from harness.provenance import command_line, first_commit_with_src, src_tree
from harness.report import markdown_table, record
from harness.stats import eps_name, mean_sd
from harness.store import ResultStore
from keyphrase_protocol import (
    KeyphraseClassifierProtocol,
    TimedEmbedder,
    WholeDocumentProtocol,
    document_keyphrases,
    embed_strings,
    exact_vocabulary,
    fit_classifier,
    make_seeder,
    sample,
)

CORPORA = ("bbc-news", "health-tweets", "complaints", "banking77", "drug-reviews")
TEST_DOCS = 2000  # a fixed sample of each test split (seed 0), for time
CEILING_DOCS = 4000  # a fixed sample of each train split for the real-data ceilings
LONG_DOCUMENT_WORDS = 100  # corpora whose median document is longer get half of both caps
#: a row's cell: a ceiling has kind, corpus, test_docs and ceiling_docs_cap; a cell the rest
KEY = ("kind", "corpus", "model", "epsilon", "seed", "test_docs", "ceiling_docs_cap", "src")


def per_class(n_classes: int) -> int:
    """Sequences per class: 500, or 300 where there are many classes (Banking77)."""
    return 500 if n_classes <= 16 else 300


class CorpusBench:
    """One corpus: train split, fixed test sample, cached whole-document embeddings."""

    def __init__(self, name: str, embedder, work_dir: Path, test_docs: int, ceiling_docs: int):
        self.name, self.embedder, self.work_dir = name, embedder, work_dir
        self.test_keyphrases = TimedEmbedder(embedder)
        self.train = read_corpus(f"demo:{name}/train")
        if np.median([len(t.split()) for t in self.train.texts]) > LONG_DOCUMENT_WORDS:
            test_docs, ceiling_docs = test_docs // 2, ceiling_docs // 2  # for time
        self.test = sample(read_corpus(f"demo:{name}/test"), test_docs)
        self.ceiling_train = sample(self.train, ceiling_docs)
        self.classes = sorted(set(self.train.labels))
        self.per_class = per_class(len(self.classes))
        _, counts = np.unique(np.asarray(self.test.labels), return_counts=True)
        self.majority = float(counts.max() / counts.sum())
        self._whole: WholeDocumentProtocol | None = None

    def embed_documents(self, texts, tag: str) -> np.ndarray:
        """Whole-document embeddings, cached as .npy under a hash of the texts."""
        h = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        path = self.work_dir / "embeddings" / f"{self.name}-{tag}-{len(texts)}-{h}.npy"
        if path.exists():
            return np.load(path)
        t = time.perf_counter()
        x = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, x)
        print(f"  {self.name}: embedded {len(texts)} {tag} documents in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        return x

    @property
    def whole(self) -> WholeDocumentProtocol:
        if self._whole is None:
            self._whole = WholeDocumentProtocol(self.embed_documents(self.test.texts, "test"),
                                                self.test.labels)
        return self._whole

    def ceilings(self) -> dict:
        """Real training documents → real test documents, under both protocols."""
        x = self.embed_documents(self.ceiling_train.texts, "ceiling-train")
        whole = self.whole.score_fitted(fit_classifier(x, self.ceiling_train.labels))
        d = KeyphraseSeeder()
        exact = exact_vocabulary(self.train, load_vocabulary(d.vocab_spec()), d)
        proto = KeyphraseClassifierProtocol(self.embedder, self.test.texts, self.test.labels,
                                            exact, d.length)
        kp = proto.score(document_keyphrases(self.ceiling_train.texts, exact, d.length),
                         self.ceiling_train.labels)
        return {"ceiling_B": whole["accuracy"], "ceiling_B_f1": whole["macro_f1"],
                "ceiling_A": kp["accuracy"], "ceiling_A_f1": kp["macro_f1"],
                "majority": self.majority, "ceiling_docs": len(self.ceiling_train),
                "train_docs": len(self.train), "classes": len(self.classes),
                "test_docs_used": len(self.test)}

    def cell(self, model: str, eps: float, seed: int, timed: TimedEmbedder) -> dict:
        seeder = make_seeder(model, eps, timed)
        timed.seconds = 0.0
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seeder.fit(self.train, rng=np.random.default_rng([seed, 0]))
        fit_s = time.perf_counter() - t - timed.seconds
        t = time.perf_counter()
        seqs = seeder.sample(self.per_class, rng=np.random.default_rng([seed, 1]))
        sample_s = time.perf_counter() - t
        train_x = embed_strings(self.embedder, [" ".join(s.keyphrases) for s in seqs])
        clf = fit_classifier(train_x, [s.label for s in seqs])
        proto = KeyphraseClassifierProtocol(self.test_keyphrases, self.test.texts,
                                            self.test.labels, seeder.released_vocabulary_,
                                            seeder.length)
        a, b = proto.score_fitted(clf), self.whole.score_fitted(clf)
        # composing the ledger at ε → ∞ is slow or impossible (a PLD grid); the limit needs no ε
        g = None if math.isinf(eps) else seeder.ledger_.guarantee()
        chosen = {k: str(getattr(seeder, k)) for k in ("model", "selected_", "selection_")
                  if hasattr(seeder, k)}
        return {"acc_A": a["accuracy"], "f1_A": a["macro_f1"], "acc_B": b["accuracy"],
                "f1_B": b["macro_f1"], "vocab": len(seeder.released_vocabulary_),
                "fit_epsilon": seeder.epsilon, "spent_epsilon": g and g.epsilon,
                "spent_delta": g and g.delta, "fit_s": fit_s,
                "embed_s_in_fit": timed.seconds, "sample_s": sample_s, "sequences": len(seqs),
                "empty_sequences": sum(not s.keyphrases for s in seqs),
                "train_docs": len(self.train), "test_docs_used": len(self.test), "chosen": chosen,
                "releases": [[r.name, r.partition, r.sensitivity, r.noise_scale, r.dimension]
                             for r in seeder.ledger_.releases],
                "warnings": sorted({str(w.message)[:300] for w in caught})}


# ------------------------------------------------------------------ report
def model_label(r: dict, src: str) -> str:
    """The model's name, with the code it ran at when that is not the current ``src/``."""
    return r["model"] if r["src"] == src else f"{r['model']} ({first_commit_with_src(r['src'])})"


def terms_per_doc(r: dict) -> str:
    """S of a cell, from its histogram release's L2 sensitivity √S (rows of every commit)."""
    sens = [x[2] for x in r.get("releases", []) if x[0].startswith(("class × term", "vocabulary"))]
    return f"{round(sens[0] ** 2)}" if sens else "–"


def report(rows: list[dict], args, src: str) -> tuple[str, list[str]]:
    ceil = {r["corpus"]: r for r in rows if r["kind"] == "ceiling"
            and r["test_docs"] == args.test_docs and r["ceiling_docs_cap"] == args.ceiling_docs}
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["kind"] == "cell" and r["test_docs"] == args.test_docs:
            cells.setdefault((r["corpus"], model_label(r, src), r["epsilon"]), []).append(r)
    table, missing = [], []
    labels = list(dict.fromkeys([*args.models, *(k[1] for k in cells)]))
    for corpus in args.corpora:
        c = ceil.get(corpus)
        if c:
            table.append([corpus, f"real documents (ceiling: {c['ceiling_docs']} train → "
                          f"{c['test_docs_used']} test)", "–", "–", f"{c['ceiling_A']:.3f}",
                          f"{c['ceiling_B']:.3f}", f"{c['ceiling_B_f1']:.3f}", "1.00", "–", "–",
                          "–", "–"])
            table.append([corpus, "majority class", "–", "–", f"{c['majority']:.3f}",
                          f"{c['majority']:.3f}", "–", f"{c['majority'] / c['ceiling_B']:.2f}",
                          "–", "–", "–", "–"])
        else:
            missing.append(f"* {corpus}: the ceilings")
        for label in labels:
            limit = cells.get((corpus, label, "∞"), [])
            lacking = []
            for eps in args.epsilons:
                got = cells.get((corpus, label, eps_name(eps)), [])
                seeds = sorted({r["seed"] for r in got})
                lack = [str(s) for s in args.seeds if s not in seeds]
                if lack and label in args.models:
                    lacking.append(f"ε = {eps_name(eps)} (seed {', '.join(lack)})")
                if not got:
                    continue
                b = [r["acc_B"] for r in got]
                table.append([
                    corpus, label, eps_name(eps), len(seeds), mean_sd([r["acc_A"] for r in got]),
                    mean_sd(b), mean_sd([r["f1_B"] for r in got]),
                    f"{np.mean(b) / c['ceiling_B']:.2f}" if c else "–",
                    mean_sd([r["acc_B"] for r in limit]) if not math.isinf(eps) else "(this row)",
                    f"{np.mean([r['vocab'] for r in got]):.0f}",
                    ", ".join(terms_per_doc(r) for r in got),
                    f"{np.mean([r['fit_s'] for r in got]):.1f}"])
            if lacking and not any((corpus, label, eps_name(e)) in cells for e in args.epsilons):
                missing.append(f"* {corpus}, `{label}`: not run at any ε")
            elif lacking:
                missing.append(f"* {corpus}, `{label}`: " + "; ".join(lacking))
    body = markdown_table(
        ["corpus", "keyphrase model", "ε", "seeds", "A: table-5 accuracy",
         "B: whole-document accuracy", "B: macro-F1", "B / ceiling", "B at ε → ∞",
         "terms in Ṽ", "S per seed", "fit s"], table)
    return body, missing


def speed_table(rows: list[dict], src: str) -> str:
    out = []
    mine = [r for r in rows if r["kind"] == "cell" and r["corpus"] == "health-tweets"]
    for label in dict.fromkeys(model_label(r, src) for r in mine):
        got = [r for r in mine if model_label(r, src) == label]
        if got:
            fit = [r["fit_s"] for r in got]
            out.append([label, got[0]["train_docs"], len(got), f"{np.mean(fit):.1f}",
                        f"{np.max(fit):.1f}", f"{np.mean([r['embed_s_in_fit'] for r in got]):.1f}",
                        f"{np.mean([r['load'] for r in got]):.1f}"])
    return markdown_table(["keyphrase model", "documents", "fits", "mean fit s (embedding "
                           "excluded)", "max fit s", "embedding s (excluded)",
                           "load average at start"], out)


README_NAMES = {"bbc-news": "BBC News (5 topics)",
                "complaints": "consumer complaints (8 products)",
                "health-tweets": "health tweets (16 sources)",
                "banking77": "Banking77 (77 intents)",
                "drug-reviews": "drug reviews (979 documents, 3 ratings)"}


def readme_table(rows: list[dict], args, src: str) -> str:
    """The README's table: whole-document accuracy (B) of the first ``--models`` entry at
    the current ``src/``, per ε, beside the ceiling and the ε → ∞ limit."""
    model, finite = args.models[0], [e for e in args.epsilons if not math.isinf(e)]
    ceil = {r["corpus"]: r for r in rows if r["kind"] == "ceiling"
            and r["test_docs"] == args.test_docs and r["ceiling_docs_cap"] == args.ceiling_docs}
    out = []
    for corpus in args.corpora:
        c = ceil[corpus]

        def b(eps: float, corpus: str = corpus) -> list[float]:
            return [r["acc_B"] for r in rows if r["kind"] == "cell" and r["corpus"] == corpus
                    and r["model"] == model and r["src"] == src and r["epsilon"] == eps_name(eps)
                    and r["test_docs"] == args.test_docs]

        cells = []
        for e in finite:
            got = b(e)
            cells.append(mean_sd(got))
            if e == 6.0:  # the targets' ε
                cells.append(f"{np.mean(got) / c['ceiling_B'] * 100:.0f} %" if got else "–")
        out.append([README_NAMES.get(corpus, corpus), f"{c['ceiling_B']:.3f}",
                    f"{c['majority']:.3f}", *cells, mean_sd(b(math.inf))])
    heads = []
    for e in finite:
        heads.append(f"ε = {eps_name(e)}")
        if e == 6.0:
            heads.append("of the ceiling at ε = 6")
    return markdown_table(["corpus", "real-data ceiling", "majority class", *heads,
                           "ε → ∞ (same configuration)"], out)


# ------------------------------------------------------------------ main
def run_cells(args, store: ResultStore, src: str) -> None:
    """Every ceiling and cell of the grid that ``store`` does not hold yet."""
    embedder = load_embedder("minilm")  # no disk cache: it embeds real documents
    timed = TimedEmbedder(embedder)
    for corpus in args.corpora:
        bench = CorpusBench(corpus, embedder, args.work_dir, args.test_docs, args.ceiling_docs)
        ceiling = {"kind": "ceiling", "corpus": corpus, "test_docs": args.test_docs,
                   "ceiling_docs_cap": args.ceiling_docs}
        if not store.has(ceiling):
            t = time.perf_counter()
            row = {**ceiling, **bench.ceilings()}
            store.add(row)
            print(f"{corpus}: ceilings A {row['ceiling_A']:.3f}, B {row['ceiling_B']:.3f}, "
                  f"majority {row['majority']:.3f} ({time.perf_counter() - t:.0f} s)",
                  flush=True)
        for eps in args.epsilons:
            for seed in args.seeds:
                for model in args.models:
                    cell = {"kind": "cell", "corpus": corpus, "model": model,
                            "epsilon": eps_name(eps), "seed": seed, "test_docs": args.test_docs,
                            "src": src}
                    if store.has(cell):
                        continue
                    t = time.perf_counter()
                    load = os.getloadavg()[0]
                    out = bench.cell(model, eps, seed, timed)
                    row = {**cell, "per_class": bench.per_class, "load": load,
                           "command": command_line(), **out, "wall_s": time.perf_counter() - t}
                    store.add(row)
                    print(f"{corpus} {model} ε={eps_name(eps)} seed {seed}: "
                          f"A {out['acc_A']:.3f}  B {out['acc_B']:.3f}  |Ṽ| {out['vocab']}  "
                          f"fit {out['fit_s']:.1f} s  wall {row['wall_s']:.0f} s", flush=True)


def main() -> None:
    ap = study_parser(__doc__, corpora=CORPORA, epsilons=[6, math.inf], seeds=[0, 1, 2],
                      work_dir="keyphrase-models", store=True, report=True)
    add_list(ap, "--models", default=["default"],
             help="default, auto, or model names (kde, histogram, hybrid)")
    ap.add_argument("--test-docs", type=int, default=TEST_DOCS)
    ap.add_argument("--ceiling-docs", type=int, default=CEILING_DOCS)
    ap.add_argument("--readme", action="store_true",
                    help="print the README's \"What you get at what ε\" table (first model)")
    args = ap.parse_args()
    store = ResultStore(args.work_dir / "results.jsonl", KEY, resume=args.resume)
    src = src_tree()
    if not args.report:
        run_cells(args, store, src)
    rows = store.rows()
    body, missing = report(rows, args, src)
    chosen: dict[tuple, list[str]] = {}
    for r in rows:
        sel = r.get("chosen", {}).get("selection_", "")
        if r["kind"] == "cell" and "'chosen': '" in sel:
            name = sel.split("'chosen': '")[1].split("'")[0]
            chosen.setdefault((r["corpus"], model_label(r, src), r["epsilon"]), []).append(name)
    picks = "; ".join(f"{c} / {m} / ε = {e}: " + ", ".join(sorted(v))
                      for (c, m, e), v in chosen.items())
    runs = sorted({r.get("command", "") for r in rows if r["kind"] == "cell"} - {""})
    text = (
        "Cells computed by (resumable, under `nice -n 10`; each skips the cells already in "
        "the results file): " + "; ".join(f"`{c}`" for c in runs) + ".\n\n"
        "Each DP row beside the same configuration's ε → ∞ limit (fitted at ε = 1e3 — 1e6 in "
        "rows before that change; each row records its `fit_epsilon` — noise multipliers "
        "≤ 0.08 per stage; the ledger is not composed there), δ = 1e-5, mean ± sd over seeds "
        "(sd with ddof = 1). Training set: 500 DP sequences per class "
        f"(300 for Banking77's 77 classes), L = {KeyphraseSeeder().length}; classifier: MiniLM "
        "embeddings of the space-joined keyphrases + logistic regression (C = 1). "
        "**A** = the DP-KPS paper's table-5 protocol (test on the first L released terms of "
        "each real test document); **B** = the whole-document yardstick (test on the whole "
        "real test documents, MiniLM truncating at 256 word pieces). Test: a fixed sample of "
        f"≤ {args.test_docs} documents of each test split. Ceilings: the same classifier "
        f"trained on ≤ {args.ceiling_docs} real training documents (fixed sample) — B on the "
        "whole documents, A on their keyphrases under the exact (non-private) top-N "
        f"vocabulary. Where the median document is longer than {LONG_DOCUMENT_WORDS} words "
        "(BBC News, the complaints) both caps are halved, for time (only the complaints "
        "exceed them). `default` = `KeyphraseSeeder()` with the constructor's defaults at the "
        "commit named above; a model name followed by \"src/ as at commit C\" ran with the "
        "code of C (an earlier default); `auto` = `select=\"auto\"`, a model name = "
        "`model=NAME, select=\"none\"` (`allow_noisy_classes=True` where that option exists, "
        "so small classes run rather than stop). fit s = seconds of `fit` with the embedding of "
        "terms excluded, on this shared 2-core machine. S per seed: the distinct terms one "
        "document could contribute in each seed's run (√S is the histogram's L2 "
        "sensitivity; chosen privately by the default since `terms_per_doc=\"auto\"`, 80 "
        "before).\n\n" + body
        + ("\n\nWhat the private selection chose, per cell: " + picks + "." if picks else "")
        + "\n\nFit time on the health tweets' train split (selection included, embedding "
        "excluded; every ε and seed of the grid):\n\n" + speed_table(rows, src)
        + "\n\nCells of this grid not run (yet):" + ("\n\n" + "\n".join(missing) if missing
                                                    else " none.")
    )
    if args.readme:
        print(readme_table(rows, args, src))
        return
    if args.write:
        record("keyphrase-models", "Keyphrase models on five corpora: table-5 protocol and "
               "whole-document yardstick", text)
    else:
        print(text)


if __name__ == "__main__":
    main()
