"""The run folder ``<out>.run/``: the one place that knows its layout (docs/run-folder.md).

``run.json``      the run's options (those that fix the releases), its public LLM seed,
                  the ledger it was charged to, and its status: ``fitting`` (charged; the
                  releases are being made) or ``fitted`` (every release is saved)
``ledger.json``   every release made so far, written before a release is used
``state.json``    the released state ``fit`` returned (written with status ``fitted``)
``journal.jsonl`` every LLM completion, fsync'ed as it arrives (a resumed run repeats no
                  prompt)
``<method>/``     the generator's own resumable steps (``RunContext.dir``)

Nothing private is written here: only released values, their post-processing, public
options and LLM completions of prompts built from released values.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dptext.files import write_json_atomic
from dptext.privacy import PrivacyLedger

FORMAT = 2
FITTING, FITTED = "fitting", "fitted"


def run_dir_for(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".run")


class RunFolder:
    def __init__(self, out: str | Path, method: str) -> None:
        self.dir = run_dir_for(out)
        self.method = method

    @property
    def run_json(self) -> Path:
        return self.dir / "run.json"

    @property
    def journal(self) -> Path:
        return self.dir / "journal.jsonl"

    @property
    def generator_dir(self) -> Path:
        return self.dir / self.method

    def started(self) -> bool:
        return self.run_json.exists()

    def leftovers(self) -> bool:
        """Files without a run.json: an earlier run that stopped before it was charged."""
        return self.dir.exists() and any(self.dir.iterdir()) and not self.started()

    def load(self) -> dict[str, Any]:
        run = json.loads(self.run_json.read_text(encoding="utf-8"))
        if run.get("format") != FORMAT:
            raise ValueError(f"{self.dir} was written by another version of dptext; remove "
                             "it to start a new run (its privacy spend stays in the ledger)")
        return run

    def changed(self, saved: dict[str, Any], config: dict[str, Any]) -> list[str]:
        """The options of ``config`` that differ from the saved run's (by their own
        names, however deep the generator keeps them)."""
        before = _leaves(saved["config"])
        now = _leaves(json.loads(json.dumps(config, default=str)))
        return sorted({k.rsplit(".", 1)[-1] for k in set(before) | set(now)
                       if before.get(k) != now.get(k)})

    def start(self, config: dict[str, Any], **run: Any) -> dict[str, Any]:
        record = {"format": FORMAT, "method": self.method, "config": config, **run,
                  "status": FITTING}
        write_json_atomic(self.run_json, record)
        return record

    def mark_fitted(self, record: dict[str, Any]) -> None:
        write_json_atomic(self.run_json, {**record, "status": FITTED})

    def set_budget(self, record: dict[str, Any], **entry: Any) -> dict[str, Any]:
        """Update the run's budget entry (``settled``: it failed and the corpus's ledger
        holds only the releases it made; resuming charges its plan again)."""
        record = {**record, "budget": {**record["budget"], **entry}}
        write_json_atomic(self.run_json, record)
        return record

    def discard(self) -> None:
        """Remove the folder of a run that failed before its first release."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def ledger(self, epsilon_cap: float | None = None) -> PrivacyLedger:
        path = self.dir / "ledger.json"
        ledger = PrivacyLedger.load(path) if path.exists() else PrivacyLedger()
        ledger.epsilon_cap = epsilon_cap
        return ledger

    def save_ledger(self, ledger: PrivacyLedger) -> None:
        # the releases only: composing is done once, for the report
        write_json_atomic(self.dir / "ledger.json",
                          {"releases": [asdict(r) for r in ledger.releases]})

    def save_state(self, state: dict[str, Any]) -> None:
        write_json_atomic(self.dir / "state.json", state)

    def state(self) -> dict[str, Any]:
        return json.loads((self.dir / "state.json").read_text(encoding="utf-8"))


def _leaves(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
