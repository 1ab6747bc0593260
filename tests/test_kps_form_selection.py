"""``form="auto"`` (the default): the form profile is released before the private
selection, which scores every candidate model with and without a form and so decides
whether the sequences (and the prompts) carry one. A corpus whose classes differ only in
form gets it; one whose form tells nothing does not, and its prompts state none."""

from __future__ import annotations

import csv
import json

import numpy as np
import scipy.sparse
from typer.testing import CliRunner

from cli_output import said
from dptext.corpus import Corpus
from dptext.generators.kps.form import FORM_NAME, FormProfile
from dptext.generators.kps.selection import candidate_correct, embedded, form_features
from dptext.llm import PromptBuilder, generate_documents
from dptext.llm.recording import RecordingBackend
from dptext.text.form import FORM_DIMENSION, form_vectors
from test_kps_models import TERMS, _seeder

#: selection ε ≈ 2.5 (its 5 % share) and a wide margin: a with-form candidate is chosen
#: only when it removes half the errors of the first candidate (no form)
OPTIONS = {"epsilon": 50.0, "selection_margin": 0.5}


def _form_corpus(n: int = 60, seed: int = 0) -> Corpus:
    """Both classes draw their words from all the terms alike; they differ in form only:
    short tweets with a hashtag and a bbc.in link, or long plain sentences."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(n):
        texts.append(" ".join(rng.choice(TERMS, 5)) + " #news http://bbc.in/x")
        labels.append("fruit")
        texts.append(" ".join(rng.choice(TERMS, 40)) + ".")
        labels.append("sport")
    return Corpus(texts=tuple(texts), labels=tuple(labels))


def _term_corpus(n: int = 60, seed: int = 0) -> Corpus:
    """Classes told apart (imperfectly) by their terms; every document has the same form."""
    rng = np.random.default_rng(seed)
    own = {"fruit": TERMS[:6], "sport": TERMS[6:]}
    texts, labels = [], []
    for _ in range(n):
        for label, other in (("fruit", "sport"), ("sport", "fruit")):
            words = [rng.choice(own[label] if rng.random() < 0.65 else own[other])
                     for _ in range(6)]
            texts.append(" ".join(words) + ".")
            labels.append(label)
    return Corpus(texts=tuple(texts), labels=tuple(labels))


def _prompts(seqs) -> list[str]:
    rec = RecordingBackend()
    generate_documents(seqs, rec, PromptBuilder("tweet"))
    return [p.messages[-1].content for p in rec.prompts]


def test_form_is_chosen_where_it_tells_the_classes_apart():
    seeder = _seeder(**OPTIONS).fit(_form_corpus(), rng=np.random.default_rng(0))
    assert seeder.selection_["form"] is True
    assert FORM_NAME in [r.name for r in seeder.ledger_.releases]
    seqs = seeder.sample(4, rng=np.random.default_rng(1))
    forms = {s.label: s.form for s in seqs}
    assert "bbc.in link" in forms["fruit"] and "link" not in forms["sport"]
    assert all(p.endswith(s.form) for p, s in zip(_prompts(seqs), seqs, strict=True))
    assert any("the private selection chose to use it" in line
               for line in seeder.summary_lines())
    assert seeder.ledger_.guarantee().epsilon <= OPTIONS["epsilon"] + 1e-9


def test_form_is_not_chosen_where_it_tells_nothing_and_the_prompts_state_none():
    seeder = _seeder(**OPTIONS).fit(_term_corpus(), rng=np.random.default_rng(0))
    assert seeder.selection_["form"] is False
    # released (it had to be, to be scored) and paid for, but not used
    assert FORM_NAME in [r.name for r in seeder.ledger_.releases]
    assert seeder.form_profile_ is None
    seqs = seeder.sample(4, rng=np.random.default_rng(1))
    assert all(s.form is None for s in seqs)
    assert not any("Its form" in p for p in _prompts(seqs))
    assert any("chose not to use it: the prompts state no form" in line
               for line in seeder.summary_lines())


def test_without_a_selection_auto_releases_no_form():
    seeder = _seeder(model="histogram", select="none").fit(_form_corpus(),
                                                           rng=np.random.default_rng(0))
    assert FORM_NAME not in [r.name for r in seeder.ledger_.releases]
    assert "form" not in seeder.selection_ and seeder.form_profile_ is None


def test_a_document_moves_only_its_own_score_with_a_form():
    """The sensitivity ``margin_scores`` states holds for the with-form scores too: each
    validation document's 0/1 entry depends on it alone (the classifier is trained on
    sequences and forms drawn from the releases, never on the scored documents), so
    removing one document removes its entry and changes no other."""
    corpus = _form_corpus(40)
    seeder = _seeder(**OPTIONS).fit(corpus, rng=np.random.default_rng(0))
    rows = np.zeros(FORM_DIMENSION)
    profile = FormProfile({c: rows + 50.0 * i for i, c in enumerate(("fruit", "sport"))}, 1.0)
    terms = seeder.embeddings_
    x_terms = embedded(scipy.sparse.csr_matrix(
        np.ones((len(corpus), len(terms)))), terms)
    x = np.hstack([x_terms, form_features(form_vectors(corpus.texts))])
    y = np.array([0 if lab == "fruit" else 1 for lab in corpus.labels])

    def correct(keep):
        return candidate_correct(seeder.model_, ["fruit", "sport"], x[keep], y[keep],
                                 term_embeddings=terms, per_class=20, length=3,
                                 rng=np.random.default_rng(5), form_profile=profile)

    full = correct(np.arange(len(corpus)))
    for drop in (0, 7, len(corpus) - 1):
        keep = np.delete(np.arange(len(corpus)), drop)
        assert correct(keep).tolist() == np.delete(full, drop).tolist()


def test_draw_vectors_are_one_hot_per_block_like_a_documents():
    profile = FormProfile({"a": form_vectors(["#news http://bbc.in/x short"])[0] * 100.0},
                          noise_scale=1.0)
    drawn = profile.draw_vectors("a", 5, np.random.default_rng(0))
    assert drawn.shape == (5, FORM_DIMENSION)
    assert (drawn == form_vectors(["#news http://bbc.in/x short"] * 5)).all()


def test_generate_by_default_reports_the_form_release_and_the_choice(tmp_path):
    data = tmp_path / "tweets.csv"
    corpus = _form_corpus()
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(zip(corpus.texts, corpus.labels, strict=True))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(TERMS) + "\n")
    out = tmp_path / "synthetic.jsonl"
    args = ["generate", "--input", str(data), "--text-column", "text", "--label-column",
            "label", "--labels", "fruit,sport", "--document-type", "tweet",
            "--epsilon", "50", "--vocab", str(vocab), "--vocab-size", str(len(TERMS)),
            "--terms-per-doc", "4", "--length", "3", "--sequences-per-class", "3",
            "--llm", "recording:", "--embedder", "model2vec", "--out", str(out),
            "--no-progress", "--no-cache", "--seed", "3"]
    r = CliRunner().invoke(__import__("dptext.cli", fromlist=["app"]).app, args,
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "the private selection chose to use it" in said(r.output)
    report = json.loads((tmp_path / "synthetic.privacy.json").read_text())
    assert FORM_NAME in [x["name"] for x in report["releases"]]
    assert report["parameters"]["model_selection"]["form"] is True
    card = (tmp_path / "synthetic.release" / "README.md").read_text()
    assert f"| {FORM_NAME} [class=fruit] | gaussian |" in card
