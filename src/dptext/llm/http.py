"""JSON over HTTP with the standard library, mapping failures to retryable or not.

Time-outs, connection errors, 429 and 5xx raise ``RetryableLLMError`` (the runner backs
off and retries); other 4xx raise ``LLMError``. Error messages carry the status and a
short, redacted excerpt of the response body, never request headers.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping

from dptext.llm.errors import LLMError, RetryableLLMError
from dptext.llm.secrets import Secret, redact


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def post_json(url: str, body: Mapping, headers: Mapping[str, str] | None = None,
              timeout: float = 120.0, secrets: tuple[Secret | None, ...] = (),
              data: bytes | None = None) -> dict:
    payload = data if data is not None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(url, data=payload, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        excerpt = redact(e.read(500).decode("utf-8", "replace"), *secrets)
        msg = f"HTTP {e.code} from {url}: {excerpt}"
        if e.code == 429 or e.code >= 500 or e.code == 408:
            raise RetryableLLMError(msg, _retry_after(e.headers)) from None
        raise LLMError(msg) from None
    except TimeoutError as e:
        raise RetryableLLMError(f"time-out after {timeout:g}s calling {url}") from e
    except urllib.error.URLError as e:
        if isinstance(e.reason, TimeoutError | socket.timeout):
            raise RetryableLLMError(f"time-out after {timeout:g}s calling {url}") from None
        raise RetryableLLMError(f"cannot reach {url}: {e.reason}") from None
    except (ConnectionError, OSError, http.client.HTTPException) as e:
        # a connection reset, a server dying mid-answer, a body cut short (IncompleteRead)
        raise RetryableLLMError(f"connection to {url} failed: {e.__class__.__name__}") from None
    try:
        return json.loads(raw)
    except ValueError:
        # a 200 whose body is not JSON: a proxy's error page, a body cut short; retry
        raise RetryableLLMError(
            f"{url} answered with something that is not JSON: "
            f"{redact(raw[:200].decode('utf-8', 'replace'), *secrets)!r}") from None
