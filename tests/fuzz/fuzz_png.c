/* Fuzz target: image/'s PNG reader (image sources, docs/format.md §4), the one decoder of
 * untrusted binary input a design pulls in. One input is one PNG file, handed to
 * tsr_png_read_size, tsr_png_read_info, tsr_png_check and tsr_png_read_gray through a memfd
 * (/proc/self/fd/N: the readers take paths). Properties: all agree on the size; the check
 * (every row read, none kept) fails exactly when the full read does; a decoded image has w*h
 * values in [0, 1]; a failure has a status and a message naming the file; a header claiming
 * more than 2^22 px is not decoded (that would test the allocator, not the reader: the size
 * check is tests/test_limits.c's). Seeds: tests/oracle/designs/img/ (every PNG colour type
 * and depth). */
#include "image/image.h"

#define FUZZ_TARGET "fuzz_png"
#include "tests/fuzz/fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.png", 0);
    if (fd < 0)
        abort();
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0)
            abort();
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int64_t w = 0, h = 0;
    tsr_error err = {TSR_OK, ""};
    tsr_status st = tsr_png_read_size(path, &w, &h, &err);
    if (st != TSR_OK) {
        PROPERTY(err.status == st && err.msg[0] && strstr(err.msg, path), "size: %s", err.msg);
        close(fd);
        return 0;
    }
    PROPERTY(w >= 1 && h >= 1 && w <= 0x7fffffff && h <= 0x7fffffff, "size %lld x %lld",
             (long long)w, (long long)h);
    if (w * h > ((int64_t)1 << 22)) {
        close(fd);
        return 0;
    }
    /* the header reader of the memory plan, and the check that reads every row and keeps
     * none: both agree with the full read */
    int64_t wi = 0, hi = 0, scratch = -1, wc = 0, hc = 0;
    float *none = (float *)&scratch;
    tsr_status sti = tsr_png_read_info(path, &wi, &hi, &scratch, &err);
    PROPERTY(sti == TSR_OK && wi == w && hi == h && scratch > 0, "info: %s", err.msg);
    tsr_error cerr = {TSR_OK, ""};
    tsr_status stc = tsr_png_check(path, &wc, &hc, &none, &cerr);
    PROPERTY(none == NULL, "the check returned pixels");
    float *px = NULL;
    int64_t w2 = 0, h2 = 0;
    err = (tsr_error){TSR_OK, ""};
    st = tsr_png_read_gray(path, &w2, &h2, &px, &err);
    PROPERTY(stc == st || (st == TSR_ENOMEM && stc == TSR_OK),
             "check %s (%s), read_gray %s (%s)", tsr_status_name(stc), cerr.msg,
             tsr_status_name(st), err.msg);
    PROPERTY(stc != TSR_OK || (wc == w && hc == h), "check %lld x %lld", (long long)wc,
             (long long)hc);
    if (st == TSR_OK) {
        PROPERTY(w2 == w && h2 == h, "read_gray %lld x %lld, read_size %lld x %lld",
                 (long long)w2, (long long)h2, (long long)w, (long long)h);
        PROPERTY(px != NULL, "no pixels");
        for (int64_t i = 0; i < w * h; i++)
            PROPERTY(px[i] >= 0.0f && px[i] <= 1.0f, "value %.9g at %lld", (double)px[i],
                     (long long)i);
        free(px);
    } else {
        PROPERTY(err.status == st && err.msg[0] && strstr(err.msg, path), "gray: %s", err.msg);
        PROPERTY(st == TSR_EINVAL || st == TSR_ENOMEM || st == TSR_EIO, "status %s: %s",
                 tsr_status_name(st), err.msg);
    }
    close(fd);
    return 0;
}
