"""Form and style: DP-KPS with and without the form profile, as whole documents.

A cell is (corpus, method, ε, seed). Methods (``--methods``):

* ``real`` — ``--per-class`` real training documents per class (the ceiling; no ε);
* ``majority`` — the majority class of the real test sample (the floor; no ε, no model);
* ``kps`` — DP-KPS without the form profile (``form=False``);
* ``kps-form`` — DP-KPS with it (``form=True``): a form drawn with each sequence, said in
  the prompt, and its mechanical parts applied to the LLM's answer (``text.form_realise``);
* ``kps-auto`` — DP-KPS with ``form="auto"``: the private selection decides.

Each private method runs at every ``--epsilons`` (ε = 1000 stands for the configuration's
ε → ∞ limit), ``--per-class`` documents per class, labels declared, through
``bench_whole_documents.generator_documents`` (the same call as that benchmark's ``kps``
cells). Every set trains the one downstream classifier of ``synthetic_protocol`` and is
tested on the same fixed sample of real test documents; beside accuracy each row keeps
the Fréchet distance between the MiniLM embeddings of the set and of the test sample
(``evaluate.fidelity.frechet_distance``, the evaluation suite's) and the Wasserstein-1
distance between their length distributions in words.

``--selection`` runs instead the keyphrase-level check (no LLM): DP-KPS's fit with its
default ``form="auto"`` at each ε and seed on each corpus, recording whether the private
selection chose the form and which model (``selection.jsonl`` beside the results).

Resumable across sessions: a cell's run folder (the DP releases, the prompts and the
LLM's completions, all of public benchmark corpora) lives in the repository under
``benchmarks/results/form-and-style/cells/`` and is committed with the results file
``benchmarks/results/form-and-style/results.jsonl``; an interrupted cell continues
without new noise or repeated prompts, a finished one is skipped.

    DPTEXT_LLM_THREADS=1 nice -n 10 python benchmarks/bench_form_style.py \\
        --corpora health-tweets --epsilons 6,1000 --seeds 0,1,2 --per-class 4
    nice -n 12 python benchmarks/bench_form_style.py --selection \\
        --corpora drug-reviews,bbc-news,health-tweets,banking77,complaints --epsilons 6
    python benchmarks/bench_form_style.py --report --write

At the whole-documents protocol's size (50 or 100 a class), a health-tweets cell of 50 a
class is about 800 short prompts, about 4 s each on one core beside another LLM job here
(an hour a cell: two cells a session on two cores). BBC News at 20 a class (its articles
cut to a paragraph) fits here too, 11-15 min a cell. The longer documents of the other
corpora at the protocol's size need a GPU: ``llm_stage_offload.py --study form-and-style``
fits the cells here, writes their documents on a GPU's llama-servers
(``benchmarks/gpu/pack.sh`` says how), lands the journals, and this script, run with the
same ``--llm`` and ``--per-class``, finishes and scores them. The health tweets' cells at
50 a class (kps and kps-form, ε = 6 and 1000, seeds 0–2) are fitted and committed; run
here with the default ``--llm``:

    DPTEXT_LLM_THREADS=1 nice -n 10 python benchmarks/bench_form_style.py \
        --corpora health-tweets --methods kps-form --epsilons 6 --seeds 0 --per-class 50

The complaints at 10 a class (``--per-class 10``, 7-10 min a cell) and Banking77 at 4 a
class (``--per-class 4``, about 10 min a cell) fit here the same way, one cell a core.

The issue's whole design adds ``--corpora bbc-news,complaints,banking77,drug-reviews``
and ``kps-auto`` (the default path) to ``--methods``; at 4 documents per class a
health-tweets cell took 3 minutes on a core of its own and up to 35 on an oversubscribed
machine (the LLM writing).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import numpy as np

from bench_whole_documents import (
    Timer,
    _terminate,
    cell_name,
    corpus_data,
    generator_documents,
)
from dptext.generators.kps.form import FORM_NAME
from harness.options import add_list, study_parser
from harness.provenance import command_line, cpu, src_tree
from harness.report import markdown_table, record
from harness.stats import mean_sd
from harness.store import append_row, load_rows
from synthetic_protocol import (
    BENCH_LLM,
    DATASETS,
    BenchData,
    downstream,
    llm_lock,
    real_sample,
)

#: DP-KPS's ``form`` option of each private method
FORMS = {"kps": False, "kps-form": True, "kps-auto": "auto"}
METHODS = ("real", "majority", *FORMS)
DELTA = 1e-5
HERE = Path(__file__).resolve().parent / "results" / "form-and-style"
RESULTS = HERE / "results.jsonl"
SELECTIONS = HERE / "selection.jsonl"


def words(texts) -> np.ndarray:
    return np.array([len(t.split()) for t in texts], dtype=np.float64)


def style_scores(texts: list[str], data: BenchData) -> dict:
    """Fréchet distance of MiniLM embeddings and W1 of word counts, set vs real test."""
    from scipy.stats import wasserstein_distance

    from dptext.evaluate.fidelity import frechet_distance
    from synthetic_protocol import _encoder

    enc = _encoder()
    if data._test_x is None:
        data._test_x = np.asarray(enc.encode(list(data.test.texts)))
    kept = [t for t in texts if t.strip()]
    x = np.asarray(enc.encode(kept))
    return {"frechet": frechet_distance(data._test_x, x),
            "length_w1": float(wasserstein_distance(words(kept), words(data.test.texts))),
            "mean_words": float(words(kept).mean())}


def majority_row(data: BenchData) -> dict:
    """The floor: every test document labelled with the test sample's majority class."""
    labels = np.asarray(data.test.labels, dtype=object)
    _, counts = np.unique(labels, return_counts=True)
    return {"documents": 0, "accuracy": float(counts.max() / counts.sum()), "llm_calls": 0}


def run_cell(args, data: BenchData, method: str, eps: float | None, seed: int) -> dict:
    if method == "majority":
        return majority_row(data)
    folder = args.cells / cell_name(data.name, method, eps, seed, args.per_class)
    folder.mkdir(parents=True, exist_ok=True)
    row: dict = {"llm_calls": 0}
    with Timer(folder) as timer:
        if method == "real":
            texts, labels = real_sample(data, args.per_class, seed)
        else:
            from synthetic_protocol import shared_backend

            with llm_lock(args.llm_lock):
                pairs, row["llm_calls"], row["spent_epsilon"] = generator_documents(
                    "kps", data, eps, args.per_class, seed, folder, shared_backend(args.llm),
                    args.concurrency, form=FORMS[method])
            texts, labels = [t for t, _ in pairs], [lab for _, lab in pairs]
            # whether the run released a form profile (kps-auto: what the selection chose)
            row["form_released"] = FORM_NAME in (folder / "synthetic.privacy.json").read_text()
    scores = downstream(texts, labels, data, seed=seed)
    return {**row, "documents": len(texts), "accuracy": scores["accuracy"],
            "macro_f1": scores["macro_f1"], **style_scores(texts, data),
            "wall_s": timer.total, "cpu": cpu()}


def selection_row(data: BenchData, eps: float, seed: int) -> dict:
    """One default DP-KPS fit (``form="auto"``, labels declared; a ledger of its own, no
    corpus budget: a public benchmark corpus): what the private selection chose."""
    from dptext.generators.kps import KeyphraseSeeder
    from dptext.privacy import PrivacyLedger

    started = time.perf_counter()
    seeder = KeyphraseSeeder(epsilon=eps, delta=DELTA, labels=data.classes)
    seeder.fit(data.train, rng=np.random.default_rng(seed), ledger=PrivacyLedger())
    sel = seeder.selection_
    form_eps = next((r.epsilon for r in seeder.ledger_.releases if r.name == FORM_NAME), None)
    return {"form_chosen": sel.get("form"), "model": sel["chosen"], "form_epsilon": form_eps,
            "spent_epsilon": seeder.ledger_.guarantee().epsilon,
            "fit_s": time.perf_counter() - started, "cpu": cpu()}


def selection_report(rows: list[dict]) -> str:
    if not rows:
        return ""
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["corpus"], r["epsilon"]), []).append(r)
    table = [[corpus, f"{eps:g}", len(cell),
              f"{sum(bool(r['form_chosen']) for r in cell)} of {len(cell)}",
              ", ".join(sorted({r["model"] for r in cell})),
              f"{cell[0]['form_epsilon']:.3g}" if cell[0]["form_epsilon"] else "–"]
             for (corpus, eps), cell in sorted(cells.items())]
    return ("\n\n**Does the private selection choose the form?** DP-KPS's default fit "
            "(`form=\"auto\"`, labels declared, δ = 1e-5), keyphrase level (no LLM), "
            f"`{SELECTIONS.relative_to(SELECTIONS.parents[3])}`:\n\n"
            + markdown_table(["corpus", "ε", "seeds", "form chosen", "model chosen",
                              "form profile's ε"], table))


def run_selections(args) -> None:
    done = {(r["corpus"], r["epsilon"], r["seed"]) for r in load_rows(SELECTIONS)}
    for seed in args.seeds:  # every corpus once before the next seed
        for corpus in args.corpora:
            for eps in args.epsilons:
                if (corpus, eps, seed) in done:
                    continue
                row = {"corpus": corpus, "epsilon": eps, "seed": seed, "src": src_tree(),
                       "command": command_line(),
                       **selection_row(corpus_data(corpus), eps, seed)}
                append_row(SELECTIONS, row)
                print(f"{corpus} ε={eps:g} seed {seed}: form {row['form_chosen']}, "
                      f"{row['model']}, {row['fit_s']:.0f} s", flush=True)


def design(args) -> list[tuple[str, str, float | None, int]]:
    """The cells in the order they run: per corpus the floor and the ceiling, then per ε
    and seed the private methods side by side (a paired comparison completes first)."""
    private = [m for m in args.methods if m in FORMS]
    return [cell for c in args.corpora for cell in (
        [(c, "majority", None, 0)] * ("majority" in args.methods)
        + [(c, "real", None, s) for s in args.seeds if "real" in args.methods]
        + [(c, m, e, s) for e in args.epsilons for s in args.seeds for m in private])]


def key(r: dict) -> tuple:
    return (r["corpus"], r["method"], r["epsilon"], r["seed"], r["per_class"], r["llm"])


# ------------------------------------------------------------------ report
COLUMNS = ["corpus", "method", "ε", "per class", "seeds", "accuracy", "macro-F1",
           "Fréchet", "length W1 (words)", "mean words", "LLM calls"]


def report(rows: list[dict], args) -> str:
    groups: dict[tuple, list[dict]] = {}
    rows = [r for r in rows if r["llm"] == args.llm]
    for r in rows:  # the majority class does not depend on the size: one row a corpus
        floor = r["method"] == "majority"
        cell = groups.setdefault((r["corpus"], r["method"], r["epsilon"],
                                  None if floor else r["per_class"]), [])
        if not (floor and cell):
            cell.append(r)
    order = {m: i for i, m in enumerate(METHODS)}
    table = []
    for (corpus, method, eps, n), cell in sorted(
            groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]], kv[0][2] or 0,
                                            kv[0][3] or 0)):
        def col(name, cell=cell):
            return mean_sd([r[name] for r in cell if r.get(name) is not None])
        table.append([corpus, method, "–" if eps is None else f"{eps:g}",
                      "–" if method == "majority" else n, len(cell), col("accuracy"),
                      col("macro_f1"), col("frechet"), col("length_w1"), col("mean_words"),
                      sum(r["llm_calls"] for r in cell)])
    done = {key(r) for r in rows}
    sizes: dict[str, set] = {}  # each corpus at the sizes it was run at (else --per-class)
    for r in rows:
        sizes.setdefault(r["corpus"], set()).add(r["per_class"])
    missing = [f"{c} / {m} / ε = {'–' if e is None else f'{e:g}'} / seed {s} / {n} a class"
               for c, m, e, s in design(args) for n in sorted(sizes.get(c, {args.per_class}))
               if (c, m, e, s, n, args.llm) not in done]
    return (
        f"Every cell: `{RESULTS.relative_to(RESULTS.parents[3])}`, each one's run folder "
        "(DP releases, prompts, completions) beside it under `cells/`. LLM: "
        f"`{args.llm}`; δ = {DELTA:g}; labels declared; ε = 1000 stands for ε → ∞. "
        "Downstream: MiniLM + the evaluation suite's MLP head trained on each set, tested on "
        "a fixed sample of ≤ 2,000 real test documents (mean ± sd over seeds). Fréchet: "
        "between the MiniLM embeddings of the set and of the test sample; length W1: the "
        "Wasserstein-1 distance between their word-count distributions. \"majority\": the "
        "test sample's majority class (the floor). kps-form: the form stated in the "
        "prompt and its mechanical parts (length cut, the drawn link domain at the end, a "
        "hashtag) applied to the answer (`src/dptext/text/form_realise.py`); stated in the "
        "prompt alone (commit 5c229ce), it scored 0.190 ± 0.021 at ε = 6 beside kps's "
        "0.187 ± 0.025 on the same kps cells, its documents 19 words long on average: the "
        "0.5B model ignored the length and wrote no link. Drug reviews: the test sample is "
        "65 % positive while every training set is balanced, so accuracy falls below the "
        "majority class's and macro-F1 is the figure to read; the prompts cap a review at "
        "96 tokens (about 70 words) against the real reviews' median of 86 words, so the "
        "longer drawn lengths cannot be followed. Their kps-form cells were drawn with "
        "the pooled shrinkage of the form profile (commit 8fd9698) and checked for the "
        "form restated as meta-text (commit 450c961). BBC News: 20 a class on this CPU "
        "(the protocol's 50 a class of long articles needs a GPU); the prompts cap an "
        "article at 64 tokens (a paragraph, about 45 words) against the real articles' "
        "mean of about 400 words, so the drawn length is cut and what the form can add is "
        "its shape (a title line, paragraphs, a quote) and its tone. The complaints: 10 a "
        "class on this CPU (80 documents a set, so read the sd); the prompts cap a complaint "
        "at 96 tokens (about 70 words) against the real complaints' mean of about 220, so "
        "the drawn length is cut there too; their cells were written with the refusal and "
        "echo checks of commit a175b20 (src 355dd69), and the later checks (a refusal after "
        "a label, terms listed back with the commas inside the quotes, slots such as "
        "`[Customer's Name]`) flag 2–5 of the 80 documents of each of their 12 cells. "
        "Banking77: 4 a class (308 documents of 77 intents), 32 tokens, about as "
        "long as the real questions (11 words), so the drawn length can be followed.\n\n"
        + markdown_table(COLUMNS, table)
        + "\n\nCells of the requested design not run (yet):"
        + ("\n\n" + "\n".join(f"* {m}" for m in missing) if missing else " none.")
    )


TITLE = "Form and style: DP-KPS with and without the form profile"


def main() -> None:
    ap = study_parser(__doc__, corpora=["health-tweets"], epsilons=[6, 1000], seeds=[0, 1, 2],
                      report=True)
    add_list(ap, "--methods", default=["real", "majority", "kps", "kps-form"])
    ap.add_argument("--per-class", type=int, default=4)
    ap.add_argument("--llm", default=BENCH_LLM)
    ap.add_argument("--concurrency", type=int, default=1, help="prompts in flight")
    ap.add_argument("--llm-lock", default=None, help="a lock file held while the LLM runs")
    ap.add_argument("--selection", action="store_true",
                    help="the keyphrase-level check of the selection's choice (no LLM)")
    args = ap.parse_args()
    unknown = set(args.methods) - set(METHODS) or set(args.corpora) - set(DATASETS)
    if unknown:
        ap.error(f"unknown {sorted(unknown)}; methods: {', '.join(METHODS)}; corpora: "
                 f"{', '.join(DATASETS)}")
    args.cells = HERE / "cells"
    signal.signal(signal.SIGTERM, _terminate)
    if args.selection and not args.report:
        run_selections(args)
    elif not args.report:
        done = {key(r) for r in load_rows(RESULTS)}
        for corpus, method, eps, seed in design(args):
            if (corpus, method, eps, seed, args.per_class, args.llm) in done:
                continue
            row = {"corpus": corpus, "method": method, "epsilon": eps, "seed": seed,
                   "per_class": args.per_class, "llm": args.llm, "src": src_tree(),
                   "command": command_line(),
                   **run_cell(args, corpus_data(corpus), method, eps, seed)}
            append_row(RESULTS, row)
            print(f"{corpus} {method} ε={eps} seed {seed}: accuracy {row['accuracy']:.3f}, "
                  f"Fréchet {row.get('frechet', float('nan')):.3f}, "
                  f"{row['documents']} documents, {row['llm_calls']} LLM calls, "
                  f"{row.get('wall_s', 0):.0f} s", flush=True)
    text = report(load_rows(RESULTS), args) + selection_report(load_rows(SELECTIONS))
    if args.write:
        record("form-and-style", TITLE, text)
    else:
        print(text)


if __name__ == "__main__":
    main()
