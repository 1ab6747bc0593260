"""Compute engines: where the batch functions of a corpus-wide stage run.

Every stage that touches the whole corpus is a function over a batch of documents whose
results are summed (``map_sum``); the noise is added once, afterwards, on the driver, by
``dptext.privacy``. Which engine runs the batches is chosen in one place —
``use_engine``, entered by the run lifecycle and the CLI from ``--engine`` and
``--ray-address`` — and stages only call ``map_sum``: they do not know which engine runs
them, and no engine draws noise.

* ``LocalEngine`` (the default): a plain loop in this process, batch after batch.
* ``RayEngine``: one Ray task per batch on a cluster (``address="auto"``: a running
  cluster; ``"local"``: one started in this process for the run and stopped after it;
  or ``ray://HOST:PORT`` / ``HOST:PORT``). The driver submits a bounded number of
  batches at a time (so a corpus streamed from an iterator is never held whole) and adds
  the partial sums as they come back. The workers see the documents of their batches:
  docs/scale-out.md says what that assumes about the cluster.

Only integers are summed (numpy integer or bool arrays, scipy sparse integer matrices,
or tuples of them): integer addition is exact and order-free, so every engine and every
batching gives the same bits. A stage that sums floats puts each document's contribution
on a fixed grid first and sums the grid units (``kde.sketch``).

A batch function must be picklable (a module-level function or a small class holding
public parameters: a vocabulary, the released terms) and must not print or log anything
about its batch: on Ray, a worker's output goes to the cluster's log files.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

ENGINES = ("local", "ray")
DEFAULT_BATCH = 2000  # documents per batch (one Ray task each)
RAY_ASSUMPTION = (
    "Compute engine: Ray. The cluster's worker processes received the private documents "
    "of their batches in the clear (through Ray's object store, and over the network "
    "between nodes) and returned exact counts to the driver; the guarantee assumes every "
    "node of the cluster, its object store and its logs are as trusted as the machine "
    "that ran dptext. Workers draw no noise: it was added once, on the driver.")


class Engine(Protocol):
    name: str

    def map_sum(self, fn: Callable[[list], Any], items: Iterable, batch_size: int) -> Any:
        """Σ over batches of ``fn(batch)`` (exact integer sums)."""

    def describe(self) -> dict[str, Any]:
        """What the privacy report says about the engine (public settings only)."""

    def close(self) -> None:
        """Release what the engine started."""


def batches(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last one shorter), consumed lazily."""
    if size < 1:
        raise ValueError(f"batch_size must be >= 1, got {size}")
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _check_integer(part: Any) -> None:
    if isinstance(part, tuple | list):
        for p in part:
            _check_integer(p)
        return
    kind = getattr(getattr(part, "dtype", None), "kind", None)
    if kind is None and isinstance(part, int):
        return
    if kind not in ("i", "u", "b"):
        raise TypeError("map_sum sums integers only (exact in any order); a batch function "
                        f"returned {type(part).__name__} of dtype {kind!r}: put float "
                        "contributions on a fixed grid and return the grid units")


def add(total: Any, part: Any) -> Any:
    """``total + part`` for arrays, sparse matrices and tuples of them (``total`` None: the
    first part)."""
    _check_integer(part)
    if total is None:
        return part
    if isinstance(part, tuple | list):
        return tuple(add(t, p) for t, p in zip(total, part, strict=True))
    return total + part


class LocalEngine:
    """Batches in a plain loop, in this process (what every run did before engines)."""

    name = "local"

    def map_sum(self, fn: Callable[[list], Any], items: Iterable,
                batch_size: int = DEFAULT_BATCH) -> Any:
        total = None
        for batch in batches(items, batch_size):
            total = add(total, fn(batch))
        return add(None, fn([])) if total is None else total

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def close(self) -> None:
        pass


# -- Ray ---------------------------------------------------------------------------------
_WORKER_FNS: dict[str, Callable] = {}  # on a worker: batch functions already unpickled


def _run_batch(key: str, holder: list, batch: list) -> Any:
    """On a Ray worker: ``fn(batch)``, the function unpickled once per worker process."""
    fn = _WORKER_FNS.get(key)
    if fn is None:
        import ray

        fn = ray.get(holder[0])
        if len(_WORKER_FNS) > 8:
            _WORKER_FNS.clear()
        _WORKER_FNS[key] = fn
    return fn(batch)


#: times a batch cut off from a dying node is submitted again before the stage fails
RESUBMISSIONS = 3
#: a batch with no result after max(MIN_STALL_S, STALL_FACTOR × the slowest batch so far)
#: is taken for lost and submitted again (the first batches load models: minutes)
MIN_STALL_S = 300.0
STALL_FACTOR = 10.0


def _lost_with_its_node(error: Exception, ray) -> bool:
    """A batch that failed because its node or worker went away (not because of a bug in
    the batch function, which fails the stage as it would locally)."""
    exc = ray.exceptions
    if isinstance(error, exc.WorkerCrashedError | exc.NodeDiedError | exc.ObjectLostError
                  | exc.RaySystemError):
        return True
    return isinstance(error, exc.RayTaskError) and isinstance(
        getattr(error, "cause", None), OSError | ConnectionError | exc.RayError)


@functools.cache
def code_fingerprint() -> str:
    """A digest of the dptext package's source (every ``.py`` file under it)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _node_fingerprint() -> str:
    """On a node: the digest of that node's own dptext (a module-level function is sent
    by name, so the worker runs its installed code, not the driver's)."""
    return code_fingerprint()


def check_nodes_run_this_code(ray) -> None:
    """Every alive node's dptext has the driver's source (else a worker could count
    differently from the code that planned the releases): one tiny task pinned to each."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(_node_fingerprint)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote() for n in nodes]
    mine, other = code_fingerprint(), []
    for n, ref in zip(nodes, refs, strict=True):
        try:
            found = ray.get(ref)
        except (ray.exceptions.TaskUnschedulableError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.NodeDiedError):
            continue  # the node went away since it was listed: it will run nothing
        if found != mine:
            other.append(f"{n.get('NodeManagerAddress', '?')} ({n['NodeID'][:8]})")
    if other:
        raise ValueError(f"--engine ray: the dptext on node(s) {', '.join(other)} is not the "
                         "driver's (its source differs); install the same dptext version "
                         "on every node")


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


class RayEngine:
    """One Ray task per batch; the driver adds the partial sums.

    ``address``: ``"auto"`` (a running cluster), ``"local"`` (start one in this process,
    stopped by ``close``), or a cluster address. Ray is connected on the first
    ``map_sum``, so a run refused by its budget or resumed from its saved releases never
    starts it. If Ray is already initialised in this process, that connection is used
    (and left open).
    """

    name = "ray"

    def __init__(self, address: str = "auto", *, num_cpus: int | None = None,
                 in_flight: int | None = None):
        self.address = address
        self.num_cpus = num_cpus
        self.in_flight = in_flight
        self._owned = False
        self._remote = None

    def connect(self):
        """The ``ray`` module, connected to the cluster (on first use)."""
        try:
            import ray
        except ImportError:
            raise ValueError("--engine ray needs Ray: pip install 'dptext[ray]'") from None
        if not ray.is_initialized():
            kwargs: dict[str, Any] = dict(log_to_driver=False, logging_level="WARNING")
            if self.address == "local":
                kwargs.update(num_cpus=self.num_cpus, include_dashboard=False)
                # a cluster started here sends no usage report (a cluster's own setting
                # otherwise)
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            try:
                ray.init(address=self.address, **kwargs)
            except ConnectionError as e:
                raise ValueError(f"--engine ray: no Ray cluster at {self.address!r} ({e}); "
                                 "start one (ray start --head), give its address with "
                                 "--ray-address, or use --ray-address local") from None
            self._owned = True
        if self._remote is None:
            check_nodes_run_this_code(ray)
            # a batch lost with its worker process is recomputed by Ray (max_retries);
            # one cut off from a dying node is resubmitted by ``map_sum``
            self._remote = ray.remote(num_cpus=1, max_retries=3)(_run_batch)
        return ray

    def map_sum(self, fn: Callable[[list], Any], items: Iterable,
                batch_size: int = DEFAULT_BATCH) -> Any:
        ray = self.connect()
        limit = self.in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        key = uuid.uuid4().hex
        holder = [ray.put(fn)]  # public: the function and its public parameters
        total = None
        # task -> (its batch, attempts so far, when it was submitted)
        pending: dict[Any, tuple[list, int, float]] = {}
        slowest = 0.0  # seconds from submission to result, over the batches done so far

        def submit(batch: list, attempts: int) -> None:
            pending[self._remote.remote(key, holder, batch)] = (
                batch, attempts, time.monotonic())

        def again(ref, batch: list, attempts: int, why: str) -> None:
            # the batch draws no noise: computing it again gives the same counts
            if attempts >= RESUBMISSIONS:
                raise RuntimeError(f"a batch failed {attempts + 1} times on the Ray "
                                   f"cluster ({why}); the stage is stopped")
            pending.pop(ref)
            submit(batch, attempts + 1)

        def collect() -> None:
            nonlocal total, slowest
            stall = max(MIN_STALL_S, STALL_FACTOR * slowest)
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=stall)
            if not ready:
                # no batch came back for a long time: one lost without an error Ray
                # reports (seen when a node dies mid-task) is cancelled and submitted again
                now = time.monotonic()
                for ref, (batch, attempts, since) in list(pending.items()):
                    if now - since >= stall:
                        with contextlib.suppress(Exception):  # best effort: it may be gone
                            ray.cancel(ref, force=True)
                        again(ref, batch, attempts, f"no result after {stall:.0f} s")
                return
            ref = ready[0]
            batch, attempts, since = pending[ref]
            try:
                part = ray.get(ref)
            except Exception as e:
                if not _lost_with_its_node(e, ray):
                    raise
                again(ref, batch, attempts, type(e).__name__)
                return
            pending.pop(ref)
            slowest = max(slowest, time.monotonic() - since)
            total = add(total, part)

        try:
            for batch in batches(items, batch_size):
                while len(pending) >= limit:
                    collect()
                submit(batch, 0)
            while pending:
                collect()
        except BaseException:
            for ref in pending:  # a failed or interrupted stage leaves no batch running
                ray.cancel(ref)
            raise
        return add(None, fn([])) if total is None else total

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address}

    def close(self) -> None:
        if self._owned:
            import ray

            ray.shutdown()
            self._owned = False


_LOCAL = LocalEngine()
_current: ContextVar[Engine] = ContextVar("dptext_engine", default=_LOCAL)


def current_engine() -> Engine:
    return _current.get()


def make_engine(name: str | Engine = "local", ray_address: str | None = None) -> Engine:
    if not isinstance(name, str):
        return name
    if name == "local":
        if ray_address is not None:
            raise ValueError("--ray-address needs --engine ray")
        return LocalEngine()
    if name == "ray":
        if not ray_available():
            raise ValueError("--engine ray needs Ray: pip install 'dptext[ray]'")
        return RayEngine(ray_address or "auto")
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {name!r}")


@contextmanager
def use_engine(name: str | Engine | None = "local", ray_address: str | None = None
               ) -> Iterator[Engine]:
    """Run the ``map_sum`` calls inside the block on this engine (closed on exit); ``None``:
    keep the current one (an enclosing ``use_engine``'s, else the local engine)."""
    if name is None:
        if ray_address is not None:
            raise ValueError("--ray-address needs --engine ray")
        yield current_engine()
        return
    engine = make_engine(name, ray_address)
    token = _current.set(engine)
    try:
        yield engine
    finally:
        _current.reset(token)
        engine.close()


def map_sum(fn: Callable[[list], Any], items: Iterable, batch_size: int = DEFAULT_BATCH
            ) -> Any:
    """Σ over batches of ``items`` of ``fn(batch)``, on the current engine. ``fn`` returns
    integers (arrays, sparse matrices, or tuples of them) and ``fn([])`` zeros of the
    same shape."""
    return current_engine().map_sum(fn, items, batch_size)


def engine_notes() -> list[str]:
    """The privacy report's assumption lines for the current engine."""
    return [RAY_ASSUMPTION] if current_engine().name == "ray" else []


__all__: Sequence[str] = ("ENGINES", "LocalEngine", "RayEngine", "current_engine",
                          "engine_notes", "make_engine", "map_sum", "use_engine")
