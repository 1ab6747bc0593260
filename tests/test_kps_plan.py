"""DP-KPS's plan: the options resolved once into stages that both ``planned_releases``
and ``fit`` read, and the releases recorded in the ledger the fit is given."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.generators.kps import stages
from dptext.generators.kps.plan import MODELS_PATH, PAPER
from dptext.privacy import BudgetExceededError, PrivacyLedger
from test_kps_models import _corpus, _seeder


def _kinds(plan) -> list[type]:
    return [type(s) for s in plan.stages]


def test_the_paper_is_its_own_list_of_stages():
    paper = _seeder(model="kde", select="none").plan()
    models = _seeder().plan()
    assert _kinds(paper) == [type(s) for s in PAPER if not isinstance(
        s, stages.LabelSet | stages.TermsPerDocument | stages.LabelCounts
        | stages.FormProfileStage)]
    assert stages.Vocabulary in _kinds(paper) and stages.ClassTermHistogram not in \
        _kinds(paper)
    assert _kinds(models)[0] is stages.SelectionFolds and stages.Vocabulary not in \
        _kinds(models)
    assert stages.KdeSketches not in _kinds(models)  # the histogram alone: no sketches
    for kw in ({"model": "kde", "select": "none"}, {}):  # form=True: the last stage of both
        assert stages.FormProfileStage not in _kinds(_seeder(**kw, form=False).plan())
        assert _kinds(_seeder(**kw, form=True).plan())[-1] is stages.FormProfileStage
    # form="auto" (the default): the profile just before the selection, where one runs
    auto = _kinds(models)
    assert auto[auto.index(stages.ModelSelection) - 1] is stages.FormProfileStage
    assert stages.FormProfileStage not in _kinds(paper)
    assert stages.KdeSketches in _kinds(_seeder(model="hybrid").plan())
    assert {type(s) for s in MODELS_PATH} >= set(_kinds(models))
    # declared labels, a total ε, S chosen: no label set, one "terms" stage
    chosen = _kinds(_seeder(terms_per_doc="auto").plan())
    assert chosen[0] is stages.TermsPerDocument and stages.LabelSet not in chosen
    undeclared = _kinds(_seeder(labels=None, epsilon_labels=0.5).plan())
    assert undeclared[0] is stages.LabelSet and stages.LabelCounts in undeclared


@pytest.mark.parametrize("kw", [{}, {"model": "kde", "select": "none"},
                                {"model": "hybrid", "selection_split": "holdout"},
                                {"labels": None, "terms_per_doc": "auto"}])
def test_fit_makes_the_releases_the_plan_states(kw):
    seeder = _seeder(**kw)
    planned = seeder.planned_releases()
    seeder.fit(_corpus(), rng=np.random.default_rng(0))
    made = list({r.name.split(" (")[0]: r for r in seeder.ledger_.releases}.values())
    assert [r.name.split(" (")[0] for r in planned] == [r.name.split(" (")[0] for r in made]
    for p, r in zip(planned, made, strict=True):  # the sketches: one release per class
        assert p.fold == r.fold and (p.parallel_group is None) == (r.parallel_group is None)
        assert r.epsilon <= p.epsilon * (1 + 1e-9)


def test_releases_go_into_the_ledger_given_and_its_cap_applies():
    """The run's ledger: the seeder appends to it (nothing copied afterwards), and a cap
    below the plan stops the first release that would pass it, before it is made."""
    earlier = PrivacyLedger()
    seeder = _seeder(terms_per_doc="auto")
    planned = seeder.planned_releases()
    seeder.fit(_corpus(), rng=np.random.default_rng(0), ledger=earlier)
    made = {r.name.split(" (")[0] for r in earlier.releases}  # the form: one per class
    assert seeder.ledger_ is earlier and len(made) == len(planned)

    capped = PrivacyLedger(epsilon_cap=planned[0].epsilon * 1.5)
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        _seeder(terms_per_doc="auto").fit(_corpus(), rng=np.random.default_rng(0),
                                          ledger=capped)
    assert len(capped.releases) == 1  # S's choice fitted; the histogram was refused
    assert capped.releases[0].name.startswith(planned[0].name.split(" (")[0])
