/* vips_bench: the libvips peer of designs/bench/{repeat,blur4,blur32}.yaml (scripts/bench-cpu.sh).
 *
 * Pipeline, in libvips's own demand-driven threading (VIPS_CONCURRENCY, default 2 here):
 *   motif 100x100 float 0/1 (uchar 0/255 with --uchar), a disc of radius 40 on 0, computed in
 *   memory with tessera's inside test on pixel centres: (x+0.5-50)^2 + (y+0.5-50)^2 <= 40^2
 *   (docs/format.md §4)
 *   -> vips_replicate (103 x 103 copies) -> vips_extract_area 10240 x 10240
 *   -> [vips_gaussblur(sigma), float precision unless --precision says otherwise]
 *   -> vips_linear1(255, 0.5) (1, 0.5 for a uchar motif) -> vips_cast(uchar): truncation of
 *      v*255+0.5, which is tessera's floor(v*255+0.5) for the non-negative values here; cast
 *      clips to 0..255 like tessera's clamp (a uchar result of replicate or an integer-precision
 *      blur is written as it is)
 *   -> vips_rawsave to /dev/null (or -o PATH, to compare bytes with tessera's output).
 *
 * gaussblur's mask: by default min_ampl = 0.001, the smallest libvips accepts: the mask reaches
 * to about 3.7 sigma (the Gaussian mass it drops is ~2e-4), near the support of docs/format.md's
 * reference (r = ceil(4s)) and well inside its 2e-3 tolerance. libvips's own default (min_ampl
 * 0.2, about 1.8 sigma) is available with --min-ampl 0.2; it is cheaper but not within the
 * tolerance.
 *
 * --uchar builds the motif as uchar 0/255 instead of float 0/1 (so replicate moves 1 byte per
 * pixel; the output conversion is then linear(1, 0.5) + cast). For repeat that gives the same
 * bytes as tessera and is libvips's fastest path. --precision float|integer|approximate picks
 * gaussblur's arithmetic: float (default) stays within 1 sample of tessera's output; integer
 * (libvips's default for uchar input, its fast path) quantises the mask and was measured up to
 * 4 samples off; approximate is libvips's box-filter approximation (vips_convasep).
 *
 * Usage: vips_bench repeat|blur SIGMA [-o PATH] [--min-ampl A] [--uchar]
 *                   [--precision float|integer|approximate]
 * Prints one line: mode, bytes, seconds, MB/s (1e6 bytes/s, output bytes / wall seconds measured
 * from motif creation to the end of the write), and the CPU seconds (user + system, all threads,
 * getrusage) over the same span with MB per CPU second. Exit 0 on success, 1 on a libvips
 * error, 2 on usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <vips/vips.h>

enum { MOTIF = 100, SIDE = 10240 };

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds (user + system) of the whole process, every thread included */
static double
cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int
usage(void)
{
    fprintf(stderr, "usage: vips_bench repeat|blur SIGMA [-o PATH] [--min-ampl A] [--uchar]\n"
                    "                  [--precision float|integer|approximate]\n");
    return 2;
}

/* The motif as a new image (owned by the caller), or NULL on a libvips error. */
static VipsImage *
motif_new(int as_uchar)
{
    static float f[MOTIF * MOTIF];
    static unsigned char u[MOTIF * MOTIF];
    for (int y = 0; y < MOTIF; y++)
        for (int x = 0; x < MOTIF; x++) {
            double dx = x + 0.5 - 50.0, dy = y + 0.5 - 50.0;
            int in = dx * dx + dy * dy <= 40.0 * 40.0;
            f[y * MOTIF + x] = in ? 1.0f : 0.0f;
            u[y * MOTIF + x] = in ? 255 : 0;
        }
    if (as_uchar)
        return vips_image_new_from_memory_copy(u, sizeof u, MOTIF, MOTIF, 1, VIPS_FORMAT_UCHAR);
    return vips_image_new_from_memory_copy(f, sizeof f, MOTIF, MOTIF, 1, VIPS_FORMAT_FLOAT);
}

int
main(int argc, char **argv)
{
    if (VIPS_INIT(argv[0]))
        vips_error_exit("vips_init");
    if (!getenv("VIPS_CONCURRENCY"))
        vips_concurrency_set(2);
    /* each run is a fresh process; the operation cache only costs time here */
    vips_cache_set_max(0);

    if (argc < 2)
        return usage();
    int blur = 0, as_uchar = 0;
    VipsPrecision prec = VIPS_PRECISION_FLOAT;
    static const char *const prec_names[] = {"integer", "float", "approximate"};
    double sigma = 0, min_ampl = 0.001;
    const char *out_path = "/dev/null";
    int i = 1;
    if (!strcmp(argv[i], "repeat")) {
        i++;
    } else if (!strcmp(argv[i], "blur") && argc > 2) {
        blur = 1;
        sigma = strtod(argv[i + 1], NULL);
        if (!(sigma > 0))
            return usage();
        i += 2;
    } else {
        return usage();
    }
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--min-ampl") && i + 1 < argc)
            min_ampl = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--uchar"))
            as_uchar = 1;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "integer"))
                prec = VIPS_PRECISION_INTEGER;
            else if (!strcmp(v, "float"))
                prec = VIPS_PRECISION_FLOAT;
            else if (!strcmp(v, "approximate"))
                prec = VIPS_PRECISION_APPROXIMATE;
            else
                return usage();
        }
        else
            return usage();
    }

    /* t[] holds every intermediate image; the object tree unrefs it with `base` */
    VipsImage *base = vips_image_new();
    VipsImage **t = (VipsImage **)vips_object_local_array(VIPS_OBJECT(base), 8);
    int across = (SIDE + MOTIF - 1) / MOTIF;
    double t0 = now(), c0 = cpu_now();
    if (!(t[0] = motif_new(as_uchar)) || vips_replicate(t[0], &t[1], across, across, NULL) ||
        vips_extract_area(t[1], &t[2], 0, 0, SIDE, SIDE, NULL))
        goto fail;
    VipsImage *plane = t[2];
    if (blur) {
        if (vips_gaussblur(plane, &t[3], sigma, "min_ampl", min_ampl, "precision", prec, NULL))
            goto fail;
        plane = t[3];
    }
    VipsImage *out;
    if (plane->BandFmt == VIPS_FORMAT_UCHAR) {
        out = plane;
    } else {
        double k = as_uchar ? 1.0 : 255.0;
        if (vips_linear1(plane, &t[4], k, 0.5, NULL) ||
            vips_cast(t[4], &t[5], VIPS_FORMAT_UCHAR, NULL))
            goto fail;
        out = t[5];
    }
    if (vips_rawsave(out, out_path, NULL))
        goto fail;
    double secs = now() - t0, cpu = cpu_now() - c0;
    double bytes = (double)SIDE * SIDE;
    printf("vips %s motif=%s precision=%s sigma=%g min_ampl=%g concurrency=%d bytes=%.0f "
           "seconds=%.3f MB/s=%.1f cpu_seconds=%.3f MB/cpu-s=%.1f\n",
           blur ? "blur" : "repeat", as_uchar ? "uchar" : "float", blur ? prec_names[prec] : "-",
           sigma, min_ampl, vips_concurrency_get(), bytes, secs, bytes / secs / 1e6, cpu,
           bytes / cpu / 1e6);
    g_object_unref(base);
    vips_shutdown();
    return 0;
fail:
    fprintf(stderr, "vips_bench: %s", vips_error_buffer());
    g_object_unref(base);
    vips_shutdown();
    return 1;
}
