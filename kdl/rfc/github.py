"""Read the state of the cited pull requests from the GitHub API (optional).

Offline-safe: any network failure returns None, and the post keeps the
states recorded in :mod:`kdl.rfc.facts` with a note saying so. The base URL
is a parameter so that tests can point it at a loopback server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

import requests

log = logging.getLogger("kdl")

API = "https://api.github.com"
REPO = "llvm/llvm-project"


def pr_states(
    numbers: Iterable[int],
    *,
    base_url: str = API,
    timeout: float = 3.0,
    session: requests.Session | None = None,
) -> dict[int, str] | None:
    """``{number: "open" | "merged" | "closed"}``, or None without a network.

    A PR GitHub does not answer for (404, rate limit) is left out; the first
    connection failure stops the whole lookup.
    """
    session = session or requests.Session()
    headers = {"Accept": "application/vnd.github+json", "User-Agent": "kdl-rfc"}
    token = os.environ.get("GITHUB_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    states: dict[int, str] = {}
    for number in numbers:
        url = f"{base_url.rstrip('/')}/repos/{REPO}/pulls/{number}"
        try:
            response = session.get(url, headers=headers, timeout=timeout)
        except requests.RequestException as exc:
            log.info(
                "GitHub not reachable (%s); keeping the recorded PR states",
                type(exc).__name__,
            )
            return None
        if response.status_code != 200:
            log.info(
                "GitHub: %s answered HTTP %d; keeping the recorded state",
                url,
                response.status_code,
            )
            continue
        try:
            data = response.json()
        except ValueError:
            continue
        if data.get("merged_at"):
            states[number] = "merged"
        elif data.get("state") in ("open", "closed"):
            states[number] = str(data["state"])
    return states
