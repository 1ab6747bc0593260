"""``dptext dpft`` (= ``dptext generate --method dpft``): synthetic documents from a local
LM fine-tuned with DP-SGD, through the run lifecycle (``dptext.generators.dpft.generator``)."""

from __future__ import annotations

from typing import Annotated

import typer

from dptext.cli import options as o
from dptext.cli.app import app
from dptext.generators.base import DEFAULT_EPSILON

DPFT = "DP fine-tuning"
Epsilon = o.total_epsilon("control-code histogram + DP-SGD", str,
                          " 'inf' trains without DP and labels the output NOT PRIVATE.")


def _epsilon(value: str) -> float:
    v = float(value)
    if not (v > 0):
        raise typer.BadParameter("ε must be positive, or 'inf' for a NOT PRIVATE run")
    return v


def _code_values(specs: list[str] | None, fields: list[str]) -> dict[str, tuple[str, ...]]:
    """``FIELD=V1,V2`` options as {field: values}, for fields named by --metadata."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs or ():
        field, sep, values = spec.partition("=")
        field = field.strip()
        vals = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not field or not vals:
            raise typer.BadParameter(f"--code-values {spec!r}: expected FIELD=V1,V2,...")
        if field not in fields:
            raise typer.BadParameter(f"--code-values {field!r}: not a --metadata field")
        out[field] = vals
    return out


@app.command("dpft")
def dpft(
    input: o.InputPath,
    out: o.Out,
    epsilon: Epsilon = f"{DEFAULT_EPSILON:g}",
    delta: o.Delta = 1e-5,
    model: Annotated[str | None, typer.Option(
        help="Local Hugging Face causal-LM folder; default SmolLM2-135M (from its GGUF).",
        rich_help_panel=DPFT)] = None,
    documents: Annotated[int | None, typer.Option(
        help="Documents to generate (default: the DP estimate of the corpus size).",
        rich_help_panel=DPFT)] = None,
    epochs: Annotated[float, typer.Option(rich_help_panel=o.ADVANCED)] = 2.0,
    batch_size: Annotated[int, typer.Option(help="Expected Poisson batch size.",
                                            rich_help_panel=o.ADVANCED)] = 16,
    learning_rate: Annotated[float, typer.Option(rich_help_panel=o.ADVANCED)] = 1e-3,
    max_length: Annotated[int, typer.Option(
        help="Tokens per document (codes included); longer documents are truncated, each "
        "document stays one DP-SGD sample.", rich_help_panel=o.ADVANCED)] = 128,
    max_grad_norm: Annotated[float, typer.Option(rich_help_panel=o.ADVANCED)] = 1.0,
    dtype: Annotated[str, typer.Option(
        help="dtype of the frozen base weights: auto (bfloat16 on a CPU with AVX512-BF16 "
        "or AMX, where it is faster; float32 elsewhere, where bf16 is emulated and a "
        "step ~27x slower), bfloat16 or float32. LoRA and the head train in float32 either way.",
        rich_help_panel=o.ADVANCED)] = "auto",
    metadata: Annotated[str | None, typer.Option(
        help="Comma-separated extra columns used as control codes (e.g. sex,ethnicity).",
        rich_help_panel=DPFT)] = None,
    code_values: Annotated[list[str] | None, typer.Option(
        "--code-values", help="Public values of a --metadata field, FIELD=V1,V2,... "
        "(repeatable). Fields (and the label) not declared are released with DP partition "
        "selection, charged to ε.", rich_help_panel=DPFT)] = None,
    multitask: Annotated[bool, typer.Option(
        help="Train a classifier head jointly (the multi-task blog).", rich_help_panel=DPFT)
    ] = False,
    pplm: Annotated[bool, typer.Option(help="Steer decoding with the head (needs --multitask).",
                                       rich_help_panel=o.ADVANCED)] = False,
    max_new_tokens: Annotated[int, typer.Option(rich_help_panel=o.ADVANCED)] = 96,
    top_k: Annotated[int, typer.Option(rich_help_panel=o.ADVANCED)] = 50,
    top_p: Annotated[float, typer.Option(rich_help_panel=o.ADVANCED)] = 0.95,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    label_sep: o.LabelSep = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    labels: o.Labels = None,
    seed: o.Seed = None,
    progress: o.Progress = True,
    resume: o.Resume = False,
    budget_total: o.BudgetTotal = None,
    allow_budget_overrun: o.AllowOverrun = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Fine-tune a local LM with DP-SGD and sample documents.

    DP-SGD + LoRA on control codes, optionally a classifier head and PPLM steering.
    """
    from dptext.generators.dpft.sample import SamplingConfig

    with o.user_errors():
        fields = tuple(f.strip() for f in metadata.split(",")) if metadata else ()
        options = dict(
            epsilon=_epsilon(epsilon), delta=delta, labels=o.parse_labels(labels),
            documents=documents, model=model, metadata=fields,
            code_values=_code_values(code_values, list(fields)), epochs=epochs,
            batch_size=batch_size, learning_rate=learning_rate, max_length=max_length,
            max_grad_norm=max_grad_norm, dtype=dtype, multitask=multitask or pplm,
            sampling=SamplingConfig(max_new_tokens=max_new_tokens, top_k=top_k, top_p=top_p),
            pplm=pplm)
    o.run_generator("dpft", options,
                    o.source(input, text_column, label_column, format, encoding,
                             skip_invalid, label_sep), out, resume=resume,
                    budget_total=budget_total,
                    allow_budget_overrun=allow_budget_overrun, dataset_id=dataset_id,
                    progress=progress, seed=seed)
