"""The releases every generator makes, here and at an earlier commit: a refactoring of how
runs are orchestrated must not change what is released or how it is noised.

Both trees run the same commands (the four generators through the CLI, a recording LLM,
a 180-document BBC News subset, ε = 4) with this checkout's virtual environment; the
release records of their privacy reports are compared field by field (name, mechanism,
neighbouring relation, sensitivity, noise scale, dimension, ε, δ, composition). dpft's
DP-SGD record is calibrated from a released (noisy) corpus-size estimate, so its noise
multiplier, steps and sampling rate differ between any two runs, even of one commit.

Second part: with every noise switched off (test-only identity measurements in place of
OpenDP's: Gaussian, Laplace, the label set's threshold, report-noisy-max) and the
validation fold's salt fixed, DP-KPS's exact released statistics — every histogram, sketch
sum and selection — the released vocabulary and the sequences drawn from them with a fixed
public seed, for the histogram model, the KDE (independent and iterative), the default
(a private selection, shared or on a holdout fold), the hybrid with a DP label set and the
paper's per-stage budgets, at both commits.

    python benchmarks/bench_release_records.py --before c463a68 --write   # ~2 min

``--form-off``: this checkout's DP-KPS runs with the form profile off (``--form off``,
``form=False``; its default ``auto`` adds the form release where the private selection
runs): what a commit from before that default released, a run with the form off must
release exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.options import study_parser
from harness.provenance import ROOT
from harness.report import markdown_table, record

KEYS = ("name", "mechanism", "neighbouring", "sensitivity_norm", "sensitivity",
        "noise_scale", "dimension", "epsilon", "delta", "parallel_group", "fold",
        "threshold_delta")
COMMON = ["--label-column", "label", "--no-progress", "--epsilon", "4"]
LABELS = ["--labels", "business,sports,tech"]
RUNS = {  # name: command line after the input and output options
    "kps, declared labels": ["generate", *LABELS, "--llm", "recording:",
                             "--sequences-per-class", "2"],
    "kps, DP label set": ["generate", "--llm", "recording:", "--sequences-per-class", "2"],
    "augpe, DP label set": ["augpe", "--llm", "recording:", "--per-class", "2",
                            "--iterations", "2", "--embedder", "model2vec",
                            "--vocab", "english:20000"],  # augpe's default 'auto' fails
    "pate": ["pate", *LABELS, "--llm", "recording:", "--documents", "6", "--teachers", "4",
             "--embedder", "model2vec"],
    "dpft": ["dpft", *LABELS, "--documents", "2", "--epochs", "0.2", "--max-length", "16",
             "--max-new-tokens", "4"],
}


def corpus(path: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np

    from dptext.corpus import read_corpus, write_jsonl

    bbc = read_corpus("demo:bbc-news/train", label_column="label")
    lab = np.asarray(bbc.labels)
    keep = [i for c in ("business", "sports", "tech") for i in np.flatnonzero(lab == c)[:60]]
    write_jsonl(({"text": bbc.texts[i], "label": bbc.labels[i]} for i in keep), path)


def releases(src: Path, data: Path, work: Path,
             kps_args: tuple[str, ...] = ()) -> dict[str, list[dict]]:
    """Each run's release records; ``kps_args``: more options of the DP-KPS runs."""
    out = {}
    env = {**os.environ, "PYTHONPATH": str(src / "src"), "DPTEXT_HOME": str(work / "home")}
    for i, (name, args) in enumerate(RUNS.items()):
        target = work / f"run{i}.jsonl"
        more = kps_args if args[0] == "generate" else ()
        cmd = [sys.executable, "-m", "dptext", *args[:1], "-i", str(data), "-o", str(target),
               *COMMON, *args[1:], *more]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if res.returncode:
            raise SystemExit(f"{name} failed in {src}:\n{res.stdout[-2000:]}{res.stderr}")
        report = json.loads(target.with_name(target.stem + ".privacy.json").read_text())
        out[name] = [{k: r.get(k) for k in KEYS} for r in report["releases"]]
    return out


EXACT = r"""
import dataclasses, json, sys, types
import numpy as np
import dptext.privacy.labels as labels_mod
import dptext.privacy.mechanisms as m
import dptext.privacy.selection as selection
from dptext.corpus import read_corpus
from dptext.embed import load_embedder
from dptext.generators.kps import KeyphraseSeeder

# every noise off (test only): Gaussian and Laplace sums, the label set's thresholded counts
# (all kept), report-noisy-max (the exact arg-max); the validation fold's salt fixed
m._gaussian = lambda size, l2, eps, delta: ((lambda x: x), 1.0, l2)
m._laplace = lambda size, l1, eps: ((lambda x: x), 1.0, eps)
threshold = labels_mod._threshold_measurement
labels_mod._threshold_measurement = lambda *a: dataclasses.replace(threshold(*a),
                                                                   measurement=dict)
selection._noisy_max = lambda size, sens, eps, mono: ((lambda v: int(np.argmax(v))), 1.0,
                                                      eps)
selection.secrets = types.SimpleNamespace(token_bytes=bytes)
seen = []
m._TAPS.append(lambda name, part, values: seen.append(
    [name, str(part), np.round(np.asarray(values, dtype=np.float64), 9).tolist()]))
corpus = read_corpus(sys.argv[1], label_column="label")
out = {}
for name, kw in CONFIGS.items():
    seen.clear()
    s = KeyphraseSeeder(**{"vocab": "english:5000", "vocab_size": 300, "features": 200,
                           "epsilon": 4.0, **kw,
                           "embedder": load_embedder("model2vec", cache_dir="")})
    s.fit(corpus, rng=np.random.default_rng(0))
    seqs = s.sample(3, rng=np.random.default_rng(1))
    out[name] = [seen[:], list(s.released_vocabulary_), [q.to_dict() for q in seqs]]
json.dump(out, sys.stdout)
"""


#: DP-KPS configurations whose exact statistics are compared (declared labels unless None)
CONFIGS = {
    "histogram, independent": {"model": "histogram", "select": "none"},
    "kde, independent": {"model": "kde", "select": "none"},
    "kde, iterative": {"model": "kde", "select": "none", "method": "iterative"},
    "auto: shared selection": {},
    "auto: holdout selection": {"selection_split": "holdout"},
    "hybrid, DP label set": {"model": "hybrid", "labels": None, "epsilon_labels": 0.3},
    "kde, per-stage ε, DP label set": {"model": "kde", "select": "none", "labels": None,
                                       "epsilon": None},
}


def exact_statistics(src: Path, data: Path, work: Path, more: dict | None = None) -> dict:
    """Per configuration the noise-off statistics; ``more``: options added to each."""
    script = work / "exact.py"
    configs = {k: {"labels": ("business", "sports", "tech"), **kw, **(more or {})}
               for k, kw in CONFIGS.items()}
    script.write_text(f"CONFIGS = {configs!r}\n" + EXACT)
    env = {**os.environ, "PYTHONPATH": str(src / "src"), "DPTEXT_HOME": str(work / "home")}
    res = subprocess.run([sys.executable, str(script), str(data)], env=env,
                         capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"exact statistics failed in {src}:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout)


def main() -> None:
    ap = study_parser(__doc__)
    ap.add_argument("--before", required=True, help="the commit to compare with")
    ap.add_argument("--form-off", action="store_true",
                    help="this checkout's DP-KPS runs with --form off (form=False)")
    args = ap.parse_args()
    kps_args, more = (("--form", "off"), {"form": False}) if args.form_off else ((), {})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = tmp / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), args.before],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            corpus(tmp / "data.jsonl")
            (tmp / "a").mkdir()
            (tmp / "b").mkdir()
            before = releases(old, tmp / "data.jsonl", tmp / "a")
            now = releases(ROOT, tmp / "data.jsonl", tmp / "b", kps_args)
            exact = {"before": exact_statistics(old, tmp / "data.jsonl", tmp / "a"),
                     "after": exact_statistics(ROOT, tmp / "data.jsonl", tmp / "b", more)}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT,
                           capture_output=True)
    rows = []
    for name in RUNS:
        for a, b in zip(before[name], now[name], strict=True):
            same = [k for k in KEYS if a[k] == b[k]]
            differ = [k for k in KEYS if a[k] != b[k]]
            rows.append([name, a["name"], a["mechanism"], f"{a['epsilon']:.4g}",
                         f"{b['epsilon']:.4g}",
                         "identical" if not differ else f"differ: {', '.join(differ)}"])
            assert same
    body = (f"Releases of the same commands at commit {args.before} (before) and at this "
            "commit (after"
            + (", its DP-KPS runs with `--form off`, `form=False`" if args.form_off else "")
            + "); compared fields: " + ", ".join(KEYS) + ". dpft's DP-SGD record "
            "is calibrated from its released (noisy) corpus-size estimate: its noise scale "
            "and ε differ between any two runs, of one commit too. DP-KPS chooses S (terms per "
            "document) under noise and its class × term histogram's sensitivity is √S: two "
            "runs that choose different S differ in its sensitivity and noise scale whatever "
            "the commit (one of three runs of this script saw it); the noise-off part below "
            "compares the choice itself.\n\n"
            + markdown_table(["run", "release", "mechanism", "ε before", "ε after",
                              "record"], rows))
    stats = []
    for name, (taps, vocab, seqs) in exact["before"].items():
        taps2, vocab2, seqs2 = exact["after"][name]
        stats.append([f"DP-KPS {name}", len(taps), "identical" if taps == taps2 else "DIFFER",
                      "identical" if vocab == vocab2 else "DIFFER",
                      "identical" if seqs == seqs2 else "DIFFER"])
    body += ("\n\nNoise off (test-only identity measurements), the same 180 documents, fixed "
             "public seeds: DP-KPS's exact statistics before and after.\n\n"
             + markdown_table(["model", "releases", "exact statistics", "vocabulary",
                               "sequences"], stats))
    print(body)
    if args.write:
        record("release-records", "The same releases before and after a refactoring", body)


if __name__ == "__main__":
    main()
