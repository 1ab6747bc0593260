"""``metrics.json`` and a self-contained ``report.html`` (plots inlined as PNG data URIs).

The page is written for a data curator, not an ML expert: a summary table on top,
each section saying in one sentence what its numbers mean, plots below. It loads
nothing from the network.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
import json
import math
from html import escape
from pathlib import Path

import numpy as np

from dptext.files import finite_json

REAL_COLOUR, SYN_COLOUR, CEIL_COLOUR = "#4C72B0", "#DD8452", "#55A868"


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _strict(metrics: dict) -> dict:
    """Plain JSON values, NaN/inf as None (metrics.json is strict JSON)."""
    return finite_json(json.loads(json.dumps(metrics, default=_json_default)))


def write_metrics(metrics: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_strict(metrics), indent=2, ensure_ascii=False, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- plots


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _fig(w=6.0, h=3.6):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(w, h))


def _grouped_bars(ax, names: list[str], series: list[tuple[str, str, list[float]]],
                  fontsize: int = 8) -> None:
    """One bar per (label, colour, values) series at each name, values printed on top."""
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for j, (label, colour, vals) in enumerate(series):
        bars = ax.bar(x + (j - (len(series) - 1) / 2) * width, vals, width, label=label,
                      color=colour)
        ax.bar_label(bars, fmt="%.2f", fontsize=fontsize)
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1.08)


def plot_utility(util: dict) -> str | None:
    clfs = util.get("classifiers", {})
    if not clfs:
        return None
    from dptext.evaluate.utility import headline, headline_name

    fig, ax = _fig()
    names = list(clfs)
    series = [("synthetic", "trained on synthetic", SYN_COLOUR),
              ("synthetic_coral", "synthetic + CORAL", "#C44E52"),
              ("ceiling", "trained on real (ceiling)", CEIL_COLOUR)]
    _grouped_bars(ax, names, [(label, colour, [headline(clfs[n][key]) if key in clfs[n] else 0
                                               for n in names])
                              for key, label, colour in series
                              if any(key in clfs[n] for n in names)])
    ax.set_ylabel(f"{headline_name(clfs[names[0]]['synthetic'])} on real test data")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Downstream classification")
    return _png(fig)


def plot_map(fid: dict) -> str | None:
    m = fid.get("map") or {}
    if not m.get("real"):
        return None
    fig, ax = _fig(5.5, 5.0)
    r, s = np.asarray(m["real"]), np.asarray(m["synthetic"])
    ax.scatter(r[:, 0], r[:, 1], s=7, alpha=0.6, c=REAL_COLOUR, label="real (test)")
    ax.scatter(s[:, 0], s[:, 1], s=7, alpha=0.6, c=SYN_COLOUR, label="synthetic")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(fontsize=8)
    ax.set_title("t-SNE map of document embeddings")
    return _png(fig)


def plot_labels(fid: dict) -> str | None:
    lc = fid.get("label_counts") or {}
    real, syn = lc.get("real_test") or {}, lc.get("synthetic") or {}
    classes = sorted(set(real) | set(syn))
    if not classes or len(classes) > 40:
        return None
    fig, ax = _fig(6.0, 3.2)
    x = np.arange(len(classes))
    tr, ts = sum(real.values()) or 1, sum(syn.values()) or 1
    ax.bar(x - 0.2, [real.get(c, 0) / tr for c in classes], 0.4, label="real test",
           color=REAL_COLOUR)
    ax.bar(x + 0.2, [syn.get(c, 0) / ts for c in classes], 0.4, label="synthetic",
           color=SYN_COLOUR)
    ax.set_xticks(x, classes, rotation=45 if len(classes) > 6 else 0, ha="right"
                  if len(classes) > 6 else "center", fontsize=8)
    ax.set_ylabel("share of documents")
    ax.legend(fontsize=8)
    ax.set_title("Class proportions")
    return _png(fig)


def plot_ngrams(ng: dict) -> str | None:
    if not ng:
        return None
    fig, ax = _fig(5.5, 3.4)
    ns = sorted(ng["overlap"], key=int)
    ax.plot([int(n) for n in ns], [ng["overlap"][n] for n in ns], "o-", color=SYN_COLOUR)
    ax.set_xlabel("n (words)")
    ax.set_ylabel("share of synthetic n-grams\nalso in private data")
    ax.set_ylim(0, 1.02)
    ax.set_title("n-gram overlap with the private corpus (lower = less copying)")
    ax.grid(alpha=0.3)
    return _png(fig)


def plot_entities(ent: dict) -> str | None:
    if not ent or not ent.get("n_contexts"):
        return None
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    ks = sorted(ent["n_contexts"], key=int)
    a1.bar([int(k) for k in ks], [ent["n_leaked_with_context"][k] for k in ks], color=SYN_COLOUR)
    a1.set_xlabel("k words of private context around the entity")
    a1.set_ylabel("entity contexts found in synthetic")
    a1.set_title("Entities with context")
    pairs = np.asarray(ent.get("frequency_pairs") or [[0, 0]], dtype=float)
    a2.scatter(pairs[:, 0], pairs[:, 1], s=10, alpha=0.6, color=SYN_COLOUR)
    a2.set_xscale("symlog")
    a2.set_yscale("symlog")
    a2.set_xlabel("private documents with the entity")
    a2.set_ylabel("synthetic documents with it")
    a2.set_title("Leaked entities: frequency")
    return _png(fig)


def plot_coherence(coh: dict) -> str | None:
    scores = coh.get("scores")
    if not scores:
        return None
    fig, ax = _fig(5.0, 3.0)
    ax.hist(scores, bins=np.linspace(0, 1, 11), color=SYN_COLOUR, edgecolor="white")
    ax.set_xlabel("NLI score (1 = no contradiction between consecutive sentences)")
    ax.set_ylabel("documents")
    ax.set_title("Coherence of synthetic documents")
    return _png(fig)


ATTACK_NAMES = {"embedding_distance": "nearest synthetic neighbour (embedding distance)",
                "rare_ngrams": "shared rare n-grams"}


def plot_membership(mem: dict) -> str | None:
    """ROC curves of the membership attacks, on linear and on log axes (low FPR)."""
    attacks = mem.get("attacks") or {}
    if not attacks:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for colour, (name, res) in zip((SYN_COLOUR, REAL_COLOUR), attacks.items(), strict=False):
        fpr, tpr = np.asarray(res["roc"]["fpr"]), np.asarray(res["roc"]["tpr"])
        for ax in axes:
            ax.plot(fpr, tpr, color=colour,
                    label=f"{name.replace('_', ' ')} (AUC {res['auc']:.2f})")
    floor = 1 / max(mem.get("n_non_members") or 1, 1)
    grid = np.logspace(np.log10(floor), 0, 50)
    for ax, scale in zip(axes, ("linear", "log"), strict=True):
        ax.plot(grid if scale == "log" else [0, 1], grid if scale == "log" else [0, 1], ":",
                color="grey", label="chance")
        ax.set_xscale(scale)
        ax.set_yscale(scale)
        ax.set_xlabel("false-positive rate (non-members flagged)")
        ax.set_ylabel("true-positive rate (members found)")
        ax.grid(alpha=0.3)
    axes[1].set_xlim(floor, 1)
    axes[1].set_ylim(floor, 1.02)
    axes[1].axvline(mem.get("target_fpr", 0.01), color="#C44E52", lw=0.8)
    axes[0].legend(fontsize=7, loc="lower right")
    axes[0].set_title("Membership inference ROC")
    axes[1].set_title("Same, log axes (low FPR)")
    return _png(fig)


# --------------------------------------------------------------------------- HTML


def _img(b64: str | None, alt: str) -> str:
    if not b64:
        return ""
    return f'<figure><img class="plot" alt="{escape(alt)}" src="data:image/png;base64,{b64}">' \
           f"<figcaption>{escape(alt)}</figcaption></figure>"


def _num(x, pct=False) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, int) and not pct:
        return str(x)
    return f"{100 * x:.1f}%" if pct else f"{x:.3g}"


def _table(head: list[str], rows: list[list], cls: str = "") -> str:
    th = "".join(f"<th>{escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _skip(sec: dict) -> str:
    return f'<p class="skip">Skipped: {escape(sec["skipped"])}</p>' if sec.get("skipped") else ""


def _utility_html(util: dict) -> str:
    if not util or util.get("skipped"):
        return _skip(util or {"skipped": "no utility run"})
    multi = util.get("task") == "multi-label"
    cols = ["subset_accuracy", "micro_f1", "macro_f1"] if multi else ["accuracy", "macro_f1"]
    rows = []
    for name, res in util["classifiers"].items():
        for key in ("synthetic", "synthetic_coral", "ceiling"):
            if key in res:
                rows.append([name, {"synthetic": "synthetic", "synthetic_coral":
                                    "synthetic + Deep CORAL", "ceiling": "real (ceiling)"}[key],
                             res[key]["n_train"], *[_num(res[key][c]) for c in cols],
                             _num(res[key]["seconds"])])
        if "ratio" in res:
            rows.append([name, "ratio synthetic / real", "", _num(res["ratio"]),
                         *[""] * (len(cols) - 1), ""])
    if "floor" in util:  # written since the floor was added; older metrics.json lack it
        rows.append(["none", f"no text: {util['floor']['predicts']}", "",
                     *[_num(util["floor"][c]) for c in cols], ""])
    kp = " (keyphrase-only protocol: real documents turned into phrase sequences over the " \
         "released vocabulary, DP-KPS table 5)" if util.get("keyphrase_only") else ""
    return (f"<p>A {escape(util['task'])} classifier over {len(util['classes'])} classes is "
            f"trained on each corpus and tested on {util['n_test']} real documents{kp}.</p>"
            + _table(["classifier", "trained on", "train docs", *cols, "seconds"], rows))


def _leakage_html(lk: dict) -> str:
    if not lk:
        return ""
    parts = [f'<p class="note">{escape(lk.get("note", ""))}</p>', _skip(lk)]
    ng = lk.get("ngrams")
    if ng:
        parts.append(_table(["n", *sorted(ng["overlap"], key=int)],
                            [["overlap", *[_num(ng["overlap"][n], True)
                                           for n in sorted(ng["overlap"], key=int)]],
                             ["shared", *[ng["shared"][n] for n in sorted(ng["shared"], key=int)]]
                             ]))
        parts.append(_img(plot_ngrams(ng), "Share of distinct synthetic n-grams that also occur "
                                           "in the private corpus"))
        if ng.get("copied_passages"):
            parts.append("<h3>Longest passages shared word for word (synthetic text)</h3>")
            parts.append(_table(["synthetic doc", "words", "excerpt (synthetic)"],
                                [[p["doc"], p["words"], p["excerpt"]]
                                 for p in ng["copied_passages"]], "excerpts"))
    ent = lk.get("entities")
    if ent:
        parts.append("<h3>Named entities</h3>" + _skip(ent))
        if "n_private_entities" in ent:
            parts.append(f"<p>{ent['n_leaked']} of {ent['n_private_entities']} distinct entities "
                         f"found by {escape(ent['backend'])} in {ent['private_docs_scanned']} "
                         "private documents reappear in the synthetic corpus.</p>")
            ks = sorted(ent["n_contexts"], key=int)
            parts.append(_table(["k (context words)", *ks],
                                [["private contexts", *[ent["n_contexts"][k] for k in ks]],
                                 ["found in synthetic",
                                  *[ent["n_leaked_with_context"][k] for k in ks]],
                                 ["ratio", *[_num(ent["context_leak_ratio"][k], True)
                                             for k in ks]]]))
            parts.append(_table(["type", "private", "leaked"],
                                [[t, v["private"], v["leaked"]]
                                 for t, v in ent["by_type"].items()]))
            parts.append(_img(plot_entities(ent), "Entity leakage"))
            if ent.get("examples"):
                parts.append(_table(["type", "private docs", "synthetic docs",
                                     "excerpt (synthetic)"],
                                    [[e["type"], e["private_docs"], e["synthetic_docs"],
                                      e["synthetic_excerpt"]] for e in ent["examples"]],
                                    "excerpts"))
    can = lk.get("canaries")
    if can:
        parts.append("<h3>Canaries</h3>")
        parts.append(_table(["#", "words", "found whole", "secret found", "longest run (words)"],
                            [[i + 1, r["canary_words"], r["found"],
                              "–" if r["secret_found"] is None else r["secret_found"],
                              r["longest_run_words"]] for i, r in enumerate(can["canaries"])]))
    return "".join(parts)


def _fidelity_html(fid: dict) -> str:
    if not fid:
        return ""
    d = fid.get("diversity", {})
    keys = ["type_token_ratio", "distinct_1", "distinct_2", "distinct_3", "self_similarity",
            "mean_tokens"]
    rows = [[k, _num(d.get("real_test", {}).get(k)), _num(d.get("synthetic", {}).get(k))]
            for k in keys]
    ref = fid.get("frechet_reference")
    txt = (f"<p>Fréchet distance between real-test and synthetic embeddings: "
           f"<b>{_num(fid['frechet_distance'])}</b>"
           + (f" (real training vs real test: {_num(ref)})" if ref is not None else "")
           + f"; cosine between their centroids {_num(fid.get('centroid_cosine'))}.</p>")
    return (txt + _table(["diversity", "real test", "synthetic"], rows)
            + '<div class="row">' + _img(plot_map(fid), "Real vs synthetic documents (t-SNE)")
            + _img(plot_labels(fid), "Class proportions") + "</div>")


def _fairness_html(fair: dict) -> str:
    if not fair:
        return ""
    parts = [_skip(fair)]
    for col, res in fair.get("groups", {}).items():
        parts.append(f"<h3>{escape(col)}</h3>" + _skip(res))
        if "runs" in res:
            keys = ["FPED", "FNED", "TPED", "TNED", "equalized_odds"]
            parts.append(_table(["classifier / trained on", *keys],
                                [[k, *[_num(r[m]) for m in keys]]
                                 for k, r in res["runs"].items()]))
            parts.append(f"<p>Subgroups: {escape(', '.join(map(str, res['subgroups'])))}.</p>")
    return "".join(parts)


def _membership_html(mem: dict) -> str:
    attacks = mem.get("attacks")
    if not attacks:
        return _skip(mem)
    iv, fpr = mem["interval"], mem["target_fpr"]
    intro = (f"<p>{mem['n_members']} private documents (members) against as many real test "
             "documents (non-members)" + (", matched within each label" if
                                          mem.get("matched_within_labels") else "")
             + ". An AUC near 0.5 and a true-positive rate near the false-positive rate mean "
             "the release does not tell them apart; 1.0 means it gives every member away. "
             f"Interval: {escape(iv['method'])}, {iv['level']:.0%}.</p>")
    table = _table(
        ["attack", "AUC", f"{iv['level']:.0%} interval", f"TPR at {fpr:.0%} FPR"],
        [[ATTACK_NAMES.get(name, name), _num(r["auc"]),
          f"{_num(r['auc_ci'][0])} – {_num(r['auc_ci'][1])}",
          _num(r["tpr_at_fpr"], True) if r["tpr_at_fpr"] is not None
          else r.get("tpr_note", "–")] for name, r in attacks.items()])
    return (f'<p class="note">{escape(mem["note"])}</p>' + intro + table
            + _img(plot_membership(mem), "ROC curves of the membership attacks"))


def _coherence_html(coh: dict) -> str:
    if not coh:
        return ""
    if coh.get("skipped"):
        return _skip(coh)
    return (f"<p>Mean NLI score over {coh['docs_scored']} synthetic documents: "
            f"<b>{_num(coh['mean_score'], True)}</b>; "
            f"{_num(coh['share_with_contradiction'], True)} contain at least one "
            f"contradiction (model: {escape(str(coh['backend']))}). Use "
            "<code>dptext filter</code> to drop the least coherent documents.</p>"
            + _img(plot_coherence(coh), "NLI score distribution"))


_COREF_ROLES = (("gold", "gold train (ceiling)", CEIL_COLOUR),
                ("synthetic_silver", "synthetic, silver chains", SYN_COLOUR),
                ("private_silver", "real private, silver chains", REAL_COLOUR),
                ("shuffled_control", "control: shuffled chains", "#999999"))
_COREF_SCORES = (("muc", "MUC"), ("b3", "B³"), ("ceafe", "CEAF-e"))


def plot_coreference(cor: dict) -> str | None:
    models = cor.get("models") or {}
    roles = [r for r in _COREF_ROLES if r[0] in models]
    if not roles:
        return None
    fig, ax = _fig(7.0, 3.6)
    names = [*[lab for _, lab in _COREF_SCORES], "CoNLL F1", "mentions F1"]
    _grouped_bars(ax, names, [(label, colour, [*[models[key][s]["f1"] for s, _ in _COREF_SCORES],
                                               models[key]["conll_f1"],
                                               models[key]["mentions"]["f1"]])
                              for key, label, colour in roles], fontsize=7)
    ax.set_ylim(0, 1.3)  # room for the legend above the bars
    ax.set_ylabel("F1 on held-out gold documents")
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.set_title("Coreference model trained on each corpus")
    return _png(fig)


def _coreference_html(cor: dict) -> str:
    if not cor:
        return ""
    if cor.get("skipped"):
        return _skip(cor)
    models, caps = cor["models"], cor["caps"]
    rows = [[label, models[key]["train_docs"], models[key]["train_mentions"],
             *[_num(models[key][s]["f1"]) for s, _ in _COREF_SCORES],
             _num(models[key]["conll_f1"]), _num(models[key]["mentions"]["f1"])]
            for key, label, _ in _COREF_ROLES if key in models]
    verdict = ("the shuffled control scores lowest, as it must" if
               cor["control_below_synthetic"] and cor["control_below_gold"] else
               "warning: the shuffled control does not score lowest: too few documents to "
               "tell good training data from bad")
    return (f"<p>A coreference model (mention detection + mention-pair linking on spaCy "
            f"features) trained on {cor['n_gold_train']} gold documents annotates the "
            "synthetic (and the real private) documents with silver chains; a fresh model "
            f"trained on each silver corpus is scored on {cor['n_gold_test']} held-out gold "
            f"documents ({escape(cor['scoring'])}). Close to the gold row = the synthetic "
            f"documents keep their entities as consistent as real text; {escape(verdict)}. "
            f"Caps: {caps['max_tokens']} tokens a document, {caps['max_docs']} synthetic "
            "(and private) documents.</p>"
            + _table(["trained on", "docs", "mentions", *[lab for _, lab in _COREF_SCORES],
                      "CoNLL F1", "mention F1"], rows)
            + _img(plot_coreference(cor), "Coreference F1 on held-out gold documents"))


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1000px;
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.1em} .sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.92em}
th,td{border:1px solid #ddd;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} table.summary td:nth-child(2){font-weight:600;min-width:16em}
table.summary td:first-child{min-width:12em}
table.summary td:nth-child(3){color:#555} table.excerpts td:last-child{font-family:monospace;
font-size:.85em;max-width:600px} .note{color:#8a5a00} .skip{color:#999;font-style:italic}
figure{display:inline-block;margin:.5em 1em .5em 0} img.plot{max-width:100%}
figcaption{font-size:.8em;color:#666} section{border-top:1px solid #eee;margin-top:1.5em}
"""


def _tested_against(inp: dict) -> str:
    if inp.get("real_test") is None:
        return "without a real test set"
    return (f"tested against {escape(str(inp.get('n_test')))} real documents "
            f"({escape(str(inp['real_test']))})")


def render_html(m: dict) -> str:
    inp = m.get("inputs", {})
    created = m.get("created", "")
    summary = _table(["", "value", "how to read it"],
                     [[r["metric"], r["value"], r["note"]] for r in m.get("summary", [])],
                     "summary")
    sections = [
        ("utility", "Utility: is the synthetic data useful for training?",
         _utility_html(m.get("utility", {})) + _img(plot_utility(m.get("utility", {})),
                                                   "Accuracy on real test data")),
        ("fidelity", "Fidelity and diversity: does it look like the real data?",
         _fidelity_html(m.get("fidelity", {}))),
        ("leakage", "Privacy leakage: does it repeat the private data?",
         _leakage_html(m.get("leakage", {}))),
        ("membership", "Membership inference: can the release tell who was in the private "
                       "corpus?", _membership_html(m.get("membership", {}))),
        ("fairness", "Fairness across subgroups", _fairness_html(m.get("fairness", {}))),
        ("coherence", "Coherence", _coherence_html(m.get("coherence", {}))),
        ("coreference", "Coreference: are entities consistent enough to learn from?",
         _coreference_html(m.get("coreference", {}))),
    ]
    body = "".join(f'<section id="{sid}"><h2>{escape(title)}</h2>{html}</section>'
                   for sid, title, html in sections if html)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dptext evaluation report</title><style>{CSS}</style></head>
<body><h1>Synthetic data evaluation</h1>
<p class="sub">{escape(str(inp.get('n_synthetic')))} synthetic documents
({escape(str(inp.get('synthetic')))}) {_tested_against(inp)}. {escape(created)}</p>
<section id="summary"><h2>Summary</h2>{summary}</section>
{body}
<footer><p class="sub">Generated by dptext {escape(str(m.get('dptext_version', '')))}.
All numbers are in <code>metrics.json</code> beside this page.</p></footer>
</body></html>
"""


def write_report(metrics: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``metrics.json`` and ``report.html`` into ``out_dir``; returns both paths."""
    from dptext import __version__

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics.setdefault("dptext_version", __version__)
    metrics.setdefault("created", _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    mpath, hpath = out / "metrics.json", out / "report.html"
    write_metrics(metrics, mpath)
    hpath.write_text(render_html(_strict(metrics)), encoding="utf-8")
    return mpath, hpath
