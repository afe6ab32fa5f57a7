"""Write the ELF header of a cubin: all that the CUDA plugin and the ranking read.

usage: cubin.py OUT sm_XY[a] [--abi=1|2] [--32-bit]

ptxas is not installed where the suite runs, so these are not whole cubins:
a 64-byte ELF64 header with e_machine EM_CUDA, e_type ET_EXEC and the e_flags
nvcc writes (kdl.offload.elf.cubin_header). llvm-readelf names them (sm_90a)
from the same bits.
"""

import re
import sys

from kdl.offload.elf import cubin_header

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = [a for a in sys.argv[1:] if a.startswith("--")]
out, arch = args
if not re.fullmatch(r"sm_\d+a?", arch):
    sys.exit(f"cubin.py: bad arch {arch}")
header = cubin_header(
    arch, abi=2 if "--abi=2" in flags else 1, bits64="--32-bit" not in flags
)
with open(out, "wb") as f:
    f.write(header)
