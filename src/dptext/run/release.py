"""The release folder of a run: what a recipient of the synthetic corpus receives.

``<stem>.release/`` beside the run's output holds the documents (Parquet and JSONL,
same rows in the same order), the run's privacy report (``privacy.json``) and a
Hugging Face style dataset card (``README.md``).

Everything ``write_release`` puts here is released data: the synthetic documents, counts
over them, public parameters and the privacy report. Nothing is read from the private
corpus. The one exception is the curator's choice: ``dptext evaluate
--publish-evaluation`` (``publish_evaluation``) adds ``evaluation.json`` and an Evaluation
section to the card, figures computed on real data and marked as outside the guarantee.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dptext.files import finite_json

DOCUMENTS_PARQUET = "documents.parquet"
DOCUMENTS_JSONL = "documents.jsonl"
PRIVACY = "privacy.json"
EVALUATION = "evaluation.json"
CARD = "README.md"
CARD_METADATA = "dptext.card"

METHODS = {
    "kps": "DP-KPS: keyphrases sampled with differential privacy from the private corpus "
           "seed one LLM prompt per document",
    "augpe": "Aug-PE (private evolution): LLM texts evolved towards the private corpus "
             "through DP nearest-neighbour vote histograms",
    "pate": "PATE-style augmentation: public LLM candidates kept by a student trained on "
            "the noisy votes of teachers on disjoint shards of the private corpus",
    "dpft": "DP fine-tuning: a language model fine-tuned on the private corpus with DP-SGD, "
            "then sampled",
}


def release_dir_for(out: Path) -> Path:
    """The release folder of output file `out` (e.g. synthetic.jsonl -> synthetic.release/
    beside it)."""
    out = Path(out)
    return out.with_name(out.stem + ".release")


def write_release(out: Path, records: Sequence[dict], report: dict, *, method: str,
                  document_type: str | None = None) -> Path:
    """Write the release folder of the synthetic documents ``records`` for output ``out``:
    documents.parquet, documents.jsonl, privacy.json (``report``) and README.md.

    Each file goes to a temporary name first and is then renamed, so a reader never
    sees a half-written file (a crash may still leave an older file beside new ones).
    """
    folder = release_dir_for(out)
    folder.mkdir(parents=True, exist_ok=True)
    records = list(records)
    meta = {"method": method, "document_type": document_type, "n": len(records),
            "labels": _label_counts(records), "set_sizes": _set_sizes(records)}
    table = _table(records)
    meta["columns"] = table.column_names
    # add_evaluation re-renders the card from this (Parquet key-value metadata, which
    # readers such as pandas and datasets ignore) rather than from a file of its own
    table = table.replace_schema_metadata({CARD_METADATA: json.dumps(meta, ensure_ascii=False)})
    _atomic(folder / DOCUMENTS_PARQUET, lambda p: pq.write_table(table, p))
    _atomic_text(folder / DOCUMENTS_JSONL,
                 "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    _atomic_text(folder / PRIVACY, json.dumps(report, indent=2, default=str))
    _atomic_text(folder / CARD, render_card(meta, report, None))
    return folder


def add_evaluation(release_dir: Path, summary: dict) -> Path:
    """Record an evaluation summary (evaluation.json) and re-render README.md with an
    Evaluation section. Returns the path of evaluation.json."""
    release_dir = Path(release_dir)
    summary = finite_json(summary)
    path = release_dir / EVALUATION
    _atomic_text(path, json.dumps(summary, ensure_ascii=False, indent=2, allow_nan=False))
    meta = json.loads(pq.read_schema(release_dir / DOCUMENTS_PARQUET).metadata[
        CARD_METADATA.encode()])
    report = json.loads((release_dir / PRIVACY).read_text(encoding="utf-8"))
    _atomic_text(release_dir / CARD, render_card(meta, report, summary))
    return path


def release_of(synthetic: Path) -> Path | None:
    """The release folder a synthetic file belongs to: its own (``release_dir_for``) or
    the one it lies in (``<release>/documents.jsonl``), if there is one."""
    synthetic = Path(synthetic)
    if synthetic.name in (DOCUMENTS_JSONL, DOCUMENTS_PARQUET) \
            and (synthetic.parent / PRIVACY).exists():
        return synthetic.parent
    folder = release_dir_for(synthetic)
    return folder if (folder / PRIVACY).exists() else None


def inside_release(path: Path) -> Path | None:
    """The release folder ``path`` is in (or is), if any."""
    path = Path(path).resolve()
    for folder in (path, *path.parents):
        if (folder / PRIVACY).is_file() and (folder / DOCUMENTS_PARQUET).is_file():
            return folder
    return None


def publish_evaluation(synthetic: Path, metrics: dict) -> Path | None:
    """The curator's explicit choice (``--publish-evaluation``): add the headline numbers
    of ``dptext evaluate``'s ``metrics`` to the release folder of ``synthetic``, if it has
    one, marked as outside the guarantee; returns that folder."""
    folder = release_of(synthetic)
    if folder is not None:
        add_evaluation(folder, evaluation_summary(metrics))
    return folder


_CLASSIFIERS = {"tfidf": "TF-IDF + logistic regression", "mlp": "sentence encoder + MLP",
                "finetune": "fine-tuned encoder"}
_SCORES = (("accuracy", "accuracy"), ("subset_accuracy", "subset accuracy"),
           ("macro_f1", "macro-F1"), ("micro_f1", "micro-F1"))


#: the heading of the published figures that read the private corpus itself
ON_PRIVATE = "Computed on the private corpus (NOT covered by the privacy guarantee)"


def evaluation_summary(metrics: dict) -> dict:
    """The few numbers of an evaluation worth a line in the card: downstream accuracy/F1
    on real test data of classifiers trained on synthetic data, then, under
    ``ON_PRIVATE``, every figure that read the private corpus (the ceiling trained on it,
    the leakage checks). Counts over the private corpus (its size, its entities) are left
    out. A figure not named here (a check added later) is not published."""
    out: dict[str, Any] = {"evaluated": datetime.now(UTC).isoformat(timespec="seconds"),
                           "real test documents": metrics.get("inputs", {}).get("n_test")}
    on_private: dict[str, Any] = {}
    util = metrics.get("utility", {})
    if "skipped" in util:
        out["utility"] = f"skipped: {util['skipped']}"
    for name, res in util.get("classifiers", {}).items():
        row: dict[str, Any] = {}
        clf = _CLASSIFIERS.get(name, name)
        for role, said in (("synthetic", "trained on synthetic"),
                           ("synthetic_coral", "trained on synthetic, with CORAL")):
            for key, score in _SCORES:
                if key in res.get(role, {}):
                    row[f"{score}, {said}"] = res[role][key]
        out[f"Utility: {clf}"] = row
        for key, score in _SCORES:
            if key in res.get("ceiling", {}):
                on_private[f"{clf}: {score}, trained on the private corpus (ceiling)"] = \
                    res["ceiling"][key]
        if res.get("ratio") is not None:
            on_private[f"{clf}: ratio to the ceiling"] = res["ratio"]
    lk = metrics.get("leakage", {})
    if lk.get("ngrams"):
        on_private["Leakage: 7-word sequences copied from the private corpus"] = \
            lk["ngrams"]["copied_7grams"]
    if "n_leaked" in lk.get("entities", {}):
        on_private["Leakage: private named entities reappearing"] = lk["entities"]["n_leaked"]
    if can := lk.get("canaries"):
        on_private["Leakage: planted canaries found"] = \
            f"{can['n_found']} of {can['n_canaries']}"
        on_private["Leakage: canary secrets found"] = can["n_secret_found"]
    if on_private:
        out[ON_PRIVATE] = on_private
    return out


# --------------------------------------------------------------------------- files


def _atomic(path: Path, write) -> None:
    """``write(tmp)`` to a temporary file in ``path``'s folder, then rename it to ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_text(path: Path, text: str) -> None:
    _atomic(path, lambda p: Path(p).write_text(text, encoding="utf-8"))


def _table(records: list[dict]) -> pa.Table:
    """One column per field (in order of first appearance), typed by pyarrow (keyphrases
    become list<string>); a field whose values pyarrow cannot type as one column (mixed
    kinds) is stored as JSON text rather than dropped."""
    names = list(dict.fromkeys(k for r in records for k in r)) or ["text"]
    columns = {}
    for name in names:
        values = [r.get(name) for r in records]
        try:
            columns[name] = pa.array(values, type=pa.string() if not records else None)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[name] = pa.array([None if v is None else json.dumps(v, ensure_ascii=False)
                                      for v in values], type=pa.string())
    return pa.table(columns)


def _label_counts(records: list[dict]) -> dict[str, int]:
    """Documents per label of the synthetic data (a multi-label document counts once for
    each of its labels); ``{}`` when the records carry no label."""
    counts: Counter[str] = Counter()
    for r in records:
        lab = r.get("label")
        for x in (lab if isinstance(lab, list | tuple) else [] if lab is None else [lab]):
            counts[str(x)] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _set_sizes(records: list[dict]) -> dict[str, int]:
    """Multi-label data (a list of labels per document): documents per number of labels;
    ``{}`` otherwise."""
    sizes = Counter(len(r["label"]) for r in records
                    if isinstance(r.get("label"), list | tuple))
    return {str(k): c for k, c in sorted(sizes.items())}


# --------------------------------------------------------------------------- the card


def size_category(n: int) -> str:
    """The Hugging Face ``size_categories`` bucket of ``n`` rows (n<1K, 1K<n<10K, ...)."""
    if n < 1000:
        return "n<1K"
    k = len(str(n)) - 1  # 10**k <= n < 10**(k + 1)
    if k >= 12:
        return "n>1T"

    def short(e: int) -> str:
        return f"{10 ** (e % 3)}{'KMBT'[e // 3 - 1]}"

    return f"{short(k)}<n<{short(k + 1)}"


def _cell(x: Any) -> str:
    """A markdown table cell: one line, ``|`` escaped."""
    return " ".join(str(x).split()).replace("|", "\\|")


def _num(x: Any, fmt: str = ".4g") -> str:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    return "∞" if math.isinf(x) else format(x, fmt)


def _private(report: dict) -> bool:
    eps = report.get("guarantee", {}).get("epsilon")
    return isinstance(eps, int | float) and math.isfinite(eps)


def _guarantee(report: dict) -> str:
    g = report.get("guarantee", {})
    eps, delta = g.get("epsilon"), g.get("delta")
    if not _private(report):
        return "none (ε = ∞)"
    return f"ε = {_num(eps)}" + (" (pure ε-DP, δ = 0)" if not delta
                                 else f", δ = {_num(delta, '.3g')}")


#: report parameters that are facts of the run (counts of LLM calls, of retried refusals),
#: not choices that shaped the release: kept in privacy.json, left off the card
RUN_FACTS = ("llm_calls", "llm_calls_computed_this_run", "prompts_per_iteration", "checks",
             "model_selection")


def _parameters(parameters: dict) -> list[tuple[str, str]]:
    """The scalar public parameters, one level of nesting flattened (``config.x``), without
    the run's facts (``RUN_FACTS``); long values are cut, so a card stays readable."""
    out = []
    for k, v in parameters.items():
        if k in RUN_FACTS:
            continue
        items = [(f"{k}.{kk}", vv) for kk, vv in v.items()] if isinstance(v, dict) else [(k, v)]
        for name, value in items:
            if isinstance(value, tuple | list) and all(isinstance(x, str) for x in value):
                value = ", ".join(value)  # a declared label set
            if isinstance(value, str | int | float | bool) and value != "":
                s = _num(value)
                out.append((name, s if len(s) <= 80 else s[:77] + "…"))
    return out


def _model(parameters: dict) -> list[str]:
    """The keyphrase model that was sampled (DP-KPS), and how it was chosen."""
    sel = parameters.get("model_selection") or {}
    if not sel.get("chosen"):
        return []
    how = ""
    if sel.get("selected"):
        how = (f", chosen privately among {len(sel.get('candidates') or ())} candidates "
               f"(scored on {_num(sel.get('validation_share'))} of the documents, "
               f"{sel.get('split')} split)")
    return [f"- Keyphrase model: {sel['chosen']}{how}."]


_MECHANISMS = {"gaussian": "Gaussian noise", "laplace": "Laplace noise",
               "report-noisy-max": "a private choice by report-noisy-max",
               "dp-sgd": "DP-SGD (clipped, noisy gradients)"}
_FOLDS = {"fit": "the fit fold's documents", "validation": "the validation fold's documents"}


def release_lines(releases: list[dict]) -> list[str]:
    """Each release in plain words, one line: what was released, on which documents, with
    which mechanism and noise, at which ε and δ. Alike releases on disjoint partitions (one
    per class) are one line: they compose in parallel."""
    rows: dict[tuple, list[dict]] = {}
    for r in releases:
        key = (r["name"], r.get("parallel_group"), r.get("fold")) if r.get("parallel_group") \
            else (r["name"], id(r))
        rows.setdefault(key, []).append(r)
    lines = []
    for group in rows.values():
        r = group[0]
        what = r["name"] + (f" [{r['partition']}]" if r.get("partition") and len(group) == 1
                            else "")
        if len(group) > 1:  # partitions are named "<kind>=<value>" (class=sport)
            kind = str(r.get("partition") or "partition").split("=")[0]
            what += f", one per {kind} ({len(group)}, on disjoint documents: ε counted once)"
        on = _FOLDS.get(r.get("fold"), "all documents")
        mech = _MECHANISMS.get(r.get("mechanism"), r.get("mechanism"))
        scale = "σ" if r.get("mechanism") in ("gaussian", "dp-sgd") else "b"
        eps = max(x.get("epsilon") or 0.0 for x in group)
        delta = max(x.get("delta") or 0.0 for x in group)
        lines.append(f"- {what} — on {on}, with {mech} ({scale} = {_num(r.get('noise_scale'))})"
                     f": ε = {_num(eps)}" + (f", δ = {_num(delta, '.3g')}." if delta else "."))
    return lines


NOT_PRIVATE = ("**NOT PRIVATE.** This dataset was made without differential privacy "
               "(ε = ∞): it may reproduce documents of the private corpus. Do not share it "
               "as a private release.")


def render_card(meta: dict, report: dict, evaluation: dict | None) -> str:
    """README.md: YAML front matter, then summary, method, privacy, evaluation, loading."""
    method, n, labels = meta["method"], meta["n"], meta["labels"]
    doc_type = meta.get("document_type")
    pretty = f"Synthetic {doc_type or 'text'} corpus ({method}, dptext)"
    private = _private(report)
    lines = [
        "---",
        "language:",
        "- en  # assumed: change it to the language of the corpus",
        "license: other  # the data curator must choose the licence of this dataset",
        "task_categories:",
        f"- {'text-classification' if labels else 'text-generation'}",
        "size_categories:",
        f"- {size_category(n)}",
        "tags:",
        "- synthetic",
        "- differential-privacy",
        "- dptext",
        f"pretty_name: {json.dumps(pretty, ensure_ascii=False)}",
        "configs:",
        "- config_name: default",
        f"  data_files: {DOCUMENTS_PARQUET}",
        "---",
        "",
        f"# {pretty}",
        "",
    ]
    if not private:
        lines += [f"> {NOT_PRIVATE}", ""]
    what = f"{doc_type} documents" if doc_type else "documents"
    lines += [
        "## Dataset summary",
        "",
        f"{n} synthetic {what} generated by dptext "
        f"with the `{method}` generator from a private corpus, with the differential-privacy "
        f"guarantee {_guarantee(report)}. The private documents themselves are not part of "
        "this dataset.",
        "",
        "Fields: " + ", ".join(f"`{c}`" for c in meta["columns"]) + ".",
        "",
    ]
    if labels:
        lines += [f"{len(labels)} labels; documents per label in this synthetic data:", "",
                  "| label | documents |", "| --- | ---: |"]
        lines += [f"| {_cell(lab)} | {c} |" for lab, c in labels.items()]
        lines.append("")
    if meta.get("set_sizes"):  # multi-label: the label is a list
        lines += ["Labels per document (multi-label):", "", "| labels | documents |",
                  "| ---: | ---: |"]
        lines += [f"| {k} | {c} |" for k, c in meta["set_sizes"].items()]
        lines.append("")
    lines += ["## How it was made", "",
              f"- Generator: `{method}`" + (f" — {METHODS[method]}." if method in METHODS
                                             else "."),
              f"- dptext {report.get('dptext_version', '?')}, command "
              f"`{report.get('command', '?')}`, created {report.get('created', '?')}."]
    lines += _model(report.get("parameters") or {})
    params = _parameters(report.get("parameters") or {})
    if params:
        lines.append("- Public parameters that shaped the release:")
        lines += [f"  - `{k}`: {_cell(v)}" for k, v in params]
    lines += ["", "## Privacy", ""]
    lines += _privacy(report, private)
    if evaluation is not None:
        lines += ["## Evaluation", "",
                  "**Not covered by the privacy guarantee.** Computed by `dptext evaluate` "
                  "with real data and published by the data curator's explicit choice "
                  "(`--publish-evaluation`): the utility figures read a real test set; the "
                  f"figures under *{ON_PRIVATE}* read the private corpus itself (a classifier "
                  "trained on it, leakage checks against it) and can tell someone who also "
                  "holds these synthetic documents something about the private ones. The "
                  "guarantee above covers the synthetic documents and the privacy report "
                  f"only. The same numbers are in `{EVALUATION}`.", ""]
        lines += _evaluation(evaluation)
    lines += [
        "## How to load",
        "",
        "```python",
        "import pandas as pd",
        "",
        f'df = pd.read_parquet("{DOCUMENTS_PARQUET}")',
        "```",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'ds = load_dataset("parquet", data_files="{DOCUMENTS_PARQUET}", split="train")',
        "```",
        "",
        f"The same rows, in the same order, are in `{DOCUMENTS_JSONL}` (one JSON object a "
        f"line); the privacy report is `{PRIVACY}`.",
        "",
    ]
    return "\n".join(lines)


def _privacy(report: dict, private: bool) -> list[str]:
    g = report.get("guarantee", {})
    if private:
        eps = _num(g.get("epsilon"))
        delta = g.get("delta") or 0
        lines = [
            f"Guarantee: **{_guarantee(report)}**, document-level differential privacy "
            f"(composed by: {g.get('method', '?')}).",
            "",
            "Two corpora are *neighbours* when one is the other with one whole document "
            "added or removed. For any two neighbouring private corpora, the probability of "
            f"any outcome of this run — this dataset included — differs by a factor of at "
            f"most e^{eps}"
            + (f", except with probability at most δ = {_num(delta, '.3g')}" if delta else "")
            + ". So the dataset reveals little about whether any one document was in the "
            "private corpus; smaller ε is stronger.",
            "",
        ]
    else:
        lines = [NOT_PRIVATE, ""]
    lines += ["What the guarantee takes as given (public, or by definition):", ""]
    lines += [f"- {a}" for a in report.get("assumptions", [])]
    if b := report.get("budget"):
        which = (f"dataset id `{b.get('dataset_id')}`" if b.get("key") == "dataset id"
                 else "the corpus's content fingerprint")
        lines.append(f"- Budget ledger: {which} — {b.get('meaning', '')}.")
    lines += ["", "What the run released from the private corpus (every release, in plain "
              "words):", ""]
    lines += release_lines(report.get("releases", []))
    lines += ["", "The same releases in detail:", "",
              "| release | mechanism | sensitivity | noise scale | ε | δ |",
              "| --- | --- | --- | ---: | ---: | ---: |"]
    for r in report.get("releases", []):
        name = r["name"] + (f" [{r['partition']}]" if r.get("partition") else "")
        lines.append("| " + " | ".join(_cell(c) for c in (
            name, r.get("mechanism"),
            f"{r.get('sensitivity_norm')} {_num(r.get('sensitivity'))}",
            _num(r.get("noise_scale")), _num(r.get("epsilon")),
            _num(r.get("delta"), ".3g"))) + " |")
    lines.append("")
    return lines


def _evaluation(summary: dict) -> list[str]:
    """Flat entries as bullets; a nested dict as sub-bullets."""
    lines = []
    for k, v in summary.items():
        if isinstance(v, dict):
            lines.append(f"- **{k}**")
            lines += [f"  - {kk}: {_value(vv)}" for kk, vv in v.items()]
        else:
            lines.append(f"- **{k}**: {_value(v)}")
    lines.append("")
    return lines


def _value(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, list | tuple):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, ensure_ascii=False)
    return _num(v)
