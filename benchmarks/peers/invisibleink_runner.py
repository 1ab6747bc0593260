"""Run InvisibleInk (``invink``, GPL-3) per class; executed INSIDE its own venv only.

Started by ``benchmarks/peers/invisibleink.py`` in a separate virtual environment so that
the GPL-3 package is never imported by dptext. Imports only the standard library, torch
and invink (never dptext).

For each class (sorted by name) the private documents of that class alone are shuffled
with a public seed and cut into disjoint batches of B−1 references; output document i of
the class is one ``invink.generate(..., num=1)`` call on batch i. Every private document
is a reference for at most one output document and classes are disjoint, so the release
is (ε, δ)-DP by parallel composition. A class with n documents yields at most n // (B−1)
documents; ``--per-class`` is capped there. Where the cap binds, the number of output
documents of a class reveals n // (B−1) — InvisibleInk's own design, not covered by its ε;
for a release within ε, ask for no more than a public lower bound on n // (B−1). Only
that output count and whether the cap bound are recorded: never n itself.

Class conditioning: InvisibleInk's prompts hold only a dataset description (public) and,
in the private prompts, one reference. To produce labelled data the description is
``"<description>. Category: <label>"`` — the class names are public (declared by the
benchmark), so this spends no privacy; ``--no-label-in-prompt`` leaves it out.

Sharding: ``--classes`` restricts a run to some classes, so that several processes (one
GPU shared by many, ``invisibleink_offload.py``) write the classes of one cell side by side,
each to its own ``--out``; their outputs are merged afterwards in sorted class order, which
is what one run over every class writes.

Resumable: each document is appended to ``--out`` (and fsynced) as it is finished; a
restart with the same settings skips the documents already there (same seed, same
batches), on any device: the settings must match, the runtime need not; ``runs`` in the
meta file says where each run wrote how many documents. ``--out``.meta.json records per
class the documents, seconds (generation only; the model load is recorded apart, in
``runs``), mean tokens, InvisibleInk's data-dependent ``epsilon_spent`` per document and
whether the cap bound. Progress goes to stderr without any text; invink's own chatter is
discarded unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--input", type=Path, required=True, help='JSONL of {"text", "label"}')
    ap.add_argument("--model-dir", type=Path, required=True, help="a Hugging Face model folder")
    ap.add_argument("--per-class", type=int, required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--batch-size", type=int, default=8,
                    help="B: B-1 private references + 1 public prompt per token")
    ap.add_argument("--max-tokens", type=int, required=True)
    ap.add_argument("--topk", type=int, default=100, help="invink's top-k (default 100)")
    ap.add_argument("--description", required=True, help='public, e.g. "BBC news article"')
    ap.add_argument("--label-in-prompt", action=argparse.BooleanOptionalAction, default=True,
                    help="append 'Category: <label>' to the description (default: on)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the model runs (cuda: the first GPU; float32 on either)")
    ap.add_argument("--classes", default=None,
                    help="comma-separated labels: write only these classes (default: all)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--verbose", action="store_true", help="show invink's own output")
    args = ap.parse_args(argv)
    if args.batch_size < 2:
        ap.error("--batch-size must be at least 2 (one private reference + the public prompt)")
    if args.per_class < 0 or args.max_tokens < 1 or args.threads < 1:
        ap.error("--per-class >= 0, --max-tokens >= 1 and --threads >= 1 are required")
    return args


def log(msg: str) -> None:
    print(f"[invisibleink] {msg}", file=sys.stderr, flush=True)


def read_input(path: Path) -> dict[str, list[str]]:
    by_label: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                by_label.setdefault(str(row["label"]), []).append(str(row["text"]))
    return by_label


def read_done(out: Path) -> dict[str, int]:
    """Documents per label already in ``out``; a torn last line is cut off."""
    done: dict[str, int] = {}
    if not out.exists():
        return done
    good: list[str] = []
    torn = False
    for line in out.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            torn = True
            continue
        good.append(line if line.endswith("\n") else line + "\n")
        done[row["label"]] = done.get(row["label"], 0) + 1
    if torn:
        out.write_text("".join(good), encoding="utf-8")
    return done


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def doc_seed(seed: int, label: str, index: int) -> int:
    """A per-document seed (invink reseeds numpy/torch in every call)."""
    digest = hashlib.sha256(f"{seed}\0{label}\0{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


LOAD_SECONDS = [0.0]  # time spent loading the model and tokenizer, kept out of per-document


def install_model_cache(gen_module: Any) -> None:
    """Load the model and tokenizer once, not in every per-document ``generate`` call."""
    cache: dict[tuple[str, str], Any] = {}

    def cached(kind: str, loader: Any) -> Any:
        def load(**kwargs: Any) -> Any:
            key = (kind, repr(sorted(kwargs.items(), key=lambda kv: kv[0])))
            if key not in cache:
                t0 = time.perf_counter()
                cache[key] = loader(**kwargs)
                LOAD_SECONDS[0] += time.perf_counter() - t0
            return cache[key]
        return load

    for name in ("load_hf_model", "load_hf_tokenizer"):
        if hasattr(gen_module, name):
            setattr(gen_module, name, cached(name, getattr(gen_module, name)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TQDM_DISABLE", "1")
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    import torch

    torch.set_num_threads(args.threads)
    import invink
    from invink.utils import preprocess

    install_model_cache(sys.modules["invink.generate"])

    if args.device == "cuda" and not torch.cuda.is_available():
        log("--device cuda, but torch sees no GPU")
        return 2
    by_label = read_input(args.input)
    labels = sorted(by_label)
    if args.classes is not None:
        wanted = [c for c in args.classes.split(",") if c]
        unknown = sorted(set(wanted) - set(by_label))
        if unknown:
            log(f"--classes {','.join(unknown)}: not a label of {args.input}")
            return 2
        labels = sorted(set(wanted))
    config = {  # the settings a resumed run must share (not the runtime: see "runs")
        "invink": getattr(invink, "__version__", None) or _dist_version("invink"),
        "model": args.model_dir.name,
        "epsilon": args.epsilon, "delta": args.delta, "batch_size": args.batch_size,
        "max_tokens": args.max_tokens, "topk": args.topk, "description": args.description,
        "label_in_prompt": args.label_in_prompt, "seed": args.seed,
        "input_sha256": hashlib.sha256(args.input.read_bytes()).hexdigest(),
    }
    meta_path = args.out.with_name(args.out.name + ".meta.json")
    done = read_done(args.out)
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if any(done.values()) and meta.get("config") != config:
        log(f"{args.out} was made with other settings or input; use a new --out")
        return 2
    classes: dict[str, Any] = meta.get("classes", {})
    run = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
           "torch": torch.__version__, "documents": 0, "seconds": 0.0}
    meta = {"peer": "InvisibleInk", "config": config, "classes": classes,
            "runs": [*meta.get("runs", []), run]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    refs = args.batch_size - 1
    sink = sys.stderr if args.verbose else open(os.devnull, "w")  # noqa: SIM115

    for label in labels:
        docs = [t for t in (preprocess(x) for x in by_label[label]) if t]
        random.Random(f"{args.seed}\0{label}").shuffle(docs)
        cap = len(docs) // refs
        target = min(args.per_class, cap)
        stats = classes.setdefault(label, {})
        have = done.get(label, 0)
        for key in ("epsilon_spent", "tokens", "seconds_per_document"):
            stats[key] = stats.get(key, [])[:have]  # stats of a torn document are dropped
        capped = args.per_class > cap
        stats.update(requested=args.per_class, capped=capped)
        if capped:
            log(f"class {label!r}: too few documents for {args.per_class} outputs of "
                f"{refs} references each; capping to {cap}")
        desc = f"{args.description}. Category: {label}" if args.label_in_prompt \
            else args.description
        for i in range(have, target):
            t0, load0 = time.perf_counter(), LOAD_SECONDS[0]
            with contextlib.redirect_stdout(sink):
                res = invink.generate(
                    docs[i * refs:(i + 1) * refs], str(args.model_dir), desc,
                    epsilon=args.epsilon, delta=args.delta, num=1, max_toks=args.max_tokens,
                    batch_size=args.batch_size, topk=args.topk, dtype="float32",
                    device_map=0 if args.device == "cuda" else -1, allow_download=False,
                    random_seed=doc_seed(args.seed, label, i), print_text=False)
            seconds = time.perf_counter() - t0 - (LOAD_SECONDS[0] - load0)
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps({"text": res.texts[0], "label": label},
                                   ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
            stats["epsilon_spent"].append(float(res.epsilon_spent[0]))
            stats["tokens"].append(int(res.lens[0]))
            stats["seconds_per_document"].append(round(seconds, 3))
            have = i + 1
            run["documents"] += 1
            run["seconds"] = round(run["seconds"] + seconds, 3)
            _summarise(stats, have)
            write_json(meta_path, meta)
            log(f"class {label!r}: document {have}/{target}, {res.lens[0]} tokens, "
                f"{seconds:.1f} s, epsilon_spent {res.epsilon_spent[0]:.3f}")
        _summarise(stats, have)
        write_json(meta_path, meta)
    spent = [e for s in classes.values() for e in s.get("epsilon_spent", [])]
    meta["epsilon_guarantee"] = max(spent, default=0.0)  # parallel composition: the max
    meta["delta"] = args.delta
    run["load_seconds"] = round(LOAD_SECONDS[0], 3)
    write_json(meta_path, meta)
    log(f"done: {sum(s['documents'] for s in classes.values())} documents in {args.out}")
    return 0


def _summarise(stats: dict[str, Any], have: int) -> None:
    stats["documents"] = have
    secs, toks = stats["seconds_per_document"], stats["tokens"]
    stats["seconds"] = round(sum(secs), 3)
    stats["mean_tokens"] = sum(toks) / len(toks) if toks else None
    stats["seconds_per_token"] = sum(secs) / sum(toks) if toks and sum(toks) else None
    stats["epsilon_spent_max"] = max(stats["epsilon_spent"], default=None)


def _dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
