#!/usr/bin/env python3
"""proto.py: an independent implementation of tessera's framed stream (docs/streaming.md,
docs/streaming.md) for the stream tests, written from the spec with the standard library only
(struct, zlib, socket). It plays either end so tests can watch what tessera sends and feed the
controller what a faulty sender would.

  proto.py recv  --port-file F [--answer N|refuse] [--out RAW] [--close-after-header]
      Listen on 127.0.0.1 (a free port, written to F), take one connection, read the header,
      answer the resume offset (default 0), read and check every frame, write the samples from
      the answered offset to RAW, print one JSON summary line. Exit 0 when a trailer with the
      right crc ended the stream, 3 for an abort frame, 4 when the stream ended without a
      trailer, 1 for a protocol or crc error.
  proto.py decode FILE [--out RAW]
      The same checks on a framed transcript (render --framed -o FILE).
  proto.py send  --port P --data RAW [--fingerprint HEX] [--corrupt K] [--deflate]
                 [--stop-after K [--abort-hex HEX]] [--bad-header] [--bad-trailer]
                 [--trickle SECONDS] [--trickle-frame SECONDS [--give-up SECONDS]]
      Send RAW as a one-row 8-bit job to a controller: header, resume offset, frames of 64 KiB
      from that offset (--corrupt K flips a payload byte of frame K keeping its crc;
      --stop-after K closes after K frames, or sends an abort frame whose reason is the bytes
      HEX first), then the trailer (--bad-trailer: with a wrong crc). Prints the answer as
      JSON. Exit 0 when the controller answered and (unless stopped early) closed after the
      trailer. --trickle S sends the header one byte every S seconds and prints how many
      bytes went before the controller closed the connection ({"sent": N, "cut": true}).
      --trickle-frame S sends the header whole and then the first frame (its head and 100
      bytes of samples from the answered offset) one byte every S seconds, until the
      controller closes the connection or --give-up seconds (default 30) have passed:
      {"answer": R, "sent": N, "of": 124, "cut": true when the controller closed first}.
"""
import argparse
import io
import json
import os
import socket
import struct
import sys
import zlib

HEADER = struct.Struct("<4sHHQQBBBQ32sQ")  # 75 bytes, packed little-endian
FRAME = struct.Struct("<QIIII")             # 24 bytes
assert HEADER.size == 75 and FRAME.size == 24
F_DEFLATE, F_ABORT, F_TRAILER = 1, 2, 4
REFUSED = (1 << 64) - 1


class ProtocolError(Exception):
    pass


def read_exact(rd, n):
    """rd(n) -> bytes (b'' at EOF); returns exactly n bytes or None at a clean/partial EOF."""
    buf = b""
    while len(buf) < n:
        chunk = rd(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


EXT = 32  # version 2: bytes after the 75 (dither kind, its log2 size, flags, 29 zeros)


def parse_header(b):
    magic, version, depth, w, h, order, serp, start, sw, fp, total = HEADER.unpack(b)
    if magic != b"TSRA":
        raise ProtocolError("bad magic %r" % magic)
    if not (version == 1 and depth in (8, 16) or version == 2 and depth in (1, 2, 4, 8, 16)):
        raise ProtocolError("version %d depth %d" % (version, depth))
    # each swath's rows padded to whole bytes: w * h * depth / 8 at 8 and 16 bits
    want = h * ((w // sw) * ((sw * depth + 7) // 8) + ((w % sw) * depth + 7) // 8)
    if want != total:
        raise ProtocolError("total %d != %d (%d x %d at %d bit)" % (total, want, w, h, depth))
    return dict(version=version, depth=depth, width=w, height=h, order=order,
                serpentine=serp, start=start, swath_width=sw, fingerprint=fp.hex(),
                total=total)


def parse_ext(h, b):
    """A version 2 header's extension into h: dither, dither_log2, flags (bit 0: profile),
    stage (bit 0 rows alternate, 1 swaths alternate, 2 x mirrored, 3 y up)."""
    kind, k, flags, stage = b[0], b[1], b[2], b[3]
    if (kind > 3 or (h["depth"] < 8) != (kind != 0) or flags & ~1 or stage & ~15
            or stage & 3 == 3 or any(b[4:])):
        raise ProtocolError("bad header extension %s" % b.hex())
    h.update(dither=kind, dither_log2=k, profile=bool(flags & 1), stage=stage)
    return h


def read_header(rd):
    hb = read_exact(rd, HEADER.size)
    if hb is None:
        return None
    h = parse_header(hb)
    if h["version"] == 2:
        eb = read_exact(rd, EXT)
        if eb is None:
            return None
        parse_ext(h, eb)
    return h


def read_frames(rd, start, total, out):
    """Read frames from offset `start`; returns a summary dict (end = trailer/abort/eof)."""
    s = dict(frames=0, deflated=0, bytes=0, end="eof", reason=None, max_raw=0)
    pos, crc = start, 0
    while True:
        fh = read_exact(rd, FRAME.size)
        if fh is None:
            return s
        off, wire, raw, fcrc, flags = FRAME.unpack(fh)
        if flags & ~7:
            raise ProtocolError("unknown flags %#x" % flags)
        if flags & F_ABORT:
            payload = read_exact(rd, wire) or b""
            if zlib.crc32(payload) != fcrc or raw != wire:
                raise ProtocolError("abort frame: crc or length mismatch")
            if off != pos:
                raise ProtocolError("abort at %d, next byte is %d" % (off, pos))
            s.update(end="abort", reason=payload.decode("utf-8"), offset=off)
            return s
        if flags & F_TRAILER:
            if wire or raw or off != pos or pos != total:
                raise ProtocolError("trailer at %d (wire %d raw %d), held %d of %d"
                                    % (off, wire, raw, pos, total))
            if fcrc != crc:
                raise ProtocolError("trailer crc %08x != %08x" % (fcrc, crc))
            s.update(end="trailer", crc=fcrc)
            return s
        if off != pos:
            raise ProtocolError("frame at %d, expected %d" % (off, pos))
        payload = read_exact(rd, wire)
        if payload is None:
            return s  # half a frame: the sender died
        if flags & F_DEFLATE:
            d = zlib.decompressobj()
            data = d.decompress(payload)
            if not d.eof or d.unused_data or len(data) != raw:
                raise ProtocolError("frame at %d: bad zlib payload" % off)
            s["deflated"] += 1
        else:
            if wire != raw:
                raise ProtocolError("frame at %d: wire %d != raw %d" % (off, wire, raw))
            data = payload
        if zlib.crc32(data) != fcrc:
            raise ProtocolError("frame at %d: crc mismatch" % off)
        if out:
            out.write(data)
        crc = zlib.crc32(data, crc)
        pos += raw
        s["frames"] += 1
        s["bytes"] += raw
        s["max_raw"] = max(s["max_raw"], raw)


def exit_code(summary):
    return {"trailer": 0, "abort": 3, "eof": 4}[summary["end"]]


def cmd_recv(a):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(60)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(tmp, a.port_file)
    conn, _ = srv.accept()
    conn.settimeout(60)
    rd = conn.recv
    h = read_header(rd)
    if h is None:
        print(json.dumps({"error": "no header"}))
        return 1
    answer = REFUSED if a.answer == "refuse" else int(a.answer)
    conn.sendall(struct.pack("<Q", answer))
    with open(a.port_file + ".started", "w") as f:  # tests wait for this before a signal
        f.write("header answered\n")
    summary = dict(header=h, answer=a.answer)
    if a.answer == "refuse" or a.close_after_header:
        # a refused sender sends nothing more; wait for it to close
        rest = conn.recv(1)
        summary.update(end="closed", extra=len(rest))
        print(json.dumps(summary))
        conn.close()
        return 0
    out = open(a.out, "wb") if a.out else None
    try:
        summary.update(read_frames(rd, answer, h["total"], out))
    except ProtocolError as e:
        summary["error"] = str(e)
        print(json.dumps(summary))
        return 1
    finally:
        if out:
            out.close()
    print(json.dumps(summary))
    conn.close()  # after the trailer: our word that we hold the job
    return exit_code(summary)


def cmd_decode(a):
    with open(a.file, "rb") as src:
        f = io.BytesIO(src.read())  # a pipe cannot seek back over the first frame
        h = read_header(f.read)
        if h is None:
            print(json.dumps({"error": "no header"}))
            return 1
        # a transcript does not say where it starts: take the first frame's offset
        pos = f.tell()
        fh = f.read(FRAME.size)
        start = FRAME.unpack(fh)[0] if len(fh) == FRAME.size else 0
        f.seek(pos)
        out = open(a.out, "wb") if a.out else None
        summary = dict(header=h, start=start)
        try:
            summary.update(read_frames(f.read, start, h["total"], out))
        except ProtocolError as e:
            summary["error"] = str(e)
            print(json.dumps(summary))
            return 1
        finally:
            if out:
                out.close()
    print(json.dumps(summary))
    return exit_code(summary)


def cmd_send(a):
    data = open(a.data, "rb").read()
    fp = bytes.fromhex(a.fingerprint) if a.fingerprint else bytes(32)
    hb = HEADER.pack(b"TSRA", 1, 8, len(data), 1, 0, 0, 0, len(data), fp, len(data))
    if a.bad_header:
        hb = b"XXXX" + hb[4:]
    conn = socket.create_connection(("127.0.0.1", a.port), timeout=60)
    if a.trickle is not None:
        return trickle(conn, hb, a.trickle)
    conn.sendall(hb)
    ans = read_exact(conn.recv, 8)
    if a.trickle_frame is not None and ans is not None:
        r = struct.unpack("<Q", ans)[0]
        piece = data[r:r + 100]
        fh = FRAME.pack(r, len(piece), len(piece), zlib.crc32(piece), 0)
        return trickle(conn, fh + piece, a.trickle_frame, a.give_up, {"answer": r})
    if ans is None:
        print(json.dumps({"answer": None}))
        return 1
    r = struct.unpack("<Q", ans)[0]
    result = {"answer": "refuse" if r == REFUSED else r}
    if r == REFUSED or r > len(data):
        print(json.dumps(result))
        conn.close()
        return 0 if r == REFUSED else 1
    pos, k, crc = r, 0, 0
    try:
        while pos < len(data):
            piece = data[pos:pos + 65536]
            fcrc = zlib.crc32(piece)
            payload, flags = piece, 0
            if a.deflate:
                payload, flags = zlib.compress(piece, 6), F_DEFLATE
            if k == a.corrupt:
                payload = bytearray(payload)
                payload[len(payload) // 2] ^= 0x5A
                payload = bytes(payload)
            conn.sendall(FRAME.pack(pos, len(payload), len(piece), fcrc, flags) + payload)
            crc = zlib.crc32(piece, crc)
            pos += len(piece)
            k += 1
            if a.stop_after is not None and k >= a.stop_after:
                result["stopped_at"] = pos
                if a.abort_hex is not None:
                    why = bytes.fromhex(a.abort_hex)
                    conn.sendall(FRAME.pack(pos, len(why), len(why), zlib.crc32(why), F_ABORT) + why)
                print(json.dumps(result))
                conn.close()
                return 0
        conn.sendall(FRAME.pack(pos, 0, 0, crc ^ (1 if a.bad_trailer else 0), F_TRAILER))
        conn.shutdown(socket.SHUT_WR)
        rest = conn.recv(16)
        result["closed"] = rest == b""
    except (BrokenPipeError, ConnectionResetError) as e:
        result["closed"] = "reset: %s" % e
    print(json.dumps(result))
    return 0


def trickle(conn, hb, every, give_up=None, result=None):
    """Send hb one byte at a time, `every` seconds apart, until the peer closes (or, with
    give_up, until that many seconds have passed: then "cut" is false)."""
    import select
    import time
    sent, cut = 0, False
    end = time.monotonic() + give_up if give_up is not None else None
    conn.settimeout(None)
    try:
        for b in hb:
            # readable before any answer: the controller closed (EOF) or reset the connection
            if select.select([conn], [], [], 0)[0] and conn.recv(1) == b"":
                cut = True
                break
            if end is not None and time.monotonic() > end:
                break
            conn.sendall(bytes([b]))
            sent += 1
            time.sleep(every)
    except (BrokenPipeError, ConnectionResetError):
        cut = True
    result = dict(result or {})
    result.update(sent=sent, of=len(hb), cut=cut or (give_up is None and sent < len(hb)))
    print(json.dumps(result))
    conn.close()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port-file", required=True)
    r.add_argument("--answer", default="0")
    r.add_argument("--out")
    r.add_argument("--close-after-header", action="store_true")
    d = sub.add_parser("decode")
    d.add_argument("file")
    d.add_argument("--out")
    s = sub.add_parser("send")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--data", required=True)
    s.add_argument("--fingerprint")
    s.add_argument("--corrupt", type=int, default=-1)
    s.add_argument("--deflate", action="store_true")
    s.add_argument("--stop-after", type=int)
    s.add_argument("--bad-header", action="store_true")
    s.add_argument("--bad-trailer", action="store_true")
    s.add_argument("--abort-hex")
    s.add_argument("--trickle", type=float)
    s.add_argument("--trickle-frame", type=float)
    s.add_argument("--give-up", type=float, default=30.0)
    a = p.parse_args()
    return {"recv": cmd_recv, "decode": cmd_decode, "send": cmd_send}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
