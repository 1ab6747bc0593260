"""Kept for the studies that import ``record``: the harness's report writing and provenance
(``harness.report``, ``harness.provenance``) under their old names."""

from harness.provenance import ROOT, bench_dir, command_line, commit, cpu, machine
from harness.report import DOC, HEADER, README, markdown_table, record, record_readme

__all__ = ["DOC", "HEADER", "README", "ROOT", "bench_dir", "command_line", "commit", "cpu",
           "machine", "markdown_table", "record", "record_readme"]
