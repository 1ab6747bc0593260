"""Inputs of an evaluation: the synthetic release, its privacy report, and real corpora.

A synthetic file is JSONL with ``{"text", "label", "keyphrases"}`` per line (a
keyphrase file has ``{"label", "keyphrases"}`` only). A label may be a list of
strings (multi-label data). The privacy report ``privacy.json`` lies beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from dptext.corpus import Corpus, InputError, read_corpus, read_jsonl_records

Label = str | tuple[str, ...]


@dataclass(frozen=True)
class Labelled:
    """Texts with labels (a string each, or a tuple of strings for multi-label data)."""

    texts: tuple[str, ...]
    labels: tuple[Label, ...] | None
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    keyphrases: tuple[tuple[str, ...], ...] | None = None
    source: str = "<memory>"
    keyphrase_only: bool = False  # a keyphrase file: each text is its joined phrase sequence

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def multilabel(self) -> bool:
        return self.labels is not None and any(isinstance(x, tuple) for x in self.labels)


def split_labels(labels: tuple[str, ...] | None, sep: str | None) -> tuple[Label, ...] | None:
    if labels is None or not sep:
        return labels
    return tuple(tuple(p.strip() for p in lab.split(sep) if p.strip()) for lab in labels)


def from_corpus(corpus: Corpus, label_sep: str | None = None) -> Labelled:
    labels = corpus.label_sets if corpus.multilabel else split_labels(corpus.labels,
                                                                      label_sep)
    return Labelled(texts=corpus.texts, labels=labels, columns=dict(corpus.columns),
                    source=corpus.source)


def read_real(path: str, *, text_column: str = "text", label_column: str | None = "label",
              label_sep: str | None = None, extra_columns: tuple[str, ...] = ()) -> Labelled:
    """A real corpus (CSV/JSONL/Parquet/folder or ``demo:...``) for testing or as a ceiling."""
    corpus = read_corpus(path, text_column=text_column, label_column=label_column,
                         extra_columns=extra_columns, label_sep=label_sep)
    missing = [c for c in extra_columns if c not in corpus.columns]
    if missing:
        raise InputError(f"{path}: no column(s) {', '.join(missing)} for --group-columns")
    return from_corpus(corpus, label_sep)


def read_synthetic(path: str | Path) -> Labelled:
    """Read a synthetic corpus or a keyphrase file (JSONL)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    texts, labels, kps = [], [], []
    has_text = has_kp = False
    for rec in read_jsonl_records(path):
        n = rec["__row__"]  # "line N"
        text, kp = rec.get("text"), rec.get("keyphrases")
        if text is None and kp is None:
            raise InputError(f"{path}: {n} has neither 'text' nor 'keyphrases'")
        if kp is not None and not (isinstance(kp, list) and all(isinstance(k, str) for k in kp)):
            raise InputError(f"{path}: {n}: 'keyphrases' must be a list of strings")
        has_text |= text is not None
        has_kp |= kp is not None
        lab = rec.get("label")
        labels.append(tuple(map(str, lab)) if isinstance(lab, list) else
                      (None if lab is None else str(lab)))
        texts.append("" if text is None else str(text))
        kps.append(tuple(kp or ()))
    if not texts:
        raise InputError(f"{path}: the file holds no records")
    if has_text and any(not t.strip() for t in texts):
        bad = [i + 1 for i, t in enumerate(texts) if not t.strip()][:5]
        raise InputError(f"{path}: empty 'text' in record(s) {bad}")
    lab_out = None if all(x is None for x in labels) else tuple(labels)
    if lab_out is not None and any(x is None for x in lab_out):
        raise InputError(f"{path}: some records have a 'label' and others do not")
    if not has_text:  # keyphrase file: the text is the phrase sequence
        texts = [", ".join(k) for k in kps]
    return Labelled(texts=tuple(texts), labels=lab_out, source=str(path),
                    keyphrases=tuple(kps) if has_kp else None, keyphrase_only=not has_text)


def read_privacy_report(synthetic_path: str | Path) -> dict | None:
    """``privacy.json`` beside the synthetic file (or ``<stem>.privacy.json``), if any."""
    p = Path(synthetic_path)
    for cand in (p.with_name(p.stem + ".privacy.json"), p.with_name("privacy.json")):
        if cand.exists():
            try:
                return json.loads(cand.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise InputError(f"{cand}: not valid JSON ({e.msg})") from None
    return None


def guarantee(report: dict | None) -> dict | None:
    """``{"epsilon", "delta", "method"}`` from a privacy report, or None."""
    if not report or not isinstance(report.get("guarantee"), dict):
        return None
    g = report["guarantee"]
    return {k: g.get(k) for k in ("epsilon", "delta", "method")}
