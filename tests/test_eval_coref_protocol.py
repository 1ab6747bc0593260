"""The silver-coreference protocol on a few LitBank excerpts (real spaCy, real training)."""

from __future__ import annotations

import numpy as np
import pytest

from coref_helpers import litbank_texts
from dptext.evaluate.coref import CorefConfig, read_gold, silver_coreference
from dptext.evaluate.coref.model import CorefModel
from dptext.evaluate.coref.parsing import parse_gold, parse_texts
from dptext.evaluate.coref.protocol import shuffle_chains, split_gold
from dptext.evaluate.coref.readers import DEMO

CFG = CorefConfig(max_tokens=400, max_docs=5, max_gold_train=6, max_gold_test=3)


@pytest.fixture(scope="module")
def gold():
    return sorted(read_gold(DEMO), key=lambda d: d.name)[:12]


def test_split_is_fixed_by_name(gold):
    train, test = split_gold(list(reversed(gold)), 5)
    assert [d.name for d in test] == [gold[i].name for i in (0, 5, 10)]
    assert len(train) == 9 and not {d.name for d in train} & {d.name for d in test}
    with pytest.raises(ValueError, match="at least 2 gold documents"):
        split_gold(gold[:1], 5)


def test_shuffled_chains_keep_mentions_and_chain_sizes(gold):
    (p,) = parse_gold([gold[0].truncated(400)])
    (s,) = shuffle_chains([p], np.random.default_rng(0))
    assert np.array_equal(s.mentions, p.mentions)
    assert sorted(map(len, s.clusters())) == sorted(map(len, p.clusters()))
    assert sorted(map(sorted, s.clusters())) != sorted(map(sorted, p.clusters()))


def test_gold_and_silver_beat_the_shuffled_control(gold):
    """Silver chains from real passages (openings of other novels) train a model close to
    the gold one; the same mentions with shuffled chains do much worse."""
    real = litbank_texts(skip=12, n=5)
    res = silver_coreference(gold, real, real[:3], CFG)
    m = res["models"]
    assert res["n_gold_train"] == 6 and res["n_gold_test"] == 3
    assert res["caps"]["max_tokens"] == 400
    assert m["synthetic_silver"]["train_docs"] == 5 and m["private_silver"]["train_docs"] == 3
    assert m["gold"]["conll_f1"] > m["shuffled_control"]["conll_f1"] + 0.1
    assert m["synthetic_silver"]["conll_f1"] > m["shuffled_control"]["conll_f1"] + 0.05
    assert res["control_below_gold"] and res["control_below_synthetic"]
    # the control keeps the silver mentions: mention detection scores the same
    assert m["shuffled_control"]["mentions"]["f1"] == pytest.approx(
        m["synthetic_silver"]["mentions"]["f1"])
    assert 0.3 < m["gold"]["conll_f1"] < 1, {k: v["conll_f1"] for k, v in m.items()}


def test_a_corpus_without_mentions_teaches_nothing():
    """Silver documents with no mentions (e.g. a degenerate synthetic corpus) train a model
    that finds nothing; it neither fails nor invents chains."""
    empty = [p.annotated(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
             for p in parse_texts(["Yes.", "Oh, no!"], 50)]
    (pred,) = CorefModel().fit(empty).predict(parse_texts(["The man saw his dog. He ran."], 50))
    assert pred.clusters() == []
