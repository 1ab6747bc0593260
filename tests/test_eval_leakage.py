"""n-gram overlap, copied passages, entity leakage with context, canaries."""

from __future__ import annotations

import pytest

from dptext.corpus import Corpus
from dptext.evaluate.data import Labelled
from dptext.evaluate.leakage import (
    canary_search,
    copied_passages,
    entity_leakage,
    leakage_report,
    ngram_overlap,
    plant_canaries,
)


def test_ngram_overlap_by_hand():
    private = ["the cat sat on the mat"]
    synthetic = ["The cat sat down", "a dog"]
    r = ngram_overlap(synthetic, private, orders=(1, 2, 3))
    # synthetic unigrams {the,cat,sat,down,a,dog}: 3 in private -> 1/2
    assert r["overlap"]["1"] == pytest.approx(3 / 6)
    # bigrams {the cat, cat sat, sat down, a dog}: 2 shared -> 2/4
    assert r["overlap"]["2"] == pytest.approx(2 / 4)
    # trigrams {the cat sat, cat sat down}: 1 shared
    assert r["overlap"]["3"] == pytest.approx(1 / 2)
    assert r["shared"]["3"] == 1 and r["distinct_synthetic"]["3"] == 2


def test_copied_passages_are_synthetic_excerpts():
    private = ["one two three four five six seven eight nine"]
    synthetic = ["Zero ONE two three four five six seven eight, then ten."]
    p = copied_passages(synthetic, private, n=3)
    assert p == [{"doc": 0, "words": 8, "excerpt": "ONE two three four five six seven eight"}]


def test_entity_leakage_with_context_by_hand():
    private = ["Dr Alice Smith saw the patient in Boston today"]
    # entities given by hand (type, char start, char end): "Alice Smith", "Boston"
    ents = [[("PERSON", 3, 14), ("GPE", 34, 40)]]
    synthetic = ["yesterday dr alice smith called", "we flew to Boston"]
    r = entity_leakage(synthetic, private, entities=ents, contexts=(1, 2))
    assert r["n_private_entities"] == 2 and r["n_leaked"] == 2
    # k=1 contexts: "dr alice smith", "alice smith saw", "in boston", "boston today"
    assert r["n_contexts"]["1"] == 4
    assert r["n_leaked_with_context"]["1"] == 1  # only "dr alice smith"
    # k=2: "saw the patient"... -> none of them appear
    assert r["n_leaked_with_context"]["2"] == 0
    assert r["by_type"]["PERSON"] == {"private": 1, "leaked": 1}
    # examples come from the synthetic text
    assert all(e["synthetic_excerpt"] in " ".join(synthetic) for e in r["examples"])


def test_spacy_finds_and_matches_entities():
    pytest.importorskip("spacy")
    private = ["Barack Obama visited Microsoft in Seattle on Monday."]
    synthetic = ["Reports say Barack Obama likes tea."]
    r = entity_leakage(synthetic, private)
    assert r["by_type"].get("PERSON", {}).get("leaked") == 1


def test_canary_search_and_planting():
    canary = "The patient's contact number for emergencies is 541 545 6789."
    corpus = Corpus(texts=("a", "b"), labels=("x", "x"))
    planted = plant_canaries(corpus, [canary], repetitions=3)
    assert planted.texts.count(canary) == 3 and len(planted) == 5
    syn = ["call 541 545 6789 now", "the patient's contact number for emergencies is unknown"]
    r = canary_search(syn, [{"text": canary, "secret": "541 545 6789"}])
    row = r["canaries"][0]
    assert r["n_found"] == 0 and r["n_secret_found"] == 1
    # "the patient s contact number for emergencies is" (8 of 11 tokens)
    assert row["longest_run_words"] == 8
    assert row["canary_words"] == 11


def test_leakage_report_without_private_is_skipped_but_canaries_run():
    syn = Labelled(texts=("hello world",), labels=None)
    r = leakage_report(syn, None, canaries=["hello world"], ner=False)
    assert "skipped" in r and r["canaries"]["n_found"] == 1
