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

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdl.errors import UsageError, WorkspaceError
from kdl.http import REDACTED, Api

log = logging.getLogger("kdl")

ENV_KEY = "DISCOURSE_API_KEY"
ENV_USER = "DISCOURSE_API_USERNAME"
ENV_URL = "DISCOURSE_URL"


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


class Client:
    """A minimal Discourse client: one call, with bounded retries."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        username: str,
        **options: Any,
    ) -> None:
        self.url = endpoint(base_url)
        self._api = Api(
            base_url,
            {"Api-Key": api_key, "Api-Username": username},
            secret=api_key,
            name="Discourse",
            **options,
        )

    def create_post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST *body*; return Discourse's JSON answer or raise WorkspaceError."""
        answer = self._api.request("POST", "/posts.json", body)
        if not isinstance(answer, dict):
            raise WorkspaceError(f"{self.url}: the answer is not a JSON object")
        return answer


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
