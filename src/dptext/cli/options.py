"""Options shared by the commands that read a private corpus and fit DP-KPS.

Each option is an ``Annotated`` alias, so ``keyphrases`` and ``generate`` declare
the same flags with the same help and defaults (those of ``KeyphraseSeeder``).
"""

from __future__ import annotations

import copy
import functools
import inspect
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, get_args

import typer
from rich.markup import escape

from dptext.cli.app import console
from dptext.generators.base import DEFAULT_EPSILON
from dptext.generators.kps.options import PER_STAGE_EPSILONS, with_default_length

#: the help panels, in the order ``generate --help`` shows them (a first run needs the
#: options outside ADVANCED only; the README's commands use no other)
INPUT = "Input"
OUTPUT = "Output"
PRIVACY = "Privacy"
SEEDER = "Keyphrase model (DP-KPS)"
LLM = "LLM"
RUN = "Run"
BUDGET = "Budget across runs"
SCALE = "Scale-out"
ADVANCED = "Advanced"
PANELS = (None, INPUT, OUTPUT, PRIVACY, SEEDER, LLM, RUN, BUDGET, SCALE, ADVANCED)


def _seeder_defaults() -> dict:
    from dataclasses import MISSING, fields

    from dptext.generators.kps import KeyphraseSeeder

    return {f.name: f.default for f in fields(KeyphraseSeeder)
            if f.init and f.default is not MISSING}


#: KeyphraseSeeder's defaults: the one source of the commands' DP-KPS option defaults
D = _seeder_defaults()

InputPath = Annotated[str, typer.Option(
    "--input", "-i", help="Private corpus: .csv, .jsonl, .parquet, a folder of <label>/*.txt, "
    "or a bundled demo such as demo:bbc-news/train.", rich_help_panel=INPUT)]
TextColumn = Annotated[str, typer.Option(help="Column holding the document text.",
                                         rich_help_panel=INPUT)]
LabelColumn = Annotated[str | None, typer.Option(
    help="Column holding the label; omit for an unlabelled corpus.", rich_help_panel=INPUT)]
LabelSep = Annotated[str | None, typer.Option(
    help="Several labels per document: the label column holds them separated by this "
    "character (e.g. '|'; a JSONL or Parquet list works too). A multi-label corpus: DP-KPS "
    "counts a document in each of its labels (at most --max-labels-per-doc) and releases "
    "the label sets with DP; the other methods refuse it. docs/multi-label.md.",
    rich_help_panel=INPUT)]
MaxLabelsPerDoc = Annotated[int, typer.Option(
    min=1, help="With --label-sep: labels a document keeps at most (a random subset, public "
    "randomness); the per-label noise grows as its square root.", rich_help_panel=ADVANCED)]
LabelSetModel = Annotated[str, typer.Option(
    help="With --label-sep: draw synthetic label sets from the released labels and set "
    "sizes (marginal: every frequent label survives) or from the released sets (joint: "
    "keeps which labels go together, loses the rare sets). docs/multi-label.md.",
    rich_help_panel=ADVANCED)]
Format = Annotated[str | None, typer.Option(
    "--format", help="csv, jsonl, parquet or folder (default: from the extension).",
    rich_help_panel=INPUT)]
Encoding = Annotated[str, typer.Option(help="Text encoding of the input.",
                                        rich_help_panel=ADVANCED)]
SkipInvalid = Annotated[bool, typer.Option(
    help="Drop empty documents or rows without a label instead of stopping.",
    rich_help_panel=INPUT)]
Labels = Annotated[str | None, typer.Option(
    help="Comma-separated public label set (free). Without it the label set is released "
    "with DP, inside the run's ε; labels of too few documents are dropped.",
    rich_help_panel=INPUT)]

VOCAB_SPECS = ("english, english:N, glove, glove:N, medical, function-words, quantities "
               "(numbers with units), or a file (one term per line); combine with +, e.g. "
               "english:20000+quantities")
Vocab = Annotated[str, typer.Option(
    help="Public vocabulary: english[:N], glove[:N], medical, function-words, quantities or "
    "a file of terms; combine with +. auto: english:20000+function-words (english:20000 "
    "for --model kde/hybrid, Aug-PE and PATE).", rich_help_panel=SEEDER)]
#: the vocabulary of a method's DP vocabulary release (Aug-PE's and PATE's own commands)
MethodVocab = Annotated[str, typer.Option(
    "--vocab", help=f"Public vocabulary the DP vocabulary is released over: {VOCAB_SPECS}.",
    rich_help_panel=ADVANCED)]
MethodTermsPerDoc = Annotated[int, typer.Option(
    "--terms-per-doc", min=1,
    help="S: distinct vocabulary terms one document may contribute to the DP vocabulary.",
    rich_help_panel=ADVANCED)]
Embedder = Annotated[str, typer.Option(
    help="Embedding model: minilm, mpnet, model2vec, or a sentence-transformers folder.",
    rich_help_panel=SEEDER)]
EpsVocab = Annotated[float | None, typer.Option(
    help="Per-stage budget (the paper's interface, instead of --epsilon): ε of the DP "
    f"vocabulary (default {PER_STAGE_EPSILONS['epsilon_vocab']:g} when only --epsilon-kde "
    "is given).", rich_help_panel=ADVANCED)]
EpsKde = Annotated[float | None, typer.Option(
    help="Per-stage budget: ε of the DP KDE sketches (default "
    f"{PER_STAGE_EPSILONS['epsilon_kde']:g} when only --epsilon-vocab is given).",
    rich_help_panel=ADVANCED)]
Epsilon = Annotated[float | None, typer.Option(
    help=f"Total ε of the run (default {DEFAULT_EPSILON:g}): every release is inside it. "
    "Or per stage: --epsilon-vocab/--epsilon-kde (--help-all).", rich_help_panel=PRIVACY)]


def total_epsilon(releases: str, kind: type = float, more: str = ""):
    """The total ``--epsilon`` of a method's own command (its default ``DEFAULT_EPSILON``,
    as ``generate``'s): ``releases``, what the run spends it on; ``kind`` str where the
    command parses it itself (dpft's 'inf')."""
    return Annotated[kind, typer.Option(
        "--epsilon", help=f"Total ε of the run ({releases}): every release is inside it."
        f"{more}", rich_help_panel=PRIVACY)]


VocabShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent on the vocabulary (of what the label releases "
    "leave; the sketches get the rest).", rich_help_panel=ADVANCED)]
Delta = Annotated[float, typer.Option(
    help="Total δ of the run (used only by Gaussian noise).", rich_help_panel=PRIVACY)]
VocabNoise = Annotated[str, typer.Option(
    help="gaussian ((ε, δ), the benchmarked default) or laplace (pure ε, the paper's).",
    rich_help_panel=ADVANCED)]
VocabNoiseTerms = Annotated[float, typer.Option(
    help="Keep only vocabulary terms above the noisy count this many zero-count terms are "
    "expected to reach (inf: plain top-N, the paper's).", rich_help_panel=ADVANCED)]
KdeNoise = Annotated[str, typer.Option(
    help="gaussian (L2 sensitivity: far less noise, the benchmarked default) or laplace "
    "(pure ε, the paper's).", rich_help_panel=ADVANCED)]


def _terms_per_doc(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise typer.BadParameter(f"S must be a positive integer or 'auto', got {value!r}")
    return n


TermsPerDoc = Annotated[str, typer.Option(
    parser=_terms_per_doc, metavar="S|auto",
    help="S: distinct terms one document may add; auto: chosen privately, for a small "
    "share of ε (Aug-PE and PATE: 80).", rich_help_panel=SEEDER)]
VocabSize = Annotated[int, typer.Option(help="N: size of the DP vocabulary.",
                                        rich_help_panel=ADVANCED)]
SequenceMethod = Annotated[str, typer.Option(
    "--sequence-method", help="iterative or independent keyphrase sequences.",
    rich_help_panel=ADVANCED)]
Ensemble = Annotated[str, typer.Option(help="KDE ensemble for iterative: log or linear.",
                                       rich_help_panel=ADVANCED)]
Length = Annotated[int | None, typer.Option(
    help="L: keyphrases per sequence (default: 10; 30 with --label-sep).",
    rich_help_panel=SEEDER, show_default=False)]
Features = Annotated[int, typer.Option(help="Random Fourier features per sketch.",
                                       rich_help_panel=ADVANCED)]
Bandwidth = Annotated[float, typer.Option(help="Kernel bandwidth for unit-norm embeddings.",
                                          rich_help_panel=ADVANCED)]
Sampling = Annotated[str, typer.Option(
    help="contrastive (class-specific terms first) or proportional (the paper's).",
    rich_help_panel=ADVANCED)]
Model = Annotated[str, typer.Option(
    help="auto (the per-class DP term histogram, tuned by --select), histogram, smoothed, "
    "kde (the paper's RFF KDE) or hybrid (docs/method.md).", rich_help_panel=SEEDER)]
Select = Annotated[str, typer.Option(
    help="auto: choose the model's parameters privately (inside --epsilon); none: --model "
    "as given.", rich_help_panel=SEEDER)]
Mixture = Annotated[float, typer.Option(
    help="The hybrid's histogram weight λ in [0, 1] (with --select none).",
    rich_help_panel=ADVANCED)]
EpsLabels = Annotated[float, typer.Option(
    help="ε for a DP label histogram that sizes classes in proportion (0: equal sizes); "
    "part of a total --epsilon. Without --labels the label set's noisy counts are used "
    "instead, at no further cost.", rich_help_panel=ADVANCED)]
LabelSetShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent on the DP label set when --labels is not given.",
    rich_help_panel=ADVANCED)]
TermsShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent choosing S when --terms-per-doc is auto.",
    rich_help_panel=ADVANCED)]
EpsLabelSet = Annotated[float, typer.Option(
    help="ε of the DP label set when --labels is not given, with --epsilon-vocab/"
    "--epsilon-kde (on top of them).", rich_help_panel=ADVANCED)]
Form = Annotated[str, typer.Option(
    help="The DP form profile per class (length, shape, links, hashtags, tone: public "
    "features, one Gaussian release charged to the run's ε), a form drawn from it stated "
    "in each prompt. auto: released when the private selection runs (--select auto), which "
    "also chooses whether the prompts state a form; on: always; off: never.",
    rich_help_panel=SEEDER)]
#: --form's values and the seeder's ``form`` they stand for
FORM_VALUES = {"auto": "auto", "on": True, "off": False}
FormShare = Annotated[float, typer.Option(
    help="Share of a total --epsilon spent on the form profile (--form).",
    rich_help_panel=ADVANCED)]
EpsForm = Annotated[float, typer.Option(
    help="ε of the form profile (--form) with --epsilon-vocab/--epsilon-kde (on top of "
    "them).", rich_help_panel=ADVANCED)]
Seed = Annotated[int | None, typer.Option(help="Seed for the non-private randomness.",
                                          rich_help_panel=RUN)]

Llm = Annotated[str, typer.Option(
    help="local:qwen2.5-1.5b, local:qwen2.5-0.5b, local:smollm2-135m, local:FILE.gguf, "
    "openai:MODEL@URL, anthropic:MODEL, bedrock:MODEL_ID, pool:... (docs/llm.md).",
    rich_help_panel=LLM)]
DocumentType = Annotated[str, typer.Option(
    help="What to write, e.g. 'medical record' (the only context the LLM gets besides what "
    "the method released).", rich_help_panel=LLM)]
MaxTokens = Annotated[int, typer.Option(help="Token limit per document.", rich_help_panel=LLM)]
Temperature = Annotated[float, typer.Option(rich_help_panel=ADVANCED)]
TopP = Annotated[float, typer.Option(rich_help_panel=ADVANCED)]

Out = Annotated[Path, typer.Option(
    "--out", "-o", help="Output JSONL, one synthetic document per line; beside it the "
    "privacy report (.privacy.json), the release folder (.release/) and the run folder "
    "(.run/, for --resume).", rich_help_panel=OUTPUT)]
Resume = Annotated[bool, typer.Option(
    help="Continue an interrupted run from <out>.run/ without new DP noise or repeated "
    "prompts.", rich_help_panel=RUN)]
Cache = Annotated[bool, typer.Option(
    help="Reuse completions of identical prompts across runs ($DPTEXT_CACHE).",
    rich_help_panel=RUN)]
Progress = Annotated[bool, typer.Option(help="Show progress bars.",
                                         rich_help_panel=ADVANCED)]
Concurrency = Annotated[int, typer.Option(
    help="Prompts in flight at once (at most the local model's slots: $DPTEXT_LLM_PARALLEL, "
    "default 4 with 2+ threads, 1 with one).", rich_help_panel=RUN)]
Engine = Annotated[str, typer.Option(
    help="Where the corpus-wide counts run: local (this process) or ray (a Ray cluster's "
    "workers, which then see the private documents; docs/scale-out.md). Same releases, "
    "noise added once on this machine.", rich_help_panel=SCALE)]
RayAddress = Annotated[str | None, typer.Option(
    help="With --engine ray: auto (a running cluster, the default), local (start one in "
    "this process) or the cluster's address.", rich_help_panel=SCALE)]

BudgetTotal = Annotated[float | None, typer.Option(
    help="Total ε allowed on this corpus over all runs (default: the recorded total, or "
    "budget_total in config.toml).", rich_help_panel=BUDGET)]
AllowOverrun = Annotated[bool, typer.Option(
    help="Run even if it takes the corpus past its total budget (recorded as an overrun).",
    rich_help_panel=ADVANCED)]
DatasetId = Annotated[str | None, typer.Option(
    help="The dataset whose budget this run spends: one ledger for every version of the "
    "corpus (default: config.toml's, else a ledger per exact content).",
    rich_help_panel=BUDGET)]


#: the DP-KPS options of ``keyphrases`` and ``generate``, declared once (``seeder_options``);
#: defaults KeyphraseSeeder's (``--sequence-method`` is its ``method``; the three ε None:
#: which of them is given decides the budget's form, ``kps.options.budget_form``)
SEEDER_OPTIONS = {
    "epsilon": Epsilon, "delta": Delta, "epsilon_vocab": EpsVocab, "epsilon_kde": EpsKde,
    "epsilon_labels": EpsLabels, "model": Model, "select": Select, "vocab": Vocab,
    "terms_per_doc": TermsPerDoc, "vocab_size": VocabSize, "sequence_method": SequenceMethod,
    "length": Length, "embedder": Embedder, "vocab_share": VocabShare,
    "label_set_share": LabelSetShare, "epsilon_label_set": EpsLabelSet,
    "terms_share": TermsShare, "vocab_noise": VocabNoise, "kde_noise": KdeNoise,
    "vocab_noise_terms": VocabNoiseTerms, "ensemble": Ensemble, "features": Features,
    "bandwidth": Bandwidth, "sampling": Sampling, "mixture": Mixture, "form": Form,
    "form_share": FormShare, "epsilon_form": EpsForm, "max_labels_per_doc": MaxLabelsPerDoc,
    "label_set_model": LabelSetModel}
_FORM = ("form", "form_share", "epsilon_form")  # the last two: not with --form off
_MULTILABEL = ("max_labels_per_doc", "label_set_model")  # passed on only with --label-sep
_FIELD = {"sequence_method": "method"}  # a CLI option's KeyphraseSeeder field
_CLI_DEFAULTS = {"length": None}  # resolved with the corpus: with_default_length


def seeder_options(command):
    """Declare ``SEEDER_OPTIONS`` on ``command``, which receives their values as one dict,
    ``kps`` (``seeder_kwargs`` makes KeyphraseSeeder's arguments of it)."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    own = inspect.signature(command, eval_str=True)
    added = [inspect.Parameter(name, keyword, annotation=alias,
                               default=_CLI_DEFAULTS.get(name, D[_FIELD.get(name, name)]))
             for name, alias in SEEDER_OPTIONS.items()]

    @functools.wraps(command)
    def with_seeder_options(**values):
        kps = {k: values.pop(k) for k in SEEDER_OPTIONS}
        return command(**values, kps=kps)

    with_seeder_options.__signature__ = own.replace(parameters=[
        *(p.replace(kind=keyword) for p in own.parameters.values() if p.name != "kps"),
        *added])
    return with_seeder_options



def form_option(value) -> bool | str:
    """The seeder's ``form`` of a --form value (auto, on, off)."""
    if value not in FORM_VALUES:
        raise typer.BadParameter(f"--form must be one of {', '.join(FORM_VALUES)}; got "
                                 f"{value!r}")
    return FORM_VALUES[value]


def seeder_kwargs(kps: dict, multilabel: bool = False) -> dict:
    """KeyphraseSeeder's keyword arguments from the DP-KPS options' values ``kps``, by
    field name (the three ε as given: the seeder resolves the budget's form; --form as
    ``form_option`` reads it; ``_MULTILABEL`` only for a multi-label corpus: the options
    as before them; L, when not given, by ``with_default_length``)."""
    form = form_option(kps["form"])
    rest = {_FIELD.get(k, k): v for k, v in kps.items()
            if (form is not False or k not in _FORM[1:])  # --form off: no form options
            and (multilabel or k not in _MULTILABEL)}
    return with_default_length({**rest, "form": form}, multilabel)


def in_panel(alias, panel: str):
    """The shared option ``alias`` shown in help panel ``panel`` (a method's own)."""
    base, info = get_args(alias)[:2]
    info = copy.copy(info)
    info.rich_help_panel = panel
    return Annotated[base, info]


def parse_labels(labels: str | None) -> tuple[str, ...] | None:
    if labels is None:
        return None
    out = tuple(s.strip() for s in labels.split(",") if s.strip())
    if not out:
        raise typer.BadParameter("--labels is empty")
    return out


@contextmanager
def user_errors():
    """Turn bad input into a one-line message and exit code 2, and show warnings."""
    from dptext.corpus import InputError
    from dptext.privacy import BudgetExceededError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except (InputError, ValueError, BudgetExceededError) as e:
            # str(e) only: a PrivateValuesError's detail (private values) is never printed
            # by a run, terminal or not (a terminal may be logged); `dptext inspect` shows it
            console.print(f"[bold red]error:[/bold red] {escape(str(e))}", soft_wrap=True)
            raise typer.Exit(2) from None
        finally:
            for w in caught:
                if issubclass(w.category, UserWarning):
                    console.print(f"[yellow]warning:[/yellow] {escape(str(w.message))}",
                                  soft_wrap=True)


def announce_corpus(corpus) -> None:
    """Say which corpus was read, not its size: that is a private statistic, and a
    terminal may be logged (``dptext inspect`` shows it to the curator who asks)."""
    console.print(f"read {corpus.source}")


def ensure_parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def source(input: str, text_column: str, label_column: str | None, format: str | None,
           encoding: str, skip_invalid: bool, label_sep: str | None = None):
    """The input options as the run lifecycle's ``CorpusSource``."""
    from dptext.run import CorpusSource

    return CorpusSource(input, text_column=text_column, label_column=label_column,
                        format=format, encoding=encoding, skip_invalid=skip_invalid,
                        label_sep=label_sep)


def run_generator(method: str, options: dict, source, out: Path, *, llm: str | None = None,
                  llm_options: dict | None = None, resume: bool = False,
                  budget_total: float | None = None, allow_budget_overrun: bool = False,
                  dataset_id: str | None = None, concurrency: int = 4, cache: bool = True,
                  progress: bool = True, seed: int | None = None, engine: str = "local",
                  ray_address: str | None = None) -> None:
    """Every command that writes documents: the generator ``method`` with ``options``
    through the run lifecycle; then the summary, the privacy report and where things are."""
    from dptext.generators.registry import make_generator
    from dptext.llm import LLMError
    from dptext.privacy_report import print_report
    from dptext.run import DEFAULT_LLM, BudgetOptions, run, run_dir_for

    with user_errors():
        try:
            generator = make_generator(method, **options)
        except TypeError as e:
            raise ValueError(str(e)) from None
        try:
            result = run(generator, source, out, llm=llm or DEFAULT_LLM,
                         llm_options=llm_options, resume=resume,
                         budget=BudgetOptions(budget_total, allow_budget_overrun, dataset_id),
                         concurrency=concurrency, cache=cache, progress=progress, seed=seed,
                         say=lambda msg: console.print(escape(msg), soft_wrap=True),
                         announce=announce_corpus, engine=engine, ray_address=ray_address)
        except LLMError as e:
            raise ValueError(f"{e}\n(finished work is kept in {run_dir_for(out)}; re-run the "
                             "same command with --resume)") from None
    for line in result.summary:
        console.print(escape(line), soft_wrap=True)
    print_report(result.report, console)
    console.print(f"privacy report: {result.report_path}")
    console.print(f"release folder: {result.release_dir} (Parquet, JSONL, dataset card)")
