/* geom-private: the C side of geom/clip.cpp, the only file that speaks C++ to Clipper
 * (libpolyclipping 6.4). Integer rings in, integer rings out, no exceptions across. */
#ifndef TSR_GEOM_CLIP_H
#define TSR_GEOM_CLIP_H

#include <stddef.h>
#include <stdint.h>

/* Rings of integer points: ring k is xy[2 * (k ? end[k - 1] : 0)] .. xy[2 * end[k] - 1], x and
 * y interleaved. */
typedef struct tsr_clip_set {
    int64_t *xy;
    size_t npt;
    size_t *end;
    size_t nring;
} tsr_clip_set;

enum { TSR_CLIP_OK = 0, TSR_CLIP_NOMEM = -1, TSR_CLIP_FAILED = -2 };

/* out (malloc'd arrays, tsr_clip_set_free) = a op b (0 union, 1 intersection, 2 difference,
 * 3 xor), both under the nonzero rule (op | 4: the even-odd rule); b may be NULL. TSR_CLIP_FAILED puts Clipper's reason in
 * msg (a coordinate beyond its range). out is empty on failure. */
int
tsr_clip_execute(int op, const tsr_clip_set *a, const tsr_clip_set *b, tsr_clip_set *out,
                 char *msg, size_t msgn);

/* out = the union of a offset by delta units; join 0 round, 1 square, 2 miter (limit 2);
 * arc_tol units. */
int
tsr_clip_offset(const tsr_clip_set *a, double delta, int join, double arc_tol,
                tsr_clip_set *out, char *msg, size_t msgn);

void
tsr_clip_set_free(tsr_clip_set *s);

#endif
