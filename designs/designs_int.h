/* designs/ private: the YAML tree, key paths, error formatting, scalar conversion. */
#ifndef TSR_DESIGNS_INT_H
#define TSR_DESIGNS_INT_H

#include "designs/designs.h"

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the YAML tree --------------------------------------------------------------------------- */

typedef enum ykind { Y_SCALAR, Y_SEQ, Y_MAP } ykind;

/* One YAML value with the position of its first character. Maps keep keys and values
 * interleaved in kids (kids[2i] a scalar key, kids[2i+1] its value), in document order. */
typedef struct ynode {
    ykind kind;
    bool plain;            /* scalar written plain (not quoted, not a block scalar) */
    size_t line, col;      /* 1-based, from libyaml's start_mark */
    char *s;               /* scalar: the text, NUL-terminated (no NUL inside) */
    size_t len;            /* scalar: strlen(s) */
    struct ynode **kids;   /* seq: items; map: key, value, key, value, ... */
    size_t n;              /* entries of kids */
    size_t cap;
    struct ynode *next;    /* allocation chain: the tree is freed without recursion */
} ynode;

typedef struct ytree {
    ynode *root; /* the document's value, NULL for an empty document */
    ynode *all;  /* every node, for tsr_ytree_free */
} ytree;

/* Parse `len` bytes of YAML into `t`. Anchors, aliases, tags, merge keys, duplicate keys,
 * non-scalar keys, NUL characters in scalars and more than one document are refused, as are
 * syntax errors; every message starts with "FILE:LINE:COL: ". On failure `t` is empty. */
tsr_status
tsr_ytree_parse(const char *file, const char *text, size_t len, ytree *t, tsr_error *err);

void
tsr_ytree_free(ytree *t);

static inline size_t
ymap_count(const ynode *m)
{
    return m->n / 2;
}

static inline const ynode *
ymap_key(const ynode *m, size_t i)
{
    return m->kids[2 * i];
}

static inline const ynode *
ymap_val(const ynode *m, size_t i)
{
    return m->kids[2 * i + 1];
}

/* The value of `key` in map `m`, or NULL. Keys are unique (the parser checked). */
const ynode *
tsr_ymap_get(const ynode *m, const char *key);

/* Index of `key` in map `m`, or (size_t)-1. */
size_t
tsr_ymap_find(const ynode *m, const char *key);

/* A plain empty, `~` or `null` scalar: YAML's null. */
bool
tsr_ynull(const ynode *v);

/* ---- key paths ------------------------------------------------------------------------------- */

/* A key path as a chain of stack-allocated segments from leaf to top: nothing is allocated
 * while walking the design, the string is made only for a message or a `where`. */
typedef struct kpath {
    const struct kpath *up; /* NULL at the top */
    const char *key;        /* NULL: an index segment */
    size_t index;
} kpath;

#define KP_KEY(upp, k) ((kpath){(upp), (k), 0})
#define KP_INDEX(upp, i) ((kpath){(upp), NULL, (i)})

/* Paths longer than this are shortened in messages and names ("root.chil...[0].node"), so a
 * 1000-deep design neither overflows a tsr_error nor costs O(depth^2) memory in names. */
#define KPATH_SHOWN 240

/* Write the (possibly shortened) path into buf (size >= KPATH_SHOWN + 1). */
void
tsr_kpath_format(const kpath *p, char *buf, size_t size);

/* ---- load context and errors ----------------------------------------------------------------- */

typedef struct named named;

/* A length as written with a unit: (neg ? -1 : 1) * m * 10^e nanometres, m < 10^19 with no
 * trailing zeros (m == 0: zero). Kept as decimal text so conversions to whole pixels are
 * exact: 0.1um at a 100nm pitch is 1 px, not 0.9999999999999999. */
typedef struct tsr_dlen {
    uint64_t m;
    int e;
    bool neg;
} tsr_dlen;

/* 1: `s` is a decimal number -?(digits[.digits]|.digits) directly followed by one of nm, um,
 * µm, mm, parsed into *out; 0: `s` ends in no unit (a plain number, or anything else); -1:
 * it ends in a unit but what precedes it is no such number, or has more than 19 significant
 * digits. */
int
tsr_dlen_parse(const char *s, tsr_dlen *out);

/* v / pitch in pixels. Exact: true with *px set when the quotient is a whole number of
 * magnitude <= 2^40; false otherwise (*approx then holds it rounded, +-inf if huge). */
bool
tsr_dlen_pixels_int(const tsr_dlen *v, const tsr_dlen *pitch, int64_t *px, double *approx);

/* v / pitch in pixels, correctly rounded to double (the quotient of the two decimals, rounded
 * once). */
double
tsr_dlen_pixels_real(const tsr_dlen *v, const tsr_dlen *pitch);

/* v in nm, rounded once to double. */
double
tsr_dlen_nm(const tsr_dlen *v);

typedef struct dctx {
    const char *file;           /* for messages */
    const char *base_dir;       /* image paths start here; NULL = cwd */
    const tsr_design_opts *opts;
    tsr_error *err;
    locale_t cloc;              /* "C" numeric locale for strtod_l, (locale_t)0 if none */
    int64_t tile;               /* design default tile */
    tsr_node **all;             /* every node allocated so far, for cleanup */
    size_t nall, capall;
    named *names;               /* the nodes: section, sorted by name */
    size_t nnames;
    size_t depth;               /* node nesting of the current recursion */
    const named **stack;        /* named nodes being loaded, for the cycle message */
    size_t nstack;
    bool has_pitch;             /* the design states `pixel:` */
    tsr_dlen pitch;             /* ... as written, > 0 */
    const char *pitch_text;     /* ... its text, for messages (borrowed from the tree) */
} dctx;

/* Fill c->err with "FILE:LINE:COL: path: what" (no path part when p is NULL or empty) and
 * return TSR_EINVAL. */
tsr_status
tsr_derr(dctx *c, const ynode *at, const kpath *p, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fill c->err with "out of memory" and return TSR_ENOMEM. */
tsr_status
tsr_doom(dctx *c);

/* "file:line:col: path" in a fresh string, or NULL when out of memory. */
char *
tsr_dwhere(dctx *c, const ynode *at, const kpath *p);

/* The fresh, possibly shortened, path string; NULL when out of memory. */
char *
tsr_kpath_strdup(const kpath *p);

/* ---- scalars --------------------------------------------------------------------------------- */

/* Each converts the scalar `v`, reporting "expected ..." errors at v with path p. */
tsr_status
tsr_dget_int(dctx *c, const ynode *v, const kpath *p, int64_t *out);
tsr_status
tsr_dget_real(dctx *c, const ynode *v, const kpath *p, double *out);
tsr_status
tsr_dget_bool(dctx *c, const ynode *v, const kpath *p, bool *out);
/* A non-empty string scalar of any style; borrowed from the tree. */
tsr_status
tsr_dget_str(dctx *c, const ynode *v, const kpath *p, const char **out);
/* One of `names` (NULL-terminated); "unknown WHAT 'x' (did you mean 'y'?)" otherwise. */
tsr_status
tsr_dget_enum(dctx *c, const ynode *v, const kpath *p, const char *what,
              const char *const *names, int *out);

/* Require a map / a sequence (of exactly n items when n != (size_t)-1). */
tsr_status
tsr_dwant_map(dctx *c, const ynode *v, const kpath *p);
tsr_status
tsr_dwant_seq(dctx *c, const ynode *v, const kpath *p, size_t n);

/* Check that every key of map m is one of the NULL-terminated lists (up to 3, NULL ends the
 * argument list); an unknown key gets a "did you mean" over all of them. */
tsr_status
tsr_dcheck_keys(dctx *c, const ynode *m, const kpath *p, const char *const *k1,
                const char *const *k2, const char *const *k3);

/* The closest candidate within edit distance 2 (transpositions count 1), else the one
 * candidate `word` is a prefix of (>= 3 characters), else NULL. */
const char *
tsr_did_you_mean(const char *word, const char *const *cands);

/* The same over `nlists` NULL-terminated lists (a NULL list is skipped). */
const char *
tsr_best_of(const char *word, const char *const *const *lists, size_t nlists);

/* Optimal string alignment distance, capped: returns cap + 1 when larger than cap. */
size_t
tsr_edit_distance(const char *a, const char *b, size_t cap);

/* The shortest "%.{p}g" rendering of d that reads back to d (float: to (float)d). */
void
tsr_fmt_double(char *buf, size_t size, double d);
void
tsr_fmt_float(char *buf, size_t size, float f);

/* ---- parameter tables ------------------------------------------------------------------------ */

/* Parse the keys of map `m` described by `params` into `st` (defaults already there). Keys
 * of m not in the table are ignored here (the caller checked them); `skip` (may be NULL)
 * names a key handled by the caller. Checks TSR_PF_REQUIRED, types, ranges, coordinate
 * bounds. On failure `st` may hold partial allocations the caller frees with
 * tsr_params_free. */
tsr_status
tsr_dparse_params(dctx *c, const ynode *m, const kpath *p, const tsr_param *params,
                  size_t n, void *st);

/* The loader's own tables for the output section, shared with the dump. */
extern const tsr_param tsr_dtab_output[];
extern const size_t tsr_dtab_noutput;
extern const tsr_param tsr_dtab_swath[];
extern const size_t tsr_dtab_nswath;

/* The row of tsr_source_descs for a kind, or NULL for a kind outside the table. */
static inline const tsr_source_desc *
tsr_dsource_desc(tsr_source_kind kind)
{
    for (size_t i = 0; i < TSR_SRC_COUNT; i++)
        if (tsr_source_descs[i].kind == kind)
            return &tsr_source_descs[i];
    return NULL;
}

#endif
