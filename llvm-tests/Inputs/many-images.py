"""Write N cubins and an llvm-offload-binary response file that packs them.

usage: many-images.py PREFIX COUNT EXACT OUT

Every image is an sm_80 cubin except image EXACT, an sm_89 cubin; every
third image is for sm_90 instead (rejected on 8.x). The response file packs
them, in that order, into OUT. The cubins are ELF headers (see cubin.py).
"""

import os
import subprocess
import sys

prefix, count, exact, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cubin = os.path.join(os.path.dirname(__file__), "cubin.py")
print("-o")
print(out)
for i in range(count):
    if i == exact:
        arch = "sm_89"
    elif i % 3 == 2:
        arch = "sm_90"
    else:
        arch = "sm_80"
    path = f"{prefix}.{i}.cubin"
    subprocess.run([sys.executable, cubin, path, arch], check=True)
    print(
        f"--image=file={path},triple=nvptx64-nvidia-cuda,arch={arch},kind=openmp,"
        f"variant_tag=image{i}"
    )
