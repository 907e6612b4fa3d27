#!/usr/bin/env python3
"""Extract a kernel's BTF (the .BTF section of its vmlinux) from its boot image, when the
distribution ships no vmlinux: an uncompressed arm64 Image (Debian's vmlinuz), or one
compressed with gzip. The BTF blob is found by its header (magic 0xeB9F, version 1, a
24-byte header, type and string sections inside the image, the string section starting with
the empty string) and written as a raw BTF file for `bpftool btf dump file OUT format c`.
Usage: kernel_btf.py VMLINUZ OUT
"""
import gzip
import struct
import sys

HDR = struct.Struct("<HBBIIIII")  # magic, version, flags, hdr_len, type_off/len, str_off/len


def find_btf(img):
    best = None
    pos = img.find(b"\x9f\xeb\x01\x00")
    while pos >= 0:
        if pos + HDR.size <= len(img):
            _, _, _, hdr_len, toff, tlen, soff, slen = HDR.unpack_from(img, pos)
            end = pos + hdr_len + max(toff + tlen, soff + slen)
            if (hdr_len == HDR.size and tlen > 0 and slen > 0 and toff + tlen <= soff
                    and end <= len(img) and img[pos + hdr_len + soff] == 0
                    and (best is None or end - pos > best[1] - best[0])):
                best = (pos, end)
        pos = img.find(b"\x9f\xeb\x01\x00", pos + 1)
    return best


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: kernel_btf.py VMLINUZ OUT")
    with open(sys.argv[1], "rb") as f:
        img = f.read()
    if img[:2] == b"\x1f\x8b":
        img = gzip.decompress(img)
    found = find_btf(img)
    if not found:
        sys.exit(f"kernel_btf.py: no BTF in {sys.argv[1]}")
    with open(sys.argv[2], "wb") as f:
        f.write(img[found[0]:found[1]])
    print(f"kernel_btf.py: {found[1] - found[0]} bytes of BTF at offset {found[0]:#x}")


if __name__ == "__main__":
    main()
