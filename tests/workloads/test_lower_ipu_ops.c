/* tests/workloads/test_lower_ipu_ops.c — the IPU lowering's operators for the model zoo: Clip
 * (ReLU6), Sigmoid, Tanh, HardSwish, Concat, Slice, Expand, MatMul with an odd inner dimension,
 * depthwise, grouped, dilated and batched Conv. Graphs built through the workloads API are compiled,
 * run on the IPU family (fast, lockstep and three threads must agree), and their outputs, read back
 * from tile memory where the lowering reports them, are compared with C references in double. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "core/alloc.h"
#include "core/half.h"
#include "tests/arch/ipu/ipu_test.h"
#include "tests/workloads/graph_build.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/ipu/lower_ipu_int.h"
#include "tests/workloads/lower_ipu_harness.h"

static const char *const *run_sets; /* config overrides for the lowering and the runs */

/* Lowered by planner (a)'s kernels (test_lower_ipu checks (b)'s and auto's) unless a test names
 * another planner (lower_and_run_with). */
static void lower_and_run_with(const ts_graph *g, const char *config, int planner, lowered *L)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = ipu_test_config(config, run_sets);
    ts_lower_ipu_params p;
    ck_assert_int_eq(ts_lower_ipu_params_from_config(cfg, &p, &e), TS_OK);
    p.planner = planner;
    ts_status rc = ts_lower_ipu(g, &p, &L->prog, &L->rep, &e);
    ts_config_destroy(cfg);
    ck_assert_msg(rc == TS_OK, "lower: %s", e.msg);
    ipu_test_modes_program(config, run_sets, L->prog, &L->run);
    ck_assert_msg(L->run.rc == TS_OK, "run: tile %lld cycle %lld: %s", (long long)L->run.err.tile,
                  (long long)L->run.err.cycle, L->run.err.msg);
}

static void lower_and_run(const ts_graph *g, const char *config, lowered *L)
{
    lower_and_run_with(g, config, TS_LOWER_PLANNER_LCS, L);
}

static void within(double got, double want, double tol, const char *what, uint64_t k)
{
    ck_assert_msg(fabs(got - want) <= tol, "%s[%llu]: got %.9g, want %.9g (tolerance %.3g)", what,
                  (unsigned long long)k, got, want, tol);
}

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }
static double hardswish_ref(double x) { return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0; }

/* ---- elementwise ---- */

START_TEST(test_activations)
{
    /* Clip as ReLU6 and with other bounds, Sigmoid, Tanh, HardSwish and the tanh form of Gelu of x
     * [50, 44] times 5 (held over 3 tiles of ipu_tiny4), in f32 (_i 0) and in f16 (_i 1: f16 values
     * held in f32 words, as between the f16 Convs). Tolerances: Clip is exact (max and min); Sigmoid and Tanh come from exp
     * (Taylor, 1e-7 relative) and 1/(1 + e) (four Newton steps: to f32 rounding), so 1e-6; HardSwish
     * multiplies by an f32 1/6, so 2 ulp of f32 (4e-7 relative) plus the rounding of x + 3. */
    bool half = _i == 1;
    ts_graph_op hs;
    bool has_hs = ts_graph_op_parse("HardSwish", &hs) == 0;
    ts_graph *g = ts_graph_create("act");
    ts_dtype dt = half ? TS_DT_F16 : TS_DT_F32;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, dt, 2, (int64_t[]){50, 44});
    float *xv = ts_calloc(50 * 44, 4);
    uint16_t *xh = ts_calloc(50 * 44, 2);
    for (int k = 0; k < 50 * 44; k++) {
        xv[k] = val(x, k) * 5.0f;
        xh[k] = ts_f32_to_f16(xv[k]);
        if (half)
            xv[k] = ts_f16_to_f32(xh[k]);
    }
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, x, half ? (void *)xh : (void *)xv, 50 * 44 * (half ? 2u : 4u), &e), TS_OK);
    ts_graph_attrs relu6, clip;
    ts_graph_attrs_init(&relu6);
    relu6.min = 0;
    relu6.max = 6;
    ts_graph_attrs_init(&clip);
    clip.min = -1.5;
    clip.max = 2.25;
    ts_graph_attrs gt;
    ts_graph_attrs_init(&gt);
    gt.approximate_tanh = true;
    int y[6];
    y[5] = chain(g, TS_OP_GELU, "gelu_tanh", x, -1, &gt);
    y[0] = chain(g, TS_OP_CLIP, "relu6", x, -1, &relu6);
    y[1] = chain(g, TS_OP_CLIP, "clip", x, -1, &clip);
    y[2] = chain(g, TS_OP_SIGMOID, "sig", x, -1, NULL);
    y[3] = chain(g, TS_OP_TANH, "tanh", x, -1, NULL);
    y[4] = has_hs ? chain(g, hs, "hswish", x, -1, NULL) : -1;
    for (int i = 0; i < 6; i++)
        if (y[i] >= 0)
            ts_graph_mark_output(g, y[i]);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_tiny4", &L);
    for (int k = 0; k < 50 * 44; k++) {
        double v = xv[k];
        within(out_at(&L, g, y[0], (uint64_t)k), fmin(fmax(v, 0), 6), 0, "relu6", (uint64_t)k);
        within(out_at(&L, g, y[1], (uint64_t)k), fmin(fmax(v, -1.5), 2.25), 0, "clip", (uint64_t)k);
        within(out_at(&L, g, y[2], (uint64_t)k), sigmoid_ref(v), 1e-6, "sigmoid", (uint64_t)k);
        within(out_at(&L, g, y[3], (uint64_t)k), tanh(v), 1e-6, "tanh", (uint64_t)k);
        if (y[4] >= 0)
            within(out_at(&L, g, y[4], (uint64_t)k), hardswish_ref(v), 1e-6 * (1 + fabs(v)), "hardswish",
                   (uint64_t)k);
        /* x sigmoid(2u): the sigmoid's 1e-6 times |x|, plus the f32 rounding of u */
        double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
        within(out_at(&L, g, y[5], (uint64_t)k), 0.5 * v * (1 + tanh(u)), 1e-6 * (1 + fabs(v)), "gelu tanh",
               (uint64_t)k);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_free(xv);
    ts_free(xh);
}
END_TEST

/* ---- data movements ---- */

START_TEST(test_concat_slice_expand)
{
    /* Concat on the last axis ([12, 10] and [12, 3], as the NeRF skip joins [4096, 256] and
     * [4096, 63]), Concat on axis 1 of a weight [1, 1, 8] and an activation [1, 7, 8] (the ViT
     * class token), Slice of the last axis of [10, 1, 24] into three (the packed attention
     * in-projection), Slice of one row of the sequence axis, a Slice of leading rows (in place),
     * Expand of [1, 1, 8] to [3, 1, 8] and of [12, 1] to [12, 5], Gather by constant indices: data
     * movements, so the values
     * must be equal, on ipu_tiny4 (_i 0) and ipu_small16 (_i 1). */
    ts_graph *g = ts_graph_create("mv");
    int a = tensor(g, "a", TS_TENSOR_INPUT, 2, (int64_t[]){12, 10});
    int b = tensor(g, "b", TS_TENSOR_INPUT, 2, (int64_t[]){12, 3});
    int cls = tensor(g, "cls", TS_TENSOR_WEIGHT, 3, (int64_t[]){1, 1, 8});
    int p = tensor(g, "p", TS_TENSOR_INPUT, 3, (int64_t[]){1, 7, 8});
    int q = tensor(g, "q", TS_TENSOR_INPUT, 3, (int64_t[]){10, 1, 24});
    int c1 = tensor(g, "c1", TS_TENSOR_INPUT, 3, (int64_t[]){1, 1, 8});
    int c2 = tensor(g, "c2", TS_TENSOR_INPUT, 2, (int64_t[]){12, 1});
    int ids[] = {a, b, cls, p, q, c1, c2};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        fill(g, ids[i]);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    int cat = tensor(g, "cat", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_CONCAT, "cat", (int[]){a, b}, 2, cat, &at);
    at.axis = 1;
    int tok = tensor(g, "tok", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_CONCAT, "tok", (int[]){cls, p}, 2, tok, &at);
    int sl[5];
    for (int i = 0; i < 5; i++) {
        ts_graph_attrs s;
        ts_graph_attrs_init(&s);
        s.nslice = 3;
        int64_t d[3] = {10, 1, 24};
        for (int ax = 0; ax < 3; ax++)
            s.starts[ax] = 0, s.ends[ax] = d[ax], s.steps[ax] = 1;
        if (i < 3)
            s.starts[2] = 8 * i, s.ends[2] = 8 * i + 8;
        else if (i == 3)
            s.starts[0] = 4, s.ends[0] = 5;
        else
            s.ends[0] = 6; /* leading rows: in place */
        char nm[16];
        snprintf(nm, sizeof nm, "s%d", i);
        sl[i] = chain(g, TS_OP_SLICE, nm, q, -1, &s);
    }
    ts_graph_attrs ex;
    ts_graph_attrs_init(&ex);
    ex.nshape = 3;
    memcpy(ex.shape, (int64_t[]){3, 1, 8}, sizeof(int64_t[3]));
    int e1 = chain(g, TS_OP_EXPAND, "e1", c1, -1, &ex);
    ex.nshape = 2;
    memcpy(ex.shape, (int64_t[]){12, 5}, sizeof(int64_t[2]));
    int e2 = chain(g, TS_OP_EXPAND, "e2", c2, -1, &ex);
    ex.nshape = 3; /* a weight expanded: initial data */
    memcpy(ex.shape, (int64_t[]){2, 1, 8}, sizeof(int64_t[3]));
    int e3 = chain(g, TS_OP_EXPAND, "e3", cls, -1, &ex);
    /* Gather of a constant index from an activation: ViT's x[:, 0] ([1, 7, 8] -> [1, 8]), and of
     * indices {3, -1} */
    ts_err e;
    ts_err_init(&e);
    int i0 = tensor_dt(g, "i0", TS_TENSOR_CONST, TS_DT_I64, 0, NULL);
    int i1 = tensor_dt(g, "i1", TS_TENSOR_CONST, TS_DT_I64, 1, (int64_t[]){2});
    int64_t zero = 0, two[2] = {3, -1};
    ck_assert_int_eq(ts_graph_set_data(g, i0, &zero, 8, &e), TS_OK);
    ck_assert_int_eq(ts_graph_set_data(g, i1, two, 16, &e), TS_OK);
    ts_graph_attrs ga;
    ts_graph_attrs_init(&ga);
    ga.axis = 1;
    int g0 = chain(g, TS_OP_GATHER, "g0", p, i0, &ga), g1 = chain(g, TS_OP_GATHER, "g1", p, i1, &ga);
    int outs[] = {cat, tok, sl[0], sl[1], sl[2], sl[3], sl[4], e1, e2, e3, g0, g1};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        ts_graph_mark_output(g, outs[i]);
    finalize(g);
    /* finalize turns g0 into a Slice and a Reshape, and drops its index constant: ids after it move */
    g0 = ts_graph_find(g, "g0.y");
    g1 = ts_graph_find(g, "g1.y");
    lowered L = {0};
    lower_and_run(g, _i ? "ipu_small16" : "ipu_tiny4", &L);
    for (int r = 0; r < 12; r++)
        for (int c = 0; c < 13; c++)
            ck_assert_float_eq(out_at(&L, g, cat, (uint64_t)(r * 13 + c)), c < 10 ? val(a, r * 10 + c) : val(b, r * 3 + c - 10));
    for (int s = 0; s < 8; s++)
        for (int d = 0; d < 8; d++)
            ck_assert_float_eq(out_at(&L, g, tok, (uint64_t)(s * 8 + d)), s ? val(p, (s - 1) * 8 + d) : val(cls, d));
    for (int i = 0; i < 3; i++)
        for (int r = 0; r < 10; r++)
            for (int d = 0; d < 8; d++)
                ck_assert_float_eq(out_at(&L, g, sl[i], (uint64_t)(r * 8 + d)), val(q, r * 24 + 8 * i + d));
    for (int d = 0; d < 24; d++)
        ck_assert_float_eq(out_at(&L, g, sl[3], (uint64_t)d), val(q, 4 * 24 + d));
    for (int k = 0; k < 6 * 24; k++)
        ck_assert_float_eq(out_at(&L, g, sl[4], (uint64_t)k), val(q, k));
    for (int k = 0; k < 24; k++)
        ck_assert_float_eq(out_at(&L, g, e1, (uint64_t)k), val(c1, k % 8));
    for (int k = 0; k < 60; k++)
        ck_assert_float_eq(out_at(&L, g, e2, (uint64_t)k), val(c2, k / 5));
    for (int k = 0; k < 16; k++)
        ck_assert_float_eq(out_at(&L, g, e3, (uint64_t)k), val(cls, k % 8));
    for (int d = 0; d < 8; d++) {
        ck_assert_float_eq(out_at(&L, g, g0, (uint64_t)d), val(p, d));
        ck_assert_float_eq(out_at(&L, g, g1, (uint64_t)d), val(p, 3 * 8 + d));
        ck_assert_float_eq(out_at(&L, g, g1, (uint64_t)(8 + d)), val(p, 6 * 8 + d));
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* ---- MatMul with an odd inner dimension ---- */

START_TEST(test_matmul_odd_k)
{
    /* f32 (_i 0): C[30, 10] = A[30, 7] x B[7, 10] + bias (K padded to 8 with a zero input and zero
     * weights), and the NeRF skip: Concat([30, 10] relu'd, A) = [30, 17] x [17, 6]; tolerance 1e-5 x
     * the sum of |products| (f32 accumulation). f16 (_i 1): A[12, 6] x B[6, 10], K padded to 8 for
     * f16v4amp; products of f16 values summed in f32 and the output rounded to f16, so 2^-10 of
     * the value plus 1e-5 x the sum of |products|; _i 2: the same on an AMP of 16 f16 units (MK2's),
     * used as 8. */
    static const char *const mk2_amp[] = {"amp.macs_per_cycle_f16=64", NULL}; /* 16 f16 units, as MK2 */
    bool half = _i >= 1;
    run_sets = _i == 2 ? mk2_amp : NULL;
    int M = half ? 12 : 30, K = half ? 6 : 7, N = 10;
    ts_graph *g = ts_graph_create("oddk");
    ts_dtype dt = half ? TS_DT_F16 : TS_DT_F32;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, dt, 2, (int64_t[]){M, K});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, dt, 2, (int64_t[]){K, N});
    ts_err e;
    ts_err_init(&e);
    int ab[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, ab[i]));
        if (!half) {
            fill(g, ab[i]);
            continue;
        }
        uint16_t h[128];
        for (int64_t k = 0; k < n; k++)
            h[k] = ts_f32_to_f16(val(ab[i], k));
        ck_assert_int_eq(ts_graph_set_data(g, ab[i], h, (size_t)n * 2, &e), TS_OK);
    }
    int c = chain(g, TS_OP_MATMUL, "mm", a, b, NULL), r = -1, cat = -1, w2 = -1, d = -1;
    if (!half) {
        r = chain(g, TS_OP_RELU, "relu", c, -1, NULL);
        ts_graph_attrs at;
        ts_graph_attrs_init(&at);
        at.axis = 1;
        cat = tensor(g, "cat", TS_TENSOR_ACTIVATION, -1, NULL);
        node(g, TS_OP_CONCAT, "cat", (int[]){r, a}, 2, cat, &at);
        w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){N + K, 6});
        fill(g, w2);
        d = chain(g, TS_OP_MATMUL, "mm2", cat, w2, NULL);
        ts_graph_mark_output(g, d);
    }
    ts_graph_mark_output(g, c);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_tiny4", &L);
#define V(t, k) (half ? (double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))) : (double)val(t, k))
    double *cr = ts_calloc((size_t)(M * N), sizeof *cr);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < K; k++) {
                s += V(a, i * K + k) * V(b, k * N + j);
                m += fabs(V(a, i * K + k) * V(b, k * N + j));
            }
            double got = half ? out_f16(&L, g, c, (uint64_t)(i * N + j)) : out_at(&L, g, c, (uint64_t)(i * N + j));
            within(got, s, (half ? fabs(s) / 1024 : 0) + 1e-5 * m + 1e-7, "c", (uint64_t)(i * N + j));
            cr[i * N + j] = got; /* the next layer is checked on the simulated values */
        }
    for (int i = 0; !half && i < M; i++)
        for (int j = 0; j < 6; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < N + K; k++) {
                double x = k < N ? fmax(cr[i * N + k], 0) : val(a, i * K + k - N);
                s += x * val(w2, k * 6 + j);
                m += fabs(x * val(w2, k * 6 + j));
            }
            within(out_at(&L, g, d, (uint64_t)(i * 6 + j)), s, 1e-5 * m + 1e-7, "d", (uint64_t)(i * 6 + j));
        }
#undef V
    ts_free(cr);
    lowered_free(&L);
    ts_graph_destroy(g);
    run_sets = NULL;
}
END_TEST

START_TEST(test_matmul_bias_add)
{
    /* A Linear on three axes as torch exports it: MatMul x[2, 5, 12] x w[12, 9], then Add(bias[9],
     * its output), then a Relu. The MatMul adds the bias itself (fuse_tails: a Gemm's C, its
     * columns' values on the tiles that hold them), so the Add emits nothing (no superstep of its
     * own), under planner (a) (_i 0) and under auto (_i 1); outputs within 1e-5 x the sum of
     * |products| and |bias| (f32 accumulation) of the C reference. */
    ts_graph *g = ts_graph_create("linear3");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){2, 5, 12});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 9});
    int b = tensor(g, "bias", TS_TENSOR_WEIGHT, 1, (int64_t[]){9});
    fill(g, x);
    fill(g, w);
    fill(g, b);
    int mm = chain(g, TS_OP_MATMUL, "mm", x, w, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_ADD, "add", (int[]){b, mm}, 2, y, NULL);
    int z = chain(g, TS_OP_RELU, "relu", y, -1, NULL);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered L = {0};
    lower_and_run_with(g, "ipu_tiny4", _i ? TS_LOWER_PLANNER_AUTO : TS_LOWER_PLANNER_LCS, &L);
    int seen = 0;
    for (size_t k = 0; k < L.rep.nlayers; k++)
        if (L.rep.layers[k].op == TS_OP_ADD) {
            ck_assert_uint_eq(L.rep.layers[k].steps, 0);
            seen++;
        }
    ck_assert_int_le(seen, 1);
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 9; j++) {
            double s = val(b, j), m = fabs(val(b, j));
            for (int k = 0; k < 12; k++) {
                s += (double)val(x, i * 12 + k) * val(w, k * 9 + j);
                m += fabs((double)val(x, i * 12 + k) * val(w, k * 9 + j));
            }
            within(out_at(&L, g, z, (uint64_t)(i * 9 + j)), fmax(s, 0), 1e-5 * m + 1e-7, "z", (uint64_t)(i * 9 + j));
        }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* ---- Conv on the workers, and batches on the AMP ---- */

typedef struct cv_case {
    int N, C, H, Wd, M, G, k, s, d, pad;
    bool bias, half;
    const char *config;
} cv_case;

static const cv_case cv_cases[] = {
    {1, 12, 9, 9, 12, 12, 3, 1, 1, 1, true, false, "ipu_tiny4"},    /* depthwise, more planes than tiles */
    {1, 3, 11, 10, 3, 3, 3, 2, 1, 1, false, false, "ipu_small16"},  /* depthwise stride 2: rows in blocks */
    {1, 8, 7, 7, 6, 2, 3, 1, 1, 1, true, false, "ipu_tiny4"},       /* two groups */
    {1, 4, 10, 10, 5, 1, 3, 1, 2, 2, true, false, "ipu_small16"},   /* dilation 2 */
    {3, 4, 6, 6, 5, 1, 3, 1, 1, 1, true, false, "ipu_tiny4"},       /* a batch of 3 */
    {2, 6, 8, 8, 6, 6, 3, 2, 1, 1, true, true, "ipu_small16"},      /* f16 depthwise, batch 2 */
    {3, 4, 6, 6, 16, 1, 3, 1, 1, 1, true, false, "ipu_small16"},    /* a batch of 3 on the AMP */
    {2, 6, 5, 5, 8, 1, 1, 1, 1, 0, false, false, "ipu_tiny4"},      /* a batch of 2, 1x1, on the AMP */
    {2, 40, 6, 6, 16, 1, 3, 1, 1, 1, true, false, "ipu_small16"},   /* a batch of 2, input channels in parts */
    {4, 8, 8, 8, 16, 1, 3, 2, 1, 1, true, true, "ipu_small16"},     /* f16 batch of 4 on the AMP */
    {4, 32, 8, 8, 32, 1, 3, 1, 1, 1, true, false, "ipu_tiny4"},     /* weights too big four times over:
                                                                       the images one after another */
};

START_TEST(test_conv_workers)
{
    /* Convs with groups, dilations or a batch (on the workers, or each image on its own tiles of
     * the AMP): the output against a double reference, |got - want| <= 1e-5 x the sum of |terms|
     * (f32 sums of f32 products); in f16 the weights and inputs are rounded to f16 in the reference
     * too and the sums are f32, as in the lowering (the AMP's f16 products are exact in f32). */
    static const char *const mk2_amp[] = {"amp.macs_per_cycle_f16=64", NULL};
    /* Under a sanitizer (scripts/test.sh sets TS_SANITIZED) cases 2 (two groups), 4 (a batch of
     * 3), 6 (a batch of 3 on the AMP) and 10 (the images one after another, 25 s there) are left
     * to the normal build: groups run in case 0, batches on the workers and on the AMP in cases 5,
     * 7 and 9, and the suite's time is bounded. */
    if (getenv("TS_SANITIZED") && (_i == 2 || _i == 4 || _i == 6 || _i == 10))
        return;
    bool extra = _i >= (int)(sizeof cv_cases / sizeof cv_cases[0]); /* the f16 batch on 16 AMP units (MK2's) */
    const cv_case *c = &cv_cases[extra ? 9 : _i];
    run_sets = extra ? mk2_amp : NULL;
    ts_graph *g = ts_graph_create("dconv");
    ts_dtype dt = c->half ? TS_DT_F16 : TS_DT_F32;
    int Cg = c->C / c->G;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, dt, 4, (int64_t[]){c->N, c->C, c->H, c->Wd});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, dt, 4, (int64_t[]){c->M, Cg, c->k, c->k});
    int b = c->bias ? tensor_dt(g, "b", TS_TENSOR_WEIGHT, dt, 1, (int64_t[]){c->M}) : -1;
    int ids[3] = {x, w, b};
    ts_err e;
    ts_err_init(&e);
    for (int i = 0; i < 3 && ids[i] >= 0; i++) {
        int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, ids[i]));
        if (!c->half) {
            fill(g, ids[i]);
            continue;
        }
        uint16_t *h = ts_calloc((size_t)n, 2);
        for (int64_t k = 0; k < n; k++)
            h[k] = ts_f32_to_f16(val(ids[i], k));
        ck_assert_int_eq(ts_graph_set_data(g, ids[i], h, (size_t)n * 2, &e), TS_OK);
        ts_free(h);
    }
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.group = c->G;
    at.strides[0] = at.strides[1] = c->s;
    at.dilations[0] = at.dilations[1] = c->d;
    for (int i = 0; i < 4; i++)
        at.pads[i] = c->pad;
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, dt, -1, NULL);
    node(g, TS_OP_CONV, "conv", (int[]){x, w, b}, c->bias ? 3 : 2, y, &at);
    ts_graph_attrs r6;
    ts_graph_attrs_init(&r6);
    r6.min = 0;
    r6.max = 6;
    int z = chain(g, TS_OP_CLIP, "relu6", y, -1, &r6);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, c->config, &L);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, y);
    int Ho = (int)Y->dims[2], Wo = (int)Y->dims[3], Mg = c->M / c->G;
#define V(t, k) (c->half ? (double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))) : (double)val(t, k))
    for (int n = 0; n < c->N; n++)
        for (int m = 0; m < c->M; m++)
            for (int oy = 0; oy < Ho; oy++)
                for (int ox = 0; ox < Wo; ox++) {
                    double s = c->bias ? V(b, m) : 0, mag = fabs(s);
                    for (int ci = 0; ci < Cg; ci++)
                        for (int ky = 0; ky < c->k; ky++)
                            for (int kx = 0; kx < c->k; kx++) {
                                int iy = oy * c->s + ky * c->d - c->pad, ix = ox * c->s + kx * c->d - c->pad;
                                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->Wd)
                                    continue;
                                int cin = m / Mg * Cg + ci;
                                double t = V(x, ((n * c->C + cin) * c->H + iy) * c->Wd + ix) *
                                           V(w, ((m * Cg + ci) * c->k + ky) * c->k + kx);
                                s += t;
                                mag += fabs(t);
                            }
                    uint64_t k = (uint64_t)(((n * c->M + m) * Ho + oy) * Wo + ox);
                    float got = out_at(&L, g, y, k);
                    within(got, s, 1e-5 * mag + 1e-7, "conv", k);
                    ck_assert_float_eq(out_at(&L, g, z, k), fminf(fmaxf(got, 0), 6));
                }
#undef V
    lowered_free(&L);
    ts_graph_destroy(g);
    run_sets = NULL;
}
END_TEST

/* ---- the check that the exchange cannot hang ---- */

/* The records xr[0..n) refused by the exchange check with message msg. */
static void refused(lw *L, lw_xrec *xr, size_t n, const char *msg)
{
    L->xr = xr, L->nxr = n;
    ck_assert_int_eq(lwi_check_exchange(L), TS_EINTERNAL);
    ck_assert_str_eq(L->err->msg, msg);
}

START_TEST(test_exchange_check)
{
    /* the records of sends and receives as lwi_send and lwi_recv leave them: paired (in two sends),
     * a receive of more words than are sent, a send nobody waits for, a send to a tile without a
     * stream, a receive armed late: each is a compile error naming the superstep, the tiles and
     * the operator, instead of a program that hangs or drops words. Two tiles' supervisor code:
     * superstep s at instructions 5s..5s+4, setzi but where a case says otherwise */
    ts_graph *g = ts_graph_create("xc");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 4});
    ts_graph_mark_output(g, chain(g, TS_OP_RELU, "r", x, -1, NULL));
    finalize(g);
    ts_err e;
    ts_err_init(&e);
    lw_insn code[2][30];
    memset(code, 0, sizeof code);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 30; i++)
            code[t][i].op = LW_SETZI;
    lw_tile tiles[2] = {{.sup = {.v = code[0], .n = 30}}, {.sup = {.v = code[1], .n = 30}}};
    lw_mark marks[12];
    for (uint32_t k = 0; k < 12; k++)
        marks[k] = (lw_mark){k % 2, 5 * (k / 2), k / 2};
    lw_xrec ok[] = {{3, 1, 0, 8, 0, 17}, {3, 1, 0, -5, 0, 17}, {3, 1, 0, -3, 0, 18}, {4, 0, 1, 2, 0, 22},
                    {4, 0, 1, -2, 0, 22}};
    lw L = {.g = g, .err = &e, .T = 2, .used = 2, .tiles = tiles, .marks = marks, .nmarks = 12, .xr = ok, .nxr = 5};
    ck_assert_int_eq(lwi_check_exchange(&L), TS_OK);
    lw_xrec more[] = {{3, 1, 0, 8, 0, 17}, {3, 1, 0, -5, 0, 17}};
    refused(&L, more, 2,
            "the program would hang: in superstep 3 tile 0 waits for 3 more words from tile 1 than it "
            "sends (Relu 'r')");
    lw_xrec lone[] = {{2, 0, 1, -4, 0, 12}};
    refused(&L, lone, 1,
            "the program would hang: in superstep 2 tile 0 sends 4 words to tile 1 that it does not "
            "wait for (Relu 'r')");
    lw_xrec far[] = {{2, 0, 5, -4, 0, 12}, {2, 0, 5, 4, 0, 12}};
    refused(&L, far, 2,
            "the program would hang: in superstep 2 tile 0 sends 4 words to tile 5 that has no stream "
            "(Relu 'r')");
    /* tile 0 runs its workers before it arms its receive: tile 1's words may arrive first */
    code[0][15].op = LW_RUNALL;
    lw_xrec late[] = {{3, 1, 0, 4, 0, 17}, {3, 1, 0, -4, 0, 17}};
    refused(&L, late, 2,
            "the program would drop words: in superstep 3 tile 0 arms its receive from tile 1 after "
            "code of unknown length (Relu 'r')");
    /* a second transfer after the receiver's rxwait is not checked */
    code[0][15].op = LW_RXWAIT;
    ck_assert_int_eq(lwi_check_exchange(&L), TS_OK);
    /* the receive one setzi later than the send */
    code[0][15].op = LW_SETZI;
    lw_xrec later[] = {{3, 1, 0, 4, 0, 18}, {3, 1, 0, -4, 0, 17}};
    refused(&L, later, 2,
            "the program would drop words: in superstep 3 tile 0 arms its receive from tile 1 after "
            "more cycles than the sender issues before its send (Relu 'r')");
    /* a local copy of 4 words (a gather's: setzi of the count, rpt over a load and a store) before
     * the receive, none on the sender: 1 + 1 + 4 x 2 cycles against 2 */
    code[0][15] = (lw_insn){.op = LW_SETZI, .a = {RM(3), 4, 0}};
    code[0][16] = (lw_insn){.op = LW_RPT, .a = {RM(3), 2, 0}};
    code[0][17].op = LW_LD32STEP;
    code[0][18].op = LW_ST32STEP;
    lw_xrec copied[] = {{3, 1, 0, 4, 0, 19}, {3, 1, 0, -4, 0, 17}};
    refused(&L, copied, 2,
            "the program would drop words: in superstep 3 tile 0 arms its receive from tile 1 after "
            "more cycles than the sender issues before its send (Relu 'r')");
    /* the same copy on the sender too: in time */
    memcpy(&code[1][15], &code[0][15], 4 * sizeof code[0][0]);
    lw_xrec both[] = {{3, 1, 0, 4, 0, 19}, {3, 1, 0, -4, 0, 19}};
    L.xr = both, L.nxr = 2;
    ck_assert_int_eq(lwi_check_exchange(&L), TS_OK);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_weight_stacks)
{
    /* Each tile its own stack of weights, placed from the last operator to the first. Operators of
     * 8 tiles (T 8, top 1000): a product on all of them (100 bytes), a LayerNorm on tile 2 (40), a
     * product on tiles 0..5 (200), a LayerNorm on tile 7 (40), the last product on all (50). */
    lw_wt w[5] = {{.bytes = 100, .lo = 0, .hi = 8},
                  {.bytes = 40, .lo = 2, .hi = 3, .spread = true},
                  {.bytes = 200, .lo = 0, .hi = 6},
                  {.bytes = 40, .lo = 7, .hi = 8, .spread = true},
                  {.bytes = 50, .lo = 0, .hi = 8}};
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(lwi_place_weights(w, 5, 8, 1000, &err), TS_OK);
    ck_assert_uint_eq(w[4].addr, 950);
    ck_assert_uint_eq(w[3].addr, 910); /* tile 7 alone */
    ck_assert_uint_eq(w[2].addr, 750); /* below the last product, beside the LayerNorm of tile 7 */
    ck_assert_uint_eq(w[1].addr, 710); /* tile 2 */
    ck_assert_uint_eq(w[0].addr, 610); /* under the lowest of its tiles */
    /* while each runs, the dynamic region stays below every later operator's weights */
    ck_assert_uint_eq(w[4].lim, 950);
    ck_assert_uint_eq(w[3].lim, 910);
    ck_assert_uint_eq(w[2].lim, 750);
    ck_assert_uint_eq(w[1].lim, 710);
    ck_assert_uint_eq(w[0].lim, 610);
    /* the same operators in one stack (as one tile holding all) would take 430 bytes: 570 */
    uint64_t load[8];
    ck_assert(lwi_tile_load(w, 5, 8, load));
    ck_assert_uint_eq(load[0], 350);
    ck_assert_uint_eq(load[2], 350); /* the LayerNorm of one tile is not counted */
    ck_assert_uint_eq(load[7], 150);
    w[1].spread = w[3].spread = false;
    ck_assert(!lwi_tile_load(w, 5, 8, load));
    /* operators that all share tile 0 stack as one stack would */
    lw_wt v[3] = {{.bytes = 16, .lo = 0, .hi = 1}, {.bytes = 32, .lo = 0, .hi = 8}, {.bytes = 48, .lo = 0, .hi = 3}};
    ck_assert_int_eq(lwi_place_weights(v, 3, 8, 1000, &err), TS_OK);
    ck_assert_uint_eq(v[2].addr, 952);
    ck_assert_uint_eq(v[1].addr, 920);
    ck_assert_uint_eq(v[0].addr, 904);
    ts_err_free(&err);
}
END_TEST

int main(void)
{
    /* the reference, lockstep and 3 threads, as test_lower_ipu: every mode cost 54 s of CPU for what
     * the family tests (test_ipu_bsp, test_ipu_kernels: every mode) check already */
    arch_modes_default = ARCH_MODES_QUICK;
    arch_modes_address = ARCH_MODES_FAST; /* under ASan + UBSan: tests/arch/arch_modes.h */
    Suite *s = suite_create("lower_ipu_ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 180);
    tcase_add_loop_test(tc, test_activations, 0, 2);
    tcase_add_loop_test(tc, test_concat_slice_expand, 0, 2);
    tcase_add_loop_test(tc, test_matmul_odd_k, 0, 3);
    tcase_add_loop_test(tc, test_matmul_bias_add, 0, 2);
    tcase_add_test(tc, test_exchange_check);
    tcase_add_test(tc, test_weight_stacks);
    tcase_add_loop_test(tc, test_conv_workers, 0, (int)(sizeof cv_cases / sizeof cv_cases[0]) + 1);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
