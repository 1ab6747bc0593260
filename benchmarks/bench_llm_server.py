"""The GPU path: dptext's document stage through ``--llm openai:MODEL@URL`` against the
best an OpenAI-compatible server (vLLM, llama.cpp's llama-server, SGLang) gives plain
HTTP clients, in one run on one server.

    python benchmarks/bench_llm_server.py --url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-0.5b --concurrency 16 64 128 256 --server "llama-server ..." \\
        --out server.json
    python benchmarks/bench_llm_server.py --render server.json --record

The runtime's best: as many plain HTTP clients as ``--concurrency`` (``--sweep-docs`` each)
post the exact requests dptext sends for the first attempt of each document (same
prompts, seeds and sampling parameters, ``bench_llm.throughput_bodies``); the concurrency
with the most completion tokens/s wins. Then, at that concurrency and on ``--compare-docs``
documents per client: the runtime, dptext's ``generate_documents`` (clean-up and the loop/refusal
checks with their retries included) and the runtime again, so the ratio is bracketed by two
runtime measurements under the same load. The server is started by the caller (its
command line goes in ``--server``); a warm-up request comes first. ``--out`` keeps the
measurements; ``--render`` prints the table (``--record``: into docs/benchmarks.md,
section ``llm-throughput-server`` or ``--section``) on any machine.

Server configurations side by side (``benchmarks/gpu/measure.sh`` does this): one run per
configuration with ``--compare-docs 0`` (the plain clients only; ``--request-extra`` adds
fields to their requests, e.g. ``'{"dry_multiplier": 0}'`` to see what DRY costs), then
``--render ARM.json ... FULL.json``: a table of the arms, each against the first, above the
full comparison (the one file with ``--compare-docs`` above 0). Several servers of one
model, e.g. on one GPU (``--url U1,U2,...``), are measured as one: the plain clients post
to them in turn, dptext's stage goes through ``pool:`` over them.

The client's own ceiling (``--stand-in`` in place of ``--url``): the same comparison against
a server that answers at once (the tests' ``FaultServer`` in a process of its own, every
answer valid), so the rates are what dptext's stage and the plain clients manage with no
model behind them. Every measurement also records its process's CPU seconds (all
threads), so "client CPU ms per document" says what one document costs the client; dptext's
stage journals every completion (fsync'ed) as a run does.
"""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # installed or not

from bench_llm import SEQS, throughput_bodies
from harness.options import study_parser
from harness.provenance import commit, machine
from harness.report import markdown_table, record

SECTION = "llm-throughput-server"
STAND_IN = "stand-in: tests/fault_server.py's FaultServer, every answer at once"
# runs the stand-in in a process of its own (not sharing the client's interpreter lock)
SERVE_STAND_IN = """
import sys
sys.path.insert(0, sys.argv[1])
from fault_server import FaultServer
with FaultServer(max_seconds=float(sys.argv[2])) as server:
    print(server.port, flush=True)
    server.dead.wait()
"""


def cpu_seconds() -> float:
    """This process's CPU time so far, all threads, user and system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.loads(r.read())


def runtime(urls: list[str], bodies: list[dict], clients: int) -> dict:
    """Plain HTTP clients, ``clients`` requests in flight; request i goes to server
    i mod len(urls) (several servers of one model: their shares differ by one at most)."""
    targets = [f"{urls[i % len(urls)]}/chat/completions" for i in range(len(bodies))]
    t, cpu = time.perf_counter(), cpu_seconds()
    with ThreadPoolExecutor(clients) as pool:
        res = list(pool.map(post, targets, bodies))
    wall = time.perf_counter() - t
    return dict(what="runtime", concurrency=clients, docs=len(bodies), wall=wall,
                prompts=len(bodies), client_cpu_s=cpu_seconds() - cpu,
                tokens=sum(r["usage"]["completion_tokens"] for r in res))


def backend_spec(urls: list[str], model: str) -> str:
    """dptext's ``--llm`` for these servers: one ``openai:``, or a ``pool:`` of several."""
    specs = [f"openai:{model}@{u}" for u in urls]
    return specs[0] if len(specs) == 1 else "pool:" + ",".join(specs)


def dptext_stage(urls: list[str], model: str, n: int, max_tokens: int,
                 concurrency: int) -> dict:
    from types import SimpleNamespace

    from dptext.llm import (
        DocumentOptions,
        Journal,
        PromptBuilder,
        RunStats,
        SamplingParams,
        generate_documents,
        make_backend,
    )

    seqs = [SimpleNamespace(label=None, keyphrases=tuple(SEQS[i % len(SEQS)]))
            for i in range(n)]
    builder = PromptBuilder("medical record", params=SamplingParams(max_tokens=max_tokens))
    stats = RunStats()
    with tempfile.TemporaryDirectory() as tmp:
        t, cpu = time.perf_counter(), cpu_seconds()
        generate_documents(seqs, make_backend(backend_spec(urls, model)), builder,
                           DocumentOptions(seed=1, concurrency=concurrency),
                           Journal(Path(tmp) / "journal.jsonl"), stats=stats)
        wall, cpu = time.perf_counter() - t, cpu_seconds() - cpu
    return dict(what="dptext", concurrency=concurrency, docs=n, wall=wall,
                prompts=stats.computed, tokens=stats.completion_tokens, client_cpu_s=cpu,
                quality=stats.quality_summary())


@contextlib.contextmanager
def stand_in(seconds: float):
    """The URL of a stand-in server (its own process) that lives at most ``seconds``."""
    tests = Path(__file__).resolve().parents[1] / "tests"
    proc = subprocess.Popen([sys.executable, "-c", SERVE_STAND_IN, str(tests), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    try:
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.kill()
        proc.wait()


def gpu_name() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return "no nvidia-smi"


def measure(args) -> dict:
    def show(d: dict) -> dict:
        d["tok_s"] = d["tokens"] / d["wall"]
        print(json.dumps(d), flush=True)
        return d

    def bodies(n: int) -> list[dict]:
        return [dict(b, **args.request_extra)
                for b in throughput_bodies(args.model, n, args.max_tokens, "extended")]

    urls = args.url.split(",")
    for url in urls:  # warm-up
        post(f"{url}/chat/completions", dict(bodies(1)[0], max_tokens=1))
    sweep = [show(runtime(urls, bodies(args.sweep_docs * c), c)) for c in args.concurrency]
    compare = []
    if args.compare_docs:
        best = max(sweep, key=lambda d: d["tok_s"])["concurrency"]
        n = args.compare_docs * best
        compare = [show(runtime(urls, bodies(n), best)),
                   show(dptext_stage(urls, args.model, n, args.max_tokens, best)),
                   show(runtime(urls, bodies(n), best))]
    where = f"this machine ({machine()})" if args.server == STAND_IN else gpu_name()
    return dict(model=args.model, url=args.url, server=args.server, gpu=where,
                max_tokens=args.max_tokens, sweep_docs=args.sweep_docs,
                compare_docs=args.compare_docs, request_extra=args.request_extra,
                sweep=sweep, compare=compare, commit=args.commit or commit())


def render_arms(arms: list[dict]) -> str:
    """The server configurations side by side: each arm's best plain-client rate."""
    def best(d: dict) -> dict:
        return max(d["sweep"], key=lambda r: r["tok_s"])

    base = best(arms[0])["tok_s"]
    rows = [[f"`{d['server']}`", ", ".join(f"{k} = {v}" for k, v in
                                          d.get("request_extra", {}).items()) or "as dptext's",
             r["concurrency"], r["docs"], r["tokens"], f"{r['wall']:.1f}", f"{r['tok_s']:.0f}",
             f"×{r['tok_s'] / base:.2f}"] for d in arms for r in [best(d)]]
    d = arms[0]
    return (f"Server configurations on {d['gpu']}, one after another in one call; model "
            f"`{d['model']}`; plain HTTP clients posting dptext's requests (medical-record "
            f"prompts of at most {d['max_tokens']} tokens), {d['sweep_docs']} per client, "
            f"the better of {len(d['sweep'])} passes; "
            f"commit {d['commit']}.\n\n"
            + markdown_table(["server", "request", "requests in flight", "docs",
                              "completion tokens", "wall s", "tokens/s", "vs the first"],
                             rows)
            + (f"\n\n**Reading.** {d['reading']}" if d.get("reading") else ""))


def render(d: dict) -> str:
    def row(what: str, r: dict) -> list:
        cpu = f"{1000 * r['client_cpu_s'] / r['docs']:.2f}" if "client_cpu_s" in r else "—"
        return [what, r["concurrency"], r["docs"], r["prompts"], r["tokens"],
                f"{r['wall']:.1f}", f"{r['tok_s']:.0f}", f"{3600 * r['docs'] / r['wall']:,.0f}",
                cpu]

    first, ours, again = d["compare"]
    earlier = d.get("earlier_sweep")
    rows = [row(f"runtime: plain HTTP clients, ≤ {earlier['max_tokens']} tokens", r)
            for r in (earlier["rows"] if earlier else [])]
    rows += [row("runtime: plain HTTP clients", r) for r in d["sweep"]]
    rows += [row("runtime, before dptext", first),
             row("**dptext document stage**, `openai:` backend", ours),
             row("runtime, after dptext", again)]
    top = max(first["tok_s"], again["tok_s"])
    return (f"Server: `{d['server']}` on {d['gpu']}; model `{d['model']}`; medical-record "
            f"prompts of at most {d['max_tokens']} tokens (the CPU table's prompts, sent as "
            f"dptext sends them to a server that is not OpenAI's); {d.get('sweep_docs', 2)} "
            f"document(s) per client in the sweep, {d.get('compare_docs', 3)} in the "
            "comparison.\n\n"
            + markdown_table(["what", "requests in flight", "docs", "prompts",
                              "completion tokens", "wall s", "tokens/s", "docs/hour",
                              "client CPU ms/doc"], rows)
            + f"\n\n**dptext / runtime's best: {ours['tok_s'] / top:.0%} in tokens/s** (against "
            f"the better of the runtime measurements just before and after it, at "
            f"{ours['concurrency']} requests in flight). dptext's stage: {ours['prompts']} "
            f"prompts for {ours['docs']} documents; {ours['quality']}. Commit {d['commit']}."
            + (f"\n\n**Reading.** {d['reading']}" if d.get("reading") else "")
            + (f"\n\nRows marked ≤ {earlier['max_tokens']} tokens: {earlier['note']}."
               if earlier else "")
            + (f"\n\nThe same model and GPU without HTTP or sampling (`{d['ceiling']['command']}`"
               "; PP: prompt tokens, TG: generated tokens per sequence, B: sequences decoded "
               "together; S_TG: generated tokens/s):\n\n" + d["ceiling"]["table"]
               if d.get("ceiling") else ""))


def main() -> None:
    ap = study_parser(__doc__)  # --write (--record): with --render, docs/benchmarks.md
    ap.add_argument("--url", help="the server's API base, e.g. http://127.0.0.1:8080/v1; "
                    "several, comma-separated: servers of one model, measured together "
                    "(the plain clients' requests in turn, dptext's stage as a pool:)")
    ap.add_argument("--stand-in", action="store_true",
                    help="in place of --url: a server that answers at once (the client's "
                         "ceiling)")
    ap.add_argument("--model", default="qwen2.5-0.5b", help="the model name the server takes")
    ap.add_argument("--concurrency", type=int, nargs="*", default=[16, 64, 128, 256])
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--sweep-docs", type=int, default=2, help="documents per client, sweep")
    ap.add_argument("--compare-docs", type=int, default=3,
                    help="documents per client in the comparison (0: the plain clients only)")
    ap.add_argument("--request-extra", type=json.loads, default={},
                    help="JSON fields added to the plain clients' requests")
    ap.add_argument("--server", default="(not given)", help="how the server was started")
    ap.add_argument("--commit", help="the commit measured (where the copy has no git)")
    ap.add_argument("--out", type=Path, help="write the measurements here (JSON)")
    ap.add_argument("--render", type=Path, nargs="+",
                    help="only render measurements written by --out (several: arms, then the "
                         "full comparison)")
    ap.add_argument("--section", default=SECTION,
                    help="with --record: the section (one per server configuration)")
    args = ap.parse_args()
    if args.render:
        runs = [json.loads(p.read_text()) for p in args.render]
        full = [d for d in runs if d["compare"]]
        arms = [d for d in runs if not d["compare"]]
        text = "\n\n".join(([render_arms(arms)] if arms else [])
                            + [render(d) for d in full])
        print(text)
        if args.write:
            title = ("dptext's document stage against a server that answers at once (the "
                     "client's ceiling)" if full and full[-1]["server"] == STAND_IN else
                     "LLM document stage on a GPU server against the runtime's best (tokens/s)"
                     if full else f"llama-server's configurations on "
                                  f"{arms[0]['gpu'].split(',')[0]} (tokens/s)")
            record(args.section, title + (f", {args.render[-1].stem}"
                                          if full and args.section != SECTION else ""), text)
        return
    if args.stand_in:
        args.server = STAND_IN
        with stand_in(3600) as args.url:
            d = measure(args)
    elif not args.url:
        raise SystemExit("give --url (the server to measure), --stand-in or --render FILE")
    else:
        d = measure(args)
    if args.out:
        args.out.write_text(json.dumps(d, indent=1))
    print(render(d) if d["compare"] else render_arms([d]))


if __name__ == "__main__":
    main()
