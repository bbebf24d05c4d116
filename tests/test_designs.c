/* designs/: YAML -> node DAG. Every error path has a fixture in tests/designs/bad/ whose
 * message must name FILE:LINE:COL and the key path; good fixtures in tests/designs/good/ load
 * and dump with defaults filled in; every example design loads. Under ASan every test
 * also asks LeakSanitizer whether the loader leaked, failures included. */
#include "designs/designs.h"
#include "image/image.h"
#include "nodes/params.h"

#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define NO_LEAKS() cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "the loader leaked")
#else
#define NO_LEAKS() ((void)0)
#endif

#define BAD_DIR TSR_SRC_DIR "/tests/designs/bad/"
#define GOOD_DIR TSR_SRC_DIR "/tests/designs/good/"

/* ---- helpers --------------------------------------------------------------------------------- */

/* A stand-in for stream/'s PNG reader: every image is 3 x 2 (values i / 6) except paths
 * containing "missing", which fail like a missing file. Remembers the last path asked for. */
static char last_image[4096];

static tsr_status
fake_read(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err)
{
    snprintf(last_image, sizeof last_image, "%s", path);
    if (strstr(path, "missing"))
        return tsr_fail(err, TSR_EIO, "%s: cannot open: No such file or directory", path);
    float *p = malloc(6 * sizeof *p);
    if (!p)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    for (int i = 0; i < 6; i++)
        p[i] = (float)i / 6.0f;
    *w = 3;
    *h = 2;
    *px = p;
    return TSR_OK;
}

static const tsr_design_opts fake_opts = {.read_image = fake_read};

static tsr_design *
load_good(const char *name)
{
    char path[1024];
    tsr_error err = {0};
    snprintf(path, sizeof path, GOOD_DIR "%s", name);
    tsr_design *d = tsr_design_load(path, &fake_opts, &err);
    cr_assert(d != NULL, "%s did not load: %s", name, err.msg);
    return d;
}

static tsr_design *
load_text(const char *yaml, tsr_error *err)
{
    return tsr_design_load_string(yaml, strlen(yaml), "t.yaml", GOOD_DIR, &fake_opts, err);
}

/* The failure of a design given as text: asserts NULL and returns the message's status. */
static void
expect_text_error(const char *yaml, tsr_status st, const char *want)
{
    tsr_error err = {0};
    tsr_design *d = load_text(yaml, &err);
    cr_assert_null(d, "loaded, expected an error containing \"%s\"", want);
    cr_assert_eq(err.status, st, "status %d, message: %s", (int)err.status, err.msg);
    cr_assert(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
    NO_LEAKS();
}

/* The dump as a string, caller frees. */
static char *
dump_of(const tsr_design *d)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert(f);
    tsr_design_dump(d, f);
    fclose(f);
    return buf;
}

static void
expect_dump(const char *dump, const char *want)
{
    cr_assert(strstr(dump, want), "dump lacks \"%s\":\n%s", want, dump);
}

/* Invariants every loaded design holds: ids are indices, children come before parents, root
 * is last, every node has a size, a tile and a where. */
static void
check_structure(const tsr_design *d)
{
    cr_assert_gt(d->nnodes, 0);
    cr_assert_eq(d->root, d->nodes[d->nnodes - 1]);
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        cr_assert_eq(n->id, i);
        cr_assert(n->w >= 1 && n->h >= 1 && n->tile >= 1 && n->tile <= TSR_TILE_MAX);
        cr_assert(n->name && n->where);
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *e = &n->edges[k];
            cr_assert(e->trait && e->child && e->where);
            cr_assert_lt(e->child->id, i, "child %zu of node %zu comes later", e->child->id, i);
            cr_assert_eq(d->nodes[e->child->id], e->child);
        }
    }
}

/* ---- bad fixtures: name, status, what the message holds after "NAME.yaml:" ------------------- */

#define BAD_CASES(X) \
    X(aa_0, TSR_EINVAL, "8:9: root.source.aa: must be in 1..16, got 0") \
    X(aa_17, TSR_EINVAL, "8:9: root.source.aa: must be in 1..16, got 17") \
    X(alias, TSR_EINVAL, "3:9: root.size: alias '*s' not allowed (reuse a node with ref:)") \
    X(anchor, TSR_EINVAL, "3:6: nodes.a: anchor '&lens' not allowed (reuse a node with ref:)") \
    X(blend_unknown, TSR_EINVAL, \
      "6:14: root.children[0].blend: unknown blend 'ad' (did you mean 'add'?)") \
    X(blur_edge_bad, TSR_EINVAL, \
      "7:13: root.children[0].edge: unknown edge 'mirror' (expected one of: zero, clamp,") \
    X(blur_kernel_entry_word, TSR_EINVAL, \
      "6:20: root.children[0].kernel[0][1]: expected a number, got 'x'") \
    X(blur_kernel_even, TSR_EINVAL, \
      "6:15: root.children[0].kernel: the kernel width must be odd and <= 63, got 2") \
    X(blur_kernel_even_rows, TSR_EINVAL, \
      "6:15: root.children[0].kernel: the kernel height must be odd and <= 63, got 2") \
    X(blur_kernel_flat, TSR_EINVAL, \
      "6:16: root.children[0].kernel[0]: expected a sequence, got a scalar") \
    X(blur_kernel_ragged, TSR_EINVAL, \
      "8:11: root.children[0].kernel[1]: every kernel row must have the same length: row 0") \
    X(blur_kernel_too_wide, TSR_EINVAL, \
      "6:15: root.children[0].kernel: the kernel width must be odd and <= 63, got 65") \
    X(blur_neither, TSR_EINVAL, "5:7: root.children[0]") \
    X(blur_sigma_0, TSR_EINVAL, "6:7: root.children[0].sigma: ") \
    X(blur_sigma_and_kernel, TSR_EINVAL, ": root.children[0].") \
    X(blur_sigma_large, TSR_EINVAL, "root.children[0].sigma: must be in 0.3..256") \
    X(blur_sigma_small, TSR_EINVAL, "root.children[0].sigma: must be in 0.3..256") \
    X(calibration_c_out, TSR_EINVAL, "3:29: output.calibration[1][1]: c must be in 0..1, got 1.5") \
    X(calibration_last, TSR_EINVAL, \
      "3:26: output.calibration[1][0]: the last t must be 1, got 0.9") \
    X(calibration_not_increasing, TSR_EINVAL, \
      "3:38: output.calibration[2][0]: t must be strictly increasing (0.5 after 0.5)") \
    X(calibration_one_point, TSR_EINVAL, \
      "3:16: output.calibration: needs at least 2 points, got 1") \
    X(calibration_t0, TSR_EINVAL, \
      "3:18: output.calibration[0][0]: the first t must be 0, got 0.1") \
    X(children_not_list, TSR_EINVAL, "4:13: root.children: expected a sequence, got a mapping") \
    X(circle_missing_center, TSR_EINVAL, "5:5: root.source: missing required key 'center'") \
    X(circle_radii_key, TSR_EINVAL, \
      "7:5: root.source.radii: unknown key 'radii' (did you mean 'radius'?)") \
    X(circle_radius_0, TSR_EINVAL, "7:13: root.source.radius: must be > 0, got 0") \
    X(circle_radius_negative, TSR_EINVAL, "7:13: root.source.radius: must be > 0, got -2") \
    X(circle_unknown_key, TSR_EINVAL, \
      "7:5: root.source.radiuss: unknown key 'radiuss' (did you mean 'radius'?)") \
    X(circle_value_nan, TSR_EINVAL, \
      "8:12: root.source.value: 'nan': infinity and NaN are not allowed") \
    X(complex_key, TSR_EINVAL, "3:5: root: mapping keys must be scalars") \
    X(deep_error_path, TSR_EINVAL, \
      "10:30: root.children[0].node.children[0].node.size[1]: must be in 1..1099511627776,") \
    X(depth_12, TSR_EINVAL, "3:10: output.depth: must be 1, 2, 4, 8 or 16, got 12") \
    X(distance_dmax_0, TSR_EINVAL, "6:13: root.children[0].dmax: must be in 1..4194304, got 0") \
    X(distance_dmax_4194305, TSR_EINVAL, \
      "6:13: root.children[0].dmax: must be in 1..4194304, got 4194305") \
    X(distance_dmax_missing, TSR_EINVAL, "5:7: root.children[0]: missing required key 'dmax'") \
    X(distance_profile_gaussian_0, TSR_EINVAL, \
      "7:27: root.children[0].profile.gaussian: must be > 0, got 0") \
    X(distance_profile_gaussian_scalar, TSR_EINVAL, \
      "7:16: root.children[0].profile: 'gaussian' needs a value: write {gaussian: ...}") \
    X(distance_profile_list, TSR_EINVAL, \
      "7:16: root.children[0].profile: expected linear, sphere, cosine, {gaussian: s} or") \
    X(distance_profile_map_typo, TSR_EINVAL, \
      "7:17: root.children[0].profile.gauss: unknown key 'gauss' (did you mean 'gaussian'?)") \
    X(distance_profile_points_decreasing, TSR_EINVAL, \
      "7:45: root.children[0].profile.points[2][0]: distances must be strictly increasing (4") \
    X(distance_profile_points_empty, TSR_EINVAL, \
      "7:25: root.children[0].profile.points: needs at least 1 point, got 0") \
    X(distance_profile_points_negative, TSR_EINVAL, \
      "7:27: root.children[0].profile.points[0][0]: the first distance must be >= 0, got -1") \
    X(distance_profile_points_triple, TSR_EINVAL, \
      "7:26: root.children[0].profile.points[0]: expected 2 values, got 3") \
    X(distance_profile_two_keys, TSR_EINVAL, \
      "7:16: root.children[0].profile: needs exactly one of 'gaussian' or 'points'") \
    X(distance_profile_unknown, TSR_EINVAL, \
      "7:16: root.children[0].profile: unknown profile 'linar' (did you mean 'linear'?)") \
    X(distance_scale_bool, TSR_EINVAL, \
      "7:14: root.children[0].scale: expected a number, got 'true'") \
    X(distance_threshold_nan, TSR_EINVAL, \
      "7:18: root.children[0].threshold: 'NaN': infinity and NaN are not allowed") \
    X(distance_threshold_quoted, TSR_EINVAL, \
      "7:18: root.children[0].threshold: expected a number, got a quoted string (write it") \
    X(duplicate_key, TSR_EINVAL, "5:3: root.size: duplicate key (first at 3:3)") \
    X(duplicate_node_name, TSR_EINVAL, "5:3: nodes.a: duplicate key (first at 3:3)") \
    X(edge_key_of_other_trait, TSR_EINVAL, \
      "6:7: root.children[0].sigma: unknown key 'sigma' (a parameter of trait 'blur', not") \
    X(edge_no_child, TSR_EINVAL, \
      "5:7: root.children[0]: missing the child: give 'node' (inline) or 'ref' (a named node)") \
    X(edge_node_and_ref, TSR_EINVAL, \
      "9:7: root.children[0].ref: give either 'node' or 'ref', not both") \
    X(edge_not_map, TSR_EINVAL, "5:7: root.children[0]: expected a mapping, got a scalar") \
    X(edge_unknown_key, TSR_EINVAL, \
      "6:7: root.children[0].sigmaa: unknown key 'sigmaa' (did you mean 'sigma'?)") \
    X(ellipse_radii_0, TSR_EINVAL, "7:16: root.source.radii[1]: must be > 0, got 0") \
    X(empty, TSR_EINVAL, "1:1: empty design (expected a mapping with 'tessera: 1' and 'root')") \
    X(fill_double_overflow, TSR_EINVAL, "4:9: root.fill: '1e400' is out of the range of a double") \
    X(fill_float32_overflow, TSR_EINVAL, "4:9: root.fill: 1e39 is out of the range of float32") \
    X(fill_inf, TSR_EINVAL, "4:9: root.fill: '.inf': infinity and NaN are not allowed") \
    X(fill_nan, TSR_EINVAL, "4:9: root.fill: 'nan': infinity and NaN are not allowed") \
    X(fill_quoted, TSR_EINVAL, \
      "4:9: root.fill: expected a number, got a quoted string (write it unquoted)") \
    X(fill_word, TSR_EINVAL, "4:9: root.fill: expected a number, got 'half'") \
    X(gradient_from_equals_to, TSR_EINVAL, "7:5: root.source.to: must differ from 'from'") \
    X(gradient_unknown, TSR_EINVAL, \
      "5:15: root.source.gradient: unknown gradient 'conic' (expected one of: linear, radial)") \
    X(gradient_values_missing, TSR_EINVAL, "5:5: root.source: missing required key 'values'") \
    X(image_extra_key, TSR_EINVAL, "6:5: root.source.value: unknown key 'value'") \
    X(image_path_empty, TSR_EINVAL, "3:19: root.source.image: must not be empty") \
    X(image_size_mismatch, TSR_EINVAL, \
      "3:9: root.size: [10, 10] differs from the image size [3, 2]") \
    X(image_unreadable, TSR_EIO, "3:19: root.source.image: ") \
    X(inline_node_not_map, TSR_EINVAL, \
      "6:13: root.children[0].node: expected a mapping, got a scalar") \
    X(int_overflow, TSR_EINVAL, \
      "3:10: root.size[0]: integer '99999999999999999999' does not fit in int64") \
    X(mask_unknown, TSR_EINVAL, \
      "6:13: root.children[0].mask: unknown mask 'zero' (expected one of: none, nonzero)") \
    X(merge_key, TSR_EINVAL, "3:3: root: merge key '<<' not allowed (reuse a node with ref:)") \
    X(missing_root, TSR_EINVAL, "1:1: missing required key 'root'") \
    X(missing_tessera, TSR_EINVAL, "1:1: missing required key 'tessera'") \
    X(name_mapping, TSR_EINVAL, "2:7: name: expected a string, got a mapping") \
    X(node_tile_16385, TSR_EINVAL, "4:9: root.tile: must be in 1..16384, got 16385") \
    X(node_unknown_key, TSR_EINVAL, "3:3: root.sizee: unknown key 'sizee' (did you mean 'size'?)") \
    X(nodes_not_map, TSR_EINVAL, "2:8: nodes: expected a mapping, got a sequence") \
    X(offset_real, TSR_EINVAL, \
      "6:16: root.children[0].offset[0]: expected a decimal integer, got '1.5'") \
    X(offset_too_big, TSR_EINVAL, \
      "6:16: root.children[0].offset[0]: |1099511627777| must be <= 2^40 (1099511627776)") \
    X(order_swath_without_swath, TSR_EINVAL, "3:3: output: missing required key 'swath'") \
    X(order_unknown, TSR_EINVAL, \
      "3:10: output.order: unknown order 'swat' (did you mean 'swath'?)") \
    X(output_unknown_key, TSR_EINVAL, \
      "3:3: output.dept: unknown key 'dept' (did you mean 'depth'?)") \
    X(pattern_unknown_key, TSR_EINVAL, \
      "6:7: root.children[0].period: unknown key 'period' (a parameter of trait 'repeat', not") \
    X(polygon_point_triple, TSR_EINVAL, "6:22: root.source.points[1]: expected 2 values, got 3") \
    X(polygon_two_points, TSR_EINVAL, "6:13: root.source.points: needs at least 3 points, got 2") \
    X(radial_radius_0, TSR_EINVAL, "7:13: root.source.radius: must be > 0, got 0") \
    X(range_equal, TSR_EINVAL, "3:10: output.range: lo and hi must differ") \
    X(range_three, TSR_EINVAL, "3:10: output.range: expected 2 values, got 3") \
    X(reader_bad_utf8, TSR_EINVAL, \
      "4:12: YAML syntax error: invalid leading UTF-8 octet (byte 43)") \
    X(rect_three, TSR_EINVAL, "6:11: root.source.rect: expected 4 values, got 3") \
    X(rect_w0, TSR_EINVAL, "6:5: root.source.rect: w and h must be > 0") \
    X(ref_cycle, TSR_EINVAL, \
      "10:31: nodes.b.children[0].ref: ref cycle: nodes.a -> nodes.b -> nodes.a") \
    X(ref_cycle_through_inline, TSR_EINVAL, \
      "14:38: nodes.c.children[0].ref: ref cycle: nodes.a -> nodes.c -> nodes.a") \
    X(ref_not_string, TSR_EINVAL, "7:29: root.children[0].ref: expected a string, got a sequence") \
    X(ref_self_cycle, TSR_EINVAL, "6:31: nodes.a.children[0].ref: ref cycle: nodes.a -> nodes.a") \
    X(ref_unknown, TSR_EINVAL, \
      "7:29: root.children[0].ref: unknown node 'lense' (did you mean 'lens'?)") \
    X(ref_unknown_no_nodes, TSR_EINVAL, \
      "5:29: root.children[0].ref: unknown node 'lens' (the design has no nodes: section)") \
    X(repeat_overlap_bad, TSR_EINVAL, \
      "6:16: root.children[0].overlap: unknown overlap 'avg' (did you mean 'add'?)") \
    X(repeat_period_0, TSR_EINVAL, \
      "6:16: root.children[0].period[0]: must be in 1..1099511627776, got 0") \
    X(repeat_period_real, TSR_EINVAL, \
      "6:16: root.children[0].period[0]: expected a decimal integer, got '2.5'") \
    X(repeat_region_three, TSR_EINVAL, "6:15: root.children[0].region: expected 4 values, got 3") \
    X(repeat_region_w0, TSR_EINVAL, "6:15: root.children[0].region: w and h must be > 0") \
    X(repeat_region_zero, TSR_EINVAL, "6:15: root.children[0].region: w and h must be > 0") \
    X(repeat_vector_colinear, TSR_EINVAL, \
      "7:7: root.children[0].v: u and v are colinear (u = [10, 0], v = [20, 0])") \
    X(repeat_vector_missing_v, TSR_EINVAL, "5:7: root.children[0]: missing required key 'v'") \
    X(repeat_vector_overlap_bad, TSR_EINVAL, \
      "8:16: root.children[0].overlap: unknown overlap 'mean' (did you mean 'max'?)") \
    X(repeat_vector_region_h0, TSR_EINVAL, "8:15: root.children[0].region: w and h must be > 0") \
    X(repeat_vector_typo, TSR_EINVAL, \
      "5:14: root.children[0].trait: unknown trait 'repeat_vector' (did you mean") \
    X(repeat_vector_u_huge, TSR_EINVAL, \
      "6:11: root.children[0].u[0]: |-1099511627777| must be <= 2^40 (1099511627776)") \
    X(repeat_vector_u_scalar, TSR_EINVAL, \
      "6:10: root.children[0].u: expected a sequence, got a scalar") \
    X(repeat_vector_zero_u, TSR_EINVAL, \
      "7:7: root.children[0].v: u and v are colinear (u = [0, 0], v = [0, 7])") \
    X(ring_rin_ge_rout, TSR_EINVAL, "7:5: root.source.radii: r_in must be < r_out") \
    X(ring_rin_negative, TSR_EINVAL, "7:13: root.source.radii[0]: must be >= 0, got -1") \
    X(root_not_map, TSR_EINVAL, "2:7: root: expected a mapping, got a sequence") \
    X(shape_far_unknown, TSR_EINVAL, \
      "5:12: root.source.shape: unknown shape 'hexagon' (expected one of: circle, ellipse,") \
    X(shape_unknown, TSR_EINVAL, \
      "5:12: root.source.shape: unknown shape 'circel' (did you mean 'circle'?)") \
    X(size_hex, TSR_EINVAL, "3:10: root.size[0]: expected a decimal integer, got '0x10'") \
    X(size_leading_zero, TSR_EINVAL, \
      "3:10: root.size[0]: '010': leading zeros are not allowed (YAML 1.1 reads octal)") \
    X(size_missing, TSR_EINVAL, "3:3: root: missing required key 'size'") \
    X(size_negative, TSR_EINVAL, "3:14: root.size[1]: must be in 1..1099511627776, got -3") \
    X(size_null, TSR_EINVAL, "3:8: root.size: missing value (expected a sequence)") \
    X(size_one_value, TSR_EINVAL, "3:9: root.size: expected 2 values, got 1") \
    X(size_over_2p40, TSR_EINVAL, \
      "3:10: root.size[0]: |1099511627777| must be <= 2^40 (1099511627776)") \
    X(size_plus, TSR_EINVAL, "3:10: root.size[0]: expected a decimal integer, got '+5'") \
    X(size_product, TSR_EINVAL, \
      "3:9: root.size: w*h*4 bytes must be <= 2^62 (w = 1099511627776, h = 1099511627776)") \
    X(size_real, TSR_EINVAL, "3:10: root.size[0]: expected a decimal integer, got '10.0'") \
    X(size_zero, TSR_EINVAL, "3:10: root.size[0]: must be in 1..1099511627776, got 0") \
    X(source_disc_typo, TSR_EINVAL, \
      "5:5: root.source.shap: unknown key 'shap' (did you mean 'shape'?)") \
    X(source_no_discriminator, TSR_EINVAL, \
      "5:5: root.source: a source needs one of 'shape', 'gradient', 'image', 'layout', 'text', 'boolean', 'surface' or 'noise'") \
    X(source_not_map, TSR_EINVAL, "4:11: root.source: expected a mapping, got a scalar") \
    X(source_two_discriminators, TSR_EINVAL, \
      "6:5: root.source.gradient: a source has one of 'shape', 'gradient', 'image', 'layout', 'text', 'boolean', 'surface' or 'noise'; 'shape'") \
    X(swath_serpentine_yes, TSR_EINVAL, \
      "4:33: output.swath.serpentine: expected true or false, got 'yes'") \
    X(swath_start_bad, TSR_EINVAL, \
      "4:28: output.swath.start: unknown start 'top-centre' (expected one of: top-left,") \
    X(swath_unknown_key, TSR_EINVAL, \
      "4:21: output.swath.stat: unknown key 'stat' (did you mean 'start'?)") \
    X(swath_width_0, TSR_EINVAL, "4:18: output.swath.width: must be in 1..1099511627776, got 0") \
    X(swath_width_missing, TSR_EINVAL, "4:10: output.swath: missing required key 'width'") \
    X(swath_without_order, TSR_EINVAL, "3:3: output.swath: only allowed with order: swath") \
    X(syntax_error, TSR_EINVAL, \
      "4:1: YAML syntax error: did not find expected ',' or ']' (while parsing a flow") \
    X(syntax_indent, TSR_EINVAL, \
      "4:2: YAML syntax error: did not find expected key (while parsing a block mapping,") \
    X(tag, TSR_EINVAL, "1:10: tessera: tag 'tag:yaml.org,2002:int' not allowed") \
    X(tag_local, TSR_EINVAL, "2:7: root: tag '!node' not allowed") \
    X(tessera_2, TSR_EINVAL, "1:10: tessera: unsupported format version 2 (this tessera reads 1)") \
    X(tessera_quoted, TSR_EINVAL, \
      "1:10: tessera: expected an integer, got a quoted string (write it unquoted)") \
    X(tile_0, TSR_EINVAL, "2:7: tile: must be in 1..16384, got 0") \
    X(tile_16385, TSR_EINVAL, "2:7: tile: must be in 1..16384, got 16385") \
    X(top_not_map, TSR_EINVAL, "1:1: a design is a mapping (tessera, output, nodes, root)") \
    X(trait_missing, TSR_EINVAL, "5:7: root.children[0]: missing required key 'trait'") \
    X(trait_quoted_ok_but_unknown, TSR_EINVAL, \
      "5:14: root.children[0].trait: unknown trait 'zoom'") \
    X(trait_unknown, TSR_EINVAL, \
      "5:14: root.children[0].trait: unknown trait 'blurr' (did you mean 'blur'?)") \
    X(two_documents, TSR_EINVAL, "3:1: only one YAML document per design file") \
    X(unknown_top_key, TSR_EINVAL, "2:1: nods: unknown key 'nods' (did you mean 'nodes'?)") \
    X(unreferenced_named_invalid, TSR_EINVAL, \
      "5:11: nodes.spare.fill: expected a number, got 'lots'")

static void
expect_bad(const char *name, tsr_status st, const char *want)
{
    char path[1024], head[256];
    tsr_error err = {0};
    snprintf(path, sizeof path, BAD_DIR "%s.yaml", name);
    tsr_design *d = tsr_design_load(path, &fake_opts, &err);
    cr_assert_null(d, "%s loaded, expected \"%s\"", name, want);
    cr_assert_eq(err.status, st, "%s: status %d, message: %s", name, (int)err.status, err.msg);
    /* "…/NAME.yaml:LINE:COL: " first, always */
    snprintf(head, sizeof head, "%s.yaml:", name);
    const char *at = strstr(err.msg, head);
    cr_assert(at, "%s: message does not name the file: %s", name, err.msg);
    unsigned line = 0, col = 0;
    char colon = 0;
    cr_assert(sscanf(at + strlen(head), "%u:%u%c", &line, &col, &colon) == 3 && colon == ':' &&
                  line >= 1 && col >= 1,
              "%s: no LINE:COL in %s", name, err.msg);
    cr_assert(strstr(at + strlen(head), want), "%s: message\n  %s\nlacks\n  %s", name, err.msg,
              want);
    NO_LEAKS();
}

#define X(name, st, want) \
    Test(designs_bad, name) \
    { \
        expect_bad(#name, st, want); \
    }
BAD_CASES(X)
#undef X

#define X(name, st, want) #name,
static const char *const bad_names[] = {BAD_CASES(X) NULL};
#undef X

Test(designs_bad, every_fixture_has_a_case)
{
    DIR *dir = opendir(BAD_DIR);
    cr_assert(dir);
    struct dirent *de;
    size_t files = 0;
    while ((de = readdir(dir))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0)
            continue;
        files++;
        bool found = false;
        for (size_t i = 0; bad_names[i] && !found; i++)
            found = strlen(bad_names[i]) == n - 5 && strncmp(bad_names[i], de->d_name, n - 5) == 0;
        cr_expect(found, "tests/designs/bad/%s has no test case", de->d_name);
    }
    closedir(dir);
    size_t cases = 0;
    while (bad_names[cases])
        cases++;
    cr_assert_eq(files, cases, "%zu fixtures, %zu cases", files, cases);
}

/* ---- errors built in the test ---------------------------------------------------------------- */

Test(designs_errors, missing_file_is_bad_input)
{
    tsr_error err = {0};
    cr_assert_null(tsr_design_load(BAD_DIR "no-such-file.yaml", NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "no-such-file.yaml: cannot open"), "%s", err.msg);
    NO_LEAKS();
}

Test(designs_errors, err_may_be_null)
{
    cr_assert_null(tsr_design_load_string("tessera: 2\n", 11, NULL, NULL, NULL, NULL));
    cr_assert_null(tsr_design_load(BAD_DIR "no-such-file.yaml", NULL, NULL));
    NO_LEAKS();
}

Test(designs_errors, unnamed_text_is_called_string)
{
    tsr_error err = {0};
    cr_assert_null(tsr_design_load_string("tessera: 2\n", 11, NULL, NULL, NULL, &err));
    cr_assert(strstr(err.msg, "<string>:1:10: tessera: unsupported format version 2"), "%s",
              err.msg);
}

Test(designs_errors, text_is_read_only_up_to_len)
{
    const char *yaml = "tessera: 1\nroot: {size: [1, 1]}\nGARBAGE: [";
    tsr_error err = {0};
    tsr_design *d =
        tsr_design_load_string(yaml, strstr(yaml, "GARBAGE") - yaml, "t.yaml", NULL, NULL, &err);
    cr_assert(d, "%s", err.msg);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_errors, nul_in_a_scalar)
{
    static const char yaml[] = "tessera: 1\nname: \"a\\0b\"\nroot: {size: [1, 1]}\n";
    expect_text_error(yaml, TSR_EINVAL, "t.yaml:2:7: name: NUL character in a scalar");
}

/* libyaml reports reader errors (bad UTF-8, a control character) as a byte offset and left
 * them at 1:1: the line and column (in characters, as its marks count) come from the offset. */
Test(designs_errors, reader_errors_name_their_line_and_column)
{
    expect_text_error("tessera: 1\nroot:\n  size: [1, 1]\n  fill: 0.5\xff\n", TSR_EINVAL,
                      "t.yaml:4:12: YAML syntax error: invalid leading UTF-8 octet (byte 43)");
    static const char nul[] = "tessera: 1\nroot:\n  size: [1, 1]\n  fill: 0\0005\n";
    tsr_error err = {0};
    cr_assert_null(tsr_design_load_string(nul, sizeof nul - 1, "t.yaml", NULL, NULL, &err));
    cr_assert(strstr(err.msg, "t.yaml:4:10: YAML syntax error: control characters are not "
                              "allowed (byte 41)"), "%s", err.msg);
    /* CR LF ends one line; two-byte characters are one column each */
    expect_text_error("tessera: 1\r\nname: \"\xc3\xa9\xc3\xa9\xff\"\r\n", TSR_EINVAL,
                      "t.yaml:2:10: YAML syntax error: invalid leading UTF-8 octet (byte 23)");
    /* a byte order mark is no column; a lone CR ends a line too */
    expect_text_error("\xef\xbb\xbftessera: 1\rname: x\x01\n", TSR_EINVAL,
                      "t.yaml:2:8: YAML syntax error: control characters are not allowed");
}

/* A design is read whole; a file over TSR_DESIGN_MAX_BYTES, or one that never ends, is refused
 * after reading at most that much (`tessera check /dev/zero` grew until killed). */
Test(designs_errors, a_design_over_the_size_bound_is_refused)
{
    tsr_error err = {0};
    cr_assert_null(tsr_design_load("/dev/zero", NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert_str_eq(err.msg, "/dev/zero: larger than 16 MiB, the most a design file may hold");

    char path[] = "/tmp/tsr-big-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *yaml = "tessera: 1\nroot: {size: [1, 1]}\n";
    cr_assert_eq(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
    cr_assert_eq(ftruncate(fd, (off_t)TSR_DESIGN_MAX_BYTES + 1), 0); /* sparse: NUL bytes */
    close(fd);
    cr_assert_null(tsr_design_load(path, NULL, &err));
    cr_assert(strstr(err.msg, "larger than 16 MiB"), "%s", err.msg);
    unlink(path);

    char *big = malloc(TSR_DESIGN_MAX_BYTES + 1);
    cr_assert_not_null(big);
    cr_assert_null(tsr_design_load_string(big, TSR_DESIGN_MAX_BYTES + 1, "t.yaml", NULL, NULL,
                                          &err));
    cr_assert_str_eq(err.msg, "t.yaml: larger than 16 MiB, the most a design file may hold");
    free(big);
    NO_LEAKS();
}

/* Exactly the bound loads: a valid design padded with a comment to TSR_DESIGN_MAX_BYTES. */
Test(designs_errors, a_design_of_exactly_the_bound_loads)
{
    size_t n = TSR_DESIGN_MAX_BYTES;
    char *text = malloc(n);
    cr_assert_not_null(text);
    const char *yaml = "tessera: 1\nroot: {size: [1, 1]}\n#";
    memcpy(text, yaml, strlen(yaml));
    memset(text + strlen(yaml), 'x', n - strlen(yaml) - 1);
    text[n - 1] = '\n';
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(text, n, "t.yaml", NULL, NULL, &err);
    cr_assert_not_null(d, "%s", err.msg);
    tsr_design_free(d);
    free(text);
}

Test(designs_errors, int64_edges)
{
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, "
                      "offset: [9223372036854775807, 0], node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL,
                      "root.children[0].offset[0]: |9223372036854775807| must be <= 2^40");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, "
                      "offset: [-9223372036854775808, 0], node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "offset[0]: |-9223372036854775808| must be <= 2^40");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, "
                      "offset: [9223372036854775808, 0], node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "offset[0]: integer '9223372036854775808' does not fit in int64");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, "
                      "offset: [-9223372036854775809, 0], node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "offset[0]: integer '-9223372036854775809' does not fit");
    expect_text_error("tessera: 1\nroot: {size: [1, 1e3]}\n", TSR_EINVAL,
                      "t.yaml:2:18: root.size[1]: expected a decimal integer, got '1e3'");
    expect_text_error("tessera: 1\nroot: {size: [1, 1_000]}\n", TSR_EINVAL,
                      "expected a decimal integer, got '1_000'");
    expect_text_error("tessera: 1\nroot: {size: [1, -]}\n", TSR_EINVAL,
                      "expected a decimal integer, got '-'");
}

Test(designs_errors, reals_refuse_what_strtod_would_take)
{
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: infinity}\n", TSR_EINVAL,
                      "root.fill: 'infinity': infinity and NaN are not allowed");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: -inf}\n", TSR_EINVAL,
                      "'-inf': infinity and NaN are not allowed");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: nan(1)}\n", TSR_EINVAL,
                      "'nan(1)': infinity and NaN are not allowed");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: 1.5x}\n", TSR_EINVAL,
                      "expected a number, got '1.5x'");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: .}\n", TSR_EINVAL,
                      "expected a number, got '.'");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: [1]}\n", TSR_EINVAL,
                      "root.fill: expected a number, got a sequence");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fill: }\n", TSR_EINVAL,
                      "root.fill: missing value (expected a number)");
}

Test(designs_errors, booleans_are_true_or_false_only)
{
    const char *fmt = "tessera: 1\noutput: {order: swath, swath: {width: 4, serpentine: %s}}\n"
                      "root: {size: [8, 8]}\n";
    const char *bad[] = {"yes", "True", "on", "1", "\"true\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, fmt, bad[i]);
        expect_text_error(yaml, TSR_EINVAL,
                          "t.yaml:2:54: output.swath.serpentine: expected true or false");
    }
}

Test(designs_errors, every_trait_name_gets_a_suggestion)
{
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: patern, "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "unknown trait 'patern' (did you mean 'pattern'?)");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: distanse, dmax: 2, "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "unknown trait 'distanse' (did you mean 'distance'?)");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: repeet, "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "unknown trait 'repeet' (did you mean 'repeat'?)");
}

Test(designs_errors, unknown_keys_get_suggestions_from_their_place)
{
    /* edge keys, trait keys, enum values, node keys, top keys: each list where it applies */
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, ofset: [1, 1], "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL,
                      "root.children[0].ofset: unknown key 'ofset' (did you mean 'offset'?)");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: distance, dmx: 3, "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "unknown key 'dmx' (did you mean 'dmax'?)");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], fil: 1}\n", TSR_EINVAL,
                      "t.yaml:2:22: root.fil: unknown key 'fil' (did you mean 'fill'?)");
    expect_text_error(
        "tessera: 1\nroot: {size: [1, 1], children: [{trait: blur, sigma: 1, edge: wrp, "
        "node: {size: [1, 1]}}]}\n",
        TSR_EINVAL, "root.children[0].edge: unknown edge 'wrp' (did you mean 'wrap'?)");
    expect_text_error("tessera: 1\nroots: {size: [1, 1]}\n", TSR_EINVAL,
                      "t.yaml:2:1: roots: unknown key 'roots' (did you mean 'root'?)");
    expect_text_error("tessera: 1\nroot: {size: [1, 1], children: [{trait: pattern, zzz: 1, "
                      "node: {size: [1, 1]}}]}\n",
                      TSR_EINVAL, "root.children[0].zzz: unknown key 'zzz'");
}

Test(designs_errors, missing_size_of_an_image_node_without_a_reader)
{
    const char *yaml = "tessera: 1\nroot:\n  source: {image: lens.png}\n";
    tsr_error err = {0};
    cr_assert_null(tsr_design_load_string(yaml, strlen(yaml), "t.yaml", NULL, NULL, &err));
    cr_assert(strstr(err.msg, "t.yaml:3:3: root: missing required key 'size'"), "%s", err.msg);
    NO_LEAKS();
}

/* A reader that fails without a message still gives file:line:col. */
static tsr_status
silent_fail(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err)
{
    (void)path, (void)w, (void)h, (void)px, (void)err;
    return TSR_EINVAL;
}

Test(designs_errors, reader_failure_without_message)
{
    const char *yaml = "tessera: 1\nroot:\n  source: {image: lens.png}\n";
    tsr_design_opts o = {.read_image = silent_fail};
    tsr_error err = {0};
    cr_assert_null(tsr_design_load_string(yaml, strlen(yaml), "t.yaml", NULL, &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml:3:19: root.source.image: "), "%s", err.msg);
    NO_LEAKS();
}

Test(designs_errors, reader_message_keeps_its_status_and_gets_our_position)
{
    const char *yaml = "tessera: 1\nroot:\n  source: {image: missing.png}\n";
    expect_text_error(yaml, TSR_EIO,
                      "t.yaml:3:19: root.source.image: " GOOD_DIR "missing.png: cannot open");
}

/* ---- depth ----------------------------------------------------------------------------------- */

/* root -> node -> ... `levels` inline nodes deep, flow style. Caller frees. */
static char *
inline_chain(int levels)
{
    size_t cap = (size_t)levels * 80 + 256, n = 0;
    char *s = malloc(cap);
    cr_assert(s);
    n += (size_t)snprintf(s + n, cap - n, "tessera: 1\nroot: ");
    for (int i = 0; i < levels; i++)
        n += (size_t)snprintf(s + n, cap - n, "{size: [4, 4], children: [{trait: pattern, node: ");
    n += (size_t)snprintf(s + n, cap - n, "{size: [4, 4]}");
    for (int i = 0; i < levels; i++)
        n += (size_t)snprintf(s + n, cap - n, "}]}");
    snprintf(s + n, cap - n, "\n");
    return s;
}

/* nodes n0 -> n1 -> ... -> n{levels}, root refs n0. Caller frees. */
static char *
ref_chain(int levels)
{
    size_t cap = (size_t)levels * 80 + 256, n = 0;
    char *s = malloc(cap);
    cr_assert(s);
    n += (size_t)snprintf(s + n, cap - n, "tessera: 1\nnodes:\n");
    /* n0 first: loading it recurses through all of them */
    for (int i = 0; i <= levels; i++) {
        if (i == levels)
            n += (size_t)snprintf(s + n, cap - n, "  n%d: {size: [4, 4]}\n", i);
        else
            n += (size_t)snprintf(s + n, cap - n,
                                  "  n%d: {size: [4, 4], children: [{trait: pattern, ref: n%d}]}\n",
                                  i, i + 1);
    }
    snprintf(s + n, cap - n, "root: {size: [4, 4], children: [{trait: pattern, ref: n0}]}\n");
    return s;
}

Test(designs_depth, a_chain_of_1000_inline_nodes_loads)
{
    char *yaml = inline_chain(1000);
    tsr_error err = {0};
    tsr_design *d = load_text(yaml, &err);
    cr_assert(d, "%s", err.msg);
    cr_assert_eq(d->nnodes, 1001);
    check_structure(d);
    /* long key paths are shortened in names, never O(depth) each */
    cr_assert_leq(strlen(d->nodes[0]->name), 240);
    tsr_design_free(d);
    free(yaml);
    NO_LEAKS();
}

Test(designs_depth, a_chain_of_1000_refs_loads_in_order)
{
    char *yaml = ref_chain(1000);
    tsr_error err = {0};
    tsr_design *d = load_text(yaml, &err);
    cr_assert(d, "%s", err.msg);
    cr_assert_eq(d->nnodes, 1002);
    check_structure(d);
    cr_assert_str_eq(d->nodes[0]->name, "n1000");
    cr_assert_str_eq(d->nodes[1000]->name, "n0");
    tsr_design_free(d);
    free(yaml);
    NO_LEAKS();
}

Test(designs_depth, nesting_past_the_limit_is_an_error)
{
    char *yaml = inline_chain(TSR_DESIGN_MAX_DEPTH);
    expect_text_error(yaml, TSR_EINVAL, "nodes nested deeper than 2000");
    free(yaml);
    yaml = ref_chain(TSR_DESIGN_MAX_DEPTH + 5);
    expect_text_error(yaml, TSR_EINVAL, "nodes nested deeper than 2000");
    free(yaml);
}

Test(designs_depth, yaml_nesting_past_the_limit_is_an_error)
{
    int levels = TSR_DESIGN_MAX_YAML_DEPTH + 1;
    char *s = malloc((size_t)levels * 2 + 64);
    cr_assert(s);
    size_t n = (size_t)sprintf(s, "tessera: 1\nroot: ");
    for (int i = 0; i < levels; i++)
        s[n++] = '[';
    for (int i = 0; i < levels; i++)
        s[n++] = ']';
    s[n++] = '\n';
    s[n] = 0;
    expect_text_error(s, TSR_EINVAL, "nesting deeper than 10000 levels");
    free(s);
}

/* ---- good fixtures --------------------------------------------------------------------------- */

Test(designs_good, minimal_gets_every_default)
{
    tsr_design *d = load_good("minimal.yaml");
    check_structure(d);
    cr_assert_eq(d->nnodes, 1);
    cr_assert_eq(d->tile, 512);
    cr_assert_eq(d->root->tile, 512);
    cr_assert_eq(d->out.depth, 8);
    cr_assert(d->out.range[0] == 0.0 && d->out.range[1] == 1.0);
    cr_assert_eq(d->out.calibration.n, 0);
    cr_assert_eq(d->out.order, TSR_ORDER_RASTER);
    cr_assert_null(d->name);
    cr_assert_null(d->root->source);
    cr_assert(d->root->w == 10 && d->root->h == 20 && d->root->fill == 0.0f);
    cr_assert_str_eq(d->root->name, "root");
    cr_assert(strstr(d->root->where, "minimal.yaml:4:3: root"), "%s", d->root->where);
    char *dump = dump_of(d);
    expect_dump(dump, "tessera: 1\nname: null\ntile: 512\noutput:\n  depth: 8\n  range: [0, 1]\n"
                      "  calibration: []\n  order: raster\n");
    expect_dump(dump, "    size: [10, 20]\n    tile: 512\n    fill: 0\n    children: []\n");
    cr_assert_null(strstr(dump, "swath"));
    free(dump);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, full_output_section)
{
    tsr_design *d = load_good("full.yaml");
    check_structure(d);
    cr_assert_str_eq(d->name, "microlens-array");
    cr_assert_eq(d->tile, 256);
    cr_assert_eq(d->out.depth, 16);
    cr_assert(d->out.range[1] == 2.5);
    cr_assert_eq(d->out.calibration.n, 3);
    cr_assert(d->out.calibration.p[1][1] == 0.42, "calibration stays double");
    cr_assert_eq(d->out.order, TSR_ORDER_SWATH);
    cr_assert_eq(d->out.swath_width, 16384);
    cr_assert(d->out.serpentine);
    cr_assert_eq(d->out.start, TSR_BOTTOM_RIGHT);
    cr_assert_eq(d->nnodes, 2);
    cr_assert(d->root->w == 2000000 && d->root->h == 2000000);
    const tsr_edge *e = &d->root->edges[0];
    const tsr_repeat_params *rp = e->params;
    cr_assert_str_eq(e->trait->name, "repeat-vector");
    cr_assert(rp->u[0] == 60 && rp->u[1] == 0 && rp->v[0] == 30 && rp->v[1] == 52);
    cr_assert_eq(rp->overlap, TSR_OVERLAP_AVERAGE);
    cr_assert_eq(e->child, d->nodes[0]);
    cr_assert_eq(e->child->source->kind, TSR_SRC_CIRCLE);
    cr_assert(strstr(e->where, "full.yaml:19:7: root.children[0]"), "%s", e->where);
    cr_assert(strstr(e->child->source->where, "full.yaml:14:13: nodes.lens.source"), "%s",
              e->child->source->where);
    char *dump = dump_of(d);
    expect_dump(dump,
                "  depth: 16\n  range: [0, 2.5]\n  calibration: [[0, 0], [0.5, 0.42], [1, 1]]\n"
                "  order: swath\n  swath:\n    width: 16384\n    serpentine: true\n"
                "    start: bottom-right\n");
    expect_dump(dump,
                "      shape: circle\n      center: [30, 30]\n      radius: 6\n      value: 1\n"
                "      aa: 0\n");
    expect_dump(dump, "u: [60, 0]\n        v: [30, 52]\n        overlap: average\n"
                      "        region: [0, 0, 0, 0]\n");
    free(dump);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, every_trait_with_defaults_and_every_parameter)
{
    tsr_design *d = load_good("every_trait.yaml");
    check_structure(d);
    cr_assert_eq(d->nnodes, 2);
    const tsr_node *r = d->root;
    cr_assert_eq(r->nedges, 14);
    cr_assert(r->fill == 0.25f);
    cr_assert_eq(d->nodes[0]->tile, 64);
    cr_assert_eq(r->edges[1].blend, TSR_BLEND_ADD);
    cr_assert(r->edges[1].offset[0] == -3 && r->edges[1].offset[1] == 7);
    cr_assert_eq(r->edges[1].mask, 1);
    const tsr_repeat_params *rep = r->edges[2].params;
    cr_assert_eq(rep->overlap, TSR_OVERLAP_FIRST);
    rep = r->edges[3].params;
    cr_assert(rep->period[0] == 12 && rep->period[1] == 10 && rep->overlap == TSR_OVERLAP_MAX);
    cr_assert(rep->region[0] == 10 && rep->region[3] == 400);
    const tsr_distance_params *dp = r->edges[6].params;
    cr_assert(dp->threshold == 0.5f && dp->dmax == 16 && dp->profile.kind == TSR_PROFILE_LINEAR);
    cr_assert(dp->scale == 1.0 && dp->bias == 0.0);
    dp = r->edges[7].params;
    cr_assert(dp->threshold == 0.1f && dp->dmax == 4096 && dp->scale == -2.0 && dp->bias == 1.5);
    cr_assert(dp->profile.kind == TSR_PROFILE_POINTS && dp->profile.pts.n == 3);
    cr_assert(dp->profile.pts.p[1][0] == 2.5 && dp->profile.pts.p[2][1] == 0.0);
    dp = r->edges[10].params;
    cr_assert(dp->profile.kind == TSR_PROFILE_GAUSSIAN && dp->profile.s == 1.25);
    const tsr_blur_params *bp = r->edges[11].params;
    cr_assert(bp->sigma == 0.3 && bp->kernel.w == 0 && bp->edge == TSR_EDGE_ZERO);
    bp = r->edges[12].params;
    cr_assert(bp->kernel.w == 3 && bp->kernel.h == 3 && bp->kernel.k[4] == 0.25f);
    cr_assert_eq(bp->edge, TSR_EDGE_WRAP);
    cr_assert_eq(r->edges[12].blend, TSR_BLEND_MULTIPLY);
    char *dump = dump_of(d);
    expect_dump(dump, "      - trait: pattern\n        child: 0  # dot\n        blend: over\n"
                      "        offset: [0, 0]\n        mask: none\n");
    expect_dump(dump, "        overlap: first\n");
    expect_dump(dump, "        threshold: 0.5\n        dmax: 16\n        profile: linear\n"
                      "        scale: 1\n        bias: 0\n");
    expect_dump(dump, "        profile: {points: [[0, 1], [2.5, 0.5], [8, 0]]}\n");
    expect_dump(dump, "        profile: {gaussian: 1.25}\n");
    expect_dump(dump, "        profile: sphere\n");
    expect_dump(dump, "        profile: cosine\n");
    expect_dump(dump, "        kernel: [[0.0625, 0.125, 0.0625], [0.125, 0.25, 0.125], "
                      "[0.0625, 0.125, 0.0625]]\n        edge: wrap\n");
    expect_dump(dump, "        sigma: 256\n");
    expect_dump(dump, "        edge: clamp\n");
    expect_dump(dump, "        blend: multiply\n");
    free(dump);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, every_source_kind)
{
    last_image[0] = 0;
    tsr_design *d = load_good("sources.yaml");
    check_structure(d);
    cr_assert_eq(d->nnodes, 9);
    static const tsr_source_kind kinds[] = {TSR_SRC_CIRCLE, TSR_SRC_ELLIPSE, TSR_SRC_RING,
                                            TSR_SRC_RECT,   TSR_SRC_POLYGON, TSR_SRC_LINEAR,
                                            TSR_SRC_RADIAL, TSR_SRC_IMAGE};
    for (size_t i = 0; i < 8; i++)
        cr_assert_eq(d->nodes[i]->source->kind, kinds[i], "node %zu", i);
    const tsr_source *s = d->nodes[1]->source;
    cr_assert(s->radii[0] == 3.0 && s->radii[1] == 1.5 && s->value == 0.5f && s->aa == 16);
    s = d->nodes[4]->source;
    cr_assert(s->points.n == 3 && s->points.p[2][1] == 7.5 && s->value == -1.0f);
    s = d->nodes[6]->source;
    cr_assert(s->values[0] == 1.0f && s->values[1] == 0.1f);
    /* the image: relative to the design's folder, decoded, its size the node's size */
    s = d->nodes[7]->source;
    cr_assert_str_eq(s->path, GOOD_DIR "images/lens.png");
    cr_assert_str_eq(last_image, GOOD_DIR "images/lens.png");
    cr_assert(s->img && s->iw == 3 && s->ih == 2);
    cr_assert(d->nodes[7]->w == 3 && d->nodes[7]->h == 2);
    char *dump = dump_of(d);
    expect_dump(dump,
                "      shape: ring\n      center: [4, 4]\n      radii: [0, 3]\n      value: 1\n"
                "      aa: 1\n");
    expect_dump(dump, "      shape: polygon\n      points: [[0, 0], [7, 1], [3, 7.5]]\n");
    expect_dump(dump, "      gradient: linear\n      from: [0, 0]\n      to: [8, 0]\n"
                      "      values: [0, 1]\n");
    expect_dump(dump, "      gradient: radial\n      center: [4, 4]\n      radius: 4\n"
                      "      values: [1, 0.1]\n");
    expect_dump(dump, "      image: " GOOD_DIR "images/lens.png\n      decoded: [3, 2]\n");
    free(dump);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, image_without_reader_keeps_the_given_size)
{
    const char *yaml = "tessera: 1\nroot:\n  size: [5, 6]\n  source: {image: a/b.png}\n";
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "t.yaml", "/designs", NULL, &err);
    cr_assert(d, "%s", err.msg);
    cr_assert_str_eq(d->root->source->path, "/designs/a/b.png");
    cr_assert_null(d->root->source->img);
    cr_assert(d->root->w == 5 && d->root->h == 6);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, absolute_image_paths_stay)
{
    const char *yaml = "tessera: 1\nroot:\n  size: [3, 2]\n  source: {image: /abs/x.png}\n";
    tsr_error err = {0};
    tsr_design *d =
        tsr_design_load_string(yaml, strlen(yaml), "t.yaml", "/designs", &fake_opts, &err);
    cr_assert(d, "%s", err.msg);
    cr_assert_str_eq(d->root->source->path, "/abs/x.png");
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, a_named_node_used_three_times_is_one_node)
{
    tsr_design *d = load_good("shared.yaml");
    check_structure(d);
    /* a, b, the inline blur child, root: `spare` is validated but not part of the design */
    cr_assert_eq(d->nnodes, 4);
    for (size_t i = 0; i < d->nnodes; i++)
        cr_assert_str_neq(d->nodes[i]->name, "spare");
    const tsr_node *a = d->nodes[0], *b = d->nodes[1], *r = d->root;
    cr_assert_str_eq(a->name, "a");
    cr_assert_str_eq(b->name, "b");
    cr_assert_eq(r->edges[0].child, b);
    cr_assert_eq(r->edges[1].child, a);
    cr_assert_eq(b->edges[0].child, a);
    cr_assert_eq(r->edges[2].child->edges[0].child, a);
    cr_assert_str_eq(r->edges[2].child->name, "root.children[2].node");
    /* tiles: the design default unless the node says otherwise */
    cr_assert(a->tile == 128 && b->tile == 128 && r->tile == 128);
    cr_assert_eq(r->edges[2].child->tile, 32);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, scalars_at_their_edges)
{
    tsr_design *d = load_good("scalars.yaml");
    check_structure(d);
    cr_assert_str_eq(d->name, "quoted name: fine");
    cr_assert(d->out.range[0] == 0.1 && d->out.range[1] == -0.5);
    cr_assert(d->root->fill == 0.1f, "value-like reals are rounded to float32");
    const tsr_source *s = d->root->source;
    cr_assert(s->rect[0] == 0.25 && s->rect[1] == 1.5 && s->rect[2] == 3.0, "strtod syntax");
    cr_assert(s->value == 0.3f);
    cr_assert_eq(d->root->edges[0].offset[0], 0);
    cr_assert_eq(d->root->edges[0].offset[1], -TSR_COORD_MAX);
    cr_assert_eq(d->nodes[0]->w, TSR_COORD_MAX);
    char *dump = dump_of(d);
    expect_dump(dump, "name: \"quoted name: fine\"\n");
    expect_dump(dump, "  range: [0.1, -0.5]\n");
    expect_dump(dump, "    fill: 0.1\n");
    expect_dump(dump, "      rect: [0.25, 1.5, 3, 4]\n      value: 0.3\n");
    free(dump);
    tsr_design_free(d);
    NO_LEAKS();
}

Test(designs_good, the_dump_is_deterministic)
{
    const char *files[] = {"minimal.yaml", "full.yaml",   "every_trait.yaml",
                           "sources.yaml", "shared.yaml", "scalars.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tsr_design *a = load_good(files[i]), *b = load_good(files[i]);
        char *da = dump_of(a), *db = dump_of(b);
        cr_assert_str_eq(da, db, "%s", files[i]);
        free(da);
        free(db);
        tsr_design_free(a);
        tsr_design_free(b);
    }
    NO_LEAKS();
}

/* Every real shipped design loads with the real PNG reader and dumps. */
Test(designs_good, every_example_loads)
{
    char **files = th_glob("designs/examples/*.yaml");
    tsr_design_opts o = {.read_image = tsr_png_read_gray, .read_size = tsr_png_read_info};
    for (size_t i = 0; files[i]; i++) {
        tsr_error err = {0};
        tsr_design *d = tsr_design_load(files[i], &o, &err);
        cr_assert(d, "%s: %s", files[i], err.msg);
        check_structure(d);
        char *dump = dump_of(d);
        cr_assert(strstr(dump, "tessera: 1\n"));
        free(dump);
        tsr_design_free(d);
    }
    th_glob_free(files);
    NO_LEAKS();
}
