"""The whole-document benchmark pools published summaries (n, mean, sd) with new per-seed
results; the pooled figures must equal those of the raw values. Aug-PE's accuracy by
iteration is pooled over seeds and set against DP-KPS's LLM calls; DP-KPS is set
against each other method at equal ε by Welch's test."""


import numpy as np
import pytest

from bench_whole_documents import augpe_by_iteration
from harness.stats import Pooled
from whole_documents_report import (
    augpe_against_kps,
    augpe_curve,
    cpus_note,
    current,
    done_keys,
    kps_against_others,
    older,
    peer_note,
    pooled_cell,
)


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


def test_a_seed_that_reused_another_pate_pool_is_rerun_and_then_gives_way():
    base = {"corpus": "c", "method": "pate", "epsilon": 6.0, "per_class": 100, "llm": "local:x",
            "documents": 100, "llm_calls": 431}  # more calls than candidates: retries
    old = [{**base, "seed": s, "accuracy": 0.6} for s in (0, 1, 2)]  # no public_seed kept
    assert {k[3] for k in done_keys(old)} == {0}  # seeds 1 and 2 reused seed 0's pool
    rerun = {**base, "seed": 1, "accuracy": 0.5, "public_seed": 1}
    rows = current([*old, rerun])
    assert rerun in rows and old[1] not in rows and old[2] in rows and old[0] in rows
    assert {k[3] for k in done_keys([*old, rerun])} == {0, 1}
    other = {**old[1], "method": "kps"}  # only PATE passed the run's seed late
    assert current([other]) == [other] and len(done_keys([other])) == 1
    published = {**base, **summary([0.7, 0.8, 0.75])}  # seeds 0, 1, 2 on one pool
    assert done_keys([published]) == set()
    assert current([published, old[1]]) == [published, old[1]]
    assert current([published, {**base, "seed": 0, "public_seed": 0}])[0]["seed"] == 0


def augpe_row(seed: int, accuracies: list[float], calls: int) -> dict:
    """An Aug-PE cell of 100 documents whose population t cost (1+t)/T+1 of ``calls``."""
    t_last = len(accuracies) - 1
    return {"seed": seed, "documents": 100, "accuracy": accuracies[-1], "macro_f1": 0.0,
            "llm_calls": calls, "wall_s": 0.0,
            "by_iteration": [[t, a, calls * (1 + t) / (1 + t_last)]
                             for t, a in enumerate(accuracies)]}


def test_augpe_curve_pools_seeds_per_iteration():
    rows = [augpe_row(0, [0.5, 0.6, 0.7], 300), augpe_row(1, [0.3, 0.6, 0.9], 300)]
    curve = augpe_curve(rows)
    assert [t for t, _, _ in curve] == [0, 1, 2]
    assert [acc.mean for _, acc, _ in curve] == pytest.approx([0.4, 0.6, 0.8])
    assert [calls for _, _, calls in curve] == pytest.approx([1000, 2000, 3000])


def test_augpe_is_priced_at_the_first_iteration_reaching_dp_kps():
    kps = {"seed": 0, "documents": 100, "accuracy": 0.65, "macro_f1": 0.0, "llm_calls": 125,
           "wall_s": 0.0}
    got = {("c", "augpe", 6.0, 100): [augpe_row(0, [0.5, 0.6, 0.7, 0.75], 400)],
           ("c", "kps", 6.0, 100): [kps]}
    text = augpe_against_kps(got)
    assert "reaches DP-KPS's 0.650 after iteration 2 with 2.4× DP-KPS's LLM calls" in text
    got[("c", "kps", 6.0, 100)] = [{**kps, "accuracy": 0.8}]
    text = augpe_against_kps(got)
    assert "does not reach DP-KPS's 0.800 in 3 iterations (best 0.750 after iteration 3)" in text
    assert "spends 3.2× DP-KPS's LLM calls" in text


def test_an_augpe_curve_counts_the_calls_each_saved_population_took(tmp_path, monkeypatch):
    """The curve's calls are the run's saved counts, summed: they cover the iterations a
    resumed process loaded from its run folder and the retries each iteration made."""
    import bench_whole_documents
    from dptext.generators.augpe.state import RunState

    state = RunState(tmp_path / "synthetic.jsonl.run" / "augpe")
    for t, calls in enumerate((1073, 853, 844)):
        state.save_population(t, [(f"text {t}", "a")], {"llm_calls": calls, "checks": {}})
    monkeypatch.setattr(bench_whole_documents, "downstream",
                        lambda texts, labels, data, seed: {"accuracy": 0.5})
    curve = augpe_by_iteration(tmp_path, None, 0)
    assert [row[2] for row in curve] == [1073, 1073 + 853, 1073 + 853 + 844]
    assert [row[:2] for row in curve] == [[0, 0.5], [1, 0.5], [2, 0.5]]


def test_no_augpe_curve_no_section():
    assert augpe_against_kps({("c", "kps", 6.0, 100): [{"seed": 0}]}) == ""


def test_the_peer_note_sums_where_its_seeds_were_written():
    cell = [{"written_on": {"NVIDIA H100 80GB HBM3": 241, "cpu": 0}},
            {"written_on": {"NVIDIA H100 80GB HBM3": 240, "cpu": 1}},
            {"written_on": {"NVIDIA H100 80GB HBM3": 219, "cpu": 22}}]
    note = peer_note({("bbc-news", "invisibleink", 6.0, 100): cell,
                      ("bbc-news", "kps", 6.0, 100): [{"seed": 0}]})
    assert note.endswith("* bbc-news, ε = 6: 700 documents on a lent NVIDIA H100 80GB HBM3, "
                         "23 documents on this machine")
    assert peer_note({("bbc-news", "kps", 6.0, 100): [{"seed": 0}]}) == ""


def test_the_cpus_the_timed_rows_ran_on_are_tallied_and_older_rows_and_summaries_unknown():
    rows = [{"method": "kps", "cpu": "2 cores, AMD EPYC"},
            {"method": "augpe", "cpu": "2 cores, AMD EPYC"},
            {"method": "pate"},
            {"method": "real", "cpu": "2 cores, Intel(R) Xeon(R) Processor"},
            {**summary([0.7, 0.8]), "method": "kps"}]
    assert cpus_note(rows).endswith(
        "rows by CPU: 2 cores, AMD EPYC: 2; not recorded (rows from before a row named its CPU): 2")


def seeds_of(*accuracies: float) -> list[dict]:
    return [{"seed": i, "documents": 100, "accuracy": a, "macro_f1": 0.0, "llm_calls": 0,
             "wall_s": 0.0} for i, a in enumerate(accuracies)]


def test_dp_kps_is_called_ahead_only_where_welchs_test_says_so():
    from scipy.stats import ttest_ind

    kps, close, far = [0.88, 0.89, 0.87], [0.86, 0.90, 0.84], [0.70, 0.72, 0.71]
    got = {("c", "kps", 6.0, 100): seeds_of(*kps),
           ("c", "augpe", 6.0, 100): seeds_of(*close),
           ("c", "invisibleink", 6.0, 100): seeds_of(*far),
           ("c", "dpft", 6.0, 100): seeds_of(0.95),
           ("c", "dpft", 3.0, 100): seeds_of(0.5, 0.6),  # no DP-KPS at ε = 3: no row
           ("c", "real", None, 100): seeds_of(0.97, 0.96)}
    text = kps_against_others(got)
    t, p = ttest_ind(kps, close, equal_var=False)
    assert f"| c | 6 | augpe | {np.mean(close):.3f} ± {np.std(close, ddof=1):.3f} | " in text
    _, p_far = ttest_ind(kps, far, equal_var=False)  # Holm: the smaller p times 2
    assert f"| +0.013 | {t:.1f} | {p:.3f} | {p:.3f} | not settled |" in text
    assert f"| {p_far:.3f} | {2 * p_far:.3f} | DP-KPS ahead |" in text
    assert "| 0.950 (1 seed) | 0.880 ± 0.010 | -0.070 | – | – | – | not tested (1 seed) |" in text
    assert "| c | 6 | invisibleink |" in text and "| DP-KPS ahead |" in text
    assert "| c | 6 | dpft | 0.950 (1 seed) |" in text
    assert "| 3 |" not in text and "real" not in text
    got[("c", "invisibleink", 6.0, 100)] = seeds_of(0.95, 0.96, 0.97)
    assert "| DP-KPS behind |" in kps_against_others(got)
    assert kps_against_others({("c", "kps", 6.0, 100): seeds_of(*kps)}) == ""


def test_holms_adjustment_steps_down_and_keeps_the_order():
    from harness.stats import holm

    # sorted 0.01, 0.02, 0.03, 0.04 times 4, 3, 2, 1: 0.04, 0.06, 0.06 (monotone), 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0]) and holm([0.2]) == [0.2]


def test_pate_rows_from_before_its_fixes_are_older():
    old = seeds_of(0.60, 0.62, 0.61)  # no public_seed kept: seeds 1 and 2 reused seed 0's
    assert older(old) and older([summary([0.7, 0.8])])
    new = [{**r, "public_seed": r["seed"]} for r in old]
    assert not older(new) and not older(old[:1])
    # seed 0 on its own pool, but one call per candidate: refusals were never asked again
    unchecked = {**old[0], "documents": 100, "llm_calls": 400}
    assert older([unchecked]) and not older([{**unchecked, "llm_calls": 431}])
    got = {("c", "kps", 6.0, 100): seeds_of(0.70, 0.71, 0.72), ("c", "pate", 6.0, 100): old}
    assert "| c | 6 | pate (older runs) |" in kps_against_others(got)
    got[("c", "pate", 6.0, 100)] = new
    assert "| c | 6 | pate |" in kps_against_others(got)


def test_the_glance_table_has_one_row_per_method_and_marks_what_differs():
    from argparse import Namespace

    from whole_documents_report import glance_table, readme_summary

    served = "openai:m@u"
    got = {("c", "real", None, 100): seeds_of(0.95, 0.96),
           ("c", "kps", 3.0, 100): seeds_of(0.80, 0.82),
           ("c", "kps", 6.0, 100): seeds_of(0.85, 0.87, 0.86),
           ("c", "kps", 6.0, 48): seeds_of(0.10),  # another size: not in the table
           ("c", "pate", 500.0, 100): seeds_of(0.70, 0.72),  # one pool, limit at ε = 500
           ("d", "real", None, 100): seeds_of(0.50)}
    others = {("c", "kps", 6.0, 100, served): seeds_of(0.01),  # c's kps has local cells
              ("d", "kps", 1000.0, 100, served): seeds_of(0.40, 0.42)}
    args = Namespace(per_class=100, epsilons=[3.0, 6.0, 1000.0], corpora=["d", "c"])
    text = glance_table(got, others, args)
    rows = [line for line in text.split("\n") if line.startswith("| ")][1:]
    assert [r.split(" | ")[:2] for r in rows] == [
        ["| d", "real documents"], ["| d", "**DP-KPS**"],
        ["| c", "real documents"], ["| c", "**DP-KPS**"], ["| c", "PATE"]]
    assert rows[1] == "| d | **DP-KPS** | – | – | – | 0.410 ± 0.014² | 0 |"
    assert rows[3] == "| c | **DP-KPS** | – | 0.810 ± 0.014 | 0.860 ± 0.010 | – | 0 |"
    assert "| 0.710 ± 0.014¹ (ε = 500) |" in rows[4]
    assert rows[2].startswith("| c | real documents | 0.955 ± 0.007 | – | – | – | – |")
    assert "¹ PATE rows from before" in text and "² documents written" in text
    assert glance_table({}, {}, args) == ""
    # the README's short table: a row per corpus, real documents, DP-KPS and the floor, the
    # same cells as above; its notes (only the marks it uses) one paragraph
    readme = readme_summary(got, others, args)
    table = [line for line in readme.split("\n") if line.startswith("|")]
    assert table[2:] == ["| d | 0.500 (1 seed) | – | – | 0.410 ± 0.014² | – |",
                         "| c | 0.955 ± 0.007 | 0.810 ± 0.014 | 0.860 ± 0.010 | – | – |"]
    notes = readme.split("\n\n", 1)[1].strip()
    assert notes.startswith("² documents") and notes.endswith("–: not run, or no such cell.")
    assert "¹" not in readme and max(map(len, notes.split("\n"))) <= 88
