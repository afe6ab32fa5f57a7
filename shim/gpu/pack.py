"""Pack the nvcc outputs of run-liboffload-cuda.sh into OffloadBinaries.

Uses kdl's writer (kdl.offload): multi-v1.bin (four version 1 binaries,
concatenated), multi-v2.bin (one version 2 binary with four entries) and
old-only.bin (the sm_75 and sm_80 cubins only). Run in the directory that
holds k75.cubin, k80.cubin, k90.cubin and k75.ptx.
"""

from pathlib import Path

from kdl.offload.binary import write_v1, write_v2
from kdl.offload.layout import Image, make_image

TRIPLE = "nvptx64-nvidia-cuda"
CUBIN = 3  # ImageKind IMG_Cubin
PTX = 5  # ImageKind IMG_PTX


def image(path: str, kind: int, arch: str, *extra: tuple[str, str]) -> Image:
    strings = [("triple", TRIPLE), ("arch", arch), *extra]
    return make_image(
        Path(path).read_bytes(), strings, kind=kind, offload_kind="openmp"
    )


def main() -> None:
    images = [
        image("k75.cubin", CUBIN, "sm_75"),
        image("k80.cubin", CUBIN, "sm_80", ("variant_priority", "1")),
        image("k75.ptx", PTX, "compute_75", ("variant_tag", "ptx")),
        image("k90.cubin", CUBIN, "sm_90", ("variant_tag", "native")),
    ]
    Path("multi-v1.bin").write_bytes(write_v1(images))
    Path("multi-v2.bin").write_bytes(write_v2(images))
    Path("old-only.bin").write_bytes(write_v1(images[:2]))


if __name__ == "__main__":
    main()
