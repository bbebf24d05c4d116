/* pull: a controller-side program over libtessera. It opens a job for a design, prints the
 * stream's header, and pulls the stream in output order into a 1 MiB buffer, the way a
 * controller's DMA loop would, writing it to OUT; with an offset it resumes: OUT keeps its
 * first OFFSET bytes and the rest is appended. Ctrl-C stops the job cleanly (tsr_job_stop is
 * async-signal-safe) and prints the offset to resume from.
 *
 *     cc pull.c $(pkg-config --cflags --libs tessera) -o pull
 *     ./pull design.yaml out.raw [OFFSET]
 *
 * Exit status: 0 done, 1 render or I/O failure (or stopped), 2 bad arguments or design. */
#include <tessera.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tsr_job *volatile job; /* for the signal handler */

static void
on_signal(int sig)
{
    (void)sig;
    if (job)
        tsr_job_stop(job);
}

/* Write all n bytes; false on failure (errno set). */
static int
write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

int
main(int argc, char **argv)
{
    static uint8_t buf[1 << 20];
    tsr_error err;
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: pull DESIGN OUT [OFFSET]   (libtessera %s)\n", tsr_version());
        return 2;
    }
    char *end = NULL;
    uint64_t at = argc == 4 ? strtoull(argv[3], &end, 10) : 0;
    if (argc == 4 && (*argv[3] < '0' || *argv[3] > '9' || *end)) {
        fprintf(stderr, "pull: %s: expected a byte offset\n", argv[3]);
        return 2;
    }
    tsr_job_opts opts = {.backend = "auto"}; /* every other option: its default */
    tsr_job *j = tsr_job_open(argv[1], &opts, &err);
    if (!j) {
        fprintf(stderr, "pull: %s\n", err.msg);
        return err.status == TSR_EINVAL || err.status == TSR_EPLAN ? 2 : 1;
    }
    tsr_header h;
    int rc = 1, fd = -1;
    if (tsr_job_header(j, &h, &err) != TSR_OK || tsr_job_seek(j, at, &err) != TSR_OK) {
        fprintf(stderr, "pull: %s\n", err.msg);
        rc = err.status == TSR_EINVAL ? 2 : 1;
        goto done;
    }
    printf("%" PRIu64 " x %" PRIu64 ", %u bit, %" PRIu64 " bytes, fingerprint ", h.width,
           h.height, (unsigned)h.depth, h.total);
    for (int i = 0; i < 8; i++)
        printf("%02x", h.fingerprint[i]);
    printf("..., from byte %" PRIu64 "\n", at);
    /* a resume keeps the bytes OUT holds before the offset: no O_TRUNC */
    struct stat sb;
    fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < at ||
        (S_ISREG(sb.st_mode) && ftruncate(fd, (off_t)at) != 0) ||
        lseek(fd, (off_t)at, SEEK_SET) < 0) {
        fprintf(stderr, "pull: %s: %s\n", argv[2],
                fd >= 0 && (uint64_t)sb.st_size < at ? "holds fewer bytes than the offset"
                                                     : strerror(errno));
        goto done;
    }
    job = j;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int64_t n;
    while ((n = tsr_job_read(j, buf, sizeof buf)) > 0) {
        if (!write_all(fd, buf, (size_t)n)) {
            fprintf(stderr, "pull: %s: %s\n", argv[2], strerror(errno));
            goto done;
        }
    }
    if (n < 0) {
        fprintf(stderr, "pull: %s; resume with: pull %s %s %" PRIu64 "\n",
                tsr_job_error(j)->msg, argv[1], argv[2], tsr_job_offset(j));
        goto done;
    }
    rc = 0;
done:
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    job = NULL;
    if (fd >= 0 && close(fd) != 0 && rc == 0) {
        fprintf(stderr, "pull: %s: %s\n", argv[2], strerror(errno));
        rc = 1;
    }
    tsr_job_close(j);
    return rc;
}
