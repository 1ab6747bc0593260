"""One default budget: ``dptext generate``, ``dptext keyphrases`` and the methods' own
commands (``augpe``, ``pate``, ``dpft``) without ``--epsilon`` and ``dptext.synthesize``
without ``epsilon`` plan the same run, one total ε
(``DEFAULT_EPSILON``) split by the plan; per-stage ε only when a per-stage option asks for
it (``generators.kps.options.budget_form``). Nothing is read or run: the generators the
commands build are captured before the engine starts."""

from __future__ import annotations

from dataclasses import fields

import pytest
from typer.testing import CliRunner

import dptext
from dptext.cli import app
from dptext.generators.base import DEFAULT_EPSILON, CorpusInfo
from dptext.generators.kps import KeyphraseSeeder
from dptext.generators.kps.options import PER_STAGE_EPSILONS, SeederOptions, budget_form
from dptext.generators.registry import make_generator


class _Stop(Exception):
    """Raised by a captured step so that nothing after it runs."""


def _cli_generator(monkeypatch, *options: str):
    """The generator ``dptext generate`` builds with ``options``."""
    captured = {}

    def run_generator(method, opts, source, out, **run):
        captured["generator"] = make_generator(method, **opts)

    monkeypatch.setattr("dptext.cli.options.run_generator", run_generator)
    res = CliRunner().invoke(app, ["generate", "--input", "notes.csv", "--label-column",
                                   "label", "--out", "out.jsonl", *options])
    assert res.exit_code == 0, res.output
    return captured["generator"]


def _api_generator(monkeypatch, **options):
    """The generator ``dptext.synthesize`` builds with ``options``."""
    captured = {}

    def run(generator, *args, **kwargs):
        captured["generator"] = generator

    monkeypatch.setattr("dptext.api.run", run)
    dptext.synthesize("notes.csv", label_column="label", out="out.jsonl", **options)
    return captured["generator"]


def _cli_seeder(monkeypatch, *options: str) -> KeyphraseSeeder:
    """The seeder ``dptext keyphrases`` fits with ``options``."""
    captured = {}

    def check_seeder(seeder):
        captured["seeder"] = seeder
        raise _Stop

    monkeypatch.setattr("dptext.generators.kps.generator.check_seeder", check_seeder)
    res = CliRunner().invoke(app, ["keyphrases", "--input", "notes.csv", "--label-column",
                                   "label", "--out", "seq.jsonl", *options])
    assert isinstance(res.exception, _Stop), res.output
    return captured["seeder"]


def _options(generator) -> dict:
    seeder = KeyphraseSeeder(**generator.seeder_params())
    own = {k: v for k, v in generator.release_options().items() if k != "seeder"}
    return {**own, **{f.name: getattr(seeder, f.name) for f in fields(SeederOptions)}}


def _plan(releases) -> list[tuple]:
    return [(r.name, r.mechanism, round(r.epsilon, 12), r.delta) for r in releases]


def test_cli_and_api_default_to_the_same_plan(monkeypatch):
    cli, api = _cli_generator(monkeypatch), _api_generator(monkeypatch)
    info = CorpusInfo(labelled=True)
    # the same options: the command's, given in full, and the API's, left to the defaults
    assert _options(cli) == _options(api)
    assert _plan(cli.plan(info)) == _plan(api.plan(info))
    # one total ε, DEFAULT_EPSILON, which also caps the run's ledger
    assert cli.epsilon == api.epsilon == DEFAULT_EPSILON
    seeder = _cli_seeder(monkeypatch)
    assert _plan(seeder.planned_releases(True)) == _plan(cli.plan(info))
    assert (seeder.epsilon, seeder.epsilon_vocab, seeder.epsilon_kde) == (
        DEFAULT_EPSILON, None, None)
    assert KeyphraseSeeder().epsilon == DEFAULT_EPSILON  # the estimator's own default too


def test_per_stage_budgets_only_when_asked_for(monkeypatch):
    cli = _cli_generator(monkeypatch, "--epsilon-vocab", "2")
    api = _api_generator(monkeypatch, epsilon_vocab=2.0)
    info = CorpusInfo(labelled=True)
    assert cli.epsilon is None and api.epsilon is None
    assert _plan(cli.plan(info)) == _plan(api.plan(info))
    assert {k: cli.seeder[k] for k in PER_STAGE_EPSILONS} == {
        "epsilon_vocab": 2.0, "epsilon_kde": PER_STAGE_EPSILONS["epsilon_kde"]}
    seeder = _cli_seeder(monkeypatch, "--epsilon-kde", "3")
    assert (seeder.epsilon, seeder.epsilon_vocab, seeder.epsilon_kde) == (
        None, PER_STAGE_EPSILONS["epsilon_vocab"], 3.0)


def test_a_total_and_a_per_stage_budget_together_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="not both"):
        budget_form(6.0, epsilon_kde=5.0)
    with pytest.raises(ValueError, match="not both"):
        _api_generator(monkeypatch, epsilon=6.0, epsilon_kde=5.0)
    res = CliRunner().invoke(app, ["keyphrases", "--input", "notes.csv", "--out", "s.jsonl",
                                   "--epsilon", "6", "--epsilon-vocab", "1"])
    assert res.exit_code == 2 and "not both" in res.output


def test_the_other_methods_default_to_the_same_total(monkeypatch):
    cli = _cli_generator(monkeypatch, "--method", "augpe")
    api = _api_generator(monkeypatch, method="augpe")
    assert cli.epsilon == api.epsilon == DEFAULT_EPSILON
    res = CliRunner().invoke(app, ["generate", "--input", "notes.csv", "--out", "o.jsonl",
                                   "--method", "pate", "--epsilon-kde", "5"])
    assert res.exit_code == 2 and "per-stage" in res.output


def _own_command_generator(monkeypatch, command: str, *options: str):
    """The generator ``dptext COMMAND`` (augpe, pate, dpft) builds with ``options``."""
    captured = {}

    def run_generator(method, opts, source, out, **run):
        captured["generator"] = make_generator(method, **opts)

    monkeypatch.setattr("dptext.cli.options.run_generator", run_generator)
    res = CliRunner().invoke(app, [command, "--input", "notes.csv", "--label-column", "label",
                                   "--out", "out.jsonl", *options])
    assert res.exit_code == 0, res.output
    return captured["generator"]


@pytest.mark.parametrize("command", ["augpe", "pate", "dpft"])
def test_each_method_command_defaults_to_the_same_total(monkeypatch, command):
    own = _own_command_generator(monkeypatch, command)
    via_generate = _cli_generator(monkeypatch, "--method", command)
    assert own.name == command
    assert own.epsilon == via_generate.epsilon == DEFAULT_EPSILON
    assert _plan(own.plan(CorpusInfo(labelled=True))) == _plan(
        via_generate.plan(CorpusInfo(labelled=True)))
    assert _own_command_generator(monkeypatch, command, "--epsilon", "2.5").epsilon == 2.5
