/* tests/workloads/test_lower_tsp_ops.c — the TSP lowering's operators beyond ResNet's: Conv with a
 * batch, groups (depthwise) and dilations, pools of a batch, and the elementwise operators computed
 * in f32 on the VXM (Clip, Sigmoid, Tanh, HardSwish, Gelu, Add/Sub/Mul/Div with constants or a
 * second activation). Each graph is lowered, run on tsp_v1 with hazards fatal (fast, lockstep and
 * three threads must agree), and its int8 outputs, read back from MEM, compared with C references.
 *
 * Tolerances. Products, pools and Clip are integer work: bit-exact. The elementwise operators are
 * f32 chains on the VXM: a C reference that repeats the chain in f32 (tanhf as the simulator's
 * VXM, -ffp-contract=off) must match bit for bit; against the function in double precision, with
 * q standing for q / 16, the result must be within 0.5 of a step of q plus 0.01 (the f32 chain;
 * Gelu's tanh form differs from the erf form by at most 3e-4, 0.005 of a step), unless saturated. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/tsp/tsp.h"
#include "core/alloc.h"
#include "core/half.h"
#include "core/program.h"
#include "tests/arch/tsp/tsp_test.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/lower/fill.h"
#include "workloads/tsp/lower_tsp.h"
#include "tests/workloads/lower_tsp_harness.h"
#include "tests/workloads/tsp_ref.h"

/* ---- running (as test_lower_tsp.c) ---- */

/* Lowered on tsp_v1 with the overrides sets (NULL-terminated, or NULL: the stock chip; out->prog
 * and out->rep), not run. */
static void lower_only_on(const ts_graph *g, const char *const *sets, lowered *out)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", sets);
    ts_lower_tsp_params p;
    ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_OK);
    ts_status rc = ts_lower_tsp(g, &p, &out->prog, &out->rep, &e);
    ts_config_destroy(cfg);
    ck_assert_msg(rc == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    if (getenv("TS_LOWER_DUMP")) { /* for debugging: the schedule as assembly */
        ts_buf b = TS_BUF_INIT;
        ts_err_init(&e);
        FILE *fo = ts_disasm(out->prog, ts_tsp_family.isa, &b, &e) == TS_OK ? fopen(getenv("TS_LOWER_DUMP"), "w")
                                                                             : NULL;
        if (!fo)
            fprintf(stderr, "dump: %s\n", e.msg);
        if (fo) {
            fwrite(b.data, 1, b.len, fo);
            fclose(fo);
        }
        ts_buf_free(&b);
        ts_err_free(&e);
    }
}

/* Lowered on tsp_v1 with the overrides sets and run, with no hazard of any kind. */
static void lower_and_run_on(const ts_graph *g, const char *const *sets, lowered *out)
{
    lower_only_on(g, sets, out);
    tsp_test_run2("tsp_v1", sets, out->prog, &out->run);
    static const char *const kinds[] = {"stream_collision", "no_value", "bank_conflict", "queue_underrun", "resource"};
    for (int k = 0; k < 5; k++) {
        char name[64];
        snprintf(name, sizeof name, "hazards.%s", kinds[k]);
        ck_assert_double_eq(tsp_stat(&out->run, name), 0);
    }
}

/* Lowered on the stock tsp_v1 and run, with no hazard of any kind. */
static void lower_and_run(const ts_graph *g, lowered *out) { lower_and_run_on(g, NULL, out); }

static int8_t sat8(double r)
{
    return (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
}

static int8_t requant(int32_t acc, float scale, bool relu)
{
    int8_t v = sat8(nearbyint((double)((float)acc * scale)));
    return relu && v < 0 ? 0 : v;
}

/* ---- Conv with a batch, groups and dilations ---- */

typedef struct cgeom { int N, C, H, W, M, k, stride, pad, dil, group; } cgeom;

/* The n int8 values the lowering gives input tensor x (its fill), in a new array. */
static int8_t *input_i8(int x, int64_t n)
{
    int8_t *v = ts_calloc((size_t)n, 1);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = ts_fill_i8(x, (uint64_t)i);
    return v;
}

/* y[n][m][p] (NCHW) of a convolution with groups and dilations, int8 requantised as the lowering. */
static int8_t *ref_conv(const int8_t *x, const cgeom *c, int wid, bool relu, int *Ho, int *Wo)
{
    int ek = (c->k - 1) * c->dil + 1, Cg = c->C / c->group, Mg = c->M / c->group;
    *Ho = (c->H + 2 * c->pad - ek) / c->stride + 1;
    *Wo = (c->W + 2 * c->pad - ek) / c->stride + 1;
    int8_t *y = ts_calloc((size_t)c->N * c->M * *Ho * *Wo, 1);
    float s = ts_lower_tsp_scale((uint64_t)Cg * c->k * c->k);
    for (int n = 0; n < c->N; n++)
        for (int m = 0; m < c->M; m++)
            for (int oy = 0; oy < *Ho; oy++)
                for (int ox = 0; ox < *Wo; ox++) {
                    int32_t acc = 0;
                    for (int ci = 0; ci < Cg; ci++)
                        for (int ky = 0; ky < c->k; ky++)
                            for (int kx = 0; kx < c->k; kx++) {
                                int iy = oy * c->stride - c->pad + ky * c->dil;
                                int ix = ox * c->stride - c->pad + kx * c->dil;
                                if (iy < 0 || ix < 0 || iy >= c->H || ix >= c->W)
                                    continue;
                                int cin = m / Mg * Cg + ci;
                                acc += (int32_t)x[(((size_t)n * c->C + cin) * c->H + iy) * c->W + ix] *
                                       ts_fill_i8(wid, (((uint64_t)m * Cg + ci) * c->k + ky) * c->k + kx);
                            }
                    y[(((size_t)n * c->M + m) * *Ho + oy) * *Wo + ox] = requant(acc, s, relu);
                }
    return y;
}

/* More than a quarter of a reference output below 0: the layer's output is not Relu'd away, so a
 * sign error in a partial sum shows. */
static void assert_quarter_negative(const int8_t *y, int n)
{
    int neg = 0;
    for (int k = 0; k < n; k++)
        neg += y[k] < 0;
    ck_assert_int_gt(neg, n / 4);
}

/* Compare NCHW reference y (N images of M channels, P pixels) with tensor t; the count of mismatches. */
static int check_nchw(const lowered *l, int t, const int8_t *y, int N, int M, int P, const char *what)
{
    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int p = 0; p < P; p++) {
                int8_t want = y[((size_t)n * M + m) * P + p], have = got(l, t, (uint32_t)(n * P + p), (uint32_t)m);
                if (want != have && bad++ < 5)
                    fprintf(stderr, "%s[%d][%d][%d] = %d, want %d\n", what, n, m, p, have, want);
            }
    return bad;
}

/* Two images through: a Conv on the input (the host's im2col, both images), depthwise 3x3 (groups
 * = channels, read by address), MaxPool 2x2/2, a grouped (2) dilated (2) Conv with padding,
 * GlobalAveragePool per image, Flatten and a Gemm of two rows. Bit-exact at every stage. */
START_TEST(test_conv_batch_groups)
{
    ts_graph *g = ts_graph_create("cbg");
    const int N = 2, C = 3, H = 7, W = 6, M = 8, M2 = 6, F = 5;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){N, C, H, W});
    int w0 = tensor_dt(g, "w0", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 3, 3});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, 1, 3, 3});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M2, M / 2, 3, 3});
    int fw = tensor_dt(g, "fw", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){F, M2});
    ts_graph_attrs a0, a1, a2, mp, fl, fc;
    ts_graph_attrs_init(&a0);
    a0.pads[0] = a0.pads[1] = a0.pads[2] = a0.pads[3] = 1;
    a1 = a0;
    a1.group = M;
    ts_graph_attrs_init(&a2);
    a2.pads[0] = a2.pads[1] = a2.pads[2] = a2.pads[3] = 2;
    a2.dilations[0] = a2.dilations[1] = 2;
    a2.group = 2;
    ts_graph_attrs_init(&mp);
    mp.kernel[0] = mp.kernel[1] = 2;
    mp.strides[0] = mp.strides[1] = 2;
    ts_graph_attrs_init(&fl);
    fl.axis = 1;
    ts_graph_attrs_init(&fc);
    fc.trans_b = true;
    int h0 = chain(g, TS_OP_CONV, "c0", x, w0, &a0);
    int r0 = chain(g, TS_OP_RELU, "r0", h0, -1, NULL);
    int h1 = chain(g, TS_OP_CONV, "dw", r0, w1, &a1);
    int r1 = chain(g, TS_OP_RELU, "r1", h1, -1, NULL);
    int p1 = chain(g, TS_OP_MAXPOOL, "mp", r1, -1, &mp);
    int h2 = chain(g, TS_OP_CONV, "cg", p1, w2, &a2);
    int gp = chain(g, TS_OP_GLOBALAVGPOOL, "gap", h2, -1, NULL);
    int f = chain(g, TS_OP_FLATTEN, "fl", gp, -1, &fl);
    int y = chain(g, TS_OP_GEMM, "fc", f, fw, &fc);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, r1);
    ts_graph_mark_output(g, h2);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *xv = input_i8(x, (int64_t)N * C * H * W);
    int Ho, Wo, Ho1, Wo1, Ho2, Wo2;
    int8_t *y0 = ref_conv(xv, &(cgeom){N, C, H, W, M, 3, 1, 1, 1, 1}, w0, true, &Ho, &Wo);
    int8_t *y1 = ref_conv(y0, &(cgeom){N, M, Ho, Wo, M, 3, 1, 1, 1, M}, w1, true, &Ho1, &Wo1);
    int bad = check_nchw(&l, r1, y1, N, M, Ho1 * Wo1, "dw");
    int Hp = Ho1 / 2, Wp = Wo1 / 2;
    int8_t *pv = ts_calloc((size_t)N * M * Hp * Wp, 1);
    for (int i = 0; i < N * M; i++)
        for (int oy = 0; oy < Hp; oy++)
            for (int ox = 0; ox < Wp; ox++) {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int e = y1[((size_t)i * Ho1 + oy * 2 + k / 2) * Wo1 + ox * 2 + k % 2];
                    v = e > v ? e : v;
                }
                pv[((size_t)i * Hp + oy) * Wp + ox] = (int8_t)v;
            }
    int8_t *y2 = ref_conv(pv, &(cgeom){N, M, Hp, Wp, M2, 3, 1, 2, 2, 2}, w2, false, &Ho2, &Wo2);
    bad += check_nchw(&l, h2, y2, N, M2, Ho2 * Wo2, "cg");
    float s = ts_lower_tsp_scale(M2);
    for (int n = 0; n < N; n++) {
        int8_t gv[8];
        for (int m = 0; m < M2; m++) {
            int32_t sum = 0;
            for (int p = 0; p < Ho2 * Wo2; p++)
                sum += y2[((size_t)n * M2 + m) * Ho2 * Wo2 + p];
            gv[m] = requant(sum, 1.0f / (float)(Ho2 * Wo2), false);
        }
        for (int o = 0; o < F; o++) {
            int32_t acc = 0;
            for (int m = 0; m < M2; m++)
                acc += gv[m] * ts_fill_i8(fw, (uint64_t)o * M2 + m);
            int8_t want = requant(acc, s, false), have = got(&l, y, (uint32_t)n, (uint32_t)o);
            if (want != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", n, o, have, want);
        }
    }
    ck_assert_int_eq(bad, 0);
    ts_free(xv);
    ts_free(y0);
    ts_free(y1);
    ts_free(pv);
    ts_free(y2);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST


/* A 1x1 Conv + Relu of 128 pixels writing 64 channels in 5 slots for a packed 3x3 Conv, with the
 * east copy: its 5 slot tiles go to the four planes in turn, the fifth on two planes (the first two
 * tiles'), which take every other pass (products.c, install_block): 6 installs, one pass a pixel.
 * (c0 before it makes its input an activation.) Bit-exact. */
START_TEST(test_slot_tiles_split)
{
    ts_graph *g = ts_graph_create("slot_split");
    const int C = 16, H = 8, W = 16, M = 64;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w0 = tensor_dt(g, "w0", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){C, C, 1, 1});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 1, 1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, M, 3, 3});
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int x0 = chain(g, TS_OP_CONV, "c0", x, w0, NULL); /* c1's input an activation, not the graph's */
    int h = chain(g, TS_OP_CONV, "c1", x0, w1, NULL);
    int r = chain(g, TS_OP_RELU, "r1", h, -1, NULL);
    int y = chain(g, TS_OP_CONV, "c2", r, w2, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.layers[1].passes, (uint32_t)(H * W));
    ck_assert_uint_eq(l.rep.layers[1].blocks, 6);
    int8_t *xv = input_i8(x, (int64_t)C * H * W);
    int Ho, Wo, Ho2, Wo2;
    int8_t *y0 = ref_conv(xv, &(cgeom){1, C, H, W, C, 1, 1, 0, 1, 1}, w0, false, &Ho, &Wo);
    int8_t *y1 = ref_conv(y0, &(cgeom){1, C, H, W, M, 1, 1, 0, 1, 1}, w1, true, &Ho, &Wo);
    int8_t *y2 = ref_conv(y1, &(cgeom){1, M, Ho, Wo, M, 3, 1, 1, 1, 1}, w2, false, &Ho2, &Wo2);
    ck_assert_int_eq(check_nchw(&l, y, y2, 1, M, Ho2 * Wo2, "c2"), 0);
    int nz = 0;
    for (int k = 0; k < M * Ho2 * Wo2; k++)
        nz += y2[k] != 0;
    ck_assert_int_gt(nz, M * Ho2 * Wo2 / 2);
    ts_free(y0);
    ts_free(y1);
    ts_free(y2);
    ts_free(xv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Convs that pack their taps (docs/lowering-tsp.md, *Packed taps*): 1x1 Convs + Relu write their
 * outputs in slots for 3x3 Convs of 64 channels (5 slots, stride 1), 128 (2 slots, stride 2, one
 * base) and 96 (3 slots, dilation 2; the slots do not fall on superlanes), two images each. Bit-exact,
 * with the groups' passes (G a pixel at most) instead of one per tap. A fourth 1x1 Conv's output is
 * also a graph output: written as always (bit-exact there too), its 3x3 Conv passes every tap.
 * Under a sanitizer (TS_SANITIZED) one image: the same code, half the run (90 s there with two). */
START_TEST(test_packed_taps)
{
    ts_graph *g = ts_graph_create("pack");
    const int N = getenv("TS_SANITIZED") ? 1 : 2, C = 16, H = 12, W = 11;
    static const struct { int M, M2, stride, pad, dil, G; const char *c1, *r1, *c2; } cs[4] = {
        {64, 64, 1, 1, 1, 2, "c1_64", "r1_64", "c2_64"},
        {128, 40, 2, 1, 1, 5, "c1_128", "r1_128", "c2_128"},
        {96, 32, 1, 2, 2, 3, "c1_96", "r1_96", "c2_96"},
        {64, 24, 1, 1, 1, 9, "c1_out", "r1_out", "c2_out"}}; /* G 9: not packed */
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){N, C, H, W});
    int w1[4], w2[4], y[4], r[4];
    for (int i = 0; i < 4; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "w1_%d", i);
        w1[i] = tensor_dt(g, nm, TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){cs[i].M, C, 1, 1});
        snprintf(nm, sizeof nm, "w2_%d", i);
        w2[i] = tensor_dt(g, nm, TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){cs[i].M2, cs[i].M, 3, 3});
        ts_graph_attrs a;
        ts_graph_attrs_init(&a);
        a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = cs[i].pad;
        a.strides[0] = a.strides[1] = cs[i].stride;
        a.dilations[0] = a.dilations[1] = cs[i].dil;
        int h = chain(g, TS_OP_CONV, cs[i].c1, x, w1[i], NULL);
        r[i] = chain(g, TS_OP_RELU, cs[i].r1, h, -1, NULL);
        y[i] = chain(g, TS_OP_CONV, cs[i].c2, r[i], w2[i], &a);
        ts_graph_mark_output(g, y[i]);
    }
    ts_graph_mark_output(g, r[3]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *xv = input_i8(x, (int64_t)N * C * H * W);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        int Ho, Wo, Ho2, Wo2;
        int8_t *y1 = ref_conv(xv, &(cgeom){N, C, H, W, cs[i].M, 1, 1, 0, 1, 1}, w1[i], true, &Ho, &Wo);
        int8_t *y2 = ref_conv(y1, &(cgeom){N, cs[i].M, Ho, Wo, cs[i].M2, 3, cs[i].stride, cs[i].pad, cs[i].dil, 1},
                              w2[i], false, &Ho2, &Wo2);
        bad += check_nchw(&l, y[i], y2, N, cs[i].M2, Ho2 * Wo2, cs[i].c2);
        if (i == 3)
            bad += check_nchw(&l, r[i], y1, N, cs[i].M, Ho * Wo, cs[i].r1);
        /* node 3 i + 2 is the 3x3 Conv: G passes a pixel at most (9 unpacked, fewer at the borders) */
        ck_assert_uint_le(l.rep.layers[3 * i + 2].passes, (uint64_t)cs[i].G * N * Ho2 * Wo2);
        ck_assert_uint_gt(l.rep.layers[3 * i + 2].passes, (uint64_t)(cs[i].G - (i == 3 ? 2 : 1)) * N * Ho2 * Wo2);
        if (i == 0 && N == 2) {
            /* two groups, 264 pixels: a base's two blocks on a pair of planes, W0 and W1 or E0 and E1
             * (5 bases, 20 installs), a pixel's two products added on the VXM: 2 passes every pixel */
            ck_assert_uint_eq(l.rep.layers[2].passes, 2u * N * Ho2 * Wo2);
            ck_assert_uint_eq(l.rep.layers[2].blocks, 20);
        }
        int nz = 0;
        for (int k = 0; k < N * cs[i].M2 * Ho2 * Wo2; k++)
            nz += y2[k] != 0;
        ck_assert_int_gt(nz, N * cs[i].M2 * Ho2 * Wo2 / 2);
        ts_free(y1);
        ts_free(y2);
    }
    ck_assert_int_eq(bad, 0);
    ts_free(xv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ResNet's packed 3 x 3 convs on four planes, small, 16 x 16 pixels: a 3 x 3 conv + Relu written in
 * slots for a 3 x 3 conv without a Relu after it (its outputs negative too), of 64 channels (case
 * 0: 5 slots, 2 groups, pairs of planes, a pixel's two products added on the VXM) or of 128 (case
 * 1: 2 slots, 5 groups, group 4's pass with the partial sum, then groups 0 to 3 on the four planes
 * at once). Bit-exact; every pixel takes G passes; in pairs a pixel's packed vectors are summed just
 * before its passes. */
START_TEST(test_packed_sets)
{
    if (getenv("TS_SANITIZED") && _i == 0) /* under a sanitizer the quads (case 1) only: docs/testing.md */
        return;
    static const struct { int M, G, blocks; } cs[2] = {{64, 2, 4 * 5}, {128, 5, 8 * 2}};
    const int C = 16, H = 16, W = 16, M = cs[_i].M;
    ts_graph *g = ts_graph_create("sets");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 3, 3});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, M, 3, 3});
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int h = chain(g, TS_OP_CONV, "c1", x, w1, &a);
    int r = chain(g, TS_OP_RELU, "r1", h, -1, NULL);
    int y = chain(g, TS_OP_CONV, "c2", r, w2, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *xv = input_i8(x, (int64_t)C * H * W);
    int Ho, Wo, Ho2, Wo2;
    int8_t *y1 = ref_conv(xv, &(cgeom){1, C, H, W, M, 3, 1, 1, 1, 1}, w1, true, &Ho, &Wo);
    int8_t *y2 = ref_conv(y1, &(cgeom){1, M, Ho, Wo, M, 3, 1, 1, 1, 1}, w2, false, &Ho2, &Wo2);
    ck_assert_int_eq(check_nchw(&l, y, y2, 1, M, Ho2 * Wo2, "c2"), 0);
    ck_assert_uint_eq(l.rep.layers[2].passes, (uint64_t)cs[_i].G * Ho2 * Wo2);
    ck_assert_uint_eq(l.rep.layers[2].blocks, (uint64_t)cs[_i].blocks);
    if (_i == 0) /* in pairs each pixel is packed just before its passes: c2 ends 641 cycles after c1
                  * (673 with every pixel packed before the first pass) */
        ck_assert_uint_le(l.rep.layers[2].last, l.rep.layers[0].last + 650);
    assert_quarter_negative(y2, M * Ho2 * Wo2);
    ts_free(y1);
    ts_free(y2);
    ts_free(xv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ResNet's stage-3 and stage-4 convs, small: case 0 a 3 x 3 conv of a 40-channel input over 12 x 12
 * (144 pixels, 9 taps, one block each) to 64 channels, with the east copy: blocks 0-3 and 4-7 four
 * at once on W0, W1, E0, E1 (kquad_block), a pixel's four products added on the VXM before its
 * partial sum, the ninth block on the four planes in turn; case 1 a 1 x 1 conv of 700 channels (3
 * blocks) over 8 x 8 (64 pixels, under 128) to 64, its input a 1 x 1 conv + Relu, on the west
 * planes: blocks two by two on W0 and W1 at once, a last odd block on both planes as always. No
 * Relu after them. Bit-exact; 12 and 3 installs (18 and 6 with both west planes taking every
 * block). */
START_TEST(test_west_pairs)
{
    if (getenv("TS_SANITIZED") && _i == 1) /* under a sanitizer the 3x3 (case 0) only: docs/testing.md */
        return;
    const int H = _i ? 8 : 12, W = H, C = _i ? 16 : 40, K = _i ? 700 : 40, M = 64, k = _i ? 1 : 3;
    ts_graph *g = ts_graph_create("wpairs");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w0 = _i ? tensor_dt(g, "w0", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){K, C, 1, 1}) : -1;
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, K, k, k});
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = k / 2;
    int in = x;
    if (_i)
        in = chain(g, TS_OP_RELU, "r0", chain(g, TS_OP_CONV, "c0", x, w0, NULL), -1, NULL);
    int y = chain(g, TS_OP_CONV, "c", in, w, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *xv = input_i8(x, (int64_t)C * H * W), *x1 = NULL;
    int Ho, Wo, node = _i ? 2 : 0;
    if (_i)
        x1 = ref_conv(xv, &(cgeom){1, C, H, W, K, 1, 1, 0, 1, 1}, w0, true, &Ho, &Wo);
    int8_t *yv = ref_conv(_i ? x1 : xv, &(cgeom){1, K, H, W, M, k, 1, k / 2, 1, 1}, w, false, &Ho, &Wo);
    ck_assert_int_eq(check_nchw(&l, y, yv, 1, M, Ho * Wo, "c"), 0);
    ck_assert_uint_eq(l.rep.layers[node].blocks, _i ? 3 : 12);
    /* 3 blocks a pixel; or a quad of 4 passes for every pixel with one of taps 0-3 inside (all but
     * the corner (0, 0)), one for each with one of taps 4-7 (all), and tap 8's lone passes (y, x <= 10) */
    ck_assert_uint_eq(l.rep.layers[node].passes, _i ? 3 * 64 : 4 * 143 + 4 * 144 + 11 * 11);
    assert_quarter_negative(yv, M * Ho * Wo);
    ts_free(xv);
    ts_free(x1);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ViT's patch embedding, small: 16 x 16 patches of stride 16 over 3 x 32 x 48, 40 outputs. K =
 * 768 spans three vectors; the host lays out the im2col rows (no more vectors than the input), so
 * the weights are 3 x 3 blocks of 40 rows, not 256 taps of 3-channel blocks. Bit-exact. */
START_TEST(test_patch_conv)
{
    ts_graph *g = ts_graph_create("patch");
    const int C = 3, H = 32, W = 48, M = 40, k = 16;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, k, k});
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.strides[0] = a.strides[1] = k;
    int y = chain(g, TS_OP_CONV, "patch", x, w, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 3);
    int8_t *xv = input_i8(x, (int64_t)C * H * W);
    int Ho, Wo;
    int8_t *yv = ref_conv(xv, &(cgeom){1, C, H, W, M, k, k, 0, 1, 1}, w, false, &Ho, &Wo);
    ck_assert_int_eq(check_nchw(&l, y, yv, 1, M, Ho * Wo, "patch"), 0);
    ts_free(xv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ---- elementwise operators ---- */

enum { F_CLIP6, F_CLIP, F_SIGMOID, F_TANH, F_GELU, F_HSWISH, F_DIV8, F_MULC, F_ADDS, F_RSUB, F_SUB, F_MUL, F_N };

/* The chip's f32 chain for function f of q (and r, the second activation) with per-channel
 * constant wc; *exact gets the function in double precision in units of q. */
static int8_t ref_ew(int f, int q, int r, float wc, double *exact)
{
    float u = (float)q, v = (float)r, o = 0;
    double x = q / 16.0, xr = r / 16.0;
    switch (f) {
    case F_CLIP6: o = 96.0f - fmaxf(96.0f - fmaxf(u, 0.0f), 0.0f); *exact = 16 * fmin(fmax(x, 0), 6); break;
    case F_CLIP: {
        float a = fmaxf(u - -16.0f, 0.0f) + -16.0f;
        o = 40.0f - fmaxf(40.0f - a, 0.0f);
        *exact = 16 * fmin(fmax(x, -1), 2.5);
        break;
    }
    case F_SIGMOID: o = tanhf(u * (1.0f / 32.0f)) * 8.0f + 8.0f; *exact = 16 / (1 + exp(-x)); break;
    case F_TANH: o = tanhf(u * (1.0f / 16.0f)) * 16.0f; *exact = 16 * tanh(x); break;
    case F_GELU: {
        double c0 = sqrt(2.0 / 3.14159265358979323846);
        float xx = u * (1.0f / 16.0f), x2 = xx * xx;
        float in = x2 * (float)(0.044715 * c0) + (float)c0;
        float t = tanhf(in * xx);
        o = (t * 0.5f + 0.5f) * u;
        *exact = 16 * 0.5 * x * (1 + erf(x / sqrt(2.0)));
        break;
    }
    case F_HSWISH: {
        float a = fmaxf(u + 48.0f, 0.0f), b = fmaxf(u - 48.0f, 0.0f);
        o = (a - b) * u * (float)(1.0 / 96.0);
        *exact = 16 * x * fmin(fmax(x + 3, 0), 6) / 6;
        break;
    }
    case F_DIV8: o = u * (float)(1.0 / 8.0); *exact = q / 8.0; break;
    case F_MULC: o = u * wc; *exact = q * (double)wc; break;
    case F_ADDS: o = u + (float)(0.75 * 16); *exact = q + 12.0; break;
    case F_RSUB: o = (float)(2.0 * 16) - u; *exact = 32.0 - q; break;
    case F_SUB: o = u - v; *exact = q - r; break;
    case F_MUL: o = u * v * (1.0f / 16.0f); *exact = 16 * x * xr; break;
    default: break;
    }
    return sat8(nearbyint((double)o));
}

/* A scalar f32 constant. */
static int scalar(ts_graph *g, const char *name, float v)
{
    int id = tensor_dt(g, name, TS_TENSOR_CONST, TS_DT_F32, 0, NULL);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, id, &v, 4, &e), TS_OK);
    return id;
}

/* Every elementwise operator on a [5, 700] int8 input (three channel tiles, the last one short):
 * bit-exact to the f32 chain, within the stated tolerance of double. */
START_TEST(test_elementwise)
{
    ts_graph *g = ts_graph_create("ew");
    const int M = 5, K = 700;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int b = tensor_dt(g, "b", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int wc = tensor_dt(g, "wc", TS_TENSOR_WEIGHT, TS_DT_F32, 1, (int64_t[]){K});
    fill(g, wc);
    int c8 = scalar(g, "c8", 8.0f), c34 = scalar(g, "c34", 0.75f), c2 = scalar(g, "c2", 2.0f);
    ts_graph_attrs r6, cl;
    ts_graph_attrs_init(&r6);
    r6.min = 0;
    r6.max = 6;
    ts_graph_attrs_init(&cl);
    cl.min = -1;
    cl.max = 2.5;
    int y[F_N];
    for (int f = 0; f < F_N; f++)
        y[f] = -1;
    y[F_CLIP6] = chain(g, TS_OP_CLIP, "relu6", a, -1, &r6);
    y[F_CLIP] = chain(g, TS_OP_CLIP, "clip", a, -1, &cl);
    y[F_SIGMOID] = chain(g, TS_OP_SIGMOID, "sigmoid", a, -1, NULL);
    y[F_TANH] = chain(g, TS_OP_TANH, "tanh", a, -1, NULL);
    y[F_GELU] = chain(g, TS_OP_GELU, "gelu", a, -1, NULL);
    ts_graph_op hs;
    if (ts_graph_op_parse("HardSwish", &hs) == 0) /* where the IR has it */
        y[F_HSWISH] = chain(g, hs, "hswish", a, -1, NULL);
    y[F_DIV8] = chain(g, TS_OP_DIV, "div8", a, c8, NULL);
    y[F_MULC] = chain(g, TS_OP_MUL, "mulc", a, wc, NULL);
    y[F_ADDS] = chain(g, TS_OP_ADD, "adds", a, c34, NULL);
    int rs = tensor_dt(g, "rsub.y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_SUB, "rsub", (int[]){c2, a}, 2, rs, NULL);
    y[F_RSUB] = rs;
    y[F_SUB] = chain(g, TS_OP_SUB, "sub", a, b, NULL);
    y[F_MUL] = chain(g, TS_OP_MUL, "mul", a, b, NULL);
    for (int f = 0; f < F_N; f++)
        if (y[f] >= 0)
            ts_graph_mark_output(g, y[f]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    const float *wv = ts_graph_get_tensor(g, wc)->data;
    int bad = 0;
    double worst[F_N] = {0};
    for (int f = 0; f < F_N; f++)
        for (int m = 0; y[f] >= 0 && m < M; m++)
            for (int k = 0; k < K; k++) {
                int q = ts_fill_i8(a, (uint64_t)m * K + k), r = ts_fill_i8(b, (uint64_t)m * K + k);
                double ex;
                int8_t want = ref_ew(f, q, r, wv[k], &ex), have = got(&l, y[f], (uint32_t)m, (uint32_t)k);
                if (want != have && bad++ < 8)
                    fprintf(stderr, "op %d: y[%d][%d] = %d, want %d (q %d)\n", f, m, k, have, want, q);
                if (ex > -128 && ex < 127 && fabs(have - ex) > worst[f])
                    worst[f] = fabs(have - ex);
            }
    ck_assert_int_eq(bad, 0);
    for (int f = 0; f < F_N; f++)
        ck_assert_msg(worst[f] <= 0.51, "op %d: %g of a step from double", f, worst[f]);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* NeRF's skip join, small: Concat of [R, 256] (a MatMul's output, fused Relu) and the [R, 63]
 * input along the channels (the 63 go to lanes 256..318 through 0/1 blocks on the planes), then a
 * MatMul with K = 319; and a Concat along the rows of a [1, 2, 40] weight and a [1, 5, 40]
 * activation (ViT's class token). Bit-exact: the blocks move int8 values unchanged. */
START_TEST(test_concat)
{
    ts_graph *g = ts_graph_create("cat");
    const int R = 9, D = 256, E = 63, O = 70;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){R, E});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){E, D});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){D + E, O});
    int h = chain(g, TS_OP_MATMUL, "fc1", x, w1, NULL);
    int r = chain(g, TS_OP_RELU, "relu", h, -1, NULL);
    ts_graph_attrs ax;
    ts_graph_attrs_init(&ax);
    ax.axis = -1;
    int c = tensor_dt(g, "c", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_CONCAT, "cat", (int[]){r, x}, 2, c, &ax);
    int y = chain(g, TS_OP_MATMUL, "fc2", c, w2, NULL);
    int t = tensor_dt(g, "tok", TS_TENSOR_WEIGHT, TS_DT_I8, 3, (int64_t[]){1, 2, 40});
    int p = tensor_dt(g, "p", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){1, 5, 40});
    ts_graph_attrs a1;
    ts_graph_attrs_init(&a1);
    a1.axis = 1;
    int z = tensor_dt(g, "z", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_CONCAT, "cat2", (int[]){t, p}, 2, z, &a1);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, c);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int bad = 0;
    int8_t cv[9][319];
    float s1 = ts_lower_tsp_scale(E), s2 = ts_lower_tsp_scale(D + E);
    for (int m = 0; m < R; m++) {
        for (int n = 0; n < D; n++) {
            int32_t acc = 0;
            for (int k = 0; k < E; k++)
                acc += ts_fill_i8(x, (uint64_t)m * E + k) * ts_fill_i8(w1, (uint64_t)k * D + n);
            cv[m][n] = requant(acc, s1, true);
        }
        for (int k = 0; k < E; k++)
            cv[m][D + k] = ts_fill_i8(x, (uint64_t)m * E + k);
        for (int n = 0; n < D + E; n++) {
            int8_t have = got(&l, c, (uint32_t)m, (uint32_t)n);
            if (have != cv[m][n] && bad++ < 5)
                fprintf(stderr, "c[%d][%d] = %d, want %d\n", m, n, have, cv[m][n]);
        }
        for (int n = 0; n < O; n++) {
            int32_t acc = 0;
            for (int k = 0; k < D + E; k++)
                acc += cv[m][k] * ts_fill_i8(w2, (uint64_t)k * O + n);
            int8_t want = requant(acc, s2, false), have = got(&l, y, (uint32_t)m, (uint32_t)n);
            if (want != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, n, have, want);
        }
    }
    for (int m = 0; m < 7; m++)
        for (int n = 0; n < 40; n++) {
            int8_t want = m < 2 ? ts_fill_i8(t, (uint64_t)m * 40 + n) : ts_fill_i8(p, (uint64_t)(m - 2) * 40 + n);
            int8_t have = got(&l, z, (uint32_t)m, (uint32_t)n);
            if (want != have && bad++ < 5)
                fprintf(stderr, "z[%d][%d] = %d, want %d\n", m, n, have, want);
        }
    ck_assert_int_eq(bad, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Values moved through 0/1 blocks, bit-exact, on a [2, 3, 700] input (three channel tiles): a
 * Slice of the last axis across a tile boundary (channels 301, 303, ..., 699), a Slice of axis 1,
 * attention's Transpose [1, 0, 2], and an Expand of a [1, 3, 1] weight to [2, 3, 700]. */
START_TEST(test_move)
{
    ts_graph *g = ts_graph_create("move");
    const int A = 2, B = 3, D = 700;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){A, B, D});
    int e = tensor_dt(g, "e", TS_TENSOR_WEIGHT, TS_DT_I8, 3, (int64_t[]){1, B, 1});
    ts_graph_attrs s1, s2, tp, ex;
    ts_graph_attrs_init(&s1);
    s1.nslice = 3;
    s1.starts[0] = s1.starts[1] = 0;
    s1.ends[0] = A;
    s1.ends[1] = B;
    s1.steps[0] = s1.steps[1] = 1;
    s1.starts[2] = 301;
    s1.ends[2] = D;
    s1.steps[2] = 2;
    s2 = s1;
    s2.starts[1] = 1;
    s2.starts[2] = 0;
    s2.steps[2] = 1;
    ts_graph_attrs_init(&tp);
    tp.nperm = 3;
    tp.perm[0] = 1;
    tp.perm[1] = 0;
    tp.perm[2] = 2;
    ts_graph_attrs_init(&ex);
    ex.nshape = 3;
    ex.shape[0] = A;
    ex.shape[1] = B;
    ex.shape[2] = D;
    int y1 = chain(g, TS_OP_SLICE, "slc", x, -1, &s1);
    int y2 = chain(g, TS_OP_SLICE, "slr", x, -1, &s2);
    int y3 = chain(g, TS_OP_TRANSPOSE, "tp", x, -1, &tp);
    int y4 = chain(g, TS_OP_EXPAND, "ex", e, -1, &ex);
    int ys[4] = {y1, y2, y3, y4};
    for (int i = 0; i < 4; i++)
        ts_graph_mark_output(g, ys[i]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int bad = 0;
#define XV(a, b, d) ts_fill_i8(x, ((uint64_t)(a) * B + (b)) * D + (d))
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++)
            for (int d = 0; d < D; d++) {
                int8_t want[4] = {d < 200 ? XV(a, b, 301 + 2 * d) : 0, b < 2 ? XV(a, b + 1, d) : 0, XV(a, b, d),
                                  ts_fill_i8(e, (uint64_t)b)};
                bool have_it[4] = {d < 200, b < 2, true, true};
                uint32_t pix[4] = {(uint32_t)(a * B + b), (uint32_t)(a * 2 + b), (uint32_t)(b * A + a),
                                   (uint32_t)(a * B + b)};
                for (int i = 0; i < 4; i++) {
                    if (!have_it[i])
                        continue;
                    int8_t have = got(&l, ys[i], pix[i], (uint32_t)d);
                    if (have != want[i] && bad++ < 8)
                        fprintf(stderr, "move %d: [%d][%d][%d] = %d, want %d\n", i, a, b, d, have, want[i]);
                }
            }
#undef XV
    ck_assert_int_eq(bad, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Partial sums of more rows than 3/4 of a bank half of the east slices hold: the rows go in two
 * chunks, each streaming both reduction blocks. Bit-exact. On the stock tsp_v1 (8,192 words a
 * slice) that takes 17,000 rows of two blocks (3,091 words a buffer over the 3,072 of 3/4 of a
 * bank half, a chunk of 16,896 rows and one of 104); here tsp_v1 with 640 words a slice
 * (mem.slice_bytes=204800) takes 1,400 rows (255 words a buffer over 240: a chunk of 1,320 rows
 * and one of 80), the same two chunks through the same code for a twelfth of the run (the
 * 17,000 rows took 23 s of CPU in the normal build). Under a sanitizer (scripts/test.sh sets
 * TS_SANITIZED) it is lowered and not run; the normal build runs it. */
START_TEST(test_psum_chunks)
{
    static const char *const small[] = {"mem.slice_bytes=204800", NULL};
    ts_graph *g = ts_graph_create("chunks");
    const int M = 1400, K = 400, N = 8;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, N});
    int y = chain(g, TS_OP_MATMUL, "mm", a, b, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l = {0};
    if (getenv("TS_SANITIZED")) {
        lower_only_on(g, small, &l);
        ck_assert_uint_eq(l.rep.layers[0].blocks, 8);
        lowered_free(&l);
        ts_graph_destroy(g);
        return;
    }
    lower_and_run_on(g, small, &l);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 8); /* two blocks per chunk, each on both planes */
    float s = ts_lower_tsp_scale(K);
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += ts_fill_i8(a, (uint64_t)m * K + k) * ts_fill_i8(b, (uint64_t)k * N + n);
            int8_t want = requant(acc, s, false), have = got(&l, y, (uint32_t)m, (uint32_t)n);
            if (want != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, n, have, want);
        }
    ck_assert_int_eq(bad, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* NeRF's first five layers at 4096 rays (Gemm + bias + Relu, 63 -> 256 -> ... -> 256): the first
 * schedule's fetches cannot be placed (MEM W0 runs dry a few cycles before its last fetch lands),
 * and a later try, with queues asking for text earlier, compiles. Compiled only (no run: the
 * tests above run schedules from fetched text). */
START_TEST(test_fetch_retry)
{
    ts_graph *g = ts_graph_create("nerf5");
    int h = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_F32, 2, (int64_t[]){4096, 63});
    ts_graph_attrs fc;
    ts_graph_attrs_init(&fc);
    fc.trans_b = true;
    for (int i = 0; i < 5; i++) {
        char wn[16], bn[16], nm[16], rn[16];
        snprintf(wn, sizeof wn, "w%d", i);
        snprintf(bn, sizeof bn, "b%d", i);
        snprintf(nm, sizeof nm, "fc%d", i);
        snprintf(rn, sizeof rn, "r%d", i);
        int w = tensor_dt(g, wn, TS_TENSOR_WEIGHT, TS_DT_F32, 2, (int64_t[]){256, i ? 256 : 63});
        int b = tensor_dt(g, bn, TS_TENSOR_WEIGHT, TS_DT_F32, 1, (int64_t[]){256});
        int y = tensor_dt(g, nm, TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL);
        node(g, TS_OP_GEMM, nm, (int[]){h, w, b}, 3, y, &fc);
        h = chain(g, TS_OP_RELU, rn, y, -1, NULL);
    }
    ts_graph_mark_output(g, h);
    finalize(g);
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p = v1_params();
    ts_program *prog = NULL;
    ck_assert_msg(ts_lower_tsp(g, &p, &prog, NULL, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    ts_program_destroy(prog);
    ts_graph_destroy(g);
}
END_TEST

/* ---- LayerNormalization ---- */

/* Row x (D int8 values, q / 16) normalised as the chip does it (workloads/tsp/layernorm.c): the
 * plane sums f16 inputs exactly and rounds once to f32 per abc, accumulating the tiles in f32;
 * every VXM step is one f32 operation. g16, b16: 16 gamma, 16 beta. *exact gets the same in
 * double precision, in units of q. */
static void ref_ln(const int8_t *x, int D, const float *g16, const float *b16, float eps_q, int8_t *y, double *exact)
{
    double md = 0, vd = 0;
    tsp_ref_layernorm(x, D, g16, b16, eps_q, y);
    for (int c = 0; c < D; c++)
        md += x[c];
    md /= D;
    for (int c = 0; c < D; c++)
        vd += (x[c] - md) * (x[c] - md);
    vd /= D;
    for (int c = 0; c < D; c++)
        exact[c] = (x[c] - md) / sqrt(vd + (double)eps_q) * g16[c] + b16[c];
}

/* LayerNorm over 700 channels (three tiles, the last 60 lanes of 320: masked) and over 640 (two
 * full tiles, no gamma or beta), inputs from a MatMul (the int8 domain's largest values) and from
 * the graph. Bit-exact to the C steps above; against double within 0.5 of a step of q for the
 * rounding plus 0.05: the f16 rounding of each square (2^-11 relative) moves the variance by at
 * most 2^-11 and r by half that, 2.5e-4 of an output below 128 steps, 0.03; the f32 steps add
 * about 1e-5. */
START_TEST(test_layernorm)
{
    ts_graph *g = ts_graph_create("ln");
    const int M = 5, K = 96, D = 700, M2 = 3, D2 = 640;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, D});
    int gm = tensor_dt(g, "gamma", TS_TENSOR_WEIGHT, TS_DT_F32, 1, (int64_t[]){D});
    int bt = tensor_dt(g, "beta", TS_TENSOR_WEIGHT, TS_DT_F32, 1, (int64_t[]){D});
    int b = tensor_dt(g, "b", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M2, D2});
    fill(g, gm);
    fill(g, bt);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    int h = chain(g, TS_OP_MATMUL, "mm", a, w, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y2 = tensor_dt(g, "y2", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_LAYERNORM, "ln", (int[]){h, gm, bt}, 3, y, &at);
    node(g, TS_OP_LAYERNORM, "ln2", (int[]){b}, 1, y2, &at);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, y2);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    const ts_graph_node *nd = ts_graph_get_node(g, 1);
    float eps_q = (float)(nd->attrs.epsilon * 256.0);
    const float *gv = ts_graph_get_tensor(g, gm)->data, *bv = ts_graph_get_tensor(g, bt)->data;
    float g16[700], b16[700], ones[640], zeros[640];
    for (int c = 0; c < D; c++) {
        g16[c] = (float)(16.0 * gv[c]);
        b16[c] = (float)(16.0 * bv[c]);
    }
    for (int c = 0; c < D2; c++) {
        ones[c] = 16.0f;
        zeros[c] = 0.0f;
    }
    int bad = 0;
    double worst = 0;
    int8_t x[700], want[700];
    double ex[700];
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < (pass ? M2 : M); m++) {
            int Dm = pass ? D2 : D;
            for (int c = 0; c < Dm; c++) {
                if (pass) {
                    x[c] = (int8_t)ts_fill_i8(b, (uint64_t)m * D2 + c);
                    continue;
                }
                int32_t acc = 0;
                for (int k = 0; k < K; k++)
                    acc += ts_fill_i8(a, (uint64_t)m * K + k) * ts_fill_i8(w, (uint64_t)k * D + c);
                x[c] = requant(acc, ts_lower_tsp_scale(K), false);
            }
            ref_ln(x, Dm, pass ? ones : g16, pass ? zeros : b16, eps_q, want, ex);
            for (int c = 0; c < Dm; c++) {
                int8_t have = got(&l, pass ? y2 : y, (uint32_t)m, (uint32_t)c);
                if (have != want[c] && bad++ < 8)
                    fprintf(stderr, "ln%d: y[%d][%d] = %d, want %d\n", pass + 1, m, c, have, want[c]);
                if (ex[c] > -128 && ex[c] < 127 && fabs(have - ex[c]) > worst)
                    worst = fabs(have - ex[c]);
            }
        }
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(worst <= 0.55, "%g of a step from double", worst);
    fprintf(stderr, "layernorm: largest distance from double %.4f of a step\n", worst);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ---- MatMul of two activations ---- */

/* Attention's Q Kᵀ, batched over 3 heads: A [3, 5, 100] times the Transpose (1, 2, 0) of
 * K [7, 3, 100] (a MatMul's output, the heads' keys interleaved as BERT's [S, h, d]); and
 * unbatched, A [6, 330] times the Transpose of a graph input [9, 330] (two reduction tiles).
 * The Transposes are never computed: K's vectors are the blocks' rows. Bit-exact: int8 products,
 * int32 sums, the requantisation of every product. */
START_TEST(test_matmul_act)
{
    ts_graph *g = ts_graph_create("qk");
    const int H = 3, M = 50, K = 100, N = 7, J = 40, M2 = 6, K2 = 330, N2 = 9, M3 = 5, K3 = 16, N3 = 70;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){H, M, K});
    int x0 = tensor_dt(g, "x0", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){N, H, J});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){J, K});
    int a2 = tensor_dt(g, "a2", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M2, K2});
    int k2 = tensor_dt(g, "k2", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){N2, K2});
    int kx = chain(g, TS_OP_MATMUL, "kproj", x0, w, NULL);
    ts_graph_attrs p3, p2;
    ts_graph_attrs_init(&p3);
    p3.nperm = 3;
    p3.perm[0] = 1;
    p3.perm[1] = 2;
    p3.perm[2] = 0;
    ts_graph_attrs_init(&p2);
    p2.nperm = 2;
    p2.perm[0] = 1;
    p2.perm[1] = 0;
    int kt = chain(g, TS_OP_TRANSPOSE, "kt", kx, -1, &p3), kt2 = chain(g, TS_OP_TRANSPOSE, "kt2", k2, -1, &p2);
    int y = chain(g, TS_OP_MATMUL, "qk", a, kt, NULL), y2 = chain(g, TS_OP_MATMUL, "qk2", a2, kt2, NULL);
    int a3 = tensor_dt(g, "a3", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){2, M3, K3});
    int v3 = tensor_dt(g, "v3", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){2, K3, N3});
    int vp = chain(g, TS_OP_MATMUL, "vproj", v3, tensor_dt(g, "wv", TS_TENSOR_WEIGHT, TS_DT_I8, 2,
                                                               (int64_t[]){N3, N3}), NULL);
    int y3 = chain(g, TS_OP_MATMUL, "av", a3, vp, NULL); /* A V: V's transpose computed on the planes */
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, y2);
    ts_graph_mark_output(g, y3);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t kv[7][3][100];
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int c = 0; c < K; c++) {
                int32_t acc = 0;
                for (int j = 0; j < J; j++)
                    acc += ts_fill_i8(x0, (uint64_t)(n * H + h) * J + j) * ts_fill_i8(w, (uint64_t)j * K + c);
                kv[n][h][c] = requant(acc, ts_lower_tsp_scale(J), false);
            }
    int bad = 0;
    uint64_t nonzero = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < M; i++)
            for (int n = 0; n < N; n++) {
                int32_t acc = 0;
                for (int c = 0; c < K; c++)
                    acc += ts_fill_i8(a, (uint64_t)(h * M + i) * K + c) * kv[n][h][c];
                int8_t want = requant(acc, ts_lower_tsp_scale(K), false), have = got(&l, y, (uint32_t)(h * M + i),
                                                                                   (uint32_t)n);
                nonzero += want != 0;
                if (want != have && bad++ < 8)
                    fprintf(stderr, "qk: y[%d][%d][%d] = %d, want %d\n", h, i, n, have, want);
            }
    for (int i = 0; i < M2; i++)
        for (int n = 0; n < N2; n++) {
            int32_t acc = 0;
            for (int c = 0; c < K2; c++)
                acc += ts_fill_i8(a2, (uint64_t)i * K2 + c) * ts_fill_i8(k2, (uint64_t)n * K2 + c);
            int8_t want = requant(acc, ts_lower_tsp_scale(K2), false), have = got(&l, y2, (uint32_t)i, (uint32_t)n);
            nonzero += want != 0;
            if (want != have && bad++ < 8)
                fprintf(stderr, "qk2: y[%d][%d] = %d, want %d\n", i, n, have, want);
        }
    int wv = ts_graph_find(g, "wv");
    static int8_t vv[2][16][70];
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < K3; k++)
            for (int n = 0; n < N3; n++) {
                int32_t acc = 0;
                for (int j = 0; j < N3; j++)
                    acc += ts_fill_i8(v3, (uint64_t)(h * K3 + k) * N3 + j) * ts_fill_i8(wv, (uint64_t)j * N3 + n);
                vv[h][k][n] = requant(acc, ts_lower_tsp_scale(N3), false);
            }
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < M3; i++)
            for (int n = 0; n < N3; n++) {
                int32_t acc = 0;
                for (int k = 0; k < K3; k++)
                    acc += ts_fill_i8(a3, (uint64_t)(h * M3 + i) * K3 + k) * vv[h][k][n];
                int8_t want = requant(acc, ts_lower_tsp_scale(K3), false), have = got(&l, y3, (uint32_t)(h * M3 + i),
                                                                                    (uint32_t)n);
                nonzero += want != 0;
                if (want != have && bad++ < 8)
                    fprintf(stderr, "av: y[%d][%d][%d] = %d, want %d\n", h, i, n, have, want);
            }
    ck_assert_int_eq(bad, 0);
    ck_assert_uint_gt(nonzero * 2, (uint64_t)(H * M * N + M2 * N2 + 2 * M3 * N3)); /* zeros would prove little */
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Attention's head split and join: [4, 768] reshaped to [4, 12, 64] (each pixel's channels
 * into 12 pixels of 64: blocks per tile and lane offset), the heads brought first (Transpose
 * keeping the channels), back, and joined to [4, 768]. The split and the round trip are exact. */
START_TEST(test_heads)
{
    ts_graph *g = ts_graph_create("heads");
    const int S = 4, H = 12, Dh = 64;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){S, H * Dh});
    ts_graph_attrs r3, r2, pt;
    ts_graph_attrs_init(&r3);
    r3.nshape = 3;
    r3.shape[0] = S;
    r3.shape[1] = H;
    r3.shape[2] = Dh;
    ts_graph_attrs_init(&r2);
    r2.nshape = 2;
    r2.shape[0] = S;
    r2.shape[1] = H * Dh;
    ts_graph_attrs_init(&pt);
    pt.nperm = 3;
    pt.perm[0] = 1;
    pt.perm[1] = 0;
    pt.perm[2] = 2;
    int sp = chain(g, TS_OP_RESHAPE, "split", x, -1, &r3);
    int hf = chain(g, TS_OP_TRANSPOSE, "hfirst", sp, -1, &pt);
    int sf = chain(g, TS_OP_TRANSPOSE, "sfirst", hf, -1, &pt);
    int y = chain(g, TS_OP_RESHAPE, "join", sf, -1, &r2);
    ts_graph_mark_output(g, hf);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int bad = 0;
    for (int s = 0; s < S; s++)
        for (int c = 0; c < H * Dh; c++) {
            int8_t want = (int8_t)ts_fill_i8(x, (uint64_t)s * H * Dh + c);
            int8_t h1 = got(&l, hf, (uint32_t)((c / Dh) * S + s), (uint32_t)(c % Dh)), h2 = got(&l, y, (uint32_t)s,
                                                                                            (uint32_t)c);
            if ((h1 != want || h2 != want) && bad++ < 8)
                fprintf(stderr, "x[%d][%d] = %d: heads %d, joined %d\n", s, c, want, h1, h2);
        }
    ck_assert_int_eq(bad, 0);
    /* hfirst is a graph output, so the split computes its own output and hfirst moves it; sfirst is
     * read by the join alone, which reads hfirst's pixels through it (lt_join_fold): no pass */
    ck_assert_uint_eq(l.rep.nlayers, 4);
    ck_assert_uint_eq(l.rep.layers[1].passes, (uint64_t)S * H);
    ck_assert_uint_eq(l.rep.layers[2].passes, 0);
    ck_assert_uint_eq(l.rep.layers[2].instructions, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Attention's heads read where they lie (docs/lowering-tsp.md, *Attention*): Q, K and V [S, 640] split into
 * 10 heads of 64 (five in a tile), Q Kᵀ, A V, the context joined. Q's and V's splits and the three
 * Transposes compute nothing (lt_q_split, lt_v_split, lt_split_fold, lt_join_fold), nor does the join,
 * whose output A V writes (lt_av_join); K's split writes each head in its own lanes (lt_k_inplace).
 * Then (_i 1) Q, K and V cut by Slices from one packed
 * input (V from channel 1344, lane 64 of a tile) and Q / 8 before Q Kᵀ: K's split and the three
 * Slices compute nothing too (lt_k_view, the Div masking a head of Q a vector; slice_viewed). Then
 * (_i 2) 12 heads, Q, K and V of 768 from an in-projection (a MatMul by a weight [64, 2304] and a
 * bias Add) as BERT's and ViT's: K from channel 768, lane 128 of a tile, laid out from a tile's lane 0
 * in a copy (lt_qkv_pack), so its Slice computes nothing as well. Bit-exact to the int8 reference. */
START_TEST(test_head_views)
{
    ts_graph *g = ts_graph_create("views");
    enum { S = 6, D = 64, HM = 12, CI = 64 };
    const bool packed = _i >= 1, proj = _i == 2;
    const int H = proj ? 12 : 10;
    const int64_t cs[3] = {0, proj ? 768 : 640, proj ? 1536 : 1344}, PW = cs[2] + H * D; /* each part's first channel */
    int x[3], xv[3];
    const char *nm[3] = {"q", "k", "v"};
    ts_graph_attrs r3, r2;
    ts_graph_attrs_init(&r3);
    r3.nshape = 3;
    memcpy(r3.shape, (int64_t[]){S, H, D}, 3 * sizeof(int64_t));
    ts_graph_attrs_init(&r2);
    r2.nshape = 2;
    memcpy(r2.shape, (int64_t[]){S, H * D}, 2 * sizeof(int64_t));
    int sp[3], qkv = packed && !proj ? tensor_dt(g, "qkv", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){S, PW}) : -1;
    int xin = -1, w = -1;
    static float bias[3 * HM * D];
    if (proj) { /* the in-projection: int8 weights of the fill, a bias of whole steps (16 b an integer) */
        xin = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){S, CI});
        w = tensor_dt(g, "w_in", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){CI, PW});
        int b = tensor_dt(g, "b_in", TS_TENSOR_WEIGHT, TS_DT_F32, 1, (int64_t[]){PW});
        for (int n = 0; n < PW; n++)
            bias[n] = (float)(n % 7 - 3) * 0.5f;
        ts_err e;
        ts_err_init(&e);
        ck_assert_int_eq(ts_graph_set_data(g, b, bias, (size_t)PW * 4, &e), TS_OK);
        qkv = chain(g, TS_OP_ADD, "in_bias", chain(g, TS_OP_MATMUL, "in_proj", xin, w, NULL), b, NULL);
    }
    for (int i = 0; i < 3; i++) {
        char n[16];
        if (packed) {
            ts_graph_attrs sl;
            ts_graph_attrs_init(&sl);
            sl.nslice = 2;
            sl.ends[0] = S;
            sl.starts[1] = cs[i];
            sl.ends[1] = cs[i] + H * D;
            sl.steps[0] = sl.steps[1] = 1;
            snprintf(n, sizeof n, "%s_cut", nm[i]);
            x[i] = chain(g, TS_OP_SLICE, n, qkv, -1, &sl);
        } else {
            x[i] = tensor_dt(g, nm[i], TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){S, H * D});
        }
        xv[i] = packed ? qkv : x[i];
        snprintf(n, sizeof n, "%s_split", nm[i]);
        sp[i] = chain(g, TS_OP_RESHAPE, n, x[i], -1, &r3);
    }
    int q4 = transpose3(g, "q_heads", sp[0], 1, 0, 2), kt = transpose3(g, "k_heads", sp[1], 1, 2, 0);
    if (packed)
        q4 = chain(g, TS_OP_DIV, "q_scale", q4, scalar(g, "c8", 8.0f), NULL);
    int vv = transpose3(g, "v_heads", sp[2], 1, 0, 2);
    int sc = chain(g, TS_OP_MATMUL, "scores", q4, kt, NULL), c0 = chain(g, TS_OP_MATMUL, "context", sc, vv, NULL);
    int c1 = transpose3(g, "c_merge", c0, 1, 0, 2), y = chain(g, TS_OP_RESHAPE, "c_flat", c1, -1, &r2);
    ts_graph_mark_output(g, sc);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    /* the values Q, K and V are cut from: the packed input's, or the in-projection's */
    static int8_t in[S][3 * HM * D];
    for (int i = 0; i < S; i++)
        for (int n = 0; n < PW; n++) {
            int32_t acc = 0;
            for (int c = 0; proj && c < CI; c++)
                acc += ts_fill_i8(xin, (uint64_t)(i * CI + c)) * ts_fill_i8(w, (uint64_t)(c * PW + n));
            float u = (float)requant(acc, ts_lower_tsp_scale(CI), false); /* the bias Add: u + 16 b */
            in[i][n] = proj     ? sat8(nearbyint((double)(u + 16.0f * bias[n])))
                       : packed ? (int8_t)ts_fill_i8(qkv, (uint64_t)(i * PW + n))
                                : 0;
        }
#define HV(k, row, ch) (packed ? in[row][cs[k] + (ch)] : (int)ts_fill_i8(xv[k], (uint64_t)((row) * H * D + (ch))))
    static int8_t want_s[HM][S][S];
    int bad = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++)
            for (int n = 0; n < S; n++) {
                int32_t acc = 0;
                for (int c = 0; c < D; c++) {
                    int q = HV(0, i, h * D + c);
                    double ex;
                    acc += (packed ? ref_ew(F_DIV8, q, 0, 0, &ex) : q) * HV(1, n, h * D + c);
                }
                want_s[h][i][n] = requant(acc, ts_lower_tsp_scale(D), false);
                int8_t have = got(&l, sc, (uint32_t)(h * S + i), (uint32_t)n);
                if (have != want_s[h][i][n] && bad++ < 8)
                    fprintf(stderr, "scores[%d][%d][%d] = %d, want %d\n", h, i, n, have, want_s[h][i][n]);
            }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++)
            for (int j = 0; j < D; j++) {
                int32_t acc = 0;
                for (int n = 0; n < S; n++)
                    acc += want_s[h][i][n] * HV(2, n, h * D + j);
                int8_t want = requant(acc, ts_lower_tsp_scale(S), false), have = got(&l, y, i, (uint32_t)(h * D + j));
                if (have != want && bad++ < 8)
                    fprintf(stderr, "context[%d][%d][%d] = %d, want %d\n", h, i, j, have, want);
            }
#undef HV
    ck_assert_int_eq(bad, 0);
    static const char *const idle[] = {"q_split", "v_split", "q_heads", "v_heads", "c_merge",
                                       "c_flat",  "k_split", "q_cut",   "v_cut",   "k_cut"};
    int n_idle = 0;
    for (size_t i = 0; i < l.rep.nlayers; i++) {
        const char *name = ts_graph_get_node(g, l.rep.layers[i].node)->name;
        bool is_idle = false;
        for (size_t k = 0; k < (packed ? 10u : 6u); k++)
            is_idle |= !strcmp(name, idle[k]);
        n_idle += is_idle;
        if (is_idle)
            ck_assert_msg(l.rep.layers[i].instructions == 0, "%s: %llu instructions", name,
                          (unsigned long long)l.rep.layers[i].instructions);
        else if (!strcmp(name, "k_split"))
            ck_assert_uint_eq(l.rep.layers[i].passes, (uint64_t)S * H);
    }
    ck_assert_int_eq(n_idle, packed ? 10 : 6);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* test_heads in rank 4 ([b, S, 768] to [b, S, 12, 64], heads first with perm (0, 2, 1, 3), back,
 * joined): with a batch of 1 the graph is lowered as rank 3 (workloads/tsp/squeeze.c) and gives its
 * input back exactly; with a batch of 2 the Transposes are refused as moving the channel axis. */
START_TEST(test_heads_rank4)
{
    const int S = 4, H = 12, Dh = 64, B = _i + 1;
    ts_graph *g = ts_graph_create("heads4");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){B, S, H * Dh});
    ts_graph_attrs r4, r3, pt;
    ts_graph_attrs_init(&r4);
    r4.nshape = 4;
    memcpy(r4.shape, (int64_t[]){B, S, H, Dh}, 4 * sizeof(int64_t));
    ts_graph_attrs_init(&r3);
    r3.nshape = 3;
    memcpy(r3.shape, (int64_t[]){B, S, H * Dh}, 3 * sizeof(int64_t));
    ts_graph_attrs_init(&pt);
    pt.nperm = 4;
    memcpy(pt.perm, (int64_t[]){0, 2, 1, 3}, 4 * sizeof(int64_t));
    int sp = chain(g, TS_OP_RESHAPE, "split", x, -1, &r4);
    int hf = chain(g, TS_OP_TRANSPOSE, "hfirst", sp, -1, &pt);
    int sf = chain(g, TS_OP_TRANSPOSE, "sfirst", hf, -1, &pt);
    int y = chain(g, TS_OP_RESHAPE, "join", sf, -1, &r3);
    ts_graph_mark_output(g, y);
    finalize(g);
    if (B > 1) {
        ts_err e;
        ts_err_init(&e);
        void *cfg = tsp_test_config("tsp_v1", NULL);
        ts_lower_tsp_params p;
        ts_program *prog = NULL;
        ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_OK);
        ck_assert_int_eq(ts_lower_tsp(g, &p, &prog, NULL, &e), TS_EINPUT);
        ck_assert_ptr_null(prog);
        ck_assert_str_eq(e.msg, "the TSP lowering does not support 1 operator of this model (2 nodes): Transpose that moves "
                          "the channel axis (2 nodes, first 'hfirst'); it lowers MatMul, Gemm, Conv, Relu, Add, Sub, "
                          "Mul, Div, Clip, Sigmoid, Tanh, HardSwish, Gelu, Concat, Slice, Expand, Transpose keeping "
                          "the channel axis, MaxPool, GlobalAveragePool, Flatten, layout-keeping Reshape, Softmax and "
                          "LayerNormalization");
        ts_config_destroy(cfg);
        ts_err_free(&e);
        ts_graph_destroy(g);
        return;
    }
    lowered l;
    lower_and_run(g, &l);
    int bad = 0;
    for (int s = 0; s < S; s++)
        for (int c = 0; c < H * Dh; c++) {
            int8_t want = (int8_t)ts_fill_i8(x, (uint64_t)s * H * Dh + c), h = got(&l, y, (uint32_t)s, (uint32_t)c);
            if (h != want && bad++ < 8)
                fprintf(stderr, "x[%d][%d] = %d: joined %d\n", s, c, want, h);
        }
    ck_assert_int_eq(bad, 0);
    /* the split writes hfirst's output (lt_split_fold), the join reads hfirst's through sfirst
     * (lt_join_fold): the two Transposes move nothing */
    ck_assert_uint_eq(l.rep.nlayers, 4);
    ck_assert_uint_eq(l.rep.layers[0].passes, (uint64_t)S * H);
    ck_assert_uint_eq(l.rep.layers[1].passes + l.rep.layers[2].passes, 0);
    ck_assert_uint_eq(l.rep.layers[1].instructions + l.rep.layers[2].instructions, 0);
    ck_assert_uint_gt(l.rep.layers[3].passes, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Lower g for a tsp_v1 with the settings small (NULL-ended) into l, which must succeed. */
static void lower_small(ts_graph *g, const char *const *small, lowered *l)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", small);
    ts_lower_tsp_params p;
    ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_OK);
    ts_config_destroy(cfg);
    ck_assert_msg(ts_lower_tsp(g, &p, &l->prog, &l->rep, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
}

/* Run l's program on the same chip: no hazard of any kind. */
static void run_small(const char *const *small, lowered *l)
{
    tsp_test_run2("tsp_v1", small, l->prog, &l->run);
    ck_assert_double_eq(tsp_stat(&l->run, "hazards.stream_collision") + tsp_stat(&l->run, "hazards.no_value") +
                            tsp_stat(&l->run, "hazards.bank_conflict") + tsp_stat(&l->run, "hazards.resource") +
                            tsp_stat(&l->run, "hazards.queue_underrun"),
                        0);
}

/* A chain of nw int8 MatMuls of M = 4 rows, n[i] x n[i + 1] weights, lowered and run on tsp_v1 with
 * the config overrides `sets`: its output bit for bit the C reference's (each product requantised by
 * ts_lower_tsp_scale of its k), no hazard (run_small). */
static void matmul_chain(const char *name, const int *n, int nw, const char *const *sets)
{
    enum { M = 4, NMAX = 10000 };
    ts_graph *g = ts_graph_create(name);
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, n[0]}), w[8], y = x;
    ck_assert_int_le(nw, 8);
    for (int i = 0; i < nw; i++) {
        char wn[16], yn[16];
        ck_assert_int_le(n[i + 1], NMAX);
        snprintf(wn, sizeof wn, "w%d", i);
        snprintf(yn, sizeof yn, "m%d", i);
        w[i] = tensor_dt(g, wn, TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){n[i], n[i + 1]});
        y = chain(g, TS_OP_MATMUL, yn, y, w[i], NULL);
    }
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_small(g, sets, &l);
    run_small(sets, &l);
    static int8_t a[M][NMAX], b[M][NMAX];
    for (int m = 0; m < M; m++)
        for (int c = 0; c < n[0]; c++)
            a[m][c] = (int8_t)ts_fill_i8(x, (uint64_t)m * n[0] + c);
    for (int i = 0; i < nw; i++) {
        for (int m = 0; m < M; m++)
            for (int c = 0; c < n[i + 1]; c++) {
                int32_t acc = 0;
                for (int k = 0; k < n[i]; k++)
                    acc += a[m][k] * ts_fill_i8(w[i], (uint64_t)k * n[i + 1] + c);
                b[m][c] = requant(acc, ts_lower_tsp_scale((uint64_t)n[i]), false);
            }
        memcpy(a, b, sizeof a);
    }
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int c = 0; c < n[nw]; c++) {
            int8_t have = got(&l, y, (uint32_t)m, (uint32_t)c);
            if (have != a[m][c] && bad++ < 8)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, c, have, a[m][c]);
        }
    ck_assert_int_eq(bad, 0);
    lowered_free(&l);
    ts_graph_destroy(g);
}

/* A chain of five MatMuls whose weights (46 and 51 words of each slice) pass what the west MEM of
 * a chip with 200 words a slice holds: the last ones' rows go to the east slices and are read
 * westward through the VXM to the planes. Bit-exact, no hazard. */
START_TEST(test_east_weights)
{
    static const char *const small[] = {"mem.slice_bytes=64000", NULL};
    static const int n[6] = {320, 2000, 320, 2000, 320, 2000};
    matmul_chain("east", n, 5, small);
}
END_TEST

/* A chain of three MatMuls on a chip with 200 words a MEM slice whose last weight, 320 x 9000 (211
 * words of each slice), the west has no room for, nor either east bank half (100 words each): its
 * rows lie split (split_rows) in the compact layout, the first in the west's fresh words, the rest in
 * 112 words of the east, 99 in the half with the most room and 13 in the other (GPT-2 small's LM
 * head in decode). Bit-exact, no hazard. */
START_TEST(test_split_east_halves)
{
    static const char *const small[] = {"mem.slice_bytes=64000", NULL};
    static const int n[4] = {320, 2000, 320, 9000};
    matmul_chain("halves", n, 3, small);
}
END_TEST

/* Six MatMuls in a chain reading one weight of 1280 x 1280 (a weight shared as a tied embedding
 * and LM head are): its rows, 117 words of each of the 44 west slices, are laid out once and every
 * product reads them there. On a chip of 250 words a slice (125 a bank half) each copy takes a bank
 * half of its own, and without the sharing the fourth (MatMul 'm3') finds none: it lowers only
 * because the rows are shared. Bit-exact, no hazard. */
START_TEST(test_shared_weight)
{
    static const char *const small[] = {"mem.slice_bytes=80000", NULL};
    ts_graph *g = ts_graph_create("shared");
    const int M = 2, K = 1280, L = 6;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K}), y = x;
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, K});
    for (int i = 0; i < L; i++) {
        char yn[16];
        snprintf(yn, sizeof yn, "m%d", i);
        y = chain(g, TS_OP_MATMUL, yn, y, w, NULL);
    }
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_small(g, small, &l);
    /* one copy of the rows (K x 4 tiles of 320 lanes: 5120 vectors, 117 words of 44 slices) */
    ck_assert_uint_lt(l.rep.words_used, 2 * 117 * 44);
    run_small(small, &l);
    static int8_t a[2][1280], b[2][1280];
    for (int m = 0; m < M; m++)
        for (int c = 0; c < K; c++)
            a[m][c] = (int8_t)ts_fill_i8(x, (uint64_t)m * K + c);
    for (int i = 0; i < L; i++) {
        for (int m = 0; m < M; m++)
            for (int c = 0; c < K; c++) {
                int32_t acc = 0;
                for (int k = 0; k < K; k++)
                    acc += a[m][k] * ts_fill_i8(w, (uint64_t)k * K + c);
                b[m][c] = requant(acc, ts_lower_tsp_scale((uint64_t)K), false);
            }
        memcpy(a, b, sizeof a);
    }
    int bad = 0, nonzero = 0;
    for (int m = 0; m < M; m++)
        for (int c = 0; c < K; c++) {
            int8_t have = got(&l, y, (uint32_t)m, (uint32_t)c);
            nonzero += a[m][c] != 0;
            if (have != a[m][c] && bad++ < 8)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, c, have, a[m][c]);
        }
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(nonzero, K / 4); /* the chain has not decayed to zeros */
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* One MatMul of 64 x 640 by 640 x 3200 on a chip of 240 words a MEM slice (120 a bank half): its
 * weight rows, 2 reduction blocks x 10 tiles of 320 rows, take 146 words of each slice, more than a
 * bank half of either hemisphere holds, so they lie split, the first rows in the west's fullest
 * half and the rest in the east's (products.c, split_rows); the east then has too little left for
 * two partial-sum buffers of 49 rows (90 words each) and the product takes them in smaller chunks.
 * Without the split the weight has no room at all. Bit-exact, no hazard. */
START_TEST(test_split_weights)
{
    static const char *const small[] = {"mem.slice_bytes=76800", NULL};
    ts_graph *g = ts_graph_create("split");
    enum { M = 64, K = 640, N = 3200 };
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, N});
    int y = chain(g, TS_OP_MATMUL, "m", x, w, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_small(g, small, &l);
    run_small(small, &l);
    static int8_t a[M][K];
    for (int m = 0; m < M; m++)
        for (int c = 0; c < K; c++)
            a[m][c] = (int8_t)ts_fill_i8(x, (uint64_t)m * K + c);
    int bad = 0, nonzero = 0;
    for (int m = 0; m < M; m++)
        for (int c = 0; c < N; c++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += a[m][k] * ts_fill_i8(w, (uint64_t)k * N + c);
            int8_t want = requant(acc, ts_lower_tsp_scale((uint64_t)K), false), have = got(&l, y, (uint32_t)m, (uint32_t)c);
            nonzero += want != 0;
            if (have != want && bad++ < 8)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, c, have, want);
        }
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(nonzero, M * N / 4);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower_tsp_ops");
    TCase *tc = tcase_create("lower_tsp_ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_conv_batch_groups);
    tcase_add_test(tc, test_packed_taps);
    tcase_add_test(tc, test_slot_tiles_split);
    tcase_add_loop_test(tc, test_packed_sets, 0, 2);
    tcase_add_loop_test(tc, test_west_pairs, 0, 2);
    tcase_add_test(tc, test_patch_conv);
    tcase_add_test(tc, test_elementwise);
    tcase_add_test(tc, test_concat);
    tcase_add_test(tc, test_move);
    tcase_add_test(tc, test_psum_chunks);
    tcase_add_test(tc, test_fetch_retry);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_matmul_act);
    tcase_add_test(tc, test_heads);
    tcase_add_loop_test(tc, test_head_views, 0, 3);
    tcase_add_loop_test(tc, test_heads_rank4, 0, 2);
    tcase_add_test(tc, test_east_weights);
    tcase_add_test(tc, test_shared_weight);
    tcase_add_test(tc, test_split_weights);
    suite_add_tcase(s, tc);
    TCase *hv = tcase_create("halves"); /* alone: CK_RUN_CASE=halves */
    tcase_set_timeout(hv, 60);
    tcase_add_test(hv, test_split_east_halves);
    suite_add_tcase(s, hv);
    return s;
}

int main(void)
{
    arch_modes_default = ARCH_MODES_QUICK; /* the whole tsp_v1: every mode costs as much as the fast one */
    arch_modes_address = ARCH_MODES_FAST; /* under ASan + UBSan: tests/arch/arch_modes.h */
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
