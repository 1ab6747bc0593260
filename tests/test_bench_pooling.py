"""The whole-document benchmark pools published summaries (n, mean, sd) with new per-seed
results; the pooled figures must equal those of the raw values."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_whole_documents import Pooled, done_keys, pooled_cell


def summary(values, **extra) -> dict:
    v = np.asarray(values)
    return {"kind": "summary", "seeds": list(range(len(v))), "accuracy": [v.mean(), v.std(ddof=1)],
            "macro_f1": [v.mean(), v.std(ddof=1)], "documents_per_seed": 100,
            "llm_calls_per_1000": 1000, "wall_hours_per_1000": 0.5, **extra}


def test_pooled_summary_and_new_seeds_equal_the_raw_values():
    old, new = [0.70, 0.74, 0.69], [0.81, 0.66]
    p = Pooled()
    v = np.asarray(old)
    p.add(len(v), v.mean(), v.std(ddof=1))
    for x in new:
        p.add(1, x)
    everything = np.asarray(old + new)
    assert p.n == 5
    assert p.mean == pytest.approx(everything.mean())
    assert str(p) == f"{everything.mean():.3f} ± {everything.std(ddof=1):.3f}"


def test_one_value_is_marked_as_one_seed():
    p = Pooled()
    p.add(1, 0.5)
    assert str(p) == "0.500 (1 seed)"
    assert str(Pooled()) == "–"


def test_a_cell_row_joins_a_summary_of_the_same_cell():
    rows = [summary([0.70, 0.74], keyphrases_only=[0.75, 0.01],
                    documents_minus_keyphrases=[-0.03, 0.02]),
            {"seed": 2, "accuracy": 0.72, "macro_f1": 0.70, "keyphrases_only": 0.80,
             "documents": 100, "llm_calls": 1200, "wall_s": 3600.0}]
    p = pooled_cell(rows)
    assert p["seeds"] == [0, 1, 2]
    assert p["accuracy"].mean == pytest.approx(0.72)
    assert p["difference"].mean == pytest.approx((-0.03 * 2 - 0.08) / 3)
    assert p["documents"] == 300
    assert p["calls"] == pytest.approx(1000 * 0.2 + 1200)
    assert p["hours"] == pytest.approx(0.5 * 0.2 + 1.0)


def test_every_seed_of_a_summary_counts_as_done():
    row = {**summary([0.7, 0.8]), "corpus": "c", "method": "kps", "epsilon": 6.0,
           "per_class": 100, "llm": "local:x"}
    cell = {"corpus": "c", "method": "kps", "epsilon": 6.0, "per_class": 100, "llm": "local:x",
            "seed": 2}
    done = done_keys([row, cell])
    assert {k[3] for k in done} == {0, 1, 2}
