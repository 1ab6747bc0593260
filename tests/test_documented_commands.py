"""Every ``dptext`` command line in the README and ``docs/`` runs, as printed, with its
defaults: a page's commands in order in one folder (a later one may read what an earlier
one wrote), and a command that errors fails the page.

What differs from a user's run, and only that:

- the corpus: ``notes.csv`` and the other input names the pages use are a small public
  corpus written here, and the bundled demo corpora stand for it (``demo:bbc-news/train``
  is ``notes.csv``, ``demo:bbc-news/test`` is ``test.csv``);
- the LLM of ``generate``, ``augpe`` and ``pate``: the recording backend (their subject
  here is the command, not the text); the vocabularies and the embedder are the real ones;
- dpft's default base model is a tiny randomly initialised model of the same architecture
  (``$DPTEXT_CACHE`` points at a folder holding it), so DP-SGD runs for real in seconds;
- ``dptext audit``: two of its rows (``--only``), which run in seconds;
- a command that needs a service the test cannot have (an LLM server, a Ray cluster) is
  parsed by the command line, not run: its options must exist and take their values.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from dptext.cli import app

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NOT_SHELL = {"python", "text", "json", "toml", "yaml", "jsonl", "csv"}
DEMO = {"demo:bbc-news/train": "notes.csv", "demo:bbc-news/test": "test.csv"}
WRITES_WITH_LLM = {"generate", "augpe", "pate"}
REMOTE_LLM = ("openai:", "pool:", "anthropic:", "bedrock:", "ray:")
AUDIT_ROWS = "laplace,label-set"


def documented_commands(page: Path) -> list[tuple[int, list[str]]]:
    """(line, argv without the program) of every dptext command in the page's shell
    blocks; a command continued with backslashes is one line, comments are dropped."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        if m.group(1).lower() in NOT_SHELL:
            continue
        first = text[:m.start(2)].count("\n") + 1
        lines = m.group(2).split("\n")
        i = 0
        while i < len(lines):
            line, start = lines[i], i
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i]
            words = shlex.split(line, comments=True)
            if words and words[0] in ("dptext", ".venv/bin/dptext"):
                out.append((first + start, words[1:]))
            i += 1
    return out


def test_every_page_is_read_and_has_its_commands_found():
    """The extraction itself: the README's main command is found, whole."""
    found = dict(documented_commands(ROOT / "README.md"))
    assert any(argv[:1] == ["generate"] and "--out" in argv for argv in found.values())
    assert all("..." not in argv and not any(a.startswith("[") for a in argv)
               for page in PAGES for _, argv in documented_commands(page)), \
        "a documented command is a fragment; write it whole, as a user would type it"


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def needs_service(argv: list[str]) -> bool:
    llm = _option(argv, "--llm") or ""
    return llm.startswith(REMOTE_LLM) or _option(argv, "--engine") == "ray"


def as_tested(argv: list[str]) -> list[str]:
    argv = [DEMO.get(a, a) for a in argv]
    if argv[0] in WRITES_WITH_LLM:
        if "--llm" in argv:
            argv[argv.index("--llm") + 1] = "recording:"
        else:
            argv += ["--llm", "recording:"]
    if argv[0] == "audit":
        argv += ["--only", AUDIT_ROWS]
    return argv


TOPICS = {
    "cardiology": ["chest pain radiating to the left arm", "atrial fibrillation with a fast "
                   "rate", "blood pressure controlled on lisinopril", "echocardiogram shows "
                   "reduced ejection fraction"],
    "oncology": ["biopsy confirmed carcinoma of the breast", "second cycle of chemotherapy "
                 "tolerated well", "tumour markers fell after radiotherapy", "staging scan "
                 "shows no new metastases"],
    "neurology": ["migraine with visual aura twice a week", "seizure while asleep, started "
                  "levetiracetam", "numbness in both feet suggests neuropathy", "tremor of "
                  "the right hand at rest"],
}


def write_corpus(folder: Path) -> None:
    """Made-up notes (public text) in the files the pages name."""
    rows = [{"text": f"Patient {i}: {phrase}; follow up in {2 + i % 5} weeks.",
             "label": label, "sex": "fm"[i % 2], "ethnicity": "abc"[i % 3],
             "codes": f"{label}|{'urgent' if i % 2 else 'routine'}"}  # multi-label.md
            for label, phrases in TOPICS.items() for i in range(40)
            for phrase in phrases[i % 4:i % 4 + 1]]
    frame = pd.DataFrame(rows)
    for name in ("notes.csv", "train.csv"):
        frame.to_csv(folder / name, index=False)
    frame.iloc[::4].to_csv(folder / "test.csv", index=False)
    frame.iloc[1::4][["text"]].to_csv(folder / "client.csv", index=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch, tiny):
    from dptext.generators.dpft.model import CONVERTED

    lm, tok = tiny()  # its tokenizer is the real default's (loaded before the switch below)
    cache = tmp_path / "cache"
    lm.save_pretrained(cache / "models" / CONVERTED)
    tok.save_pretrained(cache / "models" / CONVERTED)
    monkeypatch.setenv("DPTEXT_CACHE", str(cache))
    work = tmp_path / "work"
    work.mkdir()
    write_corpus(work)
    monkeypatch.chdir(work)
    return work


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if documented_commands(p)],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_documented_commands_run(page, workdir):
    group = get_command(app)
    for line, argv in documented_commands(page):
        where = f"{page.relative_to(ROOT)}:{line}: dptext {shlex.join(argv)}"
        if needs_service(argv):  # parsed only: every option exists and takes its value
            command = group.commands[argv[0]]
            command.make_context(argv[0], list(argv[1:]))
            continue
        res = CliRunner().invoke(app, as_tested(argv))
        assert res.exit_code == 0, f"{where}\n{res.output}"
