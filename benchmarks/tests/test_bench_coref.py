"""bench_coref: the real-short reference and the report of its cells (no LLM, no LitBank)."""

from argparse import Namespace

import bench_coref
from bench_coref import design, first_words, short_passages, table
from harness.store import ResultStore


def test_first_words_keeps_the_spacing_and_stops_at_the_nth_word():
    assert first_words("One  two\nthree four.", 3) == "One  two\nthree"
    assert first_words("short text", 10) == "short text"
    assert first_words("   ", 3) == "   "


def test_short_passages_draws_distinct_passages_by_the_seed():
    texts = [f"passage{i} " + "word " * 50 for i in range(10)]
    a = short_passages(texts, 4, 5, seed=0)
    assert len(a) == 4 and len(set(a)) == 4
    assert all(len(t.split()) == 5 for t in a)
    assert a == short_passages(texts, 4, 5, seed=0)
    assert a != short_passages(texts, 4, 5, seed=1)
    assert len(short_passages(texts, 20, 5, seed=0)) == 10


def _args(**kw):
    return Namespace(**{"rows": ["real", "real-short", "kps", "dpft"], "seeds": [0, 1],
                        "epsilons": [6.0, 1000.0], "documents": 3, "max_tokens": 50,
                        "real_words": 40, "llm": "local:tiny", **kw})


def test_design_runs_both_epsilons_of_a_seed_before_the_next_seed():
    kps = [(c["seed"], c["epsilon"]) for c in design(_args()) if c["row"] == "kps"]
    assert kps == [(0, 6.0), (0, 1000.0), (1, 6.0), (1, 1000.0)]
    assert [c["row"] for c in design(_args(rows=["real"]))] == ["real", "real"]
    dpft = [c for c in design(_args()) if c["row"] == "dpft"]
    assert [(c["seed"], c["epsilon"]) for c in dpft] == [(0, 6.0), (0, 1000.0), (1, 6.0),
                                                         (1, 1000.0)]
    assert all(c["llm"] is None for c in dpft)  # no LLM writes dpft's documents


def _row(cell: dict, conll: float) -> dict:
    model = {"conll_f1": conll, "muc": conll, "b3": conll, "ceafe": conll,
             "mentions": 0.8, "train_docs": 3}
    caps = {"max_tokens": 1000, "max_docs": 200, "max_gold_train": 40,
            "max_gold_test": 20}
    return {**cell, "caps": caps, "n_gold_train": 40, "n_gold_test": 20, "mean_words": 40.0,
            "generate_s": 60.0, "models": {"gold": model, "synthetic_silver": model,
                                           "shuffled_control": model}}


def test_table_shows_the_stored_cells_and_lists_the_missing_ones(tmp_path):
    args = _args()
    store = ResultStore(tmp_path / "results.jsonl", bench_coref.KEY)
    cells = design(args)
    for i, cell in enumerate(cells[:-1]):  # the last dpft cell not run
        store.add(_row(cell, 0.1 * (i + 1)))
    text = table(store, args)
    assert "| DP-KPS ε = 6, silver chains | 3 | 40 ± 0 | 2 | 0.600 ± 0.141 |" in text
    assert "| DP-KPS ε = ∞ (ε = 1000), silver chains | 3 | 40 ± 0 | 2 | 0.700 ± 0.141 |" in text
    assert ("| DP fine-tuning ε = ∞ (ε = 1000), silver chains | 3 | 40 (1 seed) | 1 | "
            "1.000 (1 seed) |") in text
    assert ("| real passages cut to 40 words, silver chains | 3 | 40 ± 0 | 2 | 0.350 ± 0.071 |"
            in text)
    assert "| control: real passages cut to 40 words, chains shuffled | 3 |" in text
    assert ("DP-KPS (difference to the real passages): ε = 6: 0.600 (+0.250; 2 seeds); "
            "ε = ∞ (ε = 1000): 0.700 (+0.350; 2 seeds). DP fine-tuning (difference to the "
            "real passages): ε = 6: 1.000 (+0.650; 2 seeds); ε = ∞ (ε = 1000): 1.000 "
            "(+0.650; 1 seed).") in text
    assert text.endswith("* DP fine-tuning ε = 1000, seed 1, 3 documents of ≤ 50 tokens\n\n"
                         "Not run here: Aug-PE's synthetic novels (ten LLM calls a document).")
