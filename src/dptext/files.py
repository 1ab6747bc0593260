"""Atomic file writes (a reader, or a resumed run, sees the old file or the new one, never
half of one) and strict JSON."""

from __future__ import annotations

import json
import math
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


def finite_json(o: Any) -> Any:
    """NaN and ±inf as None (null), so that what is written is strict JSON."""
    if isinstance(o, dict):
        return {str(k): finite_json(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [finite_json(v) for v in o]
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o
