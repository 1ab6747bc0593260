"""DP-KPS's form profile (``--form``): the public form features of a document, their
per-class Gaussian release (sensitivity, parallel composition, the plan), the form drawn
with each sequence and stated in its prompt (and nothing private), and ``dptext generate
--form on`` end to end. With ``form=False`` the plan's releases are as before the
profile; the default ``form="auto"`` (the private selection decides) is in
``test_kps_form_selection.py``."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from cli_output import said
from dptext.audits import AUDITS
from dptext.audits.form import audit_form_profile
from dptext.corpus import Corpus
from dptext.generators.kps.form import (
    FORM_GROUP,
    FORM_NAME,
    FormProfile,
    form_sensitivity,
    release_form_profile,
)
from dptext.generators.kps.selection import SELECTION_NAME
from dptext.llm import PromptBuilder, generate_documents
from dptext.llm.recording import RecordingBackend
from dptext.privacy import NoiseSpec, PrivacyLedger
from dptext.text.form import (
    FORM_BLOCKS,
    FORM_DIMENSION,
    OFFSETS,
    FormCounts,
    form_instruction,
    form_values,
    form_vectors,
)
from test_kps_models import TERMS, _corpus, _seeder

TWEET = "Ebola spreads in #Guinea: WHO counts 200 cases in 3 weeks http://bbc.in/1xYz"
LISTING = "Packing list\n\n- 2 kg of rice\n- a torch\n- \"spare\" batteries"
VERDICT = "Terrible drug, the worst side effects I ever had."
CANARY = "Zorblaxite quenthrimor vexalophine glimmerwock flurmington."


def test_features_of_hand_made_texts():
    tweet, listing, verdict = (form_values(t) for t in (TWEET, LISTING, VERDICT))
    assert tweet["link"] == "bbc.in" and tweet["hashtags"] == "yes"
    assert tweet["colon"] == "yes" and tweet["number with unit"] == "yes"
    assert tweet["length"] == "8" and tweet["list"] == "no"  # 12 words, the URL not counted
    assert listing["list"] == "yes" and listing["title line"] == "yes"
    assert listing["paragraphs"] == "yes" and listing["quote"] == "yes"
    assert listing["link"] == "none" and listing["hashtags"] == "no"
    assert verdict["tone"] in ("negative", "very negative") and verdict["length"] == "8"
    assert form_values("Lovely, wonderful, happy day!")["tone"] in ("positive", "very positive")
    assert form_values("see https://example.org/a")["link"] == "other"
    assert form_values("RT @nhs: stay safe 😷")["mentions"] == "yes"
    assert form_values("RT @nhs: stay safe 😷")["emoji"] == "yes"
    said = form_instruction(form_values(TWEET))
    assert said.startswith("Its form: about 11 words;") and "ends with a bbc.in link" in said
    assert "uses hashtags" in said and "tone." in said
    assert "fewer than 8 words" in form_instruction(form_values("Short one."))


def test_every_document_is_one_hot_per_block_so_its_norm_is_the_stated_sensitivity():
    texts = [TWEET, LISTING, VERDICT, "", "x" * 5000, CANARY * 300]
    vectors = form_vectors(texts)
    assert vectors.shape == (len(texts), FORM_DIMENSION)
    for start, values in zip(OFFSETS, FORM_BLOCKS.values(), strict=True):
        assert (vectors[:, start:start + len(values)].sum(axis=1) == 1).all()
    sens = form_sensitivity()
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(sens.l2)
    assert np.abs(vectors).sum(axis=1) == pytest.approx(sens.l1)
    assert sens.l2 == pytest.approx(math.sqrt(len(FORM_BLOCKS)))
    # per class sums of one batch; a document in no class (−1) counts nowhere
    sums = FormCounts(2)([(TWEET, 0), (LISTING, 1), (VERDICT, 1), (CANARY, -1)])
    assert sums.tolist() == [vectors[0].tolist(), (vectors[1] + vectors[2]).tolist()]
    assert FormCounts(2)([]).shape == (2, FORM_DIMENSION)


def test_one_release_per_class_in_parallel_with_the_stated_sensitivity():
    ledger = PrivacyLedger()
    items = [(TWEET, 0), (LISTING, 1), (VERDICT, 1)]
    profile = release_form_profile(items, ["a", "b"], NoiseSpec("gaussian", 1.0, 1e-5),
                                   ledger)
    assert set(profile.sums) == {"a", "b"} and len(ledger.releases) == 2
    for r in ledger.releases:
        assert r.name == FORM_NAME and r.parallel_group == FORM_GROUP
        assert r.sensitivity == pytest.approx(math.sqrt(len(FORM_BLOCKS)))
        assert r.dimension == FORM_DIMENSION and "one-hot" in r.sensitivity_reason
    assert ledger.guarantee().epsilon == pytest.approx(1.0)  # parallel: one class's ε
    assert profile.noise_scale == ledger.releases[0].noise_scale


def test_the_profile_draws_forms_in_proportion_above_the_noise_floor():
    block = {b: np.zeros(len(v)) for b, v in FORM_BLOCKS.items()}
    block["length"][1] = 60.0  # 8-14 words
    block["length"][2] = 40.0  # 15-24 words
    links = FORM_BLOCKS["link"]
    block["link"][links.index("bbc.in")] = 100.0
    block["link"][links.index("cnn.it")] = 3.0  # below the floor of 2σ = 4: read as noise
    block["tone"][:] = -1.0  # all non-positive: the largest noisy sum takes all
    block["tone"][3] = -0.5
    for flag in list(FORM_BLOCKS)[3:]:
        block[flag][0] = 100.0
    row = np.concatenate(list(block.values()))
    profile = FormProfile({"a": row}, noise_scale=2.0)
    forms = [form_instruction(v) for v in profile.draw("a", 2000, np.random.default_rng(0))]
    assert all(f.endswith("it ends with a bbc.in link; a positive tone.") for f in forms)
    share = sum("about 11 words" in f for f in forms) / len(forms)
    assert 0.55 < share < 0.65  # 60 : 40
    assert profile.draw("a", 0, np.random.default_rng(0)) == []


def _row(length: dict[int, float], link: dict[str, float], size: float) -> np.ndarray:
    """A class's form sum: the given length and link cells, the other blocks at one value."""
    block = {b: np.zeros(len(v)) for b, v in FORM_BLOCKS.items()}
    for i, x in length.items():
        block["length"][i] = x
    for domain, x in link.items():
        block["link"][FORM_BLOCKS["link"].index(domain)] = x
    block["tone"][2] = size
    for flag in list(FORM_BLOCKS)[3:]:
        block[flag][0] = size
    return np.concatenate(list(block.values()))


def test_a_small_class_borrows_the_pooled_forms_and_large_ones_keep_their_own():
    """A class of 12 documents whose true length cells (70-119 and 120-199 words) sit
    below the floor of 2σ = 20 while noise pushed 8-14 words above it: on its own it
    would be 8-14 words every time; shrunk, it takes the corpus's lengths. Two large
    classes keep their own link and lengths."""
    small = _row({1: 22.0, 5: 7.0, 6: 5.0}, {"none": 12.0}, 12.0)
    big_a = _row({5: 900.0, 6: 100.0}, {"bbc.in": 1000.0}, 1000.0)
    big_b = _row({5: 800.0, 4: 200.0}, {"cnn.it": 1000.0}, 1000.0)
    profile = FormProfile({"small": small, "a": big_a, "b": big_b}, noise_scale=10.0)
    length = profile.distributions("small")[0]
    assert length[1] < 0.1 and length[5] > 0.7
    for label, domain in (("a", "bbc.in"), ("b", "cnn.it")):
        got = profile.distributions(label)
        assert got[1][FORM_BLOCKS["link"].index(domain)] > 0.99
    assert profile.distributions("a")[0][5] > 0.85
    # without noise each class is its own (the rule on its own: normalised sums)
    exact = FormProfile({"small": small, "a": big_a}, noise_scale=0.0)
    assert exact.distributions("small")[0][1] == pytest.approx(22 / 34)


def test_the_plan_adds_one_form_release_with_form_or_auto_with_a_selection():
    """form=False: the releases of the plan before the form profile existed; True: one
    more, last; "auto" (the default): one more, before the private selection, only where
    one runs under a total ε (not on the paper's path, nor on an unlabelled corpus, nor
    under per-stage budgets, where each stage is exactly the ε it is given)."""
    for kw in ({}, {"model": "kde", "select": "none"}, {"labels": None},
               {"epsilon": None, "epsilon_vocab": 1.0, "epsilon_kde": 2.0}):
        plain = _seeder(**kw, form=False).planned_releases()
        assert FORM_NAME not in [r.name for r in plain]
        with_form = _seeder(**kw, form=True).planned_releases()
        assert [r.name for r in with_form] == [r.name for r in plain] + [FORM_NAME]
        assert with_form[-1].parallel_group == FORM_GROUP
        auto = _seeder(**kw).planned_releases()
        if kw.get("select") == "none" or kw.get("epsilon_vocab"):
            assert auto == plain
            continue
        names = [r.name for r in plain]
        at = names.index(SELECTION_NAME)  # the form profile just before the selection
        assert [r.name for r in auto] == [*names[:at], FORM_NAME, *names[at:]]
    assert FORM_NAME not in [r.name for r in _seeder().planned_releases(labelled=False)]


@pytest.mark.parametrize("kw", [{}, {"selection_split": "holdout", "model": "hybrid"}])
def test_fit_with_form_stays_within_the_total_epsilon(kw):
    seeder = _seeder(form=True, form_share=0.2, **kw)
    planned = seeder.planned_releases()
    seeder.fit(_corpus(), rng=np.random.default_rng(0))
    made = [r for r in seeder.ledger_.releases if r.name == FORM_NAME]
    assert len(made) == 2 and made[0].epsilon <= planned[-1].epsilon * (1 + 1e-9)
    assert seeder.ledger_.guarantee().epsilon <= 8.0 + 1e-9


def test_bad_form_options_are_refused():
    with pytest.raises(ValueError, match="form_share"):
        _seeder(form=True, form_share=1.5).planned_releases()
    with pytest.raises(ValueError, match="form must be"):
        _seeder(form="yes").planned_releases()


def test_the_drawn_form_reaches_the_prompt_and_no_private_text_does():
    base = _corpus(40)
    corpus = Corpus(texts=(*base.texts, CANARY), labels=(*base.labels, "fruit"))
    seeder = _seeder(form=True).fit(corpus, rng=np.random.default_rng(0))
    seqs = seeder.sample(5, rng=np.random.default_rng(1))
    assert all(s.form and s.form.startswith("Its form:") for s in seqs)
    assert seqs[0].from_dict(seqs[0].to_dict()) == seqs[0]
    rec = RecordingBackend()
    generate_documents(seqs, rec, PromptBuilder("tweet"))
    assert len(rec.prompts) == len(seqs)
    for s, p in zip(seqs, rec.prompts, strict=True):
        assert p.messages[-1].content.endswith(s.form)
    prompts = " ".join(p.text().lower() for p in rec.prompts)
    assert not any(w in prompts for w in CANARY.lower().rstrip(".").split())
    private_words = {w for t in corpus.texts for w in t.split() if w not in TERMS}
    assert not any(w in prompts.split() for w in private_words)  # the docNNN ids
    # without it: no form, and the prompt is as before
    plain = _seeder(form=False).fit(corpus, rng=np.random.default_rng(0)).sample(
        1, rng=np.random.default_rng(1))
    assert all(s.form is None and "form" not in s.to_dict() for s in plain)


def test_a_template_may_place_the_form():
    from dptext.llm import PromptTemplate

    t = PromptTemplate("Write a {document_type} ({form}) with:\n{keyphrases}")
    _, user = t.render("tweet", ["a"], "Its form: about 11 words.")
    assert user == "Write a tweet (Its form: about 11 words.) with:\n- a"
    assert t.render("tweet", ["a"])[1] == "Write a tweet () with:\n- a"


def test_the_audit_row_is_registered():
    assert "form" in AUDITS


@pytest.mark.statistical
def test_form_audit_within_claim_and_its_broken_variants_caught():
    honest = audit_form_profile(confidence=0.999)
    assert not honest.violation and honest.claimed_epsilon == pytest.approx(2.0)
    assert 0.5 < honest.epsilon_lower_bound <= honest.claimed_epsilon  # the audit has power
    for variant in ("half-noise", "unbounded"):
        assert audit_form_profile(broken=variant).violation, variant


def test_generate_with_form_end_to_end(tmp_path):
    data = tmp_path / "tweets.csv"
    rng = np.random.default_rng(0)
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for label, words, link in (("fruit", TERMS[:6], "bbc.in"),
                                   ("sport", TERMS[6:], "cnn.it")):
            for _ in range(150):
                w.writerow([" ".join(rng.choice(words, 8)) + f" #news http://{link}/x",
                            label])
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(TERMS) + "\n")
    out = tmp_path / "synthetic.jsonl"
    args = ["generate", "--input", str(data), "--text-column", "text", "--label-column",
            "label", "--labels", "fruit,sport", "--document-type", "tweet",
            "--epsilon", "8", "--vocab", str(vocab), "--vocab-size", str(len(TERMS)),
            "--terms-per-doc", "4", "--length", "3", "--model", "histogram",
            "--select", "none", "--sequences-per-class", "4", "--llm", "recording:",
            "--out", str(out), "--no-progress", "--no-cache", "--seed", "3"]
    r = CliRunner().invoke(__import__("dptext.cli", fromlist=["app"]).app,
                           [*args, "--form", "on"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "placeholders or scaffolding 0 retried / 0 left" in said(r.output)
    assert "form profile: per class, 15 public form features released" in said(r.output)
    report = json.loads((tmp_path / "synthetic.privacy.json").read_text())
    names = [x["name"] for x in report["releases"]]
    assert FORM_NAME in names and report["guarantee"]["epsilon"] <= 8.0 + 1e-9
    card = (tmp_path / "synthetic.release" / "README.md").read_text()
    assert f"| {FORM_NAME} [class=fruit] | gaussian | L2 3.873 |" in card
    assert any("DP form profile" in n for n in report["assumptions"])
    run = tmp_path / "synthetic.jsonl.run"
    state = json.loads((run / "state.json").read_text())
    seqs = state["fit"]["sequences"] if "fit" in state else state["sequences"]
    own = {"fruit": "bbc.in", "sport": "cnn.it"}
    assert sum(s["form"]["link"] == own[s["label"]] for s in seqs) >= len(seqs) - 2
    # the documents follow their drawn link (text.form_realise), whatever the LLM wrote
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(docs) == len(seqs)
    assert all(d["text"].split()[-1].startswith(f"http://{s['form']['link']}/")
               for d, s in zip(docs, seqs, strict=True))
    journal = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    assert all("Its form:" in json.dumps(j["prompt"]) for j in journal)
