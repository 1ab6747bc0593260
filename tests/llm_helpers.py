"""Helpers for the LLM tests: a loopback HTTP server that speaks a scripted protocol, and
a real xllamacpp server (SmolLM2-135M) in a child process. Both listen on 127.0.0.1 only
and stop by themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Seen:
    method: str
    path: str
    headers: dict
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class ScriptedServer:
    """``respond(seen) -> (status, body_dict, extra_headers)``."""

    respond: Callable[[Seen], tuple]
    max_seconds: float = 60.0
    seen: list[Seen] = field(default_factory=list)

    def __enter__(self) -> ScriptedServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                            body)
                outer.seen.append(seen)
                status, payload, *extra = outer.respond(seen)
                if status is None:  # simulate a hang: never answer in time
                    time.sleep(payload)
                    return
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra[0] if extra else {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self._timer = threading.Timer(self.max_seconds, self.httpd.shutdown)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()


_SERVE = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
from dptext.llm.local import start_xllamacpp_server
from dptext.llm.models import resolve_model_path
s = start_xllamacpp_server(resolve_model_path(sys.argv[1]), n_ctx=2048,
                           n_parallel=int(sys.argv[4]), threads=int(sys.argv[5]))
print(s.listening_address, flush=True)
time.sleep(float(sys.argv[2]))   # stops by itself
"""


class LlamaServer:
    """xllamacpp serving a GGUF model over HTTP on loopback, in a child process."""

    def __init__(self, model: str = "smollm2-135m", max_seconds: float = 300,
                 n_parallel: int = 1, threads: int = 1) -> None:
        pytest.importorskip("xllamacpp")
        self.model, self.max_seconds, self.n_parallel = model, max_seconds, n_parallel
        self.threads = threads

    def __enter__(self) -> LlamaServer:
        src = os.path.join(os.path.dirname(__file__), "..", "src")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, self.model, str(self.max_seconds), src,
             str(self.n_parallel), str(self.threads)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline().strip()
        if not line:
            self.proc.kill()
            pytest.fail("the xllamacpp server did not start")
        self.url = line if line.startswith("http") else f"http://{line}"
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
