"""Scale-out of DP-KPS's counting stages: the local engine against Ray with 1 and 2 workers.

The corpus is made of public text and streamed: document i is 6–14 sentences drawn (with a
seeded generator, so every engine sees the same documents) from the sentences of the
bundled ``demo:bbc-news`` corpus (a public dataset), and its class is the class of the
article its first sentence came from. The documents are generated batch by batch as
``map_sum`` consumes them, so the driver never holds the corpus (only the sentence pool,
about 40,000 sentences).

Timed, per engine, each stage as ``dptext.compute.map_sum`` runs it (noise excluded: it is
one draw on the driver, the same for every engine):

* vocabulary histogram — ``FirstTermCounts`` (first S = 80 distinct terms of english:20000);
* class × term histogram — ``ClassTermCounts`` (the default model's one release);
* KDE sketch sums — ``SketchUnits`` over a stand-in Ṽ (the 1,000 most frequent English
  words, random unit embeddings, one sketch of I = 1,000 features; 8 windows a document).

Every engine's sums are checked equal to the local engine's, bit for bit. Ray runs start
a local cluster in this process (``ray.init(num_cpus=k)``; its start-up is timed apart).
For comparison, the last row runs the same batch functions through Ray Data
(``from_items`` → ``map_batches``), which dptext does not use.

    python benchmarks/bench_scale_out.py [--documents 20000] [--write]
    nice python benchmarks/bench_scale_out.py --documents 1000000 --repeats 1 --no-ray-data --write
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import numpy as np

from dptext.compute import LocalEngine, RayEngine, ray_available
from dptext.corpus import read_corpus
from dptext.generators.kps.releases import DocumentTerms
from dptext.kde.rff import FourierFeatures
from dptext.kde.sketch import SketchUnits, phase_tables
from dptext.keyphrases.histogram import ClassTermCounts
from dptext.text import PublicVocabulary, load_vocabulary
from dptext.text.extract import FirstTermCounts
from harness.options import add_list, study_parser
from harness.report import markdown_table, record

TERMS_PER_DOC = 80
BATCH = 2000


def sentence_pool() -> tuple[list[str], np.ndarray, list[str]]:
    """Sentences of the public demo corpus, each with its article's class."""
    import regex

    bbc = read_corpus("demo:bbc-news")
    classes = sorted(set(bbc.labels))
    split = regex.compile(r"(?<=[.!?])\s+")
    sentences, owners = [], []
    for text, label in zip(bbc.texts, bbc.labels, strict=True):
        for s in split.split(text):
            if len(s) > 20:
                sentences.append(s)
                owners.append(classes.index(label))
    return sentences, np.asarray(owners), classes


def documents(pool: list[str], owners: np.ndarray, n: int, seed: int = 0
              ) -> Iterator[tuple[str, int]]:
    """``n`` (text, class id) pairs, generated lazily and identically for a given seed."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        picks = rng.integers(0, len(pool), rng.integers(6, 15))
        yield " ".join(pool[i] for i in picks), int(owners[picks[0]])


class _Partial:
    """Ray Data's map_batches wants columns: the batch's sum as one row (dense)."""

    def __init__(self, fn, texts: bool):
        self.fn = fn
        self.texts = texts

    def __call__(self, batch):
        items = list(batch["text"]) if self.texts else \
            list(zip(batch["text"], batch["c"].tolist(), strict=True))
        part = self.fn(items)
        part = part.toarray() if hasattr(part, "toarray") else part
        return {"part": part[None]}


class RayDataEngine:
    """For comparison only: the same sums with Ray Data (``from_items`` → ``map_batches`` →
    the driver adds the rows). ``from_items`` needs the whole corpus on the driver first."""

    def __init__(self, workers: int):
        self.workers = workers

    def connect(self):
        import ray

        ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False,
                 logging_level="WARNING")
        ray.data.DataContext.get_current().enable_progress_bars = False

    def map_sum(self, fn, items, batch_size):
        import ray

        texts = not isinstance(fn, ClassTermCounts | SketchUnits)
        rows = [{"text": x} if texts else {"text": x[0], "c": x[1]} for x in items]
        parts = ray.data.from_items(rows).map_batches(
            _Partial(fn, texts), batch_size=batch_size, batch_format="numpy").take_all()
        return np.sum([p["part"] for p in parts], axis=0)

    def close(self):
        import ray

        ray.shutdown()


def _rss_mb() -> float:
    """This process's resident memory (Linux /proc), in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS:
    """The driver's peak resident memory while a stage runs (sampled every 20 ms): what
    streaming keeps small. Ray's worker processes are not counted."""

    def __enter__(self) -> PeakRSS:
        self.peak, self._stop = _rss_mb(), threading.Event()

        def sample() -> None:
            while not self._stop.wait(0.02):
                self.peak = max(self.peak, _rss_mb())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def texts_only(items: Iterator[tuple[str, int]]) -> Iterator[str]:
    return (text for text, _ in items)


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--documents", type=int, default=20_000)
    add_list(ap, "--workers", default=[1, 2], convert=int, help="Ray worker counts to time")
    ap.add_argument("--repeats", type=int, default=2,
                    help="runs of each stage (the first also warms Ray's workers)")
    ap.add_argument("--no-ray-data", action="store_true",
                    help="skip the Ray Data comparison (it materialises the corpus)")
    args = ap.parse_args()
    pool, owners, classes = sentence_pool()
    vocab = load_vocabulary("english:20000")
    released = PublicVocabulary("stand-in", vocab.terms[:1000])
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((len(released), 256)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    ff = FourierFeatures.draw(256, 1, 1000, 1.0, rng)
    stages = {
        "vocabulary histogram": (FirstTermCounts(vocab.extractor(), TERMS_PER_DOC), True),
        "class × term histogram": (ClassTermCounts(vocab.extractor(), TERMS_PER_DOC,
                                                   len(classes)), False),
        "KDE sketch sums (I = 1,000)": (SketchUnits(DocumentTerms(released.extractor(), 10),
                                                    len(classes), ff, phase_tables(emb, ff),
                                                    8), False),
    }
    n = args.documents
    counts = args.workers
    engines = [("local", None)] + [(f"ray, {k} worker{'s' * (k > 1)}", k) for k in counts]
    if counts and not args.no_ray_data:
        engines.append((f"ray data, {counts[-1]} workers", -counts[-1]))
    if len(engines) > 1 and not ray_available():
        print("ray is not installed (pip install -e '.[ray]'): timing the local engine only")
        engines = engines[:1]
    started = time.perf_counter()
    for _ in documents(pool, owners, n):
        pass
    generation = time.perf_counter() - started  # part of every stage's time (on the driver)
    reference: dict[str, np.ndarray] = {}
    rows, startup, seconds = [], {}, {}
    for name, workers in engines:
        engine = LocalEngine() if workers is None else \
            RayEngine("local", num_cpus=workers) if workers > 0 else RayDataEngine(-workers)
        if workers is not None:
            started = time.perf_counter()
            engine.connect()
            startup[name] = time.perf_counter() - started
        row = [name]
        for stage, (fn, texts) in stages.items():
            times = []
            for _ in range(args.repeats):  # the first run also warms Ray's workers (imports)
                items = documents(pool, owners, n)
                started = time.perf_counter()
                with PeakRSS() as mem:
                    total = engine.map_sum(fn, texts_only(items) if texts else items, BATCH)
                times.append(time.perf_counter() - started)
            seconds[name, stage] = times[-1]
            row.append(f"{times[-1]:.2f}" + (f" ({times[0]:.2f})" if len(times) > 1 else "")
                       + f", {mem.peak:.0f} MiB")
            dense = total.toarray() if hasattr(total, "toarray") else total
            if stage in reference:
                assert np.array_equal(dense, reference[stage]), f"{name}: {stage} differs"
            else:
                reference[stage] = dense
            print(f"{name:18s} {stage:30s} {row[-1]}", flush=True)
        engine.close()
        rows.append(row)
    header = ["engine", *[f"{s}: s, driver peak" for s in stages]]
    scaling = [f"{stage}: local / {name} = {seconds['local', stage] / seconds[name, stage]:.2f}"
               for name, workers in engines if workers and workers > 1 for stage in stages]
    body = (f"{n:,} documents of public text streamed in batches of {BATCH:,} (sentences of "
            "demo:bbc-news recombined, 6–14 a document; see the script), S = "
            f"{TERMS_PER_DOC}, english:20000, {len(classes)} classes. Wall seconds of each "
            f"stage's `map_sum`, run {args.repeats} time(s): the last run, and in parentheses "
            "the first (on Ray it also starts the stage's worker processes, which import "
            "dptext's modules); driver peak: the driver process's peak resident memory "
            "during the stage (Ray's workers not counted). "
            "Noise excluded: one draw on the driver whatever the engine; "
            "every engine's sums equal the local engine's bit for bit. Ray: a local cluster "
            "started in the process (start-up, not included: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in startup.items())
            + "), one task per batch, at most 2 × CPUs batches in flight (`RayEngine`); "
            "'ray data': the same batch functions through Ray Data (`from_items` → "
            "`map_batches` → the driver adds the rows; it needs the corpus materialised "
            "on the driver, not streamed), for comparison only. Generating the "
            f"documents alone (on the driver, inside every figure) takes {generation:.2f} s."
            + (" Speed-up: " + "; ".join(scaling) + "." if scaling else "") + "\n\n")
    table = markdown_table(header, rows)
    print(table)
    if args.write:
        record("scale-out", "Scale-out: counting stages, local engine vs Ray",
               body + table + f"\n\nRun at {n:,} documents on one "
               "2-core machine that other work shares (the load average above): the driver "
               "(generating and pickling the batches, adding the partial sums) and the "
               "workers share the same two cores, so two workers can at best halve a stage "
               "and one worker shows the engine's overhead (task dispatch, the object "
               "store, each worker building its phrase automaton once per stage). A "
               "cluster's nodes have cores of their own; not measured here.")


if __name__ == "__main__":
    main()
