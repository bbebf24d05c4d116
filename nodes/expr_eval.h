/* The evaluator of nodes/expr.h's programs, once for every backend (nodes/pointwise.h's TSR_HD:
 * gcc compiles it into nodes/, nvcc into gpu/ kernels; with -ffp-contract=off and --fmad=false
 * both emit the same IEEE operations, so a copy's value has the same bits everywhere).
 *
 * Each operation is exactly one of: IEEE + - * / (round to nearest), sqrt (correctly rounded
 * on both: nvcc's default -prec-sqrt=true), floor, ceil, fabs (exact), comparisons (1.0 or 0.0,
 * NaN compares false), and selections written as C ternaries (their NaN rules, not fmin's). No
 * transcendental function is offered: glibc's and CUDA's sin, exp, pow differ in the last bit.
 * i and j are converted to double exactly (|i|, |j| < 2^53 always: coordinates are <= 2^40). */
#ifndef TSR_NODES_EXPR_EVAL_H
#define TSR_NODES_EXPR_EVAL_H

#include "nodes/expr.h"
#include "nodes/pointwise.h"

#include <math.h>

/* The value of program e at copy (i, j). The parser bounded the stack depth and checked every
 * operand count and constant index, so this never leaves its arrays for a program it made. */
TSR_HD static inline double
tsr_expr_eval(const tsr_expr *e, int64_t i, int64_t j)
{
    double s[TSR_EXPR_STACK];
    int n = 0;
    for (int k = 0; k < e->nops; k++) {
        double a, b, c;
        switch (e->op[k]) {
        case TSR_XOP_CONST: s[n++] = e->k[e->arg[k]]; break;
        case TSR_XOP_I: s[n++] = (double)i; break;
        case TSR_XOP_J: s[n++] = (double)j; break;
        case TSR_XOP_NEG: s[n - 1] = -s[n - 1]; break;
        case TSR_XOP_SQRT: s[n - 1] = sqrt(s[n - 1]); break;
        case TSR_XOP_ABS: s[n - 1] = fabs(s[n - 1]); break;
        case TSR_XOP_FLOOR: s[n - 1] = floor(s[n - 1]); break;
        case TSR_XOP_CEIL: s[n - 1] = ceil(s[n - 1]); break;
        case TSR_XOP_TABLE: {
            const double *t = e->k + e->arg[k];
            /* cols, rows, i0, j0 are exact integers below 2^41; a table of one row holds for
             * every j, one of one column for every i */
            int64_t ci = t[0] == 1.0 ? 0 : i - (int64_t)t[2];
            int64_t rj = t[1] == 1.0 ? 0 : j - (int64_t)t[3];
            if (ci < 0 || rj < 0 || ci >= (int64_t)t[0] || rj >= (int64_t)t[1])
                s[n++] = t[4];
            else
                s[n++] = t[5 + rj * (int64_t)t[0] + ci];
            break;
        }
        case TSR_XOP_SEL:
            c = s[n - 3], a = s[n - 2], b = s[n - 1];
            n -= 2;
            s[n - 1] = c != 0.0 ? a : b;
            break;
        case TSR_XOP_CLAMP:
            c = s[n - 3], a = s[n - 2], b = s[n - 1]; /* x, lo, hi */
            n -= 2;
            c = a > c ? a : c;
            s[n - 1] = b < c ? b : c;
            break;
        default:
            a = s[n - 2], b = s[n - 1];
            n--;
            switch (e->op[k]) {
            case TSR_XOP_ADD: c = a + b; break;
            case TSR_XOP_SUB: c = a - b; break;
            case TSR_XOP_MUL: c = a * b; break;
            case TSR_XOP_DIV: c = a / b; break;
            case TSR_XOP_MOD: c = a - b * floor(a / b); break;
            case TSR_XOP_LT: c = a < b ? 1.0 : 0.0; break;
            case TSR_XOP_LE: c = a <= b ? 1.0 : 0.0; break;
            case TSR_XOP_GT: c = a > b ? 1.0 : 0.0; break;
            case TSR_XOP_GE: c = a >= b ? 1.0 : 0.0; break;
            case TSR_XOP_EQ: c = a == b ? 1.0 : 0.0; break;
            case TSR_XOP_NE: c = a != b ? 1.0 : 0.0; break;
            case TSR_XOP_MIN: c = b < a ? b : a; break;
            case TSR_XOP_MAX: c = b > a ? b : a; break;
            default: c = 0.0; break;
            }
            s[n - 1] = c;
            break;
        }
    }
    return n ? s[n - 1] : 0.0;
}

/* ---- lattice jitter (docs/variation.md) ------------------------------------------------------ */

/* SplitMix64's output function of state z (Steele, Lea, Flood 2014): a bijection of 64-bit words
 * whose outputs for consecutive z pass BigCrush. */
TSR_HD static inline uint64_t
tsr_splitmix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Copy (i, j)'s displacement for `seed` within [-b[0], b[0]] x [-b[1], b[1]] (each b <= 2^20):
 * h = mix(mix(mix(seed) ^ i) ^ j), dx from h's high 32 bits, dy from its low 32 bits, each as
 * floor(word * (2b + 1) / 2^32) - b. Integer arithmetic only: every backend, tile and resume
 * gets the same vector. */
TSR_HD static inline void
tsr_jitter(uint64_t seed, const int64_t b[2], int64_t i, int64_t j, int64_t d[2])
{
    uint64_t h = tsr_splitmix64(tsr_splitmix64(tsr_splitmix64(seed) ^ (uint64_t)i) ^ (uint64_t)j);
    d[0] = (int64_t)(((h >> 32) * (uint64_t)(2 * b[0] + 1)) >> 32) - b[0];
    d[1] = (int64_t)(((h & 0xFFFFFFFFull) * (uint64_t)(2 * b[1] + 1)) >> 32) - b[1];
}

#endif
