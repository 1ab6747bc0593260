"""How many terms one document may contribute (S, ``terms_per_doc``) against the noise.

The class × term histogram's L2 sensitivity is √S: the default S = 80 suits long
documents (BBC News) but on ten-word texts (Banking77, about 5 vocabulary terms each) it
pays for 80 terms and gets 5. This measures, at ε = 6 and δ = 1e-5 and beside the same
configuration's ε → ∞ limit (fitted at ``INF_EPSILON``), DP-KPS with its defaults except
S, on the whole-document yardstick of ``bench_keyphrase_models.py``
(the same corpora, test samples, cached test embeddings and classifier). S is a public
parameter here (the default chooses it privately: `kde/terms_per_doc.py`).

    nice -n 10 python benchmarks/bench_terms_per_doc.py --corpora banking77,health-tweets \\
        --values 4,8,80 --seeds 0,1,2 --write
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from bench_keyphrase_models import (
    CEILING_DOCS,
    DELTA,
    INF_EPSILON,
    TEST_DOCS,
    CorpusBench,
    TimedEmbedder,
    default_work_dir,
    mean_sd,
)
from dptext.embed import load_embedder
from dptext.generators.kps import KeyphraseSeeder
from keyphrase_protocol import embed_strings, fit_classifier
from record import markdown_table, record

EPSILON = 6.0


def accuracy(bench: CorpusBench, timed: TimedEmbedder, embedder, s: int, seed: int,
             epsilon: float = EPSILON) -> tuple:
    seeder = KeyphraseSeeder(epsilon=epsilon, delta=DELTA, embedder=timed, terms_per_doc=s)
    seeder.fit(bench.train, rng=np.random.default_rng([seed, 0]))
    seqs = seeder.sample(bench.per_class, rng=np.random.default_rng([seed, 1]))
    clf = fit_classifier(embed_strings(embedder, [" ".join(q.keyphrases) for q in seqs]),
                         [q.label for q in seqs])
    return bench.whole.score_fitted(clf)["accuracy"], len(seeder.released_vocabulary_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpora", default="banking77,health-tweets")
    ap.add_argument("--values", default="4,8,80", help="S values (80: the default)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    values = [int(v) for v in args.values.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    embedder = load_embedder("minilm")  # no disk cache: it embeds real documents
    timed = TimedEmbedder(embedder)
    rows = []
    for corpus in args.corpora.split(","):
        bench = CorpusBench(corpus, embedder, default_work_dir(), TEST_DOCS, CEILING_DOCS)
        for s in values:
            got = [accuracy(bench, timed, embedder, s, seed) for seed in seeds]
            limit = [accuracy(bench, timed, embedder, s, seed, INF_EPSILON)[0]
                     for seed in seeds]
            rows.append([corpus, s, mean_sd([a for a, _ in got]), mean_sd(limit),
                         f"{statistics.fmean(v for _, v in got):.0f}"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    body = markdown_table(["corpus", "S (terms per document)",
                           "whole-document accuracy, ε = 6", "ε → ∞ (same S)",
                           "terms in Ṽ at ε = 6"], rows)
    print(body)
    if args.write:
        record("terms-per-doc", "Terms per document S against the noise (DP-KPS, ε = 6)", (
            f"DP-KPS with its defaults except `terms_per_doc` = S (80 was the default), ε = 6, "
            f"δ = 1e-5, beside the same S at ε → ∞ (fitted at ε = {INF_EPSILON:g}), seeds "
            f"{', '.join(map(str, seeds))} (mean ± sd, ddof = 1); the "
            "whole-document yardstick of the keyphrase-models section (the same test "
            "samples and classifier). S is fixed here; the default (`terms_per_doc=\"auto\"`, "
            "`kde/terms_per_doc.py`) chooses it with a DP release of its own, measured in the "
            "keyphrase-models section (column \"S per seed\").\n\n"
            + body))


if __name__ == "__main__":
    main()
