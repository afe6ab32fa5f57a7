"""``kdl pr``: the applied series as pull requests on GitHub, from a fork.

LLVM reviews on GitHub. A contributor without commit access cannot push
branches to llvm/llvm-project (``users/<login>/...`` needs commit access),
so every pull request goes from the poster's fork into main, as the posting
plan says (:mod:`kdl.series.posting`, from the series' ``post:`` lines).
``kdl pr``

* finds the fork's remote (``--remote``, else the one remote that is not
  llvm/llvm-project) and pushes each pull request's branch there
  (``<topic>-N``; ``<topic>-N-M`` for one pull request of several commits;
  ``git push --force-with-lease``, all branches in one push): its own
  commits on the series' base, after those of the earlier patches it
  carries (:mod:`kdl.series.forkpush`), and no others;
* opens each pull request with head ``LOGIN:BRANCH`` and base ``main``,
  titled with its commit's subject (the last commit's, for several), its
  body the commit message(s), with ``Depends on #M`` for each pull request
  whose commits it carries;
* or, when ``prs.json`` beside ``patches/series`` (or GitHub, asked by head
  branch) already knows the PR, updates its title, body and base;
* posts the plan's comments (``post: comment``) on the pull requests they
  name, their ``{{pr N}}`` slots filled with the number of the pull request
  that posts patch N;
* records the numbers in ``prs.json``, after each PR and comment, so an
  interrupted run loses nothing and a second run comments nowhere twice.

``--post`` posts the pull requests and comments the plan puts before its
RFC; ``--post --after-rfc`` those after it, once the RFC is up. A series
marked ``post: never`` (the release/22.x backport) or without ``post:``
lines is refused, dry run or not.

A dry run is the default: it prints the plan (without ``--llvm``, the plan
alone: no checkout is read), then (once the series is applied) the push and
every request, the token shown as ``<redacted>``, and sends nothing.
``--post`` sends (the global ``--dry-run`` still wins). The token comes
from ``GITHUB_TOKEN`` or ``GH_TOKEN``, or from the GitHub CLI's
``hosts.yml``; it is never printed or logged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError
from kdl.http import REDACTED, Api
from kdl.series.checkout import Checkout
from kdl.series.commands import chosen, series_of, series_status
from kdl.series.forkpush import branch_commit, fork_remote
from kdl.series.model import Series, load
from kdl.series.posting import Step, author, print_plan, refuse_unposted, shown
from kdl.series.posting import plan as posting_plan

API = "https://api.github.com"
REPO = "llvm/llvm-project"
RECORD = "prs.json"

_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
#: A comment's slot for the pull request that posts patch N.
_SLOT = re.compile(r"\{\{\s*pr\s+(\d+)\s*\}\}")


@dataclass
class Planned:
    """One pull request, as the run will create or update it."""

    #: Its first own patch, as the series lists it (the record's key).
    patch: str
    #: The commit its branch points at.
    commit: str
    title: str
    body: str
    branch: str
    head: str
    base: str
    #: Its own patches' places in the series.
    places: list[int] = field(default_factory=list)
    number: int | None = None
    url: str | None = None
    #: The branches of the pull requests it depends on (carries).
    after: list[str] = field(default_factory=list)
    #: How many commits of other pull requests come first on its branch.
    carried: int = 0
    #: Whether the plan posts it after the RFC.
    after_rfc: bool = False


@dataclass
class Comment:
    """A comment of the plan on a pull request (``post: comment``)."""

    on: int
    file: Path
    after_rfc: bool
    url: str | None = None


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


def read_record(
    path: Path,
) -> tuple[dict[str, dict[str, Any]], dict[int, dict[str, Any]]]:
    """``({branch: {"number", "url", "patch"}}, {pr: {"url"}})`` from
    prs.json (its pull requests and the comments made), if it exists."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, {}
    except (OSError, ValueError) as exc:
        raise WorkspaceError(f"{path}: not a PR record ({exc})") from None
    prs = doc.get("prs") if isinstance(doc, dict) else None
    if not isinstance(prs, list) or not all(
        isinstance(p, dict) and isinstance(p.get("branch"), str) for p in prs
    ):
        raise WorkspaceError(f"{path}: expected {{'prs': [{{'branch': ...}}, ...]}}")
    comments = doc.get("comments", [])
    if not isinstance(comments, list) or not all(
        isinstance(c, dict) and isinstance(c.get("on"), int) for c in comments
    ):
        raise WorkspaceError(f"{path}: expected 'comments': [{{'on': N, ...}}, ...]")
    return {p["branch"]: p for p in prs}, {c["on"]: c for c in comments}


def write_record(
    path: Path, repo: str, planned: list[Planned], comments: list[Comment]
) -> None:
    doc: dict[str, Any] = {
        "repo": repo,
        "prs": [
            {"patch": p.patch, "branch": p.branch, "number": p.number, "url": p.url}
            for p in planned
            if p.number is not None
        ],
    }
    made = [{"on": c.on, "url": c.url} for c in comments if c.url is not None]
    if made:
        doc["comments"] = made
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


def _message(co: Checkout, commit: str) -> tuple[str, str]:
    subject = co.run("log", "-1", "--format=%s", commit).strip()
    body = co.run("log", "-1", "--format=%b", commit).strip()
    return subject, body


def _body(co: Checkout, commits: list[str]) -> tuple[str, str]:
    """The title and body of a pull request of *commits* (its own): one
    commit's message; for several, the last one's subject and each one's
    message under its subject (LLVM lands the pull request as one commit
    whose message is this)."""
    messages = [_message(co, c) for c in commits]
    if len(messages) == 1:
        return messages[0]
    parts = [
        f"This pull request has {len(messages)} commits, to be reviewed one "
        "at a time; it lands as one."
    ]
    parts += [f"## {subject}\n\n{body}" for subject, body in messages]
    return messages[-1][0], "\n\n".join(parts)


def plan(
    llvm: Path,
    series: Series,
    steps: list[Step],
    who: str,
    *,
    on_branch: Series | None = None,
) -> tuple[list[Planned], list[Comment], str, str]:
    """One Planned per pull request and one Comment per comment, in the
    order of *steps* (the posting plan), the checkout's branch and base.
    Each commit must be authored by *who*. *on_branch*: the series with
    what the branch carries after it (the proposals, never posted: their
    commits come after the series' and no step names them)."""
    doc = series_status(llvm, on_branch or series)
    if not doc["kdl_branch"]:
        raise NotAppliedError(
            f"{llvm}: HEAD is not a branch made by kdl apply; apply the series first"
        )
    # The series' own patches come first; proposals after them are not posted.
    own = doc["patches"][: len(series.patches)]
    missing = [p["name"] for p in own if not p["commit"]]
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
    commits = [str(p["commit"]) for p in own]
    base = str(doc["base"]["commit"])
    planned: list[Planned] = []
    comments: list[Comment] = []
    rfc = False
    with Checkout(llvm) as co:
        for step in steps:
            rfc = rfc or bool(step.rfc)
            if step.file is not None and step.on is not None:
                comments.append(Comment(step.on, step.file, rfc))
            if not step.is_pr:
                continue  # the RFC, a comment, or held
            own = [commits[n - 1] for n in step.places]
            for place, commit in zip(step.places, own, strict=True):
                by = co.run("log", "-1", "--format=%an <%ae>", commit).strip()
                if by != who:
                    raise WorkspaceError(
                        f"{series.patches[place - 1].listed_as}: its commit "
                        f"{commit[:12]} is authored by {by}, not {who}: "
                        "'kdl revert' and 'kdl apply' again"
                    )
            places = [*step.carries, *step.places]
            tip = branch_commit(
                co,
                base,
                [(n, commits[n - 1]) for n in places],
                commits,
                shown(series.path),
            )
            title, body = _body(co, own)
            planned.append(
                Planned(
                    patch=step.patches[0],
                    commit=tip,
                    title=title,
                    body=body,
                    branch=step.branch,
                    head=step.head,
                    base=step.base,
                    places=step.places,
                    after=step.after,
                    carried=len(step.carries),
                    after_rfc=rfc,
                )
            )
    return planned, comments, str(doc["branch"]), base


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


def pr_body(item: Planned, depends: list[tuple[str, int | None]]) -> str:
    """*item*'s body, with ``Depends on`` each pull request it carries
    (by number, or by branch where it has none yet)."""
    body = item.body
    lines = [
        f"Depends on #{number}"
        if number is not None
        else f"Depends on the pull request of {branch}"
        for branch, number in depends
    ]
    if lines:
        body += "\n\n" + "\n".join(lines)
    if item.carried:
        first = "commit" if item.carried == 1 else f"{item.carried} commits"
        verb = "is" if item.carried == 1 else "are"
        own = len(item.places)
        last = "commit" if own == 1 else f"{own} commits"
        body += (
            f"\n\nThe first {first} here {verb} from what it depends on, until "
            f"that lands; this pull request's own change is the last {last}."
        )
    return body.strip() + "\n"


def comment_text(comment: Comment, by_place: dict[int, Planned], really: bool) -> str:
    """The comment's Markdown with its ``{{pr N}}`` slots filled."""

    def fill(m: re.Match[str]) -> str:
        n = int(m.group(1))
        pr = by_place.get(n)
        if pr is not None and pr.number is not None:
            return f"#{pr.number}"
        if really:
            raise WorkspaceError(
                f"{shown(comment.file)}: names the pull request of {n:04d}, "
                "which is not posted yet: post it first"
            )
        return f"#<the pull request of {n:04d}>"

    try:
        text = comment.file.read_text()
    except OSError as exc:
        raise WorkspaceError(
            f"{shown(comment.file)}: cannot read: {exc.strerror}"
        ) from None
    return _SLOT.sub(fill, text).strip() + "\n"


def proposals_of(series_file: Path) -> Series | None:
    """The proposals' series beside *series_file* (proposals/series), if any."""
    path = series_file.parent / "proposals" / "series"
    return load(path) if path.is_file() else None


class GitHub:
    """The part of GitHub's REST API posting from a fork needs."""

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

    def find(self, head: str) -> dict[str, Any] | None:
        found = self._api.request(
            "GET",
            f"/repos/{self.repo}/pulls",
            params={"head": head, "state": "open"},
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

    def comment(self, number: int, text: str) -> dict[str, Any]:
        answer = self._api.request(
            "POST", f"/repos/{self.repo}/issues/{number}/comments", {"body": text}
        )
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), int):
            raise WorkspaceError("GitHub: the answer names no comment")
        return answer

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
    llvm: Path | None,
    series_file: Path,
    *,
    login: str | None,
    topic: str | None,
    remote: str | None,
    repo: str,
    api_url: str,
    really: bool,
    after_rfc: bool = False,
    env: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
    on_branch: Series | None = None,
) -> int:
    """Post the series of *series_file* from the checkout at *llvm* as its
    posting plan says. *on_branch*: what the branch carries when that is
    more than the series (the proposals on top, which are not posted)."""
    env = dict(os.environ) if env is None else env
    series = load(series_file)
    refuse_unposted(series)
    if really and llvm is None:
        raise UsageError("--post needs --llvm: the checkout that carries the series")
    token = token_from(env, Path(env.get("HOME") or Path.home()))
    if really and not token:
        raise UsageError(
            "--post needs a token: GITHUB_TOKEN, GH_TOKEN or 'gh auth login'"
        )
    who = "the checkout's git identity (--llvm names the checkout)"
    if llvm is not None:
        with Checkout(llvm) as co:
            who = author(co)
    github = GitHub(api_url, token, repo, **(options or {})) if really else None
    if login is None:
        login = github.login() if github else "<login>"
    elif not _LOGIN.match(login):
        raise UsageError(f"--login {login!r}: not a GitHub login")
    topic = topic or series.name
    steps = posting_plan(series, proposals_of(series_file), login, topic)
    fork = f"{login}'s fork of {repo}"
    if llvm is None:
        print_plan(series, who, steps, repo, fork)
        print(
            "# the requests: the plan alone (no --llvm); with --llvm CHECKOUT, "
            "the series applied there, the push and every request"
        )
        return 0
    try:
        with Checkout(llvm) as co:
            remote = fork_remote(co, remote, login)
    except UsageError as exc:
        if really:
            raise
        print_plan(series, who, steps, repo, fork)
        print(f"# the requests: {exc}")
        return 0
    if not really:
        print_plan(series, who, steps, repo, f"{fork} (remote '{remote}')")
    record_path = series_file.parent / RECORD
    record, commented = read_record(record_path)
    try:
        planned, comments, branch, base = plan(
            llvm, series, steps, who, on_branch=on_branch
        )
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
    for c in comments:
        c.url = commented.get(c.on, {}).get("url")

    # Posting goes as the plan says: what comes before its RFC, and with
    # --after-rfc what comes after it (a dry run shows them all).
    batch = [p for p in planned if p.after_rfc == after_rfc] if really else planned
    notes = [c for c in comments if c.after_rfc == after_rfc] if really else comments
    if really and not batch and not notes:
        raise UsageError(
            "nothing comes after the RFC in the plan"
            if after_rfc
            else "everything comes after the RFC: --after-rfc posts it"
        )
    args = push_args(remote, batch)
    auth = REDACTED if token else "<unset: GITHUB_TOKEN, GH_TOKEN or gh>"
    if not really:
        print(f"# dry run: {len(planned)} pull request(s) from {branch}")
        print("would run: git " + " ".join(args))
    elif batch:
        with Checkout(llvm) as co:
            co.run(*args)
        print(f"pushed {len(batch)} branch(es) to {remote}")
    by_branch = {p.branch: p for p in planned}
    for p in batch:
        depends = [(b, by_branch[b].number) for b in p.after]
        body = {"title": p.title, "body": pr_body(p, depends), "base": p.base}
        if not really:
            if p.number is not None:
                print(f"PATCH {api_url}/repos/{repo}/pulls/{p.number}")
            else:
                print(f"GET {api_url}/repos/{repo}/pulls?head={p.head}")
                print(f"POST {api_url}/repos/{repo}/pulls")
                body = {"head": p.head, **body}
            print(f"Authorization: Bearer {auth}")
            print(json.dumps(body, ensure_ascii=False))
            continue
        assert github is not None
        if p.number is None:
            existing = github.find(p.head)
            if existing is not None:
                p.number = int(existing["number"])
        if p.number is not None:
            answer = github.update(p.number, body)
            verb = "updated"
        else:
            answer = github.create({"head": p.head, **body})
            verb = "created"
        p.number, p.url = int(answer["number"]), answer.get("html_url")
        write_record(record_path, repo, planned, comments)
        print(f"{verb} #{p.number} {p.head} <- {p.patch}")
    by_place = {n: p for p in planned for n in p.places}
    for c in notes:
        if c.url is not None:
            print(f"# comment on #{c.on}: made before ({c.url}); not again")
            continue
        text = comment_text(c, by_place, really)
        if not really:
            print(f"POST {api_url}/repos/{repo}/issues/{c.on}/comments")
            print(f"Authorization: Bearer {auth}")
            print(json.dumps({"body": text}, ensure_ascii=False))
            continue
        assert github is not None
        answer = github.comment(c.on, text)
        c.url = str(answer.get("html_url") or f"comment {answer['id']}")
        write_record(record_path, repo, planned, comments)
        print(f"commented on #{c.on}: {c.url}")
    rfc = [s.rfc for s in steps if s.rfc]
    if really and rfc and not after_rfc:
        print(
            f"next: the RFC ('kdl rfc post --which {rfc[0]} --post'), then "
            "'kdl pr --post --after-rfc' for what comes after it"
        )
    return 0


def cmd_pr(args: argparse.Namespace) -> int:
    on_branch = None
    if args.llvm is None:
        series_file = (args.series or paths.SERIES).expanduser().absolute()
    else:
        choice = chosen(args)
        series_file = choice.file
        on_branch = series_of(choice) if choice.proposals else None
    return run_pr(
        args.llvm,
        series_file,
        login=args.login,
        topic=args.topic,
        remote=args.remote,
        repo=args.repo,
        api_url=args.api.rstrip("/"),
        really=args.post and not proc.DRY_RUN,
        after_rfc=args.after_rfc,
        on_branch=on_branch,
    )
