"""The main job end to end with the recording backend: the privacy boundary (planted canary
documents never reach a prompt beyond terms the DP vocabulary released), ``dptext generate``
outputs, and ``--resume`` without new DP noise or repeated prompts."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

pytest.importorskip("dptext.text.vocabulary", reason="needs dptext.text (vocabularies)")
pytest.importorskip("dptext.embed", reason="needs dptext.embed")

from cli_output import said
from dptext.corpus import Corpus, read_corpus
from dptext.generators.kps import KeyphraseSeeder, KeyphraseSequence
from dptext.llm import PromptBuilder, generate_documents
from dptext.llm.recording import RecordingBackend

pytestmark = pytest.mark.slow

CANARY_WORDS = ("zorblaxite", "quenthrimor", "vexalophine", "glimmerwock", "flurmington")
CANARY_SENTENCES = (
    "Flurmington swallowed seventeen glimmerwocks beside the zorblaxite quarry at dawn.",
    "The quenthrimor ledger of Vexalophine Street was audited by a blind heron.",
    "Zorblaxite and quenthrimor prices collapsed when the glimmerwock harvest failed.",
)


def _embedder():
    from dptext.embed import load_embedder

    return load_embedder("model2vec", cache_dir="")


def _corpus_with_canaries() -> Corpus:
    bbc = read_corpus("demo:bbc-news/train")
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.choice(np.flatnonzero(np.asarray(bbc.labels) == c), 12,
                                     replace=False) for c in sorted(set(bbc.labels))])
    texts = [bbc.texts[i] for i in idx]
    labels = [bbc.labels[i] for i in idx]
    for k, sentence in enumerate(CANARY_SENTENCES):
        texts.append(" ".join([sentence] * 3 + list(CANARY_WORDS) * 4))
        labels.append(sorted(set(bbc.labels))[k])
    return Corpus(texts=tuple(texts), labels=tuple(labels), source="canary test")


def _vocab_file(tmp_path):
    from wordfreq import top_n_list

    # the canary words are in the PUBLIC vocabulary: the worst case, where only the DP
    # vocabulary histogram stands between them and the prompts
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join([*top_n_list("en", 5000), *CANARY_WORDS]) + "\n")
    return str(path)


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    w = re.findall(r"\w+", text.lower())
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def test_canary_documents_never_reach_a_prompt(tmp_path):
    corpus = _corpus_with_canaries()
    seeder = KeyphraseSeeder(vocab=_vocab_file(tmp_path), embedder=_embedder(),
                             epsilon_vocab=1.0, epsilon_kde=5.0, vocab_size=500, features=300,
                             length=8, method="iterative",
                             labels=tuple(sorted(set(corpus.labels))))
    seeder.fit(corpus, rng=np.random.default_rng(1))
    seqs = seeder.sample(4, rng=np.random.default_rng(2))
    released = set(seeder.released_vocabulary_)
    rec = RecordingBackend()
    docs = generate_documents(seqs, rec, PromptBuilder("news article"))
    assert len(docs) == len(seqs) == 20 and len(rec.prompts) == 20
    prompts = [p.text().lower() for p in rec.prompts]
    for word in CANARY_WORDS:
        if any(word in p for p in prompts):
            assert word in released, f"canary word {word!r} reached a prompt unreleased"
    for sentence in CANARY_SENTENCES:
        assert all(sentence.lower() not in p for p in prompts)
    # no 6 consecutive words of ANY private document appear in any prompt
    private = set().union(*(_ngrams(t, 6) for t in corpus.texts))
    for p in prompts:
        assert not (_ngrams(p, 6) & private)
    # every keyphrase in a prompt is a released term; labels never appear in prompts
    for s, p in zip(seqs, rec.prompts, strict=True):
        assert set(s.keyphrases) <= released
        assert f"- {s.label}\n" not in p.text() or s.label in released


def _write_csv(path, corpus: Corpus) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(zip(corpus.texts, corpus.labels, strict=True))


@pytest.fixture
def model2vec_strings(monkeypatch):
    """Share one loaded model2vec embedder between the CLI runs of a test."""
    emb = _embedder()
    orig = KeyphraseSeeder.fit

    def fit(self, corpus, **kw):
        if isinstance(self.embedder, str):
            self.embedder = emb
        return orig(self, corpus, **kw)

    monkeypatch.setattr(KeyphraseSeeder, "fit", fit)


def _cli(args):
    from typer.testing import CliRunner

    from dptext.cli import app

    return CliRunner().invoke(app, args, catch_exceptions=False)


def test_generate_command_and_resume(tmp_path, model2vec_strings, monkeypatch):
    # (no $DPTEXT_CACHE override: the embedder's model cache is shared; --no-cache below)
    from dptext.llm import recording

    answer = recording._default_answer  # each document opens with its type as a label
    monkeypatch.setattr(recording, "_default_answer",
                        lambda p: answer(p).replace("\n\n", "\n\nMedical Record: ", 1))
    data = tmp_path / "notes.csv"
    _write_csv(data, _corpus_with_canaries())
    out = tmp_path / "synthetic.jsonl"
    args = ["generate", "--input", str(data), "--text-column", "text", "--label-column",
            "label", "--document-type", "medical record", "--epsilon-vocab", "1",
            "--epsilon-kde", "5", "--out", str(out), "--llm", "recording:", "--vocab",
            _vocab_file(tmp_path), "--embedder", "model2vec", "--features", "200",
            "--vocab-size", "300", "--sequences-per-class", "3",
            "--labels", "business,entertainment,politics,sports,tech",
            "--model", "kde", "--select", "none", "--no-progress", "--no-cache", "--seed", "5"]
    r = _cli(args)
    assert r.exit_code == 0, r.output
    # the recording backend's answers neither loop nor refuse: the counters say so
    assert "loops 0 retried / 0 trimmed, refusals 0 retried / 0 left" in said(r.output)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 15
    assert all(set(d) == {"text", "label", "keyphrases"} for d in lines)
    # the preamble and the label restating --document-type cleaned off
    assert all(d["text"].startswith("The note mentions") for d in lines)
    report = json.loads((tmp_path / "synthetic.privacy.json").read_text())
    assert 0 < report["guarantee"]["epsilon"] <= 6.0 + 1e-9  # composed from the ledger
    assert report["parameters"]["llm"] == "recording"
    # the dataset card: the KDE's parameters, none of the histogram models' (issue #58)
    card = (tmp_path / "synthetic.release" / "README.md").read_text(encoding="utf-8")
    assert "`features`: 200" in card and "`epsilon_kde`: 5" in card
    assert "`histogram_terms`" not in card and "`selection_margin`" not in card
    assert "- KDE sketch sums, one per class (5, on disjoint documents" in card
    run = tmp_path / "synthetic.jsonl.run"
    seqs = (run / "state.json").read_text()  # the released sequences
    ledger = (run / "ledger.json").read_text()
    journal = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == 15
    # the journal's prompts (built from released objects) hold no canary sentence
    jtext = json.dumps([j["prompt"] for j in journal]).lower()
    assert not any(s.lower() in jtext for s in CANARY_SENTENCES)

    # an interrupted run: drop the last 5 journal records and the output, then --resume
    (run / "journal.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal[:10]))
    out.unlink()
    r = _cli(args)  # without --resume: refuses to overwrite the run
    assert r.exit_code == 2 and "--resume" in r.output
    r = _cli([*args, "--resume"])
    assert r.exit_code == 0, r.output
    assert "10 from the journal" in said(r.output) and "5 generated" in said(r.output)
    assert (run / "state.json").read_text() == seqs      # no new DP noise
    assert (run / "ledger.json").read_text() == ledger
    assert [json.loads(x) for x in out.read_text().splitlines()] == lines
    # changing a release option is refused on resume
    bad = [*args, "--resume"]
    bad[bad.index("--epsilon-kde") + 1] = "3"
    r = _cli(bad)
    assert r.exit_code == 2 and "epsilon_kde" in r.output


def test_bad_template_fails_before_any_release(tmp_path):
    tpl = tmp_path / "t.txt"
    tpl.write_text("Write about {label}: {keyphrases}")
    r = _cli(["generate", "--input", str(tmp_path / "missing.csv"), "--out",
              str(tmp_path / "o.jsonl"), "--prompt-template", str(tpl), "--llm", "recording:"])
    assert r.exit_code == 2 and "not allowed" in r.output
    assert not (tmp_path / "o.jsonl.run").exists()


def test_a_few_shot_example_from_the_private_corpus_changes_nothing(tmp_path,
                                                                   model2vec_strings):
    """Few-shot examples must be public; they are not compared with the private corpus
    (a refusal would tell whoever supplies them whether a text is in it). A run whose
    example is a private document makes the same releases and documents as one whose
    example is public (their noise differs from run to run, so only their records compare)."""
    corpus = _corpus_with_canaries()
    data = tmp_path / "notes.csv"
    _write_csv(data, corpus)
    public = read_corpus("demo:bbc-news/test").texts[0][:300]
    shots = tmp_path / "shots.txt"
    runs = {}
    for name, example in (("private", corpus.texts[0][:300]), ("public", public)):
        shots.write_text(example)
        out = tmp_path / name / "o.jsonl"
        r = _cli(["generate", "--input", str(data), "--label-column", "label", "--out",
                  str(out), "--few-shot", str(shots), "--llm", "recording:", "--vocab",
                  _vocab_file(tmp_path), "--embedder", "model2vec", "--features", "200",
                  "--vocab-size", "300", "--sequences-per-class", "1", "--no-progress",
                  "--labels", "business,entertainment,politics,sports,tech", "--no-cache",
                  "--seed", "5"])
        assert r.exit_code == 0, r.output
        assert len(out.read_text().splitlines()) == 5
        report = json.loads(out.with_name("o.privacy.json").read_text())
        journal = (tmp_path / name / "o.jsonl.run" / "journal.jsonl").read_text()
        assert example.split()[0] in journal  # the example reached the prompts as given
        assert "appears in the private corpus" not in said(r.output)
        runs[name] = [(x["name"], x["mechanism"], x["epsilon"], x["delta"])
                      for x in report["releases"]]
    assert runs["private"] == runs["public"]


def test_sequences_roundtrip_through_the_document_stage():
    seqs = [KeyphraseSequence("a", ("x", "y"))]
    docs = generate_documents(seqs, RecordingBackend(), PromptBuilder("note"))
    assert docs[0].keyphrases == ("x", "y") and docs[0].label == "a"
