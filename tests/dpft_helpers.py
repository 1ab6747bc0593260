"""The dpft tests' way to run a whole dpft job: through the run lifecycle, as the CLI does."""

from __future__ import annotations

from pathlib import Path


def run_dpft(corpus, out: Path, *, base, epsilon: float = 8.0, n_documents=None,
             code_values=None, seed=None, resume: bool = False, **options) -> dict:
    """``DPFTGenerator`` on ``corpus`` (``base``: the tiny model); returns the report."""
    from dptext.generators.dpft.generator import DPFTGenerator
    from dptext.run import CorpusSource, run

    declared = dict(code_values or {})
    gen = DPFTGenerator(epsilon=epsilon, documents=n_documents,
                        labels=declared.pop("label", None), code_values=declared, base=base,
                        **options)
    return run(gen, CorpusSource(corpus), out, seed=seed, progress=False,
               resume=resume).report


def dpft_dir(out: Path) -> Path:
    """The dpft generator's own folder in the run folder of ``out``."""
    from dptext.run import run_dir_for

    return run_dir_for(out) / "dpft"
