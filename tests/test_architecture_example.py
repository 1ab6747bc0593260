"""The toy generator of docs/architecture.md, run exactly as printed there: a fifth
generator is one module and one registration line, and gets the engine's budget policy,
resume and release folder for free."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import dptext
from dptext.corpus import Corpus
from dptext.generators import registry
from dptext.privacy import BudgetExceededError

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


@pytest.fixture
def topwords(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    module = next(b for b in blocks if "class TopWordsGenerator" in b)
    assert len(module.splitlines()) <= 40  # the promise of the doc: a small module
    (tmp_path / "topwords_example.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.GENERATORS, "topwords",
                        "topwords_example:TopWordsGenerator")
    yield
    sys.modules.pop("topwords_example", None)


def test_the_toy_generator_runs_through_the_engine(topwords, tmp_path):
    # 200 against 20 documents: at ε = 1 (σ ≈ 10.6 on each count) cough leaves the top
    # three only if it falls 180 below rash or dose, 12 sd of the difference; with 40
    # against 20 that happened in 6 % of runs (simulated at the released noise scale)
    corpus = Corpus(tuple(["fever and cough since monday"] * 200 + ["a rash after the dose"]
                          * 20), source="toy")
    out = tmp_path / "toy.jsonl"
    result = dptext.synthesize(corpus, "topwords", epsilon=1.0, out=out, budget_total=1.2)
    assert len(result.documents) == 10
    assert {"fever", "cough"} <= set(result.documents[0]["text"].split())
    assert [r["name"] for r in result.report["releases"]] == ["public-word counts"]
    assert result.report["guarantee"]["epsilon"] <= 1.0
    assert (tmp_path / "toy.release" / "documents.parquet").exists()
    again = dptext.synthesize(corpus, "topwords", epsilon=1.0, out=out, resume=True)
    assert again.report["releases"] == result.report["releases"]  # no new release
    with pytest.raises(BudgetExceededError):
        dptext.synthesize(corpus, "topwords", epsilon=1.0, out=tmp_path / "b.jsonl")
