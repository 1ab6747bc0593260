"""dpft on the CPU: downstream accuracy at ε ∈ {4, 8, ∞} beside DP-KPS, and canary ranks.

Sized for a 2-core machine: small stratified subsets of the training splits, short
documents (truncated to --max-length tokens, one document = one DP-SGD sample), one
epoch. Downstream accuracy: TF-IDF + logistic regression (the evaluation suite's
``tfidf`` classifier when ``dptext.evaluate.utility`` is present, else the same
settings inline) trained on the synthetic documents, tested on real test documents.
DP-KPS at the same total ε (ε_vocab = 0.2ε Laplace, ε_kde = 0.8ε − Gaussian, δ) is
scored with the keyphrase-only protocol of the DP-KPS paper's table 5 (no LLM
documents), which is the cheap proxy used in DESIGN.md — not the same test inputs.

    python benchmarks/bench_dpft.py                # both datasets + canaries, ~1 h on 2 cores
    python benchmarks/bench_dpft.py --quick        # a smoke run
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from dptext.corpus import Corpus, read_corpus
from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig
from record import record


def tfidf_accuracy(train_texts, train_labels, test_texts, test_labels, seed=0) -> float:
    classes = sorted(set(test_labels) | set(train_labels))
    y_train = np.array([classes.index(y) for y in train_labels])
    y_test = np.array([classes.index(y) for y in test_labels])
    try:
        from dptext.evaluate.utility import tfidf_logreg

        pred = tfidf_logreg(train_texts, y_train, test_texts, False, len(classes), seed)
    except ImportError:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, strip_accents="unicode")
        x = vec.fit_transform([t or "(empty)" for t in train_texts])
        if len(set(y_train)) == 1:
            pred = np.full(len(test_texts), y_train[0])
        else:
            clf = LogisticRegression(C=10.0, max_iter=2000, random_state=seed)
            pred = clf.fit(x, y_train).predict(vec.transform(test_texts))
    return float(np.mean(pred == y_test))


def stratified(corpus: Corpus, per_class: int, classes, rng) -> Corpus:
    idx = []
    for c, members in corpus.class_indices().items():
        if c in classes:
            idx += list(rng.choice(members, size=min(per_class, len(members)), replace=False))
    rng.shuffle(idx)
    return corpus.subset(idx)


def kps_accuracy(train: Corpus, test: Corpus, epsilon: float, delta: float, n_per_class: int,
                 seed: int) -> float:
    from dptext.generators.kps import KeyphraseSeeder
    from keyphrase_protocol import KeyphraseClassifierProtocol

    seeder = KeyphraseSeeder(epsilon_vocab=0.2 * epsilon, epsilon_kde=0.8 * epsilon,
                             delta=delta, allow_noisy_classes=True)
    rng = np.random.default_rng(seed)
    seeder.fit(train, rng=rng)
    seqs = seeder.sample(n_per_class, rng=rng)
    g = seeder.ledger_.guarantee()
    assert g.epsilon <= epsilon * 1.001, g
    proto = KeyphraseClassifierProtocol(seeder.embedder_ if hasattr(seeder, "embedder_")
                                        else _minilm(), test.texts, test.labels,
                                        seeder.released_vocabulary_, seeder.length)
    strings = [" ".join(s.keyphrases) for s in seqs]
    return proto.score(strings, [s.label for s in seqs])["accuracy"]


def _minilm():
    from dptext.embed import load_embedder

    return load_embedder("minilm")


def run_dataset(name, args, rng, rows):
    train_all = read_corpus(f"demo:{name}/train")
    test_all = read_corpus(f"demo:{name}/test")
    sizes = {c: len(v) for c, v in train_all.class_indices().items()}
    classes = sorted(sorted(sizes, key=lambda c: -sizes[c])[: args.classes])
    train = stratified(train_all, args.per_class, classes, rng)
    test = stratified(test_all, args.test_per_class, classes, rng)
    real = tfidf_accuracy(train.texts, train.labels, test.texts, test.labels)
    rows.append((name, "real documents (ceiling)", "—", f"{real:.3f}", "", ""))
    print(f"{name}: {len(train)} train / {len(test)} test, classes {classes}; real {real:.3f}",
          flush=True)
    for eps in args.eps:
        cfg = DPFTConfig(epochs=args.epochs, batch_size=args.batch_size,
                         max_length=args.max_length, learning_rate=args.lr)
        t0 = time.time()
        gen = DPFineTuneGenerator(eps, args.delta, config=cfg, seed=args.seed,
                                  progress=False).fit(train)
        t_fit = time.time() - t0
        docs = gen.generate(len(train), sampling=SamplingConfig(max_new_tokens=args.new_tokens),
                            rng=np.random.default_rng(args.seed))
        t_gen = time.time() - t0 - t_fit
        acc = tfidf_accuracy([d["text"] for d in docs], [d["label"] for d in docs],
                             test.texts, test.labels)
        spent = gen.guarantee().epsilon if math.isfinite(eps) else math.inf
        sigma = gen.plan_.noise_multiplier
        rows.append((name, "dpft (SmolLM2-135M, LoRA)", _e(eps), f"{acc:.3f}",
                     f"σ={sigma:.3g}, {gen.plan_.steps} steps, q={gen.plan_.sampling_rate:.2f},"
                     f" spent ε={_e(spent)}" if sigma else f"no DP, {gen.plan_.steps} steps",
                     f"fit {t_fit:.0f} s, generate {t_gen:.0f} s"))
        print(rows[-1], "|", docs[0]["label"], "|", docs[0]["text"][:160], flush=True)
        if math.isfinite(eps) and not args.no_kps:
            t0 = time.time()
            kacc = kps_accuracy(train, test, eps, args.delta, args.per_class, args.seed)
            rows.append((name, "DP-KPS (keyphrase-only protocol)", _e(eps), f"{kacc:.3f}",
                         "ε_vocab=0.2ε, ε_kde=0.8ε", f"{time.time() - t0:.0f} s"))
            print(rows[-1], flush=True)


def run_canaries(args, rng):
    from dptext.generators.dpft.canary import canary_experiment

    train_all = read_corpus(f"demo:{args.canary_dataset}/train")
    sizes = {c: len(v) for c, v in train_all.class_indices().items()}
    classes = sorted(sorted(sizes, key=lambda c: -sizes[c])[: args.classes])
    train = stratified(train_all, args.canary_per_class, classes, rng)
    cfg = DPFTConfig(epochs=args.canary_epochs, batch_size=args.batch_size,
                     max_length=args.max_length, learning_rate=args.lr)
    t0 = time.time()
    rows = canary_experiment(train, [8.0, math.inf], delta=args.delta, config=cfg,
                             seed=args.seed)
    return rows, len(train), time.time() - t0


def _e(x) -> str:
    return "∞" if not math.isfinite(x) else f"{x:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="*", default=["bbc-news", "health-tweets"])
    ap.add_argument("--eps", nargs="+", type=float, default=[4.0, 8.0, math.inf])
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--per-class", type=int, default=30)
    ap.add_argument("--test-per-class", type=int, default=100)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--max-length", type=int, default=48)
    ap.add_argument("--new-tokens", type=int, default=40)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--canary-dataset", default="health-tweets")
    ap.add_argument("--canary-per-class", type=int, default=10)
    ap.add_argument("--canary-epochs", type=float, default=1.0)
    ap.add_argument("--no-canary", action="store_true")
    ap.add_argument("--no-kps", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--name", default="dpft", help="docs/benchmarks.md section name")
    args = ap.parse_args()
    if args.quick:
        args.datasets, args.eps, args.per_class, args.test_per_class = (
            args.datasets[:1], [8.0], 4, 10)
        args.new_tokens, args.no_canary = 8, True
    rng = np.random.default_rng(args.seed)
    started = time.time()
    rows: list[tuple] = []
    for name in args.datasets:
        run_dataset(name, args, rng, rows)
    canary_rows = None
    if not args.no_canary:
        canary_rows, n_canary, t_canary = run_canaries(args, rng)
        print(canary_rows, flush=True)
    body = [
        f"Subsets: {args.classes} largest classes, {args.per_class} training documents per "
        f"class (stratified), {args.test_per_class} real test documents per class; documents "
        f"truncated to {args.max_length} tokens (codes included); {args.epochs:g} epoch(s), "
        f"expected batch {args.batch_size}, lr {args.lr:g}, LoRA r=4 on q/v, clip 1.0, "
        f"δ = {args.delta:g} (5 % of ε and 10 % of δ to the control-code histogram); "
        f"{args.new_tokens} new tokens per document, top-k 50, top-p 0.95; as many synthetic "
        "documents as training documents. Accuracy: TF-IDF + logistic regression trained on "
        "the synthetic set, tested on the real test documents. DP-KPS: keyphrase-only "
        "protocol (MiniLM + logistic regression on keyphrase lists), not documents.",
        "",
        "| data | generator | ε | accuracy | privacy / training | time |",
        "|---|---|---|---|---|---|",
        *[f"| {' | '.join(r)} |" for r in rows],
    ]
    if canary_rows is not None:
        body += [
            "",
            f"Canary exposure ({args.canary_dataset}, {n_canary} documents + canaries "
            f"inserted 1, 10 and 100 times, {args.canary_epochs:g} epoch(s), "
            f"{t_canary:.0f} s): rank of the true 4-digit secret among all 10,000 "
            "candidates by the model's likelihood (1 = memorised; ~5,000 = chance), "
            "exposure = log2(10,000) − log2(rank).",
            "",
            "| ε | insertions | rank | exposure |",
            "|---|---|---|---|",
            *[f"| {_e(r['epsilon'])} | {r['insertions']} | {r['secret_rank']} | "
              f"{r['exposure']:.2f} |" for r in canary_rows],
        ]
    body.append("")
    body.append(f"Total wall time {time.time() - started:.0f} s.")
    text = "\n".join(body)
    print(text)
    if not args.no_record:
        title = "dpft: DP fine-tuning (SmolLM2-135M + LoRA, DP-SGD)"
        record(args.name, f"{title} — {', '.join(args.datasets) or 'canaries'}", text)


if __name__ == "__main__":
    main()
