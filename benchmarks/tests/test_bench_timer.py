"""A whole-document cell's wall seconds survive a kill that skips its ``__exit__`` (SIGKILL,
a machine's restart): the timer saves its total while the cell runs, and the next
invocation starts from it."""

import json
import time

from bench_whole_documents import Timer


def test_a_cell_timer_saves_its_seconds_while_the_cell_runs(tmp_path):
    saved_file = tmp_path / "seconds.json"
    with Timer(tmp_path, every=0.02) as timer:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if saved_file.exists() and json.loads(saved_file.read_text())["seconds"] > 0.1:
                break
            time.sleep(0.01)
        saved = json.loads(saved_file.read_text())["seconds"]
        assert 0.1 < saved <= timer.total
        # what a killed invocation leaves is what the next one starts from
        assert Timer(tmp_path).before >= saved
    assert list(tmp_path.iterdir()) == [saved_file]  # no half-written file left beside it
    assert Timer(tmp_path).before >= saved
