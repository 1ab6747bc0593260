"""Fit time of DP-KPS's default keyphrase model path (selection included), embedding excluded.

Fits ``KeyphraseSeeder()`` with its defaults (``model="auto"``, ``select="auto"``) on the
health-tweets train split (about 50,000 documents), with the embedder replaced by a
deterministic stand-in so that only dptext's own work is timed, and prints wall and
CPU seconds per fit step.

    python benchmarks/bench_kps_fit_speed.py [--corpus demo:health-tweets/train]
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from dptext.corpus import read_corpus
from dptext.generators.kps import KeyphraseSeeder
from harness.options import study_parser


class StandInEmbedder:
    """Random unit vectors (384-d), so that embedding time is excluded from the timing."""

    def encode(self, texts):
        x = np.random.default_rng(len(texts)).standard_normal((len(texts), 384))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    ap = study_parser(__doc__, write=False)
    ap.add_argument("--corpus", default="demo:health-tweets/train")
    ap.add_argument("--model", default="auto")
    ap.add_argument("--select", default="auto")
    args = ap.parse_args()
    corpus = read_corpus(args.corpus)
    marks: list = []

    def step(msg: str) -> None:
        marks.append((msg, time.perf_counter(), time.process_time()))

    seeder = KeyphraseSeeder(epsilon=6.0, embedder=StandInEmbedder(), model=args.model,
                             select=args.select)
    wall, cpu = time.perf_counter(), time.process_time()
    seeder.fit(corpus, rng=np.random.default_rng(0), progress=step)
    marks.append(("end", time.perf_counter(), time.process_time()))
    print(f"{args.corpus}: {len(corpus)} documents, model {args.model}, select {args.select}")
    for (msg, w0, c0), (_, w1, c1) in itertools.pairwise(marks):
        print(f"  {msg:45s} wall {w1 - w0:6.1f} s   cpu {c1 - c0:6.1f} s")
    print(f"  total{'':41s}wall {time.perf_counter() - wall:6.1f} s   "
          f"cpu {time.process_time() - cpu:6.1f} s; chosen: {seeder.selection_['chosen']}")


if __name__ == "__main__":
    main()
