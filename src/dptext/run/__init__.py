"""The run lifecycle (``lifecycle.run``: plan, fit, documents, outputs), the run folder
(``folder``), the one budget policy (``budget``) and the release folder a recipient loads
(``release``)."""

from dptext.run.budget import BudgetOptions
from dptext.run.folder import run_dir_for
from dptext.run.lifecycle import DEFAULT_LLM, CorpusSource, RunResult, run
from dptext.run.release import release_dir_for

__all__ = ["DEFAULT_LLM", "BudgetOptions", "CorpusSource", "RunResult", "release_dir_for",
           "run", "run_dir_for"]
