"""The membership study scores exactly the finished whole-document cells of its corpus:
ε = INF_EPSILON reads as ε → ∞, a cell still running (no privacy report yet; for the
LLM-only floor, which has no ε and no report: no documents yet) and another corpus's cells
with a name that starts alike are left out."""

import math

from bench_membership import document_cells


def test_document_cells_groups_finished_cells_of_the_corpus(tmp_path):
    for name, finished in [("bbc-news-kps-eps6-n20-s0", True), ("bbc-news-kps-eps6-n20-s1", True),
                           ("bbc-news-kps-eps1000-n20-s0", True),
                           ("bbc-news-augpe-eps3-n10-s2", True),
                           ("bbc-news-kps-eps3-n20-s0", False),
                           ("bbc-news-extra-kps-eps6-n20-s0", True),
                           ("bbc-news-floor-epsnone-n20-s0", True),
                           ("bbc-news-floor-epsnone-n20-s1", False)]:
        folder = tmp_path / "cells" / name
        folder.mkdir(parents=True)
        (folder / "journal.jsonl").write_text("")
        if finished:
            done = "synthetic.jsonl" if "floor" in name else "synthetic.privacy.json"
            (folder / done).write_text("{}")
    cells = document_cells(tmp_path, "bbc-news")
    assert sorted(cells, key=str) == [("augpe", 3.0, 10), ("floor", None, 20), ("kps", 6.0, 20),
                                      ("kps", math.inf, 20)]
    assert [f.name for f in cells[("floor", None, 20)]] == ["bbc-news-floor-epsnone-n20-s0"]
    assert [f.name for f in cells[("kps", 6.0, 20)]] == ["bbc-news-kps-eps6-n20-s0",
                                                         "bbc-news-kps-eps6-n20-s1"]
