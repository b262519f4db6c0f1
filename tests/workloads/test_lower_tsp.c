/* tests/workloads/test_lower_tsp.c — the TSP lowering: graphs built through the workloads API are
 * compiled to one static schedule, run on the TSP family with hazards fatal (fast, lockstep and
 * three threads must agree byte for byte), and their int8 outputs, read back from MEM where the
 * lowering reports them, must equal a C reference bit for bit. The machine facts the lowering
 * reads (arch/tsp/tsp_target.h) must be the chip model's own. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/tsp/tsp.h"
#include "arch/tsp/tsp_target.h"
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

/* ---- the C reference (int8 NCHW, batch 1, or [M, K] matrices) ---- */

static int8_t requant(int32_t acc, float scale, bool relu)
{
    float f = (float)acc * scale;
    double r = nearbyint((double)f);
    int v = r < -128 ? -128 : r > 127 ? 127 : (int)r;
    return (int8_t)(relu && v < 0 ? 0 : v);
}

/* A graph input's values as the lowering fills them. */
static int8_t *input_of(const ts_graph *g, int id)
{
    int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, id));
    int8_t *v = ts_calloc((size_t)n, 1);
    for (int64_t i = 0; i < n; i++)
        v[i] = ts_fill_i8(id, (uint64_t)i);
    return v;
}

/* y[n][m] (NCHW output, m = pixel) of a convolution. */
static int8_t *ref_conv(const int8_t *x, int C, int H, int W, int wid, int bid, int M, int k, int stride, int pad,
                        bool relu, int *Ho, int *Wo)
{
    *Ho = (H + 2 * pad - k) / stride + 1;
    *Wo = (W + 2 * pad - k) / stride + 1;
    int8_t *y = ts_calloc((size_t)M * *Ho * *Wo, 1);
    float s = ts_lower_tsp_scale((uint64_t)C * k * k);
    for (int n = 0; n < M; n++)
        for (int oy = 0; oy < *Ho; oy++)
            for (int ox = 0; ox < *Wo; ox++) {
                int32_t acc = bid >= 0 ? ts_fill_bias(bid, (uint64_t)n) : 0;
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= W)
                                continue;
                            acc += (int32_t)x[((size_t)c * H + iy) * W + ix] *
                                   ts_fill_i8(wid, (((uint64_t)n * C + c) * k + ky) * k + kx);
                        }
                y[((size_t)n * *Ho + oy) * *Wo + ox] = requant(acc, s, relu);
            }
    return y;
}

/* ---- compiling and running ---- */

/* The stock tsp_v1: queues longer than icu.queue_capacity (128) are refilled by ifetch. */
static const char *const *const run_sets = NULL;

static ts_status compile(const ts_graph *g, ts_program **prog, ts_lower_tsp_report *rep, ts_err *e)
{
    void *cfg = tsp_test_config("tsp_v1", run_sets);
    ts_lower_tsp_params p;
    ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, e), TS_OK);
    ts_status rc = ts_lower_tsp(g, &p, prog, rep, e);
    ts_config_destroy(cfg);
    return rc;
}

static void lower_and_run(const ts_graph *g, lowered *out)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(compile(g, &out->prog, &out->rep, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    if (getenv("TS_LOWER_DUMP")) { /* for debugging: the schedule as assembly */
        ts_buf b = TS_BUF_INIT;
        ts_err_init(&e);
        if (ts_disasm(out->prog, ts_tsp_family.isa, &b, &e) == TS_OK) {
            FILE *f = fopen(getenv("TS_LOWER_DUMP"), "w");
            if (f) {
                fwrite(b.data, 1, b.len, f);
                fclose(f);
            }
        }
        ts_buf_free(&b);
        ts_err_free(&e);
    }
    tsp_test_run2("tsp_v1", run_sets, out->prog, &out->run);
    static const char *const kinds[] = {"stream_collision", "no_value", "bank_conflict", "queue_underrun", "resource"};
    for (int k = 0; k < 5; k++) {
        char name[64];
        snprintf(name, sizeof name, "hazards.%s", kinds[k]);
        ck_assert_double_eq(tsp_stat(&out->run, name), 0);
    }
}

/* The value the run left for element (pixel, channel) of a tensor. */

/* How many lines of the program's assembly start (after their indent) with text. */
static int count_insns(const ts_program *prog, const char *text)
{
    ts_buf b = TS_BUF_INIT;
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_disasm(prog, ts_tsp_family.isa, &b, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    int n = 0;
    size_t len = strlen(text);
    for (size_t i = 0; i < b.len;) {
        const char *line = (const char *)b.data + i, *end = memchr(line, '\n', b.len - i);
        size_t ll = end ? (size_t)(end - line) : b.len - i;
        while (ll && (*line == ' ' || *line == '\t'))
            line++, ll--;
        if (ll >= len && memcmp(line, text, len) == 0)
            n++;
        i = end ? (size_t)(end - (const char *)b.data) + 1 : b.len;
    }
    ts_buf_free(&b);
    return n;
}

/* ---- tests ---- */

/* The graph Y[M, N] = A[M, K] x B[K, N] in int8: its tensors a, b, y are 0, 1, 2. */
static ts_graph *matmul_graph(int M, int K, int N)
{
    ts_graph *g = ts_graph_create("mm");
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, N});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ck_assert(a == 0 && b == 1 && y == 2);
    node(g, TS_OP_MATMUL, "mm", (int[]){a, b}, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    return g;
}

/* matmul_graph's Y as run, bit-exact against the C reference, and the MXM's MACs those of the
 * layer's passes. */
static void check_matmul(const lowered *l, ts_graph *g, int M, int K, int N)
{
    float s = ts_lower_tsp_scale(K);
    int8_t *av = input_of(g, 0);
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += av[m * K + k] * ts_fill_i8(1, (uint64_t)k * N + n);
            int8_t want = requant(acc, s, false), have = got(l, 2, (uint32_t)m, (uint32_t)n);
            if (want != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, n, have, want);
        }
    ck_assert_int_eq(bad, 0);
    ck_assert_double_eq(tsp_stat(&l->run, "mxm.macs"), (double)l->rep.layers[0].passes * 320 * 320);
    ts_free(av);
}

/* Y = A x B with K and N over one vector (two blocks each: partial sums through MEM). */
START_TEST(test_matmul)
{
    const int M = 5, K = 400, N = 350;
    ts_graph *g = matmul_graph(M, K, N);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 1);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 4);
    ck_assert_uint_eq(l.rep.layers[0].passes, 4 * M);
    /* the blocks alternate between the planes: each plane's first block is read by 20 iw (nothing
     * streams yet to overlap), its second fills the weight buffer with 20 lw while the plane still
     * streams the first and is copied by one iw nul */
    ck_assert_int_eq(count_insns(l.prog, "iw i8, s0w,"), 2 * 20);
    ck_assert_int_eq(count_insns(l.prog, "lw i8, s0w,"), 2 * 20);
    ck_assert_int_eq(count_insns(l.prog, "iw i8, nul"), 2);
    check_matmul(&l, g, M, K, N);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* The abc each plane issues (W0, W1, E0, E1): plane pl's are on queue q_mxm + mxm_queues pl + 1. */
static void plane_abcs(const lowered *l, uint32_t abc[4])
{
    ts_lower_tsp_params p = v1_params();
    int op_abc = ts_isa_find(ts_tsp_family.isa, "abc", 3);
    for (int pl = 0; pl < 4; pl++)
        abc[pl] = 0;
    for (size_t k = 0; k < l->prog->nstreams; k++)
        for (int pl = 0; pl < 4; pl++)
            if (l->prog->streams[k].index == p.target.q_mxm + p.target.mxm_queues * (uint32_t)pl + 1)
                for (uint32_t i = 0; i < l->prog->streams[k].n; i++)
                    abc[pl] += l->prog->streams[k].insn[i].op == op_abc;
}

/* A MatMul of 256 rows (blocks of 256 passes or more go on all four planes): the east planes take
 * every other pair of passes, their rows from a copy in the east MEM flowing east (iw and lw of s0e),
 * their activations from the west MEM eastward past the VXM, their products back westward to it;
 * partial sums through both halves of the reduction, bit-exact. */
START_TEST(test_east_planes)
{
    const int M = 256, K = 400, N = 350;
    ts_graph *g = matmul_graph(M, K, N);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 4 * 4); /* 2 x 2 blocks, each on four planes */
    ck_assert_uint_eq(l.rep.layers[0].passes, 4 * M);
    ck_assert_int_gt(count_insns(l.prog, "iw i8, s0e,") + count_insns(l.prog, "lw i8, s0e,"), 0);
    uint32_t abc[4];
    plane_abcs(&l, abc);
    for (int pl = 0; pl < 4; pl++)
        ck_assert_uint_eq(abc[pl], M); /* a quarter of the 4 M passes each */
    check_matmul(&l, g, M, K, N);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* A 1x1 conv of two reduction blocks (330 channels, written by a first conv) on H x H pixels, with the
 * east copy: its blocks on a pair of planes each (W0 and W1, E0 and E1), a pixel's two products added
 * on the VXM, no partial sums; bit-exact against the C reference. Of one output tile (16 channels,
 * 256 pixels): the pixels alternate between the pairs. Of two (400 channels, 144 pixels): a tile on
 * each pair. Of four reduction blocks (1,200 channels to 400, 144 pixels, two tiles): block j on plane
 * j, one tile after the other. */
static void conv1x1_pairs(int H, int M1, int M2)
{
    ts_graph *g = ts_graph_create("conv1x1");
    const int C = 2, W = H, NT = (M2 + 319) / 320;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M1, C, 1, 1});
    int b1 = tensor_dt(g, "b1", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){M1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M2, M1, 1, 1});
    int b2 = tensor_dt(g, "b2", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){M2});
    int h = tensor_dt(g, "h", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int r = tensor_dt(g, "r", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int z = tensor_dt(g, "z", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    node(g, TS_OP_CONV, "c1", (int[]){x, w1, b1}, 3, h, &a);
    node(g, TS_OP_RELU, "relu1", (int[]){h}, 1, r, NULL);
    node(g, TS_OP_CONV, "c2", (int[]){r, w2, b2}, 3, z, &a);
    node(g, TS_OP_RELU, "relu2", (int[]){z}, 1, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    /* c2: one install of each block on each pair's planes (4), not each block on the four planes (8);
     * of two tiles, each tile's two blocks on its pair alone (4) */
    ck_assert_uint_eq(l.rep.nlayers, 4);
    ck_assert_uint_eq(l.rep.layers[2].blocks, (uint32_t)(M1 > 960 ? 4 * NT : 4));
    ck_assert_uint_eq(l.rep.layers[2].passes, (uint32_t)((M1 + 319) / 320 * NT * H * W));
    if (M1 > 960) { /* c2's four blocks, block j on plane j: NT H W abc each; c1 (host im2col) 2 H W on W0, W1 */
        uint32_t abc[4];
        plane_abcs(&l, abc);
        for (int pl = 0; pl < 4; pl++)
            ck_assert_uint_eq(abc[pl], (uint32_t)((pl < 2 ? 2 + NT : NT) * H * W));
    } else if (NT > 1) {
        uint32_t abc[4];
        plane_abcs(&l, abc); /* c1 (2 tiles, west) 144 on W0 and W1; c2's tile 0 on W0, W1, tile 1 on E0, E1 */
        for (int pl = 0; pl < 4; pl++)
            ck_assert_uint_eq(abc[pl], (uint32_t)(pl < 2 ? 2 * H * W : H * W));
    }
    int8_t *xv = input_of(g, x);
    int Ho, Wo;
    int8_t *rv = ref_conv(xv, C, H, W, w1, b1, M1, 1, 1, 0, true, &Ho, &Wo);
    int8_t *yv = ref_conv(rv, M1, H, W, w2, b2, M2, 1, 1, 0, true, &Ho, &Wo);
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, y, yv, M2, Ho * Wo, &pos, &nz), 0);
    ck_assert_int_gt(pos, M2 * Ho * Wo / 10); /* the values are not all clipped (12 to 24 % are positive) */
    ts_free(xv);
    ts_free(rv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}

START_TEST(test_conv1x1_pairs)
{
    if (getenv("TS_SANITIZED")) /* under a sanitizer its paths run in test_conv1x1_quads (docs/testing.md) */
        return;
    conv1x1_pairs(16, 330, 16);
}
END_TEST

START_TEST(test_conv1x1_pairs_tiles)
{
    if (getenv("TS_SANITIZED")) /* under a sanitizer its paths run in test_conv1x1_quads (docs/testing.md) */
        return;
    conv1x1_pairs(12, 330, 400);
}
END_TEST

START_TEST(test_conv1x1_quads)
{
    conv1x1_pairs(12, 1200, 400);
}
END_TEST

/* A 1x1 conv of one reduction block and M2 / 320 output tiles (64 -> M2 channels) on 144 pixels, its
 * blocks in turn on the planes, one install a tile; bit-exact. Of two tiles: on the west planes alone,
 * W0 and W1, not each block on both. Of four: with the east copy, a tile on each of the four planes
 * (144 passes each). */
static void conv1x1_turns(int M2)
{
    ts_graph *g = ts_graph_create("conv1x1_turns");
    const int C = 2, H = 12, W = 12, M1 = 64, NT = (M2 + 319) / 320;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M1, C, 1, 1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M2, M1, 1, 1});
    int b2 = tensor_dt(g, "b2", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){M2});
    int h = tensor_dt(g, "h", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int r = tensor_dt(g, "r", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    node(g, TS_OP_CONV, "c1", (int[]){x, w1}, 2, h, &a);
    node(g, TS_OP_RELU, "relu1", (int[]){h}, 1, r, NULL);
    node(g, TS_OP_CONV, "c2", (int[]){r, w2, b2}, 3, y, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 3);
    ck_assert_uint_eq(l.rep.layers[2].blocks, (uint32_t)NT); /* one install a tile, not each on several planes */
    ck_assert_uint_eq(l.rep.layers[2].passes, (uint32_t)(NT * H * W));
    uint32_t abc[4];
    plane_abcs(&l, abc);
    for (int pl = 0; pl < 4; pl++) /* c1 (one block, 144 passes) on both west planes: 72 each */
        ck_assert_uint_eq(abc[pl], (pl < 2 ? H * W / 2 : 0) + (NT >= 4 || pl < 2 ? NT * H * W / (NT >= 4 ? 4 : 2) : 0));
    /* every final pass multiplies by the scale kept in an ALU's latch (lt_kept_in), not read from the
     * east MEM each time; a latch is loaded by one mask, 4 at most a product (LT_KEPT_MAX) for the
     * scale and as many for c1's bias (of zeros: one tile) */
    ts_lower_tsp_params p = v1_params();
    const ts_isa *isa = ts_tsp_family.isa;
    int op_mul = ts_isa_find(isa, "mul", 3), op_mask = ts_isa_find(isa, "mask", 4);
    uint32_t muls = 0, masks = 0;
    for (size_t k = 0; k < l.prog->nstreams; k++) {
        uint32_t q = l.prog->streams[k].index;
        if (q < p.target.q_vxm || q >= p.target.q_vxm + p.target.vxm_alus)
            continue;
        for (uint32_t i = 0; i < l.prog->streams[k].n; i++) {
            const ts_insn *in = &l.prog->streams[k].insn[i];
            if (in->op == op_mul) {
                ck_assert_int_ge(in->a[3], p.target.reg.alu);
                ck_assert_int_lt(in->a[3], p.target.reg.alu + (int32_t)p.target.vxm_alus);
                muls++;
            }
            masks += in->op == op_mask;
        }
    }
    ck_assert_uint_eq(muls, (uint32_t)(H * W + NT * H * W));
    ck_assert_uint_ge(masks, 3);
    ck_assert_uint_le(masks, 3 * 4);
    /* c2's passes: add of the bias (one a tile, read from the east MEM), cvt, mul, cvt */
    ck_assert_uint_ge(l.rep.layers[2].vxm_ops, 4 * l.rep.layers[2].passes + 1);
    ck_assert_uint_le(l.rep.layers[2].vxm_ops, 4 * l.rep.layers[2].passes + 4);
    int8_t *xv = input_of(g, x);
    int Ho, Wo;
    int8_t *rv = ref_conv(xv, C, H, W, w1, -1, M1, 1, 1, 0, true, &Ho, &Wo);
    int8_t *yv = ref_conv(rv, M1, H, W, w2, b2, M2, 1, 1, 0, false, &Ho, &Wo);
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, y, yv, M2, Ho * Wo, &pos, &nz), 0);
    ck_assert_int_gt(nz, M2 * Ho * Wo / 4);
    ts_free(xv);
    ts_free(rv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}

START_TEST(test_conv1x1_turns)
{
    if (getenv("TS_SANITIZED")) /* under a sanitizer its paths run in test_conv1x1_turns_east (docs/testing.md) */
        return;
    conv1x1_turns(400);
}
END_TEST

START_TEST(test_conv1x1_turns_east)
{
    conv1x1_turns(1200);
}
END_TEST

/* A 3x3 conv (pad 1) of 330 channels, so 18 reduction blocks (tap-major: a tap's two channel tiles),
 * on 6 x 6 pixels (fewer than QUAD_PASSES: once on the west planes alone), with the east copy: blocks
 * 0 and 1 in a west pair, then four by four on W0, W1, E0, E1 at once (products.c, kquad_block), one
 * partial sum a pixel for four blocks; each block installed once; a pixel passes a quad where one of
 * its four blocks has an input (the others the word of zeros). Bit-exact. */
START_TEST(test_conv3x3_kquads)
{
    ts_graph *g = ts_graph_create("conv3x3_kquads");
    const int C = 330, H = 6, W = 6, M = 16;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 3, 3});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){M});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    node(g, TS_OP_CONV, "c", (int[]){x, w, b}, 3, y, &a);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 1);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 18);
    /* the pixels of each quad (taps 1-2, 3-4, 5-6, 7-8): those with one of its taps inside the image */
    uint32_t quads = 0, pair = 0;
    for (int q = 0; q < 4; q++)
        for (int p = 0; p < H * W; p++) {
            bool in = false;
            for (int t = 1 + 2 * q; t <= 2 + 2 * q; t++) {
                int iy = p / W - 1 + t / 3, ix = p % W - 1 + t % 3;
                in = in || (iy >= 0 && ix >= 0 && iy < H && ix < W);
            }
            quads += in;
        }
    for (int p = 0; p < H * W; p++) /* tap 0's two blocks */
        pair += p / W > 0 && p % W > 0;
    uint32_t abc[4];
    plane_abcs(&l, abc);
    ck_assert_uint_eq(abc[0], quads + pair);
    ck_assert_uint_eq(abc[1], quads + pair);
    ck_assert_uint_eq(abc[2], quads);
    ck_assert_uint_eq(abc[3], quads);
    ck_assert_uint_eq(l.rep.layers[0].passes, 4 * quads + 2 * pair);
    int8_t *xv = input_of(g, x);
    int Ho, Wo;
    int8_t *yv = ref_conv(xv, C, H, W, w, b, M, 3, 1, 1, false, &Ho, &Wo);
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, y, yv, M, Ho * Wo, &pos, &nz), 0);
    ck_assert_int_gt(nz, M * Ho * Wo / 2);
    ts_free(xv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* An int32 bias with data: channel n gets (n k mod 41 - 20) x step, large enough that many of the
 * requantised values saturate. */
static int bias_data(ts_graph *g, const char *name, int N, int k, int32_t step, int32_t *v)
{
    int id = tensor_dt(g, name, TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){N});
    for (int n = 0; n < N; n++)
        v[n] = (n * k % 41 - 20) * step;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, id, v, (size_t)N * 4, &e), TS_OK);
    return id;
}

/* y[n P + p] (NCHW, P pixels) of a 1x1 conv of x (C channels) with weight wid and bias b (NULL: none),
 * requantised; *pre the rounded value before the saturation (NULL: not wanted). */
static int8_t *ref_conv1x1(const int8_t *x, int C, int P, int wid, const int32_t *b, int M, bool relu, int *pre)
{
    int8_t *y = ts_calloc((size_t)M * P, 1);
    float s = ts_lower_tsp_scale((uint64_t)C);
    for (int n = 0; n < M; n++)
        for (int p = 0; p < P; p++) {
            int32_t acc = b ? b[n] : 0;
            for (int c = 0; c < C; c++)
                acc += (int32_t)x[(size_t)c * P + p] * ts_fill_i8(wid, (uint64_t)n * C + c);
            if (pre)
                pre[(size_t)n * P + p] = (int)nearbyint((double)((float)acc * s));
            y[(size_t)n * P + p] = requant(acc, s, relu);
        }
    return y;
}

static int8_t sat8(int v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }

/* The Add of a product's output and a tensor already in MEM, fused into the product's final passes
 * (products.c, fused_add): conv c2's int8 value plus the conv's input h, saturating, then the Add's
 * Relu; conv c3's plus its input sr (the operand given first), no Relu; a MatMul of two output tiles
 * (partial sums) plus its input a. Every value bit-exact against the C reference, which rounds and
 * saturates the product's value to int8 before the saturating add (values past -128 before the add
 * that land inside the range after it prove the order); the Adds have no instructions of their own,
 * and the products issue one `adds` per output vector. */
START_TEST(test_fused_add)
{
    ts_graph *g = ts_graph_create("fadd");
    const int C = 16, H = 6, W = 6, P = H * W, M = 48, R = 8, K = 330;
    int32_t b1v[48], b2v[48];
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 1, 1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, M, 1, 1});
    int w3 = tensor_dt(g, "w3", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, M, 1, 1});
    int b1 = bias_data(g, "b1", M, 37, 300, b1v), b2 = bias_data(g, "b2", M, 29, 600, b2v);
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){R, K});
    int bm = tensor_dt(g, "bm", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){K, K});
    int t[9];
    const char *nm[9] = {"c1", "h", "q", "s", "sr", "u", "z", "v", "va"};
    for (int i = 0; i < 9; i++)
        t[i] = tensor_dt(g, nm[i], TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_CONV, "conv1", (int[]){x, w1, b1}, 3, t[0], NULL);
    node(g, TS_OP_RELU, "relu1", (int[]){t[0]}, 1, t[1], NULL);
    node(g, TS_OP_CONV, "conv2", (int[]){t[1], w2, b2}, 3, t[2], NULL);
    node(g, TS_OP_ADD, "add2", (int[]){t[2], t[1]}, 2, t[3], NULL);
    node(g, TS_OP_RELU, "relu2", (int[]){t[3]}, 1, t[4], NULL);
    node(g, TS_OP_CONV, "conv3", (int[]){t[4], w3}, 2, t[5], NULL);
    node(g, TS_OP_ADD, "add3", (int[]){t[4], t[5]}, 2, t[6], NULL);
    node(g, TS_OP_MATMUL, "mm", (int[]){a, bm}, 2, t[7], NULL);
    node(g, TS_OP_ADD, "addm", (int[]){t[7], a}, 2, t[8], NULL);
    ts_graph_mark_output(g, t[4]);
    ts_graph_mark_output(g, t[6]);
    ts_graph_mark_output(g, t[8]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *xv = input_of(g, x), *av = input_of(g, a);
    int8_t *h = ref_conv1x1(xv, C, P, w1, b1v, M, true, NULL);
    int *pre = ts_calloc((size_t)M * P, sizeof *pre);
    int8_t *q = ref_conv1x1(h, M, P, w2, b2v, M, false, pre);
    int8_t *sr = ts_calloc((size_t)M * P, 1), *z = ts_calloc((size_t)M * P, 1), *va = ts_calloc((size_t)R * K, 1);
    int order = 0; /* values where adding before the saturation would differ */
    for (int i = 0; i < M * P; i++) {
        int v = sat8(q[i] + h[i]);
        sr[i] = (int8_t)(v < 0 ? 0 : v);
        order += sat8(pre[i] + h[i]) != sat8(q[i] + h[i]);
    }
    int8_t *u = ref_conv1x1(sr, M, P, w3, NULL, M, false, NULL);
    for (int i = 0; i < M * P; i++)
        z[i] = sat8(sr[i] + u[i]);
    float s = ts_lower_tsp_scale(K);
    for (int r = 0; r < R; r++)
        for (int n = 0; n < K; n++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++)
                acc += av[r * K + k] * ts_fill_i8(bm, (uint64_t)k * K + n);
            va[r * K + n] = sat8(requant(acc, s, false) + av[r * K + n]);
        }
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, t[4], sr, M, P, &pos, &nz), 0);
    ck_assert_int_gt(pos, M * P / 4);
    ck_assert_int_gt(order, 0);
    ck_assert_int_eq(diff_conv(&l, t[6], z, M, P, &pos, &nz), 0);
    ck_assert_int_gt(nz, M * P / 2);
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int n = 0; n < K; n++) {
            int8_t have = got(&l, t[8], (uint32_t)r, (uint32_t)n);
            if (have != va[r * K + n] && bad++ < 5)
                fprintf(stderr, "va[%d][%d] = %d, want %d\n", r, n, have, va[r * K + n]);
        }
    ck_assert_int_eq(bad, 0);
    for (size_t i = 0; i < l.rep.nlayers; i++) { /* the Adds and the Relu after one: fused */
        const ts_graph_node *nd = ts_graph_get_node(g, l.rep.layers[i].node);
        if (nd->op == TS_OP_ADD || !strcmp(nd->name, "relu2"))
            ck_assert_msg(l.rep.layers[i].first == 0 && l.rep.layers[i].last == 0 && l.rep.layers[i].vxm_ops == 0,
                          "%s has instructions of its own", nd->name);
    }
    ck_assert_int_eq(count_insns(l.prog, "adds"), 2 * P + 2 * R);
    ts_free(xv);
    ts_free(av);
    ts_free(h);
    ts_free(pre);
    ts_free(q);
    ts_free(sr);
    ts_free(u);
    ts_free(z);
    ts_free(va);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Gemm with transB and a bias, fused Relu. */
START_TEST(test_gemm_relu)
{
    ts_graph *g = ts_graph_create("gemm");
    const int M = 2, K = 300, N = 200;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, K});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){N, K});
    int c = tensor_dt(g, "c", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){N});
    int h = tensor_dt(g, "h", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc", (int[]){a, b, c}, 3, h, &at);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    float s = ts_lower_tsp_scale(K);
    int8_t *av = input_of(g, a);
    int bad = 0, pos = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t acc = ts_fill_bias(c, (uint64_t)n);
            for (int k = 0; k < K; k++)
                acc += av[m * K + k] * ts_fill_i8(b, (uint64_t)n * K + k);
            int8_t want = requant(acc, s, true), have = got(&l, y, (uint32_t)m, (uint32_t)n);
            pos += want > 0;
            if (want != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", m, n, have, want);
        }
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(pos, M * N / 4); /* the values are not all clipped */
    ts_free(av);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* conv 3x3 (input laid out by the host) + relu, then a strided 3x3 conv with padding read by
 * address from MEM (9 taps: partial sums through MEM, zero vectors skipped at the borders). */
START_TEST(test_conv)
{
    ts_graph *g = ts_graph_create("conv");
    const int C = 3, H = 9, W = 7, M1 = 24, M2 = 40;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M1, C, 3, 3});
    int b1 = tensor_dt(g, "b1", TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){M1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M2, M1, 3, 3});
    int h = tensor_dt(g, "h", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int r = tensor_dt(g, "r", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs a1, a2;
    ts_graph_attrs_init(&a1);
    a1.pads[0] = a1.pads[1] = a1.pads[2] = a1.pads[3] = 1;
    a2 = a1;
    a2.strides[0] = a2.strides[1] = 2;
    node(g, TS_OP_CONV, "c1", (int[]){x, w1, b1}, 3, h, &a1);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, r, NULL);
    node(g, TS_OP_CONV, "c2", (int[]){r, w2}, 2, y, &a2);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 3);
    ck_assert_uint_eq(l.rep.layers[0].blocks, 1);
    ck_assert_uint_eq(l.rep.layers[2].blocks, 9);
    /* c1's bias rides in its block (K = 27: lanes past 27 of every im2col row hold 1), so each pass's
     * VXM chain is cvt, mul, cvt, relu: no add of a bias read from the east MEM; and a mask for each
     * latch its scale is kept in (lt_kept_in: 4 at most) */
    ck_assert_uint_ge(l.rep.layers[0].vxm_ops, 4 * l.rep.layers[0].passes + 1);
    ck_assert_uint_le(l.rep.layers[0].vxm_ops, 4 * l.rep.layers[0].passes + 4);
    int8_t *xv = input_of(g, x);
    int Ho, Wo, Ho2, Wo2;
    int8_t *hv = ref_conv(xv, C, H, W, w1, b1, M1, 3, 1, 1, true, &Ho, &Wo);
    int8_t *yv = ref_conv(hv, M1, Ho, Wo, w2, -1, M2, 3, 2, 1, false, &Ho2, &Wo2);
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, y, yv, M2, Ho2 * Wo2, &pos, &nz), 0);
    ck_assert_int_gt(nz, M2 * Ho2 * Wo2 / 2);
    ts_free(xv);
    ts_free(hv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* The C reference of a 3 x 3 MaxPool of stride 2, padding 1: C planes of H x W int8. */
static int8_t *ref_maxpool3(const int8_t *x, int C, int H, int W, int *Ho, int *Wo)
{
    *Ho = (H + 2 - 3) / 2 + 1;
    *Wo = (W + 2 - 3) / 2 + 1;
    int8_t *y = ts_calloc((size_t)C * *Ho * *Wo, 1);
    for (int c = 0; c < C; c++)
        for (int oy = 0; oy < *Ho; oy++)
            for (int ox = 0; ox < *Wo; ox++) {
                int v = -128;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                        if (iy >= 0 && ix >= 0 && iy < H && ix < W && x[((size_t)c * H + iy) * W + ix] > v)
                            v = x[((size_t)c * H + iy) * W + ix];
                    }
                y[((size_t)c * *Ho + oy) * *Wo + ox] = (int8_t)v;
            }
    return y;
}

/* The lanes of 1 (ones_lanes, bias_lanes): c1 on host im2col (its bias in its block) writes 1s past
 * its 24 channels, which the MaxPool keeps, so the two 1 x 1 Convs that read it (c2, written in slots
 * for c3's packed taps, and d) take their biases in their blocks; c3 (packed) writes 1s from its
 * bias vector for c4. Every output bit-exact against the C reference, and the 1 x 1 Convs' passes
 * add no bias on the VXM: cvt, mul, cvt (and Relu), with a mask for each latch their scale is kept
 * in (4 at most). */
START_TEST(test_bias_ones)
{
    ts_graph *g = ts_graph_create("ones");
    const int C = 3, H = 12, W = 10, M1 = 24, M2 = 40, M3 = 32, M4 = 48, M5 = 20;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w[5], b[5];
    const int Ms[5] = {M1, M2, M3, M4, M5}, Cs[5] = {C, M1, M2, M3, M1}, ks[5] = {3, 1, 3, 1, 1};
    for (int i = 0; i < 5; i++) {
        char wn[16], bn[16];
        snprintf(wn, sizeof wn, "w%d", i + 1);
        snprintf(bn, sizeof bn, "b%d", i + 1);
        w[i] = tensor_dt(g, wn, TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){Ms[i], Cs[i], ks[i], ks[i]});
        b[i] = tensor_dt(g, bn, TS_TENSOR_WEIGHT, TS_DT_I32, 1, (int64_t[]){Ms[i]});
    }
    const char *an[9] = {"h1", "r1", "p", "h2", "r2", "h3", "r3", "y1", "y2"};
    int t[9];
    for (int i = 0; i < 9; i++)
        t[i] = tensor_dt(g, an[i], TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs pad1, one, mp;
    ts_graph_attrs_init(&pad1);
    ts_graph_attrs_init(&one);
    pad1.pads[0] = pad1.pads[1] = pad1.pads[2] = pad1.pads[3] = 1;
    mp = pad1;
    mp.kernel[0] = mp.kernel[1] = 3;
    mp.strides[0] = mp.strides[1] = 2;
    node(g, TS_OP_CONV, "c1", (int[]){x, w[0], b[0]}, 3, t[0], &pad1);
    node(g, TS_OP_RELU, "relu1", (int[]){t[0]}, 1, t[1], NULL);
    node(g, TS_OP_MAXPOOL, "mp", (int[]){t[1]}, 1, t[2], &mp);
    node(g, TS_OP_CONV, "c2", (int[]){t[2], w[1], b[1]}, 3, t[3], &one);
    node(g, TS_OP_RELU, "relu2", (int[]){t[3]}, 1, t[4], NULL);
    node(g, TS_OP_CONV, "c3", (int[]){t[4], w[2], b[2]}, 3, t[5], &pad1);
    node(g, TS_OP_RELU, "relu3", (int[]){t[5]}, 1, t[6], NULL);
    node(g, TS_OP_CONV, "c4", (int[]){t[6], w[3], b[3]}, 3, t[7], &one);
    node(g, TS_OP_CONV, "d", (int[]){t[2], w[4], b[4]}, 3, t[8], &one);
    ts_graph_mark_output(g, t[7]);
    ts_graph_mark_output(g, t[8]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 9);
    const int one_by_one[3] = {3, 7, 8}, relu[3] = {1, 0, 0};
    for (int i = 0; i < 3; i++) {
        const ts_lower_tsp_layer *ly = &l.rep.layers[one_by_one[i]];
        uint64_t per = 3 + (uint64_t)relu[i];
        ck_assert_uint_gt(ly->passes, 0);
        ck_assert_uint_ge(ly->vxm_ops, per * ly->passes);
        ck_assert_uint_le(ly->vxm_ops, per * ly->passes + 4);
    }
    int8_t *xv = input_of(g, x);
    int H1, W1, Hp, Wp, H2, W2, H3, W3, H4, W4, H5, W5;
    int8_t *r1 = ref_conv(xv, C, H, W, w[0], b[0], M1, 3, 1, 1, true, &H1, &W1);
    int8_t *pv = ref_maxpool3(r1, M1, H1, W1, &Hp, &Wp);
    int8_t *r2 = ref_conv(pv, M1, Hp, Wp, w[1], b[1], M2, 1, 1, 0, true, &H2, &W2);
    int8_t *r3 = ref_conv(r2, M2, H2, W2, w[2], b[2], M3, 3, 1, 1, true, &H3, &W3);
    int8_t *y1 = ref_conv(r3, M3, H3, W3, w[3], b[3], M4, 1, 1, 0, false, &H4, &W4);
    int8_t *y2 = ref_conv(pv, M1, Hp, Wp, w[4], b[4], M5, 1, 1, 0, false, &H5, &W5);
    int pos, nz;
    ck_assert_int_eq(diff_conv(&l, t[7], y1, M4, H4 * W4, &pos, &nz), 0);
    ck_assert_int_gt(nz, M4 * H4 * W4 / 2);
    ck_assert_int_eq(diff_conv(&l, t[8], y2, M5, H5 * W5, &pos, &nz), 0);
    ck_assert_int_gt(nz, M5 * H5 * W5 / 2);
    int8_t *bufs[7] = {xv, r1, pv, r2, r3, y1, y2};
    for (int i = 0; i < 7; i++)
        ts_free(bufs[i]);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* A residual tail: conv+relu, maxpool, add with a second branch + relu, global average pool,
 * flatten, gemm (the shapes ResNet-50 ends with, small). */
START_TEST(test_block)
{
    ts_graph *g = ts_graph_create("block");
    const int C = 2, H = 6, W = 6, M = 330, N = 10;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 1, 1});
    int w2 = tensor_dt(g, "w2", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, M, 1, 1});
    int fw = tensor_dt(g, "fw", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){N, M});
    int t[8];
    const char *nm[8] = {"h", "r", "p", "q", "s", "sr", "gp", "fl"};
    for (int i = 0; i < 8; i++)
        t[i] = tensor_dt(g, nm[i], TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs pool, fc;
    ts_graph_attrs_init(&pool);
    pool.kernel[0] = pool.kernel[1] = 3;
    pool.strides[0] = pool.strides[1] = 2;
    pool.pads[0] = pool.pads[1] = pool.pads[2] = pool.pads[3] = 1;
    ts_graph_attrs_init(&fc);
    fc.trans_b = true;
    ts_graph_attrs one;
    ts_graph_attrs_init(&one);
    one.axis = 1;
    node(g, TS_OP_CONV, "c1", (int[]){x, w1}, 2, t[0], NULL);
    node(g, TS_OP_RELU, "r1", (int[]){t[0]}, 1, t[1], NULL);
    node(g, TS_OP_MAXPOOL, "mp", (int[]){t[1]}, 1, t[2], &pool);
    node(g, TS_OP_CONV, "c2", (int[]){t[2], w2}, 2, t[3], NULL);
    node(g, TS_OP_ADD, "add", (int[]){t[3], t[2]}, 2, t[4], NULL);
    node(g, TS_OP_RELU, "r2", (int[]){t[4]}, 1, t[5], NULL);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){t[5]}, 1, t[6], NULL);
    node(g, TS_OP_FLATTEN, "flat", (int[]){t[6]}, 1, t[7], &one);
    node(g, TS_OP_GEMM, "fc", (int[]){t[7], fw}, 2, y, &fc);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, t[5]);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    /* reference */
    int8_t *xv = input_of(g, x);
    int Ho, Wo;
    int8_t *h1 = ref_conv(xv, C, H, W, w1, -1, M, 1, 1, 0, true, &Ho, &Wo);
    int Hp, Wp;
    int8_t *pv = ref_maxpool3(h1, M, H, W, &Hp, &Wp);
    ck_assert(Hp == 3 && Wp == 3);
    int Ho2, Wo2;
    int8_t *q = ref_conv(pv, M, Hp, Wp, w2, -1, M, 1, 1, 0, false, &Ho2, &Wo2);
    int bad = 0;
    int8_t gp[330];
    for (int c = 0; c < M; c++) {
        int32_t sum = 0;
        for (int p = 0; p < Hp * Wp; p++) {
            int sv = q[(size_t)c * 9 + p] + pv[(size_t)c * 9 + p];
            sv = sv > 127 ? 127 : sv < -128 ? -128 : sv;
            sv = sv < 0 ? 0 : sv;
            sum += sv;
            int8_t have = got(&l, t[5], (uint32_t)p, (uint32_t)c);
            if (have != sv && bad++ < 5)
                fprintf(stderr, "sr[%d][%d] = %d, want %d\n", c, p, have, sv);
        }
        gp[c] = requant(sum, 1.0f / 9.0f, false);
    }
    ck_assert_int_eq(bad, 0);
    float s = ts_lower_tsp_scale(M);
    for (int n = 0; n < N; n++) {
        int32_t acc = 0;
        for (int c = 0; c < M; c++)
            acc += gp[c] * ts_fill_i8(fw, (uint64_t)n * M + c);
        int8_t want = requant(acc, s, false), have = got(&l, y, 0, (uint32_t)n);
        if (want != have && bad++ < 5)
            fprintf(stderr, "y[%d] = %d, want %d\n", n, have, want);
    }
    ck_assert_int_eq(bad, 0);
    ts_free(xv);
    ts_free(h1);
    ts_free(pv);
    ts_free(q);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* MaxPool 3x3/2 (padding 1) and 2x2/1 of a Relu's output over the whole range 0..127 (a graph
 * input through a Relu on the VXM): windows of 4 vectors or more run offset by -128, 2 operations a
 * comparison, 2 n a window of n (an add of the constant 0x80, subs and add per step, a mask with
 * 0x7f); smaller windows take x + relu(m - x), 3 (n - 1). Bit-exact against the C maximum,
 * 127 and 0 among the outputs. */
START_TEST(test_maxpool_offset)
{
    ts_graph *g = ts_graph_create("mp");
    const int C = 70, H = 7, W = 7;
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W});
    int r = tensor_dt(g, "r", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    int8_t *xv = ts_calloc((size_t)C * H * W, 1); /* every int8 value, not only the fill's -16..15 */
    for (int k = 0; k < C * H * W; k++)
        xv[k] = (int8_t)((k * 73 + 11) % 256 - 128);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, x, xv, (size_t)C * H * W, &e), TS_OK);
    ts_err_free(&e);
    int y[3];
    for (int i = 0; i < 3; i++)
        y[i] = tensor_dt(g, (const char *[]){"y0", "y1", "y2"}[i], TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    /* 3x3/2 padded (windows of 4, 6, 9), 2x2/1 (4), 1x3/1 padded (2 and 3: the relu form) */
    const int kh[3] = {3, 2, 1}, kw[3] = {3, 2, 3}, st[3] = {2, 1, 1}, pd[3] = {1, 0, 1};
    node(g, TS_OP_RELU, "relu", (int[]){x}, 1, r, NULL);
    for (int i = 0; i < 3; i++) {
        ts_graph_attrs a;
        ts_graph_attrs_init(&a);
        a.kernel[0] = kh[i];
        a.kernel[1] = kw[i];
        a.strides[0] = a.strides[1] = st[i];
        a.pads[0] = a.pads[2] = kh[i] > 1 ? pd[i] : 0;
        a.pads[1] = a.pads[3] = pd[i];
        node(g, TS_OP_MAXPOOL, (const char *[]){"mp0", "mp1", "mp2"}[i], (int[]){r}, 1, y[i], &a);
        ts_graph_mark_output(g, y[i]);
    }
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.nlayers, 4);
    int bad = 0, top = 0, zero = 0;
    for (int i = 0; i < 3; i++) {
        int ph = kh[i] > 1 ? pd[i] : 0, Ho = (H + 2 * ph - kh[i]) / st[i] + 1, Wo = (W + 2 * pd[i] - kw[i]) / st[i] + 1;
        uint64_t ops = 0;
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                int n = 0;
                for (int c = 0; c < C; c++) {
                    int v = 0;
                    n = 0;
                    for (int ky = 0; ky < kh[i]; ky++)
                        for (int kx = 0; kx < kw[i]; kx++) {
                            int iy = oy * st[i] - ph + ky, ix = ox * st[i] - pd[i] + kx;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= W)
                                continue;
                            n++;
                            int xe = xv[((size_t)c * H + iy) * W + ix];
                            v = xe > v ? xe : v; /* max of the Relu's outputs */
                        }
                    int8_t have = got(&l, y[i], (uint32_t)(oy * Wo + ox), (uint32_t)c);
                    top += i == 0 && v == 127;
                    zero += i == 0 && v == 0;
                    if (have != v && bad++ < 5)
                        fprintf(stderr, "y%d[%d][%d][%d] = %d, want %d\n", i, c, oy, ox, have, v);
                }
                ops += n >= 4 ? 2u * (uint64_t)n : n > 1 ? 3u * (uint64_t)(n - 1) : 1;
            }
        ck_assert_uint_eq(l.rep.layers[1 + i].vxm_ops, ops); /* one vector of 70 channels a pixel */
    }
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(top, 0);
    ck_assert_int_gt(zero, 0);
    ts_free(xv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Softmax over rows of int8 values read as q / 16: f16 probabilities. The C reference repeats the
 * chip's steps (f32 exp, f16 to the plane, a sum in lane order rounded once to f32, rsqrt squared)
 * and must match bit for bit; against softmax in double precision the tolerance is 2e-3 absolute
 * (f16 rounding of each exp in the sum and of the result). */
START_TEST(test_softmax)
{
    ts_graph *g = ts_graph_create("sm");
    const int M = 6, N = 100;
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){M, N});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){a}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered l;
    lower_and_run(g, &l);
    int8_t *av = input_of(g, a);
    int bad = 0;
    double worst = 0;
    for (int m = 0; m < M; m++) {
        double sum = 0, dsum = 0;
        for (int n = 0; n < N; n++) {
            float e = expf((float)av[m * N + n] * (1.0f / 16.0f));
            sum += (double)ts_f16_to_f32(ts_f32_to_f16(e));
            dsum += exp(av[m * N + n] / 16.0);
        }
        float r = 1.0f / sqrtf((float)sum), inv = r * r;
        for (int n = 0; n < N; n++) {
            float e = expf((float)av[m * N + n] * (1.0f / 16.0f));
            uint16_t want = ts_f32_to_f16(e * inv);
            uint16_t have = (uint16_t)((uint8_t)got(&l, y, (uint32_t)m, (uint32_t)n) |
                                       (uint8_t)got(&l, y, (uint32_t)m, 320u + (uint32_t)n) << 8);
            if (want != have && bad++ < 5)
                fprintf(stderr, "p[%d][%d] = %04x, want %04x\n", m, n, have, want);
            double err = fabs((double)ts_f16_to_f32(have) - exp(av[m * N + n] / 16.0) / dsum);
            if (err > worst)
                worst = err;
        }
    }
    ck_assert_int_eq(bad, 0);
    if (getenv("TS_LOWER_DUMP"))
        fprintf(stderr, "softmax: worst error %g against double\n", worst);
    ck_assert_double_le(worst, 2e-3);
    ts_free(av);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* Compiling g must fail as bad input (TS_EINPUT), with no program and exactly message msg; g is
 * destroyed. */
static void expect_refused(ts_graph *g, const char *msg)
{
    ts_program *p = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(compile(g, &p, NULL, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(e.msg, msg);
    ts_err_free(&e);
    ts_graph_destroy(g);
}

/* Operators the lowering does not take are refused by name. */
START_TEST(test_refused)
{
    ts_graph *g = ts_graph_create("sm");
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){4, 10});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SQRT, "sq", (int[]){a}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    expect_refused(g, "the TSP lowering does not support 1 operator of this model: Sqrt (node 'sq'); it "
                      "lowers MatMul, Gemm, Conv, Relu, Add, Sub, Mul, Div, Clip, Sigmoid, Tanh, HardSwish, Gelu, "
                      "Concat, Slice, Expand, Transpose keeping the channel axis, MaxPool, GlobalAveragePool, "
                      "Flatten, layout-keeping Reshape, Softmax and LayerNormalization");
}
END_TEST

/* A model too big for the chip names the tensor that does not fit and the shortfall in bytes:
 * 8192 x 32768 int8 weights are 26 column blocks of 32768 valid rows, 851,968 vectors, 19,363 words
 * in each of the 44 west slices (from the rotation's offset on), over the 4,096 of a bank half (4
 * words taken: the zero row of word 0 and the activations) and over what a west half and both east halves hold together (a weight of
 * 8192 x 16384, 9,682 words, lies split between them in the compact layout: products.c,
 * split_rows): 15,269 words short in each slice, 15,269 x 44 x 320 bytes. */
START_TEST(test_too_big)
{
    ts_graph *g = ts_graph_create("big");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){1, 8192});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){8192, 32768});
    ts_graph_mark_output(g, chain(g, TS_OP_MATMUL, "fc", x, w, NULL));
    finalize(g);
    expect_refused(g, "MatMul 'fc': no room for weights 'w': 19363 words are needed in one bank half (4096 "
                      "words) of each west MEM slice, the most free in a half is 4094 (4 of the slice's 8192 "
                      "words taken): 15269 words short in each of the 44 slices, 214987520 bytes");
}
END_TEST

/* Ten operators the lowering does not take, of five kinds and forms (a Gemm with transA), among a
 * Conv and a Relu it takes: one error lists all ten, grouped, with the count and the first node of
 * each. */
START_TEST(test_unsupported_all)
{
    ts_graph *g = ts_graph_create("ten");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, 4, 8, 8});
    int w1 = tensor_dt(g, "w1", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){4, 4, 3, 3});
    int wf = tensor_dt(g, "wf", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){16, 8});
    ts_graph_attrs c1, ap, ta;
    ts_graph_attrs_init(&c1);
    c1.pads[0] = c1.pads[1] = c1.pads[2] = c1.pads[3] = 1;
    ts_graph_attrs_init(&ap);
    ap.kernel[0] = ap.kernel[1] = 3;
    ap.pads[0] = ap.pads[1] = ap.pads[2] = ap.pads[3] = 1;
    ts_graph_attrs_init(&ta);
    ta.trans_a = true;
    x = chain(g, TS_OP_SQRT, "t0", x, -1, NULL);
    x = chain(g, TS_OP_AVGPOOL, "ap0", x, -1, &ap);
    x = chain(g, TS_OP_ERF, "s0", x, -1, NULL);
    x = chain(g, TS_OP_CONV, "conv", x, w1, &c1);
    x = chain(g, TS_OP_POW, "m0", x, x, NULL);
    x = chain(g, TS_OP_SQRT, "t1", x, -1, NULL);
    x = chain(g, TS_OP_AVGPOOL, "ap1", x, -1, &ap);
    x = chain(g, TS_OP_RELU, "r0", x, -1, NULL);
    x = chain(g, TS_OP_SQRT, "q0", x, -1, NULL);
    x = chain(g, TS_OP_ERF, "s1", x, -1, NULL);
    x = chain(g, TS_OP_SQRT, "t2", x, -1, NULL);
    ts_graph_attrs fl;
    ts_graph_attrs_init(&fl);
    fl.axis = 1;
    x = chain(g, TS_OP_FLATTEN, "fl", x, -1, &fl);   /* 1 x 256 */
    x = chain(g, TS_OP_RESHAPE, "rs", x, -1, &(ts_graph_attrs){.nshape = 2, .shape = {16, 16}});
    x = chain(g, TS_OP_GEMM, "ga0", x, wf, &ta); /* transA: 16 x 16 read as its transpose */
    ts_graph_mark_output(g, x);
    finalize(g);
    expect_refused(g, "the TSP lowering does not support 5 operators of this model (10 nodes): Sqrt (4 nodes, "
                      "first 't0'), AveragePool (2 nodes, first 'ap0'), Erf (2 nodes, first 's0'), Pow (node "
                      "'m0'), Gemm with transA, alpha or beta other than 1 (node 'ga0'); it lowers MatMul, Gemm, "
                      "Conv, Relu, Add, Sub, Mul, Div, Clip, Sigmoid, Tanh, HardSwish, Gelu, Concat, Slice, Expand, "
                      "Transpose keeping the channel axis, MaxPool, GlobalAveragePool, Flatten, layout-keeping "
                      "Reshape, Softmax and LayerNormalization");
}
END_TEST

/* The lowering's parameters of config `name`, with one key=value set (NULL for none). */
static void params_of(ts_lower_tsp_params *p, const char *name, const char *set)
{
    const char *sets[] = {set, NULL};
    void *cfg = tsp_test_config(name, set ? sets : NULL);
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_lower_tsp_params_from_config(cfg, p, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    ts_config_destroy(cfg);
}

/* A floorplan the lowering cannot use is refused with the reason; queues longer than the stock
 * capacity run from fetched text; a capacity of one fetch is refused. */
START_TEST(test_config_limits)
{
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_small", NULL);
    ts_graph *g = ts_graph_create("mm");
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){400, 64});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){64, 64});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_MATMUL, "mm", (int[]){a, b}, 2, y, NULL);
    finalize(g);
    ts_program *prog = NULL;
    ck_assert_int_eq(ts_lower_tsp(g, &p, &prog, NULL, &e), TS_EINPUT);
    ck_assert_msg(strstr(e.msg, "32 streams per direction"), "%s", e.msg);
    ts_err_free(&e);
    ts_err_init(&e);
    /* stock tsp_v1: the queues are longer than 128 entries and refilled by ifetch, with no hazard */
    lowered l;
    lower_and_run(g, &l);
    ck_assert_uint_gt(l.rep.max_queue, 128);
    ck_assert_double_gt(tsp_stat(&l.run, "queue.ifetches"), 0);
    ck_assert_double_eq(tsp_stat(&l.run, "queue.ifetch_bytes"), tsp_stat(&l.run, "queue.ifetches") * 640);
    lowered_free(&l);
    /* a queue as short as one fetch cannot be refilled before it runs dry */
    params_of(&p, "tsp_v1", "icu.queue_capacity=40");
    ck_assert_int_eq(ts_lower_tsp(g, &p, &prog, NULL, &e), TS_EINPUT);
    ck_assert_msg(strstr(e.msg, "no ifetch could be placed in time") && strstr(e.msg, "icu.queue_capacity 40"), "%s",
                  e.msg);
    ck_assert_ptr_null(prog);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* The chain of the text tests: n MatMuls of 600 rows x 64 by 64 x 64, i8, each taking the last's
 * output; one weight shared by all of them, or (own) a weight of each its own; *out (where given)
 * is the last output's tensor. */
static ts_graph *matmul_chain(int n, bool own, int *out)
{
    ts_graph *g = ts_graph_create("chain");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){600, 64});
    int w = own ? -1 : tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){64, 64});
    for (int i = 0; i < n; i++) {
        char yn[16], wn[16];
        snprintf(yn, sizeof yn, "y%d", i);
        snprintf(wn, sizeof wn, "w%d", i);
        int wi = own ? tensor_dt(g, wn, TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){64, 64}) : w;
        int y = tensor_dt(g, yn, TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
        node(g, TS_OP_MATMUL, yn, (int[]){x, wi}, 2, y, NULL);
        x = y;
    }
    finalize(g);
    if (out)
        *out = x;
    return g;
}

/* n products op (x, w) one after another from x, each output y0, y1, ... int8: the last output. */
static int chain_of(ts_graph *g, ts_graph_op op, int x, int w, int n)
{
    for (int i = 0; i < n; i++) {
        char yn[16];
        snprintf(yn, sizeof yn, "y%d", i);
        int y = tensor_dt(g, yn, TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
        node(g, op, yn, (int[]){x, w}, 2, y, NULL);
        x = y;
    }
    return x;
}

/* A refusal for text names the operator kinds whose instructions take the most entries (each with
 * the nops before it), the most first: a chain of 32 MatMuls of 600 rows, each with a Sigmoid after
 * it (an f32 chain on the VXM), on a tsp_v1 with 100 words per MEM slice, whose count is over the
 * words free of data. The two kinds' entries are every entry of the schedule. */
START_TEST(test_text_by_op)
{
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", "mem.slice_bytes=32000");
    ts_graph *g = ts_graph_create("chain_sigmoid");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){600, 64});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){64, 64});
    for (int i = 0; i < 32; i++) {
        char yn[16], sn[16];
        snprintf(yn, sizeof yn, "y%d", i);
        snprintf(sn, sizeof sn, "s%d", i);
        int y = tensor_dt(g, yn, TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
        int r = tensor_dt(g, sn, TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
        node(g, TS_OP_MATMUL, yn, (int[]){x, w}, 2, y, NULL);
        node(g, TS_OP_SIGMOID, sn, (int[]){y}, 1, r, NULL);
        x = r;
    }
    finalize(g);
    ts_program *prog = NULL;
    ck_assert_int_eq(ts_lower_tsp(g, &p, &prog, NULL, &e), TS_EINPUT);
    unsigned long long all = 0, n[2] = {0};
    unsigned pc[2] = {0};
    char k[2][16] = {{0}};
    const char *by = strstr(e.msg, "the entries by operator, the most first: ");
    ck_assert_msg(by && sscanf(e.msg, "the instruction text does not fit: the schedule's %llu entries", &all) == 1,
                  "%s", e.msg);
    by += strlen("the entries by operator, the most first: ");
    ck_assert_msg(sscanf(by, "%15[A-Za-z] %llu (%u %%), %15[A-Za-z] %llu (%u %%)", k[0], &n[0], &pc[0], k[1], &n[1],
                         &pc[1]) == 6,
                  "%s", e.msg);
    int m = strcmp(k[0], "MatMul") == 0 ? 0 : 1; /* which of the two is the MatMul */
    ck_assert_str_eq(k[m], "MatMul");
    ck_assert_str_eq(k[1 - m], "Sigmoid");
    ck_assert_uint_ge(n[0], n[1]);
    ck_assert_uint_gt(n[1], 0);
    ck_assert_uint_eq(n[0] + n[1], all);
    ck_assert_ptr_null(prog);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* The schedule is one program without loops: a long one whose instruction text needs more MEM words
 * than the schedule's data leaves is refused as not fitting, with the shortfall: 32 MatMuls (one
 * weight) of 600 rows on a tsp_v1 with 100 words per MEM slice (8, 16 and 24 fit under LEAN's fetch
 * plan, 24 since its text reads take the slices with the most words left first). */
START_TEST(test_text_too_big)
{
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", "mem.slice_bytes=32000");
    ts_graph *g = matmul_chain(32, false, NULL);
    ts_program *prog = NULL;
    ck_assert_int_eq(ts_lower_tsp(g, &p, &prog, NULL, &e), TS_EINPUT);
    ck_assert_msg(strstr(e.msg, "the instruction text does not fit") && strstr(e.msg, "words short") &&
                      strstr(e.msg, " bytes"),
                  "%s", e.msg);
    ck_assert_ptr_null(prog);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* LEAN's fetch plan (docs/lowering-tsp.md, *LEAN*): the chain of test_text_too_big with 8 MatMuls
 * on 100 words a MEM slice, whose text fits in no mode (it was refused before the plan), compiles on
 * the last try (its program packs runs with `repeat`; the fetch replay checks every queue). Its run
 * is left out for time: test_bert_lean (test_values) runs a LEAN program hazard-free. */
START_TEST(test_text_lean_plan)
{
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", "mem.slice_bytes=32000");
    ts_graph *g = matmul_chain(8, false, NULL);
    ts_program *prog = NULL;
    ck_assert_msg(ts_lower_tsp(g, &p, &prog, NULL, &e) == TS_OK, "%s", e.msg);
    ck_assert_int_gt(count_insns(prog, "repeat"), 0);
    ts_program_destroy(prog);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

/* LEAN with a GlobalAveragePool of more than one pixel: its sum stays in an ALU latch while each
 * next pixel is converted, and LEAN's VXM operations take the first free ALU, which was the sum's,
 * so that no start of the group fitted ("GlobalAveragePool: no cycle found for a group of
 * instructions"; every CNN ending in one was refused under LEAN so: ResNet-18 and ResNet-50, and
 * the unrolled batches of ResNet-50, whose refusal hid it). A chain of NC 1x1 Convs of 8 channels
 * over 10 x 8 pixels, then the pool, on a tsp_v1 of 24 words a MEM slice where only LEAN's text
 * fits: it compiles LEAN, runs hazard-free, and its pooled outputs are the C reference's, bit for
 * bit. */
START_TEST(test_lean_gap)
{
    static const char *const small[] = {"mem.slice_bytes=7680", NULL};
    enum { NC = 20, C = 8, H = 10, W = 8 };
    /* Under a sanitizer LEAN's code runs in test_lean_mask_rows; this is its schedule's choice of ALU */
    if (getenv("TS_SANITIZED")) {
        printf("skipped test_lean_gap under a sanitizer: test_lean_mask_rows runs LEAN there\n");
        return;
    }
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", small[0]);
    ts_graph *g = ts_graph_create("chain_gap");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 4, (int64_t[]){1, C, H, W}), x0 = x;
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){C, C, 1, 1});
    x = chain_of(g, TS_OP_CONV, x, w, NC);
    int z = tensor_dt(g, "z", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){x}, 1, z, NULL);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered s = {0};
    ck_assert_msg(ts_lower_tsp(g, &p, &s.prog, &s.rep, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    ck_assert_int_gt(count_insns(s.prog, "repeat"), 0); /* LEAN's */
    tsp_test_run2("tsp_v1", small, s.prog, &s.run);
    ck_assert_double_eq(tsp_stat(&s.run, "hazards.no_value"), 0);
    /* the C reference: each Conv requantised, then the pool's mean */
    int8_t *a = input_of(g, x0), *b = ts_calloc(C * H * W, 1);
    for (int i = 0; i < NC; i++) {
        for (int m = 0; m < C; m++)
            for (int q = 0; q < H * W; q++) {
                int32_t acc = 0;
                for (int k = 0; k < C; k++)
                    acc += a[k * H * W + q] * ts_fill_i8(w, (uint64_t)m * C + k);
                b[m * H * W + q] = requant(acc, ts_lower_tsp_scale(C), false);
            }
        memcpy(a, b, C * H * W);
    }
    for (int m = 0; m < C; m++) {
        int32_t sum = 0;
        for (int q = 0; q < H * W; q++)
            sum += a[m * H * W + q];
        ck_assert_int_eq(got(&s, z, 0, (uint32_t)m), requant(sum, 1.0f / (H * W), false));
    }
    ts_free(a);
    ts_free(b);
    lowered_free(&s);
    ts_graph_destroy(g);
}
END_TEST

/* LEAN keeps a per-row constant in a latch (ewise.c, kept_rows): scores [75, 8, 8] from a chain of 4
 * MatMuls (as test_text_lean_plan's, on 8 channels) plus a constant [8, 8] added over the last two
 * axes (pixel p reading row p mod 8, as gpt's causal mask), on 70 words a MEM slice where only
 * LEAN's text fits: the Add places the 75 vectors of a row one after another, the row's 4 words read
 * once into a latch instead of once a vector (its MEM bytes 1,152,000 where each vector read them).
 * The run is hazard-free and its outputs are the C reference's, bit for bit. */
START_TEST(test_lean_mask_rows)
{
    static const char *const small[] = {"mem.slice_bytes=22400", NULL};
    enum { NH = 75, NMM = 4 }; /* heads of 8 x 8 scores, MatMuls */
    ts_err e;
    ts_err_init(&e);
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", small[0]);
    ts_graph *g = ts_graph_create("chain_mask");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 3, (int64_t[]){NH, 8, 8});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){8, 8});
    int m = tensor_dt(g, "mask", TS_TENSOR_WEIGHT, TS_DT_F32, 2, (int64_t[]){8, 8});
    x = chain_of(g, TS_OP_MATMUL, x, w, NMM);
    int z = tensor_dt(g, "z", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_ADD, "masked", (int[]){x, m}, 2, z, NULL);
    finalize(g);
    lowered s = {0};
    ck_assert_msg(ts_lower_tsp(g, &p, &s.prog, &s.rep, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    ck_assert_int_gt(count_insns(s.prog, "repeat"), 0); /* LEAN's */
    /* each vector's read and write, and the 8 rows' constants once: no 4 words a vector */
    for (size_t k = 0; k < s.rep.nlayers; k++)
        if (s.rep.layers[k].node == NMM)
            ck_assert_uint_lt(s.rep.layers[k].mem_bytes, NH * 8 * 3 * 320);
    tsp_test_run2("tsp_v1", small, s.prog, &s.run);
    ck_assert_double_eq(tsp_stat(&s.run, "hazards.no_value"), 0);
    /* the C reference: the chain requantised, then u + 16 c of the row's constant, to int8 */
    int8_t *a = input_of(g, 0), *b = ts_calloc(NH * 64, 1);
    for (int i = 0; i < NMM; i++) {
        for (int r = 0; r < NH * 8; r++)
            for (int n = 0; n < 8; n++) {
                int32_t acc = 0;
                for (int k = 0; k < 8; k++)
                    acc += a[r * 8 + k] * ts_fill_i8(w, (uint64_t)k * 8 + n);
                b[r * 8 + n] = requant(acc, ts_lower_tsp_scale(8), false);
            }
        memcpy(a, b, NH * 64);
    }
    const ts_graph_tensor *mt = ts_graph_get_tensor(g, m);
    for (uint32_t px = 0; px < NH * 8; px++)
        for (uint32_t c = 0; c < 8; c++) {
            float u = (float)a[px * 8 + c], cv = (float)(ts_fill_value_f32(mt, m, px % 8 * 8 + c) * 16.0);
            ck_assert_int_eq(got(&s, z, px, c), tsp_ref_cvt8(u + cv));
        }
    ts_free(a);
    ts_free(b);
    lowered_free(&s);
    ts_graph_destroy(g);
}
END_TEST

/* Text below the data: where the words above the schedule's data cannot hold the instruction text,
 * it also goes into words the schedule writes later, each read as text before its first write. The
 * chain of test_text_too_big, with a weight of its own for each MatMul (one weight shared by the
 * eight is laid out once, and the text would fit above it), on MEM slices of 140 words does not
 * fit above its data and runs
 * hazard-free with text read from words its activations take later, to the same outputs and cycles
 * as on the stock tsp_v1, where all of its text is above the data. */
START_TEST(test_text_below_data)
{
    ts_err e;
    ts_err_init(&e);
    static const char *const small[] = {"mem.slice_bytes=44800", NULL};
    ts_lower_tsp_params p;
    params_of(&p, "tsp_v1", small[0]);
    int x;
    ts_graph *g = matmul_chain(8, true, &x);
    lowered s = {0}, l;
    ts_status rc = ts_lower_tsp(g, &p, &s.prog, &s.rep, &e);
    ck_assert_msg(rc == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    tsp_test_run2("tsp_v1", small, s.prog, &s.run);
    static const char *const kinds[] = {"stream_collision", "no_value", "bank_conflict", "queue_underrun", "resource"};
    for (int k = 0; k < 5; k++) {
        char name[64];
        snprintf(name, sizeof name, "hazards.%s", kinds[k]);
        ck_assert_double_eq(tsp_stat(&s.run, name), 0);
    }
    ck_assert_double_gt(tsp_stat(&s.run, "queue.ifetches"), 0);
    /* text reads (a read tagged as an ifetch) of words a later write of the same slice fills */
    const ts_isa *isa = ts_tsp_family.isa;
    int op_if = ts_isa_find(isa, "ifetch", 6), op_rd = ts_isa_find(isa, "read", 4);
    int op_wr = ts_isa_find(isa, "write", 5);
    bool *itag = ts_calloc(65536, sizeof *itag), *text = ts_calloc(140, sizeof *text);
    for (size_t k = 0; k < s.prog->nstreams; k++)
        for (uint32_t i = 0; i < s.prog->streams[k].n; i++)
            if (s.prog->streams[k].insn[i].op == op_if)
                itag[s.prog->streams[k].insn[i].a[1] & 0xffff] = true;
    uint64_t below = 0;
    for (size_t k = 0; k < s.prog->nstreams; k++) {
        memset(text, 0, 140 * sizeof *text);
        for (uint32_t i = 0; i < s.prog->streams[k].n; i++) {
            const ts_insn *in = &s.prog->streams[k].insn[i];
            if (in->op == op_rd && itag[in->a[2] & 0xffff] && in->a[0] >= 0 && in->a[0] < 140)
                text[in->a[0]] = true;
            else if (in->op == op_wr && in->a[0] >= 0 && in->a[0] < 140 && text[in->a[0]]) {
                below++;
                text[in->a[0]] = false;
            }
        }
    }
    ts_free(itag);
    ts_free(text);
    ck_assert_uint_gt(below, 0);
    /* the stock tsp_v1: the same schedule, its text above the data (not under a sanitizer, where
     * scripts/test.sh sets TS_SANITIZED and the two runs took a minute: the normal build compares) */
    if (getenv("TS_SANITIZED")) {
        lowered_free(&s);
        ts_graph_destroy(g);
        return;
    }
    lower_and_run(g, &l);
    ck_assert_uint_eq(l.rep.cycles, s.rep.cycles);
    ck_assert_uint_eq(l.run.r.cycles, s.run.r.cycles);
    for (uint32_t px = 0; px < 600; px++)
        for (uint32_t c = 0; c < 64; c++)
            ck_assert_int_eq(got(&l, x, px, c), got(&s, x, px, c));
    lowered_free(&s);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* ---- the target ---- */

/* The machine facts of tsp_v1: the figures the lowering's own parameters held before they came
 * from the chip model's typed config and floorplan parse. */
START_TEST(test_target_v1)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", NULL);
    ts_tsp_target t;
    ck_assert_int_eq(ts_tsp_target_from_config(cfg, &t, &e), TS_OK);
    ck_assert_uint_eq(t.superlanes, 20);
    ck_assert_uint_eq(t.lanes, 16);
    ck_assert_uint_eq(t.streams, 32);
    ck_assert_uint_eq(t.mem_west, 44);
    ck_assert_uint_eq(t.mem_east, 44);
    ck_assert_uint_eq(t.mxm_west, 2);
    ck_assert_uint_eq(t.mxm_east, 2);
    ck_assert_uint_eq(t.sxm_west, 1);
    ck_assert_uint_eq(t.sxm_east, 1);
    ck_assert_uint_eq(t.mxm_dim, 320);
    ck_assert_uint_eq(t.mxm_queues, 3);
    ck_assert_uint_eq(t.vxm_alus, 16);
    ck_assert_uint_eq(t.sxm_queues, 14);
    ck_assert_uint_eq(t.fp16_interval, 4);
    ck_assert_uint_eq(t.words, 8192);
    ck_assert_uint_eq(t.banks, 2);
    ck_assert_uint_eq(t.queue_capacity, 128);
    ck_assert_uint_eq(t.ifetch_bytes, 640);
    ck_assert_uint_eq(t.fetch_bpc, 16);
    ck_assert_uint_eq(t.insn_bytes, 16);
    ck_assert_double_eq(t.clock_hz, 900e6);
    ck_assert_uint_eq(t.d_skew.mem + t.d_skew.vxm + t.d_skew.mxm + t.d_skew.sxm, 0);
    const ts_tsp_dfunc *f = &t.d_func;
    uint32_t got_f[] = {f->read, f->write, f->iw, f->abc, f->acc, f->add, f->mul, f->relu, f->cvt, f->mask, f->exp,
                        f->rsqrt};
    const uint32_t want_f[] = {1, 1, 1, 20, 1, 1, 2, 1, 1, 1, 4, 4};
    for (size_t i = 0; i < sizeof want_f / sizeof want_f[0]; i++)
        ck_assert_uint_eq(got_f[i], want_f[i]);
    ck_assert_uint_eq(t.npos, 95);
    ck_assert_uint_eq(t.pos_vxm, 47);
    ck_assert(!t.sr_map);
    for (uint32_t i = 0; i < 44; i++) {
        ck_assert_uint_eq(t.pos_mem_w[i], 46 - i); /* MEM W0 next to the VXM */
        ck_assert_uint_eq(t.pos_mem_e[i], 48 + i);
    }
    ck_assert_uint_eq(t.pos_mxm_w[0], 1);
    ck_assert_uint_eq(t.pos_mxm_w[1], 0);
    ck_assert_uint_eq(t.q_vxm, 88);
    ck_assert_uint_eq(t.q_mxm, 104);
    ck_assert_uint_eq(t.nqueues, 104 + 4 * 3 + 2 * 14);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* The target's numbering is the family's own: registers as the assembler writes them, queues and
 * positions as the simulator lays them out (tsp.h), on both stock configs. */
START_TEST(test_target_numbering)
{
    static const char *const names[] = {"tsp_v1", "tsp_small"};
    for (int c = 0; c < 2; c++) {
        ts_err e;
        ts_err_init(&e);
        void *cfg = tsp_test_config(names[c], NULL);
        const void *tc = ts_config_data(cfg);
        ts_tsp_target t;
        ck_assert_int_eq(ts_tsp_target_from_config(cfg, &t, &e), TS_OK);
        ck_assert_int_eq(t.reg.east + 3, E(3));
        ck_assert_int_eq(t.reg.west + 3, W(3));
        ck_assert_int_eq(t.reg.alu + 2, ALU(2));
        ck_assert_int_eq(t.reg.nul, NUL);
        ck_assert_int_eq(t.reg.i8, T_I8);
        ck_assert_int_eq(t.reg.i16, T_I16);
        ck_assert_int_eq(t.reg.i32, T_I32);
        ck_assert_int_eq(t.reg.f16, T_F16);
        ck_assert_int_eq(t.reg.f32, T_F32);
        ck_assert_int_eq((int)t.q_vxm, ts_tsp_queue_vxm(tc, 0));
        ck_assert_int_eq((int)t.q_mxm, ts_tsp_queue_mxm(tc, 0, 0, 0));
        for (uint32_t i = 0; i < t.mem_west; i++)
            ck_assert_int_eq(t.pos_mem_w[i], ts_tsp_queue_position(tc, ts_tsp_queue_mem(tc, 0, (int)i)));
        for (uint32_t i = 0; i < t.mem_east; i++)
            ck_assert_int_eq(t.pos_mem_e[i], ts_tsp_queue_position(tc, ts_tsp_queue_mem(tc, 1, (int)i)));
        for (uint32_t i = 0; i < t.mxm_west; i++)
            ck_assert_int_eq(t.pos_mxm_w[i], ts_tsp_queue_position(tc, ts_tsp_queue_mxm(tc, 0, (int)i, 0)));
        for (uint32_t i = 0; i < t.mxm_east; i++)
            ck_assert_int_eq(t.pos_mxm_e[i], ts_tsp_queue_position(tc, ts_tsp_queue_mxm(tc, 1, (int)i, 0)));
        ck_assert_int_eq((int)t.pos_vxm, ts_tsp_queue_position(tc, ts_tsp_queue_vxm(tc, 0)));
        ts_config_destroy(cfg);
        ts_err_free(&e);
    }
}
END_TEST

/* A floorplan the simulator accepts in any case is the same floorplan to the lowering: the same
 * facts and the same program bytes as the stock tsp_v1. */
START_TEST(test_target_upper_case)
{
    static const char *const upper[] = {"floorplan=[MXM*2, Sxm, MEM*44, VXM, Mem*44, SXM, mxm*2]", NULL};
    ts_graph *g = ts_graph_create("mm");
    int a = tensor_dt(g, "a", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){5, 400});
    int b = tensor_dt(g, "b", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){400, 350});
    int y = tensor_dt(g, "y", TS_TENSOR_ACTIVATION, TS_DT_I8, -1, NULL);
    node(g, TS_OP_MATMUL, "mm", (int[]){a, b}, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    ts_buf bytes[2] = {TS_BUF_INIT, TS_BUF_INIT};
    ts_lower_tsp_params p[2];
    for (int k = 0; k < 2; k++) {
        ts_err e;
        ts_err_init(&e);
        void *cfg = tsp_test_config("tsp_v1", k ? upper : NULL);
        ck_assert_msg(ts_lower_tsp_params_from_config(cfg, &p[k], &e) == TS_OK, "%s", e.msg);
        ts_config_destroy(cfg);
        ts_program *prog = NULL;
        ck_assert_msg(ts_lower_tsp(g, &p[k], &prog, NULL, &e) == TS_OK, "%s", e.msg);
        ck_assert_int_eq(ts_program_encode(prog, &bytes[k], &e), TS_OK);
        ts_program_destroy(prog);
        ts_err_free(&e);
    }
    ck_assert_mem_eq(&p[0], &p[1], sizeof p[0]);
    ck_assert_uint_eq(bytes[0].len, bytes[1].len);
    ck_assert_mem_eq(bytes[0].data, bytes[1].data, bytes[0].len);
    ts_buf_free(&bytes[0]);
    ts_buf_free(&bytes[1]);
    ts_graph_destroy(g);
}
END_TEST

/* Machines the simulator accepts but the lowering cannot use are refused when its parameters are
 * made, each with its reason. */
START_TEST(test_target_refused)
{
    static char srmap[512];
    size_t n = (size_t)snprintf(srmap, sizeof srmap, "streams.sr_map=[0");
    for (int i = 1; i < 95; i++)
        n += (size_t)snprintf(srmap + n, sizeof srmap - n, ", %d", i);
    snprintf(srmap + n, sizeof srmap - n, "]");
    static const struct { const char *set, *msg; } cases[] = {
        {"d_skew.sxm=1", "config 'tsp_v1': the TSP lowering assumes d_skew 0 for every unit"},
        {"mxm.queues=2", "config 'tsp_v1': the TSP lowering needs 3 queues per MXM plane"},
        {"floorplan=[mem, mxm*2, mem*43, vxm, mem*44, sxm, mxm*2]",
         "config 'tsp_v1': the TSP lowering needs the west MXM planes at the west edge"},
        {NULL, "config 'tsp_v1': the TSP lowering takes one stream-register position per slice (an empty "
               "streams.sr_map)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {cases[i].set ? cases[i].set : srmap, NULL};
        ts_err e;
        ts_err_init(&e);
        void *cfg = tsp_test_config("tsp_v1", sets);
        ts_lower_tsp_params p;
        ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_EINPUT);
        ck_assert_str_eq(e.msg, cases[i].msg);
        ts_config_destroy(cfg);
        ts_err_free(&e);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower_tsp");
    TCase *tc = tcase_create("lower_tsp");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_matmul);
    tcase_add_test(tc, test_east_planes);
    tcase_add_test(tc, test_conv1x1_pairs);
    tcase_add_test(tc, test_conv1x1_pairs_tiles);
    tcase_add_test(tc, test_conv1x1_quads);
    tcase_add_test(tc, test_conv1x1_turns);
    tcase_add_test(tc, test_conv1x1_turns_east);
    tcase_add_test(tc, test_conv3x3_kquads);
    tcase_add_test(tc, test_gemm_relu);
    tcase_add_test(tc, test_fused_add);
    tcase_add_test(tc, test_conv);
    tcase_add_test(tc, test_bias_ones);
    tcase_add_test(tc, test_block);
    tcase_add_test(tc, test_maxpool_offset);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_unsupported_all);
    tcase_add_test(tc, test_too_big);
    tcase_add_test(tc, test_config_limits);
    tcase_add_test(tc, test_text_too_big);
    tcase_add_test(tc, test_text_by_op);
    tcase_add_test(tc, test_text_lean_plan);
    tcase_add_test(tc, test_text_below_data);
    tcase_add_test(tc, test_target_v1);
    tcase_add_test(tc, test_target_numbering);
    tcase_add_test(tc, test_target_upper_case);
    tcase_add_test(tc, test_target_refused);
    suite_add_tcase(s, tc);
    TCase *lm = tcase_create("lean_mask"); /* alone: CK_RUN_CASE=lean_mask */
    tcase_set_timeout(lm, 60);
    tcase_add_test(lm, test_lean_mask_rows);
    tcase_add_test(lm, test_lean_gap);
    suite_add_tcase(s, lm);
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
