#!/usr/bin/env python3
"""Inspect what an OpenMP offload executable/object hands to libomptarget.

  offdesc.py FILE...

For every FILE (ELF64 LE):
  * walks the .llvm.offloading section container by container (OffloadBinary
    header: magic 10 FF 10 AD, u32 Version, u64 Size, u64 EntriesOffset,
    u64 EntriesCount, u64 InflatedSize; Entry: u16 ImageKind, u16 OffloadKind,
    u32 Flags, u64 StringOffset, u64 NumStrings, u64 ImageOffset, u64 ImageSize;
    StringEntry (v>=2): u64 KeyOffset, u64 ValueOffset, u64 ValueSize),
    printing every entry's strings;
  * if the symbol .omp_offloading.descriptor exists (linked executable), reads
    the __tgt_bin_desc {i32 NumDeviceImages, ptr DeviceImages, ptr EntriesBegin,
    ptr EntriesEnd} and each __tgt_device_image {ImageStart, ImageEnd,
    EntriesBegin, EntriesEnd}, resolving the pointers through R_X86_64_RELATIVE
    relocations (PIE), and says where each ImageStart/ImageEnd points: which
    container, which entry, and whether it is the container header or the raw
    inner image.
"""
import struct, sys

IMG_KIND = {0: "none", 1: "object", 2: "bitcode", 3: "cubin", 4: "fatbinary", 5: "ptx", 6: "spirv"}
OFK = {0: "none", 1: "openmp", 2: "cuda", 4: "hip", 8: "sycl"}
EM = {62: "x86_64", 190: "CUDA", 224: "AMDGPU"}


class Elf:
    def __init__(self, path):
        self.d = d = open(path, "rb").read()
        assert d[:4] == b"\x7fELF" and d[4] == 2 and d[5] == 1, "ELF64 LE only"
        (self.type, self.machine) = struct.unpack_from("<HH", d, 16)
        shoff, = struct.unpack_from("<Q", d, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
        self.secs = []
        for i in range(shnum):
            name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", d, shoff + i * shentsize)
            self.secs.append(dict(name=name, type=typ, addr=addr, off=off, size=size, link=link, entsize=entsize))
        stro = self.secs[shstrndx]["off"]
        for s in self.secs:
            s["name"] = self.cstr(stro + s["name"])

    def cstr(self, off):
        return self.d[off:self.d.index(b"\0", off)].decode()

    def sec(self, name):
        for s in self.secs:
            if s["name"] == name:
                return s
        return None

    def symbols(self):
        out = {}
        for s in self.secs:
            if s["type"] != 2:  # SHT_SYMTAB
                continue
            stro = self.secs[s["link"]]["off"]
            for i in range(s["size"] // 24):
                nm, info, other, shndx, val, size = struct.unpack_from("<IBBHQQ", self.d, s["off"] + i * 24)
                out[self.cstr(stro + nm)] = (val, size)
        return out

    def relative_relocs(self):
        rel = {}
        for s in self.secs:
            if s["type"] != 4:  # SHT_RELA
                continue
            for i in range(s["size"] // 24):
                off, info, add = struct.unpack_from("<QQq", self.d, s["off"] + i * 24)
                if info & 0xFFFFFFFF == 8:  # R_X86_64_RELATIVE
                    rel[off] = add
        return rel

    def vaddr_to_off(self, va):
        for s in self.secs:
            if s["addr"] and s["type"] != 8 and s["addr"] <= va < s["addr"] + s["size"]:
                return s["off"] + va - s["addr"]
        return None


def parse_container(d, base):
    magic = d[base:base + 4]
    if magic != b"\x10\xff\x10\xad":
        return None
    ver, size, eoff, ecount, infl = struct.unpack_from("<IQQQQ", d, base + 4)
    ents = []
    for e in range(ecount):
        eb = base + eoff + e * 40
        ik, ok, fl, soff, nstr, ioff, isz = struct.unpack_from("<HHIQQQQ", d, eb)
        strings = {}
        for k in range(nstr):
            sb = base + soff + k * (24 if ver >= 2 else 16)
            ko, vo = struct.unpack_from("<QQ", d, sb)
            key = d[base + ko:d.index(b"\0", base + ko)].decode()
            if ver >= 2:
                vs, = struct.unpack_from("<Q", d, sb + 16)
                val = d[base + vo:base + vo + vs].rstrip(b"\0").decode(errors="replace")
            else:
                val = d[base + vo:d.index(b"\0", base + vo)].decode()
            strings[key] = val
        inner = d[base + ioff:base + ioff + 4]
        ents.append(dict(kind=IMG_KIND.get(ik, ik), producer=OFK.get(ok, ok), flags=fl, ioff=ioff, isz=isz,
                         strings=strings, inner_magic=inner.hex()))
    return dict(ver=ver, size=size, ecount=ecount, infl=infl, ents=ents)


def main(path):
    e = Elf(path)
    print(f"=== {path}  (ELF type {e.type}, machine {EM.get(e.machine, e.machine)})")
    s = e.sec(".llvm.offloading")
    containers = []
    if not s:
        print("  no .llvm.offloading section")
    else:
        pos, end, n = s["off"], s["off"] + s["size"], 0
        print(f"  .llvm.offloading: file off 0x{s['off']:x} addr 0x{s['addr']:x} size {s['size']}")
        while pos < end:
            c = parse_container(e.d, pos)
            if c is None:
                pos += 1  # padding
                continue
            vstart = s["addr"] + (pos - s["off"]) if s["addr"] else None
            containers.append((pos, vstart, c))
            print(f"  container[{n}] @+{pos - s['off']} (vaddr {hex(vstart) if vstart else '-'}): "
                  f"version {c['ver']}, size {c['size']}, EntriesCount {c['ecount']}")
            for i, en in enumerate(c["ents"]):
                st = ", ".join(f"{k}={v}" for k, v in en["strings"].items())
                print(f"      entry[{i}] kind={en['kind']} producer={en['producer']} image@+{en['ioff']} "
                      f"size {en['isz']} inner-magic {en['inner_magic']}  {{{st}}}")
            pos += c["size"]
            n += 1
    syms = e.symbols()
    if ".omp_offloading.descriptor" not in syms:
        return
    rel = e.relative_relocs()

    def ptr(va):
        if va in rel:
            return rel[va]
        return struct.unpack_from("<Q", e.d, e.vaddr_to_off(va))[0]

    dva = syms[".omp_offloading.descriptor"][0]
    num, = struct.unpack_from("<i", e.d, e.vaddr_to_off(dva))
    imgs = ptr(dva + 8)
    print(f"  __tgt_bin_desc @0x{dva:x}: NumDeviceImages={num}, DeviceImages=0x{imgs:x}")
    for i in range(num):
        st, en = ptr(imgs + 32 * i), ptr(imgs + 32 * i + 8)
        where = "?"
        for ci, (fo, va, c) in enumerate(containers):
            if va is not None and va <= st < va + c["size"]:
                rel_off = st - va
                if rel_off == 0:
                    where = f"container[{ci}] HEADER (whole OffloadBinary, {c['ecount']} entries)"
                else:
                    hits = [j for j, x in enumerate(c["ents"]) if x["ioff"] == rel_off]
                    j = hits[0] if hits else None
                    ent = c["ents"][j] if j is not None else None
                    where = (f"container[{ci}] +{rel_off} = RAW image of entry[{j}] "
                             f"(arch={ent['strings'].get('arch')}, triple={ent['strings'].get('triple')}) of "
                             f"{c['ecount']}" if ent else f"container[{ci}] +{rel_off} (no entry starts here)")
                break
        fo = e.vaddr_to_off(st)
        raw = e.d[fo:fo + 4]
        extra = ""
        if raw == b"\x7fELF":
            mach, = struct.unpack_from("<H", e.d, fo + 18)
            flags, = struct.unpack_from("<I", e.d, fo + 48)
            extra = f" ELF machine {EM.get(mach, mach)} e_flags 0x{flags:x}"
        print(f"    DeviceImages[{i}]: ImageStart 0x{st:x} ImageEnd 0x{en:x} ({en - st} bytes) -> {where};"
              f" first bytes {raw.hex()}{extra}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
