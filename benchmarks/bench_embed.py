"""Embedding speed: 10,000 frequent English words, cold vs. warm cache, per embedder.

    python benchmarks/bench_embed.py [minilm mpnet model2vec] [--n 10000]

Each embedder runs in a fresh process: "prepare" is unpacking/distilling the model
folder when it is not in the model cache yet (0 after the first run), "load" the
model load, "cold" encoding every phrase through the model and writing the cache,
"warm" a new cached embedder reading all of them back (the model is never loaded).
"cold CPU" is the CPU time of the cold encode over all threads: on a shared, busy
machine, CPU time / cores is a better guess of the unloaded wall time than "cold".
Prints a markdown table with the machine and the commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from harness.options import study_parser
from harness.provenance import ROOT, commit, machine

CHILD = r"""
import json, sys, time
from wordfreq import top_n_list
from dptext.embed import CachedEmbedder, load_embedder
from dptext.embed.model2vec_backend import model2vec_path
from dptext.embed.models import mpnet_path
spec, n, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
words = top_n_list("en", n)
t = time.perf_counter()
if spec == "mpnet":
    mpnet_path()
elif spec == "model2vec":
    model2vec_path()
prepare = time.perf_counter() - t
emb = load_embedder(spec, cache_dir=cache)
t = time.perf_counter(); dim = emb.dim; load = time.perf_counter() - t
t = time.perf_counter(); c = time.process_time(); x = emb.encode(words)
cold = time.perf_counter() - t; cold_cpu = time.process_time() - c
warm_emb = CachedEmbedder(emb.inner, cache)
warm_emb.inner = None  # proves the warm path never touches the model
t = time.perf_counter(); y = warm_emb.encode(words); warm = time.perf_counter() - t
assert (x == y).all() and x.shape == (len(words), dim)
print(json.dumps(dict(spec=spec, n=len(words), dim=dim, prepare=prepare, load=load,
                      cold=cold, cold_cpu=cold_cpu, warm=warm)))
"""


def main() -> None:
    ap = study_parser(__doc__, write=False)
    ap.add_argument("specs", nargs="*", default=["model2vec", "minilm", "mpnet"])
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    print(f"machine: {machine()}; commit {commit()}\n")
    cols = ["embedder", "dim", "phrases", "prepare s", "load s", "cold s", "cold CPU s"]
    cols += ["warm s", "load avg"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for spec in args.specs:
        with tempfile.TemporaryDirectory() as cache:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, spec, str(args.n), cache],
                capture_output=True,
                text=True,
                env=env,
            )
        if out.returncode:
            print(f"| {spec} | failed: {out.stderr.strip().splitlines()[-1]} |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {spec} | {r['dim']} | {r['n']} | {r['prepare']:.1f} | {r['load']:.1f} "
            f"| {r['cold']:.2f} | {r['cold_cpu']:.2f} | {r['warm']:.2f} "
            f"| {os.getloadavg()[0]:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
