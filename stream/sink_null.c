/* stream: the null medium (see sink_int.h): bytes are counted and dropped; paced, it still
 * takes its time. */
#include "stream/sink_int.h"

tsr_status
tsr_sink_null_put(tsr_sink *s, size_t n, tsr_error *err)
{
    if (s->rate > 0) {
        /* A paced null sink still takes its time: it stands in for a machine. */
        for (size_t done = 0; done < n;) {
            size_t piece = n - done < s->chunk ? n - done : s->chunk;
            if (stopped(s))
                return tsr_sink_interrupted(s, err);
            if (tsr_sink_pace(s, piece, err) != TSR_OK)
                return s->first.status;
            atomic_fetch_add(&s->bytes, (uint64_t)piece);
            done += piece;
        }
        return TSR_OK;
    }
    if (stopped(s))
        return tsr_sink_interrupted(s, err);
    atomic_fetch_add(&s->bytes, (uint64_t)n);
    return TSR_OK;
}
