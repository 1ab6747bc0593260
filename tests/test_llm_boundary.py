"""The privacy boundary of dptext.llm: it must not import modules that hold private data."""

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import dptext.llm

FORBIDDEN = ("dptext.corpus", "dptext.generators", "dptext.datasets", "dptext.text",
             "dptext.embed", "dptext.kde", "dptext.evaluate", "dptext.cli")


def test_llm_modules_do_not_import_private_layers():
    mods = [f"dptext.llm.{m.name}" for m in pkgutil.iter_modules(dptext.llm.__path__)]
    assert len(mods) >= 10
    code = ("import importlib, json, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    src = str(Path(dptext.llm.__file__).parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": src}, check=True, timeout=120).stdout
    loaded = json.loads(out)
    bad = [m for m in loaded if m.startswith(FORBIDDEN)]
    assert bad == [], f"dptext.llm pulled in {bad}"


def test_no_forbidden_import_statements_in_source():
    for f in Path(dptext.llm.__file__).parent.glob("*.py"):
        text = f.read_text()
        for name in FORBIDDEN:
            assert f"import {name}" not in text and f"from {name}" not in text, (f, name)


def test_cli_default_llm_is_the_catalogue_default():
    from dptext.cli.generate import DEFAULT_LLM
    from dptext.llm.models import CATALOGUE, DEFAULT_LOCAL_MODEL

    assert f"local:{DEFAULT_LOCAL_MODEL}" == DEFAULT_LLM and DEFAULT_LOCAL_MODEL in CATALOGUE
