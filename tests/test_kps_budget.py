"""``KeyphraseSeeder.fit`` called as README.md documents it charges the corpus's persistent
budget, as the run lifecycle does; a caller that passes its own ledger charges it itself."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.corpus import Corpus
from dptext.generators.kps import KeyphraseSeeder
from dptext.generators.kps.seeder import CHARGED_COMMAND
from dptext.privacy import PrivacyLedger
from dptext.privacy.budget import open_budget
from dptext.privacy.ledger import BudgetExceededError
from dptext.text.vocabulary import PublicVocabulary

TERMS = ("match", "goal", "late", "home", "team", "budget", "bank", "loan")


def _corpus() -> Corpus:
    texts = ["the match ended with a late goal for the home team"] * 30 \
        + ["a loan from the bank for the budget"] * 30
    return Corpus(texts=tuple(texts), labels=tuple(["sport"] * 30 + ["money"] * 30))


def _seeder() -> KeyphraseSeeder:  # the default model path, on a small public vocabulary
    return KeyphraseSeeder(vocab=PublicVocabulary("t", TERMS), vocab_size=len(TERMS),
                           epsilon=6.0, length=3)


def test_documented_fit_leaves_its_run_in_the_corpus_ledger():
    corpus = _corpus()
    seeder = _seeder().fit(corpus, rng=np.random.default_rng(0))  # README.md's call
    budget = open_budget(corpus)
    (run,) = budget.runs
    assert run["command"] == CHARGED_COMMAND
    # charged the whole plan, then settled (never more): at least what the fit released
    made = seeder.ledger_.guarantee()
    assert 0 < made.epsilon <= budget.spent().epsilon * (1 + 1e-9) <= 6.0 * (1 + 1e-6)


def test_fit_into_a_callers_ledger_is_not_charged_twice():
    corpus = _corpus()
    ledger = PrivacyLedger()
    seeder = _seeder().fit(corpus, rng=np.random.default_rng(0), ledger=ledger)
    assert seeder.ledger_ is ledger and ledger.releases
    assert open_budget(corpus).runs == []


def test_fit_over_the_corpus_total_is_refused_before_any_release():
    corpus = _corpus()
    seeder = _seeder()
    with pytest.raises(BudgetExceededError):
        seeder.fit(corpus, budget=open_budget(corpus, total=1.0))
    assert not hasattr(seeder, "ledger_")  # nothing was released
    assert open_budget(corpus).runs == []
    seeder.fit(corpus, budget=open_budget(corpus, total=1.0), allow_budget_overrun=True)
    assert len(open_budget(corpus).runs) == 1
