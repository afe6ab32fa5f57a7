"""Re-pack every image of an OffloadBinary file as ONE version 2 binary.

Used by gpu/prepare.sh: ``python gpu/pack_v2.py IN OUT``. The images, their
order and their string maps are kept; only the container changes (several
entries in one binary, the format upstream main writes). Reads and writes
through the package's own reader and writer (kdl.offload.binary).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kdl.offload import binary


def main(argv: list[str]) -> int:
    src, dst = argv
    images = binary.read_file(src)
    Path(dst).write_bytes(binary.write_v2(images))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
