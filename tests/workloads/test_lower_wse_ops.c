/* tests/workloads/test_lower_wse_ops.c — the wafer-mesh lowering's newer operators and forms: a
 * skip path joined by concatenation (NeRF), FIFOs sized by the main path's lag, and the check of
 * the wait-for graph. Graphs built through the workloads API are compiled, run on the WSE family
 * in every mode of tests/arch/arch_modes.h, and their outputs, read back where the lowering
 * reports them, compared with C references in double.
 *
 * Tolerances: values are f32 throughout; each output is within 1e-5 x the sum of the |terms|
 * that made it (the f32 accumulation runs in another order than the reference, each step
 * rounding by at most 2^-24 of its partial sum; 1e-5 leaves room for products of up to a few
 * hundred terms). */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_target.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/half.h"
#include "core/program.h"
#include "tests/arch/wse/wse_test.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/wse/lower_wse.h"
#include "workloads/workload.h"
#include "tests/workloads/graph_ref.h"

#include "tests/workloads/lower_wse_harness.h"

/* ---- tests ---- */

/* h = relu(x W1 + b1), h = relu(h W2), y = Concat(h, x) (or (x, h), _i 1) on the last axis,
 * out = y W3: NeRF's skip join by concatenation, the skip path forked at the source, its FIFOs
 * in the rows below the products. */
START_TEST(test_concat_skip)
{
    enum { R = 24, D = 5, H = 8, O = 3 };
    ts_graph *g = ts_graph_create("nerf");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){R, D});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 2, (int64_t[]){D, H});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){H});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){H, H});
    int w3 = tensor(g, "w3", TS_TENSOR_WEIGHT, 2, (int64_t[]){H + D, O});
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    fill(g, w3);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    int h1 = tensor(g, "h1", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_GEMM, "fc1", (int[]){x, w1, b1}, 3, h1, &at);
    int r1 = chain(g, TS_OP_RELU, "r1", h1, -1, NULL);
    int h2 = chain(g, TS_OP_MATMUL, "fc2", r1, w2, NULL);
    int r2 = chain(g, TS_OP_RELU, "r2", h2, -1, NULL);
    int y = tensor(g, "cat", TS_TENSOR_ACTIVATION, -1, NULL);
    at.axis = -1;
    node(g, TS_OP_CONCAT, "concat", _i ? (int[]){x, r2} : (int[]){r2, x}, 2, y, &at);
    int out = chain(g, TS_OP_MATMUL, "fc3", y, w3, NULL);
    ts_graph_mark_output(g, out);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 48, 8, &L);
    ck_assert_ptr_nonnull(stage_of(&L, "concat", 0));
    size_t fifos = 0;
    for (size_t i = 0; i < L.rep.nstages; i++)
        fifos += !strcmp(L.rep.stages[i].what, "fifo");
    ck_assert_uint_ge(fifos, 1);
    for (int i = 0; i < R; i++) {
        double a[H], b[H], c[H + D], sc[H + D];
        for (int j = 0; j < H; j++) {
            a[j] = val(b1, j);
            for (int k = 0; k < D; k++)
                a[j] += val(x, i * D + k) * val(w1, k * H + j);
            a[j] = fmax(a[j], 0);
        }
        for (int j = 0; j < H; j++) {
            b[j] = 0;
            for (int k = 0; k < H; k++)
                b[j] += a[k] * val(w2, k * H + j);
            b[j] = fmax(b[j], 0);
        }
        for (int k = 0; k < H + D; k++) {
            bool from_x = _i ? k < D : k >= H;
            int kx = _i ? k : k - H, kh = _i ? k - D : k;
            c[k] = from_x ? val(x, i * D + kx) : b[kh];
            sc[k] = fabs(c[k]) * 8;
        }
        for (int j = 0; j < O; j++) {
            double t = 0, s = 0;
            for (int k = 0; k < H + D; k++) {
                t += c[k] * val(w3, k * O + j);
                s += sc[k];
            }
            near(out_at(&L, out, (uint64_t)(i * O + j)), t, s + 1, "out", (uint64_t)(i * O + j));
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Clip (lo -0.5, hi 0.7), Sigmoid, Tanh, Gelu (erf form, and its tanh form) on a stream of values
 * in [-6, 6): elementwise PEs of scalar binary32 code, each row of 50 split over 6 PEs (no product: the
 * pipeline time T is the least at which the stage's PEs fit the mesh). Tolerance: the exp's polynomial is good to 1e-9, the
 * Newton reciprocal and the float ops to a few ulp, A&S 7.1.26's erf to 1.5e-7 (times |x| / 2 <= 3
 * in Gelu): 2e-6 absolute plus 1e-5 relative. Clip is exact. */
START_TEST(test_elementwise)
{
    static const ts_graph_op ops[] = {TS_OP_CLIP, TS_OP_SIGMOID, TS_OP_TANH, TS_OP_GELU, TS_OP_GELU};
    const ts_graph_op op = ops[_i];
    const bool tanh_form = _i == 4; /* Gelu's tanh form (GPT-2's): x sigmoid(2 u) */
    ts_graph *g = ts_graph_create("elem");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){3, 50});
    fill_scaled(g, x, 6.0f);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.min = -0.5;
    at.max = 0.7;
    at.approximate_tanh = tanh_form;
    int y = chain(g, op, "f", x, -1, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 8, 4, &L);
    const ts_lower_wse_stage *st = stage_of(&L, "elementwise", 0);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(st->w, 6); /* slower than the pipeline: split over the 6 PEs the mesh's 8 columns leave */
    for (int k = 0; k < 150; k++) {
        double v = (double)(val(x, k) * 6.0f), want;
        switch (op) {
        case TS_OP_CLIP: want = fmin(fmax(v, -0.5), (double)0.7f); break;
        case TS_OP_SIGMOID: want = 1 / (1 + exp(-v)); break;
        case TS_OP_TANH: want = tanh(v); break;
        default:
            want = tanh_form ? 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                             : 0.5 * v * (1 + erf(v / sqrt(2.0)));
            break;
        }
        double got = (double)out_at(&L, y, (uint64_t)k);
        ck_assert_msg(fabs(got - want) <= 2e-6 + 1e-5 * fabs(want), "%s(%g): got %.9g, want %.9g",
                      ts_graph_op_name(op), v, got, want);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Gemm, then a Clip to [0, 6] (ReLU6) fused into the product's row 0; and after a residual join. */
START_TEST(test_relu6_fused)
{
    ts_graph *g = ts_graph_create("relu6");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 12});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 10});
    fill_scaled(g, x, 4.0f);
    fill(g, w);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.min = 0;
    at.max = 6;
    int h = chain(g, TS_OP_MATMUL, "mm", x, w, NULL);
    int y = chain(g, TS_OP_CLIP, "relu6", h, -1, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 8, &L);
    ck_assert_ptr_null(stage_of(&L, "elementwise", 0)); /* fused */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 10; j++) {
            double t = 0, sc = 0;
            for (int k = 0; k < 12; k++) {
                t += (double)(val(x, i * 12 + k) * 4.0f) * val(w, k * 10 + j);
                sc += fabs((double)(val(x, i * 12 + k) * 4.0f) * val(w, k * 10 + j));
            }
            near(out_at(&L, y, (uint64_t)(i * 10 + j)), fmin(fmax(t, 0), 6), sc + 1, "y", (uint64_t)(i * 10 + j));
        }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* out[m][oy][ox] of a grouped Conv (weights M x C/group x kh x kw, pads p, stride st) of in[C][H][W],
 * and the sum of the |terms| in *sc. */
static double conv_ref(const double *in, int C, int H, int W, int wid, int M, int group, int kh, int st, int p,
                       int m, int oy, int ox, double *sc)
{
    const int cg = C / group, g = m / (M / group);
    double t = 0;
    *sc = 0;
    for (int c = 0; c < cg; c++)
        for (int i = 0; i < kh; i++)
            for (int j = 0; j < kh; j++) {
                int iy = oy * st - p + i, ix = ox * st - p + j;
                if (iy < 0 || ix < 0 || iy >= H || ix >= W)
                    continue;
                double v = in[((g * cg + c) * H + iy) * W + ix] * val(wid, ((m * cg + c) * kh + i) * kh + j);
                t += v;
                *sc += fabs(v);
            }
    return t;
}

/* MobileNetV2's pieces: a depthwise 3x3 Conv (group = channels, stride 1 or 2 by _i) with bias and
 * ReLU6, then a grouped 1x1 Conv (2 groups). The product runs over the dense K with the blocks
 * outside a group zero. */
START_TEST(test_grouped_conv)
{
    enum { C = 6, H = 7, M = 4 };
    const int st = _i ? 2 : 1, Ho = (H + 2 - 3) / st + 1;
    ts_graph *g = ts_graph_create("dw");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, H, H});
    int wd = tensor(g, "wd", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, 1, 3, 3});
    int bd = tensor(g, "bd", TS_TENSOR_WEIGHT, 1, (int64_t[]){C});
    int wp = tensor(g, "wp", TS_TENSOR_WEIGHT, 4, (int64_t[]){M, C / 2, 1, 1});
    fill(g, x);
    fill(g, wd);
    fill(g, bd);
    fill(g, wp);
    ts_graph_attrs ad, ap, ac;
    ts_graph_attrs_init(&ad);
    ad.pads[0] = ad.pads[1] = ad.pads[2] = ad.pads[3] = 1;
    ad.strides[0] = ad.strides[1] = st;
    ad.group = C;
    ts_graph_attrs_init(&ap);
    ap.group = 2;
    ts_graph_attrs_init(&ac);
    ac.min = 0;
    ac.max = 6;
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_CONV, "dw", (int[]){x, wd, bd}, 3, h, &ad);
    int r = chain(g, TS_OP_CLIP, "relu6", h, -1, &ac);
    int y = chain(g, TS_OP_CONV, "pw", r, wp, &ap);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 32, 8, &L);
    double in[C * H * H], mid[C * Ho * Ho], msc[C * Ho * Ho];
    for (int k = 0; k < C * H * H; k++)
        in[k] = val(x, k);
    for (int c = 0; c < C; c++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Ho; ox++) {
                int k = (c * Ho + oy) * Ho + ox;
                mid[k] = fmin(fmax(conv_ref(in, C, H, H, wd, C, C, 3, st, 1, c, oy, ox, &msc[k]) + val(bd, c), 0), 6);
            }
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Ho; ox++) {
                double sc, t = conv_ref(mid, C, Ho, Ho, wp, M, 2, 1, 1, 0, m, oy, ox, &sc);
                for (int c = 0; c < C; c++) /* the first Conv's rounding, carried through */
                    sc += msc[(c * Ho + oy) * Ho + ox];
                uint64_t k = (uint64_t)((m * Ho + oy) * Ho + ox);
                near(out_at(&L, y, k), t, sc + 1, "y", k);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* ResNet-50 at batch 8 on wse2 hung after 11.1 M cycles: a skip path's FIFO released its chunks
 * (capped by the PE's SRAM, so they did not divide an image) across the boundary between two
 * images, while the main path's line buffer gave out the last rows of one image before taking
 * the next one in. The same here, reduced: a residual block (1x1, 3x3 pad 1, 1x1, plus the
 * input, Relu) on two 4 x 4 x 256 images, planned for PEs of 4016 bytes (FIFO chunks of 500 values,
 * images of 4096). Chunks now restart at every image; the run completes and the values match. */
START_TEST(test_batch_skip)
{
    /* Under a sanitizer (scripts/test.sh sets TS_SANITIZED) left to the normal build: its run took
     * 90 s there */
    if (getenv("TS_SANITIZED"))
        return;
    enum { B = 2, C = 4, H = 4, W = 256 };
    ts_graph *g = ts_graph_create("batch");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){B, C, H, W});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 1, 1});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 3, 3});
    int w3 = tensor(g, "w3", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 1, 1});
    fill(g, x);
    fill(g, w1);
    fill(g, w2);
    fill(g, w3);
    ts_graph_attrs a1, a3;
    ts_graph_attrs_init(&a1);
    ts_graph_attrs_init(&a3);
    a3.pads[0] = a3.pads[1] = a3.pads[2] = a3.pads[3] = 1;
    int t1 = chain(g, TS_OP_RELU, "r1", chain(g, TS_OP_CONV, "c1", x, w1, &a1), -1, NULL);
    int t2 = chain(g, TS_OP_RELU, "r2", chain(g, TS_OP_CONV, "c2", t1, w2, &a3), -1, NULL);
    int t3 = chain(g, TS_OP_CONV, "c3", t2, w3, &a1);
    int s = tensor(g, "s", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_ADD, "add", (int[]){t3, x}, 2, s, NULL);
    int y = chain(g, TS_OP_RELU, "r3", s, -1, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_sram = 4016;
    lower_and_run(g, 64, 16, &L);
    lower_sram = 0;
    enum { N = C * H * W };
    static double a[N], b[N], c[N], sa[N], sb[N], sc[N];
    for (int n = 0; n < B; n++) {
        double in[N];
        for (int k = 0; k < N; k++)
            in[k] = val(x, n * N + k);
        for (int m = 0; m < C; m++)
            for (int p = 0; p < H * W; p++)
                a[m * H * W + p] = fmax(conv_ref(in, C, H, W, w1, C, 1, 1, 1, 0, m, p / W, p % W, &sa[m * H * W + p]),
                                        0);
        for (int m = 0; m < C; m++)
            for (int p = 0; p < H * W; p++)
                b[m * H * W + p] = fmax(conv_ref(a, C, H, W, w2, C, 1, 3, 1, 1, m, p / W, p % W, &sb[m * H * W + p]),
                                        0);
        for (int m = 0; m < C; m++)
            for (int p = 0; p < H * W; p++) {
                int k = m * H * W + p;
                c[k] = conv_ref(b, C, H, W, w3, C, 1, 1, 1, 0, m, p / W, p % W, &sc[k]);
                double want = fmax(c[k] + in[k], 0), scale = sc[k] + fabs(in[k]) + 8 * (sa[k] + sb[k]) + 1;
                near(out_at(&L, y, (uint64_t)(n * N + k)), want, scale, "y", (uint64_t)(n * N + k));
            }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Broadcasting a parameter over the stream: x [3, 4, 8] / 8 (a scalar constant, as attention's
 * scale), + b [8] (the last axis), * m [1, 4, 8] (the trailing dims), then a Conv whose image is
 * scaled per channel (* [4, 1, 1]) and shifted by a scalar (- [1]). Div multiplies by the
 * reciprocal: exact for 8, within one rounding otherwise; tolerance 1e-5 x the sum of |terms|. */
START_TEST(test_broadcast)
{
    ts_graph *g = ts_graph_create("bcast");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){3, 4, 8});
    int eight = tensor(g, "eight", TS_TENSOR_CONST, 0, NULL);
    int b = tensor(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){8});
    int m = tensor(g, "m", TS_TENSOR_WEIGHT, 3, (int64_t[]){1, 4, 8});
    fill(g, x);
    fill(g, b);
    fill(g, m);
    float e8 = 8.0f;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, eight, &e8, 4, &e), TS_OK);
    int d = chain(g, TS_OP_DIV, "div", x, eight, NULL);
    int a = chain(g, TS_OP_ADD, "add", d, b, NULL);
    int y = chain(g, TS_OP_MUL, "mul", a, m, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 4, &L);
    for (int k = 0; k < 96; k++) {
        double want = ((double)val(x, k) / 8 + val(b, k % 8)) * val(m, k % 32);
        near(out_at(&L, y, (uint64_t)k), want, fabs(want) + 1, "y", (uint64_t)k);
    }
    lowered_free(&L);
    ts_graph_destroy(g);

    g = ts_graph_create("bcast_img");
    x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 3, 5, 5});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 3, 1, 1});
    int sc = tensor(g, "sc", TS_TENSOR_WEIGHT, 3, (int64_t[]){4, 1, 1});
    int sh = tensor(g, "sh", TS_TENSOR_WEIGHT, 1, (int64_t[]){1});
    fill(g, x);
    fill(g, w);
    fill(g, sc);
    fill(g, sh);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    int c = chain(g, TS_OP_CONV, "conv", x, w, &at);
    int s1 = chain(g, TS_OP_MUL, "scale", c, sc, NULL);
    y = chain(g, TS_OP_SUB, "shift", s1, sh, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lower_and_run(g, 16, 4, &L);
    for (int o = 0; o < 4; o++)
        for (int p = 0; p < 25; p++) {
            double t = 0, s = 0;
            for (int ch = 0; ch < 3; ch++) {
                t += (double)val(x, ch * 25 + p) * val(w, o * 3 + ch);
                s += fabs((double)val(x, ch * 25 + p) * val(w, o * 3 + ch));
            }
            double want = t * val(sc, o) - val(sh, 0);
            near(out_at(&L, y, (uint64_t)(o * 25 + p)), want, s + 1, "y", (uint64_t)(o * 25 + p));
        }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Slice: [2, 3, 12] cut on the last axis to [4, 8) (the in-projection's thirds), then on axis 1 to
 * [1, 3): exact moves. */
START_TEST(test_slice)
{
    ts_graph *g = ts_graph_create("slice");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){2, 3, 12});
    fill(g, x);
    ts_graph_attrs a, b;
    ts_graph_attrs_init(&a);
    a.nslice = 3;
    for (int k = 0; k < 3; k++)
        a.starts[k] = 0, a.ends[k] = k == 2 ? 12 : 3, a.steps[k] = 1;
    a.ends[0] = 2;
    b = a;
    a.starts[2] = 4, a.ends[2] = 8;
    b.ends[2] = 4;
    b.starts[1] = 1;
    int s1 = chain(g, TS_OP_SLICE, "s1", x, -1, &a);
    int y = chain(g, TS_OP_SLICE, "s2", s1, -1, &b);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 4, &L);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 4; k++) {
                uint64_t o = (uint64_t)((i * 2 + j) * 4 + k);
                ck_assert_float_eq(out_at(&L, y, o), val(x, (i * 3 + j + 1) * 12 + 4 + k));
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Transpose of rank 3 (perm [1, 0, 2]: attention's [S, B, D] to [B, S, D]) and 4 ([0, 2, 1, 3]:
 * the heads, and [0, 2, 3, 1]): exact moves. */
START_TEST(test_transpose)
{
    static const int64_t perms[3][4] = {{1, 0, 2, 3}, {0, 2, 1, 3}, {0, 2, 3, 1}};
    static const int64_t dims[4] = {2, 3, 4, 5};
    const int r = _i ? 4 : 3;
    ts_graph *g = ts_graph_create("tr");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, r == 3 ? dims : (int64_t[]){6, 4, 5});
    fill(g, x);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    int t = x;
    if (r == 4) { /* a rank-4 graph input would stream as an image: reshape a row-major one */
        a.nshape = 4;
        for (int k = 0; k < 4; k++)
            a.shape[k] = dims[k];
        t = chain(g, TS_OP_RESHAPE, "rs", x, -1, &a);
        ts_graph_attrs_init(&a);
    }
    a.nperm = r;
    for (int k = 0; k < r; k++)
        a.perm[k] = perms[_i][k];
    int y = chain(g, TS_OP_TRANSPOSE, "t", t, -1, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 4, &L);
    int64_t od[4], n = 1, st[4];
    for (int k = r - 1; k >= 0; k--) {
        st[k] = n;
        n *= dims[k];
    }
    for (int k = 0; k < r; k++)
        od[k] = dims[perms[_i][k]];
    for (int64_t o = 0; o < n; o++) {
        int64_t rem = o, at = 0;
        for (int k = r - 1; k >= 0; k--) {
            at += (rem % od[k]) * st[perms[_i][k]];
            rem /= od[k];
        }
        ck_assert_float_eq(out_at(&L, y, (uint64_t)o), val(x, at));
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A Transpose that moves only an axis of 1 ([100, 1, 200] to [1, 100, 200], as torch's attention
 * exports [seq, batch 1, hidden] to [batch, seq, hidden]) keeps the stream's order: the tensor
 * (78 KiB, more than a PE holds) passes through, each value in place. */
START_TEST(test_transpose_in_place)
{
    /* Under a sanitizer (TS_SANITIZED) left to the normal build: its run took 24 s there */
    if (getenv("TS_SANITIZED"))
        return;
    ts_graph *g = ts_graph_create("tr1");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){100, 1, 200});
    fill(g, x);
    int y = transpose3(g, "t", x, 1, 0, 2);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 4, &L);
    for (uint64_t k = 0; k < 100 * 200; k++)
        ck_assert_float_eq(out_at(&L, y, k), val(x, (int64_t)k));
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* LayerNormalization over the last axis of [5, 40] (values in [-3, 3)), with a scale and a bias,
 * epsilon 1e-5 (_i 0; alone in the pipeline, sized against its time T: over the 6 PEs in a row the
 * mesh's 8 columns leave, parts of 6 or 7 values, the sums of each part and of its squares added
 * PE by PE west, the mean and 1 / s sent back east; _i 4 the same over [2, 1027], parts of 171
 * values, their squares in blocks of 64), and RMSNormalization (Llama's: x / sqrt(mean(x^2) + epsilon) times the
 * scale, no mean, no bias; _i 1; _i 2 over [5, 300]: its squares summed in 4 blocks of 64 and 44
 * values more, then the 64 partial sums; _i 3 over [2, 1027], a long row: over 5 PEs in a row, parts
 * of 205 or 206 values, their partial sums added PE by PE west, 1 / s sent back east). Tolerance
 * 2e-5 x (|y| + |bias| + 1): the mean and variance sum 40 f32 terms (a few 1e-6 relative; the split
 * row's squares are at most 4 block adds, 64 partial sums and 5 parts deep, 73 ulp at worst), the
 * square root's Newton steps and the reciprocal a few ulp. */
START_TEST(test_layernorm)
{
    const bool rms = _i >= 1 && _i <= 3;
    const int R = _i >= 3 ? 2 : 5, D = _i >= 3 ? 1027 : _i == 2 ? 300 : 40;
    ts_graph *g = ts_graph_create("ln");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){R, D});
    int gm = tensor(g, "gamma", TS_TENSOR_WEIGHT, 1, (int64_t[]){D});
    int bt = rms ? -1 : tensor(g, "beta", TS_TENSOR_WEIGHT, 1, (int64_t[]){D});
    fill_scaled(g, x, 3.0f);
    fill(g, gm);
    if (!rms)
        fill(g, bt);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    at.epsilon = 1e-5;
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, rms ? TS_OP_RMSNORM : TS_OP_LAYERNORM, "ln", (int[]){x, gm, bt}, rms ? 2 : 3, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 8, 4, &L);
    ck_assert_uint_eq(stage_of(&L, "layernorm", 0)->w, _i == 3 ? 5 : rms ? 1 : 6);
    for (int i = 0; i < R; i++) {
        double m = 0, v = 0;
        for (int k = 0; k < D && !rms; k++)
            m += (double)(val(x, i * D + k) * 3.0f) / D;
        for (int k = 0; k < D; k++) {
            double d = (double)(val(x, i * D + k) * 3.0f) - m;
            v += d * d / D;
        }
        for (int k = 0; k < D; k++) {
            const double b = rms ? 0.0 : val(bt, k);
            double want = ((double)(val(x, i * D + k) * 3.0f) - m) / sqrt(v + 1e-5) * val(gm, k) + b;
            double got = (double)out_at(&L, y, (uint64_t)(i * D + k));
            ck_assert_msg(fabs(got - want) <= 2e-5 * (fabs(want) + fabs(b) + 1),
                          "y[%d][%d]: got %.9g, want %.9g", i, k, got, want);
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* The attention of test_attention and test_attention_proj checked against the double reference:
 * y = x + softmax(f q k^T) v per head, q, k and v of S rows of ld values (head h at columns
 * h DH ..), with qa, ka, va the sums of their terms' magnitudes. An error e in a score moves the
 * probabilities by about e, so the scores' magnitudes (mag) scale each output's bound. */
static void check_attention(const lowered *L, int y, int x, int S, int H, int DH, int ld, double f,
                            const double *q, const double *k, const double *v, const double *qa,
                            const double *ka, const double *va)
{
    const int D = H * DH;
    ck_assert_int_le(S, 64);
    for (int h = 0; h < H; h++)
        for (int m = 0; m < S; m++) {
            double sco[64], mx = -1e300, sum = 0, mag = 0;
            for (int n = 0; n < S; n++) {
                sco[n] = 0;
                for (int c = 0; c < DH; c++) {
                    sco[n] += q[m * ld + h * DH + c] * k[n * ld + h * DH + c] * f;
                    mag += qa[m * ld + h * DH + c] * ka[n * ld + h * DH + c] * f;
                }
                mx = fmax(mx, sco[n]);
            }
            for (int n = 0; n < S; n++)
                sum += (sco[n] = exp(sco[n] - mx));
            for (int c = 0; c < DH; c++) {
                double want = val(x, m * D + h * DH + c), terms = fabs(want);
                for (int n = 0; n < S; n++) {
                    want += sco[n] / sum * v[n * ld + h * DH + c];
                    terms += sco[n] / sum * va[n * ld + h * DH + c];
                }
                near(out_at(L, y, (uint64_t)(m * D + h * DH + c)), want, terms * (1 + mag), "y",
                     (uint64_t)(m * D + h * DH + c));
            }
        }
}

/* Multi-head attention as torch's nn.MultiheadAttention exports it, in small: x [1, S, D] to
 * [S, 1, D] (an in-place Transpose), the packed in-projection (MatMul by [D, 3D], Add of the
 * bias), three Slices, each Reshaped to [S, H, dh] and Transposed to heads first, the queries
 * divided by sqrt(dh), the keys transposed to [H, dh, S], Q K^T, Softmax, times V, the heads
 * back side by side ([S, H, dh], Reshape [S, D]), then out = that + x (Reshaped back): a fork
 * into three, two products of activations, and a residual skip path over the attention (the
 * FIFOs hold all of x: the stage reads the whole sequence first). The stage is sized against the
 * pipeline time T (one small product's, below the softmax's rows): each head's queries and keys
 * split over as many K parts as it has query columns (4, the partial scores added on their way
 * north), its values on one V part (a second would not make its rows faster). _i 1: the slices in the order
 * v, q, k of the packed projection and the scale a Mul of the scores by 0.3 instead (a region
 * read whatever the exporter's arrangement). _i 2: the first again, planned for PEs of 120 bytes:
 * its values over the 2 V parts their memory needs (the probabilities multicast to both). Tolerance: 1e-5 x the sum of |terms|
 * of each output (products of dh and S terms in f32, the softmax's exp and reciprocal within
 * 1e-6), the scores' own error carried through the softmax (times 1 + the sum of their |terms|). */
START_TEST(test_attention)
{
    enum { S = 5, H = 2, DH = 4, D = H * DH };
    ts_graph *g = ts_graph_create("attn");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){1, S, D});
    int w = tensor(g, "w_in", TS_TENSOR_WEIGHT, 2, (int64_t[]){D, 3 * D});
    int bi = tensor(g, "b_in", TS_TENSOR_WEIGHT, 1, (int64_t[]){3 * D});
    int sc = tensor(g, "scale", TS_TENSOR_CONST, 0, NULL);
    fill(g, x);
    fill(g, w);
    fill(g, bi);
    const bool alt = _i == 1;
    const float scale = alt ? 0.3f : sqrtf((float)DH);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, sc, &scale, 4, &e), TS_OK);
    ts_graph_attrs a;
    int xt = transpose3(g, "t0", x, 1, 0, 2);
    int p = chain(g, TS_OP_MATMUL, "inproj", xt, w, NULL);
    int pb = chain(g, TS_OP_ADD, "inbias", p, bi, NULL);
    int part[3]; /* q, k, v */
    static const char *const names[3] = {"q", "k", "v"};
    for (int r = 0; r < 3; r++) {
        int third = alt ? (r + 1) % 3 : r; /* _i 1: [v | q | k] */
        ts_graph_attrs_init(&a);
        a.nslice = 3;
        for (int k = 0; k < 3; k++)
            a.starts[k] = 0, a.ends[k] = k == 0 ? S : k == 1 ? 1 : 3 * D, a.steps[k] = 1;
        a.starts[2] = third * D, a.ends[2] = (third + 1) * D;
        char nm[16];
        snprintf(nm, sizeof nm, "sl_%s", names[r]);
        int sl = chain(g, TS_OP_SLICE, nm, pb, -1, &a);
        ts_graph_attrs_init(&a);
        a.nshape = 3;
        memcpy(a.shape, (int64_t[]){S, H, DH}, sizeof(int64_t[3]));
        snprintf(nm, sizeof nm, "rs_%s", names[r]);
        int rs = chain(g, TS_OP_RESHAPE, nm, sl, -1, &a);
        snprintf(nm, sizeof nm, "tr_%s", names[r]);
        part[r] = transpose3(g, nm, rs, 1, r == 1 ? 2 : 0, r == 1 ? 0 : 2);
    }
    if (!alt)
        part[0] = chain(g, TS_OP_DIV, "qscale", part[0], sc, NULL);
    int s = chain(g, TS_OP_MATMUL, "qk", part[0], part[1], NULL);
    if (alt)
        s = chain(g, TS_OP_MUL, "sscale", s, sc, NULL);
    ts_graph_attrs_init(&a);
    a.axis = -1;
    int pr = chain(g, TS_OP_SOFTMAX, "softmax", s, -1, &a);
    int o = chain(g, TS_OP_MATMUL, "pv", pr, part[2], NULL);
    int ot = transpose3(g, "t_o", o, 1, 0, 2);
    ts_graph_attrs_init(&a);
    a.nshape = 3;
    memcpy(a.shape, (int64_t[]){1, S, D}, sizeof(int64_t[3]));
    int orr = chain(g, TS_OP_RESHAPE, "rs_o", ot, -1, &a);
    int y = chain(g, TS_OP_ADD, "residual", orr, x, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_sram = _i == 2 ? 120 : 0;
    lower_and_run(g, 64, 32, &L);
    lower_sram = 0;
    const ts_lower_wse_stage *st = stage_of(&L, "attention", 0);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(st->kr, DH); /* K parts */
    ck_assert_uint_eq(st->kc, _i == 2 ? 2 : 1); /* V parts */
    ck_assert_uint_eq(st->w * st->h, st->kc * H * (1 + DH));
    /* the reference in double, with the sum of |terms| of each value */
    double P[S][3 * D], Pa[S][3 * D];
    for (int r = 0; r < S; r++)
        for (int c = 0; c < 3 * D; c++) {
            P[r][c] = val(bi, c);
            Pa[r][c] = fabs(P[r][c]);
            for (int k = 0; k < D; k++) {
                P[r][c] += (double)val(x, r * D + k) * val(w, k * 3 * D + c);
                Pa[r][c] += fabs((double)val(x, r * D + k) * val(w, k * 3 * D + c));
            }
        }
    const int q0 = alt ? D : 0, k0 = alt ? 2 * D : D, v0 = alt ? 0 : 2 * D;
    const double f = alt ? (double)scale : 1.0 / (double)scale;
    check_attention(&L, y, x, S, H, DH, 3 * D, f, &P[0][q0], &P[0][k0], &P[0][v0], &Pa[0][q0], &Pa[0][k0],
                    &Pa[0][v0]);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Attention with separate projections, as the built-in bert-base-layer and gpt write it: x
 * [1, S, D] feeds three MatMuls (q and v with a bias Add, k without) and the residual Add: a
 * fork into four, lowered as one product of the three weights side by side (the biases folded
 * in), the attention stage on its stream, and a skip path for the residual. The heads in rank 4
 * ([1, S, H, dh] to [1, H, S, dh]; the keys to [1, H, dh, S]), the scores divided by sqrt(dh).
 * Tolerance as test_attention's. */
START_TEST(test_attention_proj)
{
    enum { S = 6, H = 3, DH = 4, D = H * DH };
    ts_graph *g = ts_graph_create("attn_proj");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){1, S, D});
    int sc = tensor(g, "scale", TS_TENSOR_CONST, 0, NULL);
    fill(g, x);
    const float scale = sqrtf((float)DH);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, sc, &scale, 4, &e), TS_OK);
    static const char *const names[3] = {"q", "k", "v"};
    int wts[3], bs[3] = {-1, -1, -1}, part[3];
    for (int r = 0; r < 3; r++) {
        char nm[16];
        snprintf(nm, sizeof nm, "w_%s", names[r]);
        wts[r] = tensor(g, nm, TS_TENSOR_WEIGHT, 2, (int64_t[]){D, D});
        fill(g, wts[r]);
        int t = chain(g, TS_OP_MATMUL, names[r], x, wts[r], NULL);
        if (r != 1) {
            snprintf(nm, sizeof nm, "b_%s", names[r]);
            bs[r] = tensor(g, nm, TS_TENSOR_WEIGHT, 1, (int64_t[]){D});
            fill(g, bs[r]);
            snprintf(nm, sizeof nm, "bias_%s", names[r]);
            t = chain(g, TS_OP_ADD, nm, t, bs[r], NULL);
        }
        ts_graph_attrs a;
        ts_graph_attrs_init(&a);
        a.nshape = 4;
        memcpy(a.shape, (int64_t[]){1, S, H, DH}, sizeof(int64_t[4]));
        snprintf(nm, sizeof nm, "rs_%s", names[r]);
        t = chain(g, TS_OP_RESHAPE, nm, t, -1, &a);
        ts_graph_attrs_init(&a);
        a.nperm = 4;
        memcpy(a.perm, r == 1 ? (int64_t[]){0, 2, 3, 1} : (int64_t[]){0, 2, 1, 3}, sizeof(int64_t[4]));
        snprintf(nm, sizeof nm, "tr_%s", names[r]);
        part[r] = chain(g, TS_OP_TRANSPOSE, nm, t, -1, &a);
    }
    int s = chain(g, TS_OP_MATMUL, "qk", part[0], part[1], NULL);
    s = chain(g, TS_OP_DIV, "sscale", s, sc, NULL);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.axis = -1;
    int pr = chain(g, TS_OP_SOFTMAX, "softmax", s, -1, &a);
    int o = chain(g, TS_OP_MATMUL, "pv", pr, part[2], NULL);
    ts_graph_attrs_init(&a);
    a.nperm = 4;
    memcpy(a.perm, (int64_t[]){0, 2, 1, 3}, sizeof(int64_t[4]));
    int ot = chain(g, TS_OP_TRANSPOSE, "t_o", o, -1, &a);
    ts_graph_attrs_init(&a);
    a.nshape = 3;
    memcpy(a.shape, (int64_t[]){1, S, D}, sizeof(int64_t[3]));
    int orr = chain(g, TS_OP_RESHAPE, "rs_o", ot, -1, &a);
    int y = chain(g, TS_OP_ADD, "residual", orr, x, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 64, 32, &L);
    ck_assert_ptr_nonnull(stage_of(&L, "attention", 0));
    ck_assert_ptr_nonnull(stage_of(&L, "join", 0));
    const ts_lower_wse_stage *mm = stage_of(&L, "matmul", 0);
    ck_assert_ptr_nonnull(mm);
    ck_assert_uint_eq(mm->macs, (uint64_t)(S * D * 3 * D)); /* the three projections in one product */
    double P[3][S][D], Pa[3][S][D];
    for (int t = 0; t < 3; t++)
        for (int r = 0; r < S; r++)
            for (int c = 0; c < D; c++) {
                P[t][r][c] = bs[t] >= 0 ? val(bs[t], c) : 0;
                Pa[t][r][c] = fabs(P[t][r][c]);
                for (int k = 0; k < D; k++) {
                    P[t][r][c] += (double)val(x, r * D + k) * val(wts[t], k * D + c);
                    Pa[t][r][c] += fabs((double)val(x, r * D + k) * val(wts[t], k * D + c));
                }
            }
    check_attention(&L, y, x, S, H, DH, D, 1.0 / scale, &P[0][0][0], &P[1][0][0], &P[2][0][0], &Pa[0][0][0],
                    &Pa[1][0][0], &Pa[2][0][0]);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* The run's logits against the double interpreter within 2e-5 (1 + |y|) (the decoder tests below
 * say why that tolerance holds). */
static void check_logits(const ts_graph *g, const lowered *L, const char *spec)
{
    gref r;
    gref_run(g, &r);
    int y = ts_graph_find(g, "logits");
    const ts_graph_tensor *t = ts_graph_get_tensor(g, y);
    for (int64_t k = 0; k < ts_graph_tensor_elems(t); k++) {
        double got = out_at(L, y, (uint64_t)k), want = r.v[y][k];
        ck_assert_msg(fabs(got - want) <= 2e-5 * (1 + fabs(want)), "%s: logits[%lld]: got %.9g, want %.9g", spec,
                      (long long)k, got, want);
    }
    gref_free(&r);
}

/* The built-in decoder `gpt` in GPT-2's reduced form (LayerNorm, tanh Gelu, biases; docs/llm.md),
 * 2 layers: prefill of 8 tokens under its causal mask (_i 0) and decode of one token against its
 * KV cache of 7 (_i 1); prefill under a mask constant along no diagonal (_i 2: causal, and some
 * earlier keys hidden from later rows) and under a sliding window of 3 keys either side (_i 3).
 * Grouped-query heads, 4 query heads on 2 key/value heads (Llama 3's form; the queries of a key
 * head stacked along the rows in prefill): prefill (_i 4), decode (_i 5), and a batch of 2
 * sequences, the attention stage taking them one after the other: prefill (_i 6, the causal mask
 * the same for both) and decode (_i 7, each sequence's cache kept beside the other's); each query
 * head a column of PEs keeping its key head's keys and values.
 * Each layer's q, k and v projections one product; prefill's mask kept by the top K part of each
 * head and added to its scores (a mask constant along its diagonals, _i 0 and 3, as the 15
 * values of its diagonals, the top part's memory then smaller by 49 values); decode's cached keys and values (the
 * parameters its Concats join to the new key and value) kept by the K and V parts before the
 * stream's; the residuals as skip paths. Its logits against the double interpreter of the same
 * graph (graph_ref.h) within 2e-5 (1 + |y|), as test_llm holds the IPU to: f32 sums of at most 64
 * terms, the exp, reciprocal and square root within about 1e-7 relative. */
START_TEST(test_gpt_prefill)
{
    /* Under a sanitizer (scripts/test.sh sets TS_SANITIZED) cases 3 (a mask, compiled again),
     * 5 (grouped-query decode) and 6 (a batch of 2) run; the others, whole 2-layer decoders too,
     * are left to the normal build: their kinds but the plain prefill run in these three, and the
     * suite's time is bounded. */
    if (getenv("TS_SANITIZED") && _i != 3 && _i != 5 && _i != 6)
        return;
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    char spec[160];
    snprintf(spec, sizeof spec, "gpt:layers=2,hidden=32,heads=%d,ffn=64,kv_heads=2,vocab=40,seq=8,dtype=f32,batch=%d,"
             "phase=%s", _i >= 4 ? 4 : 2, _i >= 6 ? 2 : 1, _i == 1 || _i == 5 || _i == 7 ? "decode" : "prefill");
    ck_assert_msg(ts_wl_builtin(spec, &g, &e) == TS_OK, "%s", e.msg);
    float m[8][8];
    if (_i == 2 || _i == 3) {
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 8; c++)
                m[r][c] = (_i == 2 ? c > r || (c % 3 == 1 && r > c + 1) : abs(c - r) > 3) ? -1e4f : 0.0f;
        ck_assert_int_eq(ts_graph_set_data(g, ts_graph_find(g, "mask"), m, sizeof m, &e), TS_OK);
    }
    lowered L = {0};
    lower_and_run(g, 96, 32, &L);
    const ts_lower_wse_stage *at = stage_of(&L, "attention", 1);
    ck_assert_ptr_nonnull(at);
    if (_i >= 4) { /* one column of PEs per query head, each keeping its key head's keys and values */
        ck_assert_uint_eq(at->w, 4);
        ck_assert_uint_eq(at->macs, (uint64_t)((_i >= 6 ? 2 : 1) * 4 * (_i == 5 || _i == 7 ? 1 : 8) * 8 * 2 * 8));
    }
    check_logits(g, &L, spec);
    if (_i == 3) { /* one value off its diagonal: the whole 8 x 8 mask is kept, 49 values more */
        m[4][2] = -5.0f;
        ck_assert_int_eq(ts_graph_set_data(g, ts_graph_find(g, "mask"), m, sizeof m, &e), TS_OK);
        ts_program *p2 = NULL;
        ts_lower_wse_report r2 = {0};
        ts_wse_target tp = params(96, 32);
        ck_assert_msg(ts_lower_wse(g, &tp, &p2, &r2, &e) == TS_OK, "%s", e.msg);
        ck_assert_uint_eq(at->mem_bytes + 49 * 4, r2.stages[at - L.rep.stages].mem_bytes);
        ts_lower_wse_report_free(&r2);
        ts_program_destroy(p2);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A decode's products sized for latency (lower_wse_place.c): for every one-row product of the
 * main band (K inputs, N outputs on kr x kc PEs), with loop(r) = ceil(K / r) (ceil(N / kc) + 3)
 * its MAC loop on r rows, no r above kr, up to the rows it may take (K, or rows: the main band's)
 * and the first whose loop is at most a quarter of K + N, makes loop(r) + 8 r less than on kr: more
 * rows would not pay for the 8 cycles each adds. The balanced pipeline alone gives test_gpt_swiglu's
 * decoders products of 4 and 8 rows (32 inputs) where 5 and 11 take fewer cycles: the check fails
 * there without the rule (test_gpt_norm_split's 13 rows of 64 inputs are already the best). */
static void check_latency_rows(const lowered *L, uint32_t rows)
{
    size_t n = 0;
    for (size_t i = 0; i < L->rep.nstages; i++) {
        const ts_lower_wse_stage *s = &L->rep.stages[i];
        if (strcmp(s->what, "matmul") || s->skip || s->macs != s->in_elems * s->out_elems)
            continue;
        if (i && !strcmp(s[-1].what, "elementwise") && s[-1].in_elems == 2 * s[-1].out_elems && s[-1].h > 1)
            continue; /* its input on SwiGLU's gate's rows: a multiple of their count */
        if (i && !strcmp(s[-1].what, "layernorm") && s[-1].h > 1)
            continue; /* its input on a RMSNormalization's rows: a multiple of their count */
        const uint64_t K = s->in_elems, N = s->out_elems, nb = (N + s->kc - 1) / s->kc, most = K < rows ? K : rows;
        const uint64_t at = (K + s->kr - 1) / s->kr * (nb + 3) + 8 * s->kr;
        for (uint64_t r = s->kr + 1; r <= most && (K + r - 2) / (r - 1) * (nb + 3) > (K + N) / 4; r++)
            ck_assert_msg((K + r - 1) / r * (nb + 3) + 8 * r >= at, "product %zu: %llu x %llu on %u x %u PEs, on %llu "
                          "rows %llu cycles less", i, (unsigned long long)K, (unsigned long long)N, s->kr, s->kc,
                          (unsigned long long)r, (unsigned long long)(at - ((K + r - 1) / r * (nb + 3) + 8 * r)));
        n++;
    }
    ck_assert_uint_gt(n, 0);
}

/* The matrix products of a lowering cut for their chain (a decode's products of one chain whose
 * columns are cut unevenly, each later one wider: chain_cuts in lower_wse_place.c): either row 0
 * passes the outputs of the columns west of it on on microthread 1 during its MACs (an fmovs on
 * thread 1; those PEs are row 0's after its first column: at most kc - 1), or, with a row below
 * it to finish each column's sums, row 0 only passes the chain on (its kc PEs run no MAC) and row
 * 1 sends it each column's outputs (its kc PEs move values, no MAC); *rows counts the latter. Of
 * those, a product of 8 rows or more climbs its partial sums in two runs (lw_mm_runs in
 * lower_wse_int.h): the lower run's top row sends its sums on a colour of their own, which the PEs
 * of the upper run pass north (a route from the south to the north alone, which no other product's
 * PE has): *splits counts those. */
static size_t chain_cut_products(const lowered *L, uint32_t width, size_t *rows, size_t *splits)
{
    size_t products = 0;
    *rows = *splits = 0;
    for (size_t j = 0; j < L->rep.nstages; j++) {
        const ts_lower_wse_stage *s = &L->rep.stages[j];
        if (strcmp(s->what, "matmul") || s->skip)
            continue;
        size_t pes = 0, chain = 0, north = 0;
        for (size_t i = 0; i < L->prog->nstreams; i++) {
            const ts_stream *st = &L->prog->streams[i];
            const uint32_t x = st->index % width, y = st->index / width;
            if (x < s->x || x >= s->x + s->w || y < s->y || y >= s->y + s->h)
                continue;
            bool pass = false, mac = false, mov = false; /* (the PEs above a staircase's groups only route) */
            for (size_t k = 0; k < st->n; k++) {
                pass |= st->insn[k].op == WSE_OP_FMOVS && st->insn[k].a[2] == 1;
                mac |= st->insn[k].op == WSE_OP_FMACS || st->insn[k].op == WSE_OP_FMACH;
                mov |= st->insn[k].op == WSE_OP_FMOVS;
                north += st->insn[k].op == WSE_OP_ROUTE && st->insn[k].a[1] == WSE_MASK_S &&
                         st->insn[k].a[2] == WSE_MASK_N;
            }
            pes += pass;
            chain += y == s->y && !mac && mov;
        }
        ck_assert_uint_lt(pes, s->kc);
        ck_assert(chain == 0 || (chain == s->kc && s->kr >= 2 && !pes));
        products += pes > 0 || chain > 0;
        *rows += chain > 0;
        ck_assert(north == 0 || (chain > 0 && s->kr >= 8));
        *splits += north > 0;
    }
    return products;
}

/* The column groups of product s before SwiGLU's gate (a staircase: each group's columns take
 * their first MACs a row or more lower than the group's west of it): how many, and the fewest and
 * the most columns of any of them. */
static uint32_t glu_groups(const lowered *L, uint32_t width, const ts_lower_wse_stage *s, uint32_t *least,
                           uint32_t *most)
{
    uint32_t groups = 0, run = 0, prev = UINT32_MAX;
    *least = UINT32_MAX;
    *most = 0;
    for (uint32_t x = s->x; x <= s->x + s->w; x++) {
        uint32_t top = UINT32_MAX; /* the column's top PE with MACs (none past the last column) */
        for (size_t i = 0; x < s->x + s->w && i < L->prog->nstreams; i++) {
            const ts_stream *st = &L->prog->streams[i];
            const uint32_t y = st->index / width;
            if (st->index % width != x || y < s->y || y >= s->y + s->h || y >= top)
                continue;
            for (size_t k = 0; k < st->n; k++)
                if (st->insn[k].op == WSE_OP_FMACS || st->insn[k].op == WSE_OP_FMACH) {
                    top = y;
                    break;
                }
        }
        if (x < s->x + s->w)
            ck_assert_uint_ne(top, UINT32_MAX);
        if (top != prev && run) { /* a group ends */
            groups++;
            *least = run < *least ? run : *least;
            *most = run > *most ? run : *most;
            run = 0;
        }
        if (x < s->x + s->w)
            ck_assert(prev == UINT32_MAX || top >= prev); /* the staircase goes down east */
        prev = top;
        run++;
    }
    return groups;
}

/* The gpt built-in in Llama's form (RMSNorm, SwiGLU, no biases; _i 2: biases, 4 query heads on 2
 * key heads; _i 3 to 5: rotary positions, 4 query heads on 2 key heads; _i 5 planned for PEs of
 * 2,048 bytes, the rotary stage split over PEs by heads), prefill (_i 0, 2, 3, 5) and decode (_i 1,
 * 4; its rotary stage over 2 PEs, split at about 256 cycles of a PE's work): the gate and up projections are one product of their weights side by side
 * (columns interleaved, 2 x 64 of them), then one elementwise stage takes each (gate, up) pair to
 * SiLU(gate) up (two values in, one out); with rotary positions a stage before each attention
 * rotates the 32 query and 16 key columns of every row (x cos + rotate_half(x) sin at its
 * position; decode: the new token's, the cache given rotated). Logits against the double
 * interpreter within 2e-5 (1 + |y|), as test_gpt_prefill: f32 sums of at most 64 terms, the
 * sigmoid's exp and Newton reciprocal within about 1e-7 relative, as the softmax's, and the
 * rotation's two products and sum a few ulp. A decode's down products give their outputs spread,
 * through a join of a PE a part into the next RMSNorm's column (the first layer's join forking). */
START_TEST(test_gpt_swiglu)
{
    /* Under a sanitizer (TS_SANITIZED) cases 2 (a bias), 4 (rotary decode) and 5 (rotary columns
     * split by the PEs' memory) run; 0, 1 and 3 (no bias, no rotary, prefill) to the normal build */
    if (getenv("TS_SANITIZED") && _i != 2 && _i != 4 && _i != 5)
        return;
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    char spec[200];
    snprintf(spec, sizeof spec, "gpt:layers=2,hidden=32,heads=%d,kv_heads=2,ffn=64,vocab=40,seq=8,dtype=f32,"
             "norm=rmsnorm,act=swiglu,bias=%d,rope=%d,phase=%s", _i >= 2 ? 4 : 2, _i == 2, _i >= 3,
             _i == 1 || _i == 4 ? "decode" : "prefill");
    ck_assert_msg(ts_wl_builtin(spec, &g, &e) == TS_OK, "%s", e.msg);
    lowered L = {0};
    lower_sram = _i == 5 ? 2048 : 0; /* 48 rotated columns of 8 rows: 3,840 bytes of values and tables */
    lower_and_run(g, 96, 32, &L);
    lower_sram = 0;
    const int64_t M = _i == 1 || _i == 4 ? 1 : 8;
    const ts_lower_wse_stage *rot = stage_of(&L, "rotary", 0);
    ck_assert(_i >= 3 ? rot != NULL : rot == NULL);
    if (rot) { /* before the attention, the rows of the q, k and v product (32 + 16 + 16 columns) */
        ck_assert_uint_eq(rot->in_elems, (uint64_t)(M * 64));
        ck_assert_str_eq(rot[1].what, "attention");
        ck_assert_ptr_nonnull(stage_of(&L, "rotary", 1));
        ck_assert_uint_eq(rot->w, _i >= 4 ? 2 : 1);
        ck_assert_uint_le(rot->mem_bytes, _i == 5 ? 2048 : 64 * 4 + 48 * 16 + 2 * 8 * 48 * 4);
    }
    for (size_t l = 0; l < 2; l++) { /* one gate per layer: 2 x 64 values in a row, 64 out */
        const ts_lower_wse_stage *gate = NULL;
        for (size_t i = 0, seen = 0; i < L.rep.nstages && !gate; i++)
            if (!strcmp(L.rep.stages[i].what, "elementwise") && L.rep.stages[i].in_elems == 2 * L.rep.stages[i].out_elems &&
                seen++ == l)
                gate = &L.rep.stages[i];
        ck_assert_ptr_nonnull(gate);
        ck_assert_uint_eq(gate->out_elems, (uint64_t)(M * 64));
        ck_assert_str_eq(gate[-1].what, "matmul");
        ck_assert_uint_eq(gate[-1].macs, (uint64_t)(M * 32 * 128));
        /* the product's outputs leave on as many rows as the gate takes them on: its column groups
         * a row lower each (the staircase adds h - 1 rows to its kr) */
        ck_assert_uint_gt(gate->h, 1);
        ck_assert_uint_eq(gate[-1].h, gate[-1].kr + gate->h - 1);
        ck_assert_uint_eq(gate->y, gate[-1].y);
        if (M > 1) {
            ck_assert_uint_le(gate->h, gate[-1].kc);
            continue;
        }
        /* a decode: the down product takes the gate's rows' outputs on them, each gate row (step
         * rows apart, as the product's column groups) down step rows of its own: kr = rows x step */
        const ts_lower_wse_stage *d = gate + 1;
        ck_assert_str_eq(d->what, "matmul");
        ck_assert_uint_eq(d->in_elems, 64);
        const uint32_t step = d->kr + 1 - gate->h, rows = d->kr / step;
        ck_assert_uint_eq(d->kr % step, 0);
        ck_assert_uint_eq(gate->h, (rows - 1) * step + 1);
        ck_assert_uint_gt(rows, 1);
        ck_assert_uint_le(rows, gate[-1].kc);
        ck_assert_uint_eq(d->h, d->kr);
        ck_assert_uint_eq(d->y, gate->y);
        /* the product's columns cut by (gate, up) pairs: its groups even, a column apart at most */
        uint32_t least, most;
        ck_assert_uint_eq(glu_groups(&L, 96, &gate[-1], &least, &most), rows);
        ck_assert_uint_le(most, least + 1);
    }
    if (M == 1) /* a decode: every one-row product sized for latency */
        check_latency_rows(&L, 16);
    for (size_t k = 1; M == 1 && k < 4; k += 2) { /* a decode: the down products' outputs spread */
        /* each layer's second join (the first layer's forks, the second's goes to the final norm):
         * one PE on each row of the norm after it, its parts' rows, beside the down product and
         * the norm; the fork's row down its column in order (the logits check the next layer) */
        const ts_lower_wse_stage *jn = stage_of(&L, "join", k), *fn = jn ? jn + 1 : NULL;
        ck_assert_ptr_nonnull(jn);
        while (fn && strcmp(fn->what, "layernorm"))
            fn++;
        ck_assert_str_eq(jn[-1].what, "matmul");
        ck_assert_uint_eq(jn->w, 1);
        ck_assert_uint_gt(jn->h, 1);
        ck_assert_uint_eq(jn->h, fn->h);
        ck_assert_uint_eq(fn->x, jn->x + 1);
        ck_assert_uint_eq(jn->x, jn[-1].x + jn[-1].w);
        ck_assert_uint_lt(jn->mem_bytes, 32 * 4);
    }
    /* a decode: products of one chain with their columns cut unevenly for the chain; none in a prefill */
    size_t rows0, splits;
    const size_t cut = chain_cut_products(&L, 96, &rows0, &splits);
    ck_assert(M == 1 ? rows0 > 0 : rows0 == 0); /* a decode: some with a row 0 that only passes the chain */
    ck_assert(M == 1 ? cut > 0 : cut == 0);
    ck_assert(M == 1 ? splits > 0 : splits == 0); /* a decode: some whose partial sums climb in two runs */
    check_logits(g, &L, spec);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* The MACs of the PEs of a lowering's matrix products (its "matmul" stages) by opcode: binary32
 * (fmacs) and binary16 (fmach). */
static void count_macs(const lowered *L, uint32_t width, size_t *f32, size_t *f16)
{
    *f32 = *f16 = 0;
    for (size_t i = 0; i < L->prog->nstreams; i++) {
        const ts_stream *st = &L->prog->streams[i];
        const uint32_t x = st->index % width, y = st->index / width;
        bool mm = false;
        for (size_t j = 0; j < L->rep.nstages; j++) {
            const ts_lower_wse_stage *s = &L->rep.stages[j];
            mm |= !strcmp(s->what, "matmul") && x >= s->x && x < s->x + s->w && y >= s->y && y < s->y + s->h;
        }
        for (size_t k = 0; mm && k < st->n; k++) {
            *f32 += st->insn[k].op == WSE_OP_FMACS;
            *f16 += st->insn[k].op == WSE_OP_FMACH;
        }
    }
}

/* Tensor t of an f16 graph set to v(i) for each element (exact binary16 integers). */
static void set_f16(ts_graph *g, int t, int (*v)(int64_t))
{
    const int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, t));
    uint16_t *h = malloc((size_t)n * 2);
    ck_assert_ptr_nonnull(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = ts_f32_to_f16((float)v(i));
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_graph_set_data(g, t, h, (size_t)n * 2, &e) == TS_OK, "%s", e.msg);
    free(h);
}
static int mlp_x(int64_t i) { return (int)((i * 7) % 3) - 1; }
static int mlp_dense(int64_t i) { return (int)((i * 5 + i / 7) % 3) - 1; }
static int mlp_sparse(int64_t i) { return i % 4 ? 0 : (int)((i / 4) % 3) - 1; }
static int mlp_bias(int64_t i) { return (int)(i % 5) - 2; }

/* dtype=f16 (lower_wse_emit_mm.c): every matrix product in binary16, its weights and bias halves in
 * SRAM (weight rows padded to 4 halves), fmach at 4 MACs a cycle into binary16 accumulators,
 * binary16 partial sums up the columns (fmovh, faddh), row 0 widening its sums to binary32 (fh2s)
 * for the fused Relu and the stream, which stays binary32 between stages. No product's PE runs
 * fmacs (the attention's scores and sums over its cache stay binary32).
 * _i 0: the built-in MLP (Gemm, fused Relu, Gemm, fused Relu, Gemm; 4 rows of 16 inputs, 32 hidden,
 * 8 out, weights [out, in]) with integer inputs and weights in {-1, 0, 1} (fc1 dense, fc2 and fc3
 * one in four non-zero) and integer biases in [-2, 2]: every sum, partial or whole, is an integer
 * below 2,048 in magnitude (fc1 at most 18, fc2 146, fc3 1,170), exact in binary16, so the output
 * equals the reference bit for bit whatever the order of the sums: this checks the data path (the
 * halves' layout and padding, the descriptors' element sizes, the partial sums, the widening).
 * _i 1: the gpt built-in in Llama's form decoding one token against its cache of 7 (RMSNorm,
 * SwiGLU, rotary positions, 4 query heads on 2 key heads, 2 layers); _i 2: GPT-2's form decoding
 * (LayerNorm, tanh Gelu, biases). Their logits against the double interpreter of the same graph
 * (its f16 parameters widened) within 3e-2 (1 + |y|): each product rounds its input, every MAC's
 * product and every running sum to binary16 (u = 2^-11 each), over up to 64 terms a PE, so a
 * product's error is up to about sqrt(64) u = 0.4% of the sum of its terms' magnitudes in the
 * usual case, 64 u = 3% at worst, and the decoder chains five products a layer through 2 layers
 * (measured: 1.0% and 0.3% of 1 + |y| at most; a sequential binary16 emulation of the products is
 * as far from the double reference). */
START_TEST(test_f16_products)
{
    static const char *const specs[] = {
        "mlp:batch=4,in=16,hidden=32,out=8,dtype=f16",
        "gpt:layers=2,hidden=32,heads=4,kv_heads=2,ffn=64,vocab=40,seq=8,dtype=f16,norm=rmsnorm,act=swiglu,rope=1,"
        "phase=decode",
        "gpt:layers=2,hidden=32,heads=2,kv_heads=2,ffn=64,vocab=40,seq=8,dtype=f16,phase=decode",
    };
    if (getenv("TS_SANITIZED") && _i != 1)
        return;
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_msg(ts_wl_builtin(specs[_i], &g, &e) == TS_OK, "%s", e.msg);
    if (_i == 0) {
        set_f16(g, ts_graph_find(g, "x"), mlp_x);
        for (size_t i = 0; i < ts_graph_node_count(g); i++) {
            const ts_graph_node *n = ts_graph_get_node(g, (int)i);
            if (n->op != TS_OP_GEMM)
                continue;
            set_f16(g, n->in[1], strcmp(n->name, "fc1") ? mlp_sparse : mlp_dense);
            set_f16(g, n->in[2], mlp_bias);
        }
    }
    lowered L = {0};
    lower_and_run(g, 96, 32, &L);
    size_t f32 = 0, f16 = 0;
    count_macs(&L, 96, &f32, &f16);
    ck_assert_uint_eq(f32, 0);
    ck_assert_uint_gt(f16, 0);
    /* the decodes: binary16 products of one chain with their columns cut unevenly for it */
    size_t rows0, splits;
    ck_assert(_i ? chain_cut_products(&L, 96, &rows0, &splits) > 0 : chain_cut_products(&L, 96, &rows0, &splits) == 0);
    ck_assert(_i == 2 ? splits > 0 : splits == 0); /* GPT-2's form: its products of 8 rows or more */
    gref r;
    gref_run(g, &r);
    const int y = L.rep.out_tensor;
    double worst = 0;
    for (int64_t k = 0; k < ts_graph_tensor_elems(ts_graph_get_tensor(g, y)); k++) {
        double got = out_at(&L, y, (uint64_t)k), want = r.v[y][k], d = fabs(got - want) / (1 + fabs(want));
        worst = d > worst ? d : worst;
        if (_i == 0)
            ck_assert_msg(got == want && want == floor(want) && fabs(want) < 2048, "%s: y[%lld]: got %.9g, want %.9g",
                          specs[_i], (long long)k, got, want);
        else
            ck_assert_msg(d <= 3e-2, "%s: logits[%lld]: got %.9g, want %.9g", specs[_i], (long long)k, got, want);
    }
    if (getenv("LWSE_VERBOSE"))
        fprintf(stderr, "%s: worst %.3g (1 + |y|), %llu cycles\n", specs[_i], worst, (unsigned long long)L.cycles);
    gref_free(&r);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Llama's reduced form decoding one token against its cache of 7 (d 64, one layer) on PEs of 512
 * bytes: a RMSNorm's row of 64 with its scale (520 bytes) does not fit one PE, so each of the three
 * RMSNorms (the layer's two and the final one before the head) takes 2 PEs or more: the one before
 * the gate and up product 2 PEs in a row, 32 values each, their partial sums of squares added east
 * into a third PE that passes the row on raw and 1 / s after it, the product holding the norm's
 * scale in its weights and scaling its sums by 1 / s; the two before the q, k and v product and the head their parts down a
 * column, the partial sums added north and 1 / s sent back south, each part east on its own row
 * into the product's rows that take it; the gate and up product's outputs leave on 2 rows, and
 * the SwiGLU gate takes each row's pairs over PEs in a row; the first residual join on one PE that
 * keeps the skip path's row and adds the main stream to it as it comes, the second (before the
 * final norm) one PE on each of the norm's parts' rows, the down product's outputs spread. Logits against the double interpreter
 * within 2e-5 (1 + |y|), as test_gpt_prefill: the split adds a few f32 adds to the 64 squares' sum
 * (the rows of the gate and of the norms change no other value's arithmetic). */
START_TEST(test_gpt_norm_split)
{
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    const char *spec = "gpt:layers=1,hidden=64,heads=2,kv_heads=2,ffn=64,vocab=40,seq=8,dtype=f32,norm=rmsnorm,"
                       "act=swiglu,bias=0,phase=decode";
    ck_assert_msg(ts_wl_builtin(spec, &g, &e) == TS_OK, "%s", e.msg);
    lowered L = {0};
    lower_sram = 512;
    lower_and_run(g, 96, 32, &L);
    lower_sram = 0;
    for (size_t k = 0; k < 3; k++) { /* the layer's two and the final one, each over 2 PEs or more */
        const ts_lower_wse_stage *n = stage_of(&L, "layernorm", k);
        ck_assert_ptr_nonnull(n);
        ck_assert_uint_le(n->mem_bytes, 512);
        if (k == 1) { /* before the gate and up product (its outputs on column groups): in a row,
                       * its 2 parts and a PE that passes the row on raw, then 1 / s */
            ck_assert_uint_eq(n->w, 3);
            ck_assert_uint_eq(n->h, 1);
            continue;
        }
        /* before the q, k and v product and the head: its parts down a column, step rows apart,
         * each into the product's step rows on its own row (kr = parts x step) */
        const ts_lower_wse_stage *d = n + 1;
        ck_assert_str_eq(d->what, "matmul");
        ck_assert_uint_eq(n->w, 1);
        ck_assert_uint_gt(n->h, 1);
        const uint32_t step = d->kr + 1 - n->h, parts = d->kr / step;
        ck_assert_uint_eq(d->kr % step, 0);
        ck_assert_uint_eq(n->h, (parts - 1) * step + 1);
        ck_assert_uint_ge(parts, 2);
        ck_assert_uint_eq(d->y, n->y);
        ck_assert_uint_eq(d->x, n->x + 1);
    }
    ck_assert_ptr_null(stage_of(&L, "layernorm", 3));
    /* the SwiGLU gate's 64 pairs on the rows its product's outputs leave on (its column groups,
     * each lower than the one west of it), each row's split over PEs in a row: the product's
     * columns cut by (gate, up) pairs, so its groups are even (cut evenly by columns, a group
     * started only at a column whose first output was even: 2 groups) */
    const ts_lower_wse_stage *gate = stage_of(&L, "elementwise", 0);
    ck_assert_ptr_nonnull(gate);
    ck_assert_uint_gt(gate->h, 2);
    ck_assert_uint_gt(gate->w, 1);
    ck_assert_uint_eq(gate[-1].h, gate[-1].kr + gate->h - 1);
    uint32_t least, most;
    const uint32_t groups = glu_groups(&L, 96, &gate[-1], &least, &most);
    ck_assert_uint_gt(groups, 2);
    ck_assert_uint_le(most, least + 1);
    check_latency_rows(&L, 16); /* its products sized for latency */
    /* the first residual join: one PE, which takes the skip path's row of 64 into memory first,
     * then adds it to the main stream's as that comes (the two no longer share its ramp) */
    const ts_lower_wse_stage *jn = stage_of(&L, "join", 0);
    ck_assert_ptr_nonnull(jn);
    ck_assert_uint_eq(jn->w, 1);
    ck_assert_uint_eq(jn->h, 1);
    ck_assert_uint_eq(jn->mem_bytes, 64 * 4);
    /* the second, between the down product and the final RMSNorm (no fork): the down product's
     * outputs spread, a column group each of the norm's parts, each part east on its own row into
     * one PE of the join (its slice of the skip row kept) and on into the norm's PE of that part:
     * the join as tall as the norm's column, beside it, each PE keeping a part of the row */
    jn = stage_of(&L, "join", 1);
    ck_assert_ptr_nonnull(jn);
    const ts_lower_wse_stage *fn = stage_of(&L, "layernorm", 2);
    ck_assert_str_eq(jn[-1].what, "matmul");
    ck_assert_ptr_eq(jn + 1, fn);
    ck_assert_uint_eq(jn->w, 1);
    ck_assert_uint_gt(jn->h, 1);
    ck_assert_uint_eq(jn->h, fn->h);
    ck_assert_uint_eq(jn->y, fn->y);
    ck_assert_uint_eq(fn->x, jn->x + 1);
    ck_assert_uint_eq(jn->x, jn[-1].x + jn[-1].w);
    ck_assert_uint_lt(jn->mem_bytes, 64 * 4);
    check_logits(g, &L, spec);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A decode's product cut for its chain keeps row 0 for the chain alone only where its other rows,
 * taking row 0's inputs too, still hold an even cut's weights (chain_cuts): GPT-2's reduced form
 * with a head of 1,000 words on a mesh of 64 x 32 PEs of 2,048 bytes, where the head's rows fill
 * their PEs (its chain row had put 2,380 bytes on each, and GPT-2 small's decode on wse2 read past
 * a PE's SRAM at cycle 7; the lowering now also refuses any stage placed past its PEs' memory,
 * lower_wse_check.c). Every stage within 2,048 bytes, the logits as test_gpt_norm_split's. */
START_TEST(test_gpt_chain_row_fits)
{
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    const char *spec = "gpt:layers=1,hidden=64,heads=2,ffn=128,vocab=1000,seq=16,dtype=f32,phase=decode";
    ck_assert_msg(ts_wl_builtin(spec, &g, &e) == TS_OK, "%s", e.msg);
    lowered L = {0};
    lower_sram = 2048;
    lower_and_run(g, 96, 32, &L);
    lower_sram = 0;
    for (size_t i = 0; i < L.rep.nstages; i++)
        ck_assert_uint_le(L.rep.stages[i].mem_bytes, 2048);
    check_logits(g, &L, spec);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* Whether PE (x, y) of a lowering on a mesh of width columns routes colour c from port rx to a set
 * of ports that includes tx. */
static bool routes(const lowered *L, uint32_t width, uint32_t x, uint32_t y, int c, int rx, int tx)
{
    for (size_t i = 0; i < L->prog->nstreams; i++) {
        const ts_stream *st = &L->prog->streams[i];
        if (st->index != y * width + x)
            continue;
        for (size_t k = 0; k < st->n; k++)
            if (st->insn[k].op == WSE_OP_ROUTE && st->insn[k].a[0] == c && st->insn[k].a[1] == rx &&
                (st->insn[k].a[2] & tx))
                return true;
    }
    return false;
}

/* Decode against a KV cache of 63 (seq 64), GPT-2's reduced form, one layer, on PEs too small for
 * a head's positions in one K or V part. _i 0 and 1: the head's positions split in blocks, one PE
 * each down the head's column (2 heads of 16 columns on PEs of 2,304 bytes, where blocks of 16
 * would fit; 4 query heads of 8 on 2 key heads on 800 bytes, blocks of 10): each block its
 * scores, max, exp and sum and its outputs, combined by a tree up the column with the online
 * softmax's rescaling (4 levels), the top block dividing by the sum. The tree takes few levels for
 * many blocks, so blocks are small: 16 of 4 positions, as many as half the mesh's 32 rows allow.
 * _i 2: a batch of 2 sequences, each its own cache (not split), on PEs of 1,024 bytes: a K part
 * keeps one key column of both sequences' 64 positions, a V part one value column, 16 K and 16
 * V parts a head, the V parts after the first folded down the column east of the K parts: 2
 * columns a head, not 16 (the chain down that column and back up on its own colour to the next
 * head, the last head's out of the stage). Logits against the double interpreter within 2e-5
 * (1 + |y|), as test_gpt_prefill: f32 sums of at most 64 terms (a block's probabilities and
 * value rows, the blocks' rescaled sums), the exp and reciprocal within about 1e-7 relative. */
START_TEST(test_gpt_cache_fold)
{
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    char spec[160];
    const int H = _i == 1 ? 4 : 2;
    snprintf(spec, sizeof spec, "gpt:layers=1,hidden=32,heads=%d,ffn=64,kv_heads=2,vocab=40,seq=64,dtype=f32,"
             "phase=decode,batch=%d", H, _i == 2 ? 2 : 1);
    ck_assert_msg(ts_wl_builtin(spec, &g, &e) == TS_OK, "%s", e.msg);
    lowered L = {0};
    lower_sram = _i == 0 ? 2304 : _i == 1 ? 800 : 1024;
    lower_and_run(g, 96, 32, &L);
    {
        const ts_lower_wse_stage *at = stage_of(&L, "attention", 0);
        ck_assert_ptr_nonnull(at);
        ck_assert_uint_le(at->mem_bytes, lower_sram);
        if (_i < 2) { /* a column of blocks a head, each all of its columns */
            ck_assert_uint_eq(at->kr, 1);
            ck_assert_uint_eq(at->kc, 1);
            ck_assert_uint_eq(at->w, (uint32_t)H);
            ck_assert_uint_eq(at->h, 16);
            /* head q's outputs leave east on row q step of the last head's column into the output
             * product's rows [q step, (q + 1) step) (step = its kr / H), not along row 0 one head
             * after another: head 0's top block sends them east itself, the others' down their
             * column */
            const ts_lower_wse_stage *o = at + 1;
            ck_assert_str_eq(o->what, "matmul");
            ck_assert_uint_eq(o->x, at->x + at->w);
            ck_assert_uint_eq(o->kr % (uint32_t)H, 0);
            const uint32_t step = o->kr / (uint32_t)H, c = at->colour_out;
            for (uint32_t q = 0; q < (uint32_t)H; q++) {
                ck_assert(routes(&L, 96, at->x + at->w - 1, at->y + q * step, (int)c,
                                 q + 1 == (uint32_t)H ? WSE_MASK_R : WSE_MASK_W, WSE_MASK_E));
                /* (row 0 of a product cut for its chain only routes its input down to row 1) */
                ck_assert(routes(&L, 96, o->x, o->y + q * step, (int)c, WSE_MASK_W, q ? WSE_MASK_R : WSE_MASK_R | WSE_MASK_S));
                if (q)
                    ck_assert(!routes(&L, 96, at->x + q, at->y, (int)c, WSE_MASK_R, WSE_MASK_E));
            }
        } else { /* one of the head's 16 columns each, along row 0: 32 columns */
            ck_assert_uint_eq(at->kr, 16);
            ck_assert_uint_eq(at->kc, 16);
            ck_assert_uint_eq(at->w, (uint32_t)(2 * H));
            ck_assert_uint_eq(at->h, 17);
        }
    }
    lower_sram = 0;
    check_logits(g, &L, spec);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* One layer of nn.TransformerEncoderLayer (batch_first, post-LayerNorm, erf Gelu) as torch
 * exports it, on x [B, S, D]: the attention's Transpose to [S, B, D], the packed in-projection
 * (MatMul, then the bias Add), three Slices, the heads Reshaped to [S, B H, dh] and Transposed to
 * [B H, S, dh] (the keys to [B H, dh, S]), the queries divided by sqrt(dh), Q K^T, Softmax, P V,
 * Transposed back to [S, B H, dh] and Reshaped to [S B, D], the out-projection (MatMul and Add:
 * torch's Gemm), Reshaped to [S, B, D] and Transposed back to [B, S, D]; the residual, LayerNorm,
 * the feed-forward (MatMul, Add, Gelu, MatMul, Add), the residual, LayerNorm. Weights take the
 * lowering's fill. */
static int torch_encoder_layer(ts_graph *g, int x, int l, int B, int S, int D, int H, int F)
{
    const int dh = D / H;
    char nm[32];
    ts_graph_attrs a;
#define NM(fmt) (snprintf(nm, sizeof nm, "l%d." fmt, l), nm)
#define PERM(...)                                                                                 \
    (ts_graph_attrs_init(&a), a.nperm = 3, memcpy(a.perm, (int64_t[]){__VA_ARGS__}, sizeof(int64_t[3])), &a)
#define SHAPE(n, ...)                                                                             \
    (ts_graph_attrs_init(&a), a.nshape = n, memcpy(a.shape, (int64_t[]){__VA_ARGS__}, sizeof(int64_t[n])), &a)
    int sc = tensor(g, NM("scale"), TS_TENSOR_CONST, 0, NULL);
    const float sq = sqrtf((float)dh);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, sc, &sq, 4, &e), TS_OK);
    int t0 = chain(g, TS_OP_TRANSPOSE, NM("t0"), x, -1, PERM(1, 0, 2));
    int p = chain(g, TS_OP_MATMUL, NM("inproj"), t0, tensor(g, NM("w_in"), TS_TENSOR_WEIGHT, 2, (int64_t[]){D, 3 * D}),
                  NULL);
    p = chain(g, TS_OP_ADD, NM("inbias"), tensor(g, NM("b_in"), TS_TENSOR_WEIGHT, 1, (int64_t[]){3 * D}), p, NULL);
    int part[3];
    for (int r = 0; r < 3; r++) {
        ts_graph_attrs_init(&a);
        a.nslice = 3;
        for (int k = 0; k < 3; k++)
            a.starts[k] = 0, a.ends[k] = k == 0 ? S : k == 1 ? B : 3 * D, a.steps[k] = 1;
        a.starts[2] = r * D, a.ends[2] = (r + 1) * D;
        snprintf(nm, sizeof nm, "l%d.sl%d", l, r);
        int t = chain(g, TS_OP_SLICE, nm, p, -1, &a);
        snprintf(nm, sizeof nm, "l%d.rs%d", l, r);
        t = chain(g, TS_OP_RESHAPE, nm, t, -1, SHAPE(3, S, B * H, dh));
        snprintf(nm, sizeof nm, "l%d.tr%d", l, r);
        part[r] = chain(g, TS_OP_TRANSPOSE, nm, t, -1, r == 1 ? PERM(1, 2, 0) : PERM(1, 0, 2));
    }
    int q = chain(g, TS_OP_DIV, NM("qscale"), part[0], sc, NULL);
    int s = chain(g, TS_OP_MATMUL, NM("qk"), q, part[1], NULL);
    ts_graph_attrs_init(&a);
    a.axis = -1;
    int pr = chain(g, TS_OP_SOFTMAX, NM("softmax"), s, -1, &a);
    int o = chain(g, TS_OP_MATMUL, NM("pv"), pr, part[2], NULL);
    o = chain(g, TS_OP_TRANSPOSE, NM("t_o"), o, -1, PERM(1, 0, 2));
    o = chain(g, TS_OP_RESHAPE, NM("rs_o"), o, -1, SHAPE(2, S * B, D));
    o = chain(g, TS_OP_MATMUL, NM("outproj"), o, tensor(g, NM("w_out"), TS_TENSOR_WEIGHT, 2, (int64_t[]){D, D}), NULL);
    o = chain(g, TS_OP_ADD, NM("outbias"), tensor(g, NM("b_out"), TS_TENSOR_WEIGHT, 1, (int64_t[]){D}), o, NULL);
    o = chain(g, TS_OP_RESHAPE, NM("rs_b"), o, -1, SHAPE(3, S, B, D));
    o = chain(g, TS_OP_TRANSPOSE, NM("t5"), o, -1, PERM(1, 0, 2));
    int y = chain(g, TS_OP_ADD, NM("res1"), x, o, NULL);
    for (int h = 0; h < 2; h++) {
        if (h) { /* the feed-forward */
            int f = chain(g, TS_OP_MATMUL, NM("fc1"), y, tensor(g, NM("w1"), TS_TENSOR_WEIGHT, 2, (int64_t[]){D, F}),
                          NULL);
            f = chain(g, TS_OP_ADD, NM("b1"), tensor(g, NM("b1w"), TS_TENSOR_WEIGHT, 1, (int64_t[]){F}), f, NULL);
            ts_graph_attrs_init(&a);
            f = chain(g, TS_OP_GELU, NM("gelu"), f, -1, &a);
            f = chain(g, TS_OP_MATMUL, NM("fc2"), f, tensor(g, NM("w2"), TS_TENSOR_WEIGHT, 2, (int64_t[]){F, D}),
                      NULL);
            f = chain(g, TS_OP_ADD, NM("b2"), tensor(g, NM("b2w"), TS_TENSOR_WEIGHT, 1, (int64_t[]){D}), f, NULL);
            y = chain(g, TS_OP_ADD, NM("res2"), y, f, NULL);
        }
        ts_graph_attrs_init(&a);
        a.axis = -1;
        a.epsilon = 1e-5;
        int n = tensor(g, h ? NM("ln2.y") : NM("ln1.y"), TS_TENSOR_ACTIVATION, -1, NULL);
        int gm = tensor(g, h ? NM("ln2.g") : NM("ln1.g"), TS_TENSOR_WEIGHT, 1, (int64_t[]){D});
        int bt = tensor(g, h ? NM("ln2.b") : NM("ln1.b"), TS_TENSOR_WEIGHT, 1, (int64_t[]){D});
        node(g, TS_OP_LAYERNORM, h ? NM("ln2") : NM("ln1"), (int[]){y, gm, bt}, 3, n, &a);
        y = n;
    }
#undef NM
#undef PERM
#undef SHAPE
    return y;
}

/* A batch of sequences through the attention: 2 layers of torch's nn.TransformerEncoder (batch
 * first; torch_encoder_layer) at batch 2, sequence 16, d 16, 2 heads, ffn 32 (BERT's form in
 * small, the export's layout at batch 2 as bert_encoder_b4's at 4). The Transposes of [B, S, D]
 * to [S, B, D] and back move nothing: the stream stays in batch order, and the attention stage
 * takes each sequence's 16 rows one after the other (2 sequences, 2 heads of 4 PEs: 3 K parts, as
 * the pipeline time T asks for, its memory needing 1; each residual join on one PE). Its output
 * against the double interpreter (graph_ref.h) within 2e-5 (1 + |y|), as test_gpt_prefill: f32
 * sums of at most 64 terms, the softmax's exp and reciprocal and the LayerNorms' square roots
 * within about 1e-7 relative. */
START_TEST(test_attention_batch)
{
    enum { B = 2, S = 16, D = 16, H = 2, F = 32 };
    ts_graph *g = ts_graph_create("encoder_b2");
    int x = tensor(g, "hidden", TS_TENSOR_INPUT, 3, (int64_t[]){B, S, D});
    fill(g, x);
    int y = x;
    for (int l = 0; l < 2; l++)
        y = torch_encoder_layer(g, y, l, B, S, D, H, F);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 96, 32, &L);
    for (size_t i = 0; i < L.rep.nstages; i++)
        ck_assert_str_ne(L.rep.stages[i].what, "transpose"); /* the rows' Transposes move nothing */
    const ts_lower_wse_stage *at = stage_of(&L, "attention", 1);
    ck_assert_ptr_nonnull(at);
    ck_assert_uint_eq(at->w * at->h, H * 4);
    /* the residual joins: rows of 16 in 2 x 16 cycles, within T: one PE each, not 8 */
    for (int j = 0; j < 4; j++)
        ck_assert_uint_eq(stage_of(&L, "join", j)->w, 1);
    ck_assert_uint_eq(at->in_elems, (uint64_t)(B * S * 3 * D));
    ck_assert_uint_eq(at->macs, (uint64_t)(B * H * S * S * 2 * (D / H)));
    gref r;
    gref_run(g, &r);
    for (int64_t k = 0; k < B * S * D; k++) {
        double got = out_at(&L, y, (uint64_t)k), want = r.v[y][k];
        ck_assert_msg(fabs(got - want) <= 2e-5 * (1 + fabs(want)), "out[%lld]: got %.9g, want %.9g", (long long)k,
                      got, want);
    }
    gref_free(&r);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A Transpose of rows too big for a PE (x [4, 6, 8], planned for PEs of 512 bytes) moves nothing:
 * the stream keeps x's order, the Relu after it takes the rows as they come, and the sink's rows
 * are found through their order (ts_lower_wse_locate): y[s][b][c] = relu(x[b][s][c]), exact. _i 1:
 * a Slice of the first axis after it does not take rows one by one: refused, naming it. */
START_TEST(test_transpose_rows)
{
    enum { B = 4, S = 6, D = 8 };
    ts_graph *g = ts_graph_create("trows");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){B, S, D});
    fill(g, x);
    int t = transpose3(g, "t", x, 1, 0, 2);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    if (_i == 1) {
        a.nslice = 3;
        for (int k = 0; k < 3; k++)
            a.starts[k] = 0, a.ends[k] = k == 0 ? 2 : k == 1 ? B : D, a.steps[k] = 1;
    }
    int y = chain(g, _i ? TS_OP_SLICE : TS_OP_RELU, _i ? "first" : "r", t, -1, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    if (_i == 1) {
        ts_err e;
        ts_err_init(&e);
        ts_wse_target p = params(16, 4);
        p.sram_bytes = 512;
        ts_program *prog = NULL;
        ts_lower_wse_report rep = {0};
        ck_assert_int_ne(ts_lower_wse(g, &p, &prog, &rep, &e), TS_OK);
        ck_assert_msg(strstr(e.msg, "Slice 'first': its input 't.y' streams its rows in another order than its layout"),
                      "%s", e.msg);
        ts_graph_destroy(g);
        return;
    }
    lowered L = {0};
    lower_sram = 512;
    lower_and_run(g, 16, 4, &L);
    lower_sram = 0;
    ck_assert_ptr_null(stage_of(&L, "transpose", 0));
    ck_assert_ptr_nonnull(L.rep.out_rows);
    for (int s = 0; s < S; s++)
        for (int b = 0; b < B; b++)
            for (int c = 0; c < D; c++) {
                float v = val(x, (b * S + s) * D + c);
                ck_assert_float_eq(out_at(&L, y, (uint64_t)((s * B + b) * D + c)), v > 0 ? v : 0.0f);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A dilated Conv: 3x3 with dilation 2 and pad 2 (stride 1, and stride 2 by _i) on 1 x 3 x 9 x 9,
 * 4 outputs with bias: the line buffer keeps 5 rows and takes every other pixel of them. */
START_TEST(test_dilated_conv)
{
    enum { C = 3, H = 9, M = 4 };
    const int st = _i ? 2 : 1, Ho = (H + 4 - 5) / st + 1;
    ts_graph *g = ts_graph_create("dil");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, H, H});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){M, C, 3, 3});
    int b = tensor(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){M});
    fill(g, x);
    fill(g, w);
    fill(g, b);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 2;
    a.dilations[0] = a.dilations[1] = 2;
    a.strides[0] = a.strides[1] = st;
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_CONV, "conv", (int[]){x, w, b}, 3, y, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 32, 8, &L);
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Ho; ox++) {
                double t = val(b, m), sc = fabs((double)val(b, m));
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) {
                            int iy = oy * st - 2 + 2 * i, ix = ox * st - 2 + 2 * j;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= H)
                                continue;
                            double v = (double)val(x, (c * H + iy) * H + ix) * val(w, ((m * C + c) * 3 + i) * 3 + j);
                            t += v;
                            sc += fabs(v);
                        }
                uint64_t k = (uint64_t)((m * Ho + oy) * Ho + ox);
                near(out_at(&L, y, k), t, sc, "y", k);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

int main(void)
{
    arch_modes_default = ARCH_MODES_QUICK | 1u << ARCH_THREADS2;
    arch_modes_address = ARCH_MODES_FAST; /* under ASan + UBSan: tests/arch/arch_modes.h */
    Suite *s = suite_create("lower_wse_ops");
    TCase *tc = tcase_create("lower_wse_ops");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_concat_skip, 0, 2);
    tcase_add_loop_test(tc, test_elementwise, 0, 5);
    tcase_add_test(tc, test_relu6_fused);
    tcase_add_loop_test(tc, test_grouped_conv, 0, 2);
    tcase_add_test(tc, test_batch_skip);
    tcase_add_test(tc, test_broadcast);
    tcase_add_test(tc, test_slice);
    tcase_add_test(tc, test_transpose_in_place);
    tcase_add_loop_test(tc, test_transpose, 0, 3);
    tcase_add_loop_test(tc, test_layernorm, 0, 5);
    tcase_add_loop_test(tc, test_dilated_conv, 0, 2);
    tcase_add_loop_test(tc, test_attention, 0, 3);
    tcase_add_test(tc, test_attention_proj);
    tcase_add_loop_test(tc, test_gpt_prefill, 0, 4);
    tcase_add_loop_test(tc, test_gpt_swiglu, 0, 6);
    tcase_add_test(tc, test_gpt_norm_split);
    tcase_add_loop_test(tc, test_f16_products, 0, 3);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("chain_row"); /* a chain row's product within its PEs' memory */
    tcase_set_timeout(tr, 120);
    tcase_add_test(tr, test_gpt_chain_row_fits);
    suite_add_tcase(s, tr);
    TCase *tb = tcase_create("batch_gqa"); /* attention over a batch of sequences, grouped-query heads */
    tcase_set_timeout(tb, 300);
    tcase_add_test(tb, test_attention_batch);
    tcase_add_loop_test(tb, test_gpt_prefill, 4, 8);
    tcase_add_loop_test(tb, test_gpt_cache_fold, 0, 3);
    tcase_add_loop_test(tb, test_transpose_rows, 0, 2);
    suite_add_tcase(s, tb);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
