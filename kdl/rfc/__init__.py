"""``kdl rfc``: the RFC posts for LLVM's Discourse, drafted from the results.

Each post is a Markdown template under ``rfc/templates/`` whose figures are
slots naming the result they come from (:mod:`~kdl.rfc.template`);
:func:`draft` fills them into ``rfc/out/<name>.md`` and records every figure
in a sidecar beside it. :mod:`~kdl.rfc.check` finds what a reviewer would
object to, and :mod:`~kdl.rfc.post` talks to Discourse.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from pathlib import Path
from typing import Any

from kdl import paths, proc
from kdl.errors import UsageError, WorkspaceError

log = logging.getLogger("kdl")

#: The posts, in the order they should be posted.
NAMES = ("ranked-selection", "metadata-vocabulary", "runtime-select")

_PR_LINK = re.compile(r"github\.com/llvm/llvm-project/pull/(\d+)")


def draft(
    out_dir: Path | None = None,
    *,
    root: Path | None = None,
    github: bool = False,
    github_base: str | None = None,
    record: Path | None = None,
    build_dir: Path | None = None,
) -> list[Path]:
    """Write ``rfc/out/<name>.md`` and its sidecar for every post; their paths.

    With *record* (the run's record, :mod:`kdl.record`), a figure from
    ``results/`` comes from the run's file where the run wrote one; the
    sidecar names the file each figure came from.

    With *build_dir* (``kdl rfc --build-dir``), the test counts come from
    that build's own runs of check-offload and check-offload-unit
    (:mod:`kdl.rfc.buildresults`, written to ``OUT_DIR/build/``); each
    figure of a GPU run of another series version than the checkout's is
    marked, and each post ends with the GPU runs it reads, their card and
    date (:mod:`kdl.rfc.runs`).

    A slot whose source is missing or does not resolve stops the draft with
    the template's file and line. With *github*, the state of each pull
    request a post links is read from the GitHub API and compared with the
    state recorded in :mod:`kdl.rfc.facts` (a warning when it changed).
    """
    from kdl.rfc import template
    from kdl.rfc.figures import Resolver, SourceError
    from kdl.rfc.quotes import QUOTE_RENDERERS

    root = (root or paths.ROOT).resolve()
    out_dir = out_dir or root / "rfc" / "out"
    context = _build_context(build_dir, root, out_dir) if build_dir else None
    instead = {context.replaces: context.counts} if context else None
    resolver = Resolver(root, QUOTE_RENDERERS, record, instead)
    marks = context.mark if context else None
    rendered: dict[str, template.Rendered] = {}
    for name in NAMES:
        source = root / "rfc" / "templates" / f"{name}.md"
        where = source.relative_to(root).as_posix()
        try:
            rendered[name] = template.render(source.read_text(), resolver, where, marks)
        except OSError as exc:
            raise WorkspaceError(
                f"{where}: cannot read the template ({exc.strerror})"
            ) from None
        except SourceError as exc:
            raise WorkspaceError(str(exc)) from None
    if github:
        _warn_changed_prs([r.text for r in rendered.values()], github_base)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, post in rendered.items():
        path = out_dir / f"{name}.md"
        if context:
            post.text += context.details(post)
        path.write_text(post.text)
        sidecar = post.sidecar(path.name, f"rfc/templates/{name}.md")
        if context:
            sidecar["context"] = context.sidecar
        template.sidecar_path(path).write_text(json.dumps(sidecar, indent=1) + "\n")
        written.append(path)
        log.debug("rfc: wrote %s", path)
    return written


def _build_context(build_dir: Path, root: Path, out_dir: Path) -> Any:
    """What drafting from *build_dir* needs (:class:`kdl.rfc.runs.Context`)."""
    from kdl.rfc import buildresults, runs

    found = buildresults.read(build_dir, root / "patches")
    for note in found.notes:
        log.warning("rfc: %s", note)
    counts = out_dir / "build" / "check-offload.json"
    counts.parent.mkdir(parents=True, exist_ok=True)
    counts.write_text(json.dumps(found.doc, indent=1) + "\n")
    build = found.doc["build"]
    log.info(
        "rfc: counts of %s (%s, %s at %s, ran %s)",
        build_dir,
        build["series_label"],
        build["branch"],
        build["head"][:12],
        build["ran"],
    )
    return runs.Context(root, found.version, counts, buildresults.REPLACES, build)


def _warn_changed_prs(texts: list[str], base: str | None) -> None:
    import kdl.rfc.github as gh
    from kdl.rfc import facts

    numbers = sorted({int(n) for t in texts for n in _PR_LINK.findall(t)})
    states = gh.pr_states(numbers, base_url=base or gh.API)
    if states is None:
        log.warning("rfc: GitHub not reachable; PR states as recorded in 2026-11")
        return
    recorded = {p.number: p.state for p in facts.HISTORY}
    for number, state in sorted(states.items()):
        if recorded.get(number) not in (None, state):
            log.warning(
                "rfc: #%d is %s now (recorded: %s); check what the posts say of it",
                number,
                state,
                recorded[number],
            )


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
    """``kdl rfc [draft|post] [--check] [--post] [--url] [--category] [--which]
    [--build-dir DIR]``."""
    from kdl.rfc import check, post

    root = paths.ROOT
    out_dir = paths.RFC_OUT
    if args.action == "post":
        if getattr(args, "build_dir", None) is not None:
            raise UsageError("--build-dir goes with 'kdl rfc' (draft)")
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
    build_dir = getattr(args, "build_dir", None)
    if args.check:
        if build_dir is not None:
            raise UsageError("--build-dir drafts; --check checks the drafts there are")
        files = _existing(out_dir, args.which)
    else:
        files = draft(
            out_dir, github=getattr(args, "github", False), build_dir=build_dir
        )
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
