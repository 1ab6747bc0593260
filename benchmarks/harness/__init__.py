"""The benchmark harness: what every study in ``benchmarks/`` shares.

* ``options`` — the shared command-line options (``study_parser``);
* ``store`` — the resumable JSONL result store (``ResultStore``);
* ``stats`` — mean ± sd over seeds, pooling, Welch's test, Holm's adjustment;
* ``report`` — a study's section of docs/benchmarks.md, README blocks, markdown tables;
* ``provenance`` — the repository, commit, ``src/`` tree, machine and command of a result.

A study script is its cells and its table; see benchmarks/README.md.
"""
