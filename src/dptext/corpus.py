"""Corpora in and out: the private ``Corpus`` and the JSONL outputs of a run.

Readers accept CSV, JSONL, Parquet, and a folder with one sub-folder of ``.txt``
files per label (or ``.txt`` files directly, unlabelled). Bad input stops the run
with an ``InputError`` naming the file, the row and the field, and saying what to
do — never with a traceback, and never by silently dropping documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMATS = ("csv", "jsonl", "parquet", "folder")
MAX_LISTED = 5  # problems listed in one error message before "and N more"


#: the command that shows the curator the private facts an error message leaves out
INSPECT = "dptext inspect"


class InputError(ValueError):
    """Bad user input; the message says where (file, row, field) and what to do."""


class PrivateValuesError(InputError):
    """Bad input whose full explanation names private facts (labels, code values, which
    rows are empty, how many).

    ``str(error)`` is the generic message: it never names a private value nor counts
    them, so it is safe wherever an error message may end up (a terminal that is logged,
    a file). ``detail`` names them; the CLI never prints it as part of a run: the curator
    sees it by asking, with ``dptext inspect`` (``cli/inspect_corpus.py``).
    """

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True)
class Corpus:
    """A private corpus: texts, optional labels, optional extra columns (metadata).

    An unlabelled corpus has ``labels is None`` and one class, ``None``. A multi-label
    corpus (read with a label separator) has ``label_sets`` instead of ``labels``: each
    document's labels as a sorted tuple of distinct strings (possibly empty); generators
    that cannot use sets refuse it rather than keep one label of each.
    """

    texts: tuple[str, ...]
    labels: tuple[str, ...] | None = None
    source: str = "<memory>"
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    label_sets: tuple[tuple[str, ...], ...] | None = None

    def __post_init__(self) -> None:
        if self.labels is not None and len(self.labels) != len(self.texts):
            raise ValueError("texts and labels differ in length")
        bad = next((i for i, t in enumerate(self.texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"{self.source}: document {bad}: the text is a "
                             f"{type(self.texts[bad]).__name__}, not a string")
        if self.labels is not None:
            bad = next((i for i, lab in enumerate(self.labels) if not isinstance(lab, str)), None)
            if bad is not None:
                raise InputError(f"{self.source}: document {bad}: the label is a "
                                 f"{type(self.labels[bad]).__name__}, not a string")
        if self.label_sets is not None:
            if self.labels is not None:
                raise ValueError("a corpus has labels or label sets, not both")
            if len(self.label_sets) != len(self.texts):
                raise ValueError("texts and label sets differ in length")
            bad = next((i for i, s in enumerate(self.label_sets) if not isinstance(s, tuple)
                        or not all(isinstance(x, str) for x in s)), None)
            if bad is not None:
                raise InputError(f"{self.source}: document {bad}: the labels are not a "
                                 "tuple of strings")

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def multilabel(self) -> bool:
        return self.label_sets is not None

    @property
    def labelled(self) -> bool:
        return self.labels is not None or self.label_sets is not None

    @property
    def classes(self) -> list[str | None]:
        if self.labels is None:
            return [None]
        return sorted(set(self.labels))

    def class_indices(self) -> dict[str | None, np.ndarray]:
        """Indices of the documents of each class (disjoint, covering the corpus)."""
        if self.labels is None:
            return {None: np.arange(len(self.texts))}
        labels = np.asarray(self.labels, dtype=object)
        return {c: np.flatnonzero(labels == c) for c in self.classes}

    def subset(self, indices: Sequence[int]) -> Corpus:
        idx = list(indices)
        return Corpus(
            texts=tuple(self.texts[i] for i in idx),
            labels=None if self.labels is None else tuple(self.labels[i] for i in idx),
            source=self.source,
            columns={k: tuple(v[i] for i in idx) for k, v in self.columns.items()},
            label_sets=None if self.label_sets is None else tuple(self.label_sets[i]
                                                                  for i in idx),
        )


def _problem_list(kind: str, rows: list[str]) -> str:
    shown = ", ".join(rows[:MAX_LISTED])
    more = f" and {len(rows) - MAX_LISTED} more" if len(rows) > MAX_LISTED else ""
    return f"{kind}: {shown}{more}"


def label_set(value: object, sep: str) -> tuple[str, ...]:
    """A document's labels from a multi-label field: a string split at ``sep``, or a list
    (JSONL, Parquet); stripped, empty parts and repeats dropped, sorted. A missing or
    empty field is the empty set (a document with no label is valid multi-label data)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    parts = value.split(sep) if isinstance(value, str) else [str(v) for v in value] \
        if isinstance(value, list | tuple | np.ndarray) else str(value).split(sep)
    return tuple(sorted({p.strip() for p in parts if p.strip()}))


def _finish(
    path: Path,
    texts: list[object],
    labels: list[object] | None,
    where: list[str],
    text_field: str,
    label_field: str | None,
    skip_invalid: bool,
    columns: dict[str, list[object]] | None = None,
    label_sep: str | None = None,
) -> Corpus:
    """Validate rows (empty/non-text documents, missing labels) and build the Corpus
    (with ``label_sep``, a multi-label one: ``Corpus.label_sets``)."""
    bad_text = [w for w, t in zip(where, texts, strict=True)
                if not isinstance(t, str) or not t.strip()]
    bad_label = []
    if labels is not None and label_sep is None:
        bad_label = [w for w, lab in zip(where, labels, strict=True)
                     if lab is None or (isinstance(lab, float) and np.isnan(lab))
                     or str(lab).strip() == ""]
    if (bad_text or bad_label) and not skip_invalid:
        parts = []
        if bad_text:
            parts.append(_problem_list(f"empty or missing field {text_field!r} at", bad_text))
        if bad_label:
            parts.append(_problem_list(f"empty or missing field {label_field!r} at", bad_label))
        fields = " or ".join(repr(f) for f, b in ((text_field, bad_text),
                                                  (label_field, bad_label)) if b)
        raise PrivateValuesError(
            f"{path}: some rows have an empty or missing field {fields}. Fix them, or pass "
            "--skip-invalid to drop them (each dropped document affects only itself, so the "
            f"privacy guarantee is unchanged). Which rows: `{INSPECT}` with the same input "
            "options (it shows your private data to you; this message does not).",
            f"{path}: " + "; ".join(parts))
    bad = set(bad_text) | set(bad_label)
    keep = [i for i, w in enumerate(where) if w not in bad]
    if not keep:
        raise PrivateValuesError(f"{path}: no usable documents (every row is empty)",
                                 f"{path}: all {len(where)} rows are empty")
    out_cols = {k: tuple(str(v[i]) for i in keep) for k, v in (columns or {}).items()}
    multi = labels is not None and label_sep is not None
    return Corpus(
        texts=tuple(str(texts[i]) for i in keep),
        labels=None if labels is None or multi else tuple(str(labels[i]).strip()
                                                         for i in keep),
        source=str(path),
        columns=out_cols,
        label_sets=tuple(label_set(labels[i], label_sep) for i in keep) if multi else None,
    )


def _check_columns(path: Path, present: Iterable[str], wanted: dict[str, str | None]) -> None:
    present = list(present)
    for role, name in wanted.items():
        if name is not None and name not in present:
            raise InputError(
                f"{path}: no column {name!r} for the {role}; the columns are "
                f"{', '.join(map(repr, present))}. Pass the right one with --{role}-column."
            )


def _decode(path: Path, raw: bytes, encoding: str) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(
            f"{path}: line {line} is not valid {encoding} (byte {e.start}); re-save the file "
            f"as {encoding} or pass --encoding with the file's real encoding."
        ) from None


def _read_table(path: Path, fmt: str, encoding: str):
    import pandas as pd

    if fmt == "csv":
        from io import StringIO

        try:
            return pd.read_csv(StringIO(_decode(path, path.read_bytes(), encoding)), dtype=str,
                               keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise InputError(f"{path}: the file is empty (no header row with a "
                             "'text' column)") from None
        except pd.errors.ParserError as e:
            raise InputError(f"{path}: not a valid CSV file ({e})") from None
    try:
        return pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several unrelated types
        raise InputError(f"{path}: not a readable Parquet file ({e})") from None


def read_jsonl_records(path: Path, encoding: str = "utf-8") -> list[dict]:
    """JSON objects of a JSONL file, each with ``__row__`` ("line N") for error messages."""
    rows = []
    text = _decode(path, path.read_bytes(), encoding)
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: line {n} is not valid JSON ({e.msg}).") from None
        if not isinstance(obj, dict):
            raise InputError(
                f"{path}: line {n} is a JSON {type(obj).__name__}, expected an object."
            )
        obj["__row__"] = f"line {n}"
        rows.append(obj)
    return rows


def _read_folder(path: Path, encoding: str, skip_invalid: bool) -> Corpus:
    subdirs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    labelled = bool(subdirs)
    groups = [(d.name, sorted(d.glob("*.txt"))) for d in subdirs] if labelled else [
        (None, sorted(path.glob("*.txt")))
    ]
    texts, labels, where = [], [], []
    for label, files in groups:
        for f in files:
            texts.append(_decode(f, f.read_bytes(), encoding))
            labels.append(label)
            where.append(str(f.relative_to(path)))
    if not texts:
        raise InputError(
            f"{path}: no .txt files found; expected one sub-folder of .txt files per label, "
            "or .txt files directly in the folder for an unlabelled corpus."
        )
    return _finish(path, texts, labels if labelled else None, where, "file content", "folder",
                   skip_invalid)


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "folder"
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(
        f"{path}: cannot tell the format from the extension {suffix!r}; use .csv, .jsonl, "
        ".parquet or a folder, or pass --format."
    )


def read_corpus(
    path: str | Path,
    *,
    text_column: str = "text",
    label_column: str | None = None,
    fmt: str | None = None,
    encoding: str = "utf-8",
    skip_invalid: bool = False,
    extra_columns: Sequence[str] = (),
    label_sep: str | None = None,
) -> Corpus:
    """Read a private corpus from a file or folder (see module docstring). ``label_sep``:
    the label column holds several labels per document, separated by it (or a list, in
    JSONL and Parquet): a multi-label corpus (``Corpus.label_sets``)."""
    spec = str(path)
    if label_sep is not None and not label_sep:
        raise InputError("--label-sep is empty; give the character that separates a "
                         "document's labels, e.g. '|'")
    if spec.startswith("demo:"):
        from dptext.datasets import load_demo

        return load_demo(spec.removeprefix("demo:"))
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "folder":
        if label_sep is not None:
            raise InputError(f"{path}: a folder gives each document one label (its "
                             "sub-folder); for several labels per document use a CSV, JSONL "
                             "or Parquet file with --label-column and --label-sep")
        return _read_folder(path, encoding, skip_invalid)
    if label_sep is not None and label_column is None:
        raise InputError(f"{path}: --label-sep needs --label-column (the column that holds "
                         "each document's labels)")
    wanted = {"text": text_column, "label": label_column}
    wanted.update({f"extra ({c})": c for c in extra_columns})
    if fmt == "jsonl":
        rows = read_jsonl_records(path, encoding)
        if not rows:
            raise InputError(f"{path}: the file holds no JSON lines")
        keys = set().union(*(r.keys() for r in rows)) - {"__row__"}
        _check_columns(path, sorted(keys), {"text": text_column, "label": label_column})
        where = [r["__row__"] for r in rows]
        texts = [r.get(text_column) for r in rows]
        labels = None if label_column is None else [r.get(label_column) for r in rows]
        cols = {c: [r.get(c, "") for r in rows] for c in extra_columns}
        return _finish(path, texts, labels, where, text_column, label_column, skip_invalid, cols,
                       label_sep)
    table = _read_table(path, fmt, encoding)
    _check_columns(path, table.columns, wanted)
    offset = 2 if fmt == "csv" else 1  # CSV: header is line 1
    where = [f"{'line' if fmt == 'csv' else 'row'} {i + offset}" for i in range(len(table))]
    texts = table[text_column].tolist()
    labels = None if label_column is None else table[label_column].tolist()
    cols = {c: table[c].tolist() for c in extra_columns}
    return _finish(path, texts, labels, where, text_column, label_column, skip_invalid, cols,
                   label_sep)


def write_jsonl(records: Iterable[dict], path: str | Path) -> int:
    """Write ``records`` as JSON lines (UTF-8); returns the number written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n
