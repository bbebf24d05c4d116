/* A main() for the fuzz targets without libFuzzer: runs every file named on the command line
 * (a directory: every regular file in it, sorted) through LLVMFuzzerTestOneInput once. ctest
 * replays tests/fuzz/regress/ and the seed corpus with it in every build, so a crasher found
 * once stays fixed and CI needs no clang. Exit status 0 when every input ran; a finding aborts
 * (sanitizers, PROPERTY) and so fails the test. */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            return fclose(f), fprintf(stderr, "%s: out of memory\n", path), 1;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *b = realloc(buf, cap * 2);
        if (!b)
            free(buf);
        buf = b;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return 1;
    }
    /* an exact-size copy, so ASan sees reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int
cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                return closedir(d), 1;
            names = nn;
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            return closedir(d), 1;
        snprintf(names[n++], len, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            rc |= run_file(names[i]);
            (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int
main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            rc = 1;
        } else if (S_ISDIR(sb.st_mode)) {
            rc |= run_dir(argv[i], &count);
        } else {
            rc |= run_file(argv[i]);
            count++;
        }
    }
    fprintf(stderr, "%d inputs replayed%s\n", count, rc ? ", some unreadable" : "");
    return rc;
}
