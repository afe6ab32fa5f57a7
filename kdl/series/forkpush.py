"""The git side of posting from a fork: which remote is the fork, and the
commit each pull request's branch points at.

A contributor without commit access pushes to their own fork of
llvm/llvm-project and opens pull requests from it into main. The fork is
the remote ``--remote`` names, else the one remote whose URL is not
llvm/llvm-project (where several are, the one under the poster's login).

A pull request's branch holds its own commits on the series' base, after
the commits of the earlier patches it carries, and no others: a fix posted
on its own must not bring the patches before it in the series into its
diff. Where those are the series' first commits, the branch is the
series' own commit; otherwise the commits are made again on the base, each
change applied with ``git apply --3way`` to a temporary index (the user's
index, HEAD and work tree are never touched) and committed with the
original's author, committer, dates and message, so that the same series
gives the same commits every run.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from kdl.errors import UsageError, WorkspaceError
from kdl.series.checkout import Checkout

#: The URL of llvm/llvm-project itself (https, ssh, scp-like, a mirror).
_UPSTREAM = re.compile(r"[:/]llvm/llvm-project(?:\.git)?/*$", re.IGNORECASE)


def _remotes(co: Checkout) -> dict[str, str]:
    names = co.run("remote").split()
    return {n: co.run("remote", "get-url", "--push", n).strip() for n in names}


def fork_remote(co: Checkout, named: str | None, login: str) -> str:
    """The remote the branches are pushed to: the fork, never upstream."""
    remotes = _remotes(co)
    add = f"git remote add fork git@github.com:{login}/llvm-project.git"
    if named is not None:
        if named not in remotes:
            listed = ", ".join(remotes) or "none"
            raise UsageError(
                f"--remote {named}: {co.root} has no such remote "
                f"(its remotes: {listed})"
            )
        if _UPSTREAM.search(remotes[named]):
            raise UsageError(
                f"--remote {named} is llvm/llvm-project itself ({remotes[named]}): "
                f"its branches need commit access; push to your fork ({add})"
            )
        return named
    forks = [n for n, url in remotes.items() if not _UPSTREAM.search(url)]
    if len(forks) == 1:
        return forks[0]
    if not forks:
        raise UsageError(
            f"{co.root}: no remote is a fork of llvm/llvm-project (each points "
            f"at llvm/llvm-project or there is none): {add}, or name one with --remote"
        )
    login_url = re.compile(rf"[:/]{re.escape(login)}/", re.IGNORECASE)
    mine = [n for n in forks if login_url.search(remotes[n])]
    if len(mine) == 1:
        return mine[0]
    raise UsageError(
        f"{co.root}: several remotes could be your fork ({', '.join(forks)}): "
        "name one with --remote"
    )


def _identity_env(co: Checkout, commit: str) -> dict[str, str]:
    fields = co.run(
        "log",
        "-1",
        "--date=raw",
        "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd",
        commit,
    ).split("\0")
    whose = ("AUTHOR", "COMMITTER")
    keys = [f"{w}_{f}" for w in whose for f in ("NAME", "EMAIL", "DATE")]
    return {f"GIT_{k}": v for k, v in zip(keys, fields, strict=True)}


def branch_commit(
    co: Checkout,
    base: str,
    commits: list[tuple[int, str]],
    series_commits: list[str],
    where: str,
) -> str:
    """The commit a pull request's branch points at: *commits* ((place in
    the series, commit) in series order) on *base*. *series_commits* are the series'
    own, in order: where *commits* are their first ones, the last of them."""
    ids = [c for _, c in commits]
    if ids == series_commits[: len(ids)]:
        return ids[-1]
    with tempfile.TemporaryDirectory(prefix="kdl-pr-") as scratch:
        tmp = Path(scratch)
        env = {"GIT_INDEX_FILE": str(tmp / "index")}
        co.run("read-tree", base, env=env)
        parent = base
        for i, (place, commit) in enumerate(commits):
            change = tmp / "change.diff"
            co.run(
                "diff-tree",
                "-p",
                "--binary",
                "--full-index",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                f"--output={change}",
                f"{commit}^",
                commit,
            )
            status, _, _ = co.attempt(
                "apply", "--cached", "--3way", str(change), env=env
            )
            if status != 0:
                before = ", ".join(f"{n:04d}" for n, _ in commits[:i]) or "none"
                raise WorkspaceError(
                    f"{where}: {place:04d} does not apply on {base[:12]} with only "
                    f"the patches its pull request carries before it ({before}): "
                    f"add '{place} after N' to its post: line"
                )
            tree = co.run("write-tree", env=env).strip()
            message = tmp / "message"
            text = co.run("cat-file", "commit", commit).partition("\n\n")[2]
            message.write_text(text + "\n")
            parent = co.run(
                "commit-tree",
                tree,
                "-p",
                parent,
                "-F",
                str(message),
                env=_identity_env(co, commit),
            ).strip()
    return parent
