/* Per-copy functions f(i, j) of a lattice copy's index (docs/variation.md): a number, a table
 * by row and column, a linear ramp, or an expression of the small language below, all compiled
 * into one stack program (tsr_expr) that nodes/expr_eval.h evaluates on the CPU and, by the
 * same code, on the GPU.
 *
 * A tsr_expr is a fixed-size value with no pointers: parameter structs hold it inline, kernels
 * take it by value, copies are plain assignments, and nothing is freed.
 *
 * Grammar (whitespace between tokens is free):
 *   expr    := cmp [ '?' expr ':' expr ]
 *   cmp     := sum [ ('<' | '<=' | '>' | '>=' | '==' | '!=') sum ]
 *   sum     := product { ('+' | '-') product }
 *   product := unary { ('*' | '/' | '%') unary }
 *   unary   := '-' unary | primary
 *   primary := number | 'i' | 'j' | 'pi' | '(' expr ')'
 *            | name '(' expr { ',' expr } ')'   name: sqrt abs floor ceil min max clamp
 *   number  := digits [ '.' digits ] [ ('e' | 'E') [ '+' | '-' ] digits ]  (strtod, C locale)
 * Arithmetic is IEEE double, one rounding per operation, evaluated as written: see
 * nodes/expr_eval.h for each operation's exact definition. */
#ifndef TSR_NODES_EXPR_H
#define TSR_NODES_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSR_EXPR_OPS 128    /* most operations in one program */
#define TSR_EXPR_CONSTS 272 /* most constants: a 16 x 16 table and its header fit */
#define TSR_EXPR_STACK 16   /* deepest evaluation stack */
#define TSR_EXPR_TEXT 8192  /* longest expression text, bytes: room for any program formatted */

typedef enum tsr_expr_op {
    TSR_XOP_CONST, /* push k[arg] */
    TSR_XOP_I,     /* push (double)i */
    TSR_XOP_J,     /* push (double)j */
    TSR_XOP_NEG,
    TSR_XOP_ADD,
    TSR_XOP_SUB,
    TSR_XOP_MUL,
    TSR_XOP_DIV,
    TSR_XOP_MOD,   /* a - b * floor(a / b) */
    TSR_XOP_LT,
    TSR_XOP_LE,
    TSR_XOP_GT,
    TSR_XOP_GE,
    TSR_XOP_EQ,
    TSR_XOP_NE,
    TSR_XOP_SEL,   /* c ? a : b (c != 0) */
    TSR_XOP_SQRT,
    TSR_XOP_ABS,
    TSR_XOP_FLOOR,
    TSR_XOP_CEIL,
    TSR_XOP_MIN,   /* b < a ? b : a */
    TSR_XOP_MAX,   /* b > a ? b : a */
    TSR_XOP_CLAMP, /* min(max(x, lo), hi) */
    TSR_XOP_TABLE, /* push the table at k[arg]: cols, rows, i0, j0, outside, then rows*cols
                    * values row by row (row = j - j0, column = i - i0) */
    TSR_XOP_COUNT
} tsr_expr_op;

/* A compiled function of (i, j). nops == 0: absent (the key was not given). */
typedef struct tsr_expr {
    uint16_t nops, nk;
    uint8_t op[TSR_EXPR_OPS];   /* tsr_expr_op */
    uint16_t arg[TSR_EXPR_OPS]; /* CONST, TABLE: index into k */
    double k[TSR_EXPR_CONSTS];
} tsr_expr;

/* Compile `text` (NUL-terminated; a YAML number's text is an expression too). On failure
 * returns false, *out is absent, *at is the byte offset of the offending character and msg
 * (size >= 1) says what was expected. Never reads past the NUL. Thread-safe. */
bool
tsr_expr_parse(const char *text, tsr_expr *out, size_t *at, char *msg, size_t msgsize);

/* A table of rows x cols values (row-major: values[r * cols + c] is copy (i0 + c, j0 + r)),
 * `outside` for every other copy. One row: the same for every j (a table by column); one
 * column: the same for every i (a table by row). False (msg says why) when rows * cols + 5 exceeds
 * TSR_EXPR_CONSTS or a size is 0. */
bool
tsr_expr_table(tsr_expr *out, size_t rows, size_t cols, const double *values, int64_t i0,
               int64_t j0, double outside, char *msg, size_t msgsize);

/* The ramp a + di*i + dj*j, evaluated ((a + di*i) + dj*j). */
void
tsr_expr_ramp(tsr_expr *out, double a, double di, double dj);

/* A constant c. */
void
tsr_expr_const(tsr_expr *out, double c);

/* sizeof(tsr_expr), for byte counts outside nodes/ that only hold pointers. */
size_t
tsr_expr_size(void);

/* Whether e does not depend on i and j (a number): then *c (may be NULL) is its value. */
bool
tsr_expr_is_const(const tsr_expr *e, double *c);

/* YAML text that compiles back to the same program: `null` when absent, a table as
 * `{table: [[...]], origin: [i0, j0], outside: v}`, anything else as a quoted fully
 * parenthesised expression with exact (%.17g) constants. Truncated to size (always
 * NUL-terminated); returns the length it needed. */
size_t
tsr_expr_format(const tsr_expr *e, char *buf, size_t size);

#endif
