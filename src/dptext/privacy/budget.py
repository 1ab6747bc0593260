"""The persistent privacy budget of a corpus: every run's releases, across processes.

A run's ``PrivacyLedger`` knows what *that run* spent. Running twice on the same
data spends twice, so each corpus gets a ledger file in the dptext state folder
(``$DPTEXT_HOME``, else ``$XDG_DATA_HOME/dptext``, else ``~/.local/share/dptext``),
named by a SHA-256 content hash of the corpus. The file holds the hash, the
releases and public parameters of each run, and the configured total — never any
text. Runs compose sequentially: each run's parallel groups are kept within that
run, so two runs on the same classes add up.

The total budget comes from, in order: the ``--budget-total`` of this run, the
total recorded for this corpus by an earlier run, ``budget_total`` in
``$DPTEXT_HOME/config.toml``; with none, runs are recorded but not capped.
Updates are serialised with a file lock and written atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import tempfile
import tomllib
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from dptext.privacy.ledger import BudgetExceededError, Guarantee, PrivacyLedger, Release, compose

HOME_ENV = "DPTEXT_HOME"
CONFIG_FILE = "config.toml"
FORMAT_VERSION = 1


def state_dir() -> Path:
    """Where dptext keeps its state (ledgers, config): never inside a project."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "dptext"


def corpus_fingerprint(texts: Iterable[str], labels: Iterable[str | None] | None) -> str:
    """SHA-256 over the sorted per-document hashes of (text, label).

    Order- and format-independent: the same documents are the same corpus. Any
    change to a text or a label gives another fingerprint.
    """
    labels_it = iter(labels) if labels is not None else None
    docs = []
    for text in texts:
        label = next(labels_it) if labels_it is not None else None
        h = hashlib.sha256()
        for part in (text, label):
            data = b"\x00" if part is None else b"\x01" + str(part).encode("utf-8", "replace")
            h.update(len(data).to_bytes(8, "little") + data)
        docs.append(h.digest())
    top = hashlib.sha256(b"dptext-corpus-v1")
    for d in sorted(docs):
        top.update(d)
    return top.hexdigest()


def configured_total(home: Path | None = None) -> float | None:
    """``budget_total`` from ``config.toml`` in the state folder, if any."""
    path = (home or state_dir()) / CONFIG_FILE
    if not path.is_file():
        return None
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("budget_total")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a valid TOML file ({e})") from None
    return None if value is None else check_total(value, f"{path}: budget_total")


def check_total(value, what: str = "--budget-total") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive finite ε, got {value!r}")
    return float(value)


@dataclass
class CorpusBudget:
    """The ledger file of one corpus. Use ``open``; ``check`` before, ``commit`` after a fit."""

    fingerprint: str
    path: Path
    total: float | None = None
    runs: list[dict] = field(default_factory=list)
    total_source: str = "none"

    # ------------------------------------------------------------ loading
    @classmethod
    def open(cls, fingerprint: str, *, total: float | None = None,
             home: Path | None = None) -> CorpusBudget:
        home = home or state_dir()
        path = home / "ledgers" / f"{fingerprint}.json"
        budget = cls(fingerprint, path)
        budget._load()
        if total is not None:
            budget.total, budget.total_source = check_total(total), "--budget-total"
        elif budget.total is None:
            budget.total = configured_total(home)
            budget.total_source = f"{CONFIG_FILE}" if budget.total is not None else "none"
        return budget

    def _load(self) -> None:
        if not self.path.is_file():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            runs = list(data["runs"])
            for run in runs:
                [Release(**r) for r in run["releases"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(
                f"privacy ledger {self.path} is unreadable ({e}); it records the privacy "
                "already spent on this corpus, so dptext will not guess. Restore it from a "
                "backup, or delete it only if you know no run used this corpus.") from None
        if data.get("fingerprint") != self.fingerprint:
            raise ValueError(f"privacy ledger {self.path} belongs to another corpus")
        self.runs = runs
        if data.get("budget_total") is not None:
            self.total, self.total_source = float(data["budget_total"]), "recorded for corpus"

    # ------------------------------------------------------------ accounting
    def releases(self, runs: list[dict] | None = None) -> list[Release]:
        out = []
        for run in self.runs if runs is None else runs:
            for r in run["releases"]:
                rel = Release(**r)
                if rel.parallel_group is not None:  # parallel only within one run
                    rel = replace(rel, parallel_group=f"{run['run_id']}: {rel.parallel_group}")
                if rel.fold is not None:  # each run splits its documents afresh
                    rel = replace(rel, fold=f"{run['run_id']}: {rel.fold}")
                out.append(rel)
        return out

    def spent(self) -> Guarantee:
        return compose(self.releases())

    def _refusal(self, would: float, what: str) -> BudgetExceededError:
        spent = self.spent()
        return BudgetExceededError(
            f"privacy budget exceeded for this corpus (fingerprint {self.fingerprint[:12]}…): "
            f"{len(self.runs)} earlier run(s) spent ε = {spent.epsilon:.4g}; {what} would "
            f"bring it to ε = {would:.4g}, over the total of ε = {self.total:g} "
            f"({self.total_source}). Nothing was released. Lower the ε of this run, raise "
            "--budget-total, or pass --allow-budget-overrun to spend it anyway.")

    def check(self, planned: float | list[Release], *, allow_overrun: bool = False) -> None:
        """Before a fit: refuse a run that cannot fit in what is left.

        ``planned``: the releases the run will make (composed exactly with the spent
        ones, as ``commit`` will), or just its ε (then added: basic composition).
        """
        if self.total is None or allow_overrun:
            return
        if isinstance(planned, list):
            run = {"run_id": "planned", "releases": [asdict(r) for r in planned]}
            would = compose(self.releases([*self.runs, run])).epsilon
            what = f"this run (ε = {compose(planned).epsilon:.4g} on its own)"
        else:
            would = self.spent().epsilon + planned
            what = f"this run's requested ε = {planned:g}"
        if would > self.total * (1 + 1e-9):
            raise self._refusal(would, what)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def commit(self, ledger: PrivacyLedger, *, command: str, parameters: dict | None = None,
               allow_overrun: bool = False, run_id: str | None = None) -> Guarantee:
        """After a fit, before anything is written: add this run's releases to the corpus.

        Re-reads the file under a lock (another process may have spent meanwhile),
        composes exactly, and refuses (raising, recording nothing) when over the
        total unless ``allow_overrun``. Returns the corpus's new total spend.
        Committing the same ``run_id`` twice records it once.
        """
        run_id = run_id or uuid.uuid4().hex
        with self._locked():
            explicit = (self.total, self.total_source)
            self.runs = []
            self._load()
            if explicit[1] == "--budget-total":
                self.total, self.total_source = explicit
            if any(r["run_id"] == run_id for r in self.runs):
                return self.spent()
            run = {"run_id": run_id, "command": command,
                   "created": datetime.now(UTC).isoformat(timespec="seconds"),
                   "releases": [asdict(r) for r in ledger.releases],
                   "guarantee": asdict(ledger.guarantee()),
                   "parameters": parameters or {}, "overrun": False}
            after = compose(self.releases([*self.runs, run]))
            over = self.total is not None and after.epsilon > self.total * (1 + 1e-9)
            if over and not allow_overrun:
                raise self._refusal(after.epsilon, f"this run ({ledger.guarantee()})")
            run["overrun"] = bool(over)
            self.runs.append(run)
            self._write()
            return after

    def _write(self) -> None:
        data = {"format": FORMAT_VERSION, "fingerprint": self.fingerprint,
                "budget_total": self.total if self.total_source in (
                    "--budget-total", "recorded for corpus") else None,
                "spent": asdict(self.spent()), "runs": self.runs}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".ledger-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, default=str)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
