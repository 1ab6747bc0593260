"""The class-size benchmark's table: per fraction of the train split, the accuracies at
ε = 6 and ε → ∞ and what the noise costs (the difference of their means), only for the
code (src tree) and corpus asked for, and no fraction without both ε."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_class_size import report


def row(fraction, eps, seed, b, a=0.5, src="t1", corpus="banking77"):
    return {"corpus": corpus, "fraction": fraction, "epsilon": eps, "seed": seed, "src": src,
            "acc_B": b, "acc_A": a, "train_docs": int(10000 * fraction),
            "docs_per_class_median": 130 * fraction, "docs_per_class_min": 1,
            "command": "python benchmarks/bench_class_size.py"}


def test_noise_cost_per_fraction():
    rows = [row(1.0, "6", 0, 0.70), row(1.0, "6", 1, 0.72), row(1.0, "∞", 0, 0.80),
            row(1.0, "∞", 1, 0.78), row(0.5, "6", 0, 0.50), row(0.5, "∞", 0, 0.75),
            row(0.25, "6", 0, 0.40),  # no ε → ∞ yet: left out
            row(1.0, "6", 2, 0.10, src="old"), row(1.0, "6", 3, 0.10, corpus="bbc-news")]
    lines = [x for x in report(rows, "banking77", "t1").splitlines() if x.startswith("| ")]
    assert len(lines) == 1 + 2  # the header, fractions 1 and 0.5
    full, half = lines[1].split(" | "), lines[2].split(" | ")
    assert full[0] == "| 1" and full[3] == "2" and full[6] == "0.080"
    assert full[4] == "0.710 ± 0.014" and full[5] == "0.790 ± 0.014"
    assert half[0] == "| 0.5" and half[6] == "0.250" and half[4] == "0.500 (1 seed)"
