/* image: opening and checking for the streaming writers (image_int.h). */
#include "image/image_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
tsr_image_open_seekable(const char *path, const char *what, tsr_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
        tsr_fail(err, TSR_EINVAL, "%s: a %s needs a regular file (it is written with seeks)",
                 path, what);
        return -1;
    }
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
        tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* raced by a rename between the stat and the open: check what we got */
    if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
        tsr_fail(err, TSR_EINVAL, "%s: a %s needs a regular file (it is written with seeks)",
                 path, what);
        close(fd);
        return -1;
    }
    return fd;
}

size_t
tsr_image_row_bytes(int64_t width, int bits)
{
    int64_t b;
    if (width < 0 || (bits != 1 && bits != 2 && bits != 4 && bits != 8 && bits != 16) || !tsr_mul_checked(width, bits, &b) ||
        !tsr_add_checked(b, 7, &b))
        return 0;
    return (size_t)(b / 8);
}

tsr_status
tsr_image_check_opts(const char *path, const char *what, const tsr_image_opts *o,
                     unsigned bits_ok, int64_t max_side, tsr_error *err)
{
    if (o->bits < 0 || o->bits > 16 || !(bits_ok & (1u << o->bits)))
        return tsr_fail(err, TSR_EINVAL, "%s: depth %d: a %s here holds %s", path, o->bits,
                        what, bits_ok & (1u << 16) ? "1, 2, 4, 8 or 16 bits" : "1, 4 or 8 bits");
    if (o->width < 1 || o->height < 1 || o->width > max_side || o->height > max_side)
        return tsr_fail(err, TSR_EINVAL, "%s: size %lld x %lld: a %s holds 1 .. %lld pixels a "
                        "side", path, (long long)o->width, (long long)o->height, what,
                        (long long)max_side);
    for (int i = 0; i < 2; i++)
        if (!(o->pitch_um[i] >= 0) || isinf(o->pitch_um[i]))
            return tsr_fail(err, TSR_EINVAL, "%s: pitch %g um: must be positive (0: unknown)",
                            path, o->pitch_um[i]);
    if (o->strip_rows < 0)
        return tsr_fail(err, TSR_EINVAL, "%s: strip_rows %lld: must be positive (0: auto)",
                        path, (long long)o->strip_rows);
    if ((unsigned)o->compression > TSR_TIFF_DEFLATE)
        return tsr_fail(err, TSR_EINVAL, "%s: unknown compression %d", path, (int)o->compression);
    return TSR_OK;
}
