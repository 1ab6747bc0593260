"""The provenance the benchmarks write into the repository (benchmarks/record.py) holds no
path of the machine they ran on."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import record


def test_the_command_line_writes_the_home_folder_as_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    script = str(record.ROOT / "benchmarks" / "bench_x.py")
    monkeypatch.setattr(sys, "argv", [script, "--work-dir", f"{tmp_path}/cells a",
                                      "--n", "3", f"{tmp_path}/jobs"])
    line = record.command_line()
    assert line == "python benchmarks/bench_x.py --work-dir ~/'cells a' --n 3 ~/jobs"
    assert str(tmp_path) not in line
