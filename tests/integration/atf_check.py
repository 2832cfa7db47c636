#!/usr/bin/env python3
"""An ATF v2 checker written only from the format's contract:
shared/seeds/atf-v2-trace-schema.txt, shared/seeds/atf-detail-format.txt and
shared/ATF-ERRATA.md, plus the conventions docs/format.md documents on top
(file names of the retention generations, the x86_64 register mapping). It
shares no code with src/atf (ada validate), so a bug there and the same bug
here would have to be written twice.

    atf_check.py DIR [DIR...]      a session, a pid_N or a thread_K directory

Prints one line per problem and exits 1 when there is one. Checks, for each
thread directory and each generation (index.g<G>.atf with detail.g<G>.atf,
then index.atf with detail.atf):

  index file   header (magic ATI2, endian 1, version 1, arch, os, event size
               32, events at 64, footer offset and file size agree with the
               count), footer (magic 2ITA, 64-bit count authoritative and the
               header's its low 32 bits: errata 4; bytes written; CRC-32 of
               the events section as zlib computes it: errata 3; time range),
               every event's thread id, kind (1..3) and detail_seq (none, or
               a position in the detail file), timestamps non-decreasing and
               the header's time range the first and last event's;
  detail file  header (magic ATD2, events at byte 20 = 64, reserved tail at
               60: errata 2; thread, arch and os those of its index file),
               footer (magic 2DTA, count, bytes, CRC-32, time range), events
               back to back with no hole (the total_length walk ends exactly
               at bytes_length after event_count events), types 3 and 4
               (errata 6), total_length = 24 + payload (100) + stack_size,
               and ada's type 5 (a signal context: total_length 24 + 160,
               linked to a fatal-signal marker, an EXCEPTION whose depth has
               bit 31) and types 6 and 7 (a call or return with xmm0..7:
               24 + 100 + 64 + stack_size),
               index_seq strictly increasing within [index_seq_start,
               index_seq_end];
  both ways    every detail event's index_seq names an index event whose
               detail_seq is that detail event's position, with the same
               timestamp, thread and function_id, CALL (3) for a call and
               RETURN (4) for a return or exception; every index event's
               detail_seq names a detail event that links back; the index
               header's has_detail_file flag is set exactly when the detail
               file exists.
"""
import array
import glob
import os
import re
import struct
import sys
import zlib

NONE32 = 0xFFFFFFFF
HDR = 64
FTR = 64
EV = 32
DHDR = 24        # DetailEventHeader
DPAYLOAD = 100   # DetailFunctionPayload: 8 + 8*8 + 3*8 + 2 + 2
STACK_MAX = 512  # the tracer spec's cap (0-512 bytes)
FUNCTION_CALL, FUNCTION_RETURN = 3, 4
SIGNAL_CONTEXT = 5  # ada's (docs/format.md, "Signal context records")
CALL_FP, RETURN_FP = 6, 7  # ada's: the function payload, xmm0..7, the stack
XMM = 64
SIGPAYLOAD = 160    # signo, si_code, fault_addr, 18 registers
CALL, RETURN, EXCEPTION = 1, 2, 3


class Problems:
    def __init__(self):
        self.lines = []

    def add(self, path, msg):
        self.lines.append("%s: %s" % (path, msg))


def read_file(path):
    # O_NOFOLLOW: a checker should not be led elsewhere by a link either.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 24)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Index:
    """The parts of an index file the links need."""

    def __init__(self):
        self.count = 0
        self.thread_id = 0
        self.arch = self.os = 0
        self.flags = 0
        self.words = array.array("I")  # 8 per event
        self.ts = array.array("Q")     # 4 per event


def check_index(path, out):
    data = read_file(path)
    ix = Index()
    if len(data) < HDR + FTR:
        out.add(path, "%d bytes: shorter than a header and a footer" % len(data))
        return None
    (magic, endian, version, arch, osv, flags, tid, clock, _r1, _r2, esize, hcount, eoff,
     foff, hstart, hend) = struct.unpack_from("<4sBBBBIIB3sIIIQQQQ", data, 0)
    if magic != b"ATI2" or endian != 1 or version != 1:
        out.add(path, "header magic/endian/version %r/%d/%d, expected ATI2/1/1" % (
            magic, endian, version))
        return None
    if arch not in (1, 2) or osv not in (1, 2, 3, 4, 5) or clock not in (1, 2, 3):
        out.add(path, "header arch %d, os %d, clock %d: not values the schema defines" % (
            arch, osv, clock))
    if esize != EV or eoff != HDR:
        out.add(path, "event size %d at offset %d, expected 32 at 64" % (esize, eoff))
        return None
    if foff < eoff or (foff - eoff) % EV or foff + FTR != len(data):
        out.add(path, "footer offset %d does not end the file (%d bytes) on an event boundary"
                % (foff, len(data)))
        return None
    (fmagic, crc, fcount, fstart, fend, fbytes) = struct.unpack_from("<4sIQQQQ", data, foff)
    n = (foff - eoff) // EV
    if fmagic != b"2ITA":
        out.add(path, "footer magic %r, expected 2ITA" % fmagic)
    if fcount != n or fbytes != n * EV:
        out.add(path, "footer says %d events / %d bytes, the file holds %d events" % (
            fcount, fbytes, n))
    if hcount != (fcount & 0xFFFFFFFF):
        out.add(path, "header event_count %d is not the low 32 bits of the footer's %d" % (
            hcount, fcount))
    section = data[eoff:foff]
    if zlib.crc32(section) != crc:
        out.add(path, "CRC-32 of the events section is %08x, the footer says %08x" % (
            zlib.crc32(section), crc))
    ix.count, ix.thread_id, ix.arch, ix.os, ix.flags = n, tid, arch, osv, flags
    ix.words = array.array("I")
    ix.words.frombytes(section)
    ix.ts = array.array("Q")
    ix.ts.frombytes(section)
    if sys.byteorder != "little":
        ix.words.byteswap()
        ix.ts.byteswap()
    if n == 0:
        return ix
    ts = ix.ts[0::4]
    tids = ix.words[4::8]
    kinds = ix.words[5::8]
    if tids.count(tid) != n:
        bad = next(i for i, t in enumerate(tids) if t != tid)
        out.add(path, "event %d has thread_id %d, the header %d" % (bad, tids[bad], tid))
    if min(kinds) < CALL or max(kinds) > EXCEPTION:
        bad = next(i for i, k in enumerate(kinds) if not CALL <= k <= EXCEPTION)
        out.add(path, "event %d has event_kind %d (1..3 only)" % (bad, kinds[bad]))
    back = next((i for i in range(1, n) if ts[i] < ts[i - 1]), None)
    if back is not None:
        out.add(path, "timestamps go backwards at event %d" % back)
    if (hstart, hend) != (ts[0], ts[-1]) or (fstart, fend) != (ts[0], ts[-1]):
        out.add(path, "time range header [%d, %d] footer [%d, %d], events [%d, %d]" % (
            hstart, hend, fstart, fend, ts[0], ts[-1]))
    return ix


def where(at):
    """A detail event named in a problem, at = (its number, its byte):
    formatted only for a problem found, not for each event."""
    return "detail event %d (byte %d)" % at


def check_detail(path, ix, out):
    """Checks a detail file against its index file; returns the detail
    events' index_seq values in file order (None when unreadable)."""
    data = read_file(path)
    if len(data) < HDR + FTR:
        out.add(path, "%d bytes: shorter than a header and a footer" % len(data))
        return None
    (magic, endian, version, arch, osv, _flags, tid, _r1, eoff, count, blen, seq0, seq1,
     _r2) = struct.unpack_from("<4sBBBBIIIQQQQQI", data, 0)
    if magic != b"ATD2" or endian != 1 or version != 1:
        out.add(path, "header magic/endian/version %r/%d/%d, expected ATD2/1/1" % (
            magic, endian, version))
        return None
    if (arch, osv, tid) != (ix.arch, ix.os, ix.thread_id):
        out.add(path, "arch/os/thread %d/%d/%d, its index file says %d/%d/%d" % (
            arch, osv, tid, ix.arch, ix.os, ix.thread_id))
    if eoff != HDR or eoff + blen + FTR != len(data):
        out.add(path, "events at %d, %d bytes: the file has %d bytes (header and footer 64)"
                % (eoff, blen, len(data)))
        return None
    (fmagic, crc, fcount, fblen, fstart, fend) = struct.unpack_from("<4sIQQQQ", data, eoff + blen)
    if fmagic != b"2DTA":
        out.add(path, "footer magic %r, expected 2DTA" % fmagic)
    if (fcount, fblen) != (count, blen):
        out.add(path, "footer count/bytes %d/%d, header %d/%d" % (fcount, fblen, count, blen))
    section = memoryview(data)[eoff:eoff + blen]
    if zlib.crc32(section) != crc:
        out.add(path, "CRC-32 of the events section is %08x, the footer says %08x" % (
            zlib.crc32(section), crc))
    seqs = []
    off, pos, last_ts, first_ts = 0, 0, None, None
    while off < blen:
        if blen - off < DHDR + DPAYLOAD:
            out.add(path, "event %d at byte %d: %d bytes left, less than a function event" % (
                pos, off + eoff, blen - off))
            return None
        (tlen, etype, eflags, iseq, etid, ets) = struct.unpack_from("<IHHIIQ", section, off)
        (fn,) = struct.unpack_from("<Q", section, off + DHDR)
        (stack,) = struct.unpack_from("<H", section, off + DHDR + DPAYLOAD - 4)
        at = (pos, off + eoff)
        if etype == SIGNAL_CONTEXT:
            stack, fn = 0, None
            if tlen != DHDR + SIGPAYLOAD or off + tlen > blen:
                out.add(path, "%s: total_length %d of a signal context, want %d" % (
                    where(at), tlen, DHDR + SIGPAYLOAD))
                return None
        elif etype in (CALL_FP, RETURN_FP):
            (stack,) = struct.unpack_from("<H", section, off + DHDR + DPAYLOAD - 4)
            if tlen != DHDR + DPAYLOAD + XMM + stack or off + tlen > blen:
                out.add(path, "%s: total_length %d, header + payload + xmm + stack_size %d "
                        "is %d" % (where(at), tlen, stack, DHDR + DPAYLOAD + XMM + stack))
                return None
        elif tlen != DHDR + DPAYLOAD + stack or off + tlen > blen:
            out.add(path, "%s: total_length %d, header + payload + stack_size %d is %d" % (
                where(at), tlen, stack, DHDR + DPAYLOAD + stack))
            return None
        if stack > STACK_MAX or stack % 8:
            out.add(path, "%s: stack_size %d (whole words, at most %d)" % (
                where(at), stack, STACK_MAX))
        if etype not in (FUNCTION_CALL, FUNCTION_RETURN, SIGNAL_CONTEXT, CALL_FP, RETURN_FP):
            out.add(path, "%s: event_type %d (3 to 7 are the types defined)" % (
                where(at), etype))
        if etype in (FUNCTION_RETURN, RETURN_FP) and stack:
            out.add(path, "%s: a RETURN with %d stack bytes" % (where(at), stack))
        if etid != tid:
            out.add(path, "%s: thread_id %d, the header %d" % (where(at), etid, tid))
        if seqs and iseq <= seqs[-1]:
            out.add(path, "%s: index_seq %d after %d (must increase)" % (
                where(at), iseq, seqs[-1]))
        if last_ts is not None and ets < last_ts:
            out.add(path, "%s: timestamp goes backwards" % where(at))
        if iseq >= ix.count:
            out.add(path, "%s: index_seq %d, the index file has %d events" % (
                where(at), iseq, ix.count))
        else:
            w = ix.words[iseq * 8:iseq * 8 + 8]
            its = ix.ts[iseq * 4]
            ifn = w[2] | w[3] << 32
            want = (CALL,) if etype in (FUNCTION_CALL, CALL_FP) else (RETURN, EXCEPTION)
            if etype == SIGNAL_CONTEXT:  # the marker: an EXCEPTION, depth bit 31
                want, fn = ((EXCEPTION,) if w[6] & 0x80000000 else ()), ifn
            if w[7] != pos:
                out.add(path, "%s: links to index event %d, whose detail_seq is %s" % (
                    where(at), iseq, "none" if w[7] == NONE32 else w[7]))
            if its != ets or ifn != fn or w[4] != etid or w[5] not in want:
                out.add(path, "%s: does not match index event %d (timestamp %d/%d, function "
                        "%x/%x, kind %d for type %d)" % (where(at), iseq, ets, its, fn, ifn,
                                                         w[5], etype))
        seqs.append(iseq)
        first_ts = ets if first_ts is None else first_ts
        last_ts = ets
        off += tlen
        pos += 1
    if pos != count:
        out.add(path, "%d events walked, the header says %d" % (pos, count))
    if seqs and (seq0, seq1) != (seqs[0], seqs[-1]):
        out.add(path, "index_seq range [%d, %d] in the header, the events cover [%d, %d]" % (
            seq0, seq1, seqs[0], seqs[-1]))
    if seqs and (fstart, fend) != (first_ts, last_ts):
        out.add(path, "footer time range [%d, %d], events [%d, %d]" % (
            fstart, fend, first_ts, last_ts))
    return seqs


def check_pair(index_path, detail_path, out):
    ix = check_index(index_path, out)
    if ix is None:
        return
    linked = [(i, d) for i, d in enumerate(ix.words[7::8]) if d != NONE32]
    has = os.path.lexists(detail_path)
    if bool(ix.flags & 1) != has:
        out.add(index_path, "has_detail_file flag %d, but %s %s" % (
            ix.flags & 1, os.path.basename(detail_path), "exists" if has else "does not exist"))
    if not has:
        if linked:
            out.add(index_path, "event %d has detail_seq %d but there is no detail file" %
                    linked[0])
        return
    seqs = check_detail(detail_path, ix, out)
    if seqs is None:
        return
    # Each detail event links back (checked above); each index link must be
    # one of those: then the two sets are the same, one to one.
    if len(linked) != len(seqs):
        out.add(index_path, "%d events link to detail events, the detail file has %d" % (
            len(linked), len(seqs)))
    for i, d in linked:
        if d >= len(seqs) or seqs[d] != i:
            out.add(index_path, "event %d links to detail event %d, which %s" % (
                i, d, "does not exist" if d >= len(seqs) else
                "links to index event %d" % seqs[d]))
            break


def thread_dirs(root):
    if re.match(r"thread_\d+$", os.path.basename(os.path.normpath(root))):
        return [root]
    found = []
    for dirpath, dirnames, _ in os.walk(root, followlinks=False):
        dirnames.sort()
        found += [os.path.join(dirpath, d) for d in dirnames if re.match(r"thread_\d+$", d)]
    return found


def check_thread(tdir, out):
    gens = []
    for p in glob.glob(os.path.join(tdir, "index.g*.atf")):
        m = re.match(r"index\.g(\d+)\.atf$", os.path.basename(p))
        if m:
            gens.append(int(m.group(1)))
    pairs = [("index.g%d.atf" % g, "detail.g%d.atf" % g) for g in sorted(gens)]
    if os.path.lexists(os.path.join(tdir, "index.atf")):
        pairs.append(("index.atf", "detail.atf"))
    for name in os.listdir(tdir):
        m = re.match(r"detail(\.g(\d+))?\.atf$", name)
        if m and ("index%s.atf" % (m.group(1) or "")) not in [p[0] for p in pairs]:
            out.add(os.path.join(tdir, name), "a detail file without its index file")
    for i, d in pairs:
        check_pair(os.path.join(tdir, i), os.path.join(tdir, d), out)
    return len(pairs)


def check_tree(root):
    """Problems (a list of lines) and the number of index files checked."""
    out = Problems()
    files = 0
    for t in thread_dirs(root):
        files += check_thread(t, out)
    return out.lines, files


def main(argv):
    if not argv:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    bad = False
    for root in argv:
        lines, files = check_tree(root)
        for line in lines:
            print(line)
        if files == 0:
            print("%s: no thread directory with an index file" % root)
        bad = bad or bool(lines) or files == 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
