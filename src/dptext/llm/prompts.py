"""Prompts built from released objects only: the document type, a DP keyphrase sequence and
client-supplied public example documents (few-shot, paper C.2.5). No class information.

Also: validation of user templates before any call, clean-up of completions (preambles,
post-ambles, truncated endings) and a keyphrase coverage check.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from dptext.llm.errors import TemplateError
from dptext.llm.types import Message, Prompt, SamplingParams

#: The paper's generic prompt: "write a <document type> that contains the following terms".
DEFAULT_USER_TEMPLATE = (
    "Write a {document_type} that contains the following terms:\n{keyphrases}\n\n"
    "Write only the {document_type} itself, with no title, introduction or comments."
)
DEFAULT_SYSTEM = "You write realistic, self-contained documents."

FIELDS = {
    "document_type": "the document type, e.g. 'medical record'",
    "keyphrases": "the keyphrases, one per line as '- term'",
    "keyphrase_list": "the keyphrases, comma-separated",
    "n_keyphrases": "how many keyphrases there are",
    "form": "the form drawn with the sequence, in plain words (DP-KPS's --form; empty "
            "without it, and appended to the user message when a template omits it)",
}
_REQUIRED = ("keyphrases", "keyphrase_list")
_FORBIDDEN = {"label": "class information is never put in prompts (DP-KPS prompts name only "
                       "the document type; the label is attached to the output afterwards)"}


@dataclass(frozen=True)
class PromptTemplate:
    user: str = DEFAULT_USER_TEMPLATE
    system: str | None = DEFAULT_SYSTEM
    source: str = "built-in template"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``TemplateError`` for unknown or malformed placeholders."""
        seen: set[str] = set()
        for part_name, text in (("user", self.user), ("system", self.system or "")):
            try:
                parsed = list(string.Formatter().parse(text))
            except ValueError as e:
                raise TemplateError(f"{self.source}: {part_name} template is malformed ({e}); "
                                    "write literal braces as {{ and }}") from None
            for _, name, spec, conv in parsed:
                if name is None:
                    continue
                if name in _FORBIDDEN:
                    raise TemplateError(f"{self.source}: placeholder {{{name}}} is not allowed: "
                                        f"{_FORBIDDEN[name]}")
                if name not in FIELDS:
                    raise TemplateError(
                        f"{self.source}: unknown placeholder {{{name}}} in the {part_name} "
                        "template; available: " + ", ".join(f"{{{k}}}" for k in FIELDS))
                if spec or conv:
                    raise TemplateError(f"{self.source}: placeholder {{{name}}} must not have a "
                                        "format spec or conversion")
                seen.add(name)
        if not seen.intersection(_REQUIRED):
            raise TemplateError(f"{self.source}: the user template must contain {{keyphrases}} "
                                "or {keyphrase_list}, or the seed keyphrases never reach the LLM")

    def render(self, document_type: str, keyphrases: Sequence[str],
               form: str | None = None) -> tuple[str | None, str]:
        """(system, user) messages; ``form`` (a released form in plain words) fills
        ``{form}``, or is appended to the user message when the template has no ``{form}``."""
        values = {
            "document_type": document_type,
            "keyphrases": "\n".join(f"- {k}" for k in keyphrases),
            "keyphrase_list": ", ".join(keyphrases),
            "n_keyphrases": str(len(keyphrases)),
            "form": form or "",
        }
        system = self.system.format(**values) if self.system else None
        user = self.user.format(**values)
        if form and "{form}" not in self.user + (self.system or ""):
            user = f"{user}\n\n{form}"
        return system, user

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTemplate:
        """A text file holding the user template; or JSON ``{"user": ..., "system": ...}``."""
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as e:
            raise TemplateError(f"cannot read the prompt template {path}: {e.strerror}") from None
        if path.suffix == ".json":
            try:
                d = json.loads(raw)
                return cls(d["user"], d.get("system"), source=str(path))
            except (ValueError, KeyError, TypeError):
                raise TemplateError(f"{path}: expected a JSON object with a 'user' template "
                                    "(and optionally 'system')") from None
        return cls(raw.strip(), DEFAULT_SYSTEM, source=str(path))


@dataclass(frozen=True)
class FewShotExample:
    """A PUBLIC example document supplied by the client (never a private record), with
    optionally the keyphrases it is shown as an answer to."""

    text: str
    keyphrases: tuple[str, ...] = ()


def load_few_shot(path: str | Path) -> list[FewShotExample]:
    """JSONL with ``{"text": ..., "keyphrases": [...]}`` per line, or a text file whose
    examples are separated by lines holding only ``---``."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TemplateError(f"cannot read few-shot examples {path}: {e.strerror}") from None
    out: list[FewShotExample] = []
    if path.suffix == ".jsonl":
        for i, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                out.append(FewShotExample(str(d["text"]), tuple(d.get("keyphrases") or ())))
            except (ValueError, KeyError, TypeError):
                raise TemplateError(f"{path}, line {i}: expected {{\"text\": ..., "
                                    "\"keyphrases\": [...]}") from None
    else:
        out = [FewShotExample(b.strip()) for b in re.split(r"(?m)^---\s*$", raw) if b.strip()]
    if not out:
        raise TemplateError(f"{path}: no few-shot examples found")
    return out


@dataclass(frozen=True)
class PromptBuilder:
    document_type: str
    template: PromptTemplate = field(default_factory=PromptTemplate)
    few_shot: tuple[FewShotExample, ...] = ()
    params: SamplingParams = field(default_factory=SamplingParams)

    def build(self, keyphrases: Sequence[str], seed: int | None = None,
              form: str | None = None) -> Prompt:
        """The prompt of one sequence; ``form``: the form drawn with it (released)."""
        system, user = self.template.render(self.document_type, keyphrases, form)
        msgs: list[Message] = []
        shots_without_terms = [ex for ex in self.few_shot if not ex.keyphrases]
        if shots_without_terms:
            examples = "\n\n".join(f"Example {i}:\n{ex.text}"
                                   for i, ex in enumerate(shots_without_terms, 1))
            system = ((system + "\n\n") if system else "") + (
                f"Match the format and style of these example {self.document_type}s:\n\n"
                + examples)
        if system:
            msgs.append(Message("system", system))
        for ex in self.few_shot:
            if ex.keyphrases:  # a worked example: the prompt for its terms, then the document
                msgs.append(Message("user", self.template.render(self.document_type,
                                                                 ex.keyphrases)[1]))
                msgs.append(Message("assistant", ex.text))
        msgs.append(Message("user", user))
        params = self.params if seed is None else _with_seed(self.params, seed)
        return Prompt(tuple(msgs), params)


def _with_seed(p: SamplingParams, seed: int) -> SamplingParams:
    return replace(p, seed=seed)


# ------------------------------------------------------------------ clean-up

_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|certainly|of course|absolutely|okay|ok|great)[!,.]?\s*)?"
    r"(?:(?:here\s+(?:is|are|'s)|below\s+is|this\s+is|i\s+have\s+written|i've\s+written)"
    r"\b[^\n]{0,160}?(?::|\.)\s*\n|(?:sure|certainly|of course|absolutely)[!,.][^\n]{0,120}\n)",
    re.IGNORECASE)
_POSTAMBLE = re.compile(
    r"\n\s*(?:i hope this|let me know|feel free|please note that this|note: this is a "
    r"fictional|this (?:document|record|note) (?:is|was) (?:fictional|generated)|"
    r"(?:is there )?anything else)[^\n]*$",
    re.IGNORECASE)
_PLACEHOLDER_LINE = re.compile(r"(?m)^\s*\[[^\]\n]{1,60}\]\s*$\n?")
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
# Markdown title markup: a heading line ("# Company Faces Losses") or a line in bold alone
# ("**Flu Cases Climb**"), not a bold label ("**Date:**", left for the scaffolding check);
# no line of the five demo corpora is a heading of a capitalised title or a bold line
_MD_HEADING = re.compile(r"(?m)^[ \t]*#{1,6}[ \t]+(?=[A-Z])([^\n]*)$")
_MD_BOLD_LINE = re.compile(r"(?m)^[ \t]*\*\*([^*\n]*[^*:\s])\*\*[ \t]*$")
_SENTENCE_END = re.compile(r"[.!?…)\]\"'”’]\s")


# a label at the head of the answer: up to four words, then a colon ("Consumer complaint:",
# "**News Article:**", "Health News:") or the end of the line (a title "News Article")
_HEAD_LABEL = re.compile(r"^[\s*#>]*((?:[A-Za-z][\w'’-]*[ \t]+){0,3}[A-Za-z][\w'’-]*)[ \t]*"
                         r"(?:(?:\*\*)?:(?:\*\*)?\s+|\*{0,2}[ \t]*\n\s*)(?=\S)")


def _type_words(text: str) -> list[str]:
    """Lower-case words, a plural "s" dropped ("Reviews" → "review")."""
    words = re.findall(r"[a-z]+", text.lower())
    return [w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words]


def strip_type_label(text: str, document_type: str) -> str:
    """``text`` without a head label that restates the document type: two or more of its
    words ("Consumer complaint:" for "consumer complaint about a financial product",
    "News Article:" or a first line "News Article" for "news article"), or all of a
    one-word type. The 0.5B model opened 24 % of its complaints and 4 % of its news
    articles so (the committed form-and-style cells); no real document of the five demo
    corpora opens with such a label of its corpus's document type (train and test
    splits)."""
    m = _HEAD_LABEL.match(text)
    if not m:
        return text
    label, kind = _type_words(m.group(1)), _type_words(document_type)
    if label and set(label) <= set(kind) and (len(label) >= 2 or label == kind):
        return text[m.end():]
    return text


def _unquote(t: str) -> tuple[str, bool]:
    """``t`` without an unmatched opening quote, or without the pair of quotes that wraps
    all of it and is its only one (the model quoting its document: 12–15 % of the
    synthetic health tweets, Banking77 queries and complaints in the committed
    form-and-style cells, no real document of the five demo corpora); True when such a
    pair was removed. A text with quotes inside is kept as it is (``"Well," he said.
    "Go."``)."""
    quotes = t.count('"') + t.count("“") + t.count("”")
    if t[:1] not in "\"“":
        return t, False
    if quotes == 1:
        return t[1:].lstrip(), False
    if quotes == 2 and len(t) > 2 and t[-1] in "\"”":
        return t[1:-1].strip(), True
    return t, False


def clean_completion(text: str, truncated: bool | None = None,
                     document_type: str | None = None) -> str:
    """Remove chatty preambles ("Sure, here is…:"), sign-offs ("I hope this helps"),
    a wrapping code fence, Markdown title markup ("# Title", "**Title**" on its line),
    a head label restating ``document_type`` (``strip_type_label``), quotes around the
    whole answer (``_unquote``), and cut a truncated last sentence back to the last full
    stop. ``truncated``: the backend said it stopped at the token limit; ``None`` = guess
    from the missing final punctuation."""
    t = text.strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1).strip()
    for _ in range(2):
        new = _PREAMBLE.sub("", t, count=1).strip()
        if new == t:
            break
        t = new
    while True:
        new = _POSTAMBLE.sub("", t).strip()
        if new == t:
            break
        t = new
    t = _PLACEHOLDER_LINE.sub("", t).strip()  # template placeholders: "[News Article Title]"
    t = _MD_BOLD_LINE.sub(r"\1", _MD_HEADING.sub(r"\1", t))
    if document_type:
        t = strip_type_label(t, document_type)
    t, wrapped = _unquote(t)
    guessed = truncated is None
    if guessed:  # a closing quote said the answer was whole
        truncated = (not wrapped and bool(t) and t[-1] not in ".!?…)]\"'”’*"
                     and t[-1] not in "0123456789")
    if truncated and t:
        ends = [m.end() for m in _SENTENCE_END.finditer(t + " ")]
        last = max((e for e in ends if e <= len(t) + 1), default=0)
        # when only guessing, cut only if it keeps most of the document
        if last and (not guessed or last >= len(t) // 3):
            t = t[:last].rstrip()
    return t


# ------------------------------------------------------------------ coverage

def _term_pattern(term: str) -> re.Pattern:
    words = [re.escape(w) for w in term.lower().split()]
    return re.compile(r"(?<!\w)" + r"[\s\-]+".join(words) + r"(?:s|es|'s)?(?!\w)")


def keyphrase_coverage(text: str, keyphrases: Sequence[str]) -> tuple[int, int]:
    """(how many distinct seed keyphrases the text contains, how many there are);
    case-insensitive, whole words, simple plurals accepted."""
    low = text.lower()
    terms = list(dict.fromkeys(k for k in keyphrases if k.strip()))
    found = sum(1 for k in terms if _term_pattern(k).search(low))
    return found, len(terms)
