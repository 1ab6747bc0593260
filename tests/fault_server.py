"""A real OpenAI-compatible chat-completions server on 127.0.0.1 that injects faults.

Each request gets the fault ``plan(n, attempt)``: n = 0, 1, … in arrival order, attempt =
how many earlier requests carried the same prompt:

``ok``             a valid answer: "Document <serial>. A note on <the prompt's terms>."
``timeout``        sleeps ``hang`` seconds, then drops the connection without answering
``429``            Too Many Requests with ``Retry-After: 0``
``500``            Internal Server Error (no Retry-After)
``malformed``      200 with a body that is not JSON
``wrong-shape``    200 with JSON that is not a chat completion
``truncated-body`` 200 announcing more bytes than it sends, then closes (IncompleteRead)
``truncated-text`` a valid answer whose text stops mid-sentence (finish: length)
``reset``          closes the connection without a status line (a worker dying)
``echo-401``       401 whose body echoes the request's Authorization header (a leaky proxy)
``echo-500``       the same with status 500 (retryable)

``die_after``: the whole server shuts down after that many ``ok`` answers (dies mid-run).
The server stops by itself after ``max_seconds``. Every ``ok`` answer is recorded with
its serial, so a test can check that no finished document was computed twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("ok", "timeout", "429", "500", "malformed", "wrong-shape", "truncated-body",
          "truncated-text", "reset")


def cycle(*faults: str) -> Callable[[int, int], str]:
    """Faults in turn, over all requests."""
    return lambda n, attempt: faults[n % len(faults)]


def first_attempts(fault: str, k: int) -> Callable[[int, int], str]:
    """The first ``k`` attempts of every prompt get ``fault``; the next one succeeds."""
    return lambda n, attempt: fault if attempt < k else "ok"


class FaultServer:
    def __init__(self, plan: Callable[[int, int], str] | None = None, *, port: int = 0,
                 hang: float = 1.5, delay: float = 0.0, die_after: int | None = None,
                 max_seconds: float = 120.0) -> None:
        self.plan = plan or cycle("ok")
        self.port, self.hang, self.delay = port, hang, delay
        self.die_after, self.max_seconds = die_after, max_seconds
        self.served = Counter()  # fault -> count
        self._ok_prompts: list[str] = []  # user message of every ok answer sent
        self.auth: list[str | None] = []  # Authorization headers seen
        self._n = 0
        self._attempts: Counter = Counter()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0  # requests whose handler has not returned
        self.dead = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def ok_prompts(self) -> list[str]:
        """The user message of every ok answer sent, read once no handler is in flight: a
        client can read its answer before the handler that sent it records it."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=self.hang + 10)
            return list(self._ok_prompts)

    def _next(self, user: str) -> tuple[int, str]:
        with self._lock:
            n = self._n
            self._n += 1
            attempt = self._attempts[user]
            self._attempts[user] += 1
            return n, self.plan(n, attempt)

    def __enter__(self) -> FaultServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None,
                      length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                self.close_connection = True

            def do_POST(self):
                with outer._lock:
                    outer._in_flight += 1
                try:
                    self._answer()
                finally:
                    with outer._idle:
                        outer._in_flight -= 1
                        outer._idle.notify_all()

            def _answer(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.auth.append(self.headers.get("Authorization"))
                user = next((m["content"] for m in json.loads(raw)["messages"]
                             if m["role"] == "user"), "")
                n, fault = outer._next(user)
                with outer._lock:
                    outer.served[fault] += 1
                if outer.delay:
                    time.sleep(outer.delay)
                if fault == "timeout":
                    time.sleep(outer.hang)
                    self.close_connection = True
                    return
                if fault == "reset":
                    self.close_connection = True
                    return
                if fault in ("echo-401", "echo-500"):
                    body = json.dumps({"error": f"bad auth {self.headers.get('Authorization')}"})
                    self._send(int(fault[-3:]), body.encode())
                    return
                if fault in ("429", "500"):
                    body = json.dumps({"error": {"message": f"injected {fault}"}}).encode()
                    self._send(int(fault), body, {"Retry-After": "0"} if fault == "429" else {})
                    return
                if fault == "malformed":
                    self._send(200, b'{"choices": [{"message": {"content": "unterminated')
                    return
                if fault == "wrong-shape":
                    self._send(200, json.dumps({"object": "error", "detail": "busy"}).encode())
                    return
                terms = [line[2:] for line in user.splitlines() if line.startswith("- ")]
                text, finish = f"Document {n}. A note on {', '.join(terms)}.", "stop"
                if fault == "truncated-text":
                    text, finish = f"Document {n} was complete. Then it stopped in the mi", \
                        "length"
                body = json.dumps({"id": f"c{n}", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 20}}).encode()
                if fault == "truncated-body":
                    self._send(200, body[: len(body) // 3], length=len(body))
                    return
                self._send(200, body)
                with outer._lock:
                    outer._ok_prompts.append(user)
                    if outer.die_after is not None and len(outer._ok_prompts) >= outer.die_after:
                        threading.Thread(target=outer._die, daemon=True).start()

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # many clients connecting at once are not refused

            def handle_error(self, request, client_address):
                pass  # a client that hung up on an injected fault is expected

        self.httpd = Server(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self._timer = threading.Timer(self.max_seconds, self._die)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _die(self) -> None:
        if not self.dead.is_set():
            self.dead.set()
            self.httpd.shutdown()
            self.httpd.server_close()

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        self._die()
