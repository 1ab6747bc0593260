"""Session fixtures of the evaluation tests (registered in conftest.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dptext.cli import app
from dptext.corpus import read_corpus, write_jsonl

CANARY = "Pt Robin Kramer was admitted to the hospital at 789 Elmford St, Maplegreen."


def _slice(corpus, n_per_class, offset=0):
    idx = []
    for ix in corpus.class_indices().values():
        idx.extend(ix[offset:offset + n_per_class].tolist())
    return corpus.subset(idx)


@pytest.fixture(scope="session")
def bbc_report(tmp_path_factory):
    """A real report: BBC train slice as 'synthetic', BBC test slice as real test."""
    d = tmp_path_factory.mktemp("bbc")
    train, test = read_corpus("demo:bbc-news/train"), read_corpus("demo:bbc-news/test")
    syn, private = _slice(train, 6), _slice(train, 12, offset=6)
    test = _slice(test, 8)
    unl = _slice(read_corpus("demo:bbc-news/test"), 3, offset=8)
    # the canary "leaks": it is planted in one synthetic document
    texts = list(syn.texts)
    texts[0] = texts[0] + " " + CANARY
    write_jsonl(({"text": t, "label": lab, "keyphrases": []}
                 for t, lab in zip(texts, syn.labels, strict=True)), d / "synthetic.jsonl")
    (d / "privacy.json").write_text(json.dumps(
        {"guarantee": {"epsilon": 6.0, "delta": 1e-5, "method": "test"}, "releases": []}))
    rng = np.random.default_rng(0)
    pd.DataFrame({"text": test.texts, "label": test.labels,
                  "sex": rng.choice(["F", "M"], len(test))}).to_csv(d / "test.csv", index=False)
    pd.DataFrame({"text": private.texts, "label": private.labels}).to_csv(d / "train.csv",
                                                                          index=False)
    pd.DataFrame({"text": unl.texts}).to_csv(d / "client.csv", index=False)
    (d / "canaries.jsonl").write_text(json.dumps({"text": CANARY, "secret": "Robin Kramer"})
                                      + "\n")
    out = d / "report"
    res = CliRunner().invoke(app, [
        "evaluate", "--synthetic", str(d / "synthetic.jsonl"), "--real-test", str(d / "test.csv"),
        "--real-unlabeled", str(d / "client.csv"), "--private", str(d / "train.csv"),
        "--group-columns", "sex", "--canaries", str(d / "canaries.jsonl"),
        "--coherence-max-docs", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out
