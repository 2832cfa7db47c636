#!/usr/bin/env python3
"""Seeds of fuzz_cidx from real recordings (tests/fuzz/corpus/cidx/real_*).

    cidx_real_seeds.py OUT_DIR NAME=INDEX_FILE...

Each INDEX_FILE is a finished compact index (ATC1) of a real recording,
e.g. `ada record --index-block-kb 4 [--detail always] -- bench/plain/fib 16`
(small blocks: several per file; --detail always: a link table). Writes,
with the harness's selector byte first (0: the image as it is, 2: after
the harness rewrote the CRCs it can find, so the damage reaches the body):
the file itself, a write torn inside its second block, a file cut at a
block boundary (unfinished), lying block lengths, event and frame counts,
varints that never end, footer counts and a block table or link table
pointing anywhere.
"""
import os
import struct
import sys


def blocks(img):
    """(offset, total_len) of the blocks the footer's link_offset bounds."""
    link_off = struct.unpack_from("<Q", img, len(img) - 64 + 32)[0]
    off, res = 64, []
    while off + 64 <= link_off and img[off:off + 4] == b"ATCB":
        tl = struct.unpack_from("<I", img, off + 8)[0]
        if tl < 64:
            break
        res.append((off, tl))
        off += tl
    return res


def patched(img, fmt, off, value):
    m = bytearray(img)
    struct.pack_into(fmt, m, off, value)
    return bytes(m)


def seeds(img):
    bl, f = blocks(img), len(img) - 64
    yield "", 0, img
    yield "_crcfix", 2, img
    if len(bl) >= 2:
        o, tl = bl[1]
        frames_end = o + 64 + 12 * struct.unpack_from("<I", img, o + 40)[0]
        endless = bytearray(img)
        endless[frames_end:frames_end + 16] = b"\xff" * 16
        yield "_cut_in_block", 0, img[:o + tl // 2]
        yield "_cut_at_block", 0, img[:o]
        yield "_len_lies", 2, patched(img, "<I", o + 8, tl * 50)
        yield "_nevents_lies", 2, patched(img, "<I", o + 12, 0xFFFFFFF0)
        yield "_nframes_lies", 2, patched(img, "<I", o + 40, 0xFFFF)
        yield "_varint_endless", 2, bytes(endless)
    yield "_btab_anywhere", 0, patched(img, "<Q", f + 40, 0x7FFFFFFFFFF0)
    yield "_nblocks_lies", 2, patched(img, "<Q", f + 16, 1 << 40)
    yield "_nlinks_lies", 2, patched(img, "<Q", f + 24, 1 << 40)
    yield "_links_over_blocks", 2, patched(img, "<Q", f + 32, 64)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        with open(path, "rb") as fh:
            img = fh.read()
        if img[:4] != b"ATC1" or img[-64:-60] != b"1CTA":
            sys.exit("%s: not a finished compact index" % path)
        for suffix, mode, data in seeds(img):
            with open(os.path.join(out, "real_%s%s" % (name, suffix)), "wb") as fh:
                fh.write(bytes([mode]) + data)


if __name__ == "__main__":
    main()
