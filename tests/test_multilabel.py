"""Multi-label corpora (several labels per document, ``--label-sep``): reading them, the
cap and the DP release of label sets, DP-KPS's multi-label path end to end with the
recording LLM (labels as lists in JSONL and Parquet, planted canaries never in a prompt,
the sensitivity in the ledger), the methods that refuse them, the evaluation of the
output, and the statistical test of the multi-label histogram on neighbouring corpora."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from dptext.cli import app
from dptext.corpus import Corpus, InputError, read_corpus
from dptext.privacy import PrivacyLedger
from dptext.privacy.label_sets import (
    ReleasedLabelSets,
    cap_label_sets,
    draw_label_sets,
    release_label_sets,
)
from dptext.privacy.labels import standalone_spec

TOP = ("atelectasis", "cardiomegaly", "pleural_effusion")
CANARY = "Quenthrimor zorblaxite glimmerwock vexalophine flurmington seventeen herons."


def _notes(tmp_path, n: int = 90):
    """A multi-label CSV: radlabels reports with their findings among TOP ('|'-joined),
    and three planted canary notes."""
    c = read_corpus("demo:radlabels/train")
    rows = [(t, "|".join(x for x in s if x in TOP)) for t, s in zip(c.texts, c.label_sets,
                                                                     strict=True)]
    rows = [r for r in rows if r[1]][:n] + [(f"{CANARY} {CANARY}", "cardiomegaly|atelectasis")
                                            for _ in range(3)]
    path = tmp_path / "notes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "codes"])
        w.writerows(rows)
    return path


def test_label_sets_are_read_from_csv_and_jsonl(tmp_path):
    (tmp_path / "a.csv").write_text("text,codes\nfirst,b| a |b\nsecond,\nthird,c\n")
    c = read_corpus(tmp_path / "a.csv", label_column="codes", label_sep="|")
    assert c.multilabel and c.labels is None
    assert c.label_sets == (("a", "b"), (), ("c",))  # sorted, stripped, no repeats
    (tmp_path / "a.jsonl").write_text('{"text": "x", "codes": ["b", "a"]}\n'
                                      '{"text": "y", "codes": "c;d"}\n')
    j = read_corpus(tmp_path / "a.jsonl", label_column="codes", label_sep=";")
    assert j.label_sets == (("a", "b"), ("c", "d"))
    assert j.subset([1]).label_sets == (("c", "d"),)
    with pytest.raises(InputError, match="--label-column"):
        read_corpus(tmp_path / "a.csv", label_sep="|")
    (tmp_path / "f" / "x").mkdir(parents=True)
    with pytest.raises(InputError, match="one label"):
        read_corpus(tmp_path / "f", label_sep="|")


def test_demo_radlabels_is_multilabel_with_a_fixed_split():
    train, test = read_corpus("demo:radlabels/train"), read_corpus("demo:radlabels/test")
    assert len(train) == 800 and len(test) == 200 and train.multilabel
    assert not set(train.texts) & set(test.texts)
    assert 3 < np.mean([len(s) for s in train.label_sets]) < 6


def test_the_cap_bounds_every_set_with_public_randomness():
    sets = [("a", "b", "c", "d", "e"), ("a",), ()]
    capped = cap_label_sets(sets, 2, np.random.default_rng(0))
    assert len(capped[0]) == 2 and set(capped[0]) <= set(sets[0])
    assert capped[1:] == (("a",), ())
    assert capped == cap_label_sets(sets, 2, np.random.default_rng(0))  # seeded
    with pytest.raises(ValueError, match="cap them"):
        release_label_sets(sets, standalone_spec("gaussian", 1.0, 1e-5), k_max=2,
                           ledger=PrivacyLedger())


def test_label_sets_release_one_set_per_document():
    ledger = PrivacyLedger()
    sets = [("a", "b")] * 200 + [("a",)] * 100 + [("c", "d")]  # ("c", "d"): one document
    out = release_label_sets(sets, standalone_spec("gaussian", 2.0, 1e-5), k_max=2,
                             ledger=ledger, model="joint")
    assert set(out.sets) == {("a", "b"), ("a",)} and out.labels == ("a", "b")
    assert out.label_counts["a"] == pytest.approx(out.sets[("a", "b")] + out.sets[("a",)])
    (rec,) = ledger.releases
    assert rec.name == "label set" and rec.sensitivity == 1.0
    assert "label set (at most 2 labels)" in rec.sensitivity_reason
    drawn = draw_label_sets(out, 30, np.random.default_rng(0))
    assert len(drawn) == 30 and 15 <= drawn.count(("a", "b")) <= 25
    assert ReleasedLabelSets.from_dict(json.loads(json.dumps(out.to_dict()))) == out


def test_the_marginal_model_releases_labels_and_set_sizes_at_once():
    ledger = PrivacyLedger()
    sets = [("a", "b")] * 200 + [("a",)] * 100 + [("c", "d")] * 60 + [("e",)]
    out = release_label_sets(sets, standalone_spec("gaussian", 2.0, 1e-5), k_max=2,
                             ledger=ledger, model="marginal")
    assert out.labels == ("a", "b", "c", "d") and set(out.sizes) == {1, 2}
    (rec,) = ledger.releases  # one release: a document adds to ≤ k + 1 = 3 counts
    assert rec.name == "label set" and rec.sensitivity == pytest.approx(np.sqrt(3))
    drawn = draw_label_sets(out, 200, np.random.default_rng(0))
    assert len(drawn) == 200 and all(1 <= len(s) <= 2 for s in drawn)
    assert {x for s in drawn for x in s} == {"a", "b", "c", "d"}
    assert 0.5 < np.mean([len(s) == 2 for s in drawn]) < 0.85  # ≈ 260 / 361
    assert ReleasedLabelSets.from_dict(json.loads(json.dumps(out.to_dict()))) == out
    with pytest.raises(ValueError, match="joint, marginal"):
        release_label_sets(sets, standalone_spec("gaussian", 2.0, 1e-5), k_max=2,
                           ledger=ledger, model="pairs")


def _cli(args):
    return CliRunner().invoke(app, args, catch_exceptions=False)


@pytest.mark.slow
def test_generate_multilabel_csv_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_HOME", str(tmp_path / "home"))
    notes, out = _notes(tmp_path), tmp_path / "syn.jsonl"
    r = _cli(["generate", "-i", str(notes), "--label-column", "codes", "--label-sep", "|",
              "--max-labels-per-doc", "2", "--epsilon", "8", "--llm", "recording:",
              "--select", "none", "--vocab", "english:5000", "--sequences-per-class", "4",
              "--seed", "1", "--no-progress", "-o", str(out)])
    assert r.exit_code == 0, r.output
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    assert docs and all(isinstance(d["label"], list) and d["label"] for d in docs)
    assert {x for d in docs for x in d["label"]} <= set(TOP)
    report = json.loads((tmp_path / "syn.privacy.json").read_text())
    recs = {x["name"].split(" (")[0]: x for x in report["releases"]}
    # the marginal label-set model: ≤ 2 labels and the set's size, L2 √3
    assert recs["label set"]["sensitivity"] == pytest.approx(np.sqrt(3))
    s = report["parameters"]["terms_per_doc_used"]
    # a document counts in at most 2 rows: L2 √(2·S)
    assert recs["class × term histogram"]["sensitivity"] == pytest.approx(np.sqrt(2 * s))
    assert report["parameters"]["max_labels_per_doc"] == 2
    assert report["parameters"]["length"] == 30  # L's multi-label default
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "syn.release" / "documents.parquet")
    assert str(table.schema.field("label").type) == "list<element: string>"
    card = (tmp_path / "syn.release" / "README.md").read_text()
    assert "Labels per document (multi-label)" in card
    # the planted canary never reaches a prompt (the journal holds every prompt)
    journal = (tmp_path / "syn.jsonl.run" / "journal.jsonl").read_text().lower()
    for word in ("quenthrimor", "zorblaxite", "glimmerwock", "vexalophine"):
        assert word not in journal
    # the output evaluates as multi-label data against real reports
    test = tmp_path / "test.csv"
    with open(test, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "codes"])
        c = read_corpus("demo:radlabels/test")
        w.writerows((t, "|".join(x for x in s if x in TOP)) for t, s in
                    zip(c.texts[:60], c.label_sets[:60], strict=True))
    r = _cli(["evaluate", "--synthetic", str(out), "--real-test", str(test),
              "--label-column", "codes", "--label-sep", "|", "--classifiers", "tfidf",
              "--no-fidelity", "--no-coherence", "--out", str(tmp_path / "eval")])
    assert r.exit_code == 0, r.output
    syn = json.loads((tmp_path / "eval" / "metrics.json").read_text())["utility"][
        "classifiers"]["tfidf"]["synthetic"]
    assert {"micro_f1", "macro_f1", "subset_accuracy"} <= set(syn)
    assert set(syn["per_label_f1"]) <= set(TOP)


def test_l_defaults_to_30_for_label_sets_in_the_api_as_on_the_command_line():
    from dptext.generators.kps.generator import KPSGenerator

    assert KPSGenerator().seeder_params(multilabel=True)["length"] == 30
    assert KPSGenerator().seeder_params(multilabel=False)["length"] == 10
    given = KPSGenerator(seeder={"length": 12})
    assert given.seeder_params(multilabel=True)["length"] == 12


@pytest.mark.parametrize("method", ["augpe", "pate"])
def test_single_label_methods_refuse_a_multilabel_corpus(tmp_path, monkeypatch, method):
    monkeypatch.setenv("DPTEXT_HOME", str(tmp_path / "home"))
    path = tmp_path / "a.csv"
    path.write_text("text,codes\n" + "".join(f"note {i},a|b\n" for i in range(10)))
    r = _cli(["generate", "--method", method, "-i", str(path), "--label-column", "codes",
              "--label-sep", "|", "--epsilon", "4", "--llm", "recording:",
              "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code != 0
    assert "multi-label" in r.output and "--method kps" in r.output
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.json"))


def test_kps_refuses_the_kde_and_the_form_profile_for_label_sets():
    from dptext.generators.kps import KeyphraseSeeder

    with pytest.raises(ValueError, match="histogram models only"):
        KeyphraseSeeder(epsilon=4.0, model="kde").planned_releases(True, multilabel=True)
    with pytest.raises(ValueError, match="single-label"):
        KeyphraseSeeder(epsilon=4.0, form=True).planned_releases(True, multilabel=True)
    with pytest.raises(ValueError, match="histogram models only"):
        KeyphraseSeeder(epsilon=4.0, model="smoothed").planned_releases(True, multilabel=True)
    # declared labels: the label sets are still released (which sets occur is private)
    names = [r.name for r in KeyphraseSeeder(epsilon=4.0, labels=("a", "b"))
             .planned_releases(True, multilabel=True)]
    assert "label set" in names
    # the label contrast has no parameter to choose: no private selection (single-label
    # corpora still have theirs)
    assert not any(x.startswith("model selection") for x in names)
    assert any(r.name.startswith("model selection")
               for r in KeyphraseSeeder(epsilon=4.0).planned_releases(True))


def test_sequences_merge_their_labels_models_in_turns():
    from dptext.generators.kps.multilabel import document_rows, merge_in_turns

    assert merge_in_turns([["a", "b", "c"], ["x", "a"]], 4) == ("a", "x", "b", "c")
    c = Corpus(texts=("t1", "t2"), label_sets=(("a", "b"), ("c",)))
    rows = document_rows(c, c.label_sets, {"a", "b"})
    assert rows.texts == ("t1", "t1") and rows.labels == ("a", "b")


def test_label_contrast_keeps_what_a_row_has_beyond_the_others():
    from dptext.generators.kps.multilabel import contrast_rows

    # "report" in every row at the pooled rate, "effusion" only in row 0, "tube" in row 1,
    # a 9 just above a floor of 8 in row 2 (a likely false cell)
    counts = np.array([[100.0, 60.0, 0.0, 0.0],
                       [100.0, 0.0, 60.0, 0.0],
                       [100.0, 0.0, 0.0, 9.0]])
    w = contrast_rows(counts, floor=8.0)
    assert w[0].argmax() == 1 and w[1].argmax() == 2  # the boilerplate loses
    assert w[0, 0] < w[0, 1] / 5 and w[2, 3] == pytest.approx(1.0)
    # without a floor, the same; a row holding nothing beyond the others (its only
    # term shared) keeps its counts above the floor rather than going empty
    assert contrast_rows(counts, -np.inf)[2, 3] == pytest.approx(9.0)
    same = contrast_rows(np.array([[50.0, 0.0], [500.0, 30.0]]), floor=10.0)
    assert same[0].tolist() == [40.0, 0.0] and same[1, 1] > 0


def test_a_multilabel_fit_samples_each_label_by_its_rows_contrast():
    from dptext.generators.kps import KeyphraseSeeder
    from dptext.generators.kps.multilabel import LabelContrastModel

    c = read_corpus("demo:radlabels/train")
    sets = [tuple(x for x in s if x in TOP) for s in c.label_sets]
    keep = [i for i, s in enumerate(sets) if s][:240]
    corpus = Corpus(texts=tuple(c.texts[i] for i in keep),
                    label_sets=tuple(sets[i] for i in keep))
    seeder = KeyphraseSeeder(epsilon=1000.0, select="none", terms_per_doc=48, length=20)
    seeder.fit(corpus, rng=np.random.default_rng(0), ledger=PrivacyLedger())
    model = seeder.model_
    assert isinstance(model, LabelContrastModel)
    assert seeder.selection_["chosen"].startswith("label contrast of the class × term histogram")
    terms, hist = seeder.released_vocabulary_, seeder.histogram_
    for label in TOP:  # each raw row's top term is boilerplate every report shares
        raw, w = hist.counts[hist.labels.index(label)], model.weights(label)
        assert terms[int(raw.argmax())] in ("chest", "report", "final")
        assert w[raw.argmax()] < 0.1 * w.max()
    top = [terms[i] for i in np.argsort(-model.weights("cardiomegaly"))[:5]]
    assert {"enlarged", "heart"} <= set(top)  # ("cardiomegaly" is no public English term)
    seqs = seeder.sample(total=50, rng=np.random.default_rng(1))
    assert all(s.keyphrases for s in seqs)


@pytest.mark.statistical
def test_multilabel_histogram_within_claim_and_uncapped_caught():
    """A document with 10 labels, the cap at 2: honest stays within the claimed (ε, δ);
    skipping the cap (√5 times the claimed shift) is refuted. Power, 5 repeats at these
    3,000 runs: honest 0 violations (at 99.99 %), uncapped 5 of 5 caught (ε lower bounds
    2.35–2.70 against the claimed 2). Half the noise is caught less surely at this size
    (5 of 6; the Gaussian release itself is audited with it by test_kps_models_privacy)."""
    from dptext.audits.multilabel import audit_multilabel_histogram

    assert not audit_multilabel_histogram(runs=3000, confidence=0.9999).violation
    assert audit_multilabel_histogram(runs=3000, broken="unbounded").violation


def _dpft_sets_corpus() -> Corpus:
    sets = [("a", "b")] * 30 + [("a",)] * 30 + [("c",)] * 30
    return Corpus(texts=tuple(f"note {i} about {' '.join(s)}" for i, s in enumerate(sets)),
                  label_sets=tuple(sets))


def test_dpft_writes_the_label_set_as_one_control_code(tiny, tmp_path):
    """dpft, the fine-tuning paper's setting: the set is one code value (sensitivity 1 in
    the code histogram); with few declared labels every set of them is a public code
    value, so nothing is released before the histogram (which gets the label-set
    release's share) and no document is left out; the documents carry their set back as a
    list."""
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig

    corpus = _dpft_sets_corpus()
    cfg = DPFTConfig(epochs=0.3, batch_size=6, max_length=16)
    gen = DPFineTuneGenerator(8.0, 1e-5, config=cfg, seed=0, progress=False,
                              code_values={"label": ("a", "b", "c")},
                              checkpoint_dir=tmp_path / "ck")
    gen.fit_uncharged(corpus, base=tiny())
    codes = gen.ledger_.releases[0]
    assert codes.name == "control-code histogram" and codes.sensitivity == 1.0
    assert codes.dimension == 8  # every set of a, b, c, the empty one too
    assert '["a", "b"]' in gen.domains_["label"] and '["b", "c"]' in gen.domains_["label"]
    assert codes.epsilon == pytest.approx((cfg.code_share + gen.label_set_share) * 8.0)
    docs = gen.generate(6, sampling=SamplingConfig(max_new_tokens=3),
                        rng=np.random.default_rng(0))
    assert all(isinstance(d["label"], list) and set(d["label"]) <= {"a", "b", "c"}
               for d in docs)
    with pytest.raises(Exception, match="declared"):  # labels outside the declared ones
        DPFineTuneGenerator(8.0, 1e-5, config=cfg, progress=False,
                            code_values={"label": ("a",)}).fit_uncharged(corpus, base=tiny())


def test_dpft_codes_of_many_declared_labels_are_label_and_size_counts(tiny, tmp_path):
    """Past MAX_DECLARED_SETS sets of the declared labels (the label set the only code),
    the codes' distribution is the noisy count of each label and of each set size (L2
    √(n + 1): a document's labels and its size), with the share the label-set release
    would have spent; nothing is released first and no document is left out; a resumed
    run restores the same distribution; the documents carry sets of declared labels."""
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig
    from dptext.generators.dpft.codes import SetCodeDistribution

    cfg = DPFTConfig(epochs=0.3, batch_size=6, max_length=16)
    labels = tuple("abcdefg")  # 128 sets

    def fitted():
        return DPFineTuneGenerator(8.0, 1e-5, config=cfg, seed=0, progress=False,
                                   code_values={"label": labels},
                                   checkpoint_dir=tmp_path / "ck").fit_uncharged(
            _dpft_sets_corpus(), base=tiny())

    gen = fitted()
    codes = gen.ledger_.releases[0]
    assert [r.name for r in gen.ledger_.releases] == [
        "control-code histogram (labels and set sizes)", "DP-SGD fine-tuning"]
    assert codes.sensitivity == pytest.approx(8 ** 0.5) and codes.dimension == 15
    assert codes.epsilon == pytest.approx((cfg.code_share + gen.label_set_share) * 8.0)
    dist = gen.code_distribution_
    assert isinstance(dist, SetCodeDistribution) and dist.labels == labels
    assert gen.domains_ == {}  # no public-value filter: every report trains
    assert fitted().code_distribution_ == dist  # resumed from the plan, no new noise
    docs = gen.generate(8, sampling=SamplingConfig(max_new_tokens=3),
                        rng=np.random.default_rng(0))
    assert len(docs) == 8
    assert all(isinstance(d["label"], list) and set(d["label"]) <= set(labels) for d in docs)
    with pytest.raises(ValueError, match="classifier head"):
        DPFineTuneGenerator(8.0, 1e-5, config=DPFTConfig(epochs=0.3, batch_size=6,
                                                         max_length=16, multitask=True),
                            progress=False, code_values={"label": labels}
                            ).fit_uncharged(_dpft_sets_corpus(), base=tiny())


def test_set_code_distribution_draws_sizes_and_labels_by_their_counts():
    from dptext.generators.dpft.codes import SetCodeDistribution

    dist = SetCodeDistribution(("a", "b", "c"), (90.0, 10.0, -4.0), (25.0, 50.0, 25.0, -3.0))
    assert dist.total() == pytest.approx(97.0)
    codes = dist.sample(400, np.random.default_rng(0))
    sizes = np.bincount([len(json.loads(c["label"])) for c in codes], minlength=4)
    assert sizes.tolist() == [100, 200, 100, 0]  # by the size counts; none of 3 labels
    held = Counter(x for c in codes for x in json.loads(c["label"]))
    assert held["a"] > 250 and held["c"] < 5  # "c"'s count is below zero


def test_dpft_releases_the_sets_that_occur_beside_other_codes(tiny):
    """With a metadata field beside many declared labels, the sets that occur are released
    with partition selection first, the other field's values with them (one set and one
    value a document: L2 √2)."""
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig

    base = _dpft_sets_corpus()
    corpus = Corpus(texts=base.texts, label_sets=base.label_sets,
                    columns={"ward": tuple("xy"[i % 2] for i in range(len(base)))})
    cfg = DPFTConfig(epochs=0.3, batch_size=6, max_length=16)
    gen = DPFineTuneGenerator(30.0, 1e-5, config=cfg, seed=0, progress=False,
                              metadata_fields=("ward",),
                              code_values={"label": tuple("abcdefg")})  # 128 sets
    gen.fit_uncharged(corpus, base=tiny())
    label_set, codes = gen.ledger_.releases[:2]
    assert label_set.name == "label set (label, ward)"
    assert label_set.sensitivity == pytest.approx(2 ** 0.5)
    assert codes.name == "control-code histogram"
    assert set(gen.domains_["label"]) <= {'["a", "b"]', '["a"]', '["c"]'}
    assert set(gen.domains_["ward"]) <= {"x", "y"}
    assert codes.epsilon == pytest.approx(cfg.code_share * 30.0)


@pytest.mark.statistical
def test_dpft_set_codes_within_claim_and_double_count_caught():
    """dpft's label and set-size counts, a document holding all 7 declared labels beside
    40: honest stays within the claimed (ε, δ) = (2, 10⁻³); the document counted twice
    (2·√8 where √8 is claimed) is refuted. Power, 6 repeats at these 6,000 runs: honest
    0 violations at 99.99 % (ε lower bounds 0.88–0.97), counted twice 6 of 6 caught
    (2.40–2.74)."""
    from dptext.audits.dpft_codes import audit_dpft_set_codes

    assert not audit_dpft_set_codes(runs=6000, confidence=0.9999).violation
    assert audit_dpft_set_codes(runs=6000, broken="unbounded").violation
