"""The whole-documents study's design and report (``bench_whole_documents.py`` runs its
cells): which cells a design asks for, which rows answer them, and the tables of
docs/benchmarks.md and the README that pool them over seeds."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from harness.report import markdown_table
from harness.stats import Pooled, holm, welch
from synthetic_protocol import BENCH_LLM

METHODS = ("real", "kps", "floor", "pate", "augpe", "invisibleink", "dpft")
PRIVATE = ("kps", "pate", "augpe", "invisibleink", "dpft")  # the methods with an ε
RESULTS = Path(__file__).resolve().parent / "results" / "whole-documents.jsonl"


def key(corpus: str, method: str, eps, seed: int, per_class: int, llm: str) -> tuple:
    return (corpus, method, None if eps is None else float(eps), seed, per_class, llm)


def is_summary(row: dict) -> bool:
    return row.get("kind") == "summary"


def seed_keys(r: dict) -> set[tuple]:
    """The (cell, seed) keys a row gives a result for: its seed, or each seed of a summary."""
    return {key(r["corpus"], r["method"], r["epsilon"], seed, r["per_class"], r["llm"])
            for seed in (r["seeds"] if is_summary(r) else [r["seed"]])}


#: PATE's public candidates per document (its default, which every cell here used)
CANDIDATES_PER_DOC = 4


def older_pate(r: dict) -> bool:
    """Whether a PATE row ran before two fixes the design needs: each seed its own pool of
    public candidates (a row without ``public_seed`` reused seed 0's; a summary's seeds all
    did), and candidates the LLM refused or looped in asked again (commit 236afd6; before
    it a cell made exactly one call per candidate and kept the refusals)."""
    return r.get("public_seed") is None and (
        is_summary(r) or r["seed"] != 0 or r["llm_calls"] == CANDIDATES_PER_DOC * r["documents"])


def stale(r: dict) -> bool:
    """A row the design wants redone: an older PATE row."""
    return r["method"] == "pate" and older_pate(r)


def done_keys(rows: list[dict]) -> set[tuple]:
    """Every (cell, seed) with a result, except stale PATE rows: a run redoes their seeds,
    each with its own pool."""
    return set().union(*(seed_keys(r) for r in rows if not stale(r)))


def current(rows: list[dict]) -> list[dict]:
    """The rows a report stands on: a stale PATE row gives way once any of its seeds is
    redone (a summary cannot give up one seed and keep the others)."""
    redone = done_keys(rows)
    return [r for r in rows if not (stale(r) and seed_keys(r) & redone)]


def design(args) -> list[tuple[str, str, float | None, int]]:
    """Every requested cell, seed-major: a partial run has whole comparisons for seed 0."""
    out = []
    for seed in args.seeds:
        for corpus in args.corpora:
            for method in args.methods:
                for eps in (args.epsilons if method in PRIVATE else [None]):
                    out.append((corpus, method, eps, seed))
    return out


def pooled_cell(rows: list[dict]) -> dict:
    """One line of the report from the cell rows and summary rows of one cell."""
    acc, f1, kp, diff = Pooled(), Pooled(), Pooled(), Pooled()
    seeds, docs, calls, hours = [], 0, 0.0, 0.0
    for r in rows:
        if is_summary(r):
            n = len(r["seeds"])
            acc.add(n, *r["accuracy"])
            f1.add(n, *r["macro_f1"])
            if r.get("keyphrases_only"):
                kp.add(n, *r["keyphrases_only"])
                diff.add(n, *r["documents_minus_keyphrases"])
            seeds += r["seeds"]
            d = n * r["documents_per_seed"]
            docs += d
            calls += (r["llm_calls_per_1000"] or 0) * d / 1000
            hours += (r["wall_hours_per_1000"] or 0) * d / 1000
        else:
            acc.add(1, r["accuracy"])
            f1.add(1, r["macro_f1"])
            if r.get("keyphrases_only") is not None:
                kp.add(1, r["keyphrases_only"])
                diff.add(1, r["accuracy"] - r["keyphrases_only"])
            seeds.append(r["seed"])
            docs += r["documents"]
            calls += r["llm_calls"]
            hours += r["wall_s"] / 3600
    return {"seeds": sorted(seeds), "accuracy": acc, "macro_f1": f1, "keyphrases": kp,
            "difference": diff, "documents": docs, "calls": calls, "hours": hours}


def augpe_curve(rows: list[dict]) -> list[tuple[int, Pooled, float]]:
    """Aug-PE's accuracy after each iteration t over the seeds of one cell, with the LLM
    calls per 1,000 final documents that population t had cost."""
    docs = sum(r["documents"] for r in rows)
    curve = []
    for t in range(min(len(r["by_iteration"]) for r in rows)):
        acc = Pooled()
        for r in rows:
            acc.add(1, r["by_iteration"][t][1])
        curve.append((t, acc, 1000 * sum(r["by_iteration"][t][2] for r in rows) / docs))
    return curve


def first_reaching(curve: list[tuple[int, Pooled, float]], target: float):
    """The first ``(t, accuracy, calls)`` of a curve whose mean accuracy reaches ``target``."""
    return next((point for point in curve if point[1].mean >= target), None)


def augpe_against_kps(got: dict[tuple, list[dict]]) -> str:
    """Aug-PE's accuracy by iteration beside DP-KPS at the same (corpus, ε, size), and the
    LLM calls Aug-PE spends to reach DP-KPS's mean accuracy."""
    table, verdicts = [], []
    for (corpus, method, eps, per_class), cell in sorted(got.items(), key=group_order):
        rows = [r for r in cell if r.get("by_iteration")]
        if method != "augpe" or not rows:
            continue
        curve = augpe_curve(rows)
        kps = got.get((corpus, "kps", eps, per_class))
        k = pooled_cell(kps) if kps else None
        k_calls = 1000 * k["calls"] / k["documents"] if k else None
        seeds = ", ".join(str(r["seed"]) for r in rows)
        for t, acc, calls in curve:
            table.append([corpus, f"{eps:g}", seeds, t, acc, f"{calls:.0f}",
                          k["accuracy"] if k else "–", f"{k_calls:.0f}" if k else "–"])
        if not k:
            continue
        reached = first_reaching(curve, k["accuracy"].mean)
        best = max(curve, key=lambda point: point[1].mean)
        verdicts.append(
            f"* {corpus}, ε = {eps:g}: " + (
                f"Aug-PE reaches DP-KPS's {k['accuracy'].mean:.3f} after iteration "
                f"{reached[0]} with {reached[2] / k_calls:.1f}× DP-KPS's LLM calls"
                if reached else
                f"Aug-PE does not reach DP-KPS's {k['accuracy'].mean:.3f} in {len(curve) - 1} "
                f"iterations (best {best[1].mean:.3f} after iteration {best[0]}) and spends "
                f"{curve[-1][2] / k_calls:.1f}× DP-KPS's LLM calls"))
    if not table:
        return ""
    return (
        "\n\n**Aug-PE by iteration, beside DP-KPS.** Aug-PE's population after iteration t "
        "(saved by its run) scored by the same classifier, beside the LLM calls the run had "
        "made when it was complete, as the run saved them per iteration (retries included; "
        "N per iteration for run folders from before Aug-PE retried loops and refusals). "
        "Every population t is post-processing of releases within the run's ε.\n\n"
        + markdown_table(["corpus", "ε", "seeds", "Aug-PE iteration t", "Aug-PE accuracy",
                          "Aug-PE LLM calls per 1,000 documents", "DP-KPS accuracy",
                          "DP-KPS LLM calls per 1,000 documents"], table)
        + ("\n\n" + "\n".join(verdicts) if verdicts else ""))


def kps_against_others(got: dict[tuple, list[dict]]) -> str:
    """DP-KPS against every other private method at the same (corpus, ε, size): the
    difference of mean accuracies and Welch's test over seeds. "Ahead" or "behind" only
    where p < 0.05; a cell with one seed is not tested. Holm's adjusted p says which
    verdicts stand as a family (a reader picking single rows out of many)."""
    pairs, tally = [], {}
    for (corpus, method, eps, per_class), cell in sorted(got.items(), key=group_order):
        kps = got.get((corpus, "kps", eps, per_class))
        if method not in PRIVATE or method == "kps" or not kps:
            continue
        k, o = pooled_cell(kps)["accuracy"], pooled_cell(cell)["accuracy"]
        t, pvalue = welch(k, o) if min(k.n, o.n) >= 2 else (None, None)
        verdict = ("not tested (1 seed)" if t is None else "not settled" if pvalue >= 0.05
                   else "DP-KPS ahead" if t > 0 else "DP-KPS behind")
        tally.setdefault(verdict, []).append(f"{corpus} {method} ε = {eps:g}")
        name = f"{method} (older runs)" if method == "pate" and older(cell) else method
        pairs.append((corpus, eps, name, o, k, t, pvalue, verdict))
    if not pairs:
        return ""
    adjusted = iter(holm([pair[6] for pair in pairs if pair[6] is not None]))
    table = [[corpus, f"{eps:g}", name, o, k, f"{k.mean - o.mean:+.3f}",
              *(["–"] * 3 if t is None else [f"{t:.1f}", f"{p:.3f}", f"{next(adjusted):.3f}"]),
              verdict]
             for corpus, eps, name, o, k, t, p, verdict in pairs]
    return (
        "\n\n**DP-KPS against each other method at equal ε.** The rows above, paired by "
        "(corpus, ε, documents per class): the difference of mean accuracies and Welch's t "
        "test over the seeds (two-sided p). \"Ahead\" and \"behind\" where p < 0.05; "
        "with 3 seeds a side and equal sds that takes a difference of 2.3 sds (t ≥ 2.78 at "
        "4 degrees of freedom). PATE cells marked \"older runs\" hold rows from before "
        "two fixes: `dptext.synthesize` gave PATE the run's seed (before it, every seed "
        "shared one pool of public candidates, folds and queried subset, so the sd leaves "
        "out the pool's variation and a verdict against them is surer than it should be), "
        "and PATE asked refused or looping candidates again (before it, refusals stayed in "
        "the pool as candidates). "
        "Each such seed is listed below to run again; its new row replaces the old. "
        "\"Holm p\" adjusts p for the table's tests as one family: a row "
        "taken on its own out of this many wants it below 0.05. The claim \"DP-KPS is "
        "ahead of every other method\" needs no adjustment (it holds only if every row's "
        "own test says so).\n\n"
        + markdown_table(["corpus", "ε", "method", "its accuracy", "DP-KPS accuracy",
                          "DP-KPS − it", "Welch t", "p", "Holm p", "verdict"], table)
        + "\n\n" + "\n".join(f"* {verdict}: {', '.join(cells)}"
                               for verdict, cells in sorted(tally.items())))


def report_order(corpus: str, method: str, eps: float | None) -> tuple:
    """Where a cell stands in the report: by corpus, then methods as ``METHODS`` lists them,
    then ε."""
    return corpus, METHODS.index(method), eps or 0


def group_order(item: tuple[tuple, list[dict]]) -> tuple:
    """Sort key of a ``((corpus, method, ε, per class[, LLM]), rows)`` group of the
    report."""
    (corpus, method, eps, per_class, *llm), _ = item
    return *report_order(corpus, method, eps), per_class, *llm


COLUMNS = ["corpus", "method", "ε", "per class", "seeds", "accuracy",
           "keyphrases only (same sequences)", "documents − keyphrases", "macro-F1",
           "documents per seed", "LLM calls per 1,000 documents",
           "wall hours per 1,000 documents"]


def older(cell: list[dict]) -> bool:
    """Whether some of a PATE cell's rows ran before its fixes (``older_pate``)."""
    return any(map(older_pate, cell))


def cell_line(corpus: str, method: str, eps: float | None, per_class: int,
              cell: list[dict]) -> list:
    """One line of a report table: a cell pooled over its seeds."""
    p = pooled_cell(cell)
    docs, priced = p["documents"], p["documents"] and method != "real"
    seeds = ", ".join(map(str, p["seeds"]))
    if method == "pate" and older(cell):
        seeds += " (older runs)"
    return [corpus, method, "–" if eps is None else f"{eps:g}", per_class,
            seeds, p["accuracy"], p["keyphrases"],
            p["difference"], p["macro_f1"], f"{docs / len(p['seeds']):.0f}",
            f"{1000 * p['calls'] / docs:.0f}" if priced else "–",
            f"{1000 * p['hours'] / docs:.2f}" if priced else "–"]


def cpus_note(rows: list[dict]) -> str:
    """Which CPUs the timed rows ran on: sessions got different machines, and the same
    work can take several times as long on one as on another (``dpft-dtype``)."""
    tally = Counter(r.get("cpu", "not recorded (rows from before a row named its CPU)")
                    for r in rows if r["method"] != "real")
    return ("machines that differed between sessions, so wall hours compare methods only "
            "roughly; rows by CPU: "
            + "; ".join(f"{name}: {n}" for name, n in tally.most_common()))


def computed_by(rows: Iterable[dict]) -> str:
    """The commands that computed these cell rows (summary rows have none), in backticks."""
    return "; ".join(f"`{c}`" for c in sorted({r["command"] for r in rows
                                                if not is_summary(r)}))


def also_llm_table(others: dict[tuple, list[dict]]) -> str:
    """The cells whose LLM stage ran on a GPU server (``llm_stage_offload.py``): the same
    model, served there by llama.cpp's server."""
    if not others:
        return ""
    table = [[*cell_line(*group[:4], cell), f"`{group[4]}`"]
             for group, cell in sorted(others.items(), key=group_order)]
    commands = computed_by(r for cell in others.values() for r in cell)
    return ("\n\n**The same model served by llama.cpp's server.** Cells whose document "
            "stage went through the OpenAI-compatible backend to `llama-server` serving the "
            "same GGUF weights, with top-k moved before DRY (`docs/llm.md`): on a GPU "
            "(`benchmarks/llm_stage_offload.py`: the DP releases made here, the document "
            "stage written there by dptext's own code, the cell scored here), here on the "
            "CPU, or both (a cell the GPU lease cut off, finished here from its journal by "
            "the CPU build of the same llama.cpp). Same prompts, another runtime and sampler "
            "order than `local:`, so not the same samples. Wall hours: the fit, the LLM "
            "stage and the scoring, wherever each ran; not comparable with the table above."
            + (f" Computed by: {commands}." if commands else "")
            + "\n\n" + markdown_table([*COLUMNS, "LLM"], table))


def peer_note(got: dict[tuple, list[dict]]) -> str:
    """Where InvisibleInk's documents were written (its cells' ``written_on``): its wall
    hours are its processes' seconds there, not this machine's."""
    lines = []
    for (corpus, method, eps, _), cell in sorted(got.items(), key=group_order):
        where: dict[str, int] = {}
        for r in cell:
            for device, n in r.get("written_on", {}).items():
                where[device] = where.get(device, 0) + n
        if method == "invisibleink" and where:
            lines.append(f"* {corpus}, ε = {eps:g}: " + ", ".join(
                f"{n:,} documents on {'this machine' if d == 'cpu' else 'a lent ' + d}"
                for d, n in sorted(where.items(), key=lambda kv: -kv[1]) if n))
    if not lines:
        return ""
    return ("\n\n**Where InvisibleInk wrote.** "
            "Its cells were written on a GPU (`benchmarks/peers/invisibleink_offload.py`: one"
            " runner process per class, 14 at a time sharing the GPU, as "
            "`benchmarks/gpu/peer.sh` runs them; what the lease left unwritten was finished "
            "here on one core) and scored here. Its wall hours are the sum of its processes' "
            "seconds (model loads included) plus the scoring: on a GPU that 14 processes "
            "share, not this machine's CPU time as in the other rows. Its ε is InvisibleInk's"
            " own accounting (each document a zCDP composition over its tokens; parallel over"
            " disjoint references). It makes no chat-completion calls (0 in the table): "
            "each token costs B = 8 forward passes instead, 7 over private references."
            "\n\n" + "\n".join(lines))


NAMES = {"real": "real documents", "floor": "LLM-only floor", "kps": "**DP-KPS**",
         "pate": "PATE", "augpe": "Aug-PE", "invisibleink": "InvisibleInk (peer)",
         "dpft": "DP fine-tuning"}
LIMIT = 100.0  # a cell at ε ≥ LIMIT stands for the configuration's ε → ∞ limit


GLANCE_NOTES = {
    "¹": "PATE rows from before its seeds got their own candidate pools and its refused "
         "candidates were asked again; redone seeds replace them (see DP-KPS against each "
         "other method)",
    "²": "documents written through llama.cpp's server (the served table in "
         "`docs/benchmarks.md`)"}


def glance_row(corpus: str, method: str, cells: dict, served: bool, small: list[float],
               wanted: float | None) -> list:
    """One row of the summary: the (corpus, method)'s cells by ε, pooled over seeds and
    marked as ``GLANCE_NOTES`` says; its limit is its largest ε ≥ ``LIMIT``."""
    pooled = {e: pooled_cell(c) for e, c in cells.items()}
    limit = max((e for e in pooled if e is not None and e >= LIMIT), default=None)

    def shown(eps: float | None) -> str:
        if eps not in pooled:
            return "–"
        mark = "¹" if method == "pate" and older(cells[eps]) else ""
        mark += "²" if served else ""
        other = f" (ε = {eps:g})" if eps is not None and eps == limit != wanted else ""
        return f"{pooled[eps]['accuracy']}{mark}{other}"

    calls = sorted({round(1000 * p["calls"] / p["documents"]) for p in pooled.values()})
    return [corpus, NAMES[method], shown(None), *map(shown, small),
            "–" if limit is None else shown(limit),
            "–" if method == "real" else f"{calls[0]:,}" + (
                f"–{calls[-1]:,}" if len(calls) > 1 else "")]


def glance_table(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                 args) -> str:
    """One row per (corpus, method) at the design's size: its accuracy at no ε, at each
    requested ε below ``LIMIT`` and at its largest ε (the ε → ∞ limit), and its LLM calls
    per 1,000 documents. A (corpus, method) with no cell of ``args.llm`` shows its served
    cells (``args.also_llm``), marked. Heading, table and notes; the README's summary is
    the table and notes (``--write`` copies them)."""
    table, notes = glance_body(got, others, args)
    wanted = max((e for e in args.epsilons if e >= LIMIT), default=None)
    return (
        f"**At a glance** ({args.per_class} documents per class; accuracy, mean ± sd over "
        f"the seeds; ε → ∞ is the same configuration at ε = {wanted or LIMIT:g}):\n\n"
        + table + "".join(f"\n\n{n}" for n in notes) + "\n\n") if table else ""


def glance_cells(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                 args) -> dict[tuple[str, str], tuple[bool, dict]]:
    """The design size's cells by (corpus, method), in the report's order: whether they
    were served (``args.also_llm``: only where ``args.llm`` has none) and their rows by ε."""
    pairs: dict[tuple, tuple[bool, dict]] = {}
    for groups, served in ((got, False), (others, True)):
        for (corpus, method, eps, per_class, *_), cell in groups.items():
            if per_class != args.per_class:
                continue
            was_served, cells = pairs.setdefault((corpus, method), (served, {}))
            if was_served == served:
                cells.setdefault(eps, []).extend(cell)
    order = {c: i for i, c in enumerate(args.corpora)}
    return dict(sorted(pairs.items(), key=lambda kv: (
        order.get(kv[0][0], len(order)), kv[0][0], METHODS.index(kv[0][1]))))


def glance_body(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                args) -> tuple[str, list[str]]:
    """The at-a-glance table and the notes for the marks it uses."""
    small = sorted(e for e in args.epsilons if e < LIMIT)
    wanted = max((e for e in args.epsilons if e >= LIMIT), default=None)
    table = [glance_row(corpus, method, cells, served, small, wanted)
             for (corpus, method), (served, cells) in glance_cells(got, others, args).items()]
    if not table:
        return "", []
    text = markdown_table(["corpus", "method", "no ε", *(f"ε = {e:g}" for e in small),
                           "ε → ∞", "LLM calls per 1,000 documents"], table)
    return text, [f"{m} {note}" for m, note in GLANCE_NOTES.items() if m in text]


#: the README's short table: per corpus, these methods' cells (the picture has the rest)
README_METHODS = ("real", "kps", "floor")


def readme_summary(got: dict[tuple, list[dict]], others: dict[tuple, list[dict]],
                   args) -> str:
    """The README's short table: per corpus, real documents, DP-KPS at each ε and the
    LLM-only floor (the at-a-glance table's cells), its notes as one wrapped paragraph."""
    small = sorted(e for e in args.epsilons if e < LIMIT)
    wanted = max((e for e in args.epsilons if e >= LIMIT), default=None)
    cells = glance_cells(got, others, args)
    table = []
    for corpus in dict.fromkeys(c for c, _ in cells):
        rows = {}
        for m in README_METHODS:
            if (corpus, m) in cells:
                served, by_eps = cells[corpus, m]
                rows[m] = glance_row(corpus, m, by_eps, served, small, wanted)
        if "kps" in rows:
            kps = rows["kps"]
            table.append([corpus, rows["real"][2] if "real" in rows else "–", *kps[3:-1],
                          rows["floor"][2] if "floor" in rows else "–"])
    text = markdown_table(["corpus", "real documents", *(f"DP-KPS, ε = {e:g}" for e in small),
                           "DP-KPS, ε → ∞", "LLM-only floor"], table)
    notes = [f"{m} {note}" for m, note in GLANCE_NOTES.items() if m in text]
    notes = "".join(f"{n}. " for n in notes) + "–: not run, or no such cell."
    return text + "\n\n" + textwrap.fill(notes, 88, break_on_hyphens=False,
                                          break_long_words=False)


def missing_command(corpus: str, method: str, epsilons: list[float | None],
                    seeds: Iterable[int], args) -> str:
    """The command that runs these missing cells (resumable), as the design asked them."""
    given = [f"{e:g}" for e in epsilons if e is not None]
    return (f"nice -n 10 python benchmarks/bench_whole_documents.py --per-class "
            f"{args.per_class} --corpora {corpus} --methods {method}"
            + (f" --epsilons {','.join(given)}" if given else "")
            + f" --seeds {','.join(map(str, seeds))}"
            + ("" if args.llm == BENCH_LLM else f" --llm {args.llm}"))


def cells_by_llm(rows: list[dict], args) -> tuple[dict[tuple, list[dict]], dict]:
    """The rows of ``args.llm`` by (corpus, method, ε, size), and those of ``args.also_llm``
    by (corpus, method, ε, size, llm)."""
    got: dict[tuple, list[dict]] = {}
    others: dict[tuple, list[dict]] = {}
    for r in current(rows):
        group = (r["corpus"], r["method"], r["epsilon"], r["per_class"])
        if r["llm"] == args.llm:
            got.setdefault(group, []).append(r)
        elif r["llm"] in args.also_llm and r["method"] != "real":
            others.setdefault((*group, r["llm"]), []).append(r)
    return got, others


def report(rows: list[dict], args) -> str:
    """Every row of ``args.llm`` (any size), grouped by corpus, method, ε and size; then the
    cells of the requested design that have not run. The rows of ``args.also_llm`` (the
    same model served elsewhere) come in their own table."""
    got, others = cells_by_llm(rows, args)
    table = [cell_line(*group, cell) for group, cell in sorted(got.items(), key=group_order)]
    done = done_keys(rows)
    missing = [c for c in design(args)
               if all(key(*c, args.per_class, llm) not in done
                      for llm in [args.llm, *args.also_llm])]
    seeds_missing: dict[tuple, list[int]] = {}
    for c, m, e, s in missing:
        seeds_missing.setdefault((c, m, e), []).append(s)
    runs: dict[tuple, list[float | None]] = {}  # the ε of a (corpus, method, seeds) run
    for (c, m, e), s in sorted(seeds_missing.items(), key=lambda kv: report_order(*kv[0])):
        runs.setdefault((c, m, tuple(sorted(s))), []).append(e)
    lines = [f"* {c} / {m} / ε = {', '.join('–' if e is None else f'{e:g}' for e in es)} / "
             f"seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))}: "
             f"`{missing_command(c, m, es, s, args)}`"
             for (c, m, s), es in runs.items()]
    mine = [r for cell in got.values() for r in cell]
    commands = computed_by(mine)
    sources = sorted({r["source"] for r in mine if is_summary(r)})
    return (
        ("Cells computed by (resumable, under `nice`): "
         + commands + ". " if commands else "")
        + "".join(f"Seeds carried from {s}. " for s in sources)
        + f"Every cell: `{RESULTS.relative_to(RESULTS.parents[2])}`. LLM: `{args.llm}`; "
        "\"per class\": documents per class requested (InvisibleInk: at most n // 7 for a "
        "class of n); δ = 1e-5; labels declared. Downstream: MiniLM + the evaluation "
        "suite's MLP head trained on each synthetic set, tested on a fixed sample of ≤ 2,000 "
        "real test documents; mean ± sd over seeds. \"Keyphrases only\": the same classifier "
        "trained on the DP-KPS sequences the documents were written from (terms joined), "
        "tested on the same real documents; \"documents − keyphrases\": the "
        "difference per seed (paired: the same sequences), mean ± sd. LLM calls and wall "
        "hours per 1,000 documents are summed over seeds (wall time includes fitting, on "
        f"the machine of the session that finished the cell: {cpus_note(mine)}).\n\n"
        + glance_table(got, others, args)
        + "**Every cell** (any size):\n\n"
        + markdown_table(COLUMNS, table)
        + kps_against_others(got)
        + peer_note(got)
        + augpe_against_kps(got)
        + also_llm_table(others)
        + f"\n\nCells of the requested design ({args.per_class} per class) not run (yet) "
        "by any LLM above:"
        + ("\n\n" + "\n".join(lines) if lines else " none.")
    )
