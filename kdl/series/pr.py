"""``kdl pr``: the applied series as stacked pull requests on GitHub.

LLVM reviews on GitHub, and its developer guide lets a contributor with
commit access stack pull requests on ``users/<login>/...`` branches of
llvm/llvm-project itself. For patch N of the branch ``kdl apply`` made,
``kdl pr``

* pushes its commit to ``users/<login>/<topic>-N`` (``git push
  --force-with-lease``, all branches in one push);
* opens a pull request from that branch, titled with the commit's subject,
  its body the commit message, as the posting plan says
  (:mod:`kdl.series.posting`, from the series' ``post:`` lines): a fix that
  stands alone into ``main``; in a stack, into the branch of the patch before
  it with ``Depends on #M`` (the first of a stack on an open pull request
  into ``main``, ``Depends on`` that one); with no ``post:`` lines the
  series is one stack;
* or, when ``prs.json`` beside ``patches/series`` (or GitHub, asked by head
  branch) already knows the PR, updates its title, body and base;
* records the numbers in ``prs.json``, after each PR, so an interrupted run
  loses nothing.

``--post`` posts the pull requests the plan puts before its RFC;
``--post --after-rfc`` those after it, once the RFC is up.

A dry run is the default: it prints the plan, then (once the series is
applied) the push and every request, the token
shown as ``<redacted>``, and sends nothing. ``--post`` sends (the global
``--dry-run`` still wins). The token comes from ``GITHUB_TOKEN`` or
``GH_TOKEN``, or from the GitHub CLI's ``hosts.yml``; it is never printed
or logged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdl import proc
from kdl.errors import UsageError, WorkspaceError
from kdl.http import REDACTED, Api
from kdl.series.checkout import Checkout
from kdl.series.commands import chosen_file, series_status
from kdl.series.model import Series, load
from kdl.series.posting import Step, author, print_plan
from kdl.series.posting import plan as posting_plan

API = "https://api.github.com"
REPO = "llvm/llvm-project"
RECORD = "prs.json"

_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


@dataclass
class Planned:
    """One patch's pull request, as the run will create or update it."""

    patch: str
    commit: str
    title: str
    body: str
    branch: str
    base: str
    number: int | None = None
    url: str | None = None
    #: The branch of the pull request this one depends on, if any.
    after: str | None = None
    #: The open pull request its stack is stacked on.
    on: int | None = None
    #: Whether the plan posts it after the RFC.
    after_rfc: bool = False


class NotAppliedError(WorkspaceError):
    """The checkout's branch does not carry the series (yet)."""


def token_from(env: dict[str, str], home: Path) -> str:
    """A GitHub token from the environment or the GitHub CLI's config."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if env.get(name):
            return env[name]
    config = Path(env.get("GH_CONFIG_DIR") or home / ".config" / "gh") / "hosts.yml"
    try:
        text = config.read_text()
    except OSError:
        return ""
    host = False
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            host = line.strip().rstrip(":") == "github.com"
        elif host and line.strip().startswith("oauth_token:"):
            return line.split(":", 1)[1].strip().strip("\"'")
    return ""


def read_record(path: Path) -> dict[str, dict[str, Any]]:
    """``{branch: {"number", "url", "patch"}}`` from prs.json, if it exists."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise WorkspaceError(f"{path}: not a PR record ({exc})") from None
    prs = doc.get("prs") if isinstance(doc, dict) else None
    if not isinstance(prs, list) or not all(
        isinstance(p, dict) and isinstance(p.get("branch"), str) for p in prs
    ):
        raise WorkspaceError(f"{path}: expected {{'prs': [{{'branch': ...}}, ...]}}")
    return {p["branch"]: p for p in prs}


def write_record(path: Path, repo: str, planned: list[Planned]) -> None:
    doc = {
        "repo": repo,
        "prs": [
            {"patch": p.patch, "branch": p.branch, "number": p.number, "url": p.url}
            for p in planned
            if p.number is not None
        ],
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def _message(co: Checkout, commit: str) -> tuple[str, str]:
    subject = co.run("log", "-1", "--format=%s", commit).strip()
    body = co.run("log", "-1", "--format=%b", commit).strip()
    return subject, body


def plan(
    llvm: Path, series: Series, steps: list[Step], who: str
) -> tuple[list[Planned], str, str]:
    """One Planned per posted patch, in the order of *steps* (the posting
    plan), the checkout's branch and base. Each commit must be authored by
    *who*."""
    doc = series_status(llvm, series)
    if not doc["kdl_branch"]:
        raise NotAppliedError(
            f"{llvm}: HEAD is not a branch made by kdl apply; apply the series first"
        )
    missing = [p["name"] for p in doc["patches"] if not p["commit"]]
    if missing:
        raise WorkspaceError(
            f"{doc['branch']}: {len(missing)} patch(es) not on the branch "
            f"({missing[0]}{', ...' if len(missing) > 1 else ''}); apply them first"
        )
    if doc["other_commits"]:
        raise WorkspaceError(
            f"{doc['branch']}: commits that are not the series' "
            f"({doc['other_commits'][0]['commit'][:12]}); export or drop them first"
        )
    commits = {p["name"]: p["commit"] for p in doc["patches"]}
    planned: list[Planned] = []
    rfc = False
    with Checkout(llvm) as co:
        for step in steps:
            rfc = rfc or bool(step.rfc)
            if step.number is None or not step.patches:
                continue  # the RFC, or held
            commit = commits[step.patches[0]]
            by = co.run("log", "-1", "--format=%an <%ae>", commit).strip()
            if by != who:
                raise WorkspaceError(
                    f"{step.patches[0]}: its commit {commit[:12]} is authored by "
                    f"{by}, not {who}: 'kdl revert' and 'kdl apply' again"
                )
            subject, body = _message(co, commit)
            planned.append(
                Planned(
                    patch=step.patches[0],
                    commit=commit,
                    title=subject,
                    body=body,
                    branch=step.branch,
                    base=step.base,
                    after=step.after,
                    on=step.on,
                    after_rfc=rfc,
                )
            )
    return planned, str(doc["branch"]), str(doc["base"]["commit"])


def unformatted(llvm: Path, base: str) -> list[str]:
    """Files whose lines changed since *base* clang-format-22 would change.

    The same check as upstream's code-formatter job (``git clang-format``
    on the changed lines); a PR that fails it gets a bot comment.
    """
    tool = proc.which("git-clang-format-22") or proc.which(
        "git-clang-format", Path("/usr/lib/llvm-22/bin")
    )
    clang_format = proc.which("clang-format-22") or proc.which(
        "clang-format", Path("/usr/lib/llvm-22/bin")
    )
    if tool is None or clang_format is None:
        raise WorkspaceError(
            "git-clang-format-22 not found: the pre-PR format check needs "
            "clang-format-22 (apt-get install clang-format-22)"
        )
    result = proc.run(
        [str(tool), "--binary", str(clang_format), "--diff", base],
        cwd=llvm,
        check=False,
    )
    status = result.returncode
    out = result.stdout.decode(errors="replace")
    err = result.stderr.decode(errors="replace")
    files = re.findall(r"^diff --git a/(\S+) ", out, re.MULTILINE)
    if status not in (0, 1) or (status == 1 and not files):
        detail = (err.strip() or out.strip()).splitlines()
        raise WorkspaceError(
            f"{llvm}: git-clang-format failed: {detail[-1] if detail else status}"
        )
    return files


def pr_body(item: Planned, depends: int | None, depends_branch: str | None) -> str:
    body = item.body
    if depends is not None:
        body += f"\n\nDepends on #{depends}"
    elif depends_branch:
        body += f"\n\nDepends on the pull request of {depends_branch}"
    return body.strip() + "\n"


def proposals_of(series_file: Path) -> Series | None:
    """The proposals' series beside *series_file* (proposals/series), if any."""
    path = series_file.parent / "proposals" / "series"
    return load(path) if path.is_file() else None


class GitHub:
    """The part of GitHub's REST API stacked pull requests need."""

    def __init__(self, api_url: str, token: str, repo: str, **options: Any) -> None:
        self.repo = repo
        self._api = Api(
            api_url,
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "kdl-pr",
            },
            secret=token,
            name="GitHub",
            **options,
        )

    def login(self) -> str:
        user = self._api.request("GET", "/user")
        if not isinstance(user, dict) or not isinstance(user.get("login"), str):
            raise WorkspaceError("GitHub: /user did not name a login")
        return str(user["login"])

    def find(self, owner: str, branch: str) -> dict[str, Any] | None:
        found = self._api.request(
            "GET",
            f"/repos/{self.repo}/pulls",
            params={"head": f"{owner}:{branch}", "state": "open"},
        )
        return found[0] if isinstance(found, list) and found else None

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._checked(
            self._api.request("POST", f"/repos/{self.repo}/pulls", body)
        )

    def update(self, number: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._checked(
            self._api.request("PATCH", f"/repos/{self.repo}/pulls/{number}", body)
        )

    @staticmethod
    def _checked(answer: Any) -> dict[str, Any]:
        if not isinstance(answer, dict) or not isinstance(answer.get("number"), int):
            raise WorkspaceError("GitHub: the answer names no pull request number")
        return answer


def push_args(remote: str, planned: list[Planned]) -> list[str]:
    return [
        "push",
        "--porcelain",
        "--force-with-lease",
        remote,
        *(f"{p.commit}:refs/heads/{p.branch}" for p in planned),
    ]


def run_pr(
    llvm: Path,
    series_file: Path,
    *,
    login: str | None,
    topic: str | None,
    remote: str,
    repo: str,
    api_url: str,
    really: bool,
    after_rfc: bool = False,
    env: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
) -> int:
    env = dict(os.environ) if env is None else env
    series = load(series_file)
    token = token_from(env, Path(env.get("HOME") or Path.home()))
    if really and not token:
        raise UsageError(
            "--post needs a token: GITHUB_TOKEN, GH_TOKEN or 'gh auth login'"
        )
    with Checkout(llvm) as co:
        who = author(co)
    github = GitHub(api_url, token, repo, **(options or {})) if really else None
    if login is None:
        login = github.login() if github else "<login>"
    elif not _LOGIN.match(login):
        raise UsageError(f"--login {login!r}: not a GitHub login")
    topic = topic or series.name
    record_path = series_file.parent / RECORD
    record = read_record(record_path)
    proposals = proposals_of(series_file)
    steps = posting_plan(series, proposals, login, topic)
    if not really:
        print_plan(series, who, steps)
    try:
        planned, branch, base = plan(llvm, series, steps, who)
    except NotAppliedError as exc:
        if really:
            raise
        print(f"# the requests: {exc}")
        return 0
    bad = unformatted(llvm, base)
    if bad:
        raise WorkspaceError(
            f"clang-format-22 would change {', '.join(bad)}: run "
            f"'git clang-format-22 {base[:12]}' in {llvm}, amend the commits "
            "and export, then open the PRs"
        )
    for p in planned:
        known = record.get(p.branch, {})
        p.number, p.url = known.get("number"), known.get("url")

    # Posting goes as the plan says: the pull requests before its RFC, and
    # with --after-rfc those after it (a dry run shows them all).
    batch = [p for p in planned if p.after_rfc == after_rfc] if really else planned
    if really and not batch:
        raise UsageError(
            "no pull requests come after the RFC in the plan"
            if after_rfc
            else "every pull request comes after the RFC: --after-rfc posts them"
        )
    args = push_args(remote, batch)
    if not really:
        print(f"# dry run: {len(planned)} pull request(s) from {branch}")
        print("would run: git " + " ".join(args))
        auth = REDACTED if token else "<unset: GITHUB_TOKEN, GH_TOKEN or gh>"
    else:
        with Checkout(llvm) as co:
            co.run(*args)
        print(f"pushed {len(batch)} branch(es) to {remote}")
    owner = repo.split("/", maxsplit=1)[0]
    by_branch = {p.branch: p for p in planned}
    for p in batch:
        previous = by_branch.get(p.after) if p.after else None
        depends = previous.number if previous else p.on
        body = {
            "title": p.title,
            "body": pr_body(p, depends, previous.branch if previous else None),
            "base": p.base,
        }
        if not really:
            if p.number is not None:
                print(f"PATCH {api_url}/repos/{repo}/pulls/{p.number}")
            else:
                print(f"GET {api_url}/repos/{repo}/pulls?head={owner}:{p.branch}")
                print(f"POST {api_url}/repos/{repo}/pulls")
                body = {"head": p.branch, **body}
            print(f"Authorization: Bearer {auth}")
            print(json.dumps(body, ensure_ascii=False))
            continue
        assert github is not None
        if p.number is None:
            existing = github.find(owner, p.branch)
            if existing is not None:
                p.number = int(existing["number"])
        if p.number is not None:
            answer = github.update(p.number, body)
            verb = "updated"
        else:
            answer = github.create({"head": p.branch, **body})
            verb = "created"
        p.number, p.url = int(answer["number"]), answer.get("html_url")
        write_record(record_path, repo, planned)
        print(f"{verb} #{p.number} {p.branch} <- {p.patch}")
    rfc = [s.rfc for s in steps if s.rfc]
    if really and rfc and not after_rfc:
        print(
            f"next: the RFC ('kdl rfc post --which {rfc[0]} --post'), then "
            "'kdl pr --post --after-rfc' for the pull requests after it"
        )
    return 0


def cmd_pr(args: argparse.Namespace) -> int:
    return run_pr(
        args.llvm,
        chosen_file(args, what="pr"),
        login=args.login,
        topic=args.topic,
        remote=args.remote,
        repo=args.repo,
        api_url=args.api.rstrip("/"),
        really=args.post and not proc.DRY_RUN,
        after_rfc=args.after_rfc,
    )
