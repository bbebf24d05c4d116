/* image: what the streaming writers (tiff.c, bmp.c) share. */
#ifndef TSR_IMAGE_INT_H
#define TSR_IMAGE_INT_H

#include "image/image.h"

/* Open `path` for a writer that seeks: a regular file (created, or truncated in place: a
 * symlink stays a symlink) or a block device. Anything else that exists (a FIFO, a character
 * device, a socket) is refused before it is opened, so a FIFO with no reader cannot hang us:
 * TSR_EINVAL "x.tif: a TIFF needs a regular file (it is written with seeks)". `what` names the
 * format. The descriptor, or -1 with err filled (TSR_EIO for a failed open). */
int
tsr_image_open_seekable(const char *path, const char *what, tsr_error *err);

/* Check o for a writer of `what` that takes depths `bits_ok` (a bit set: 1 << bits) and sizes
 * up to max_side; TSR_EINVAL naming the field. */
tsr_status
tsr_image_check_opts(const char *path, const char *what, const tsr_image_opts *o,
                     unsigned bits_ok, int64_t max_side, tsr_error *err);

#endif
