"""Pack images into one OffloadBinary of format version 2 (kdl's writer).

usage: pack-v2.py -o OUT --image=file=F,triple=T,arch=A,kind=K[,key=value]...

The --image syntax is llvm-offload-binary's: the image kind comes from the
file extension (.o .bc .cubin .fatbin .s .spv), "kind" is the offload kind,
a repeated key is joined with commas, and every other key=value goes into
the string map in the order given. Two extras for version 2 entries:
"flags=N" sets the entry flags (1 = OIF_Metadata) and "file" may be left
out for an entry without an image.
"""

import argparse
import sys
from pathlib import Path

from kdl.offload.binary import make_image, write_v2

EXTENSIONS = {
    ".o": "o",
    ".bc": "bc",
    ".cubin": "cubin",
    ".fatbin": "fatbin",
    ".s": "s",
    ".spv": "spv",
}


def image(spec):
    strings = {}
    data, kind, offload_kind, flags = b"", "none", "none", 0
    for field in spec.split(","):
        key, _, value = field.partition("=")
        if key == "file":
            data = Path(value).read_bytes()
            kind = EXTENSIONS.get(Path(value).suffix, "none")
        elif key == "kind":
            offload_kind = value
        elif key == "flags":
            flags = int(value, 0)
        elif key in strings:
            strings[key] += "," + value
        else:
            strings[key] = value
    return make_image(
        data, list(strings.items()), kind=kind, offload_kind=offload_kind, flags=flags
    )


parser = argparse.ArgumentParser()
parser.add_argument("-o", required=True, dest="output")
parser.add_argument("--image", action="append", required=True)
args = parser.parse_args()
with open(args.output, "wb") as out:
    out.write(write_v2([image(spec) for spec in args.image]))
sys.exit(0)
