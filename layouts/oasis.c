/* The OASIS reader (to be written). */
#include "layouts/layouts.h"

tsr_status
tsr_oasis_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
           tsr_error *err)
{
    (void)buf, (void)len, (void)o;
    return tsr_fail(err, TSR_EINVAL, "%s: OASIS files are not read yet", l->path);
}
