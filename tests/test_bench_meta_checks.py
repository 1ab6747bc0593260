"""The before/after benchmark of the document checks (benchmarks/bench_meta_checks.py):
which documents it counts as flagged, and its table pairs the seeds."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_meta_checks import CELL, flagged, report


def test_cell_names_parse_and_echoes_are_flagged():
    m = CELL.match("health-tweets-kps-eps1000-n100-s2")
    assert (m["corpus"], m["eps"], m["per_class"], m["seed"]) == ("health-tweets", "1000",
                                                                  "100", "2")
    assert CELL.match("bbc-news-pate-eps3-n100-s0") is None
    assert flagged(["My card was charged twice and the bank refused to refund the fee.",
                    "I am writing a complaint about a product that contains the following "
                    "terms: fee, card, late."]) == 1


def test_the_table_pairs_accuracy_per_seed():
    rows = [{"corpus": "complaints", "epsilon": 3.0, "seed": s, "documents": 800,
             "flagged_before": 40, "flagged_after": 0, "new_llm_calls": 40,
             "accuracy_before": b, "accuracy_after": a, "command": "python bench"}
            for s, b, a in [(0, 0.60, 0.62), (1, 0.70, 0.72)]]
    line = report(rows).splitlines()[-1]
    assert line == ("| complaints | 3 | 0, 1 | 5.00% | 0.00% | 5.00% | 0.650 ± 0.071 | "
                    "0.670 ± 0.071 | 0.020 ± 0.000 |")
