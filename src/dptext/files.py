"""Atomic file writes: a reader (or a resumed run) sees the old file or the new one, never
half of one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_atomic(path: str | Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def write_json_atomic(path: str | Path, obj: Any) -> Path:
    return write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str))
