"""``kdl rfc``: the RFC posts for LLVM's Discourse, drafted from the results.

Layers, as in lit: :mod:`~kdl.rfc.sources` reads the workspace (series, docs
table, results), :mod:`~kdl.rfc.render` writes the Markdown,
:mod:`~kdl.rfc.check` finds what a reviewer would object to, and
:mod:`~kdl.rfc.post` talks to Discourse. :func:`draft` is what ``kdl all``
calls.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError

log = logging.getLogger("kdl")

#: The drafts, in the order they should be posted.
NAMES = ("metadata-vocabulary", "ranked-selection")


def draft(
    out_dir: Path | None = None,
    *,
    root: Path | None = None,
    github: bool = False,
    github_base: str | None = None,
) -> list[Path]:
    """Write ``rfc/out/<name>.md`` for every post; return their paths.

    Works with any subset of inputs present: what is missing is stated in the
    post ("not measured yet"). With *github* the state of the cited PRs is
    read from the GitHub API (skipped, with a note, when offline).
    """
    from kdl.rfc import render, sources

    root = (root or paths.ROOT).resolve()
    out_dir = out_dir or root / "rfc" / "out"
    src = sources.load(root)
    for note in src.notes:
        log.warning("rfc: %s", note)
    states: dict[int, str] | None = None
    if github:
        from kdl.rfc import facts
        from kdl.rfc import github as gh

        numbers = [p.number for p in facts.HISTORY]
        states = gh.pr_states(numbers, base_url=github_base or gh.API)
        if states is None:
            log.warning("rfc: GitHub not reachable; PR states as recorded in 2026-11")
    posts = render.render_all(src, states or None)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in posts.items():
        path = out_dir / name
        path.write_text(text)
        written.append(path)
        log.debug("rfc: wrote %s", path)
    return written


def _existing(out_dir: Path, which: str | None) -> list[Path]:
    names: tuple[str, ...] = NAMES
    if which:
        wanted = which.removesuffix(".md")
        if wanted not in NAMES:
            raise UsageError(f"--which: expected one of {', '.join(NAMES)}")
        names = (wanted,)
    files = [out_dir / f"{name}.md" for name in names]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise WorkspaceError(
            f"{out_dir}: no draft {', '.join(missing)} (run 'kdl rfc' first)"
        )
    return files


def cmd_rfc(args: argparse.Namespace) -> int:
    """``kdl rfc [draft|post] [--check] [--post] [--url] [--category] [--which]``."""
    from kdl.rfc import check, post

    root = paths.ROOT
    out_dir = paths.RFC_OUT
    if args.action == "post":
        files = _existing(out_dir, args.which)
        problems = check.check_files(files, root)
        if problems:
            for line in problems:
                print(line)
            raise WorkspaceError(f"{len(problems)} problems in the drafts; not posting")
        # --dry-run wins over --post: nothing leaves the machine.
        return post.cmd_post(
            files,
            url=args.url,
            category=args.category,
            really=args.post and not proc.DRY_RUN,
        )
    if args.post:
        raise UsageError("--post goes with 'kdl rfc post'")
    if args.check:
        files = _existing(out_dir, args.which)
    else:
        files = draft(out_dir, github=getattr(args, "github", False))
        if args.which:
            files = [f for f in files if f.stem == args.which.removesuffix(".md")]
    problems = check.check_files(files, root)
    for line in problems:
        print(line)
    if not args.check:
        for path in files:
            print(f"draft: {path}")
    if problems:
        return 1
    if args.check:
        print(f"rfc: {len(files)} drafts, no problems")
    return 0
