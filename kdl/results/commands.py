"""``kdl results``: turn the GPU harness's raw files into results/gpu/, and
record a run's record in results/.

``kdl results import RAW`` compacts a raw file from the device machine into
the committed input ``results/gpu/raw.json``; ``kdl results report`` regenerates
every report from the committed inputs, which CI checks it reproduces;
``kdl results record`` copies the last run's record (``build/record/``,
:mod:`kdl.record`) over ``results/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kdl import paths, record
from kdl.errors import UsageError, WorkspaceError
from kdl.files import read_regular
from kdl.results import gpufiles, gpureport, realruntimes


def cmd_results(args: argparse.Namespace) -> int:
    if args.action == "record":
        if args.raw is not None:
            raise UsageError("kdl results record takes no file")
        for path in record.record():
            print(f"recorded: {path.relative_to(paths.ROOT)}")
        return 0
    if getattr(args, "dry_run", False):
        return _dry_run(args)
    if args.action == "import":
        if args.raw is None:
            raise WorkspaceError("kdl results import needs the raw file")
        try:
            doc = json.loads(read_regular(args.raw))
        except ValueError as exc:
            raise WorkspaceError(
                f"{args.raw}: not a raw JSON file (not JSON: {exc})"
            ) from None
        if not isinstance(doc, dict):
            raise WorkspaceError(f"{args.raw}: not a raw JSON file (not a JSON object)")
        if "cost" in doc:
            raise WorkspaceError(
                f"{args.raw}: a raw file of the cost section, which measured the "
                "retired shim; nothing reads it any more"
            )
        print(gpufiles.import_raw(Path(args.raw)))
        return 0
    for path in [
        *gpufiles.write_report(),
        *realruntimes.write_report(),
        *realruntimes.write_report(realruntimes.DIR_V6),
        *(
            path
            for run in (realruntimes.DIR_V7, realruntimes.DIR_V8)
            if run.is_dir()
            for path in realruntimes.write_report(run)
        ),
    ]:
        print(path)
    return 0


def _dry_run(args: argparse.Namespace) -> int:
    """Say what the action would write; write nothing."""
    if args.action == "import" and args.raw is None:
        raise WorkspaceError("kdl results import needs the raw file")
    what = {
        "import": f"compact {args.raw} into {gpureport.RAW}",
        "report": "regenerate the reports of results/gpu/",
    }[args.action]
    print(f"dry run: kdl results {args.action} would {what}; nothing was written")
    return 0
