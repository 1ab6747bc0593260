"""``--llm ray:SPEC``: one backend per node of the Ray cluster, the journal on the driver.
A worker killed mid-stage loses no prompt and journals none twice; a resumed run repeats
no journaled prompt; without ``--engine ray`` the spec says what to add."""

from __future__ import annotations

import threading

import pytest

from dptext.compute import use_engine
from dptext.llm import (
    BackendSpecError,
    Journal,
    PromptBuilder,
    RetryPolicy,
    SamplingParams,
    make_backend,
)
from dptext.llm.ray_pool import RayLLMBackend
from dptext.llm.runner import run_prompts

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install -e '.[ray]')")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

RETRY = RetryPolicy(max_retries=4, base_delay=0.01, max_delay=0.05)


def _prompts(n: int):
    builder = PromptBuilder("medical record", params=SamplingParams(max_tokens=32))
    return [builder.build([f"finding{i}", "cough"], seed=i) for i in range(n)]


def _slow_recorder():
    """A factory for the actors (defined in a function: pickled by value, so the workers
    need only dptext): answers after 0.5 s, naming the process that answered."""
    def make():
        import os
        import time

        from dptext.llm.recording import RecordingBackend

        def answer(prompt):
            time.sleep(0.5)
            return f"pid {os.getpid()}: " + prompt.messages[-1].content[-40:]

        return RecordingBackend(answer=answer, identity="recording:slow")
    return make


def test_ray_spec_needs_the_ray_engine(tmp_path):
    with pytest.raises(BackendSpecError, match="--engine ray"):
        make_backend("ray:recording:")
    with pytest.raises(BackendSpecError):
        make_backend("ray:")
    # a run is refused before anything is read or charged
    import dptext

    corpus = tmp_path / "c.csv"
    corpus.write_text("text,label\n" + "".join(f"note {i} about cough,a\n" for i in range(9)))
    with pytest.raises(BackendSpecError, match="--engine ray"):
        dptext.synthesize(str(corpus), "kps", epsilon=2, out=tmp_path / "o.jsonl",
                          llm="ray:recording:", label_column="label", labels=["a"])
    assert not any(tmp_path.glob("o.*"))


def test_ray_identity_is_the_inner_models(cluster):
    address, *_ = cluster
    with use_engine("ray", address):
        backend = make_backend("ray:recording:")
        assert backend.identity == "recording"  # shared with a local run of the model
        backend.close()


def test_a_worker_killed_mid_stage_loses_no_prompt_and_resume_repeats_none(cluster, tmp_path):
    address, *_ = cluster
    prompts = _prompts(24)
    journal = Journal(tmp_path / "journal.jsonl")
    with use_engine("ray", address):
        backend = RayLLMBackend(_slow_recorder())
        members = backend.members
        assert len(members) >= 2  # one actor per alive node
        doomed = members[0]
        killed = threading.Event()

        def kill():
            ray.kill(doomed.actor, no_restart=True)
            killed.set()

        killer = threading.Timer(0.7, kill)  # 24 prompts of 0.5 s, 8 at a time: ≥ 1.5 s
        killer.start()
        done = run_prompts(backend, prompts, journal, concurrency=8, retry=RETRY)
        assert killed.is_set()  # the worker died while the stage ran
        killer.join()
        backend.close()
    pids = {c.text.split(":")[0] for c in done}
    assert len(done) == 24 and len(pids) >= 2  # both workers answered some
    lines = journal.path.read_text().splitlines()
    assert len(lines) == 24  # each prompt journaled once, none lost
    # the driver stops here; resumed (on any engine) no prompt is sent again
    with use_engine("ray", address):
        broken = RayLLMBackend(_broken())
        again = run_prompts(broken, prompts, journal, concurrency=8, retry=RETRY)
        broken.close()
    assert [c.text for c in again] == [c.text for c in done]
    assert journal.path.read_text().splitlines() == lines


def _broken():
    """A factory of backends that fail on any prompt (pickled by value)."""
    def make():
        from dptext.llm import LLMError
        from dptext.llm.recording import RecordingBackend

        class Broken(RecordingBackend):
            def complete(self, prompts):
                raise LLMError("a resumed run must not send a journaled prompt")

        return Broken(identity="recording:slow")
    return make
