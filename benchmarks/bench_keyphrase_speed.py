"""Speed and memory of each DP-KPS stage, and GFLOP/s of the sampling kernel.

On BBC News (train split), L = 10, 1,000 sequences per class, |Ṽ| = 1,000 and
10,000. The sampling kernel's achieved GFLOP/s is set beside a plain numpy
float32 matmul of the same shape, timed in the same run.

    python benchmarks/bench_keyphrase_speed.py [--features 4000] [--write]
"""

from __future__ import annotations

import time
import tracemalloc
from contextlib import contextmanager

import numpy as np

from dptext.corpus import read_corpus
from dptext.embed import default_cache_dir, load_embedder
from dptext.generators.kps import KeyphraseSeeder
from dptext.generators.kps.budget import noise_specs
from dptext.generators.kps.releases import release_vocabulary
from dptext.kde.rff import FourierFeatures
from dptext.kde.sampler import SamplingStats, sample_iterative
from dptext.kde.sketch import ensemble_blocks, release_sketches, sketch_for_prefix
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.text.vocabulary import PublicVocabulary, load_vocabulary
from harness.options import add_list, study_parser
from harness.report import markdown_table, record

L = 10
PER_CLASS = 1000


@contextmanager
def measure(results: list, stage: str, size: int):
    tracemalloc.start()
    tracemalloc.reset_peak()
    t = time.perf_counter()
    yield
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    results.append([size, stage, seconds, peak])
    print(f"|Ṽ|={size:>6}  {stage:<44} {seconds:8.2f} s  {peak:8.1f} MiB", flush=True)


def iterative_flops(blocks, n: int, cands: int, dim: int, features: int) -> float:
    """Matmul flops of sample_iterative for n sequences over ``cands`` candidates."""
    flops, current = 0.0, -1
    for i in range(1, L + 1):
        j = sketch_for_prefix(blocks, i)
        prefix_blocks = (i - 1) if j != current else 1 if i > 1 else 0
        current = j
        flops += 2.0 * n * dim * features * prefix_blocks  # prefix phase
        flops += 2.0 * cands * dim * features  # candidate phase
        flops += 2.0 * n * (2 * features) * cands  # score matrix
    return flops


def matmul_gflops(n: int, k: int, m: int, repeat: int = 3) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal((k, m), dtype=np.float32)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2.0 * n * k * m / best / 1e9


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--features", type=int, default=4000)
    add_list(ap, "--sizes", default=[1000, 10000], convert=int)
    args = ap.parse_args()
    corpus = read_corpus("demo:bbc-news/train")
    english = load_vocabulary(KeyphraseSeeder(model="kde", select="none").vocab_spec())
    embedder = load_embedder("minilm", cache_dir=default_cache_dir())  # public terms only
    results, kernel_rows = [], []
    for size in args.sizes:
        # no noise floor here: the stages are timed at exactly |Ṽ| = size
        seeder = KeyphraseSeeder(vocab=english, embedder=embedder, vocab_size=size,
                                 features=args.features, vocab_noise_terms=float("inf"))
        ledger = PrivacyLedger()
        seeder.ledger_ = ledger
        with measure(results, f"DP vocabulary (first S={seeder.terms_per_doc} terms, noise, "
                              "floor, top-N)", size):
            released = release_vocabulary(
                corpus.texts, english, noise_specs(seeder, corpus.labels is not None)["vocab"],
                ledger,
                terms_per_doc=seeder.given_terms_per_doc(), size=size,
                noise_terms=seeder.vocab_noise_terms, min_terms=seeder.length)
        with measure(results, "embed Ṽ (MiniLM, cached; excluded)", size):
            emb = np.ascontiguousarray(embedder.encode(list(released)), dtype=np.float32)
        with measure(results, "document keyphrases over Ṽ", size):
            seqs = PublicVocabulary("released", released).extractor().extract_many(
                corpus.texts, max_terms=32, distinct=True)
        index = corpus.class_indices()
        by_class = {c: [seqs[i] for i in index.get(c, [])] for c in corpus.classes}
        rng = np.random.default_rng(0)
        blocks = ensemble_blocks("iterative", L, "log")
        feats = [FourierFeatures.draw(emb.shape[1], b, args.features, 1.0, rng) for b in blocks]
        with measure(results, f"sketches: log ensemble {blocks}, 5 classes", size):
            sk = release_sketches(by_class, emb, feats, NoiseSpec("gaussian", 5.0, 1e-5), ledger,
                                  max_windows=8)
        label = corpus.classes[0]
        for name, cands in (("all of Ṽ", np.arange(size)),
                            ("contrastive top 10%", np.arange(size // 10))):
            stats = SamplingStats()
            t = time.perf_counter()
            with measure(results, f"iterative sampling, 1,000 × L=10, {name}", size):
                sample_iterative(sk, label, emb, cands, PER_CLASS, L, rng, stats)
            seconds = time.perf_counter() - t
            flops = iterative_flops(blocks, PER_CLASS, cands.size, emb.shape[1], args.features)
            ref = matmul_gflops(PER_CLASS, 2 * args.features, cands.size)
            kernel_rows.append([size, name, cands.size, flops / 1e9, seconds,
                                flops / seconds / 1e9, ref, flops / seconds / 1e9 / ref])
            print(f"   kernel: {flops / 1e9:.1f} GFLOP in {seconds:.2f} s = "
                  f"{flops / seconds / 1e9:.1f} GFLOP/s; numpy matmul same shape {ref:.1f} GFLOP/s")
        scores = np.abs(rng.standard_normal(size // 10)) + 0.1
        from dptext.kde.sampler import sample_independent
        with measure(results, "independent sampling, 1,000 × L=10", size):
            sample_independent(scores, PER_CLASS, L, rng, SamplingStats())

    body = (
        f"BBC News train split ({len(corpus)} documents, 5 classes), `{english.name}` vocabulary "
        f"({len(english)} terms), I = {args.features} features per sketch, Gaussian noise. "
        "Time and peak traced memory (tracemalloc) per stage; embedding is reported but "
        "excluded from the target.\n\n"
        + markdown_table(["|Ṽ|", "stage", "seconds", "peak MiB"], results)
        + "\n\nSampling kernel (iterative, 1,000 sequences of length 10, one class): matmul "
        "flops counted analytically (prefix phase + candidate phase + score matrix) against "
        "a numpy float32 matmul of the score-matrix shape (1000 × 2I)·(2I × |C|), same run.\n\n"
        + markdown_table(["|Ṽ|", "candidates", "|C|", "GFLOP", "seconds", "GFLOP/s",
                          "numpy matmul GFLOP/s", "ratio"], kernel_rows)
        + "\n\nTarget: 1,000 iterative sequences of length 10 over |Ṽ| = 1,000 in under 10 s "
        "on 2 cores, embedding excluded."
    )
    if args.write:
        record("keyphrase-speed", "DP-KPS speed and memory per stage", body)
    else:
        print(body)


if __name__ == "__main__":
    main()
