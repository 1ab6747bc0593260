from eval_fixtures import bbc_report  # noqa: F401  (session fixture: a real evaluation report)
