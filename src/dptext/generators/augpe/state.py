"""The run directory of an Aug-PE run, written step by step so that a run can resume.

``label_set.json`` (without declared labels: the DP label set and its release record),
``vocabulary.json`` (AugPE+Ṽ: the DP vocabulary and its release record),
``votes_<t>.json`` (iteration t's noisy histograms and their release records, written
atomically the moment they are drawn, before any prompt uses them) and
``population_<t>.jsonl`` (the synthetic texts after iteration t) with ``calls_<t>.json``
(the LLM calls, retries included, that made them). The ledger is
rebuilt from the release records in these files, so a saved histogram is never
without its charge. The LLM completions go to the shared ``journal.jsonl``.
Everything here is released data or its post-processing; no private text.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from dptext.files import write_atomic
from dptext.privacy import PrivacyLedger, Release

Population = list[tuple[str, str | None]]  # (text, label), class by class


class RunState:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)

    # ---------------------------------------------------------------- releases
    def _release_files(self) -> list[Path]:
        votes = sorted(self.dir.glob("votes_*.json"), key=lambda p: int(p.stem.split("_")[1]))
        first = [self.dir / "label_set.json", self.dir / "vocabulary.json"]
        return [p for p in first if p.exists()] + votes

    def ledger(self, epsilon_cap: float | None = None) -> PrivacyLedger:
        """Every release this run made so far, from the files that hold their outputs."""
        ledger = PrivacyLedger(epsilon_cap=epsilon_cap)
        for path in self._release_files():
            ledger.releases.extend(Release(**r) for r in json.loads(path.read_text())["releases"])
        return ledger

    def save_label_set(self, released, releases: list[Release]) -> None:
        """The DP label set (``privacy.labels.ReleasedValues``) and its release record."""
        write_atomic(self.dir / "label_set.json", json.dumps(
            {"label_set": released.to_dict(), "releases": [asdict(r) for r in releases]},
            ensure_ascii=False))

    def label_set(self) -> list | None:
        """The classes of a DP label set released earlier in this run, if any."""
        path = self.dir / "label_set.json"
        return list(json.loads(path.read_text())["label_set"]["values"]["label"]) \
            if path.exists() else None

    def save_vocabulary(self, words: tuple[str, ...], releases: list[Release]) -> None:
        write_atomic(self.dir / "vocabulary.json", json.dumps(
            {"words": list(words), "releases": [asdict(r) for r in releases]}))

    def vocabulary(self) -> tuple[str, ...] | None:
        path = self.dir / "vocabulary.json"
        return tuple(json.loads(path.read_text())["words"]) if path.exists() else None

    def save_votes(self, t: int, histograms: dict, releases: list[Release]) -> None:
        write_atomic(self.dir / f"votes_{t}.json", json.dumps(
            {"histograms": [[c, np.asarray(h).tolist()] for c, h in histograms.items()],
             "releases": [asdict(r) for r in releases]}))

    def votes(self, t: int) -> dict | None:
        path = self.dir / f"votes_{t}.json"
        if not path.exists():
            return None
        return {c: np.asarray(h, dtype=np.float64)
                for c, h in json.loads(path.read_text())["histograms"]}

    # ---------------------------------------------------------------- populations
    def save_population(self, t: int, population: Population, counts: dict) -> None:
        """Population t, and the LLM calls that made it with the checks' counts
        (``calls_<t>.json``, written first: the population file marks the iteration done)."""
        write_atomic(self.dir / f"calls_{t}.json", json.dumps(counts))
        write_atomic(self.dir / f"population_{t}.jsonl", "".join(
            json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n"
            for text, label in population))

    def counts(self, t: int) -> dict:
        """``{"llm_calls": …, "checks": {…}}`` of population t; a run saved before the
        checks were counted made one call per text and counted nothing."""
        path = self.dir / f"calls_{t}.json"
        if path.exists():
            return json.loads(path.read_text())
        population = self.population(t)
        return {"llm_calls": len(population) if population is not None else 0, "checks": {}}

    def population(self, t: int) -> Population | None:
        path = self.dir / f"population_{t}.jsonl"
        if not path.exists():
            return None
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
        return [(r["text"], r["label"]) for r in rows]
