"""Aug-PE end to end with a scripted recording backend and the model2vec embedder: planted
canaries never reach a prompt or the run directory, an interrupted run resumes without new
DP noise or repeated prompts, and ``dptext generate --method augpe`` / ``dptext augpe``."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from dptext.cli import app
from dptext.corpus import Corpus, read_corpus
from dptext.generators.augpe import AugPEConfig, RunState, run_augpe
from dptext.llm import LLMError
from dptext.llm.recording import RecordingBackend
from dptext.privacy.budget import CorpusBudget, corpus_fingerprint

pytestmark = pytest.mark.slow

CANARY_SENTENCES = (
    "Flurmington swallowed seventeen glimmerwocks beside the zorblaxite quarry at dawn.",
    "The quenthrimor ledger of Vexalophine Street was audited by a blind heron.",
)


def _answer(prompt) -> str:
    """A stand-in LLM: the initial prompt's words, or the parent with its blanks filled."""
    last = prompt.messages[-1].content
    words = re.search(r"Use some of these words: (.*)\.", last)
    if words:  # opened with the document type as a label, which the clean-up strips
        return f"News article: A report on {words.group(1)}."
    body = last.split("\n\n")[1].replace("_", "news")
    return f"{body} Update {prompt.params.seed % 97}."


def _embedder():
    from dptext.embed import load_embedder

    return load_embedder("model2vec", cache_dir="")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    bbc = read_corpus("demo:bbc-news/train")
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.choice(np.flatnonzero(np.asarray(bbc.labels) == c), 8,
                                     replace=False) for c in sorted(set(bbc.labels))])
    texts = [bbc.texts[i] for i in idx] + [s + " " + bbc.texts[idx[0]] for s in CANARY_SENTENCES]
    labels = [bbc.labels[i] for i in idx] + [bbc.labels[idx[0]]] * len(CANARY_SENTENCES)
    return Corpus(texts=tuple(texts), labels=tuple(labels), source="augpe test")


def _cfg(**kw) -> AugPEConfig:
    base = dict(document_type="news article", per_class=2, iterations=2, random_words=3,
                vocab="english:3000", vocab_size=200, embedder=_embedder(), max_tokens=48)
    return AugPEConfig(**{**base, **kw})


def _run(corpus, cfg, backend, run_dir, epsilon=3.0):
    classes = sorted(set(corpus.labels))
    return run_augpe(corpus, cfg, cfg.noise(epsilon, 1e-5), backend, run_dir, classes=classes,
                     seed=7, epsilon_cap=epsilon)


def _ngrams(text: str, n: int = 6) -> set[tuple[str, ...]]:
    w = re.findall(r"\w+", text.lower())
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def test_canaries_never_reach_a_prompt_or_the_run_directory(corpus, tmp_path):
    rec = RecordingBackend(answer=_answer)
    result = _run(corpus, _cfg(), rec, tmp_path / "out.run")
    assert len(rec.prompts) == result.prompts[-1] == 5 * 2 * 3
    private = set().union(*(_ngrams(t) for t in corpus.texts))
    released = set(result.vocabulary)
    for p in rec.prompts:
        text = p.text()
        assert not any(s.lower() in text.lower() for s in CANARY_SENTENCES)
        assert not (_ngrams(text) & private), "private text reached a prompt"
        for label in set(corpus.labels):  # no class names, except as released Ṽ words
            assert f"about {label}" not in text
            assert label not in text.lower().split() or label in released
    for path in (tmp_path / "out.run").iterdir():
        stored = path.read_text(encoding="utf-8")
        assert not any(s in stored for s in CANARY_SENTENCES), path.name
        assert not (_ngrams(stored) & private), path.name
    # the ledger: Ṽ + one parallel group of 5 class histograms per iteration, within ε
    groups = {r.parallel_group for r in result.ledger.releases}
    assert groups == {None, "votes, iteration 1", "votes, iteration 2"}
    assert len(result.ledger.releases) == 1 + 2 * 5
    assert result.ledger.guarantee().epsilon <= 3.0
    assert all(text.startswith("A report on") for text, _ in result.populations[0])


class _FailingAfter(RecordingBackend):
    """Answers ``limit`` prompts, then fails like a backend that went away."""

    def __init__(self, limit: int) -> None:
        def answer(prompt):
            if self.answered >= limit:
                raise LLMError("backend went away (simulated)")
            self.answered += 1
            return _answer(prompt)

        super().__init__(answer=answer)
        self.answered = 0
        self.max_concurrency = 1


def test_resume_mid_iteration_draws_no_new_noise_and_repeats_no_prompt(corpus, tmp_path):
    run_dir = tmp_path / "out.run"
    cfg = _cfg(random_words=0)  # plain AugPE: the vote histograms are the only releases
    with pytest.raises(LLMError):  # 10 initial + 10 in iteration 1 + 4 of iteration 2
        _run(corpus, cfg, _FailingAfter(24), run_dir)
    state = RunState(run_dir)
    assert state.population(1) is not None and state.population(2) is None
    before, votes_2 = state.ledger().releases, state.votes(2)
    assert votes_2 is not None and len(before) == 2 * 5  # iteration 2 released, then failed
    rec = RecordingBackend(answer=_answer)
    result = _run(corpus, cfg, rec, run_dir)
    assert len(rec.prompts) == 10 - 4  # only the unfinished prompts of iteration 2
    assert result.ledger.releases == before  # no new DP release
    assert all(np.array_equal(votes_2[c], state.votes(2)[c]) for c in votes_2)
    assert result.prompts == [10, 20, 30]
    again = RecordingBackend(answer=_answer)
    assert _run(corpus, cfg, again, run_dir).populations == result.populations
    assert again.prompts == []



def test_a_resumed_run_reports_every_call_of_the_run_not_only_its_own(corpus, tmp_path):
    """The run's report counts the calls of the iterations a resumed run loaded from its
    folder (the figure the whole-documents bench records); the process's stats do not."""
    import dptext

    options = dict(out=tmp_path / "syn.jsonl", epsilon=3.0, concurrency=1, cache=False,
                   seed=7, labels=tuple(sorted(set(corpus.labels))), per_class=2,
                   iterations=2, random_words=0, embedder=_embedder(), max_tokens=48,
                   document_type="news article")
    with pytest.raises(LLMError):  # iterations 0 and 1 saved, 4 prompts of iteration 2
        dptext.synthesize(corpus, "augpe", llm=_FailingAfter(24), **options)
    rec = RecordingBackend(answer=_answer)
    result = dptext.synthesize(corpus, "augpe", llm=rec, resume=True, **options)
    assert len(rec.prompts) == 10 - 4 and result.stats.total == 10  # iteration 2 only
    assert result.report["parameters"]["llm_calls"] == 30
    assert result.report["parameters"]["prompts_per_iteration"] == [10, 20, 30]

REFUSAL = "I'm sorry, but I can't help with that."


def _refusing(prompt) -> str:
    """``_answer``, except that a quarter of the sampling seeds refuse."""
    return REFUSAL if prompt.params.seed % 4 == 0 else _answer(prompt)


def test_refusals_are_asked_again_and_every_call_is_counted(corpus, tmp_path):
    run_dir = tmp_path / "out.run"
    cfg = _cfg(random_words=0)
    rec = RecordingBackend(answer=_refusing)
    result = _run(corpus, cfg, rec, run_dir)
    refused = sum(p.params.seed % 4 == 0 for p in rec.prompts)
    assert refused and len(rec.prompts) == 30 + refused  # one new call per refusal
    assert result.prompts[-1] == len(rec.prompts)
    assert result.stats.refusals_retried == refused
    assert result.check_counts["refusals_retried"] == refused  # saved with each population
    assert not any("sorry" in text for pop in result.populations for text, _ in pop)
    # a run directory written before calls were saved counts one call per text
    for f in run_dir.glob("calls_*.json"):
        f.unlink()
    again = RecordingBackend(answer=_refusing)
    assert _run(corpus, cfg, again, run_dir).prompts == [10, 20, 30] and again.prompts == []


def _csv(path, corpus: Corpus) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(zip(corpus.texts, corpus.labels, strict=True))


def test_cli_generate_method_augpe_end_to_end_and_resume(corpus, tmp_path):
    small = Corpus(corpus.texts[:16], corpus.labels[:16])  # two classes
    _csv(tmp_path / "c.csv", small)
    out = tmp_path / "syn.jsonl"
    args = ["generate", "--method", "augpe", "-i", str(tmp_path / "c.csv"), "--label-column",
            "label", "-o", str(out), "--epsilon", "4", "--llm", "recording:",
            "--sequences-per-class", "2", "--vocab", "english:3000", "--vocab-size", "200",
            "--embedder", "model2vec", "--seed", "3", "--no-progress", "--no-cache",
            "--document-type", "news article", "--labels", ",".join(sorted(set(small.labels)))]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and {r["label"] for r in rows} == set(small.labels)
    report = json.loads((tmp_path / "syn.privacy.json").read_text())
    assert report["guarantee"]["epsilon"] <= 4.0
    assert report["parameters"]["llm_calls"] == 4 * 10  # N·(1 + T), T = 9
    assert report["parameters"]["class_names_in_prompts"] is False
    assert not any("LEAKS" in a for a in report["assumptions"])
    # --resume of a finished run: no prompt, no new release, no second budget charge
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "syn.privacy.json").read_text())["releases"] == \
        report["releases"]
    read = read_corpus(tmp_path / "c.csv", label_column="label")
    runs = CorpusBudget.open(corpus_fingerprint(read.texts, read.labels)).runs
    assert [r["command"] for r in runs] == ["generate --method augpe"]
    # without --resume an existing run directory is refused
    assert CliRunner().invoke(app, args).exit_code == 2


def test_cli_class_names_opt_in_marks_the_report(corpus, tmp_path):
    small = Corpus(corpus.texts[:16], corpus.labels[:16])
    _csv(tmp_path / "c.csv", small)
    out = tmp_path / "syn.jsonl"
    res = CliRunner().invoke(app, [
        "augpe", "-i", str(tmp_path / "c.csv"), "--label-column", "label", "-o", str(out),
        "--epsilon", "2", "--llm", "recording:", "--per-class", "1", "--iterations", "1",
        "--random-words", "0", "--embedder", "model2vec", "--no-progress", "--no-cache",
        "--augpe-class-names", "--document-type", "news article",
        "--labels", ",".join(sorted(set(small.labels)))])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "syn.privacy.json").read_text())
    assert report["parameters"]["class_names_in_prompts"] is True
    assert any(a.startswith("LEAKS: the class names") for a in report["assumptions"])
    prompts = [json.loads(line)["prompt"]["messages"][-1]["content"]
               for line in (tmp_path / "syn.jsonl.run" / "journal.jsonl").read_text()
               .splitlines()]
    assert any(f"news article about {label}" in p for p in prompts for label in small.labels)


def test_cli_augpe_releases_the_label_set_when_labels_are_not_declared(tmp_path):
    """Without --labels the classes are the DP label set: a label of two documents is left
    out, the release is charged within --epsilon and saved in the run folder, and a
    resumed run reuses it (no new release)."""
    bbc = read_corpus("demo:bbc-news/train")
    keep = [i for c in ("sports", "tech") for i in np.flatnonzero(np.asarray(bbc.labels) == c)
            [:40]]
    texts = [bbc.texts[i] for i in keep] + ["a rare ward note", "another rare ward note"]
    labels = [bbc.labels[i] for i in keep] + ["rareward", "rareward"]
    _csv(tmp_path / "c.csv", Corpus(tuple(texts), tuple(labels)))
    out = tmp_path / "syn.jsonl"
    args = ["augpe", "-i", str(tmp_path / "c.csv"), "--label-column", "label", "-o", str(out),
            "--epsilon", "4", "--llm", "recording:", "--per-class", "1", "--iterations", "1",
            "--random-words", "0", "--embedder", "model2vec", "--no-progress", "--no-cache"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "syn.privacy.json").read_text())
    assert report["releases"][0]["name"] == "label set"
    assert report["guarantee"]["epsilon"] <= 4.0 and report["guarantee"]["delta"] <= 1e-5
    assert any("partition selection" in a for a in report["assumptions"])
    assert {json.loads(x)["label"] for x in out.read_text().splitlines()} == {"sports", "tech"}
    saved = json.loads((tmp_path / "syn.jsonl.run" / "augpe" / "label_set.json").read_text())
    assert saved["label_set"]["values"]["label"] == ["sports", "tech"]
    assert "rareward" not in (tmp_path / "syn.privacy.json").read_text()
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "syn.privacy.json").read_text())["releases"] == \
        report["releases"]
