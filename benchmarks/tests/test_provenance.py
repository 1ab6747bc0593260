"""The provenance the benchmarks write into the repository (``harness.provenance``,
``harness.report``) holds no path of the machine they ran on."""

import sys

import pytest

from harness import provenance, report


def test_the_command_line_writes_the_home_folder_as_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    script = str(provenance.ROOT / "benchmarks" / "bench_x.py")
    monkeypatch.setattr(sys, "argv", [script, "--work-dir", f"{tmp_path}/cells a",
                                      "--n", "3", f"{tmp_path}/jobs"])
    line = provenance.command_line()
    assert line == "python benchmarks/bench_x.py --work-dir ~/'cells a' --n 3 ~/jobs"
    assert str(tmp_path) not in line


def test_the_readme_block_is_replaced_between_its_markers_and_nothing_else(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- readme:x -->\nold table\n<!-- /readme:x -->\n\nafter\n")
    report.record_readme("x", "| new | table |\n", readme)
    assert readme.read_text() == ("intro\n<!-- readme:x -->\n| new | table |\n"
                                  "<!-- /readme:x -->\n\nafter\n")
    report.record_readme("x", "again", readme)  # and again: the markers stay
    assert readme.read_text().count("<!-- readme:x -->") == 1
    assert "again\n<!-- /readme:x -->" in readme.read_text()


def test_a_readme_without_the_markers_is_a_clear_error(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="add both markers"):
        report.record_readme("x", "body", readme)
    assert readme.read_text() == "no markers\n"
