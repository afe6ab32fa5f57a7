"""The ``kdl`` command line: one parser, thin dispatch.

Each subcommand names a module and a function; the module is imported only
when the subcommand runs, so ``kdl inspect`` never pays for GitPython or
requests. Library code raises :class:`kdl.errors.WorkspaceError`; only
:func:`main` turns it into ``error: ...`` and an exit status (0 ok, 1 failure,
2 usage or configuration, 130 on Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kdl import __version__, paths, proc
from kdl.errors import UsageError, WorkspaceError

log = logging.getLogger("kdl")

Handler = Callable[[argparse.Namespace], int]


def _count(text: str) -> int:
    """An argparse type: a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _handler(target: str) -> Handler:
    """Return a function that imports ``module:function`` lazily and calls it."""
    module, func = target.split(":")

    def call(args: argparse.Namespace) -> int:
        try:
            mod = importlib.import_module(f"kdl.{module}")
        except ModuleNotFoundError as exc:
            if not exc.name or exc.name.split(".")[0] == "kdl":
                raise
            raise WorkspaceError(
                f"{sys.executable}: no Python package '{exc.name}', which kdl "
                "needs: run python3 scripts/<command>.py (it sets up .venv/) "
                "or .venv/bin/kdl"
            ) from None
        result: int = getattr(mod, func)(args)
        return result

    return call


def _llvm_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument(
        "--llvm",
        type=Path,
        required=required,
        metavar="PATH",
        help="an llvm-project git checkout",
    )


def _series_args(p: argparse.ArgumentParser) -> None:
    """--llvm CHECKOUT and --series FILE, what every series command takes."""
    _llvm_arg(p)
    p.add_argument("--series", type=Path, metavar="FILE", help="patches/series")


def _proposals_arg(p: argparse.ArgumentParser) -> None:
    """What goes on top of the stack: by default the proposals' first patches
    (the OffloadBinary keys and the loop's use of them), or what the branch
    carries."""
    on_top = p.add_mutually_exclusive_group()
    on_top.add_argument(
        "--posting-stack",
        action="store_true",
        help="the posted series alone, without patches/proposals on top",
    )
    on_top.add_argument(
        "--proposals",
        action="store_true",
        help="with every patch of patches/proposals on top (also "
        "#gpu.runtime_select; by default only variant_priority and variant_tag)",
    )


def _global_flags(p: argparse.ArgumentParser, default: object) -> None:
    """-v, -q and --dry-run, which every command honours."""
    p.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="debug output"
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="errors only"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        default=default,
        help="print the commands that would change anything instead of running "
        "them; nothing is sent or written",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kdl",
        description="Ranked OffloadBinary image selection for LLVM: apply, "
        "build, test and argue for the kdl patch series.",
    )
    parser.add_argument("--version", action="version", version=f"kdl {__version__}")
    _global_flags(parser, argparse.SUPPRESS)
    parser.set_defaults(verbose=False, quiet=False, dry_run=False)
    # The same flags after the subcommand (kdl apply --dry-run ...): a
    # subcommand sets them only when given there, so either place works.
    common = argparse.ArgumentParser(add_help=False)
    _global_flags(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, target: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, parents=[common])
        p.set_defaults(func=_handler(target))
        return p

    # --- OffloadBinary files ------------------------------------------------
    p = add(
        "inspect",
        "offload.inspect:cmd_inspect",
        "list every OffloadBinary image in FILE",
    )
    # str, not Path: Path("") would be ".", and an empty path names no file.
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    _limit_args(p)

    p = add(
        "select",
        "offload.select:cmd_select",
        "rank the images of FILE for a device with the series' C++ library",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--device",
        required=True,
        metavar="triple=T,arch=A[,feature=F...]",
        help="the device to select for",
    )
    p.add_argument(
        "--tag",
        metavar="TAG",
        help="accepted and ignored with a note: nothing chooses by a variant_tag",
    )
    p.add_argument(
        "--posting-stack",
        action="store_true",
        help="order as the posted series alone (without the proposals' "
        "variant_priority, which kdl apply applies by default)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--build-dir", type=Path, metavar="DIR", help="overlay build dir")
    _limit_args(p)

    # --- The series on an llvm-project checkout ------------------------------
    p = add(
        "apply",
        "series.commands:cmd_apply",
        "apply the series to an llvm-project checkout, with the OffloadBinary "
        "keys of patches/proposals on top (--posting-stack: without)",
    )
    _series_args(p)
    _proposals_arg(p)
    p.add_argument("--branch", metavar="NAME", help="branch to create (kdl/<series>)")
    p.add_argument("--base", metavar="REV", help="revision to branch from (HEAD)")
    p.add_argument(
        "--keep-conflicts",
        action="store_true",
        help="on a conflict, leave the 3-way merge in place for manual resolution",
    )
    p.add_argument(
        "--recover",
        action="store_true",
        help="only undo what an apply that was killed left behind",
    )

    p = add("check", "series.commands:cmd_check", "report how each patch would apply")
    _series_args(p)
    _proposals_arg(p)
    p.add_argument("--base", metavar="REV", help="revision to check against (HEAD)")

    p = add("status", "series.commands:cmd_status", "which patches are on the branch")
    _series_args(p)
    _proposals_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("revert", "series.commands:cmd_revert", "remove the series' commits")
    _series_args(p)
    _proposals_arg(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="also drop commits that were added on top of the series",
    )

    p = add("export", "series.commands:cmd_export", "rewrite patches/ from the branch")
    _series_args(p)
    _proposals_arg(p)
    p.add_argument(
        "-m",
        "--message",
        metavar="TEXT",
        help="the changelog line of a new version (default: what changed)",
    )

    p = add(
        "range-diff",
        "series.commands:cmd_range_diff",
        "git range-diff between two versions of the series, applied to the checkout",
    )
    _series_args(p)
    p.add_argument("old", metavar="OLD", help="a version: N or vN")
    p.add_argument(
        "new",
        nargs="?",
        metavar="NEW",
        help="a version (default: the files as they are)",
    )

    p = add(
        "pr",
        "series.pr:cmd_pr",
        "post the applied series from your fork as pull requests into "
        "llvm/llvm-project main, as its posting plan says (dry run by default)",
    )
    _llvm_arg(p, required=False)
    p.add_argument(
        "--series", type=Path, metavar="FILE", help="patches/series [without --llvm]"
    )
    p.add_argument(
        "--login", metavar="LOGIN", help="your GitHub login, the fork's owner (asked)"
    )
    p.add_argument("--topic", metavar="NAME", help="branch topic (the series name)")
    p.add_argument(
        "--remote",
        metavar="NAME",
        help="your fork's remote [the one remote that is not llvm/llvm-project]",
    )
    p.add_argument("--repo", default="llvm/llvm-project", metavar="OWNER/NAME")
    p.add_argument("--api", default="https://api.github.com", metavar="URL")
    p.add_argument("--post", action="store_true", help="really push and send")
    p.add_argument(
        "--after-rfc",
        action="store_true",
        help="with --post: what the plan posts after the RFC "
        "(without it, what comes before it)",
    )

    # --- The real trees --------------------------------------------------------
    p = add(
        "tree",
        "trees:cmd_tree",
        "make or reuse the real LLVM trees: 'main' (a sid root with LLVM main's "
        "snapshot packages) and '22' (the LLVM 22.1.8 source as a git repository)",
    )
    p.add_argument("name", nargs="*", metavar="NAME", help="main, 22 [both]")
    p.add_argument(
        "--pin",
        metavar="VERSION",
        help="move the main tree to another snapshot version (rewrites trees.json)",
    )
    p.add_argument("--json", action="store_true", help="print the trees' records")

    # --- Build and test --------------------------------------------------------
    p = add(
        "build",
        "build.llvm:cmd_build",
        "build the series: in an llvm-project checkout, or the overlay "
        "against Debian's LLVM 22",
    )
    _llvm_arg(p, required=False)
    p.add_argument("--build-dir", type=Path, metavar="DIR", help="build directory")
    p.add_argument("-j", "--jobs", type=_count, metavar="N", help="parallel jobs")
    p.add_argument(
        "--full",
        action="store_true",
        help="configure the whole LLVM build even where the checkout's version "
        "is an installed LLVM's (the default then builds offload standalone)",
    )

    p = add(
        "test", "build.lit:cmd_test", "run the llvm-tests lit suite (and check-offload)"
    )
    p.add_argument("--build-dir", type=Path, metavar="DIR", help="LLVM build directory")
    p.add_argument(
        "--check-offload", action="store_true", help="also run ninja check-offload"
    )
    p.add_argument(
        "--llvm",
        type=Path,
        metavar="PATH",
        help="with --check-offload: a checkout with the series applied whose "
        "version is an installed LLVM's; builds it and its base standalone and "
        "compares check-offload and check-offload-unit test by test",
    )
    p.add_argument("--filter", metavar="REGEX", help="LIT_FILTER for both suites")
    p.add_argument(
        "--main",
        action="store_true",
        help="run the suite with LLVM main's tools (the main tree, made if "
        "needed) instead of the installed LLVM's",
    )

    p = add(
        "bench-readers",
        "results.readers:cmd_bench_readers",
        "peak memory of both OffloadBinary readers on the hostile corpus",
    )
    p.add_argument(
        "--output", type=Path, metavar="FILE", help="results/readers/peak-rss.json"
    )
    p.add_argument(
        "--small", action="store_true", help="leave out the large files (GiB bombs)"
    )

    p = add(
        "results",
        "results.commands:cmd_results",
        "import a GPU raw file, regenerate the GPU reports in results/gpu/, or "
        "record the last run's record (build/record/) in results/",
    )
    p.add_argument("action", choices=["import", "report", "record"])
    p.add_argument("raw", nargs="?", type=Path, metavar="RAW", help="with import")

    p = add("rfc", "rfc:cmd_rfc", "draft the RFC posts from the measured results")
    p.add_argument("--check", action="store_true", help="validate the drafts only")
    p.add_argument("action", nargs="?", choices=["draft", "post"], default="draft")
    p.add_argument("--post", action="store_true", help="really send (with 'post')")
    p.add_argument("--url", metavar="URL", help="Discourse base URL")
    p.add_argument("--category", type=int, metavar="ID", help="Discourse category id")
    p.add_argument("--which", metavar="NAME", help="which draft to post")
    p.add_argument(
        "--github",
        action="store_true",
        help="read the state of the cited PRs from api.github.com (skipped offline)",
    )
    p.add_argument(
        "--build-dir",
        type=Path,
        metavar="DIR",
        help="draft from this build's own check-offload and check-offload-unit "
        "runs and its checkout's series version (GPU figures of other versions "
        "marked)",
    )

    p = add(
        "fuzz",
        "fuzz:cmd_fuzz",
        "run libFuzzer (ASan, UBSan) on the series' rank, the model of the "
        "plugins' acceptance and the container reader",
    )
    p.add_argument(
        "--seconds", type=_count, default=60, metavar="N", help="how long [60]"
    )

    # --- The two README commands ----------------------------------------------
    p = add(
        "all",
        "workflow:cmd_all",
        "the main job: build against LLVM 22, run the lit suite, draft the RFC",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="when the run passes, copy its record (build/record/) over "
        "results/ (the default changes no tracked file)",
    )
    p = add(
        "selftest",
        "workflow:cmd_selftest",
        "lint, build and test: the fast tier, or with --full what CI runs",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="the whole suite: pytest's slow tests too, the fuzzer for 60 s "
        "instead of 10 s (what .ci/run runs)",
    )
    return parser


def _setup_logging(verbose: bool, quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.DEBUG if verbose else logging.ERROR if quiet else logging.INFO)
    log.propagate = False


def _check_workspace(program: str) -> None:
    """Refuse to run from the .venv of another (copied or moved) workspace:
    its console script runs this package, which would write here."""
    script = Path(program).absolute()
    # Only kdl's own console script: a test runner in the same .venv runs
    # kdl.cli.main with a workspace of its own.
    if script.name == "kdl" and script.parent.parent.name == ".venv":
        workspace = script.parent.parent.parent
        if workspace.resolve() != paths.ROOT.resolve():
            raise UsageError(
                f"{script} runs the kdl of {paths.ROOT}: {workspace} was copied or "
                "moved; run a script there (python3 scripts/selftest.py ...) to "
                "rebuild its .venv"
            )


def _limit_args(p: argparse.ArgumentParser) -> None:
    """The bounds of the OffloadBinary readers for one whole input."""
    p.add_argument(
        "--max-inflated",
        type=int,
        metavar="BYTES",
        help="what the input's compressed binaries may inflate to in all "
        "(default 67108864: 64 MiB)",
    )
    p.add_argument(
        "--max-binaries",
        type=int,
        metavar="N",
        help="how many OffloadBinaries, and how many images, the input may "
        "hold (default 4096)",
    )
    p.add_argument(
        "--max-strings",
        type=int,
        metavar="N",
        help="how many key=value strings its images may hold in all (default 65536)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help, 2 for usage
        return int(exc.code or 0)
    _setup_logging(args.verbose, args.quiet)
    proc.DRY_RUN = args.dry_run
    try:
        _check_workspace(sys.argv[0])
        func: Handler = args.func
        return func(args)
    except WorkspaceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
