"""The benchmark harness: shared options, the resumable result store, statistics over
seeds and a study's section of docs/benchmarks.md."""

import math
import re

import pytest

from harness import report
from harness.options import add_list, parse_eps, study_parser
from harness.stats import eps_name, mean_sd, ratio
from harness.store import ResultStore


def test_list_options_take_comma_and_space_lists_and_inf():
    ap = study_parser("A study.\n\nMore.", corpora=["bbc-news"], epsilons=[6, math.inf],
                      seeds=[0, 1, 2], work_dir="x", store=True, report=True, check=True)
    add_list(ap, "--models", default=["default"])
    args = ap.parse_args(["--datasets", "a,b", "c", "--eps", "3", "inf,∞", "--seeds", "4,5"])
    assert (args.corpora, args.epsilons, args.seeds) == (["a", "b", "c"], [3.0] + [math.inf] * 2,
                                                         [4, 5])
    assert args.models == ["default"] and not (args.report or args.write or args.check)
    assert ap.parse_args([]).epsilons == [6, math.inf]
    assert ap.description == "A study."
    with pytest.raises(SystemExit):
        ap.parse_args(["--seeds", "one"])


def test_the_store_skips_done_cells_keyed_by_source_tree_and_resumes_another(tmp_path):
    key = ("kind", "corpus", "seed", "src")
    committed = tmp_path / "committed.jsonl"
    ResultStore(committed, key).add({"kind": "cell", "corpus": "a", "seed": 0, "src": "t1",
                                     "accuracy": 0.5})
    store = ResultStore(tmp_path / "new.jsonl", key, resume=[committed])
    assert store.has({"kind": "cell", "corpus": "a", "seed": 0, "src": "t1"})
    assert not store.has({"kind": "cell", "corpus": "a", "seed": 0, "src": "t2"})  # new code
    assert not store.has({"kind": "ceiling", "corpus": "a"})  # another kind of row
    store.add({"kind": "ceiling", "corpus": "a", "accuracy": 0.9})
    again = ResultStore(tmp_path / "new.jsonl", key, resume=[committed])
    assert again.has({"kind": "ceiling", "corpus": "a"}) and len(again.rows()) == 2
    assert len(ResultStore(committed, key).rows()) == 1  # a resumed store is never written


def test_a_torn_row_names_the_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"a": ')
    with pytest.raises(SystemExit, match=r"r\.jsonl, line 2"):
        ResultStore(path, ("a",))


def test_mean_sd_over_seeds():
    assert mean_sd([0.5, 0.7]) == "0.600 ± 0.141"
    assert mean_sd([0.5]) == "0.500 (1 seed)"
    assert mean_sd([]) == "–"
    assert ratio([0.4, 0.6], 0.5) == "1.00" and ratio([], 0.5) == "–"
    assert eps_name(math.inf) == "∞" and eps_name(6.0) == "6" and parse_eps("∞") == math.inf


def test_record_replaces_its_own_section_only(tmp_path, monkeypatch):
    doc = tmp_path / "benchmarks.md"
    monkeypatch.setattr(report, "commit", lambda: "abc1234")
    report.record("one", "One", "first", doc)
    report.record("two", "Two", "second", doc)
    report.record("one", "One", "first, again", doc)
    text = doc.read_text()
    assert text.count("<!-- bench:one -->") == 1 and "first, again" in text
    assert "\nfirst\n" not in text and "second" in text
    assert text.index("bench:one") < text.index("bench:two")
    assert "commit abc1234" in text


def test_record_keeps_its_old_names_for_studies_that_import_it():
    import record

    assert record.record is report.record and record.markdown_table is report.markdown_table
    assert callable(record.bench_dir) and callable(record.command_line)


def _cells(row: str) -> int:
    """The cells of a markdown table row: pipes that are not escaped or in a code span."""
    bare = re.sub(r"`[^`]*`", "", row.strip()).replace(r"\|", "")
    return bare.count("|") - 1


def test_a_pipe_in_a_cell_does_not_split_it():
    table = report.markdown_table(["|Ṽ|", "`a|b`"], [["x|y", 0.5]]).splitlines()
    assert table[0] == r"| \|Ṽ\| | `a|b` |" and table[2] == r"| x\|y | 0.500 |"
    assert {_cells(row) for row in table} == {2}


def test_every_table_of_the_benchmarks_page_keeps_its_columns():
    lines = report.DOC.read_text(encoding="utf-8").splitlines()
    tables = [i for i, line in enumerate(lines[1:], 1)
              if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line) and lines[i - 1].startswith("|")]
    assert tables
    for i in tables:
        j, width = i - 1, _cells(lines[i])
        while j < len(lines) and lines[j].startswith("|"):
            assert _cells(lines[j]) == width, f"docs/benchmarks.md:{j + 1}: {lines[j][:80]}"
            j += 1
