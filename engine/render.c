/* The render policy `tessera render` runs, behind one call: the resume offset's check, the
 * header, the sink, the stream, and on a failure or a stop the abort frame and where to resume
 * from. It decides and reports (tsr_render_result); the caller says it in its own words, so
 * the CLI's messages and exit statuses stay in cli/ and the engine prints nothing. */
#include "engine/engine_int.h"
#include "tiles/tune.h"

#include <signal.h>
#include <string.h>

tsr_status
tsr_engine_resume_check(const tsr_engine *e, uint64_t offset, tsr_error *err)
{
    uint64_t total = tsr_engine_stream_bytes(e);
    if (offset > total)
        return tsr_fail(err, TSR_EINVAL, "offset %llu is past the end of the stream (%llu bytes)",
                        (unsigned long long)offset, (unsigned long long)total);
    return TSR_OK;
}

static bool
stopped(const tsr_render_opts *o)
{
    return o->stop && *o->stop;
}

/* The abort frame's reason: the receiver learns why, in words a log can show. A stop flag
 * holding a signal number names it (the CLI's handler stores the signal). */
static const char *
abort_reason(const tsr_render_opts *o, const tsr_error *err)
{
    if (!stopped(o))
        return err->msg;
    if (*o->stop == SIGTERM)
        return "interrupted by SIGTERM";
    if (*o->stop == SIGINT)
        return "interrupted by SIGINT";
    if (*o->stop == SIGCONT) /* under mpirun: how Open MPI starts to end a job */
        return "interrupted: mpirun is ending the job (a rank ended, or mpirun was stopped)";
    return "interrupted (stop requested)";
}

/* How to complete an output that did not finish: a tcp receiver knows what it holds and
 * answers the offset; a file or pipe resumes from the last byte delivered, worth saying
 * after a stop always and after a failure only when something went out. */
static tsr_resume_how
resume_how(const tsr_render_opts *o, const tsr_render_result *r)
{
    if (r->tcp)
        return TSR_RESUME_RECEIVER;
    return stopped(o) || r->offset > r->start ? TSR_RESUME_AT : TSR_RESUME_NONE;
}

/* The stream through an open sink, its trailer, and the abort frame instead when either
 * fails. Fills the result's counters; the sink stays open. */
static tsr_status
stream_through(tsr_engine *e, tsr_sink *s, const tsr_render_opts *o, tsr_render_result *r,
               tsr_error *err)
{
    uint64_t t0 = tsr_now_ns();
    tsr_stream_opts so = {.start = r->start, .stop = o->stop, .computed = o->computed};
    tsr_status st = tsr_engine_stream_ex(e, s, &so, err);
    if (st == TSR_OK)
        st = tsr_sink_finish(s, err);
    r->seconds = (double)(tsr_now_ns() - t0) * 1e-9;
    r->underruns = tsr_sink_underruns(s, &r->starved_s);
    r->offset = tsr_sink_offset(s);
    if (st != TSR_OK) {
        r->step = TSR_RENDER_STREAM;
        r->stopped = stopped(o);
        r->resume = resume_how(o, r);
        tsr_sink_abort(s, abort_reason(o, err), NULL); /* never a trailer after a failure */
    }
    return st;
}

/* The steps in order; `le` gets every failure (err may be NULL, the abort reason needs it). */
static tsr_status
render_steps(tsr_engine *e, const tsr_render_opts *o, tsr_render_result *r, tsr_error *le)
{
    const char *out = o->out ? o->out : "-";
    tsr_status st;
    r->step = TSR_RENDER_RESUME;
    if (o->have_resume && (st = tsr_engine_resume_check(e, o->resume_at, le)) != TSR_OK)
        return st;
    tsr_header hdr;
    tsr_sink_opts so = {.start = o->resume_at, .framed = o->framed || r->tcp,
                        .deflate = o->deflate, .rate = o->rate, .stop = o->stop,
                        .stall_s = o->stall_s, .fault = tsr_tune_get()->sink_fault};
    if (so.framed) {
        r->step = TSR_RENDER_HEADER;
        if ((st = tsr_engine_header(e, &hdr, le)) != TSR_OK)
            return st;
        if (o->profile) {
            hdr.version = 2;
            hdr.flags |= TSR_HEADER_PROFILE;
        }
        so.header = &hdr;
    }
    /* an image file (.tif, .bmp) or a raw file with its sidecar needs the stream's geometry
     * and fingerprint (docs/outputs.md) */
    tsr_sink_image im;
    if (!so.framed && tsr_sink_wants_image(out)) {
        r->step = TSR_RENDER_HEADER;
        if ((st = tsr_engine_header(e, &hdr, le)) != TSR_OK)
            return st;
        tsr_sink_image_from_header(&hdr, &im);
        so.image = &im;
    }
    r->step = TSR_RENDER_OPEN;
    tsr_sink *s = tsr_sink_open_ex(out, &so, le);
    if (!s) {
        r->stopped = stopped(o); /* a stop while connecting or waiting for the receiver */
        return le->status;
    }
    r->start = r->offset = tsr_sink_start(s);
    if (o->computed)
        atomic_store(o->computed, r->start);
    if (o->opened)
        o->opened(o->ctx, s);
    st = stream_through(e, s, o, r, le);
    if (o->ending)
        o->ending(o->ctx, s, st == TSR_OK);
    if (st != TSR_OK) {
        tsr_sink_close(s, NULL); /* the stream's failure is the one to report */
        return st;
    }
    if ((st = tsr_sink_close(s, le)) != TSR_OK) {
        r->step = TSR_RENDER_CLOSE;
        return st;
    }
    r->step = TSR_RENDER_DONE;
    return TSR_OK;
}

tsr_status
tsr_engine_render_to(tsr_engine *e, const tsr_render_opts *o, tsr_render_result *r,
                     tsr_error *err)
{
    tsr_error le = {0};
    *r = (tsr_render_result){.tcp = o->out && strncmp(o->out, "tcp://", 6) == 0,
                             .total = tsr_engine_stream_bytes(e)};
    tsr_status st = render_steps(e, o, r, &le);
    if (st != TSR_OK && err)
        *err = le;
    return st;
}
