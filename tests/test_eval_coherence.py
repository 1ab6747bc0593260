"""NLI coherence: the contradiction model checked on hand-labelled pairs; S_NLI; filter."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dptext.evaluate.coherence import nli_scores, rank_and_filter, sentence_pairs

# Hand-labelled sentence pairs: True = the second contradicts the first.
LABELLED_PAIRS = [
    ("The man is sleeping in his bed.", "The man is running a marathon.", True),
    ("The patient was discharged home yesterday.", "The patient remains in the ICU today.",
     True),
    ("The cat is black.", "The cat is white.", True),
    ("The store is open on Sundays.", "The store is closed on Sundays.", True),
    ("It is raining heavily.", "The weather is dry and sunny.", True),
    ("The team won the match.", "The team lost the match.", True),
    ("The patient has no known allergies.", "The patient is severely allergic to penicillin.",
     True),
    ("The child lives with her mother.", "The child has never met her mother.", True),
    ("Blood pressure was normal.", "Blood pressure was dangerously high.", True),
    ("The meeting was cancelled.", "The meeting went ahead as planned.", True),
    ("He bought a new car.", "The car is red.", False),
    ("She lives in Paris.", "She enjoys French food.", False),
    ("The meeting starts at noon.", "Lunch will be served afterwards.", False),
    ("The patient reported chest pain.", "An ECG was ordered.", False),
    ("The company reported record profits.", "Its shares rose sharply.", False),
    ("The caseworker visited the family.", "The children were at school.", False),
    ("The striker scored twice.", "His team won the cup.", False),
    ("The new phone has a larger screen.", "It also has a better camera.", False),
    ("The nurse checked the dressing.", "The wound was healing well.", False),
    ("The film opened last week.", "Critics praised the lead actor.", False),
]


@pytest.fixture(scope="module")
def onnx_model():
    pytest.importorskip("onnxruntime")
    from dptext.evaluate.coherence import get_model

    try:
        model = get_model("onnx")
        model.contradiction_prob([("a", "b")])
    except ImportError as e:
        pytest.skip(str(e))
    return model


def test_onnx_contradiction_model_on_labelled_pairs(onnx_model):
    probs = onnx_model.contradiction_prob([(a, b) for a, b, _ in LABELLED_PAIRS])
    truth = np.array([c for _, _, c in LABELLED_PAIRS])
    pred = probs >= 0.5
    accuracy = float(np.mean(pred == truth))
    assert accuracy >= 0.85, (accuracy, np.round(probs, 2).tolist())


class FakeNLI:
    """Contradiction iff the second sentence contains 'not'."""

    def contradiction_prob(self, pairs):
        return np.array([1.0 if " not " in f" {b} " else 0.0 for _, b in pairs])


def test_nli_score_by_hand():
    texts = ["A is here. B is not here. C is here.", "Only one sentence.", "X. Y. Z."]
    # doc 0: pairs (A,B)=contradiction, (B,C)=fine -> 1/2; doc 1: no pairs -> 1; doc 2: 1
    assert nli_scores(texts, FakeNLI()).tolist() == [0.5, 1.0, 1.0]
    assert sentence_pairs("One. Two! Three?") == [("One.", "Two!"), ("Two!", "Three?")]


def test_rank_and_filter():
    scores = np.array([0.5, 1.0, 0.0, 1.0])
    assert rank_and_filter(["a"] * 4, scores).tolist() == [1, 3, 0, 2]
    assert rank_and_filter(["a"] * 4, scores, min_score=0.5).tolist() == [1, 3, 0]
    assert rank_and_filter(["a"] * 4, scores, keep_fraction=0.5).tolist() == [1, 3]


def test_filter_cli_keeps_coherent_docs(tmp_path, onnx_model):
    from typer.testing import CliRunner

    from dptext.cli import app

    src = tmp_path / "syn.jsonl"
    docs = ["The store is open on Sundays. The store is closed on Sundays.",
            "The patient reported chest pain. An ECG was ordered."]
    src.write_text("".join(json.dumps({"text": t, "label": "x"}) + "\n" for t in docs))
    (tmp_path / "privacy.json").write_text('{"guarantee": {"epsilon": 1}}')
    out = tmp_path / "out" / "kept.jsonl"
    res = CliRunner().invoke(app, ["filter", "--input", str(src), "--out", str(out),
                                   "--min-score", "1"])
    assert res.exit_code == 0, res.output
    kept = [json.loads(x) for x in out.read_text().splitlines()]
    assert [k["text"] for k in kept] == [docs[1]] and kept[0]["nli_score"] == 1.0
    assert (out.parent / "privacy.json").exists()


def test_llm_judge_adapter_parses_answers():
    from dptext.evaluate.coherence import LLMJudgeNLI

    prompts = []

    def complete(prompt):
        prompts.append(prompt)
        return " Yes." if "closed" in prompt else "no"

    judge = LLMJudgeNLI(complete)
    p = judge.contradiction_prob([("It is open.", "It is closed."), ("A.", "B.")])
    assert p.tolist() == [1.0, 0.0] and "Sentence 2: It is closed." in prompts[0]
