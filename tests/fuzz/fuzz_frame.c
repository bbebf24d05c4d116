/* Fuzz target: the framed stream's decoders (docs/streaming.md), as a receiver meets them: a
 * 75-byte header, then frames (24-byte head + payload) until the input ends. Properties: a
 * header that decodes encodes back to the same bytes and is self-consistent (depth 8|16,
 * total = width * height * depth / 8 at version 1, the geometry's at version 2 once its
 * extension decoded, 1 <= swath width <= width); a frame head round-trips;
 * a deflated payload either inflates to exactly its raw length or fails with a message.
 * Payloads claiming more than 1 MiB raw are skipped (the receiver's TSR_FRAME_MAX_RAW check
 * is its own; this is about the decoders).
 *
 * The controller's reader itself (resume answers, frame order, abort and trailer handling,
 * what it holds) has a target of its own: fuzz_controller.c. */
#include "stream/stream.h"

#define FUZZ_TARGET "fuzz_frame"
#include "tests/fuzz/fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAW_MAX ((uint32_t)1 << 20)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < TSR_HEADER_SIZE)
        return 0;
    tsr_header h;
    tsr_error err = {TSR_OK, ""};
    if (tsr_header_decode(data, &h, &err) != TSR_OK) {
        PROPERTY(err.status == TSR_EINVAL && err.msg[0], "header: status %d, '%s'", err.status,
                 err.msg);
    } else {
        uint8_t again[TSR_HEADER_SIZE];
        tsr_header_encode(&h, again);
        PROPERTY(memcmp(again, data, TSR_HEADER_SIZE) == 0, "header does not round-trip");
        PROPERTY(h.depth == 8 || h.depth == 16 || (h.version == 2 && h.depth < 8),
                 "depth %u at version %u", h.depth, h.version);
        PROPERTY(h.swath_width >= 1 && h.swath_width <= h.width, "swath width");
        /* each swath's rows padded to whole bytes (docs/streaming.md §2); at version 2 the
         * total is checked with the extension (overlap, overscan and planes change it) */
        unsigned __int128 sw = h.swath_width, rows =
            (h.width / sw) * ((sw * h.depth + 7) / 8) + ((h.width % sw) * h.depth + 7) / 8;
        PROPERTY(h.version == 2 || rows * h.height == h.total, "total %llu",
                 (unsigned long long)h.total);
    }
    size_t at = TSR_HEADER_SIZE;
    if (err.status == TSR_OK && h.version == 2 && size - at >= TSR_HEADER_EXT) {
        tsr_error e2 = {TSR_OK, ""};
        if (tsr_header_decode_ext(data + at, &h, &e2) != TSR_OK) {
            PROPERTY(e2.status == TSR_EINVAL && e2.msg[0], "extension: status %d", e2.status);
        } else {
            uint8_t again[TSR_HEADER_EXT];
            tsr_header_encode_ext(&h, again);
            PROPERTY(memcmp(again, data + at, TSR_HEADER_EXT) == 0,
                     "extension does not round-trip");
            PROPERTY((h.dither != 0) == (h.depth < 8), "dither %u at depth %u", h.dither,
                     h.depth);
            /* the total is the geometry's, summed here swath by swath (stream/geom.c's
             * definition, docs/streaming.md §2) */
            unsigned __int128 sum = 0;
            uint64_t n = h.swath_width >= h.width ? 1 : h.width / h.swath_width +
                                                            (h.width % h.swath_width != 0);
            PROPERTY(h.overscan_value <= (1u << h.depth) - 1, "overscan value %u",
                     h.overscan_value);
            for (uint64_t k = 0; k < n && n < 4096; k++) {
                uint64_t base = n == 1 ? h.width : k + 1 < n ? h.swath_width
                                                             : h.width - (n - 1) * h.swath_width;
                uint64_t next = k + 1 < n ? (k + 2 < n ? h.swath_width
                                                       : h.width - (n - 1) * h.swath_width)
                                          : 0;
                unsigned __int128 px = (unsigned __int128)base +
                                       (h.overlap < next ? h.overlap : next) +
                                       2 * (unsigned __int128)h.overscan;
                sum += h.planes ? h.depth * ((px + 7) / 8) : (px * h.depth + 7) / 8;
            }
            PROPERTY(n >= 4096 || sum * h.height == h.total, "total %llu with the geometry",
                     (unsigned long long)h.total);
        }
        at += TSR_HEADER_EXT;
    }
    uint8_t *out = NULL;
    while (size - at >= TSR_FRAME_HEAD) {
        tsr_frame f;
        tsr_frame_decode(data + at, &f);
        uint8_t again[TSR_FRAME_HEAD];
        tsr_frame_encode(&f, again);
        PROPERTY(memcmp(again, data + at, TSR_FRAME_HEAD) == 0, "frame head does not round-trip");
        at += TSR_FRAME_HEAD;
        if (f.wire > size - at)
            break; /* truncated: a receiver waits for more */
        const uint8_t *payload = data + at;
        at += f.wire;
        if (!(f.flags & TSR_FRAME_DEFLATE) || f.raw > RAW_MAX)
            continue;
        uint8_t *o = realloc(out, f.raw ? f.raw : 1);
        if (!o)
            break;
        out = o;
        err = (tsr_error){TSR_OK, ""};
        tsr_status st = tsr_inflate(payload, f.wire, out, f.raw, &err);
        if (st == TSR_OK)
            (void)tsr_crc32(0, out, f.raw);
        else
            PROPERTY(st == err.status && err.msg[0], "inflate: status %d, '%s'", st, err.msg);
    }
    free(out);
    return 0;
}
