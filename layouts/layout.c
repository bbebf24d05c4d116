/* Opening a layout: the file mapped, its format told by content, its reader run, the result
 * indexed. */
#include "layouts/layouts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char oasis_magic[] = "%SEMI-OASIS\r\n";

/* A DXF file is text of group code / value lines; its first group is 0 SECTION, or 999 (a
 * comment). Leading blanks are allowed on the code line. Binary DXF is told too, so that the
 * DXF reader refuses it by name rather than as no layout at all. */
static bool
looks_dxf(const uint8_t *b, size_t len)
{
    static const char binary[] = "AutoCAD Binary DXF";
    if (len >= sizeof binary - 1 && memcmp(b, binary, sizeof binary - 1) == 0)
        return true;
    size_t i = 0;
    while (i < len && (b[i] == ' ' || b[i] == '\t'))
        i++;
    if (i + 1 < len && b[i] == '0' && (b[i + 1] == '\r' || b[i + 1] == '\n'))
        return true;
    return i + 3 < len && memcmp(b + i, "999", 3) == 0 && (b[i + 3] == '\r' || b[i + 3] == '\n');
}

bool
tsr_layout_sniff(const uint8_t *buf, size_t len, tsr_layout_format *f)
{
    /* GDSII: the first record is HEADER (type 0x00, data type 0x02), 6 bytes long */
    if (len >= 6 && buf[0] == 0 && buf[1] == 6 && buf[2] == 0x00 && buf[3] == 0x02) {
        *f = TSR_LAYOUT_GDSII;
        return true;
    }
    if (len >= sizeof oasis_magic - 1 && memcmp(buf, oasis_magic, sizeof oasis_magic - 1) == 0) {
        *f = TSR_LAYOUT_OASIS;
        return true;
    }
    if (looks_dxf(buf, len)) {
        *f = TSR_LAYOUT_DXF;
        return true;
    }
    return false;
}

/* The reader for the bytes' format, into a new layout, not indexed yet. */
static tsr_layout *
read_only(const uint8_t *buf, size_t len, const char *name, const tsr_layout_opts *o,
          tsr_error *err)
{
    static const tsr_layout_opts none = {0};
    tsr_layout_format f;
    if (!tsr_layout_sniff(buf, len, &f)) {
        tsr_fail(err, TSR_EINVAL, "%s: byte 0: not a GDSII, OASIS or DXF file", name);
        return NULL;
    }
    tsr_layout *l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup(name))) {
        free(l);
        tsr_fail(err, TSR_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    l->format = f;
    tsr_status st;
    o = o ? o : &none;
    switch (f) {
    case TSR_LAYOUT_GDSII: st = tsr_gdsii_read(buf, len, o, l, err); break;
    case TSR_LAYOUT_OASIS: st = tsr_oasis_read(buf, len, o, l, err); break;
    default: st = tsr_dxf_read(buf, len, o, l, err); break;
    }
    if (st != TSR_OK) {
        tsr_layout_free(l);
        return NULL;
    }
    return l;
}

static tsr_layout *
indexed(tsr_layout *l, tsr_error *err)
{
    if (l && tsr_layout_index(l, err) != TSR_OK) {
        tsr_layout_free(l);
        return NULL;
    }
    return l;
}

tsr_layout *
tsr_layout_read(const uint8_t *buf, size_t len, const char *name, const tsr_layout_opts *o,
                tsr_error *err)
{
    return indexed(read_only(buf, len, name, o, err), err);
}

/* The part of a mapped file a reader has passed (tsr_layout_opts.consumed). */
typedef struct passed {
    uint8_t *map;
    size_t len, done; /* bytes given back so far, whole pages */
    const tsr_layout_opts *caller;
} passed;

/* Drop the pages before off from the process (MADV_DONTNEED on a private, never written file
 * mapping: a later read faults them in from the file again, the same bytes), then tell the
 * caller. Without this a 1.6 GB GDSII file stayed resident while its model grew. */
static void
give_back(void *ctx, size_t off)
{
    passed *p = ctx;
    long page = sysconf(_SC_PAGESIZE);
    size_t end = page > 0 ? off / (size_t)page * (size_t)page : 0;
    if (end > p->done && end <= p->len) {
        (void)madvise(p->map + p->done, end - p->done, MADV_DONTNEED); /* a hint: failure is harmless */
        p->done = end;
    }
    if (p->caller && p->caller->consumed)
        p->caller->consumed(p->caller->consumed_ctx, off);
}

tsr_layout *
tsr_layout_open(const char *path, const tsr_layout_opts *o, tsr_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) { /* a FIFO or a device would block or never end */
        close(fd);
        tsr_fail(err, TSR_EINVAL, "%s: not a regular file", path);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    const uint8_t *buf = (const uint8_t *)"";
    void *map = NULL;
    if (len > 0) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
            close(fd);
            return NULL;
        }
        buf = map;
    }
    close(fd);
    tsr_layout_opts mine = o ? *o : (tsr_layout_opts){0};
    passed pg = {map, len, 0, o};
    if (map) {
        mine.consumed = give_back;
        mine.consumed_ctx = &pg;
    }
    tsr_layout *l = read_only(buf, len, path, &mine, err);
    if (map) /* before indexing: the mapped file would count in the peak beside the index */
        munmap(map, len);
    return indexed(l, err);
}
