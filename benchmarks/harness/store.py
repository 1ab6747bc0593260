"""A resumable result store: one JSONL row a finished cell, appended as soon as it is done.

A row is keyed by the fields a study names (its cell's parameters and, where the study
wants results redone when the code changes, ``src``: the git tree of ``src/``, see
``provenance.src_tree``). A rerun skips the cells whose key is already there, so a killed
run continues; ``resume`` adds stores read but never written (a committed
``benchmarks/results/NAME.jsonl``, another machine's file), so a fresh machine carries on
from them. Rows hold scores and sizes, never text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path


def load_rows(path: Path) -> list[dict]:
    """The rows of a JSONL file ([] where there is none); a bad line names file and line."""
    if not path.exists():
        return []
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}, line {n}: not a JSON row ({e.msg}); a run killed "
                                 "while writing leaves a torn last line: delete it") from None
    return rows


def append_row(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


class ResultStore:
    """The rows of ``path`` (written) and of ``resume`` (read only), keyed by ``key``."""

    def __init__(self, path: Path, key: Sequence[str], resume: Iterable[Path] = ()):
        self.path, self.key_fields = Path(path), tuple(key)
        self.resume = [Path(p) for p in resume]
        self._rows = [r for p in [*self.resume, self.path] for r in load_rows(p)]
        self._by_key = {self.key(r): r for r in self._rows}

    def key(self, row: dict) -> tuple:
        """The row's cell: its value of each key field (None where the row has none, so
        rows of several kinds — a ceiling, a cell — share one store)."""
        return tuple(row.get(f) for f in self.key_fields)

    def has(self, cell: dict) -> bool:
        return self.key(cell) in self._by_key

    def get(self, cell: dict) -> dict | None:
        """The row of ``cell`` (the last one written, where a key repeats), or None."""
        return self._by_key.get(self.key(cell))

    def add(self, row: dict) -> None:
        append_row(self.path, row)
        self._rows.append(row)
        self._by_key[self.key(row)] = row

    def rows(self) -> list[dict]:
        return list(self._rows)
