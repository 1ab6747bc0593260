"""Where ``dptext evaluate``'s results go: the one rule for every evaluation figure.

An evaluation reads real data (a real test set and, when given, the private corpus), so
its figures are the curator's: ``metrics.json`` and ``report.html`` go to the folder the
curator names, never into a release folder the recipient gets. Only an explicit
``publish=True`` (``--publish-evaluation``) adds the headline numbers to the release
folder, where the dataset card marks them as outside the privacy guarantee
(``release.publish_evaluation``). A new figure added to the suite follows this rule
without a change here: it lands in the curator's report, and in a release only once
``release.evaluation_summary`` names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dptext.corpus import InputError
from dptext.run.release import inside_release, publish_evaluation, release_of


@dataclass(frozen=True)
class SavedEvaluation:
    metrics: Path  # metrics.json, in the curator's folder
    report: Path  # report.html, beside it
    release: Path | None  # the release folder of the synthetic file, if it has one
    published: bool  # whether the headline numbers were added to that release folder


def save_evaluation(metrics: dict, out: Path, synthetic: Path, *,
                    publish: bool = False) -> SavedEvaluation:
    """Write the report to ``out`` (the curator's) and, only when ``publish``, the
    headline numbers to the release folder of ``synthetic``. Refuses an ``out`` inside a
    release folder: the full report would reach the recipient."""
    from dptext.evaluate.report import write_report

    if (folder := inside_release(out)) is not None:
        raise InputError(
            f"--out {out} is inside the release folder {folder}, which the recipient gets; "
            "an evaluation reads real data, so write it elsewhere (to publish its headline "
            "numbers in the dataset card, marked as outside the guarantee, add "
            "--publish-evaluation)")
    mpath, hpath = write_report(metrics, out)
    release = publish_evaluation(synthetic, metrics) if publish else release_of(synthetic)
    return SavedEvaluation(mpath, hpath, release, publish and release is not None)
