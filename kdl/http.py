"""One JSON-over-HTTPS call with bounded retries, for Discourse and GitHub.

Both APIs answer JSON, rate-limit with ``429`` (Discourse) or ``403``/``429``
plus ``Retry-After`` or ``x-ratelimit-remaining: 0`` (GitHub), and fail with
a JSON body that says why. :class:`Api` retries what is worth retrying
(rate limits, 5xx, a dropped connection) with backoff, honouring the
server's wait up to ``max_delay``, a bounded number of times, and turns
anything else into one line: ``URL: HTTP 422: what the server said``. The
secret a client holds is never let through into a message, even if a server
echoes it.
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import requests

from kdl.errors import WorkspaceError

log = logging.getLogger("kdl")

REDACTED = "<redacted>"


def retry_after(value: str | None, now: Callable[[], datetime]) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now()).total_seconds())


def _rate_limit_wait(
    response: requests.Response, now: Callable[[], datetime]
) -> float | None:
    """How long a rate-limited answer asks us to wait; None if it is not one."""
    wait = retry_after(response.headers.get("Retry-After"), now)
    if wait is not None:
        return wait
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset", "")
        if reset.isdigit():
            return max(0.0, int(reset) - now().timestamp())
        return 60.0
    return None


def error_text(response: requests.Response) -> str:
    """What the server said went wrong, on one line."""
    try:
        data = response.json()
    except ValueError:
        text = " ".join(response.text.split())
        return text[:200] or response.reason or "no details"
    if not isinstance(data, dict):
        return json.dumps(data)[:200]
    parts: list[str] = []
    if isinstance(data.get("message"), str):
        parts.append(data["message"])
    errors = data.get("errors")
    if isinstance(errors, list):
        for e in errors:
            if isinstance(e, dict):
                parts.append(
                    str(
                        e.get("message")
                        or " ".join(str(e[k]) for k in ("field", "code") if k in e)
                    )
                )
            else:
                parts.append(str(e))
    if not parts and data.get("error_type"):
        parts.append(str(data["error_type"]))
    return "; ".join(p for p in parts if p) or json.dumps(data)[:200]


class Api:
    """Requests to one base URL with fixed headers, retried within bounds."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        secret: str = "",
        name: str = "the server",
        session: requests.Session | None = None,
        attempts: int = 5,
        backoff: float = 1.0,
        max_delay: float = 60.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", **headers}
        self._secret = secret
        self._name = name
        self._session = session or requests.Session()
        self._attempts = attempts
        self._backoff = backoff
        self._max_delay = max_delay
        self._timeout = timeout
        self._sleep = sleep
        self._now = now

    def clean(self, text: str) -> str:
        """*text* with the secret replaced."""
        return text.replace(self._secret, REDACTED) if self._secret else text

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        """Send one request; the JSON answer, or a WorkspaceError in one line."""
        url = self.base_url + path
        data = None
        headers = dict(self._headers)
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        last = ""
        for attempt in range(1, self._attempts + 1):
            log.debug("%s %s (attempt %d of %d)", method, url, attempt, self._attempts)
            delay: float | None = None
            try:
                response = self._session.request(
                    method,
                    url,
                    data=data,
                    headers=headers,
                    params=params,
                    timeout=self._timeout,
                )
            except requests.RequestException as exc:
                last = self.clean(f"{type(exc).__name__}: {exc}".splitlines()[0])
                log.debug("%s", last)
            else:
                status = response.status_code
                if 200 <= status < 300:
                    if not response.content:
                        return None
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise WorkspaceError(
                            f"{url}: HTTP {status} but the answer is not JSON"
                        ) from exc
                detail = self.clean(error_text(response))
                limited = (
                    _rate_limit_wait(response, self._now)
                    if status in (403, 429)
                    else None
                )
                if status != 429 and status < 500 and limited is None:
                    raise WorkspaceError(f"{url}: HTTP {status}: {detail}")
                last = f"HTTP {status}: {detail}"
                delay = limited
                if delay is None and status >= 500:
                    delay = retry_after(response.headers.get("Retry-After"), self._now)
                log.info("%s answered %s; retrying", self._name, last)
            if attempt == self._attempts:
                break
            if delay is None:
                delay = self._backoff * 2 ** (attempt - 1)
            self._sleep(min(delay, self._max_delay))
        raise WorkspaceError(f"{url}: gave up after {self._attempts} attempts: {last}")
