/* render: tsr_engine_render_to's decisions (engine/render.c), the policy `tessera render`
 * prints: where a render ended, whether a stop ended it, how to resume, the abort frame's
 * reason, and the resume check tsr_job_seek shares. */
#include "engine/engine.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(render, .init = th_dir_make, .fini = th_dir_remove);

static const char yaml[] =
    "tessera: 1\n"
    "tile: 64\n"
    "nodes:\n"
    "  lens: {size: [60, 52], source: {shape: circle, center: [30, 26], radius: 21}}\n"
    "root:\n"
    "  size: [300, 100]\n"
    "  children: [{trait: repeat, ref: lens}]\n";

typedef struct hooks {
    int opened, ending;
    bool ok;
    uint64_t computed_at_open;
    _Atomic uint64_t computed;
} hooks;

static void
on_opened(void *ctx, tsr_sink *s)
{
    hooks *h = ctx;
    h->opened++;
    h->computed_at_open = atomic_load(&h->computed);
    cr_assert_eq(tsr_sink_start(s), h->computed_at_open);
}

static void
on_ending(void *ctx, tsr_sink *s, bool ok)
{
    hooks *h = ctx;
    (void)s;
    h->ending++;
    h->ok = ok;
}

static tsr_engine *
engine(tsr_design **d)
{
    tsr_error err = {0};
    *d = th_design(yaml);
    tsr_engine_opts eo = {.backend = "cpu", .threads = 1};
    tsr_engine *e = tsr_engine_new(*d, &eo, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_eq(tsr_engine_stream_bytes(e), 30000);
    return e;
}

Test(render, resume_past_the_end_opens_nothing_and_says_the_offset)
{
    tsr_design *d;
    tsr_engine *e = engine(&d);
    const char *out = th_in_dir("past.raw");
    tsr_render_opts o = {.out = out, .have_resume = true, .resume_at = 30001};
    tsr_render_result r;
    tsr_error err = {0};
    cr_assert_eq(tsr_engine_render_to(e, &o, &r, &err), TSR_EINVAL);
    cr_assert_eq(r.step, TSR_RENDER_RESUME);
    cr_assert_eq(r.total, 30000);
    cr_assert_str_eq(err.msg, "offset 30001 is past the end of the stream (30000 bytes)");
    struct stat st;
    cr_assert_eq(stat(out, &st), -1, "the output was created");
    /* the library's seek gives the same answer: one check */
    cr_assert_eq(tsr_engine_resume_check(e, 30001, &err), TSR_EINVAL);
    cr_assert_eq(tsr_engine_resume_check(e, 30000, NULL), TSR_OK);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(render, a_whole_render_reports_done_and_calls_each_hook_once)
{
    tsr_design *d;
    tsr_engine *e = engine(&d);
    hooks h = {0};
    tsr_render_opts o = {.out = th_in_dir("whole.tsr"), .framed = true, .computed = &h.computed,
                         .opened = on_opened, .ending = on_ending, .ctx = &h};
    tsr_render_result r;
    tsr_error err = {0};
    cr_assert_eq(tsr_engine_render_to(e, &o, &r, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(r.step, TSR_RENDER_DONE);
    cr_assert(!r.stopped && !r.tcp);
    cr_assert_eq(r.resume, TSR_RESUME_NONE);
    cr_assert_eq(r.start, 0);
    cr_assert_eq(r.offset, 30000);
    cr_assert_eq(h.opened, 1);
    cr_assert_eq(h.ending, 1);
    cr_assert(h.ok);
    cr_assert_eq(atomic_load(&h.computed), 30000);
    th_transcript t = th_parse_transcript_file(o.out);
    cr_assert(t.trailer && !t.abort);
    cr_assert_eq(t.bytes, 30000);
    free(t.data);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(render, a_stop_aborts_with_the_signal_and_resumes_where_it_ended)
{
    tsr_design *d;
    tsr_engine *e = engine(&d);
    volatile sig_atomic_t stop = SIGTERM; /* before the first band: nothing goes out */
    hooks h = {0};
    tsr_render_opts o = {.out = th_in_dir("stop.tsr"), .framed = true, .have_resume = true,
                         .resume_at = 1234, .stop = &stop, .computed = &h.computed,
                         .opened = on_opened, .ending = on_ending, .ctx = &h};
    tsr_render_result r;
    tsr_error err = {0};
    cr_assert_eq(tsr_engine_render_to(e, &o, &r, &err), TSR_EINTR, "%s", err.msg);
    cr_assert_eq(r.step, TSR_RENDER_STREAM);
    cr_assert(r.stopped);
    cr_assert_eq(r.resume, TSR_RESUME_AT); /* after a stop always, even with nothing sent */
    cr_assert_eq(r.start, 1234);
    cr_assert_eq(r.offset, 1234);
    cr_assert_eq(h.computed_at_open, 1234);
    cr_assert(h.ending == 1 && !h.ok);
    th_transcript t = th_parse_transcript_file(o.out);
    cr_assert(t.abort && !t.trailer);
    cr_assert_str_eq(t.reason, "interrupted by SIGTERM");
    cr_assert_eq(t.abort_offset, 1234);
    free(t.data);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* A failure (not a stop) names a resume point only when bytes went out: the error is the
 * abort frame's reason. */
Test(render, a_failure_resumes_only_past_the_start)
{
    tsr_design *d;
    tsr_engine *e = engine(&d);
    static const struct {
        const char *fault;
        tsr_resume_how how;
    } cases[] = {{"eio@0", TSR_RESUME_NONE}, {"eio@20000", TSR_RESUME_AT}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        th_env("TSR_FAULT", cases[i].fault); /* the sink's fault hook is a knob */
        tsr_render_opts o = {.out = th_in_dir("fail.raw")};
        tsr_render_result r;
        tsr_error err = {0};
        cr_assert_eq(tsr_engine_render_to(e, &o, &r, &err), TSR_EIO, "%s", cases[i].fault);
        cr_assert_eq(r.step, TSR_RENDER_STREAM);
        cr_assert(!r.stopped);
        cr_assert_eq(r.resume, cases[i].how, "%s: resume %d at offset %llu", cases[i].fault,
                     r.resume, (unsigned long long)r.offset);
        cr_assert(r.offset <= 20000);
    }
    th_env("TSR_FAULT", NULL);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(render, an_output_that_cannot_open_is_the_open_step)
{
    tsr_design *d;
    tsr_engine *e = engine(&d);
    tsr_render_opts o = {.out = th_in_dir("no/such/dir/x.raw")};
    tsr_render_result r;
    tsr_error err = {0};
    cr_assert_neq(tsr_engine_render_to(e, &o, &r, &err), TSR_OK);
    cr_assert_eq(r.step, TSR_RENDER_OPEN);
    cr_assert(!r.stopped);
    cr_assert(strstr(err.msg, "no/such/dir") != NULL, "%s", err.msg);
    tsr_engine_free(e);
    tsr_design_free(d);
}
