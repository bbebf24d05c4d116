/* Fuzz target: `tessera controller`'s reader (controller/controller.c) over the bytes a sender
 * sends after connecting: header, frames, abort or trailer, as one connection that then closes.
 * Each input is served three ways: discarding (no output); into a memfd output, followed by a
 * second connection sending the same bytes again (a resume against what the first one left:
 * the state's offset is the answer, or a refusal); and, into a fresh memfd, with every frame's
 * crc (and the trailer's) rewritten to match its payload, so that mutated frames get past the
 * crc check and reach the offset, length, inflate, trailer and state logic behind it (a
 * fuzzer does not find crc32 collisions by itself). The first two hold the job on an abort
 * frame (the default), the third fails on it (--exit-on-abort).
 *
 * Properties beyond "no sanitizer report, no leak": the answer is 0, a held offset <= the
 * job's total, or a refusal; a failure has a message; what the controller holds is what it
 * checked: the output's bytes [0, offset) have the state's crc32; a completed job holds
 * exactly its total; and a job is held whole only through a matching trailer: a connection
 * that did not complete one leaves offset < total, unless the job was complete before it. Seeds: tests/fuzz/regress/controller (transcripts tessera wrote: raw,
 * deflated, 16 bit, swath, cropped, aborted, cut) and tests/fuzz/regress/frame. */
#include "controller/controller.h"
#include "stream/stream_int.h"

#define FUZZ_TARGET "fuzz_controller"
#include "tests/fuzz/fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The crc32 of the first n bytes of fd. */
static uint32_t
crc_of(int fd, uint64_t n)
{
    uint8_t buf[65536];
    uint32_t crc = 0;
    for (uint64_t at = 0; at < n;) {
        size_t want = n - at < sizeof buf ? (size_t)(n - at) : sizeof buf;
        ssize_t k = pread(fd, buf, want, (off_t)at);
        PROPERTY(k > 0, "output shorter than the held offset %llu (at %llu)",
                 (unsigned long long)n, (unsigned long long)at);
        crc = tsr_crc32(crc, buf, (size_t)k);
        at += (uint64_t)k;
    }
    return crc;
}

/* One connection, then the checks that hold after any connection. */
static void
serve_and_check(tsr_ctl_mem *m, int out, const uint8_t *data, size_t size)
{
    uint64_t answered = 0, offset, total, offset0, total0;
    uint32_t crc;
    tsr_error err = {TSR_OK, ""};
    bool was_complete = tsr_ctl_mem_state(m, &offset0, &total0, &crc) && offset0 == total0;
    int rc = tsr_ctl_mem_serve(m, data, size, &answered, &err);
    PROPERTY(rc >= 0 && rc <= 2, "outcome %d", rc);
    if (rc == 2)
        PROPERTY(err.status != TSR_OK && err.msg[0], "a failure without a message");
    bool valid = tsr_ctl_mem_state(m, &offset, &total, &crc);
    if (getenv("FUZZ_VERBOSE")) /* what a replayed input did, for a person reading along */
        fprintf(stderr, "  %s: outcome %d, answered %llu, holds %llu of %llu%s%s\n",
                out >= 0 ? "memfd" : "discard", rc, (unsigned long long)answered,
                (unsigned long long)offset, (unsigned long long)total, rc == 2 ? ": " : "",
                rc == 2 ? err.msg : "");
    PROPERTY(answered == TSR_RESUME_REFUSED || !valid || answered <= total,
             "answered %llu for a job of %llu bytes", (unsigned long long)answered,
             (unsigned long long)total);
    if (!valid)
        return;
    PROPERTY(offset <= total, "holds %llu of %llu bytes", (unsigned long long)offset,
             (unsigned long long)total);
    if (rc == 0)
        PROPERTY(offset == total, "a completed job holds %llu of %llu bytes",
                 (unsigned long long)offset, (unsigned long long)total);
    else
        PROPERTY(offset < total || (was_complete && total0 == total), "outcome %d (%s) left the "
                 "whole job of %llu bytes held", rc, err.msg, (unsigned long long)total);
    if (out < 0)
        return;
    PROPERTY(crc_of(out, offset) == crc, "the output's first %llu bytes do not have the "
             "state's crc %08x", (unsigned long long)offset, (unsigned)crc);
    if (rc == 0) {
        struct stat sb;
        PROPERTY(fstat(out, &sb) == 0 && (uint64_t)sb.st_size == total,
                 "a completed job's output is not %llu bytes", (unsigned long long)total);
    }
}

/* A copy of the input with the crc of every frame whose payload is all there set to what the
 * controller will compute (deflated payloads: of what they inflate to, when they do), and
 * each trailer's to the crc of the data frames before it; lengths and offsets untouched. */
static uint8_t *
fix_crcs(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    if (!b)
        return NULL;
    memcpy(b, data, size);
    uint32_t since = 0;
    uint8_t *raw = NULL;
    for (size_t at = TSR_HEADER_SIZE; at + TSR_FRAME_HEAD <= size;) {
        tsr_frame f;
        tsr_frame_decode(b + at, &f);
        const uint8_t *payload = b + at + TSR_FRAME_HEAD;
        if (f.wire > size - at - TSR_FRAME_HEAD)
            break;
        if (f.flags & TSR_FRAME_TRAILER) {
            f.crc = since;
        } else if (f.flags & TSR_FRAME_DEFLATE) {
            tsr_error e;
            uint8_t *nr = f.raw <= ((uint32_t)1 << 20) ? realloc(raw, f.raw ? f.raw : 1) : NULL;
            if (nr) {
                raw = nr;
                if (tsr_inflate(payload, f.wire, raw, f.raw, &e) == TSR_OK) {
                    f.crc = tsr_crc32(0, raw, f.raw);
                    since = tsr_crc32_combine(since, f.crc, f.raw);
                }
            }
        } else {
            f.crc = tsr_crc32(0, payload, f.wire);
            if (!(f.flags & TSR_FRAME_ABORT))
                since = tsr_crc32_combine(since, f.crc, f.wire);
        }
        tsr_frame_encode(&f, b + at);
        at += TSR_FRAME_HEAD + f.wire;
    }
    free(raw);
    return b;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_ctl_mem *m = tsr_ctl_mem_new(-1, NULL);
    if (!m)
        return 0;
    serve_and_check(m, -1, data, size);
    tsr_ctl_mem_free(m);

    int out = memfd_create("fuzz_controller", MFD_CLOEXEC);
    if (out < 0)
        return 0;
    m = tsr_ctl_mem_new(out, NULL);
    if (m) {
        serve_and_check(m, out, data, size);
        serve_and_check(m, out, data, size);
        tsr_ctl_mem_free(m);
    }
    close(out);

    uint8_t *fixed = fix_crcs(data, size);
    out = memfd_create("fuzz_controller", MFD_CLOEXEC);
    tsr_controller_opts strict = {.exit_on_abort = true};
    m = fixed && out >= 0 ? tsr_ctl_mem_new(out, &strict) : NULL;
    if (m) {
        serve_and_check(m, out, fixed, size);
        tsr_ctl_mem_free(m);
    }
    if (out >= 0)
        close(out);
    free(fixed);
    return 0;
}
