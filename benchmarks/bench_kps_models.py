"""Keyphrase models side by side on the whole-document yardstick (issue: models + selection).

For each corpus: fit DP-KPS on the training documents with each keyphrase model
(``kde`` = the paper's RFF KDE, ``histogram``, ``hybrid`` at a fixed histogram weight,
``auto`` = private selection among them), draw ``--per-class`` sequences per class,
train MiniLM + logistic regression on the space-joined keyphrases and test it on
whole real documents (not on their keyphrases). The ceiling is the same classifier
trained on real training documents.

``--eval dev`` (the default, for tuning) holds out 20 % of the train split as the
test set and fits on the rest; ``--eval test`` fits on the whole train split and
tests on the test split (for reporting, never for choosing).

    python benchmarks/bench_kps_models.py --corpora bbc-news --epsilons 6,1000 \
        --models kde,histogram,hybrid,auto [--write]
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from dptext.corpus import read_corpus
from dptext.embed import load_embedder
from dptext.generators.kps import KeyphraseSeeder
from dptext.text.vocabulary import load_vocabulary
from harness.options import add_list, study_parser
from harness.report import markdown_table, record
from keyphrase_protocol import embed_strings, fit_classifier, sample, scores

MODELS = {"kde": dict(model="kde", select="none"),
          "histogram": dict(model="histogram", select="none"),
          "hybrid": dict(model="hybrid", select="none"),
          "smoothed": dict(model="smoothed", select="none"),
          "auto-smoothed": dict(model="smoothed", select="auto"),
          "auto": dict(model="auto", select="auto")}


def splits(name: str, mode: str, test_docs: int):
    train = read_corpus(f"demo:{name}/train")
    if mode == "test":
        return train, sample(read_corpus(f"demo:{name}/test"), test_docs)
    held = np.random.default_rng(12).random(len(train)) < 0.2
    return (train.subset(np.flatnonzero(~held)),
            sample(train.subset(np.flatnonzero(held)), test_docs))


def accuracy(embedder, train_texts, train_labels, test_x, test_y) -> float:
    clf = fit_classifier(embed_strings(embedder, list(train_texts)), train_labels)
    return scores(clf, test_x, test_y)["accuracy"]


def main() -> None:
    ap = study_parser(__doc__, corpora=["bbc-news", "health-tweets"], epsilons=[6, 1000])
    add_list(ap, "--models", default=list(MODELS))
    ap.add_argument("--per-class", type=int, default=300)
    ap.add_argument("--test-docs", type=int, default=1000)
    ap.add_argument("--ceiling-docs", type=int, default=3000)
    ap.add_argument("--eval", choices=("dev", "test"), default="dev")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[],
                    help="extra KeyphraseSeeder parameter, e.g. --set mixture=0.75")
    ap.add_argument("--cache", default=None,
                    help="embedding cache folder (it stores real documents: keep it private)")
    args = ap.parse_args()
    extra = {k: type(getattr(KeyphraseSeeder, k))(v)
             for k, v in (s.split("=", 1) for s in args.set)}
    embedder = load_embedder("minilm", cache_dir=args.cache)
    vocab = load_vocabulary(KeyphraseSeeder().vocab_spec())
    rows = []
    for name in args.corpora:
        train, test = splits(name, args.eval, args.test_docs)
        test_x = np.asarray(embedder.encode(list(test.texts)))
        test_y = np.asarray(test.labels)
        ceil_train = sample(train, args.ceiling_docs)
        ceiling = accuracy(embedder, ceil_train.texts, ceil_train.labels, test_x, test_y)
        print(f"{name} ({args.eval}): {len(train)} fit documents, ceiling {ceiling:.3f}",
              flush=True)
        for eps in args.epsilons:
            for m in args.models:
                t = time.perf_counter()
                seeder = KeyphraseSeeder(vocab=vocab, embedder=embedder, epsilon=eps,
                                         **MODELS[m], **extra)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    seeder.fit(train, rng=np.random.default_rng(args.seed))
                fit_s = time.perf_counter() - t
                seqs = seeder.sample(args.per_class, rng=np.random.default_rng(args.seed + 1))
                acc = accuracy(embedder, [" ".join(s.keyphrases) for s in seqs],
                               [s.label for s in seqs], test_x, test_y)
                chosen = (seeder.selection_ or {}).get("chosen", "kde")
                rows.append([name, f"{eps:g}", m, chosen, len(seeder.released_vocabulary_),
                             f"{acc:.3f}", f"{ceiling:.3f}", f"{acc / ceiling:.2f}",
                             f"{fit_s:.1f}"])
                print(rows[-1], flush=True)
    body = (f"Whole-document yardstick ({args.eval} split): MiniLM + logistic regression "
            f"trained on {args.per_class} DP sequences per class, tested on {args.test_docs} "
            f"whole documents; seed {args.seed}; extra parameters {extra or 'none'}.\n\n"
            + markdown_table(["data", "ε", "model", "chosen", "|Ṽ|", "accuracy", "ceiling",
                              "/ ceiling", "fit s (embedding incl.)"], rows))
    if args.write:
        corpora = ",".join(args.corpora)
        record(f"kps-models-{corpora}-{args.eval}",
               f"Keyphrase models, whole-document yardstick: {corpora}", body)
    else:
        print(body)


if __name__ == "__main__":
    main()
