"""Empirical privacy audits of every generator's releases (``dptext audit``).

Each audit runs the real code path many times on a corpus D and on D' = D plus one
adversarial document, reduces every output to a statistic chosen by an auditor who knows
D, the adversarial document and all public randomness, and hands the samples to
``dptext.privacy.auditing`` (ε lower bound + hockey-stick test at the claimed ε). Every
row also runs with a negative control (``broken``: ``half-noise``, or ``unbounded`` — one
document counted twice, clipping off) that it must catch.

These audits run generators, so they live above ``generators/`` (DESIGN.md), not in
``evaluate/``: ``kps.py`` (DP-KPS's releases and its fit end to end), ``kps_default.py``
(the fit as the CLI runs it by default), ``form.py`` (its form profile), ``augpe.py``,
``pate.py`` and ``dpsgd.py``; ``registry.py`` is the table of rows.
"""

from dptext.audits.registry import AUDITS, REGISTRY, run_audits

__all__ = ["AUDITS", "REGISTRY", "run_audits"]
