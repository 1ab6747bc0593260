"""The persistent privacy budget of a corpus: every run's releases, across processes.

A run's ``PrivacyLedger`` knows what *that run* spent. Running twice on the same
data spends twice, so each corpus gets a ledger file in the dptext state folder
(``$DPTEXT_HOME``, else ``$XDG_DATA_HOME/dptext``, else ``~/.local/share/dptext``).
The file holds its key, the releases and public parameters of each run, and the
configured total — never any text. Runs compose sequentially: each run's parallel
groups are kept within that run, so two runs on the same classes add up.

Which ledger a run spends (its *key*), in order:

1. ``--dataset-id NAME`` of this run;
2. in ``$DPTEXT_HOME/config.toml``, the ``[datasets]`` table mapping an input (as
   given on the command line, or its absolute path) to a name, then a top-level
   ``dataset_id = "NAME"`` (every corpus of this state folder spends one budget);
3. otherwise the corpus's *keyed* content fingerprint: an HMAC-SHA-256, under this
   installation's secret salt, of the SHA-256 content fingerprint.

A dataset id names the data, not one version of it: the ledger persists when a
document is added, a typo fixed or another label column chosen (each run records
its version's fingerprint). A content fingerprint identifies exactly these
documents: any change gives a fresh, empty ledger — so name the dataset.

The salt (``ledgers/salt``, 32 random bytes, file mode 0600) is made on first use
and never leaves the state folder. Without it, anyone who knows every document but
one could test candidate values of the last one against a printed hash; with it, no
hash of the private corpus can be checked outside this installation, and nothing
dptext prints, reports or stores is the unsalted fingerprint. Back the salt up with
the ledgers: a content-keyed ledger is found through it. A ledger written before the
salt existed (named by the unsalted fingerprint) is migrated on open: its runs move
to the keyed ledger, so no spend is lost.

The total budget comes from, in order: the ``--budget-total`` of this run, the
total recorded in the ledger by an earlier run, ``budget_total`` in
``$DPTEXT_HOME/config.toml``; with none, runs are recorded but not capped.
Updates are serialised with a file lock and written atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import math
import os
import re
import secrets
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
FORMAT_VERSION = 2  # 1: keyed by the unsalted fingerprint (migrated on open)
SALT_FILE = "salt"  # in the ledgers folder
DATASET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
KEY_DATASET, KEY_CONTENT = "dataset id", "content fingerprint"


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


def _ledgers(home: Path | None) -> Path:
    return (home or state_dir()) / "ledgers"


def installation_salt(home: Path | None = None) -> bytes:
    """This installation's secret salt (made on first use, mode 0600, beside the
    ledgers). Refuses to make a new one while ledgers keyed by a lost one exist: their
    spend would silently stop counting."""
    folder = _ledgers(home)
    path = folder / SALT_FILE
    if not path.is_file():
        # a keyed ledger is written only after its salt, so the salt is checked again
        # after the ledgers: another process may have made both since the first check
        if any(_keyed_content_ledgers(folder)) and not path.is_file():
            raise ValueError(
                f"the ledger salt {path} is missing, but ledgers keyed by it exist in "
                f"{folder}: without it their spend is lost. Restore it from a backup.")
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".salt-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    try:
        salt = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError) as e:
        raise ValueError(f"the ledger salt {path} is unreadable ({e}); restore it from a "
                         "backup") from None
    if len(salt) < 16:
        raise ValueError(f"the ledger salt {path} is too short; restore it from a backup")
    return salt


def _keyed_content_ledgers(folder: Path) -> Iterator[Path]:
    for path in folder.glob("*.json") if folder.is_dir() else ():
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format", 1) >= 2 and data.get("dataset_id") is None:
                yield path


def keyed_fingerprint(fingerprint: str, home: Path | None = None) -> str:
    """The HMAC-SHA-256 of a content fingerprint under the installation's salt: what keys
    and names a content ledger, and the only corpus hash dptext shows or stores."""
    return hmac.new(installation_salt(home), fingerprint.encode("ascii"),
                    hashlib.sha256).hexdigest()


def _config(home: Path | None = None) -> tuple[Path, dict]:
    path = (home or state_dir()) / CONFIG_FILE
    if not path.is_file():
        return path, {}
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a valid TOML file ({e})") from None


def configured_total(home: Path | None = None) -> float | None:
    """``budget_total`` from ``config.toml`` in the state folder, if any."""
    path, config = _config(home)
    value = config.get("budget_total")
    return None if value is None else check_total(value, f"{path}: budget_total")


def check_dataset_id(value, what: str = "--dataset-id") -> str:
    if not (isinstance(value, str) and DATASET_ID.fullmatch(value)):
        raise ValueError(f"{what} must be 1-100 letters, digits, '.', '_' or '-' (starting "
                         f"with a letter or digit), got {value!r}")
    return value


def configured_dataset_id(input: str | None = None, home: Path | None = None
                          ) -> str | None:
    """The dataset id ``config.toml`` gives ``input``: its entry in the ``[datasets]``
    table (by the input as given, or by its absolute path), else ``dataset_id``."""
    path, config = _config(home)
    table = config.get("datasets", {})
    if not isinstance(table, dict):
        raise ValueError(f"{path}: [datasets] must be a table of input = \"dataset id\"")
    if input is not None:
        keys = [input]
        if ":" not in input or Path(input).exists():
            keys.append(str(Path(input).expanduser().resolve()))
        for key in keys:
            if key in table:
                return check_dataset_id(table[key], f"{path}: datasets.{key!r}")
    value = config.get("dataset_id")
    return None if value is None else check_dataset_id(value, f"{path}: dataset_id")


def check_total(value, what: str = "--budget-total") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive finite ε, got {value!r}")
    return float(value)


@dataclass
class CorpusBudget:
    """The ledger file of one corpus (by content) or dataset (by id). Use ``open`` (or
    ``open_budget``); ``check`` before, ``commit`` after a fit."""

    keyed_fingerprint: str  # of the corpus this run reads (``keyed_fingerprint``)
    path: Path
    total: float | None = None
    runs: list[dict] = field(default_factory=list)
    total_source: str = "none"
    dataset_id: str | None = None  # the key, when the ledger is a dataset's
    key_source: str = "default"  # where the dataset id came from

    # ------------------------------------------------------------ loading
    @classmethod
    def open(cls, fingerprint: str, *, total: float | None = None,
             home: Path | None = None, dataset_id: str | None = None,
             key_source: str = "--dataset-id") -> CorpusBudget:
        """The ledger of the corpus whose (unsalted) content ``fingerprint`` is given, or
        of ``dataset_id``; a ledger of an older dptext is migrated first."""
        home = home or state_dir()
        keyed = keyed_fingerprint(fingerprint, home)
        if dataset_id is not None:
            check_dataset_id(dataset_id)
            path = _ledgers(home) / f"dataset-{dataset_id}.json"
            budget = cls(keyed, path, dataset_id=dataset_id, key_source=key_source)
            budget._migrate(path, home)
        else:
            budget = cls(keyed, _ledgers(home) / f"{keyed}.json")
            budget._migrate(_ledgers(home) / f"{fingerprint}.json", home)
        budget._load()
        if total is not None:
            budget.total, budget.total_source = check_total(total), "--budget-total"
        elif budget.total is None:
            budget.total = configured_total(home)
            budget.total_source = f"{CONFIG_FILE}" if budget.total is not None else "none"
        return budget

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for run in data["runs"]:
                [Release(**r) for r in run["releases"]]
            return data
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(
                f"privacy ledger {path} is unreadable ({e}); it records the privacy "
                "already spent on this corpus, so dptext will not guess. Restore it from a "
                "backup, or delete it only if you know no run used this corpus.") from None

    def _migrate(self, old: Path, home: Path) -> None:
        """Bring a ledger of format 1 (``old``: named by, and recording, unsalted
        fingerprints) into this one, keyed: every run it holds is kept (merged by run id
        with any already here), then the old file goes."""
        if not old.is_file() or self._read(old).get("format", 1) >= FORMAT_VERSION:
            return
        with self._locked():
            data = self._read(old)
            if data.get("format", 1) >= FORMAT_VERSION:
                return  # another process migrated it meanwhile
            if data.get("dataset_id") != self.dataset_id or (
                    self.dataset_id is None and keyed_fingerprint(
                        str(data.get("fingerprint")), home) != self.keyed_fingerprint):
                raise ValueError(f"privacy ledger {old} belongs to another corpus")
            for run in data["runs"]:
                fp = run.pop("fingerprint", None)
                run["keyed_fingerprint"] = None if fp is None else keyed_fingerprint(fp, home)
            if self.path != old and self.path.is_file():
                self._load()
            known = {r["run_id"] for r in self.runs}
            self.runs += [r for r in data["runs"] if r["run_id"] not in known]
            if self.total is None and data.get("budget_total") is not None:
                self.total, self.total_source = float(data["budget_total"]), \
                    "recorded for corpus"
            self._write()
            if self.path != old:
                old.unlink()
                old.with_suffix(".lock").unlink(missing_ok=True)
            self.runs, self.total, self.total_source = [], None, "none"

    def _load(self) -> None:
        if not self.path.is_file():
            return
        data = self._read(self.path)
        if self.dataset_id is not None:
            if data.get("dataset_id") != self.dataset_id:
                raise ValueError(f"privacy ledger {self.path} belongs to another dataset")
        elif data.get("keyed_fingerprint") != self.keyed_fingerprint:
            raise ValueError(f"privacy ledger {self.path} belongs to another corpus")
        self.runs = list(data["runs"])
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

    # ------------------------------------------------------------ the key, in words
    @property
    def key(self) -> str:
        return KEY_DATASET if self.dataset_id is not None else KEY_CONTENT

    @property
    def noun(self) -> str:
        return "dataset" if self.dataset_id is not None else "corpus"

    @property
    def name(self) -> str:
        """The ledger's name for a message: the dataset id, or the start of the keyed
        fingerprint (salted: it cannot be checked against candidate corpora)."""
        return self.dataset_id if self.dataset_id is not None else \
            f"{self.keyed_fingerprint[:12]}…"

    def describe(self) -> str:
        """Which ledger this is, plainly (for the terminal: never the unsalted hash)."""
        if self.dataset_id is not None:
            return (f"dataset id {self.dataset_id!r} (from {self.key_source}): one ledger for "
                    "every version of this dataset")
        return (f"keyed content fingerprint {self.name}: a ledger for exactly these "
                "documents; any added, removed or edited document starts a fresh one "
                "(name the dataset with --dataset-id to keep one budget)")

    def report_entry(self) -> dict:
        """The key for a privacy report: never the fingerprint (a hash of the private
        corpus has no place in a release)."""
        entry = {"key": self.key, "source": self.key_source if self.dataset_id else "default",
                 "spent_all_runs": asdict(self.spent()), "total": self.total,
                 "total_source": self.total_source}
        if self.dataset_id is not None:
            entry["dataset_id"] = self.dataset_id
            entry["meaning"] = "one ledger for every version of the named dataset"
        else:
            entry["meaning"] = ("a ledger for exactly these documents: any change to a "
                                "document or label starts a fresh one")
        return entry

    def _refusal(self, would: float, what: str) -> BudgetExceededError:
        spent = self.spent()
        which = (f"dataset {self.dataset_id!r}" if self.dataset_id is not None
                 else f"this corpus (ledger {self.name})")
        return BudgetExceededError(
            f"privacy budget exceeded for {which}: "
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

    def _reload(self) -> None:
        """Under the lock: read the file again (another process may have spent meanwhile),
        keeping a total given to this run (``--budget-total``)."""
        explicit = (self.total, self.total_source)
        self.runs = []
        self._load()
        if explicit[1] == "--budget-total":
            self.total, self.total_source = explicit

    def has_run(self, run_id: str) -> bool:
        """Whether run ``run_id`` has an entry in this ledger (as last read)."""
        return any(r["run_id"] == run_id for r in self.runs)

    def _run(self, run_id: str) -> dict:
        """The entry of run ``run_id`` (after ``_reload``)."""
        run = next((r for r in self.runs if r["run_id"] == run_id), None)
        if run is None:
            raise ValueError(f"no run {run_id} in privacy ledger {self.path}")
        return run

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
            self._reload()
            if self.has_run(run_id):
                return self.spent()
            run = {"run_id": run_id, "command": command,
                   "created": datetime.now(UTC).isoformat(timespec="seconds"),
                   "keyed_fingerprint": self.keyed_fingerprint,
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
        data = {"format": FORMAT_VERSION, "key": self.key,
                "keyed_fingerprint": None if self.dataset_id is not None
                else self.keyed_fingerprint,
                "dataset_id": self.dataset_id,
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


def planned_run(name: str, epsilon: float, delta: float) -> Release:
    """A run's whole plan as one record, for charging a corpus before its first release
    when the run's releases are not fixed yet (dpft solves its DP-SGD noise from a
    released corpus size): an ``(ε, δ)`` block composed by basic composition, or, for
    ε = ∞, a record without DP that leaves the corpus's budget exhausted."""
    from dptext.privacy.ledger import BLOCK_MECHANISM, NOT_PRIVATE_MECHANISM
    from dptext.privacy.mechanisms import NEIGHBOURING

    private = math.isfinite(epsilon)
    return Release(
        name=name, mechanism=BLOCK_MECHANISM if private else NOT_PRIVATE_MECHANISM,
        neighbouring=NEIGHBOURING, sensitivity_norm="L2", sensitivity=0.0,
        sensitivity_reason="not applicable: the whole run, charged as its (ε, δ) guarantee"
        if private else "not applicable: no DP (ε = ∞)",
        noise_scale=0.0, noise_multiplier=0.0, dimension=0,
        epsilon=epsilon if private else math.inf, delta=delta if private else 1.0)


def settle_run(budget: CorpusBudget, run_id: str, releases: list[Release]) -> Guarantee:
    """Once a run charged as a ``planned_run`` block has made its releases, record those
    instead, so that later runs compose with them exactly (PLD) rather than by basic
    composition. Never raises what was charged: the block stays when the releases compose
    to more than it, or when they would raise the corpus's composed total. Returns the
    corpus's total spend."""
    with budget._locked():
        budget._reload()
        run = budget._run(run_id)
        before = budget.spent()
        charged = compose([Release(**r) for r in run["releases"]])
        made = compose(list(releases))
        if made.epsilon > charged.epsilon or made.delta > charged.delta * (1 + 1e-9):
            return before
        kept = run["releases"], run["guarantee"]
        run["releases"], run["guarantee"] = [asdict(r) for r in releases], asdict(made)
        if budget.spent().epsilon > before.epsilon:
            run["releases"], run["guarantee"] = kept
            return before
        budget._write()
        return budget.spent()


def recharge_run(budget: CorpusBudget, run_id: str, planned: list[Release], *,
                 allow_overrun: bool = False) -> Guarantee:
    """Charge a run settled after a failure its whole plan again, before it resumes and
    makes the rest of its releases (``settle_run`` replaces the plan once they are made).
    Refused, changing nothing, when that would take the corpus past its total. Returns the
    corpus's total spend."""
    with budget._locked():
        budget._reload()
        run = budget._run(run_id)
        run["releases"] = [asdict(r) for r in planned]
        run["guarantee"] = asdict(compose(list(planned)))
        after = budget.spent()
        if (budget.total is not None and not allow_overrun
                and after.epsilon > budget.total * (1 + 1e-9)):
            raise budget._refusal(after.epsilon, "resuming this run (its whole plan)")
        budget._write()
        return after


def open_budget(corpus, *, total: float | None = None, dataset_id: str | None = None,
                input: str | None = None, home: Path | None = None) -> CorpusBudget:
    """The ledger a run on ``corpus`` spends: by ``dataset_id``, else by the dataset id
    ``config.toml`` gives ``input``, else by the corpus's content fingerprint."""
    source = "--dataset-id"
    if dataset_id is None:
        dataset_id = configured_dataset_id(input, home)
        source = CONFIG_FILE
    return CorpusBudget.open(corpus_fingerprint(corpus.texts, corpus.labels), total=total,
                             home=home, dataset_id=dataset_id, key_source=source)
