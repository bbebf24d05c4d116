/* Fuzz target: nodes/expr.c's parser of per-copy functions (docs/variation.md), the one reader
 * of expression text a design holds. One input is one expression (cut at its first NUL).
 * Properties: a refused text leaves the program absent and names an offset inside the text
 * with a message; an accepted one evaluates (no stack or constant index out of bounds: ASan
 * and UBSan builds catch those) and its formatted text parses back to a program with the same
 * values, bit for bit, at every (i, j) tried. */
#include "nodes/expr.h"
#include "nodes/expr_eval.h"

#define FUZZ_TARGET "fuzz_expr"
#include "tests/fuzz/fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int64_t at_ij[][2] = {{0, 0}, {1, 0}, {0, 1}, {-3, 7}, {1000, -999},
                                   {(int64_t)1 << 40, -((int64_t)1 << 40)}};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = 0;
    size_t len = strlen(text);
    tsr_expr *e = malloc(sizeof *e), *f = malloc(sizeof *f);
    char *buf = malloc(1 << 16);
    if (!e || !f || !buf)
        abort();
    size_t at = (size_t)-1;
    char msg[160];
    if (!tsr_expr_parse(text, e, &at, msg, sizeof msg)) {
        PROPERTY(e->nops == 0, "a refused text left %d operations", (int)e->nops);
        PROPERTY(at <= len, "error offset %zu past the text's %zu bytes", at, len);
        PROPERTY(msg[0] != 0, "error without a message");
    } else {
        PROPERTY(e->nops > 0, "an accepted text compiled to nothing");
        size_t n = tsr_expr_format(e, buf, 1 << 16);
        PROPERTY(n < (1 << 16) && n >= 2 && buf[0] == '"' && buf[n - 1] == '"',
                 "formatted as %.80s", buf);
        buf[n - 1] = 0;
        PROPERTY(tsr_expr_parse(buf + 1, f, &at, msg, sizeof msg),
                 "formatted text %.200s does not parse: %s", buf + 1, msg);
        for (size_t k = 0; k < sizeof at_ij / sizeof at_ij[0]; k++) {
                double a = tsr_expr_eval(e, at_ij[k][0], at_ij[k][1]);
                double b = tsr_expr_eval(f, at_ij[k][0], at_ij[k][1]);
                PROPERTY(memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b),
                         "%s gives %.17g, its formatted text %.17g", text, a, b);
            }
    }
    free(text);
    free(e);
    free(f);
    free(buf);
    return 0;
}
