"""Write the harness's host module: one gpu.binary and one launch.

    host_module.py HANDLER OUT OBJECT_FILE...

Each OBJECT_FILE is gpu-module-to-binary's output for one target; its one
``#gpu.object<...>`` becomes an object of ``gpu.binary @kernels``, in the
order given. HANDLER is the offloading handler as MLIR spells it
(``#kdl_gpu.runtime_select``, the overlay's spelling, or
``#gpu.select_object<1>``). The host function ``kdl_run`` launches
``@kernels::@mark`` on one thread.
"""

import re
import sys
from pathlib import Path

OBJECT = re.compile(r"gpu\.binary @kernels\s*\[(#gpu\.object<.*>)\]\s*$", re.MULTILINE)

HOST = """module attributes {{gpu.container_module}} {{
  gpu.binary @kernels <{handler}> [
    {objects}
  ]
  llvm.func @kdl_run() {{
    %c1 = llvm.mlir.constant(1 : index) : i64
    gpu.launch_func @kernels::@mark
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64
    llvm.return
  }}
}}
"""


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: host_module.py HANDLER OUT OBJECT_FILE...", file=sys.stderr)
        return 2
    handler, out, files = argv[0], Path(argv[1]), argv[2:]
    objects = []
    for name in files:
        found = OBJECT.search(Path(name).read_text())
        if not found:
            print(f"host_module.py: {name}: no gpu.binary @kernels", file=sys.stderr)
            return 1
        objects.append(found.group(1))
    out.write_text(HOST.format(handler=handler, objects=",\n    ".join(objects)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
