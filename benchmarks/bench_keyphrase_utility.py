"""Utility of DP keyphrase sequences without an LLM (the DP-KPS paper's table-5 protocol).

For BBC News and the health tweets: fit DP-KPS on the train split at
(ε_voc, ε_kde) ∈ {(1,5), (5,5), (1,10), (5,10)}, independent and iterative; train
MiniLM + logistic regression on the sequences; test on the first L distinct
released-vocabulary terms of each real test document. Beside them:

* ceiling A — fully non-private: exact top-N vocabulary (no noise, no floor), the
  real training documents' keyphrases;
* ceiling B — the real training documents' keyphrases under the run's *released*
  vocabulary: what the KDE stage could reach at best with that vocabulary;
* the paper's own setting (Laplace vocabulary and sketches, S = 10, proportional
  sampling) at (1, 5), for reference.

    python benchmarks/bench_keyphrase_utility.py [--datasets bbc-news,health-tweets] [--write]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from dptext.corpus import read_corpus
from dptext.embed import load_embedder
from dptext.generators.kps import KeyphraseSeeder
from dptext.text.vocabulary import load_vocabulary
from harness.options import study_parser
from harness.report import markdown_table, record
from keyphrase_protocol import (
    KeyphraseClassifierProtocol,
    document_keyphrases,
    exact_vocabulary,
    sample,
)

GRID = [(1.0, 5.0), (5.0, 5.0), (1.0, 10.0), (5.0, 10.0)]
TOTALS = [6.0, 10.0]  # --grid total: one ε for the run, split by vocab_share
PAPER = dict(vocab_noise="laplace", kde_noise="laplace", terms_per_doc=10,
             sampling="proportional", vocab_noise_terms=float("inf"), features=1000)
L = 10
TEST_DOCS = 2000  # test documents per dataset (a fixed sample, for time)
CEILING_DOCS = 10_000  # training documents for ceilings (a fixed sample, for time)


def run_dataset(name: str, embedder, per_class: int, rows: list, grid: str,
                test_docs: int = TEST_DOCS, ceiling_docs: int = CEILING_DOCS) -> None:
    train, test = read_corpus(f"demo:{name}/train"), sample(read_corpus(f"demo:{name}/test"),
                                                             test_docs)
    ceiling_train = sample(train, ceiling_docs)
    defaults = KeyphraseSeeder()
    vocab = load_vocabulary(defaults.vocab_spec())
    exact = exact_vocabulary(train, vocab, defaults)
    proto = KeyphraseClassifierProtocol(embedder, test.texts, test.labels, exact, L)
    ceiling_a = proto.score(document_keyphrases(ceiling_train.texts, exact, L),
                            ceiling_train.labels)["accuracy"]
    print(f"{name}: ceiling A (non-private) {ceiling_a:.3f}", flush=True)
    methods = ("independent", "iterative")
    if grid == "stages":
        configs = [(f"({ev:g}, {ek:g})", m, dict(epsilon_vocab=ev, epsilon_kde=ek))
                   for ev, ek in GRID for m in methods]
        configs.append(("(1, 5)", "iterative", dict(epsilon_vocab=1.0, epsilon_kde=5.0, **PAPER)))
    else:
        configs = [(f"total {e:g}", m, dict(epsilon=e)) for e in TOTALS for m in methods]
    for budget, method, extra in configs:
        t = time.perf_counter()
        seeder = KeyphraseSeeder(vocab=vocab, embedder=embedder, method=method, **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seeder.fit(train, rng=np.random.default_rng(0))
        seqs = seeder.sample(per_class, rng=np.random.default_rng(1))
        proto = KeyphraseClassifierProtocol(embedder, test.texts, test.labels,
                                            seeder.released_vocabulary_, L)
        dp = proto.score([" ".join(s.keyphrases) for s in seqs], [s.label for s in seqs])
        ceiling_b = proto.score(document_keyphrases(ceiling_train.texts,
                                                    seeder.released_vocabulary_, L),
                                ceiling_train.labels)["accuracy"]
        g = seeder.ledger_.guarantee()
        setting = ("paper (Laplace, S=10, proportional)" if "sampling" in extra
                   else "dptext defaults")
        rows.append([name, setting, budget, f"{g.epsilon:.3g}", f"{g.delta:.0e}",
                     method, len(seeder.released_vocabulary_), dp["accuracy"], dp["macro_f1"],
                     ceiling_b, ceiling_a, dp["accuracy"] / ceiling_a])
        print(rows[-1], f"{time.perf_counter() - t:.0f} s", flush=True)


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news", "health-tweets"])
    ap.add_argument("--per-class", type=int, default=1000)
    ap.add_argument("--grid", choices=("stages", "total"), default="stages",
                    help="stages: the (ε_voc, ε_kde) grid; total: one ε split by vocab_share")
    ap.add_argument("--test-docs", type=int, default=TEST_DOCS)
    ap.add_argument("--ceiling-docs", type=int, default=CEILING_DOCS)
    args = ap.parse_args()
    embedder = load_embedder("minilm")  # no disk cache: it embeds real documents' keyphrases
    rows: list = []
    for name in args.corpora:
        run_dataset(name, embedder, args.per_class, rows, args.grid, args.test_docs,
                    args.ceiling_docs)
    d = KeyphraseSeeder()
    body = (
        f"Table-5 protocol: MiniLM + logistic regression trained on {args.per_class} DP "
        f"sequences per class (L = {L}), tested on the first {L} distinct released terms of "
        f"{args.test_docs} real test documents (fixed sample). Ceilings use up to "
        f"{args.ceiling_docs} "
        "real training documents. dptext defaults: "
        f"vocab `{d.vocab}`, {d.vocab_noise} vocabulary noise with S = {d.terms_per_doc}, "
        f"noise floor at {d.vocab_noise_terms:g} expected false term, N ≤ {d.vocab_size}; "
        f"{d.kde_noise} sketches, I = {d.features}, bandwidth {d.bandwidth}, "
        f"{d.sampling} sampling (keep {d.contrastive_keep:g}), {d.ensemble} ensemble; "
        f"δ = {d.delta:g} for the whole run; a total ε is split with vocab_share = "
        f"{d.vocab_share} (exact Gaussian composition).\n\n"
        + markdown_table(["data", "setting", "(ε_voc, ε_kde)", "ε", "δ", "method", "|Ṽ|",
                          "accuracy", "macro-F1", "ceiling B (same Ṽ)",
                          "ceiling A (non-private)", "accuracy / A"], rows)
    )
    if args.write:
        corpora = ",".join(args.corpora)
        record(f"keyphrase-utility-{corpora}-{args.grid}",
               f"DP keyphrase sequences without an LLM (table 5): {corpora}, "
               f"{args.grid} budgets", body)
    else:
        print(body)


if __name__ == "__main__":
    main()
