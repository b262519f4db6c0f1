/* tests/workloads/test_lower_shared.c — what the lowerings share in workloads/lower/: a tensor's
 * values (fill.h), shapes (geometry.h), errors naming an operator (errors.h), the operators a
 * lowering refuses (unsupported.h) and a lowering's state (lower.h), each on small graphs built by
 * hand. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/err.h"
#include "core/half.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/lower/errors.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/geometry.h"
#include "workloads/lower/lower.h"
#include "workloads/lower/unsupported.h"

static void set_data(ts_graph *g, int id, const void *v, size_t bytes)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_graph_set_data(g, id, v, bytes, &e) == TS_OK, "%s", e.msg);
}

/* ---- values (fill.h) ---- */

START_TEST(test_value_f32)
{
    ts_graph *g = ts_graph_create("v");
    int64_t d[1] = {3};
    int a = tensor(g, "a", TS_TENSOR_WEIGHT, 1, d), b = tensor(g, "b", TS_TENSOR_WEIGHT, 1, d);
    float av[3] = {0.5f, -2.0f, 3.25f};
    set_data(g, a, av, sizeof av);
    const ts_graph_tensor *ta = ts_graph_get_tensor(g, a), *tb = ts_graph_get_tensor(g, b);
    for (uint64_t i = 0; i < 3; i++) {
        ck_assert_float_eq(ts_fill_value_f32(ta, a, i), av[i]);              /* its data */
        ck_assert_float_eq(ts_fill_value_f32(tb, b, i), ts_fill_f32(b, i)); /* the fill */
        float f = ts_fill_f32(b, i);
        ck_assert(f >= -1.0f && f < 1.0f);
    }
    ck_assert_float_ne(ts_fill_f32(a, 0), ts_fill_f32(b, 0)); /* the fill depends on the tensor */
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_value_f16)
{
    ts_graph *g = ts_graph_create("h");
    int64_t d[1] = {4};
    int a = tensor_dt(g, "a", TS_TENSOR_WEIGHT, TS_DT_F16, 1, d);
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_F16, 1, d);
    uint16_t hv[4] = {ts_f32_to_f16(1.5f), ts_f32_to_f16(-0.25f), ts_f32_to_f16(1000.0f), ts_f32_to_f16(0.1f)};
    set_data(g, a, hv, sizeof hv);
    const ts_graph_tensor *ta = ts_graph_get_tensor(g, a), *tb = ts_graph_get_tensor(g, b);
    ck_assert_float_eq(ts_fill_value_f32(ta, a, 0), 1.5f);
    ck_assert_float_eq(ts_fill_value_f32(ta, a, 1), -0.25f);
    ck_assert_float_eq(ts_fill_value_f32(ta, a, 2), 1000.0f);
    ck_assert_float_eq(ts_fill_value_f32(ta, a, 3), ts_f16_to_f32(hv[3])); /* the half, not 0.1 */
    for (uint64_t i = 0; i < 4; i++) { /* without data: the fill rounded to f16 */
        float f = ts_fill_value_f32(tb, b, i);
        ck_assert_float_eq(f, ts_f16_to_f32(ts_f32_to_f16(ts_fill_f32(b, i))));
        ck_assert_float_eq(f, ts_f16_to_f32(ts_f32_to_f16(f)));
    }
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_value_i8)
{
    ts_graph *g = ts_graph_create("i");
    int64_t d[1] = {3};
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 1, d);
    int b = tensor_dt(g, "b", TS_TENSOR_INPUT, TS_DT_I8, 1, d);
    int f = tensor(g, "f", TS_TENSOR_WEIGHT, 1, d);
    int8_t av[3] = {-128, 7, 127};
    float fv[3] = {1, 2, 3};
    set_data(g, a, av, sizeof av);
    set_data(g, f, fv, sizeof fv);
    for (uint64_t i = 0; i < 3; i++) {
        ck_assert_int_eq(ts_fill_value_i8(ts_graph_get_tensor(g, a), a, i), av[i]);
        ck_assert_int_eq(ts_fill_value_i8(ts_graph_get_tensor(g, b), b, i), ts_fill_i8(b, i));
        /* data of another dtype is not int8: the fill */
        ck_assert_int_eq(ts_fill_value_i8(ts_graph_get_tensor(g, f), f, i), ts_fill_i8(f, i));
        int8_t v = ts_fill_i8(b, i);
        ck_assert(v >= -16 && v < 16);
        int32_t bias = ts_fill_bias(b, i);
        ck_assert(bias >= -256 && bias < 256);
    }
    ts_graph_destroy(g);
}
END_TEST

/* ---- geometry (geometry.h) ---- */

START_TEST(test_cdiv)
{
    ck_assert_uint_eq(ts_geom_cdiv(0, 4), 0);
    ck_assert_uint_eq(ts_geom_cdiv(1, 4), 1);
    ck_assert_uint_eq(ts_geom_cdiv(8, 4), 2);
    ck_assert_uint_eq(ts_geom_cdiv(9, 4), 3);
    ck_assert_uint_eq(ts_geom_cdiv(1216, 1), 1216);
}
END_TEST

START_TEST(test_pixels_channels)
{
    ts_graph *g = ts_graph_create("pc");
    static const int64_t d4[4] = {2, 3, 5, 7}, d3[3] = {2, 4, 6}, d2[2] = {8, 9}, d1[1] = {10}, d0[1] = {0};
    const int64_t *dims[] = {d4, d3, d2, d1, d0};
    static const int ranks[] = {4, 3, 2, 1, 0};
    static const uint64_t px[] = {2 * 5 * 7, 2 * 4, 8, 1, 1}, ch[] = {3, 6, 9, 10, 1};
    static const char *const names[] = {"nchw", "r3", "mat", "vec", "scalar"};
    for (int k = 0; k < 5; k++) {
        int id = tensor(g, names[k], TS_TENSOR_INPUT, ranks[k], dims[k]);
        uint64_t p = 0, c = 0;
        ts_geom_pixels_channels(ts_graph_get_tensor(g, id), &p, &c);
        ck_assert_msg(p == px[k] && c == ch[k], "%s: %llu x %llu", names[k], (unsigned long long)p,
                      (unsigned long long)c);
    }
    ts_graph_destroy(g);
}
END_TEST

/* A graph: x[1, 3, 9, 8] -> Conv (4 x 3 x 3 x 2 weight, stride 2 x 1, pads 1 0 1 0, dilation 1 x 2)
 * -> MaxPool (2 x 2, stride 2) -> AveragePool (kernel 2 x 1, pads 0 0 1 0) -> GlobalAveragePool ->
 * Flatten. */
static ts_graph *window_graph(void)
{
    ts_graph *g = ts_graph_create("win");
    int64_t xd[4] = {1, 3, 9, 8}, wd[4] = {4, 3, 3, 2};
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, xd), w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, wd);
    int c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL), m = tensor(g, "m", TS_TENSOR_ACTIVATION, -1, NULL);
    int a = tensor(g, "a", TS_TENSOR_ACTIVATION, -1, NULL), p = tensor(g, "p", TS_TENSOR_ACTIVATION, -1, NULL);
    int f = tensor(g, "f", TS_TENSOR_ACTIVATION, -1, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.strides[0] = 2;
    at.pads[0] = at.pads[2] = 1;
    at.dilations[1] = 2;
    int cin[2] = {x, w};
    node(g, TS_OP_CONV, "conv", cin, 2, c, &at);
    ts_graph_attrs_init(&at);
    at.kernel[0] = at.kernel[1] = 2;
    at.strides[0] = at.strides[1] = 2;
    node(g, TS_OP_MAXPOOL, "pool", &c, 1, m, &at);
    ts_graph_attrs_init(&at);
    at.kernel[0] = 2;
    at.kernel[1] = 1;
    at.pads[2] = 1;
    node(g, TS_OP_AVGPOOL, "avg", &m, 1, a, &at);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", &a, 1, p, NULL);
    node(g, TS_OP_FLATTEN, "flat", &p, 1, f, NULL);
    finalize(g);
    return g;
}

static const ts_graph_node *node_named(const ts_graph *g, const char *name)
{
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        if (!strcmp(ts_graph_get_node(g, (int)i)->name, name))
            return ts_graph_get_node(g, (int)i);
    ck_abort_msg("no node '%s'", name);
    return NULL;
}

START_TEST(test_window_of)
{
    ts_graph *g = window_graph();
    ts_geom_window w;
    /* Conv: the window from the weight, M its output channels; (9 + 2 - 3) / 2 + 1 = 5 rows,
     * 8 - 2 = 6 columns (the dilated kernel spans 3) */
    ck_assert(ts_geom_window_of(g, node_named(g, "conv"), &w));
    ts_geom_window want = {.N = 1, .C = 3, .H = 9, .W = 8, .M = 4, .Ho = 5, .Wo = 6, .kh = 3, .kw = 2, .sh = 2,
                           .sw = 1, .dh = 1, .dw = 2, .pt = 1, .pl = 0, .pb = 1, .pr = 0};
    ck_assert_mem_eq(&w, &want, sizeof w);
    ck_assert(!ts_geom_window_pointwise(&w));
    /* MaxPool: from kernel_shape, M = C */
    ck_assert(ts_geom_window_of(g, node_named(g, "pool"), &w));
    want = (ts_geom_window){.N = 1, .C = 4, .H = 5, .W = 6, .M = 4, .Ho = 2, .Wo = 3, .kh = 2, .kw = 2, .sh = 2,
                            .sw = 2, .dh = 1, .dw = 1};
    ck_assert_mem_eq(&w, &want, sizeof w);
    /* AveragePool with a bottom pad */
    ck_assert(ts_geom_window_of(g, node_named(g, "avg"), &w));
    want = (ts_geom_window){.N = 1, .C = 4, .H = 2, .W = 3, .M = 4, .Ho = 2, .Wo = 3, .kh = 2, .kw = 1, .sh = 1,
                            .sw = 1, .dh = 1, .dw = 1, .pb = 1};
    ck_assert_mem_eq(&w, &want, sizeof w);
    /* GlobalAveragePool: the whole image, stride 1, no pads */
    ck_assert(ts_geom_window_of(g, node_named(g, "gap"), &w));
    want = (ts_geom_window){.N = 1, .C = 4, .H = 2, .W = 3, .M = 4, .Ho = 1, .Wo = 1, .kh = 2, .kw = 3, .sh = 1,
                            .sw = 1, .dh = 1, .dw = 1};
    ck_assert_mem_eq(&w, &want, sizeof w);
    /* not a window */
    memset(&w, 0x5a, sizeof w);
    want = w;
    ck_assert(!ts_geom_window_of(g, node_named(g, "flat"), &w));
    ck_assert_mem_eq(&w, &want, sizeof w);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_window_of_not_4d)
{
    ts_graph *g = ts_graph_create("r3");
    int64_t xd[3] = {1, 4, 5};
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, xd), y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", &x, 1, y, NULL);
    finalize(g);
    ts_geom_window w;
    ck_assert(!ts_geom_window_of(g, node_named(g, "gap"), &w));
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_window_tap)
{
    ts_geom_window w = {.N = 1, .C = 1, .H = 9, .W = 8, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .dh = 1, .dw = 2,
                        .pt = 1, .pl = 0, .pb = 1, .pr = 0};
    int64_t iy, ix;
    ck_assert(!ts_geom_window_tap(&w, 0, 0, 0, 0, &iy, &ix)); /* the top pad */
    ck_assert(iy == -1 && ix == 0);
    ck_assert(ts_geom_window_tap(&w, 0, 0, 1, 1, &iy, &ix));
    ck_assert(iy == 0 && ix == 2);
    ck_assert(ts_geom_window_tap(&w, 2, 3, 2, 1, &iy, &ix)); /* 2 * 2 - 1 + 2, 3 + 2 */
    ck_assert(iy == 5 && ix == 5);
    ck_assert(!ts_geom_window_tap(&w, 4, 0, 2, 0, &iy, &ix)); /* 8 - 1 + 2 = 9: the bottom pad */
    ck_assert(iy == 9);
    ck_assert(ts_geom_window_tap(&w, 1, 7, 1, 0, &iy, &ix)); /* the last column */
    ck_assert(iy == 2 && ix == 7);
    ck_assert(!ts_geom_window_tap(&w, 1, 7, 1, 1, &iy, &ix)); /* 7 + 2: right of the image */
    ck_assert(ix == 9);
}
END_TEST

START_TEST(test_window_pointwise)
{
    ts_geom_window w = {.kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 3, .dw = 1};
    ck_assert(ts_geom_window_pointwise(&w)); /* dilations do not matter */
    w.pr = 1;
    ck_assert(!ts_geom_window_pointwise(&w));
    w.pr = 0, w.sw = 2;
    ck_assert(!ts_geom_window_pointwise(&w));
    w.sw = 1, w.kh = 3;
    ck_assert(!ts_geom_window_pointwise(&w));
}
END_TEST

/* ---- errors (errors.h) ---- */

START_TEST(test_fail)
{
    ts_graph *g = window_graph();
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_lower_fail(&e, node_named(g, "conv"), "groups %d and %s are not lowered", 2, "dilations"),
                     TS_EINPUT);
    ck_assert_int_eq(e.status, TS_EINPUT);
    ck_assert_str_eq(e.msg, "Conv 'conv': groups 2 and dilations are not lowered");
    ck_assert_int_eq(ts_lower_fail(&e, node_named(g, "gap"), "its input is not placed"), TS_EINPUT);
    ck_assert_str_eq(e.msg, "GlobalAveragePool 'gap': its input is not placed");
    ck_assert_int_eq(ts_lower_fail(NULL, node_named(g, "pool"), "no context"), TS_EINPUT);
    /* a long message is cut at the context's size, never overflows */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ck_assert_int_eq(ts_lower_fail(&e, node_named(g, "pool"), "%s", big), TS_EINPUT);
    ck_assert_uint_eq(strlen(e.msg), sizeof e.msg - 1);
    ck_assert(!strncmp(e.msg, "MaxPool 'pool': xxx", 19));
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* ---- the operators a lowering refuses (unsupported.h) ---- */

/* Refuses Tanh in every form, and a Sigmoid in a form named after the node ("like s12"). */
static bool refuse_some(const ts_graph *g, const ts_graph_node *n, char *why, size_t cap)
{
    (void)g;
    if (n->op == TS_OP_SIGMOID)
        snprintf(why, cap, "like %s", n->name);
    return n->op == TS_OP_TANH || n->op == TS_OP_SIGMOID;
}

static const ts_lower_ops some_ops = {.family = "toy", .refuse = refuse_some, .takes = "Relu"};

/* A chain of `n` operators from x: op_of(i) named "<prefix><i>". */
static ts_graph *chain_graph(size_t n, ts_graph_op (*op_of)(size_t), const char *prefix)
{
    ts_graph *g = ts_graph_create("c");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){2, 2});
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%zu", prefix, i);
        x = chain(g, op_of(i), name, x, -1, NULL);
    }
    ts_graph_mark_output(g, x);
    finalize(g);
    return g;
}

static ts_graph_op relu_tanh(size_t i) { return i % 3 == 2 ? TS_OP_RELU : TS_OP_TANH; }
static ts_graph_op all_relu(size_t i) { return (void)i, TS_OP_RELU; }
static ts_graph_op all_sigmoid(size_t i) { return (void)i, TS_OP_SIGMOID; }

START_TEST(test_check_ops)
{
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = chain_graph(4, all_relu, "r");
    ck_assert_int_eq(ts_lower_check_ops(g, &some_ops, &e), TS_OK);
    ck_assert_int_eq(ts_lower_refused(&e, g, ts_graph_get_node(g, 0), &some_ops), TS_OK);
    ts_graph_destroy(g);
    /* every refused node counted under its kind, the first named; the dispatch's error names one */
    g = chain_graph(6, relu_tanh, "n");
    ck_assert_int_eq(ts_lower_check_ops(g, &some_ops, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "the toy lowering does not support 1 operator of this model (4 nodes): Tanh (4 nodes, "
                            "first 'n0'); it lowers Relu");
    ck_assert_int_eq(ts_lower_refused(&e, g, ts_graph_get_node(g, 1), &some_ops), TS_EINPUT);
    ck_assert_str_eq(e.msg, "Tanh 'n1': the toy lowering does not support Tanh");
    ts_graph_destroy(g);
    /* a form is part of the kind; more kinds than one message holds end with how many are left */
    g = chain_graph(200, all_sigmoid, "sigmoid_with_a_long_name_");
    ck_assert_int_eq(ts_lower_refused(&e, g, ts_graph_get_node(g, 3), &some_ops), TS_EINPUT);
    ck_assert_str_eq(e.msg, "Sigmoid 'sigmoid_with_a_long_name_3': the toy lowering does not support Sigmoid like "
                            "sigmoid_with_a_long_name_3");
    ck_assert_int_eq(ts_lower_check_ops(g, &some_ops, NULL), TS_EINPUT);
    ck_assert_int_eq(ts_lower_check_ops(g, &some_ops, &e), TS_EINPUT);
    ck_assert_msg(!strncmp(e.msg, "the toy lowering does not support 200 operators of this model: Sigmoid like "
                                  "sigmoid_with_a_long_name_0 (node 'sigmoid_with_a_long_name_0'), ", 140),
                  "%s", e.msg);
    ck_assert_msg(strstr(e.msg, " more; it lowers Relu"), "%s", e.msg);
    ck_assert_uint_lt(strlen(e.msg), sizeof e.msg - 1);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* ---- a lowering's state (lower.h) ---- */

START_TEST(test_state_new)
{
    ts_err e;
    ts_err_init(&e);
    void *state = NULL;
    unsigned char *s = ts_lower_state_new(64, &state, &e);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_eq(s, state);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(s[i], 0);
    ck_assert_int_eq(e.status, TS_OK);
    ts_free(state);
    ts_err_free(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower_shared");
    TCase *tc = tcase_create("shared");
    tcase_add_test(tc, test_value_f32);
    tcase_add_test(tc, test_value_f16);
    tcase_add_test(tc, test_value_i8);
    tcase_add_test(tc, test_cdiv);
    tcase_add_test(tc, test_pixels_channels);
    tcase_add_test(tc, test_window_of);
    tcase_add_test(tc, test_window_of_not_4d);
    tcase_add_test(tc, test_window_tap);
    tcase_add_test(tc, test_window_pointwise);
    tcase_add_test(tc, test_fail);
    tcase_add_test(tc, test_check_ops);
    tcase_add_test(tc, test_state_new);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
