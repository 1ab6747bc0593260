"""Whole-document cells whose LLM stage runs on another machine: a GPU server this machine
cannot reach (nor it this one), with only files carried between them.

    # here: each cell's DP releases (or the floor's public draws); the run stops before its
    # first prompt and the cell's document stage is written to JOBS/<cell>.json
    python benchmarks/llm_stage_offload.py fit --corpora banking77 --methods kps,floor,pate \\
        --epsilons 3,6,1000 --seeds 0,1,2 --llm openai:MODEL@http://127.0.0.1:8080/v1 \\
        --work-dir CELLS --jobs JOBS
    # there (the standard library and src/ are all it needs): dptext's own document stage
    # (generate_documents: the same prompts, seeds, retries and checks) against the server,
    # every completion journaled to JOURNALS/<cell>.journal.jsonl; --llm may also be a
    # pool:openai:MODEL@URL1,... of several servers of MODEL (it journals under the jobs'
    # identity)
    python benchmarks/llm_stage_offload.py write --jobs JOBS --journals JOURNALS \\
        --llm openai:MODEL@http://127.0.0.1:8080/v1 --concurrency 128
    # here: each journal into its cell's folder; then the benchmark itself, with the same
    # --llm and --work-dir, finishes the cells from the journals (no LLM call) and scores them
    python benchmarks/llm_stage_offload.py land --jobs JOBS --journals JOURNALS
    # (--unfinished: also a cell cut off by the deadline there; the benchmark generates the
    # rest here, so --llm must then reach a server of the same model here)
    python benchmarks/bench_whole_documents.py --corpora banking77 --methods kps,floor \\
        --epsilons 3,6,1000 --llm openai:MODEL@http://127.0.0.1:8080/v1 --work-dir CELLS

``--study form-and-style`` fits that study's DP-KPS cells instead (``bench_form_style.py``:
methods kps and kps-form, their run folders under its ``cells/``; pass ``--work-dir
benchmarks/results/form-and-style``); bench_form_style.py with the same ``--llm`` and
``--per-class`` then finishes them from the landed journals.

A job holds what the LLM is shown and nothing private: the released keyphrase sequences
(DP-KPS; post-processing of its releases) with the form drawn with each where there is one,
or the floor's public draws, with the prompt
builder and document options the cell's own code passed to ``generate_documents``
(captured at that call, so nothing here re-implements the generators); for PATE, its
public candidate prompts (the document type and the declared class names) with the
options its code passed to ``complete_checked``. The teachers, the votes and the student
(everything private after them) run here when the benchmark resumes the cell. PATE's
cells at several ε of one seed ask the same candidate prompts: ``write`` answers them
once (a prompt cache beside the journals). Journal keys hold
the backend's identity, so ``write`` must use the ``--llm`` the cells were fitted with.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

from harness.options import add_list, study_parser

OFFLOADED = ("kps", "floor", "pate")  # the methods whose only LLM work is one stage
STUDIES = ("whole-documents", "form-and-style")


class _Captured(Exception):
    """Raised in place of the document stage: carries its arguments out of the run."""

    def __init__(self, sequences, builder, options) -> None:
        super().__init__("document stage captured")
        self.sequences, self.builder, self.options = sequences, builder, options


class _CapturedPrompts(Exception):
    """Raised in place of PATE's candidate stage: its public prompts and options."""

    def __init__(self, prompts, options, description) -> None:
        super().__init__("candidate stage captured")
        self.prompts, self.options, self.description = prompts, options, description


def _capture(sequences, backend, builder, options=None, journal=None, cache=None, stats=None):
    raise _Captured(list(sequences), builder, options)


def _capture_prompts(prompt_for, n, backend, options=None, journal=None, cache=None,
                     stats=None, keyphrases=None, description="documents"):
    """``complete_checked``'s stand-in: each text's first-attempt prompt (a retry's is
    derived from it by ``reseeding``, there as here)."""
    raise _CapturedPrompts([prompt_for(i, 0) for i in range(n)], options, description)


def job_dict(cell: str, identity: str, captured: _Captured | _CapturedPrompts) -> dict:
    options = dataclasses.asdict(captured.options)
    options["retry"].pop("sleep")
    if isinstance(captured, _CapturedPrompts):
        return {"cell": cell, "llm": identity, "options": options,
                "prompts": [p.to_dict() for p in captured.prompts],
                "description": captured.description}
    return {"cell": cell, "llm": identity,
            "sequences": [{"label": s.label, "keyphrases": list(s.keyphrases),
                           "form": getattr(s, "form", None)} for s in captured.sequences],
            "builder": dataclasses.asdict(captured.builder), "options": options}


def options_from_job(job: dict):
    from dptext.llm import DocumentOptions, RetryPolicy

    o = dict(job["options"])
    return DocumentOptions(**{**o, "retry": RetryPolicy(**o["retry"])})


def stage_from_job(job: dict):
    """(sequences, builder, options) as the cell's code built them."""
    from types import SimpleNamespace

    from dptext.llm import PromptBuilder, SamplingParams
    from dptext.llm.prompts import FewShotExample, PromptTemplate

    b = job["builder"]
    builder = PromptBuilder(
        b["document_type"], PromptTemplate(**b["template"]),
        tuple(FewShotExample(e["text"], tuple(e["keyphrases"])) for e in b["few_shot"]),
        SamplingParams(**{k: tuple(v) if isinstance(v, list) else v
                          for k, v in b["params"].items()}))
    seqs = [SimpleNamespace(label=s["label"], keyphrases=tuple(s["keyphrases"]),
                            form=s.get("form")) for s in job["sequences"]]
    return seqs, builder, options_from_job(job)


# ------------------------------------------------------------------ the three steps
def study_cells(args) -> tuple[list[tuple], Callable[[str], dict]]:
    """The study's cells in the order they run, and each method's extra DP-KPS options
    (``bench_form_style.FORMS``: with or without the form profile)."""
    if args.study == "form-and-style":
        from bench_form_style import FORMS
        from bench_form_style import design as form_design

        return ([c for c in form_design(args) if c[1] in FORMS],
                lambda method: {"form": FORMS[method]})
    from bench_whole_documents import design

    return design(args), lambda method: {}


def fit(args) -> None:
    import dptext.generators.pate.generator as pate
    import dptext.llm
    from bench_whole_documents import (
        cell_name,
        corpus_data,
        floor_documents,
        generator_documents,
    )
    from synthetic_protocol import shared_backend

    args.jobs.mkdir(parents=True, exist_ok=True)
    llm = shared_backend(args.llm)
    dptext.llm.generate_documents = _capture  # the cells' code imports it at call time
    pate.complete_checked = _capture_prompts  # PATE's candidate stage
    cells, extra = study_cells(args)
    for corpus, method, eps, seed in cells:
        cell = cell_name(corpus, method, eps, seed, args.per_class)
        path = args.jobs / f"{cell}.json"
        if path.exists():
            continue
        folder = args.work_dir / "cells" / cell
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            if method == "floor":
                floor_documents(corpus_data(corpus), args.per_class, seed, folder, llm,
                                args.concurrency)
            else:
                generator_documents(method.removesuffix("-form"), corpus_data(corpus), eps,
                                    args.per_class, seed, folder, llm, args.concurrency,
                                    **extra(method))
        except (_Captured, _CapturedPrompts) as c:
            path.write_text(json.dumps(job_dict(cell, llm.identity, c)))
            seconds = time.perf_counter() - started
            (folder / "seconds.json").write_text(json.dumps({"seconds": seconds}))
            n = len(c.prompts if isinstance(c, _CapturedPrompts) else c.sequences)
            print(f"{cell}: {n} prompts, {seconds:.0f} s", flush=True)
        else:
            raise SystemExit(f"{cell}: finished without an LLM stage (already journaled?)")


def write(args) -> None:
    from dptext.llm import (
        Journal,
        Prompt,
        PromptCache,
        RunStats,
        complete_checked,
        generate_documents,
        make_backend,
        reseeding,
    )

    served = make_backend(args.llm)
    args.journals.mkdir(parents=True, exist_ok=True)
    # PATE's cells at several ε of one seed share their candidate prompts
    cache = PromptCache(args.journals / "pate-prompt-cache.jsonl")
    for path in sorted(args.jobs.glob("*.json"), key=lambda p: _order(p.stem)):
        job = json.loads(path.read_text())
        backend = answering_for(served, job["llm"])
        if backend is None:
            raise SystemExit(f"{path}: fitted for {job['llm']}, not {served.identity}")
        done = args.journals / f"{job['cell']}.stats.json"
        if done.exists():
            continue
        journal = Journal(args.journals / f"{job['cell']}.journal.jsonl")
        options = dataclasses.replace(options_from_job(job), concurrency=args.concurrency)
        stats = RunStats()
        started = time.perf_counter()
        if "prompts" in job:
            prompts = [Prompt.from_dict(p) for p in job["prompts"]]
            complete_checked(reseeding(prompts), len(prompts), backend, options, journal, cache,
                             stats, description=job["description"])
            n = len(prompts)
        else:
            seqs, builder, _ = stage_from_job(job)
            generate_documents(seqs, backend, builder, options, journal, None, stats)
            n = len(seqs)
        wall = time.perf_counter() - started
        done.write_text(json.dumps({
            "cell": job["cell"], "documents": n, "wall_s": wall,
            "prompts": stats.computed, "completion_tokens": stats.completion_tokens,
            "concurrency": args.concurrency, "quality": stats.quality_summary()}))
        print(f"{job['cell']}: {n} documents in {wall:.1f} s, {stats.computed} "
              f"prompts, {stats.completion_tokens} completion tokens "
              f"({stats.completion_tokens / wall:.0f} tokens/s)", flush=True)


def answering_for(backend, identity: str):
    """``backend`` where its identity is the job's; where it is a pool of servers of the
    job's model (several servers on one GPU: ``--llm pool:openai:MODEL@URL1,...``), a copy
    that keys the journal with the job's identity, so the cell here reads it; else None."""
    from dptext.llm.pool import pool_identity

    if backend.identity == identity:
        return backend
    if backend.identity == pool_identity([identity]):
        alias = copy.copy(backend)
        alias.identity = identity
        return alias
    return None


def _order(cell: str) -> tuple:
    """Seed-major, DP-KPS at ε = 6, 3, then the rest: a partial write holds whole
    comparisons for the first seeds."""
    rest, seed = cell.rsplit("-s", 1)
    return (int(seed), next((i for i, e in enumerate(("-eps6-", "-eps3-")) if e in rest), 2),
            cell)


def land(args) -> None:
    """Each finished cell's journal into its run folder; with ``--unfinished`` also the
    journal of a cell the other machine's deadline stopped: the benchmark then generates
    its remaining documents here, through the cell's ``--llm`` (the same model, served here)."""
    from dptext.run.folder import run_dir_for

    for journal in sorted(args.journals.glob("*.journal.jsonl")):
        cell = journal.name.removesuffix(".journal.jsonl")
        stats = args.journals / f"{cell}.stats.json"
        if not stats.exists() and not args.unfinished:
            print(f"{cell}: unfinished, not landed (--unfinished lands it)")
            continue
        folder = args.work_dir / "cells" / cell
        # where the cell's code journals: the floor's own folder, the others' run folder
        run = folder if "-floor-" in cell else run_dir_for(folder / "synthetic.jsonl")
        if not run.is_dir():
            raise SystemExit(f"{run}: no fitted cell for {journal.name}")
        if (run / "journal.jsonl").exists():
            continue  # landed before
        shutil.copyfile(journal, run / "journal.jsonl")
        # the cell's wall seconds: the fit here, the LLM stage there (an unfinished one's:
        # its journal's first to last completion), the rest here
        if stats.exists():
            there = json.loads(stats.read_text())["wall_s"]
        else:
            times = []
            for line in journal.read_text().splitlines():
                with contextlib.suppress(ValueError, KeyError):  # a torn last line, which
                    times.append(json.loads(line)["time"])       # the Journal skips too
            there = max(times) - min(times)
        timer = folder / "seconds.json"
        timer.write_text(json.dumps({"seconds": json.loads(timer.read_text())["seconds"]
                                     + there}))
        print(f"{cell}: journal landed in {run}" + ("" if stats.exists() else
              " (unfinished: the rest is generated here by the cell's --llm)"))


def main() -> None:
    ap = study_parser(__doc__, corpora=["banking77"], epsilons=[3, 6, 1000], seeds=[0, 1, 2],
                      work_dir="whole-documents", write=False)
    ap.add_argument("step", choices=["fit", "write", "land"])
    add_list(ap, "--methods", default=["kps", "floor"])
    ap.add_argument("--study", choices=STUDIES, default="whole-documents",
                    help="whose cells: form-and-style offloads kps and kps-form")
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--llm", required=True, help="the backend the cells' LLM stage uses")
    ap.add_argument("--concurrency", type=int, default=4, help="prompts in flight (write)")
    ap.add_argument("--jobs", type=Path, required=True)
    ap.add_argument("--journals", type=Path, default=None)
    ap.add_argument("--unfinished", action="store_true",
                    help="land: also the journals of cells stopped before their end")
    args = ap.parse_args()
    offloaded = ("kps", "kps-form") if args.study == "form-and-style" else OFFLOADED
    if set(args.methods) - set(offloaded):
        raise SystemExit(f"{args.study}: only {', '.join(offloaded)} can be offloaded")
    if args.step != "fit" and args.journals is None:
        raise SystemExit(f"{args.step} needs --journals")
    {"fit": fit, "write": write, "land": land}[args.step](args)


if __name__ == "__main__":
    main()
