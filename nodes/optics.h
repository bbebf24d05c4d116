/* Optical surfaces and seeded noise (docs/optics.md): the keys they add to a source, and their
 * parameter tables, which nodes/sources.def's rows name (`tsr_asphere` -> tsr_asphere_params).
 * Included by nodes/nodes.h, so each table is declared here with its count: the source table
 * (nodes/sources.c) takes sizeof() of it. The families' code is nodes/surface.c and
 * nodes/noise.c; their per-pixel arithmetic nodes/surface_math.h and nodes/noise_math.h. */
#ifndef TSR_NODES_OPTICS_H
#define TSR_NODES_OPTICS_H

#include <stdbool.h>
#include <stdint.h>

/* The keys of `surface:` and `noise:` sources beyond tsr_source's shared ones (center, radius,
 * points: a surface's terms). Zero is every key's default. */
typedef struct tsr_optic {
    double roc;        /* asphere, cylinder: radius of curvature, px; 0: flat */
    double roc2[2];    /* toroid: [Rx, Ry], px; 0: flat along that axis */
    double conic;      /* asphere, cylinder: conic constant k */
    double conic2[2];  /* toroid: [kx, ky] */
    double aperture;   /* radius (cylinder: half-width), px; 0: none where optional */
    double angle;      /* degrees: cylinder and grating direction, toroid x axis, vortex start */
    double slope;      /* axicon: height per px of radius */
    double height;     /* vortex, grating: height of one ramp */
    double period;     /* grating: px */
    int64_t charge;    /* vortex: topological charge m, nonzero */
    int relief;        /* asphere, cylinder, toroid: 0 sag, 1 cap (z at the rim minus the sag) */
    double wrap;       /* wrapping height H; 0: none (vortex, grating: their height) */
    int64_t levels;    /* quantisation levels N over H; 0: none */
    bool aa;           /* exact-area zone edges (radial surfaces) */
    int64_t seed;      /* noise */
    double cell;       /* value noise: lattice cell, px; gaussian: the block edge (0: 1 px) */
    int64_t octaves;   /* value noise: 1..16 (0: 1) */
    double amplitude;  /* value noise: value = mean + amplitude * n, n in [0, 1) */
    double sigma;      /* gaussian: value = mean + sigma * g, g ~ N(0, 1) */
    double mean;
} tsr_optic;

/* The parameter tables of nodes/sources.def's surface and noise rows, with their counts. */
#define TSR_OPTIC_TABLES(X)                                                                       \
    X(tsr_asphere, 9)                                                                            \
    X(tsr_cylinder, 9)                                                                           \
    X(tsr_toroid, 8)                                                                             \
    X(tsr_axicon, 6)                                                                             \
    X(tsr_vortex, 6)                                                                             \
    X(tsr_grating, 5)                                                                            \
    X(tsr_zernike, 5)                                                                            \
    X(tsr_value_noise, 5)                                                                        \
    X(tsr_gaussian_noise, 4)

/* (nodes/nodes.h includes this header where tsr_param is complete) */
#define TSR_OPTIC_DECLARE(name, n) extern const tsr_param name##_params[n];
TSR_OPTIC_TABLES(TSR_OPTIC_DECLARE)
#undef TSR_OPTIC_DECLARE

#endif
