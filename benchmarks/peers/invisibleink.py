"""InvisibleInk as an outside peer for dptext's benchmarks, run in its own virtual environment.

InvisibleInk (Vinod et al., NeurIPS 2025; PyPI ``invink``) writes DP synthetic text with a
Hugging Face causal LM: at every decoding step it runs the model on B−1 prompts that each
hold one private reference document plus one public prompt (the dataset description
only), clips each private logit vector to within ±C of the public one ("difference
clipping"), averages them and samples the next token with the exponential mechanism,
restricted to an expanded top-k set of the public logits.

Licence: ``invink`` is GPL-3. It is never a dependency or an import of dptext: it lives in
its own venv (``ensure_venv``), and dptext talks to it only through files and a subprocess
running ``invisibleink_runner.py`` (the only file that imports it).

Privacy accounting differs from dptext's ledger. InvisibleInk accounts per *output
document*: one document is a zCDP composition over its tokens, computed from the number of
tokens actually written (so ``epsilon_spent`` is data-dependent and at most the target ε).
Each private document is a reference for exactly one output document (disjoint batches of
B−1 within a class; classes are disjoint too), so the whole release is (ε, δ)-DP by
parallel composition — and a class with n documents yields at most n // (B−1) outputs.

Cost: B forward passes (B−1 private + 1 public, KV-cached) per generated token, i.e. about
B times plain decoding, on CPU in float32 here.

    from harness.provenance import bench_dir    # with benchmarks/ on sys.path
    from peers import invisibleink
    pairs = invisibleink.generate(texts, labels, per_class=10, epsilon=6,
                                  description="BBC news article", model_alias="qwen2.5-0.5b",
                                  root=bench_dir(), work_dir=work)
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

INVINK = "invink==0.1.0"
TORCH = "torch==2.13.0"  # a CPU build here; a bare "torch" would pull GBs of CUDA wheels
RUNNER = Path(__file__).resolve().with_name("invisibleink_runner.py")
VENV_NAME = "invink-venv"
READY = ".dptext-ready"
CHILD_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1"}


def _requote_line(line: str) -> str:
    """Swap double for single quotes inside the ``{…}`` fields of ``f"…"`` strings."""
    chars, in_f, depth = list(line), False, 0
    i = 0
    while i < len(chars):
        c = chars[i]
        if not in_f:
            in_f = c == '"' and i > 0 and chars[i - 1] in "fF" and \
                (i < 2 or not (chars[i - 2].isalnum() or chars[i - 2] == "_"))
        elif depth == 0:
            if c == "{" and i + 1 < len(chars) and chars[i + 1] == "{":
                i += 1
            elif c == "{":
                depth = 1
            elif c == '"':
                in_f = False
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == '"':
            chars[i] = "'"
        i += 1
    return "".join(chars)


def _pre312_fix(python: Path) -> list[str]:
    """Make invink importable on Python < 3.12, in the venv only; the files changed.

    invink 0.1.0 declares Python >= 3.8 but nests same-type quotes inside an f-string
    (PEP 701, Python 3.12). dptext's interpreter is 3.11, the one for which a CPU torch
    wheel is at hand, so each line that fails to compile has its f-string fields requoted.
    """
    where = subprocess.run(
        [str(python), "-c", "import importlib.util as u; "
         "print(u.find_spec('invink').submodule_search_locations[0])"],
        check=True, capture_output=True, text=True).stdout.strip()
    probe = ("import sys\ntry:\n    compile(open(sys.argv[1], encoding='utf-8').read(), "
             "sys.argv[1], 'exec')\nexcept SyntaxError as e:\n    print(e.lineno)")
    changed = []
    for path in sorted(Path(where).glob("*.py")):
        for _ in range(50):
            res = subprocess.run([str(python), "-c", probe, str(path)], check=True,
                                 capture_output=True, text=True)
            if not res.stdout.strip():
                break
            lineno = int(res.stdout) - 1
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            fixed = _requote_line(lines[lineno])
            if fixed == lines[lineno]:
                raise RuntimeError(f"{path}:{lineno + 1} does not compile on the venv's "
                                   "Python and is not a nested-quote f-string")
            lines[lineno] = fixed
            path.write_text("".join(lines), encoding="utf-8")
            changed.append(f"{path.name}:{lineno + 1}")
        else:
            raise RuntimeError(f"{path}: too many lines to requote")
    return changed


def ensure_venv(root: Path) -> Path:
    """``root/invink-venv`` with torch (pinned, installed first) and invink; its python.

    Built from ``$DPTEXT_INVINK_PYTHON`` or else dptext's own interpreter (for which
    ``torch==2.13.0`` resolves to a CPU wheel here). Idempotent: a marker naming the pins is
    written only after an import check passes.
    """
    venv = Path(root) / VENV_NAME
    python = venv / "bin" / "python"
    marker = venv / READY
    wanted = f"{INVINK} {TORCH}\n"
    if python.exists() and marker.exists() and marker.read_text().startswith(wanted):
        return python
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        base = os.environ.get("DPTEXT_INVINK_PYTHON") or sys.executable
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, TORCH], check=True)
    constraints = venv / "constraints.txt"  # keeps the resolver from swapping torch
    constraints.write_text(f"{TORCH}\n")
    subprocess.run([*pip, "-c", str(constraints), INVINK], check=True)
    changed = _pre312_fix(python)
    check = ("import invink, torch, transformers; "
             f"assert torch.__version__.split('+')[0] == {TORCH.split('==')[1]!r}, "
             "torch.__version__")
    subprocess.run([str(python), "-c", check], check=True, env={**os.environ, **CHILD_ENV})
    marker.write_text(wanted + "".join(f"requoted {c}\n" for c in changed))
    return python


def _model_complete(path: Path) -> bool:
    return (path / "config.json").exists() and any(path.glob("*.safetensors")) \
        and (path / "tokenizer_config.json").exists()


def _has_chat_template(path: Path) -> bool:
    if (path / "chat_template.jinja").exists() or (path / "chat_template.json").exists():
        return True
    return bool(json.loads((path / "tokenizer_config.json").read_text()).get("chat_template"))


def hf_model_dir(alias: str, root: Path) -> Path:
    """An fp32 HF folder of dptext's GGUF model ``alias`` (dequantised once, cached).

    The same weights dptext's own LLM runs use (a catalogue alias of
    ``dptext.llm.models``), so a comparison is not a comparison of model families.
    """
    out = Path(root) / "hf-models" / alias
    if not _model_complete(out):
        src = str(Path(__file__).resolve().parents[2] / "src")
        if importlib.util.find_spec("dptext") is None and src not in sys.path:
            sys.path.insert(0, src)  # a checkout without dptext installed
        from dptext.generators.dpft.model import convert_gguf
        from dptext.llm.models import resolve_model_path

        convert_gguf(resolve_model_path(alias), out)
    if not _has_chat_template(out):
        raise RuntimeError(f"{out}: the converted tokenizer lost its chat template; "
                           "InvisibleInk needs apply_chat_template")
    return out


def _write_private(path: Path, texts: Sequence[str], labels: Sequence[str]) -> None:
    """The private documents as JSONL, readable by this user only."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for text, label in zip(texts, labels, strict=True):
            f.write(json.dumps({"text": text, "label": str(label)}, ensure_ascii=False) + "\n")


def read_output(path: Path) -> list[tuple[str, str]]:
    """(text, label) pairs of a runner output; a torn last line is skipped."""
    pairs: list[tuple[str, str]] = []
    if not path.exists():
        return pairs
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        pairs.append((row["text"], row["label"]))
    return pairs


def written_on(work_dir: Path) -> dict[str, int]:
    """Documents of ``work_dir``'s output by the device that wrote them (its runs; a
    resumed run that found its cell written counts 0)."""
    meta = Path(work_dir) / "invisibleink.jsonl.meta.json"
    counts: dict[str, int] = {}
    for run in json.loads(meta.read_text()).get("runs", []) if meta.exists() else []:
        counts[run["device"]] = counts.get(run["device"], 0) + run["documents"]
    return counts


def generate(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    per_class: int,
    epsilon: float,
    description: str,
    model_alias: str,
    root: Path,
    work_dir: Path,
    delta: float = 1e-5,
    batch_size: int = 8,
    max_tokens: int = 256,
    seed: int = 0,
    threads: int = 1,
    label_in_prompt: bool = True,
    timeout: float | None = None,
) -> list[tuple[str, str]]:
    """``per_class`` InvisibleInk documents per label (fewer where a class is too small).

    Output goes to ``work_dir/invisibleink.jsonl`` (statistics beside it in
    ``.meta.json``); calling again with the same ``work_dir`` and settings resumes. The
    private input file exists only while the runner runs.
    """
    python = ensure_venv(root)
    model_dir = hf_model_dir(model_alias, root)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    private = work_dir / "private-input.jsonl"
    out = work_dir / "invisibleink.jsonl"
    cmd = [str(python), str(RUNNER), "--input", str(private), "--model-dir", str(model_dir),
           "--per-class", str(per_class), "--epsilon", str(epsilon), "--delta", str(delta),
           "--batch-size", str(batch_size), "--max-tokens", str(max_tokens),
           "--description", description, "--seed", str(seed), "--threads", str(threads),
           "--out", str(out), "--label-in-prompt" if label_in_prompt else "--no-label-in-prompt"]
    if shutil.which("nice"):
        cmd = ["nice", "-n", "10", *cmd]
    env = {**os.environ, **CHILD_ENV, "OMP_NUM_THREADS": str(threads)}
    try:
        _write_private(private, texts, labels)
        subprocess.run(cmd, check=True, env=env, timeout=timeout)
    finally:
        private.unlink(missing_ok=True)
    return read_output(out)
