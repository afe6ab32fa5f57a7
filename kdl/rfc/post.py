"""``kdl rfc post``: send a draft to Discourse (a dry run unless ``--post``).

Discourse's API creates a topic with ``POST /posts.json`` and a JSON body
``{"title", "raw", "category"}``, authenticated by the ``Api-Key`` and
``Api-Username`` headers. The key and user name come only from the
environment (``DISCOURSE_API_KEY``, ``DISCOURSE_API_USERNAME``); the key is
never printed or logged (``<redacted>`` in the dry run). 429 and 5xx answers
are retried with backoff, honouring ``Retry-After``, a bounded number of
times; any other 4xx is one line with Discourse's ``errors``.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from kdl.errors import UsageError, WorkspaceError

log = logging.getLogger("kdl")

ENV_KEY = "DISCOURSE_API_KEY"
ENV_USER = "DISCOURSE_API_USERNAME"
ENV_URL = "DISCOURSE_URL"
REDACTED = "<redacted>"


@dataclass(frozen=True)
class Draft:
    name: str
    title: str
    raw: str


def read_draft(path: Path) -> Draft:
    """Split a draft into its title (the ``# `` line) and the post body."""
    text = path.read_text()
    first, _, rest = text.partition("\n")
    if not first.startswith("# "):
        raise WorkspaceError(f"{path}: a draft starts with '# TITLE'")
    return Draft(path.stem, first[2:].strip(), rest.lstrip("\n"))


def payload(draft: Draft, category: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"title": draft.title, "raw": draft.raw}
    if category is not None:
        body["category"] = category
    return body


def endpoint(base_url: str) -> str:
    return base_url.rstrip("/") + "/posts.json"


def describe(
    url: str, username: str | None, has_key: bool, body: dict[str, Any]
) -> str:
    """The exact request, secrets replaced, as the dry run prints it."""
    lines = [
        f"POST {url}",
        f"Api-Key: {REDACTED if has_key else '<unset: ' + ENV_KEY + '>'}",
        f"Api-Username: {username or '<unset: ' + ENV_USER + '>'}",
        "Content-Type: application/json",
        "",
        json.dumps(body, ensure_ascii=False),
    ]
    return "\n".join(lines)


def _retry_after(value: str | None, now: Callable[[], datetime]) -> float | None:
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


def _errors(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        text = " ".join(response.text.split())
        return text[:200] or response.reason or "no details"
    if isinstance(data, dict):
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            return "; ".join(str(e) for e in errors)
        if data.get("error_type"):
            return str(data["error_type"])
    return json.dumps(data)[:200]


class Client:
    """A minimal Discourse client: one call, with bounded retries."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        username: str,
        *,
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
        self.url = endpoint(base_url)
        self._key = api_key
        self._user = username
        self._session = session or requests.Session()
        self._attempts = attempts
        self._backoff = backoff
        self._max_delay = max_delay
        self._timeout = timeout
        self._sleep = sleep
        self._now = now

    def _clean(self, text: str) -> str:
        """Never let the key through, even if a server echoes it."""
        return text.replace(self._key, REDACTED) if self._key else text

    def create_post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST *body*; return Discourse's JSON answer or raise WorkspaceError."""
        headers = {
            "Api-Key": self._key,
            "Api-Username": self._user,
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        data = json.dumps(body, ensure_ascii=False).encode()
        last = ""
        for attempt in range(1, self._attempts + 1):
            log.debug("POST %s (attempt %d of %d)", self.url, attempt, self._attempts)
            delay: float | None = None
            try:
                response = self._session.post(
                    self.url, data=data, headers=headers, timeout=self._timeout
                )
            except requests.RequestException as exc:
                last = self._clean(f"{type(exc).__name__}: {exc}".splitlines()[0])
                log.debug("%s", last)
            else:
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        answer: dict[str, Any] = response.json()
                    except ValueError as exc:
                        raise WorkspaceError(
                            f"{self.url}: HTTP {status} but the answer is not JSON"
                        ) from exc
                    return answer
                detail = self._clean(_errors(response))
                if status != 429 and status < 500:
                    raise WorkspaceError(f"{self.url}: HTTP {status}: {detail}")
                last = f"HTTP {status}: {detail}"
                delay = _retry_after(response.headers.get("Retry-After"), self._now)
                log.info("Discourse answered %s; retrying", last)
            if attempt == self._attempts:
                break
            if delay is None:
                delay = self._backoff * 2 ** (attempt - 1)
            self._sleep(min(delay, self._max_delay))
        raise WorkspaceError(
            f"{self.url}: gave up after {self._attempts} attempts: {last}"
        )


def cmd_post(
    drafts: list[Path],
    *,
    url: str | None,
    category: int | None,
    really: bool,
    env: dict[str, str] | None = None,
    client_factory: Callable[[str, str, str], Client] | None = None,
) -> int:
    """Print (dry run) or send each draft in *drafts*."""
    env = dict(os.environ) if env is None else env
    base = url or env.get(ENV_URL)
    key = env.get(ENV_KEY) or ""
    user = env.get(ENV_USER) or ""
    if really:
        missing = [
            name
            for name, value in (
                (ENV_URL + " or --url", base),
                (ENV_KEY, key),
                (ENV_USER, user),
            )
            if not value
        ]
        if missing:
            raise UsageError(f"--post needs {', '.join(missing)}")
        if len(drafts) != 1:
            raise UsageError("--post sends one draft: name it with --which")
    for path in drafts:
        draft = read_draft(path)
        body = payload(draft, category)
        target = endpoint(base) if base else f"<unset: {ENV_URL} or --url>/posts.json"
        if not really:
            print(f"# dry run for {path.name} (add --post to send)")
            print(describe(target, user or None, bool(key), body))
            print()
            continue
        assert base is not None
        factory = client_factory or (Client)
        answer = factory(base, key, user).create_post(body)
        topic = answer.get("topic_id")
        slug = answer.get("topic_slug", "")
        where = (
            f"{base.rstrip('/')}/t/{slug}/{topic}"
            if topic
            else f"post {answer.get('id')}"
        )
        print(f"posted {path.name}: {where}")
    return 0
