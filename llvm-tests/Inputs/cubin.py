"""Write the ELF header of a cubin: all that the CUDA plugin and the ranking read.

usage: cubin.py OUT sm_XY[a] [--abi=1|2] [--32-bit]

ptxas is not installed where the suite runs, so these are not whole cubins:
a 64-byte ELF64 header with e_machine EM_CUDA, e_type ET_EXEC and the e_flags
nvcc writes (compute capability, EF_CUDA_64BIT_ADDRESS, the arch-specific
bit), in CUDA ELF ABI version 1 (SM in bits 0-7, EF_CUDA_ACCELERATORS_V1) or
version 2 (SM in bits 8-15, EF_CUDA_ACCELERATORS). llvm-readelf names them
(sm_90a) from the same bits.
"""

import re
import struct
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = [a for a in sys.argv[1:] if a.startswith("--")]
out, arch = args
m = re.fullmatch(r"sm_(\d+)(a?)", arch)
if not m:
    sys.exit(f"cubin.py: bad arch {arch}")
sm, specific = int(m.group(1)), bool(m.group(2))
abi = 2 if "--abi=2" in flags else 1
if abi == 1:
    e_flags = sm | (0x800 if specific else 0)
else:
    e_flags = (sm << 8) | (0x8 if specific else 0)
if "--32-bit" not in flags:
    e_flags |= 0x400  # EF_CUDA_64BIT_ADDRESS
ELFOSABI_CUDA, EM_CUDA, ET_EXEC = 0x33, 190, 2
ident = b"\x7fELF" + bytes([2, 1, 1, ELFOSABI_CUDA, 6 + abi]) + bytes(7)
header = ident + struct.pack(
    "<HHIQQQIHHHHHH", ET_EXEC, EM_CUDA, 1, 0, 0, 0, e_flags, 64, 0, 0, 64, 0, 0
)
with open(out, "wb") as f:
    f.write(header)
