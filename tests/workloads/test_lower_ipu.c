/* tests/workloads/test_lower_ipu.c — the IPU lowering: graphs built through the workloads API are
 * compiled, run on the IPU family (fast, lockstep and three threads must agree), and their outputs,
 * read back from tile memory where the lowering reports them, are compared with C references. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "arch/ipu/ipu_target.h"
#include "core/alloc.h"
#include "core/half.h"
#include "core/program.h"
#include "tests/arch/ipu/ipu_test.h"
#include "tests/slow.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/lower/fill.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/workload.h"
#include "tests/workloads/lower_ipu_harness.h"

/* ---- compiling and running ---- */

static int planner;                /* TS_LOWER_PLANNER_* of the lowering */
static uint32_t max_tiles;         /* the lowering's max_tiles setting; 0 = all */
static const ts_t10_plan *t10_plan; /* planner (b)'s plan for every MatMul/Gemm; NULL: the cost model's */

static ts_status compile(const ts_graph *g, const char *config, const char *const *sets, ts_program **prog,
                         ts_lower_report *rep, ts_err *e)
{
    void *cfg = ipu_test_config(config, sets);
    ts_lower_ipu_params p;
    ck_assert_int_eq(ts_lower_ipu_params_from_config(cfg, &p, e), TS_OK);
    p.planner = planner;
    p.max_tiles = max_tiles;
    p.t10_plan = t10_plan;
    ts_status rc = ts_lower_ipu(g, &p, prog, rep, e);
    ts_config_destroy(cfg);
    if (rc == TS_OK) { /* the lowering builds its streams packed; the tests here read them as insn */
        for (size_t i = 0; i < (*prog)->nstreams; i++)
            ck_assert_ptr_nonnull((*prog)->streams[i].packed);
        ck_assert_int_eq(ts_program_unpack(*prog, e), TS_OK);
    }
    return rc;
}

static const char *const *run_sets; /* config overrides for the runs and the lowering */

/* One run of a lowered program, which must succeed. */
static void run_prog(const char *config, const ts_program *prog, bool lockstep, int threads, ipu_run *out)
{
    ipu_test_run_program(config, run_sets, prog, lockstep, threads, out);
    ck_assert_msg(out->rc == TS_OK, "run: tile %lld cycle %lld: %s", (long long)out->err.tile,
                  (long long)out->err.cycle, out->err.msg);
}

/* Lower g and run it in every mode (the same report and tile memory in each); L->run is the fast run. */
static void lower_and_run(const ts_graph *g, const char *config, lowered *L)
{
    ts_err e;
    ts_err_init(&e);
    ts_status rc = compile(g, config, run_sets, &L->prog, &L->rep, &e);
    ck_assert_msg(rc == TS_OK, "lower: %s", e.msg);
    ipu_test_modes_program(config, run_sets, L->prog, &L->run);
    ck_assert_msg(L->run.rc == TS_OK, "run: tile %lld cycle %lld: %s", (long long)L->run.err.tile,
                  (long long)L->run.err.cycle, L->run.err.msg);
}

/* g lowered by planner pl with plan pick for every MatMul/Gemm (the cost model's when NULL) on
 * ipu_small16 and run (lower_and_run), the planner and the plan set back to planner (a)'s defaults
 * after. */
static void lower_planned(const ts_graph *g, int pl, const ts_t10_plan *pick, lowered *L)
{
    planner = pl;
    t10_plan = pick;
    lower_and_run(g, "ipu_small16", L);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
}

/* |got - want| <= 1e-5 x (sum of |terms| that made want), or 1e-30 */
static void near(float got, double want, double scale, const char *what, uint64_t k)
{
    double tol = 1e-5 * (scale > 1e-25 ? scale : 1e-25);
    ck_assert_msg(fabs((double)got - want) <= tol, "%s[%llu]: got %.9g, want %.9g", what, (unsigned long long)k,
                  (double)got, want);
}

/* matmul_filled's C as lowered and run, against the double product (near). */
static void matmul_check(lowered *L, const ts_graph *g, int a, int b, int c, int M, int K, int N)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < K; k++) {
                double t = (double)val(a, i * K + k) * val(b, k * N + j);
                s += t;
                m += fabs(t);
            }
            near(out_at(L, g, c, (uint64_t)(i * N + j)), s, m, "c", (uint64_t)(i * N + j));
        }
}

/* ---- tests ---- */

START_TEST(test_matmul)
{
    /* _i 0: the config as it is; 1: loads take 9 cycles, longer than a barrel turn, so workers
     * stall (they must stay in step for the shared AMP coefficients) */
    static const char *const slow[] = {"tile.load_latency=9", NULL};
    run_sets = _i ? slow : NULL;
    /* C[38,10] = A[38,8] x B[8,10] on 4 tiles: 10 rows per tile (8 on the last), 2 per worker with
     * overlapping blocks, 10 columns in 3 AMP groups (the last one partial) */
    int a, b, c;
    ts_graph *g = matmul_filled(38, 8, 10, &a, &b, &c);
    lowered L = {0};
    lower_and_run(g, "ipu_tiny4", &L);
    ck_assert_uint_eq(L.rep.tiles_used, 4);
    matmul_check(&L, g, a, b, c, 38, 8, 10);
    lowered_free(&L);
    ts_graph_destroy(g);
    run_sets = NULL;
}
END_TEST

START_TEST(test_mlp_softmax)
{
    /* Gemm (transB, bias) -> Relu -> Gemm -> Add (residual of the Relu) -> Softmax, on 16 tiles:
     * each operator repartitions, so every one gathers its input over the exchange */
    ts_graph *g = ts_graph_create("mlp");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){20, 6});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 6});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){12});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int r = tensor(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 12});
    int h2 = tensor(g, "h2", TS_TENSOR_ACTIVATION, -1, NULL);
    int s = tensor(g, "s", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc1", (int[]){x, w1, b1}, 3, h, &at);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, r, NULL);
    node(g, TS_OP_MATMUL, "fc2", (int[]){r, w2}, 2, h2, NULL);
    node(g, TS_OP_ADD, "res", (int[]){h2, r}, 2, s, NULL);
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){s}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    for (int i = 0; i < 20; i++) {
        double hv[12], sv[12], mx = -1e30, sum = 0;
        for (int j = 0; j < 12; j++) {
            float acc = val(b1, j);
            double t = 0;
            for (int k = 0; k < 6; k++)
                t += (double)val(x, i * 6 + k) * val(w1, j * 6 + k);
            hv[j] = fmax((double)acc + t, 0);
        }
        for (int j = 0; j < 12; j++) {
            double t = 0;
            for (int k = 0; k < 12; k++)
                t += hv[k] * val(w2, k * 12 + j);
            sv[j] = t + hv[j];
            mx = fmax(mx, sv[j]);
        }
        for (int j = 0; j < 12; j++)
            sum += exp(sv[j] - mx);
        for (int j = 0; j < 12; j++)
            near(out_at(&L, g, y, (uint64_t)(i * 12 + j)), exp(sv[j] - mx) / sum, 1.0, "y", (uint64_t)(i * 12 + j));
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* f16 results: the AMP accumulates f16 products in f32 and the output is rounded to f16, so
 * |got - want| <= 2^-10 |want| + 1e-5 x sum of |products| */
static void near16(float got, double want, double mag, const char *what, uint64_t k)
{
    double tol = fabs(want) / 1024 + 1e-5 * mag + 1e-7;
    ck_assert_msg(fabs((double)got - want) <= tol, "%s[%llu]: got %.9g, want %.9g", what, (unsigned long long)k,
                  (double)got, want);
}

/* The bundles in a program (the shared-coefficient AMP kernel's; lwi_emit_mm's routine has none). */
static size_t count_bundles(const ts_program *prog)
{
    size_t n = 0;
    for (size_t i = 0; i < prog->nstreams; i++)
        for (size_t k = 0; k < prog->streams[i].n; k++)
            n += prog->streams[i].insn[k].op == IPU_OP_BUNDLE;
    return n;
}

/* Gemm Y[M,N] = A[M,K] x B[N,K]^T + bias (f32, or f16 with f16 outputs) on config with the run
 * settings run_sets, checked against a C reference; returns the bundles of the lowered program
 * (the shared-coefficient AMP kernel's; lwi_emit_mm's routine has none). */
static size_t gemm_checked(bool half, int M, int K, int N, const char *config)
{
    ts_graph *g = ts_graph_create("gemm");
    ts_err e;
    ts_err_init(&e);
    int id[3];
    const char *names[3] = {"a", "b", "c"};
    const int64_t dims[3][2] = {{M, K}, {N, K}, {N, 0}};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ts_graph_add_tensor(g, names[i], i ? TS_TENSOR_WEIGHT : TS_TENSOR_INPUT,
                                             half ? TS_DT_F16 : TS_DT_F32, i == 2 ? 1 : 2, dims[i], &id[i], &e),
                         TS_OK);
        int64_t n = dims[i][0] * (i == 2 ? 1 : dims[i][1]);
        float *f = calloc((size_t)n, 4);
        uint16_t *h = (uint16_t *)f;
        for (int64_t k = 0; k < n; k++)
            if (half)
                h[k] = ts_f32_to_f16(val(id[i], k));
            else
                f[k] = val(id[i], k);
        ck_assert_int_eq(ts_graph_set_data(g, id[i], f, (size_t)n * (half ? 2 : 4), &e), TS_OK);
        free(f);
    }
    int y = -1;
    ck_assert_int_eq(ts_graph_add_tensor(g, "y", TS_TENSOR_ACTIVATION, half ? TS_DT_F16 : TS_DT_F32, -1, NULL, &y, &e),
                     TS_OK);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc", id, 3, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, config, &L);
#define V(t, k) (half ? (double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))) : (double)val(t, k))
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = V(id[2], j), m = fabs(s);
            for (int k = 0; k < K; k++) {
                s += V(id[0], i * K + k) * V(id[1], j * K + k);
                m += fabs(V(id[0], i * K + k) * V(id[1], j * K + k));
            }
            uint64_t o = (uint64_t)(i * N + j);
            if (half)
                near16(out_f16(&L, g, y, o), s, m, "y", o);
            else
                near(out_at(&L, g, y, o), s, m, "y", o);
        }
#undef V
    size_t bundles = count_bundles(L.prog);
    lowered_free(&L);
    ts_graph_destroy(g);
    return bundles;
}

START_TEST(test_matmul_shared)
{
    /* The shared-coefficient AMP kernel (lower_ipu_ampk.c) against C references: _i 0, f32 on 16
     * tiles (3 rows a tile, some workers repeating rows; 24 inputs, 12 pairs: two bodies of 6; 10
     * outputs: two groups of 4 and a pair); 1, the same with loads of 9 cycles, where the kernel
     * is refused (a stalled worker would miss its slot) and lwi_emit_mm's routine runs; 2, f16 (48
     * inputs: 12 quads; 8 units: a group and a pair); 3, f32 on 4 tiles, 10 rows a tile, three
     * bodies a group. */
    static const char *const slow[] = {"tile.load_latency=9", NULL};
    run_sets = _i == 1 ? slow : NULL;
    size_t b;
    if (_i == 3)
        b = gemm_checked(false, 38, 36, 8, "ipu_tiny4");
    else
        b = gemm_checked(_i == 2, 38, _i == 2 ? 48 : 24, 10, "ipu_small16");
    if (_i == 1)
        ck_assert_uint_eq(b, 0);
    else
        ck_assert_uint_gt(b, 0);
    run_sets = NULL;
}
END_TEST

START_TEST(test_matmul_f16)
{
    /* Gemm f16: Y[12,10] = A[12,8] x B[10,8]^T + bias, on 4 tiles; 8 f16 AMP units on MK1 tiles,
     * so 10 outputs are one full group and a pair */
    gemm_checked(true, 12, 8, 10, "ipu_tiny4");
    ts_graph *g = NULL;
    ts_err e;
    ts_err_init(&e);
    lowered L = {0};
    /* the built-in matmul in f16 over 16 tiles, values from the lowering's fill rounded to f16 */
    ck_assert_int_eq(ts_wl_builtin("matmul:m=32,k=16,n=24,dtype=f16", &g, &e), TS_OK);
    lower_and_run(g, "ipu_small16", &L);
    int a = ts_graph_get_node(g, 0)->in[0], b = ts_graph_get_node(g, 0)->in[1], c = ts_graph_get_node(g, 0)->out[0];
#define F(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(ts_fill_f32(t, (uint64_t)(k)))))
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 24; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < 16; k++) {
                s += F(a, i * 16 + k) * F(b, k * 24 + j);
                m += fabs(F(a, i * 16 + k) * F(b, k * 24 + j));
            }
            near16(out_f16(&L, g, c, (uint64_t)(i * 24 + j)), s, m, "c", (uint64_t)(i * 24 + j));
        }
#undef F
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_softmax)
{
    /* softmax over rows of 33 with a wide range (exp's range reduction and underflow clamp) */
    ts_graph *g = ts_graph_create("sm");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){7, 33});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    float v[7 * 33];
    for (int k = 0; k < 7 * 33; k++)
        v[k] = (float)((k * 53) % 101 - 50) * (k < 33 ? 3.0f : 0.25f);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, x, v, sizeof v, &e), TS_OK);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = 1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){x}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_tiny4", &L);
    for (int i = 0; i < 7; i++) {
        double mx = -1e30, sum = 0;
        for (int j = 0; j < 33; j++)
            mx = fmax(mx, v[i * 33 + j]);
        for (int j = 0; j < 33; j++)
            sum += exp((double)v[i * 33 + j] - mx);
        for (int j = 0; j < 33; j++) {
            double want = exp((double)v[i * 33 + j] - mx) / sum;
            /* relative 1e-5, or absolute 1e-30 for values under exp's clamp at -87 */
            double got = out_at(&L, g, y, (uint64_t)(i * 33 + j));
            ck_assert_msg(fabs(got - want) <= 1e-5 * want + 1e-30, "y[%d][%d]: got %.9g, want %.9g", i, j, got, want);
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* pads: top, left, bottom, right (ONNX's order) */
static void conv_case_pads(int C, int H, int Wd, int M, int k, int stride, const int pads[4], bool bias,
                           const char *config)
{
    ts_graph *g = ts_graph_create("conv");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, H, Wd});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){M, C, k, k});
    int b = bias ? tensor(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){M}) : -1;
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    int r = tensor(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w);
    if (bias)
        fill(g, b);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.strides[0] = at.strides[1] = stride;
    for (int i = 0; i < 4; i++)
        at.pads[i] = pads[i];
    node(g, TS_OP_CONV, "conv", (int[]){x, w, b}, bias ? 3 : 2, y, &at);
    node(g, TS_OP_RELU, "relu", (int[]){y}, 1, r, NULL);
    ts_graph_mark_output(g, r);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, config, &L);
    int Ho = (H + pads[0] + pads[2] - k) / stride + 1, Wo = (Wd + pads[1] + pads[3] - k) / stride + 1;
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                double s = bias ? val(b, m) : 0, mag = fabs(s);
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride + ky - pads[0], ix = ox * stride + kx - pads[1];
                            if (iy < 0 || ix < 0 || iy >= H || ix >= Wd)
                                continue;
                            double t = (double)val(x, (c * H + iy) * Wd + ix) * val(w, ((m * C + c) * k + ky) * k + kx);
                            s += t;
                            mag += fabs(t);
                        }
                uint64_t e = (uint64_t)((m * Ho + oy) * Wo + ox);
                near(out_at(&L, g, r, e), fmax(s, 0), mag, "r", e);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}

static void conv_case(int C, int H, int Wd, int M, int k, int stride, int pad, bool bias, const char *config)
{
    conv_case_pads(C, H, Wd, M, k, stride, (const int[]){pad, pad, pad, pad}, bias, config);
}

START_TEST(test_conv)
{
    conv_case(3, 8, 8, 6, 3, 1, 1, true, "ipu_tiny4");   /* K = 27: padded to 28 */
    conv_case(4, 9, 7, 16, 3, 2, 1, false, "ipu_small16");
    conv_case(8, 5, 5, 5, 1, 1, 0, true, "ipu_small16"); /* 1x1 */
    /* a top padding wider than the kernel: the first row blocks lie wholly in it and read no
     * image row (found by fuzz_lower_onnx: the row range wrapped around and the gather grew
     * without bound; then the image copy ran 2^32 times) */
    conv_case_pads(2, 6, 6, 3, 3, 1, (const int[]){29, 1, 1, 1}, false, "ipu_tiny4");
    conv_case_pads(2, 6, 6, 3, 3, 1, (const int[]){1, 0, 12, 2}, true, "ipu_tiny4");
}
END_TEST

START_TEST(test_matmul_columns)
{
    /* weights past a quarter of the tile memory (24 KiB on 64 KiB tiles) are split over the
     * output columns: 2 blocks of 48, rows over 8 tile pairs (a blocked output); a Softmax over
     * the rows then gathers each row from two tiles */
    ts_graph *g = ts_graph_create("cols");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){8, 64});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){64, 96});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w);
    node(g, TS_OP_MATMUL, "mm", (int[]){x, w}, 2, h, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){h}, 1, y, &at);
    ts_graph_mark_output(g, h);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    bool blocked = false;
    for (size_t i = 0; i < L.rep.nplaces; i++)
        if (L.rep.places[i].tensor == h)
            blocked = L.rep.places[i].inner == 96 && L.rep.places[i].nrb == 2;
    ck_assert_msg(blocked, "the MatMul's columns are not split in two");
    for (int i = 0; i < 8; i++) {
        double hv[96], mx = -1e30, sum = 0;
        for (int j = 0; j < 96; j++) {
            double t = 0, m = 0;
            for (int k = 0; k < 64; k++) {
                t += (double)val(x, i * 64 + k) * val(w, k * 96 + j);
                m += fabs((double)val(x, i * 64 + k) * val(w, k * 96 + j));
            }
            hv[j] = t;
            near(out_at(&L, g, h, (uint64_t)(i * 96 + j)), t, m, "h", (uint64_t)(i * 96 + j));
            mx = fmax(mx, t);
        }
        for (int j = 0; j < 96; j++)
            sum += exp(hv[j] - mx);
        for (int j = 0; j < 96; j++) {
            double want = exp(hv[j] - mx) / sum;
            near(out_at(&L, g, y, (uint64_t)(i * 96 + j)), want, want + 1e-30, "y", (uint64_t)(i * 96 + j));
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_gemm_row)
{
    /* one row (ResNet's fc): the Gemm is lowered as a 1x1 Conv, its weights split over the output
     * columns and the input over tiles (partial sums added); transB with a bias, then a MatMul
     * B[K][N] without one */
    ts_graph *g = ts_graph_create("fc");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){1, 96});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 2, (int64_t[]){30, 96});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){30});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){30, 10});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc1", (int[]){x, w1, b1}, 3, h, &at);
    node(g, TS_OP_MATMUL, "fc2", (int[]){h, w2}, 2, y, NULL);
    ts_graph_mark_output(g, h);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    double hv[30], hm[30];
    for (int j = 0; j < 30; j++) {
        double t = val(b1, j), m = fabs(t);
        for (int k = 0; k < 96; k++) {
            t += (double)val(x, k) * val(w1, j * 96 + k);
            m += fabs((double)val(x, k) * val(w1, j * 96 + k));
        }
        hv[j] = t;
        hm[j] = m;
        near(out_at(&L, g, h, (uint64_t)j), t, m, "h", (uint64_t)j);
    }
    for (int j = 0; j < 10; j++) {
        double t = 0, m = 0;
        for (int k = 0; k < 30; k++) {
            t += hv[k] * val(w2, k * 10 + j);
            m += hm[k] * fabs(val(w2, k * 10 + j));
        }
        near(out_at(&L, g, y, (uint64_t)j), t, m, "y", (uint64_t)j);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A residual block as ResNet's: Conv (no bias), BatchNormalization (folded into the Conv), Relu,
 * Conv with a bias, Add of the block input, Relu. On ipu_small16 the Convs split their output rows
 * over tiles (halo rows exchanged) and their input channels (partial sums added in a tree); the
 * result is compared with a C reference computed in double. */
START_TEST(test_residual)
{
    /* _i 1: an AMP of 8 f32 units (MK2's) */
    static const char *const amp8[] = {"amp.macs_per_cycle_f32=16", NULL};
    run_sets = _i ? amp8 : NULL;
    enum { C = 8, H = 24, Wd = 20 };
    ts_graph *g = ts_graph_create("res");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, H, Wd});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 3, 3});
    int bn[4];
    for (int i = 0; i < 4; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "bn%d", i);
        bn[i] = tensor(g, nm, TS_TENSOR_WEIGHT, 1, (int64_t[]){C});
    }
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 3, 3});
    int b2 = tensor(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){C});
    int a = tensor(g, "a", TS_TENSOR_ACTIVATION, -1, NULL), n1 = tensor(g, "n1", TS_TENSOR_ACTIVATION, -1, NULL);
    int r1 = tensor(g, "r1", TS_TENSOR_ACTIVATION, -1, NULL), c2 = tensor(g, "c2", TS_TENSOR_ACTIVATION, -1, NULL);
    int s = tensor(g, "s", TS_TENSOR_ACTIVATION, -1, NULL), y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, w2);
    fill(g, b2);
    for (int i = 0; i < 4; i++)
        fill(g, bn[i]);
    float var[C]; /* variances: positive */
    for (int m = 0; m < C; m++)
        var[m] = val(bn[3], m) + 1.5f;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, bn[3], var, sizeof var, &e), TS_OK);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.strides[0] = at.strides[1] = 1;
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_CONV, "conv1", (int[]){x, w1}, 2, a, &at);
    ts_graph_attrs ab;
    ts_graph_attrs_init(&ab);
    node(g, TS_OP_BATCHNORM, "bn1", (int[]){a, bn[0], bn[1], bn[2], bn[3]}, 5, n1, &ab);
    node(g, TS_OP_RELU, "relu1", (int[]){n1}, 1, r1, NULL);
    node(g, TS_OP_CONV, "conv2", (int[]){r1, w2, b2}, 3, c2, &at);
    node(g, TS_OP_ADD, "add", (int[]){c2, x}, 2, s, NULL);
    node(g, TS_OP_RELU, "relu2", (int[]){s}, 1, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    /* the plan splits rows (a blocked output) and input channels (more tiles than hold the output) */
    bool rows = false, parts = false;
    for (size_t i = 0; i < L.rep.nplaces; i++)
        rows |= L.rep.places[i].inner > 0;
    for (size_t i = 0; i < L.rep.nlayers; i++) {
        const ts_graph_node *nd = ts_graph_get_node(g, L.rep.layers[i].node);
        for (size_t k = 0; nd->op == TS_OP_CONV && k < L.rep.nplaces; k++)
            if (L.rep.places[k].tensor == nd->out[0])
                parts |= L.rep.layers[i].tiles > L.rep.places[k].ntiles;
    }
    ck_assert_msg(rows && parts, "rows split %d, input channels split %d", rows, parts);
    int yo = ts_graph_find(g, "y"); /* ids after finalize (the folded BatchNormalization's are gone) */
    /* reference: r1 = relu(bn(conv1(x))), y = relu(conv2(r1) + b2 + x); mag = sums of |terms| */
    static double ref1[C][H][Wd], mag1[C][H][Wd];
    for (int m = 0; m < C; m++) {
        double sc = val(bn[0], m) / sqrt((double)var[m] + 1e-5);
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < Wd; ox++) {
                double v = 0, mg = 0;
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int iy = oy + ky - 1, ix = ox + kx - 1;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= Wd)
                                continue;
                            double t = (double)val(x, (c * H + iy) * Wd + ix) * val(w1, ((m * C + c) * 3 + ky) * 3 + kx);
                            v += t;
                            mg += fabs(t);
                        }
                double o = (v - val(bn[2], m)) * sc + val(bn[1], m);
                ref1[m][oy][ox] = fmax(o, 0);
                mag1[m][oy][ox] = (mg + fabs(val(bn[2], m))) * fabs(sc) + fabs(val(bn[1], m));
            }
    }
    for (int m = 0; m < C; m++)
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < Wd; ox++) {
                double v = val(b2, m), mg = fabs(v);
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int iy = oy + ky - 1, ix = ox + kx - 1;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= Wd)
                                continue;
                            double wv = val(w2, ((m * C + c) * 3 + ky) * 3 + kx);
                            v += ref1[c][iy][ix] * wv;
                            mg += fabs(wv) * mag1[c][iy][ix];
                        }
                uint64_t k = (uint64_t)((m * H + oy) * Wd + ox);
                double xv = val(x, (int64_t)k);
                near(out_at(&L, g, yo, k), fmax(v + xv, 0), mg + fabs(xv), "y", k);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
    run_sets = NULL;
}
END_TEST

/* The residual block in f16 (the whole graph f16, as the built-in resnet50 with dtype=f16): a 1x1
 * Conv with bias, Relu, a 3x3 Conv with bias (pad 1), Add of the block input, Relu. The Convs
 * round their inputs and weights to f16 for f16v4amp (8 units of 4 on MK1 tiles) and accumulate in
 * f32; activations are held in f32 words. Reference in double from the f16-rounded input and
 * weights, the 3x3 Conv's inputs rounded to f16 as the lowering does: |got - want| <= 2^-10 x sum
 * of |products| + 1e-6 (f32 sums may round an input to the f16 next to the reference's); then
 * GlobalAveragePool, Flatten and a one-row Gemm, checked against the y computed: 2^-10 + 1e-5 of
 * each product (the f16 rounding of the means, f32 sums) + 1e-6. */
enum { /* opcode numbers: the IPU's one table */
#define IPU_OP(id, mn, ops, cls, unit, ctx, lat, ev, ec, rd, wr, doc) OP_##id,
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
};

static int tensor16(ts_graph *g, const char *name, ts_tensor_kind kind, int rank, const int64_t *dims)
{
    ts_err e;
    ts_err_init(&e);
    int id = -1;
    ck_assert_int_eq(ts_graph_add_tensor(g, name, kind, TS_DT_F16, rank, dims, &id, &e), TS_OK);
    if (rank > 0) {
        int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(g, id));
        uint16_t *h = ts_calloc((size_t)n, 2);
        for (int64_t k = 0; k < n; k++)
            h[k] = ts_f32_to_f16(val(id, k));
        ck_assert_int_eq(ts_graph_set_data(g, id, h, (size_t)n * 2, &e), TS_OK);
        ts_free(h);
    }
    return id;
}

START_TEST(test_residual_f16)
{
    enum { C = 12, H = 10, Wd = 9 };
    ts_graph *g = ts_graph_create("res16");
    int x = tensor16(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, H, Wd});
    int w1 = tensor16(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 1, 1});
    int b1 = tensor16(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){C});
    int w2 = tensor16(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 3, 3});
    int b2 = tensor16(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){C});
    int a = tensor16(g, "a", TS_TENSOR_ACTIVATION, -1, NULL), r1 = tensor16(g, "r1", TS_TENSOR_ACTIVATION, -1, NULL);
    int c2 = tensor16(g, "c2", TS_TENSOR_ACTIVATION, -1, NULL), s = tensor16(g, "s", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor16(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    /* then ResNet's head: GlobalAveragePool, Flatten, Gemm (transB, bias): a one-row Gemm in f16 */
    int wf = tensor16(g, "wf", TS_TENSOR_WEIGHT, 2, (int64_t[]){10, C});
    int bf = tensor16(g, "bf", TS_TENSOR_WEIGHT, 1, (int64_t[]){10});
    int gp = tensor16(g, "gp", TS_TENSOR_ACTIVATION, -1, NULL), fl = tensor16(g, "fl", TS_TENSOR_ACTIVATION, -1, NULL);
    int z = tensor16(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
    ts_graph_attrs a1, a3;
    ts_graph_attrs_init(&a1);
    a1.strides[0] = a1.strides[1] = 1;
    a3 = a1;
    a3.pads[0] = a3.pads[1] = a3.pads[2] = a3.pads[3] = 1;
    node(g, TS_OP_CONV, "conv1", (int[]){x, w1, b1}, 3, a, &a1);
    node(g, TS_OP_RELU, "relu1", (int[]){a}, 1, r1, NULL);
    node(g, TS_OP_CONV, "conv2", (int[]){r1, w2, b2}, 3, c2, &a3);
    node(g, TS_OP_ADD, "add", (int[]){c2, x}, 2, s, NULL);
    node(g, TS_OP_RELU, "relu2", (int[]){s}, 1, y, NULL);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){y}, 1, gp, NULL);
    ts_graph_attrs af;
    ts_graph_attrs_init(&af);
    af.axis = 1;
    node(g, TS_OP_FLATTEN, "flat", (int[]){gp}, 1, fl, &af);
    ts_graph_attrs ag;
    ts_graph_attrs_init(&ag);
    ag.trans_b = true;
    node(g, TS_OP_GEMM, "fc", (int[]){fl, wf, bf}, 3, z, &ag);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    /* the Convs and the Gemm multiply on f16v4amp, none on f32v2amp */
    size_t amp16 = 0, amp32 = 0;
    for (size_t i = 0; i < L.prog->nstreams; i++)
        for (uint32_t k = 0; k < L.prog->streams[i].n; k++) {
            amp16 += L.prog->streams[i].insn[k].op == OP_F16V4AMP;
            amp32 += L.prog->streams[i].insn[k].op == OP_F32V2AMP;
        }
    ck_assert_msg(amp16 > 0 && amp32 == 0, "f16v4amp %zu, f32v2amp %zu", amp16, amp32);
    static double yref[C][H][Wd]; /* y as computed */
    double ytol;
#define R16(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))))
    static double ref1[C][H][Wd];
    for (int m = 0; m < C; m++)
        for (int p = 0; p < H * Wd; p++) {
            double v = R16(b1, m);
            for (int c = 0; c < C; c++)
                v += R16(x, c * H * Wd + p) * R16(w1, m * C + c);
            ref1[m][p / Wd][p % Wd] = fmax(v, 0);
        }
    for (int m = 0; m < C; m++)
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < Wd; ox++) {
                double v = R16(b2, m), mg = fabs(v);
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            int iy = oy + ky - 1, ix = ox + kx - 1;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= Wd)
                                continue;
                            /* the Conv rounds its inputs to f16 (the f32 sums round alike) */
                            double r16 = ts_f16_to_f32(ts_f32_to_f16((float)ref1[c][iy][ix]));
                            double t = r16 * R16(w2, ((m * C + c) * 3 + ky) * 3 + kx);
                            v += t;
                            mg += fabs(t);
                        }
                uint64_t k = (uint64_t)((m * H + oy) * Wd + ox);
                double want = fmax(v + R16(x, (int64_t)k), 0), got = out_at(&L, g, y, k);
                yref[m][oy][ox] = got;
                ytol = mg / 1024 + 1e-6;
                ck_assert_msg(fabs(got - want) <= ytol, "y[%llu]: got %.9g, want %.9g",
                              (unsigned long long)k, got, want);
            }
    /* z = bf + wf . mean(y) from the y computed: the Gemm rounds the means to f16, so 2^-10 of
     * each product, + 1e-5 x their sum (f32 sums) + 1e-6 */
    for (int j = 0; j < 10; j++) {
        double v = R16(bf, j), tol = 1e-6 + 1e-5 * fabs(v);
        for (int c = 0; c < C; c++) {
            double mean = 0;
            for (int p = 0; p < H * Wd; p++)
                mean += yref[c][p / Wd][p % Wd];
            mean /= H * Wd;
            double wv = R16(wf, j * C + c);
            v += mean * wv;
            tol += fabs(wv) * fabs(mean) * (1.0 / 1024 + 1e-5);
        }
        double got = out_at(&L, g, z, (uint64_t)j);
        ck_assert_msg(fabs(got - v) <= tol, "z[%d]: got %.9g, want %.9g (tolerance %.3g)", j, got, v, tol);
    }
#undef R16
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_pool)
{
    /* MaxPool 3x3 stride 2 pad 1 (ResNet's) and GlobalAveragePool of the same input, batch 2 */
    ts_graph *g = ts_graph_create("pool");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){2, 5, 9, 9});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    int z = tensor(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.kernel[0] = at.kernel[1] = 3;
    at.strides[0] = at.strides[1] = 2;
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_MAXPOOL, "mp", (int[]){x}, 1, y, &at);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){x}, 1, z, NULL);
    /* AveragePool 3x3 stride 2 pad 1, padding not counted (the ONNX default) */
    int v = tensor(g, "v", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_AVGPOOL, "ap", (int[]){x}, 1, v, &at);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, z);
    ts_graph_mark_output(g, v);
    finalize(g);
    lowered L = {0};
    /* ipu_tiny4: three planes a tile (copied into the image); ipu_small16: one (gathered into it) */
    lower_and_run(g, _i ? "ipu_small16" : "ipu_tiny4", &L);
    for (int p = 0; p < 10; p++) {
        double sum = 0, mag = 0;
        for (int k = 0; k < 81; k++) {
            sum += val(x, p * 81 + k);
            mag += fabs(val(x, p * 81 + k));
        }
        near(out_at(&L, g, z, (uint64_t)p), sum / 81, mag / 81, "z", (uint64_t)p);
        for (int oy = 0; oy < 5; oy++)
            for (int ox = 0; ox < 5; ox++) {
                float m = -INFINITY;
                double as = 0, am = 0;
                int cnt = 0;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
                        if (iy >= 0 && ix >= 0 && iy < 9 && ix < 9) {
                            m = fmaxf(m, val(x, p * 81 + iy * 9 + ix));
                            as += val(x, p * 81 + iy * 9 + ix);
                            am += fabs(val(x, p * 81 + iy * 9 + ix));
                            cnt++;
                        }
                    }
                uint64_t e = (uint64_t)(p * 25 + oy * 5 + ox);
                near(out_at(&L, g, v, e), as / cnt, am / cnt, "v", e);
                ck_assert_msg(out_at(&L, g, y, e) == m, "y[%llu]: got %g, want %g", (unsigned long long)e,
                              (double)out_at(&L, g, y, e), (double)m);
            }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* ---- the machine facts ---- */

/* A family that is not the IPU, for the refusal. */
typedef struct toy_cfg { uint64_t lanes; } toy_cfg;
static const ts_cfg_key toy_keys[] = {
    {"lanes", TS_CFG_UINT, TS_UNIT_NONE, 1, 64, "4", "lanes of the toy", offsetof(toy_cfg, lanes), NULL},
};
static const ts_schema toy_schema = {.arch = "toy", .title = "a toy", .keys = toy_keys, .nkeys = 1,
                                     .size = sizeof(toy_cfg)};
static const ts_schema *toy_lookup(const char *arch) { return strcmp(arch, "toy") ? NULL : &toy_schema; }

/* The key the lowering once read by name, as an unsigned integer. */
static uint64_t key_u64(const ts_config *cfg, const char *path)
{
    uint64_t v = 0;
    ck_assert_msg(ts_config_u64(cfg, path, &v) == 0, "no key %s", path);
    return v;
}

START_TEST(test_target)
{
    /* the configs' values (configs/ipu_mk1.yaml, ipu_mk2.yaml), which are their keys' values */
    static const struct {
        const char *config;
        ts_ipu_target want;
    } cases[] = {
        {"ipu_mk1", {.tiles = 1216, .sram_bytes = 256 * 1024, .element_bytes = 32 * 1024, .interleaved_base = 0,
                     .amp_macs_f32 = 8, .amp_macs_f16 = 32, .amp_units_f32 = 4, .amp_units_f16 = 8, .workers = 6,
                     .xbytes = 4, .sync_cycles = 90, .load_latency = 6, .load_bytes = 16}},
        {"ipu_mk2", {.tiles = 1472, .sram_bytes = 624 * 1024, .element_bytes = 32 * 1024, .interleaved_base = 0,
                     .amp_macs_f32 = 16, .amp_macs_f16 = 64, .amp_units_f32 = 8, .amp_units_f16 = 16, .workers = 6,
                     .xbytes = 4, .sync_cycles = 118, .load_latency = 6, .load_bytes = 16}},
    };
    ts_err e;
    ts_err_init(&e);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_config *cfg = ipu_test_config(cases[i].config, NULL);
        ts_ipu_target tg;
        ck_assert_int_eq(ts_ipu_target_from_config(cfg, &tg, &e), TS_OK);
        const ts_ipu_target *w = &cases[i].want;
        ck_assert_uint_eq(tg.tiles, w->tiles);
        ck_assert_uint_eq(tg.sram_bytes, w->sram_bytes);
        ck_assert_uint_eq(tg.element_bytes, w->element_bytes);
        ck_assert_uint_eq(tg.interleaved_base, w->interleaved_base);
        ck_assert_uint_eq(tg.amp_macs_f32, w->amp_macs_f32);
        ck_assert_uint_eq(tg.amp_macs_f16, w->amp_macs_f16);
        ck_assert_uint_eq(tg.amp_units_f32, w->amp_units_f32);
        ck_assert_uint_eq(tg.amp_units_f16, w->amp_units_f16);
        ck_assert_uint_eq(tg.workers, w->workers);
        ck_assert_uint_eq(tg.xbytes, w->xbytes);
        ck_assert_uint_eq(tg.sync_cycles, w->sync_cycles);
        ck_assert_uint_eq(tg.load_latency, w->load_latency);
        ck_assert_uint_eq(tg.load_bytes, w->load_bytes);
        /* the same as the keys read by name, and as the typed config's derived fields */
        ck_assert_uint_eq(tg.tiles, key_u64(cfg, "tiles"));
        ck_assert_uint_eq(tg.sram_bytes, key_u64(cfg, "tile.sram"));
        ck_assert_uint_eq(tg.element_bytes, key_u64(cfg, "tile.element_bytes"));
        ck_assert_uint_eq(tg.interleaved_base, key_u64(cfg, "tile.interleaved_base"));
        ck_assert_uint_eq(tg.amp_macs_f32, key_u64(cfg, "amp.macs_per_cycle_f32"));
        ck_assert_uint_eq(tg.amp_macs_f16, key_u64(cfg, "amp.macs_per_cycle_f16"));
        ck_assert_uint_eq(tg.workers, key_u64(cfg, "tile.worker_contexts"));
        ck_assert_uint_eq(tg.xbytes, key_u64(cfg, "exchange.bytes_per_cycle"));
        ck_assert_uint_eq(tg.sync_cycles, key_u64(cfg, "sync.internal_cycles"));
        ck_assert_uint_eq(tg.load_latency, key_u64(cfg, "tile.load_latency"));
        ck_assert_uint_eq(tg.load_bytes, key_u64(cfg, "tile.load_bytes_per_cycle"));
        const ts_ipu_cfg *c = ts_config_data(cfg);
        ck_assert_uint_eq(tg.amp_units_f32, c->amp_units_f32);
        ck_assert_uint_eq(tg.amp_units_f16, c->amp_units_f16);
        /* the lowering's parameters hold the target, the settings at their defaults (planner auto) */
        ts_lower_ipu_params p;
        ck_assert_int_eq(ts_lower_ipu_params_from_config(cfg, &p, &e), TS_OK);
        ck_assert_int_eq(memcmp(&p.target, &tg, sizeof tg), 0);
        ck_assert_int_eq(p.planner, TS_LOWER_PLANNER_AUTO);
        ck_assert_uint_eq(p.max_tiles, 0);
        ck_assert_ptr_null(p.t10_plan);
        ts_config_destroy(cfg);
    }
    /* another family's config is refused, by name */
    static const char toy[] = "arch: toy\nname: toy1\nlanes: 8\n";
    ts_config_opts o = {.schema = toy_lookup};
    ts_config *cfg = NULL;
    ck_assert_int_eq(ts_config_load_string(&cfg, "toy1.yaml", toy, sizeof toy - 1, &o, &e), TS_OK);
    ts_ipu_target tg;
    ck_assert_int_eq(ts_ipu_target_from_config(cfg, &tg, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "config 'toy1' is for arch 'toy', not 'ipu'");
    ts_err_free(&e);
    ts_err_init(&e);
    ts_lower_ipu_params p;
    ck_assert_int_eq(ts_lower_ipu_params_from_config(cfg, &p, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "config 'toy1' is for arch 'toy', not 'ipu'");
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_errors)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ts_lower_report rep;
    /* does not fit: a 1024 x 1024 f32 weight is 4 MiB, ipu_tiny4's 4 tiles have 64 KiB each: refused
     * before planning, naming the weight and the shortfall */
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("matmul:m=8,k=1024,n=1024", &g, &e), TS_OK);
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(e.msg, "'matmul' does not fit: its weights take 4194304 bytes, the 4 tiles hold 262144 (3932160 "
                            "bytes short); the first weight past the chip's memory is 'B' of MatMul 'matmul'");
    ts_graph_destroy(g);
    /* fits the chip but not a tile's share: 512 x 64 f32 weights (128 KiB) with rows of 512 */
    ck_assert_int_eq(ts_wl_builtin("matmul:m=64,k=512,n=64", &g, &e), TS_OK);
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(e.msg, "MatMul 'matmul' needs ") && strstr(e.msg, "KiB per tile") &&
                      strstr(e.msg, "the tile has 64 KiB: ") && strstr(e.msg, " bytes short (") &&
                      strstr(e.msg, "KiB over"),
                  "%s", e.msg);
    ts_graph_destroy(g);
    /* an operator the lowering does not handle names itself */
    g = ts_graph_create("t");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 4});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_ERF, "erf", (int[]){x}, 1, y, NULL);
    finalize(g);
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "the IPU lowering does not support 1 operator of this model: Erf (node 'erf')");
    ts_graph_destroy(g);
    /* a dtype the lowering does not take is the form it refuses */
    g = ts_graph_create("i8");
    x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){4, 4});
    ts_graph_mark_output(g, chain(g, TS_OP_RELU, "r", x, -1, NULL));
    finalize(g);
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "the IPU lowering does not support 1 operator of this model: Relu on i8 (node 'r')");
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* Ten operators the lowering does not take, of five kinds, among two it takes (a Relu, a Gelu):
 * one error lists all ten before anything is planned, grouped, with the count and the first node
 * of each. */
START_TEST(test_unsupported_all)
{
    static const struct {
        ts_graph_op op;
        const char *name;
        bool self; /* a second input: x itself */
    } v[] = {{TS_OP_ERF, "t0", false},  {TS_OP_SQRT, "s0", false}, {TS_OP_RELU, "r0", false},
             {TS_OP_ERF, "t1", false},  {TS_OP_POW, "p0", true},   {TS_OP_REDUCEMEAN, "e0", false},
             {TS_OP_SQRT, "s1", false}, {TS_OP_POW, "p1", true},   {TS_OP_GELU, "g2", false},
             {TS_OP_CAST, "q0", false}, {TS_OP_CAST, "c0", false}, {TS_OP_ERF, "t2", false}};
    ts_graph *g = ts_graph_create("ten");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 8});
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        x = chain(g, v[i].op, v[i].name, x, v[i].self ? x : -1, NULL);
    ts_graph_mark_output(g, x);
    finalize(g);
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ts_lower_report rep;
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(e.msg, "the IPU lowering does not support 5 operators of this model (10 nodes): Erf (3 nodes, "
                            "first 't0'), Sqrt (2 nodes, first 's0'), Pow (2 nodes, first 'p0'), ReduceMean "
                            "(node 'e0'), Cast (2 nodes, first 'q0')");
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_builtin_matmul)
{
    /* the built-in matmul with weights the lowering fills in, over 16 tiles; the numbers are
     * checked against the same fill */
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("matmul:m=32,k=16,n=24", &g, &e), TS_OK);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    int a = ts_graph_find(g, ts_graph_get_tensor(g, ts_graph_get_node(g, 0)->in[0])->name);
    int b = ts_graph_get_node(g, 0)->in[1];
    int c = ts_graph_get_node(g, 0)->out[0];
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 24; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < 16; k++) {
                double t = (double)ts_fill_f32(a, (uint64_t)(i * 16 + k)) * ts_fill_f32(b, (uint64_t)(k * 24 + j));
                s += t;
                m += fabs(t);
            }
            near(out_at(&L, g, c, (uint64_t)(i * 24 + j)), s, m, "c", (uint64_t)(i * 24 + j));
        }
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* A normalisation's scale sc and bias bi filled, and its attributes: the last axis, epsilon 1e-5. */
static ts_graph_attrs norm_weights(ts_graph *g, int sc, int bi)
{
    fill(g, sc);
    fill(g, bi);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    at.epsilon = 1e-5;
    return at;
}

/* ---- the operators of a BERT layer ---- */

static double gelu_ref(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

START_TEST(test_eltwise_broadcast)
{
    /* Add of a bias [44] to x [50, 44] held in chunks that do not start on rows (3 tiles), Gelu,
     * Div by a constant (x times its f32 reciprocal), Sub of a [44] weight and Mul by a weight of
     * x's shape; then a bias of 96 added to a column-split MatMul's blocked output (ipu_small16) */
    ts_graph *g = ts_graph_create("bc");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){50, 44});
    int b = tensor(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){44});
    int c = tensor(g, "c", TS_TENSOR_CONST, 0, NULL);
    int s = tensor(g, "s", TS_TENSOR_WEIGHT, 2, (int64_t[]){1, 44});
    int m = tensor(g, "m", TS_TENSOR_WEIGHT, 2, (int64_t[]){50, 44});
    int y[6];
    for (int i = 0; i < 6; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "y%d", i);
        y[i] = tensor(g, nm, TS_TENSOR_ACTIVATION, -1, NULL);
    }
    fill_scaled(g, x, 3.0f);
    fill(g, b);
    fill(g, s);
    fill(g, m);
    float three = 3.0f;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, c, &three, 4, &e), TS_OK);
    node(g, TS_OP_ADD, "add", (int[]){x, b}, 2, y[0], NULL);
    node(g, TS_OP_GELU, "gelu", (int[]){y[0]}, 1, y[1], NULL);
    node(g, TS_OP_DIV, "div", (int[]){y[1], c}, 2, y[2], NULL);
    node(g, TS_OP_SUB, "sub", (int[]){y[2], s}, 2, y[3], NULL);
    node(g, TS_OP_MUL, "mul", (int[]){y[3], m}, 2, y[4], NULL);
    node(g, TS_OP_ADD, "add2", (int[]){b, x}, 2, y[5], NULL); /* the weight first, as ONNX exports have it */
    for (int i = 0; i < 6; i++)
        ts_graph_mark_output(g, y[i]);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_tiny4", &L);
    ck_assert_uint_eq(L.rep.tiles_used, 3);
    for (int k = 0; k < 50 * 44; k++) {
        double xv = (double)val(x, k) * 3.0, a = xv + val(b, k % 44);
        double a32 = (double)(float)a; /* the f32 sum Gelu reads */
        double gl = gelu_ref(a32);
        near(out_at(&L, g, y[0], (uint64_t)k), a, fabs(xv) + fabs(val(b, k % 44)), "add", (uint64_t)k);
        ck_assert_float_eq(out_at(&L, g, y[5], (uint64_t)k), out_at(&L, g, y[0], (uint64_t)k));
        /* Gelu: erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), so 1e-6 (1 + |x|); each later op is
         * checked on the simulated output of the one before */
        double got = out_at(&L, g, y[1], (uint64_t)k);
        ck_assert_msg(fabs(got - gl) <= 1e-6 * (1.0 + fabs(a32)), "gelu[%d]: got %.9g, want %.9g", k, got, gl);
        double d = out_at(&L, g, y[2], (uint64_t)k), sb = out_at(&L, g, y[3], (uint64_t)k);
        near(d, got / 3.0, fabs(got), "div", (uint64_t)k);
        near(sb, d - val(s, k % 44), fabs(d) + fabs(val(s, k % 44)), "sub", (uint64_t)k);
        near(out_at(&L, g, y[4], (uint64_t)k), sb * val(m, k), fabs(sb * val(m, k)), "mul", (uint64_t)k);
    }
    lowered_free(&L);
    ts_graph_destroy(g);

    g = ts_graph_create("bcb");
    x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){8, 64});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){64, 96});
    b = tensor(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){96});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL), hb = tensor(g, "hb", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w);
    fill(g, b);
    node(g, TS_OP_MATMUL, "mm", (int[]){x, w}, 2, h, NULL);
    node(g, TS_OP_ADD, "bias", (int[]){h, b}, 2, hb, NULL);
    ts_graph_mark_output(g, hb);
    finalize(g);
    lower_and_run(g, "ipu_small16", &L);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 96; j++) {
            double sm = val(b, j), mg = fabs(sm);
            for (int k = 0; k < 64; k++) {
                sm += (double)val(x, i * 64 + k) * val(w, k * 96 + j);
                mg += fabs((double)val(x, i * 64 + k) * val(w, k * 96 + j));
            }
            near(out_at(&L, g, hb, (uint64_t)(i * 96 + j)), sm, mg, "hb", (uint64_t)(i * 96 + j));
        }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_layernorm)
{
    /* LayerNorm over rows of 40 (27 rows: 7 a tile on ipu_tiny4, rows over the workers; 2 a tile
     * on ipu_small16, each row split over the workers), with scale and bias, and without either,
     * one row offset by 1000 (the mean is taken out before the variance), and RMSNorm with a scale;
     * f32 within 2e-6 (1 + |y|) of the double reference */
    ts_graph *g = ts_graph_create("ln");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){1, 27, 40});
    int sc = tensor(g, "scale", TS_TENSOR_WEIGHT, 1, (int64_t[]){40});
    int bi = tensor(g, "bias", TS_TENSOR_WEIGHT, 1, (int64_t[]){40});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL), z = tensor(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
    float v[27 * 40];
    for (int k = 0; k < 27 * 40; k++)
        v[k] = val(x, k) * (float)(1 + k / 40) + (k / 40 == 4 ? 1000.0f : 0.0f);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_graph_set_data(g, x, v, sizeof v, &e), TS_OK);
    ts_graph_attrs at = norm_weights(g, sc, bi);
    node(g, TS_OP_LAYERNORM, "ln", (int[]){x, sc, bi}, 3, y, &at);
    node(g, TS_OP_LAYERNORM, "ln0", (int[]){x}, 1, z, &at);
    int w = tensor(g, "w", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_RMSNORM, "rms", (int[]){x, sc}, 2, w, &at);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, z);
    ts_graph_mark_output(g, w);
    finalize(g);
    for (int cfg = 0; cfg < 2; cfg++) {
        lowered L = {0};
        lower_and_run(g, cfg ? "ipu_small16" : "ipu_tiny4", &L);
        for (int r = 0; r < 27; r++) {
            double mean = 0, var = 0, ms = 0;
            for (int j = 0; j < 40; j++) {
                mean += v[r * 40 + j] / 40.0;
                ms += (double)v[r * 40 + j] * v[r * 40 + j] / 40.0;
            }
            for (int j = 0; j < 40; j++)
                var += (v[r * 40 + j] - mean) * (v[r * 40 + j] - mean) / 40.0;
            for (int j = 0; j < 40; j++) {
                double nrm = (v[r * 40 + j] - mean) / sqrt(var + 1e-5), want = nrm * val(sc, j) + val(bi, j);
                double got = out_at(&L, g, y, (uint64_t)(r * 40 + j)), got0 = out_at(&L, g, z, (uint64_t)(r * 40 + j));
                /* row 4's values are near 1000, so x - mean carries f32 rounding of 1000 (6e-5) */
                double tol = (r == 4 ? 1e-4 : 2e-6) * (1.0 + fabs(nrm));
                ck_assert_msg(fabs(got - want) <= tol, "y[%d][%d]: got %.9g, want %.9g", r, j, got, want);
                ck_assert_msg(fabs(got0 - nrm) <= tol, "z[%d][%d]: got %.9g, want %.9g", r, j, got0, nrm);
                /* RMSNorm: no mean taken out, so no cancellation in any row */
                double rn = v[r * 40 + j] / sqrt(ms + 1e-5), gotr = out_at(&L, g, w, (uint64_t)(r * 40 + j));
                ck_assert_msg(fabs(gotr - rn * val(sc, j)) <= 2e-6 * (1.0 + fabs(rn)), "w[%d][%d]: got %.9g, want %.9g",
                              r, j, gotr, rn * val(sc, j));
            }
        }
        lowered_free(&L);
    }
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_liveness_reuse)
{
    /* A chain of eight elementwise operators on x[16][1024] over the 16 tiles of ipu_small16, each
     * output 4 KiB a tile, with skips that keep up to three of them live at once:
     *   a = relu(x), b = a*x, c = b+a, d = c-x, e = d*d, f = e+c, g = relu(f), h = g-e.
     * The nine tensors take 36 KiB a tile together; with the tile memory lowered to 24 KiB the chain
     * lowers and runs only because each tensor's memory is reused after its last reader: the report
     * places some of them at the same address, and the values are exact (f32 on the workers, the
     * same operations in the same order as the reference). With 8 KiB a tile, too little for the
     * three live tensors, it fails naming the operator and the bytes short. */
    static const char *const fit[] = {"tile.sram=24 KiB", NULL}, *const tight[] = {"tile.sram=8 KiB", NULL};
    ts_graph *g = ts_graph_create("liveness");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){16, 1024});
    fill(g, x);
    int a = chain(g, TS_OP_RELU, "a", x, -1, NULL);
    int b = chain(g, TS_OP_MUL, "b", a, x, NULL);
    int c = chain(g, TS_OP_ADD, "c", b, a, NULL);
    int d = chain(g, TS_OP_SUB, "d", c, x, NULL);
    int e = chain(g, TS_OP_MUL, "e", d, d, NULL);
    int f = chain(g, TS_OP_ADD, "f", e, c, NULL);
    int r = chain(g, TS_OP_RELU, "g", f, -1, NULL);
    int h = chain(g, TS_OP_SUB, "h", r, e, NULL);
    ts_graph_mark_output(g, h);
    finalize(g);
    const int acts[] = {x, a, b, c, d, e, f, r, h};
    const size_t nacts = sizeof acts / sizeof acts[0];

    ts_program *p = NULL;
    ts_lower_report rep;
    ts_err er;
    ts_err_init(&er);
    run_sets = tight;
    ck_assert_int_eq(compile(g, "ipu_small16", tight, &p, &rep, &er), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(er.msg, " needs ") && strstr(er.msg, " bytes short") && strstr(er.msg, "'"), "%s", er.msg);
    ts_err_free(&er);

    run_sets = fit;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    ck_assert_uint_le(L.rep.mem_bytes, 24 * 1024);
    uint64_t sum = 0, addr[9] = {0};
    for (size_t k = 0; k < nacts; k++) {
        bool seen = false;
        for (size_t i = 0; i < L.rep.nplaces; i++)
            if (L.rep.places[i].tensor == acts[k]) {
                const ts_lower_place *q = &L.rep.places[i];
                ck_assert_uint_eq(q->ntiles, 16);
                sum += q->chunk * (q->es ? q->es : 4);
                addr[k] = q->addr;
                seen = true;
            }
        ck_assert_msg(seen, "tensor %d not placed", acts[k]);
    }
    ck_assert_uint_gt(sum, 24 * 1024); /* all of them at once would not fit */
    size_t shared = 0;
    for (size_t k = 0; k < nacts; k++)
        for (size_t j = k + 1; j < nacts; j++)
            shared += addr[k] == addr[j];
    ck_assert_uint_ge(shared, 3); /* dead tensors' memory taken again */
    for (int64_t k = 0; k < 16 * 1024; k++) {
        float xv = val(x, k), av = xv > 0 ? xv : 0, bv = av * xv, cv = bv + av, dv = cv - xv, ev = dv * dv;
        float fv = ev + cv, gv = fv > 0 ? fv : 0, hv = gv - ev;
        float got = out_at(&L, g, h, (uint64_t)k);
        ck_assert_msg(got == hv, "h[%lld]: got %.9g, want %.9g", (long long)k, (double)got, (double)hv);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
    run_sets = NULL;
}
END_TEST

START_TEST(test_spread)
{
    /* One row (a decode step's) through LayerNorm, Relu, LayerNorm on ipu_small16: an operator of
     * one tile starts at a tile chosen by its kind, shapes and name less its layer number, not at
     * tile 0, the Relu runs where its input lies, and the second LayerNorm (the same kind and
     * shapes, the same name but for its layer's number) lands where the first did; the values are
     * the double reference's within 2e-6 (1 + |y|) */
    ts_graph *g = ts_graph_create("spread");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 3, (int64_t[]){1, 1, 40});
    fill(g, x);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = -1;
    at.epsilon = 1e-5;
    int a = chain(g, TS_OP_LAYERNORM, "layers.0.ln", x, -1, &at);
    int r = chain(g, TS_OP_RELU, "relu", a, -1, NULL);
    int b = chain(g, TS_OP_LAYERNORM, "layers.1.ln", r, -1, &at);
    ts_graph_mark_output(g, a);
    ts_graph_mark_output(g, b);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    uint32_t t0[3] = {0}, seen = 0;
    for (size_t i = 0; i < L.rep.nplaces; i++)
        for (int k = 0; k < 3; k++)
            if (L.rep.places[i].tensor == (int[]){a, r, b}[k]) {
                t0[k] = L.rep.places[i].t0;
                ck_assert_uint_eq(L.rep.places[i].ntiles, 1);
                seen |= 1u << k;
            }
    ck_assert_uint_eq(seen, 7);
    ck_assert_uint_ne(t0[0], 0);
    ck_assert_uint_eq(t0[1], t0[0]);
    ck_assert_uint_eq(t0[2], t0[0]);
    ck_assert_uint_gt(L.rep.tiles_used, t0[0]);
    double v[40], m = 0, q = 0, m2 = 0, q2 = 0;
    for (int j = 0; j < 40; j++)
        m += val(x, j) / 40.0;
    for (int j = 0; j < 40; j++)
        q += (val(x, j) - m) * (val(x, j) - m) / 40.0;
    for (int j = 0; j < 40; j++) {
        v[j] = (val(x, j) - m) / sqrt(q + 1e-5);
        double got = out_at(&L, g, a, (uint64_t)j);
        ck_assert_msg(fabs(got - v[j]) <= 2e-6 * (1 + fabs(v[j])), "a[%d]: got %.9g, want %.9g", j, got, v[j]);
        v[j] = v[j] > 0 ? v[j] : 0;
        m2 += v[j] / 40.0;
    }
    for (int j = 0; j < 40; j++)
        q2 += (v[j] - m2) * (v[j] - m2) / 40.0;
    for (int j = 0; j < 40; j++) {
        double want = (v[j] - m2) / sqrt(q2 + 1e-5), got = out_at(&L, g, b, (uint64_t)j);
        ck_assert_msg(fabs(got - want) <= 2e-6 * (1 + fabs(want)), "b[%d]: got %.9g, want %.9g", j, got, want);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_code_fits)
{
    /* A chain of 800 Relus of one row on ipu_tiny4 (64 KiB tiles, 16,384 instructions): the data
     * fits, the code does not; the lowering says which tile, by how many bytes, and names the
     * operators that put the most code there (the first of equals) */
    ts_graph *g = ts_graph_create("long");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){1, 8});
    fill(g, x);
    for (int i = 0; i < 800; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "r%d", i);
        x = chain(g, TS_OP_RELU, nm, x, -1, NULL);
    }
    ts_graph_mark_output(g, x);
    finalize(g);
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ts_lower_report rep;
    ck_assert_int_eq(compile(g, "ipu_tiny4", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    unsigned n = 0, bytes = 0, cap = 0, over = 0, most = 0;
    ck_assert_msg(sscanf(e.msg, "tile 0: code of %u instructions (%u bytes) does not fit its memory of %u bytes: %u "
                         "bytes over (the most instructions from Relu 'r0' %u, Relu 'r1' ", &n, &bytes, &cap, &over,
                         &most) == 5, "%s", e.msg);
    ck_assert_uint_eq(cap, 65536);
    ck_assert_uint_eq(bytes, 4 * n);
    ck_assert_uint_eq(over, bytes - cap);
    ck_assert_uint_gt(most, 0);
    ck_assert_uint_le(over, 4 * most); /* it fails at the operator that takes it over */
    ck_assert_msg(strstr(e.msg, ", Relu 'r2' ") && strstr(e.msg, "bytes over (the most instructions from Relu 'r0' "),
                  "%s", e.msg);
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_auto_falls_back)
{
    /* GPT-2's reduced form in f16, prefill, on ipu_small16 (64 KiB tiles): planner (b)'s plans do
     * not split f16 products along k and no budget of them fits, so --planner t10 fails naming the
     * operator short of memory, while auto lowers the model as load-compute-store does, and runs */
    ts_graph *g = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_wl_builtin("gpt:layers=2,hidden=32,heads=2,ffn=64,vocab=40,seq=8,phase=prefill", &g, &e),
                     TS_OK);
    ts_program *p = NULL;
    ts_lower_report rep;
    planner = TS_LOWER_PLANNER_T10;
    ck_assert_int_eq(compile(g, "ipu_small16", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(e.msg, " needs ") && strstr(e.msg, " bytes short"), "%s", e.msg);
    planner = TS_LOWER_PLANNER_AUTO;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    ck_assert_int_eq(L.rep.planner, TS_LOWER_PLANNER_LCS);
    lowered_free(&L);
    planner = TS_LOWER_PLANNER_LCS;
    ts_err_free(&e);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_transpose)
{
    /* [1, 12, 6, 8] split into heads as BERT does: perm [0, 2, 1, 3] (rows of 8 move whole, two a
     * tile on ipu_tiny4... over 16 tiles) and [0, 2, 3, 1] (every element on its own), then back;
     * a data movement, so the values must be equal */
    ts_graph *g = ts_graph_create("tr");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 12, 6, 8});
    int a = tensor(g, "a", TS_TENSOR_ACTIVATION, -1, NULL), b = tensor(g, "b", TS_TENSOR_ACTIVATION, -1, NULL);
    int c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.nperm = 4;
    memcpy(at.perm, (int64_t[]){0, 2, 1, 3}, sizeof(int64_t[4]));
    node(g, TS_OP_TRANSPOSE, "t0", (int[]){x}, 1, a, &at);
    node(g, TS_OP_TRANSPOSE, "t2", (int[]){a}, 1, c, &at);
    memcpy(at.perm, (int64_t[]){0, 2, 3, 1}, sizeof(int64_t[4]));
    node(g, TS_OP_TRANSPOSE, "t1", (int[]){x}, 1, b, &at);
    ts_graph_mark_output(g, a);
    ts_graph_mark_output(g, b);
    ts_graph_mark_output(g, c);
    finalize(g);
    for (int cfg = 0; cfg < 2; cfg++) {
        lowered L = {0};
        lower_and_run(g, cfg ? "ipu_small16" : "ipu_tiny4", &L);
        for (int s = 0; s < 12; s++)
            for (int h = 0; h < 6; h++)
                for (int d = 0; d < 8; d++) {
                    float want = val(x, (s * 6 + h) * 8 + d);
                    ck_assert_float_eq(out_at(&L, g, a, (uint64_t)((h * 12 + s) * 8 + d)), want);
                    ck_assert_float_eq(out_at(&L, g, b, (uint64_t)((h * 8 + d) * 12 + s)), want);
                    ck_assert_float_eq(out_at(&L, g, c, (uint64_t)((s * 6 + h) * 8 + d)), want);
                }
        lowered_free(&L);
    }
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_batched_matmul)
{
    /* _i 0, 1: A[2, 3, 6, 8] x B[2, 3, 8, N] (two activations, 6 batches) on 16 tiles: 2 tiles a
     * batch, 3 rows each. _i 2, 3: A[2, 13, 8] x B[2, 8, N], 13 rows a batch (prime): 2 rows a tile
     * over 7 tiles a batch, the last one row, the output blocked by batch (rather than one tile a
     * batch), and a Relu reading it in that layout. N = 7 one output at a time (even _i), N = 12
     * four at a time (odd _i); f32 within 1e-5 x sum |terms| */
    const int N = _i % 2 ? 12 : 7, nb = _i < 2 ? 6 : 2, M = _i < 2 ? 6 : 13;
    ts_graph *g = ts_graph_create("bmm");
    int a = _i < 2 ? tensor(g, "a", TS_TENSOR_INPUT, 4, (int64_t[]){2, 3, 6, 8})
                   : tensor(g, "a", TS_TENSOR_INPUT, 3, (int64_t[]){2, 13, 8});
    int b = _i < 2 ? tensor(g, "b", TS_TENSOR_INPUT, 4, (int64_t[]){2, 3, 8, N})
                   : tensor(g, "b", TS_TENSOR_INPUT, 3, (int64_t[]){2, 8, N});
    int c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, a);
    fill(g, b);
    node(g, TS_OP_MATMUL, "bmm", (int[]){a, b}, 2, c, NULL);
    ts_graph_mark_output(g, c);
    int r = _i < 2 ? -1 : chain(g, TS_OP_RELU, "relu", c, -1, NULL);
    if (r >= 0)
        ts_graph_mark_output(g, r);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    ck_assert_uint_eq(L.rep.tiles_used, _i < 2 ? 12 : 14);
    for (int bt = 0; bt < nb; bt++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0, m = 0;
                for (int k = 0; k < 8; k++) {
                    double t = (double)val(a, (bt * M + i) * 8 + k) * val(b, (bt * 8 + k) * N + j);
                    s += t;
                    m += fabs(t);
                }
                uint64_t e = (uint64_t)((bt * M + i) * N + j);
                near(out_at(&L, g, c, e), s, m, "c", e);
                if (r >= 0)
                    ck_assert_float_eq(out_at(&L, g, r, e), fmaxf(out_at(&L, g, c, e), 0.0f));
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

static const ts_graph_node *node_named(const ts_graph *g, const char *name)
{
    for (size_t i = 0; i < ts_graph_node_count(g); i++)
        if (!strcmp(ts_graph_get_node(g, (int)i)->name, name))
            return ts_graph_get_node(g, (int)i);
    ck_abort_msg("no node '%s'", name);
    return NULL;
}

/* y[S][N] = x[S][K] W[K][N] + b[N] in double, W and b the weight and bias inputs of the MatMul and
 * Add nodes mm and add (values from the lowering's fill) */
static void ref_dense(const ts_graph *g, const char *mm, const char *add, const double *x, int S, int K, int N,
                      double *y)
{
    int w = node_named(g, mm)->in[1], b = node_named(g, add)->in[1];
    for (int i = 0; i < S; i++)
        for (int j = 0; j < N; j++) {
            double s = ts_fill_f32(b, (uint64_t)j);
            for (int k = 0; k < K; k++)
                s += x[i * K + k] * ts_fill_f32(w, (uint64_t)(k * N + j));
            y[i * N + j] = s;
        }
}

static void ref_layernorm(const ts_graph *g, const char *ln, double *x, int S, int H)
{
    int sc = node_named(g, ln)->in[1], bi = node_named(g, ln)->in[2];
    for (int i = 0; i < S; i++) {
        double mean = 0, var = 0;
        for (int j = 0; j < H; j++)
            mean += x[i * H + j] / H;
        for (int j = 0; j < H; j++)
            var += (x[i * H + j] - mean) * (x[i * H + j] - mean) / H;
        for (int j = 0; j < H; j++)
            x[i * H + j] = (x[i * H + j] - mean) / sqrt(var + 1e-12) * ts_fill_f32(sc, (uint64_t)j) +
                           ts_fill_f32(bi, (uint64_t)j);
    }
}

START_TEST(test_bert_layer)
{
    /* the built-in BERT encoder layer, reduced (seq 8, hidden 16, 2 heads, ffn 32), on 16 tiles
     * with planner (a) (_i 0) and with planner (b) taking its weight MatMuls (_i 1): every operator
     * of the layer, against a double-precision reference of the whole layer; the output (after the
     * second LayerNorm, values of order 1) within 1e-5 absolute */
    enum { S = 8, H = 16, NH = 2, D = H / NH, F = 32 };
    planner = _i ? TS_LOWER_PLANNER_T10 : TS_LOWER_PLANNER_LCS;
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("bert-base-layer:seq=8,hidden=16,heads=2,ffn=32", &g, &e), TS_OK);
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    bool t10 = false;
    for (size_t i = 0; i < L.rep.nlayers; i++)
        t10 |= L.rep.layers[i].t10;
    ck_assert(t10 == (_i == 1));
    int xid = ts_graph_find(g, "x");
    static double x[S * H], q[S * H], k[S * H], v[S * H], c[S * H], o[S * H], f[S * F], f4[S * H];
    for (int i = 0; i < S * H; i++)
        x[i] = ts_fill_f32(xid, (uint64_t)i);
    ref_dense(g, "q", "q_bias", x, S, H, H, q);
    ref_dense(g, "k", "k_bias", x, S, H, H, k);
    ref_dense(g, "v", "v_bias", x, S, H, H, v);
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < S; i++) {
            double p[S], mx = -1e300, sum = 0;
            for (int j = 0; j < S; j++) {
                p[j] = 0;
                for (int d = 0; d < D; d++)
                    p[j] += q[i * H + h * D + d] * k[j * H + h * D + d];
                p[j] /= 8.0;
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < S; j++)
                sum += (p[j] = exp(p[j] - mx));
            for (int d = 0; d < D; d++) {
                double s = 0;
                for (int j = 0; j < S; j++)
                    s += p[j] / sum * v[j * H + h * D + d];
                c[i * H + h * D + d] = s;
            }
        }
    ref_dense(g, "o", "o_bias", c, S, H, H, o);
    for (int i = 0; i < S * H; i++)
        o[i] += x[i];
    ref_layernorm(g, "ln1", o, S, H);
    ref_dense(g, "fc1", "fc1_bias", o, S, H, F, f);
    for (int i = 0; i < S * F; i++)
        f[i] = gelu_ref(f[i]);
    ref_dense(g, "fc2", "fc2_bias", f, S, F, H, f4);
    for (int i = 0; i < S * H; i++)
        f4[i] += o[i];
    ref_layernorm(g, "ln2", f4, S, H);
    int y = ts_graph_find(g, "y");
    for (int i = 0; i < S * H; i++) {
        double got = out_at(&L, g, y, (uint64_t)i);
        ck_assert_msg(fabs(got - f4[i]) <= 1e-5, "y[%d]: got %.9g, want %.9g", i, got, f4[i]);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
    planner = TS_LOWER_PLANNER_LCS;
}
END_TEST

/* Reference Conv in double: out = conv(in) + bias (optionally Relu), with mag = the sum of
 * |terms| (|w| x the input's own mag, + |bias|) to bound the rounding of the f32 result. */
static void ref_conv(const double *in, const double *inmag, int C, int H, int Wd, ts_graph *g, int w, int b, int M,
                     int k, int stride, int pad, bool relu, double *out, double *mag)
{
    int Ho = (H + 2 * pad - k) / stride + 1, Wo = (Wd + 2 * pad - k) / stride + 1;
    (void)g;
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                double s = val(b, m), mg = fabs(s);
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride + ky - pad, ix = ox * stride + kx - pad;
                            if (iy < 0 || ix < 0 || iy >= H || ix >= Wd)
                                continue;
                            double wv = val(w, ((m * C + c) * k + ky) * k + kx) / 16.0;
                            s += in[(c * H + iy) * Wd + ix] * wv;
                            mg += fabs(wv) * inmag[(c * H + iy) * Wd + ix];
                        }
                out[(m * Ho + oy) * Wo + ox] = relu ? fmax(s, 0) : s;
                mag[(m * Ho + oy) * Wo + ox] = mg;
            }
}

/* ResNet-50's layer2.0 at full size on ipu_mk1 (1x1 256->128, 3x3/2 128->128, 1x1 128->512,
 * projection 1x1/2 256->512, Add, Relu): the plans of the real network (row blocks, input-channel
 * parts of up to 74, staged transfers). Slow (about 10 s): in the suite "slow" (main). */
START_TEST(test_bottleneck_mk1)
{
    ts_graph *g = ts_graph_create("block");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 256, 28, 28});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){128, 256, 1, 1});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){128, 128, 3, 3});
    int w3 = tensor(g, "w3", TS_TENSOR_WEIGHT, 4, (int64_t[]){512, 128, 1, 1});
    int wd = tensor(g, "wd", TS_TENSOR_WEIGHT, 4, (int64_t[]){512, 256, 1, 1});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){128});
    int b2 = tensor(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){128});
    int b3 = tensor(g, "b3", TS_TENSOR_WEIGHT, 1, (int64_t[]){512});
    int bd = tensor(g, "bd", TS_TENSOR_WEIGHT, 1, (int64_t[]){512});
    int ws[] = {w1, w2, w3, wd};
    fill(g, x);
    for (int i = 0; i < 4; i++) { /* weights / 16, so that values stay of order 1 */
        const ts_graph_tensor *t = ts_graph_get_tensor(g, ws[i]);
        int64_t ne = ts_graph_tensor_elems(t);
        float *v = ts_calloc((size_t)ne, 4);
        for (int64_t k = 0; k < ne; k++)
            v[k] = val(ws[i], k) / 16.0f;
        ts_err e;
        ts_err_init(&e);
        ck_assert_int_eq(ts_graph_set_data(g, ws[i], v, (size_t)ne * 4, &e), TS_OK);
        ts_free(v);
    }
    fill(g, b1);
    fill(g, b2);
    fill(g, b3);
    fill(g, bd);
    int t[8];
    for (int i = 0; i < 8; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        t[i] = tensor(g, nm, TS_TENSOR_ACTIVATION, -1, NULL);
    }
    ts_graph_attrs a1, a3, as;
    ts_graph_attrs_init(&a1);
    a1.strides[0] = a1.strides[1] = 1;
    ts_graph_attrs_init(&a3);
    a3.strides[0] = a3.strides[1] = 2;
    a3.pads[0] = a3.pads[1] = a3.pads[2] = a3.pads[3] = 1;
    ts_graph_attrs_init(&as);
    as.strides[0] = as.strides[1] = 2;
    node(g, TS_OP_CONV, "conv1", (int[]){x, w1, b1}, 3, t[0], &a1);
    node(g, TS_OP_RELU, "relu1", (int[]){t[0]}, 1, t[1], NULL);
    node(g, TS_OP_CONV, "conv2", (int[]){t[1], w2, b2}, 3, t[2], &a3);
    node(g, TS_OP_RELU, "relu2", (int[]){t[2]}, 1, t[3], NULL);
    node(g, TS_OP_CONV, "conv3", (int[]){t[3], w3, b3}, 3, t[4], &a1);
    node(g, TS_OP_CONV, "down", (int[]){x, wd, bd}, 3, t[5], &as);
    node(g, TS_OP_ADD, "add", (int[]){t[4], t[5]}, 2, t[6], NULL);
    node(g, TS_OP_RELU, "relu3", (int[]){t[6]}, 1, t[7], NULL);
    ts_graph_mark_output(g, t[7]);
    finalize(g);
    lowered L = {0};
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(compile(g, "ipu_mk1", NULL, &L.prog, &L.rep, &e) == TS_OK, "lower: %s", e.msg);
    run_prog("ipu_mk1", L.prog, false, 2, &L.run);
    double *xin = ts_calloc(256 * 784, sizeof *xin), *xm = ts_calloc(256 * 784, sizeof *xm);
    double *r1 = ts_calloc(128 * 784, sizeof *r1), *m1 = ts_calloc(128 * 784, sizeof *m1);
    double *r2 = ts_calloc(128 * 196, sizeof *r2), *m2 = ts_calloc(128 * 196, sizeof *m2);
    double *r3 = ts_calloc(512 * 196, sizeof *r3), *m3 = ts_calloc(512 * 196, sizeof *m3);
    double *rd = ts_calloc(512 * 196, sizeof *rd), *md = ts_calloc(512 * 196, sizeof *md);
    for (int i = 0; i < 256 * 784; i++) {
        xin[i] = val(x, i);
        xm[i] = fabs(xin[i]);
    }
    ref_conv(xin, xm, 256, 28, 28, g, w1, b1, 128, 1, 1, 0, true, r1, m1);
    ref_conv(r1, m1, 128, 28, 28, g, w2, b2, 128, 3, 2, 1, true, r2, m2);
    ref_conv(r2, m2, 128, 14, 14, g, w3, b3, 512, 1, 1, 0, false, r3, m3);
    ref_conv(xin, xm, 256, 28, 28, g, wd, bd, 512, 1, 2, 0, false, rd, md);
    int yo = ts_graph_find(g, "t7");
    for (uint64_t k = 0; k < 512 * 196; k++)
        near(out_at(&L, g, yo, k), fmax(r3[k] + rd[k], 0), m3[k] + md[k], "y", k);
    ts_free(xin), ts_free(xm), ts_free(r1), ts_free(m1), ts_free(r2), ts_free(m2);
    ts_free(r3), ts_free(m3), ts_free(rd), ts_free(md);
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* ---- planner (b): compute-shift plans ---- */

/* A MatMul (or Gemm with transB and bias) M x K x N lowered with one compute-shift plan. */
typedef struct t10_case {
    int M, K, N;
    bool gemm;
    ts_t10_plan plan;
    const char *config;
    bool elements; /* SRAM elements of 8 KiB: a ring of 3 slots needs 3 elements apart from A's */
    int conv_w;    /* > 0: a 1x1 Conv (bias) of K input and N output channels on an image of M / conv_w
                    * rows of conv_w pixels */
} t10_case;

static const char *const small_elements[] = {"tile.element_bytes=8192", NULL};

static const t10_case t10_cases[] = {
    /* A rotates in rings of 4 along the column blocks */
    {24, 32, 16, false, {.fm = 2, .fn = 4, .fk = 1, .ft = 4, .rp = 1, .rot = TS_T10_ROT_A}, "ipu_small16", false, 0},
    /* A rotates at pace 2: 4 steps of k 8, three slots a ring */
    {24, 32, 16, false, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 2, .rot = TS_T10_ROT_A}, "ipu_small16", true, 0},
    /* B rotates along the row blocks (13 rows: 4, 4, 4, 1); 10 columns in 3 groups, the last partial;
     * k 30 in slices of 16 and 14; Gemm with transB and bias */
    {13, 30, 10, true, {.fm = 4, .fn = 1, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B}, "ipu_small16", false, 0},
    /* both rotate (Cannon's skew) */
    {16, 32, 16, false, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB}, "ipu_small16", false, 0},
    /* k split 4 ways (8, 8, 8, 6), partial sums in a tree of 2 levels; the second column block has 2
     * columns */
    {13, 30, 10, true, {.fm = 2, .fn = 2, .fk = 4, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}, "ipu_small16", false, 0},
    /* k split 2 ways and A rotating at pace 2 in each part */
    {20, 48, 16, false, {.fm = 2, .fn = 4, .fk = 2, .ft = 2, .rp = 2, .rot = TS_T10_ROT_A}, "ipu_small16", true, 0},
    /* four tiles, one ring */
    {10, 8, 8, false, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}, "ipu_tiny4", false, 0},
    /* 1x1 Conv 12 -> 10 channels on 8 x 5 pixels: pixel blocks of 2 image rows, channels in
     * blocks of 8 (the last 2), input channels split 2 ways (6 and 6) */
    {40, 12, 10, true, {.fm = 4, .fn = 2, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}, "ipu_small16", false, 5},
    /* the same with the weights rotating along the pixel blocks, k in 2 slices */
    {40, 12, 10, true, {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B}, "ipu_small16", false, 5},
    /* the input rotating along the channel blocks (4 of 4 channels, the last 2), with Cannon's skew
     * the weights too */
    {40, 12, 14, true, {.fm = 2, .fn = 4, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}, "ipu_small16", false, 5},
    {40, 12, 14, true, {.fm = 2, .fn = 2, .fk = 2, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB}, "ipu_small16", false, 5},
};

/* Lower tc with its plan, check the report and the values; with `shared`, that the program has
 * bundles (the shared-coefficient AMP kernel ran its steps of whole bodies). */
static void t10_case_check(const t10_case *tc, bool shared)
{
    ts_graph *g = ts_graph_create("mm");
    int cw = tc->conv_w;
    int a = cw ? tensor(g, "a", TS_TENSOR_INPUT, 4, (int64_t[]){1, tc->K, tc->M / cw, cw})
               : tensor(g, "a", TS_TENSOR_INPUT, 2, (int64_t[]){tc->M, tc->K});
    int b = cw ? tensor(g, "b", TS_TENSOR_WEIGHT, 4, (int64_t[]){tc->N, tc->K, 1, 1})
               : tensor(g, "b", TS_TENSOR_WEIGHT, 2, tc->gemm ? (int64_t[]){tc->N, tc->K} : (int64_t[]){tc->K, tc->N});
    int bias = tc->gemm ? tensor(g, "bias", TS_TENSOR_WEIGHT, 1, (int64_t[]){tc->N}) : -1;
    int c = tensor(g, "c", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, a);
    fill(g, b);
    if (tc->gemm)
        fill(g, bias);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    if (cw) {
        ts_graph_attrs_init(&at);
        node(g, TS_OP_CONV, "mm", (int[]){a, b, bias}, 3, c, &at);
    } else if (tc->gemm)
        node(g, TS_OP_GEMM, "mm", (int[]){a, b, bias}, 3, c, &at);
    else
        node(g, TS_OP_MATMUL, "mm", (int[]){a, b}, 2, c, NULL);
    ts_graph_mark_output(g, c);
    finalize(g);
    planner = TS_LOWER_PLANNER_T10;
    t10_plan = &tc->plan;
    run_sets = tc->elements ? small_elements : NULL;
    lowered L = {0};
    lower_and_run(g, tc->config, &L);
    run_sets = NULL;
    /* the report names the plan */
    ck_assert_uint_eq(L.rep.planner, TS_LOWER_PLANNER_T10);
    const ts_lower_layer *ly = &L.rep.layers[0];
    ck_assert(ly->t10);
    ck_assert_uint_eq(ly->fm, tc->plan.fm);
    ck_assert_uint_eq(ly->fk, tc->plan.fk);
    ck_assert_uint_eq(ly->rot, tc->plan.rot);
    ck_assert_uint_eq(ly->tiles, tc->plan.fm * tc->plan.fn * tc->plan.fk);
    /* f32: within 1e-5 of the sum of |terms| (the k-slices and the tree add in another order); a
     * Conv's input is [channel][pixel], its output [channel][pixel] */
    for (int i = 0; i < tc->M; i++)
        for (int j = 0; j < tc->N; j++) {
            double s = tc->gemm ? val(bias, j) : 0, m = fabs(s);
            for (int k = 0; k < tc->K; k++) {
                double t = (double)val(a, cw ? k * tc->M + i : i * tc->K + k) *
                           val(b, tc->gemm ? j * tc->K + k : k * tc->N + j);
                s += t;
                m += fabs(t);
            }
            uint64_t at_ = (uint64_t)(cw ? j * tc->M + i : i * tc->N + j);
            near(out_at(&L, g, c, at_), s, m, "c", at_);
        }
    size_t bundles = count_bundles(L.prog);
    if (shared)
        ck_assert_uint_gt(bundles, 0);
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
}

START_TEST(test_t10_plans)
{
    t10_case_check(&t10_cases[_i], false);
}
END_TEST

/* Planner (b) with the shared-coefficient kernel (lower_ipu_ampk.c) reading its table: */
static const t10_case t10_shared_cases[] = {
    /* Gemm with bias, A rotating: 2 steps of k 24 (12 pairs, two bodies), the first adding the
     * bias, the second the partial sums */
    {24, 48, 16, true, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}, "ipu_small16", false, 0},
    /* k 40 in steps of 24 (rounded up to whole bodies: the shared kernel) and 16 (8 pairs:
     * lwi_emit_mm's routine), B rotating; 13 rows: 4, 4, 4, 1 */
    {13, 40, 16, false, {.fm = 4, .fn = 1, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B, .bodies = true}, "ipu_small16",
     false, 0},
    /* A rotating at pace 4 (a ring of 5 slots), k 256 in steps of 36 (rounded up to whole bodies;
     * the last 4): each slot's gather copies the pieces a tile holds itself at the start of the
     * next slot's first exchange round, tile 0 more than tile 1, so tile 1's words reached tile 0
     * before it armed its receive and were lost; the round now syncs first (lwi_late) */
    {12, 256, 16, false, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 4, .rot = TS_T10_ROT_A, .bodies = true}, "ipu_small16",
     true, 0},
};

START_TEST(test_t10_shared)
{
    t10_case_check(&t10_shared_cases[_i], true);
}
END_TEST

START_TEST(test_t10_graph)
{
    /* MatMul -> Relu -> Gemm (transB, bias) -> Softmax with planner (b) choosing by its cost model
     * (_i 0), with its split plans only (_i 1, nothing rotates) or under auto (_i 2, load-compute-
     * store's plans offered too): the two products get a plan the model prices, Relu and Softmax are
     * lowered as by planner (a) on the products' outputs; each layer names its plan's kind */
    ts_graph *g = ts_graph_create("mlp");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){48, 32});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 2, (int64_t[]){32, 24});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 24});
    int b2 = tensor(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){12});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int r = tensor(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    int h2 = tensor(g, "h2", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, w2);
    fill(g, b2);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    node(g, TS_OP_MATMUL, "fc1", (int[]){x, w1}, 2, h, NULL);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, r, NULL);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc2", (int[]){r, w2, b2}, 3, h2, &at);
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){h2}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    planner = _i == 2 ? TS_LOWER_PLANNER_AUTO : _i ? TS_LOWER_PLANNER_SPLIT : TS_LOWER_PLANNER_T10;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    ck_assert_uint_eq(L.rep.nlayers, 4);
    if (_i < 2)
        ck_assert(L.rep.layers[0].t10 && L.rep.layers[2].t10);
    ck_assert_int_eq(L.rep.planner, planner);
    if (_i == 1)
        ck_assert(L.rep.layers[0].rot == TS_T10_ROT_NONE && L.rep.layers[2].rot == TS_T10_ROT_NONE);
    ck_assert(!L.rep.layers[1].t10 && !L.rep.layers[3].t10);
    for (int k = 0; k < 4; k += 2) { /* the products: a priced plan, its kind as it was lowered */
        const ts_lower_layer *ly = &L.rep.layers[k];
        ck_assert_uint_gt(ly->model_cycles, 0);
        ck_assert_uint_gt(ly->fm, 0);
        ck_assert_int_eq(ly->t10, ly->plan != TS_LOWER_PLAN_LCS);
        ck_assert_int_eq(ly->plan == TS_LOWER_PLAN_SHIFT, ly->rot != TS_T10_ROT_NONE);
    }
    ck_assert(L.rep.layers[1].plan == TS_LOWER_PLAN_LCS && !L.rep.layers[1].model_cycles);
    for (int i = 0; i < 48; i++) {
        double hv[24], sv[12], mx = -1e30, sum = 0;
        for (int j = 0; j < 24; j++) {
            double t = 0;
            for (int k = 0; k < 32; k++)
                t += (double)val(x, i * 32 + k) * val(w1, k * 24 + j);
            hv[j] = fmax(t, 0);
        }
        for (int j = 0; j < 12; j++) {
            double t = val(b2, j);
            for (int k = 0; k < 24; k++)
                t += hv[k] * val(w2, j * 24 + k);
            sv[j] = t;
            mx = fmax(mx, t);
        }
        for (int j = 0; j < 12; j++)
            sum += exp(sv[j] - mx);
        for (int j = 0; j < 12; j++)
            near(out_at(&L, g, y, (uint64_t)(i * 12 + j)), exp(sv[j] - mx) / sum, 1.0, "y", (uint64_t)(i * 12 + j));
    }
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
}
END_TEST

START_TEST(test_t10_errors)
{
    ts_err e;
    ts_err_init(&e);
    int pl = -1;
    ck_assert_int_eq(ts_lower_ipu_planner("t10", &pl, &e), TS_OK);
    ck_assert_int_eq(pl, TS_LOWER_PLANNER_T10);
    ck_assert_int_eq(ts_lower_ipu_planner("roller", &pl, &e), TS_EINPUT);
    ck_assert_msg(strstr(e.msg, "unknown planner 'roller'"), "%s", e.msg);
    /* a plan that is not one: ft must divide the ring of the rotating operand */
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("matmul:m=32,k=16,n=24", &g, &e), TS_OK);
    static const ts_t10_plan bad = {.fm = 2, .fn = 3, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A};
    planner = TS_LOWER_PLANNER_T10;
    t10_plan = &bad;
    ts_program *p = NULL;
    ts_lower_report rep;
    ck_assert_int_eq(compile(g, "ipu_small16", NULL, &p, &rep, &e), TS_EINPUT);
    ck_assert_msg(strstr(e.msg, "does not divide the ring"), "%s", e.msg);
    ck_assert_ptr_null(p);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_t10_convs)
{
    /* Conv 3x3 -> Conv 1x1 (reading the blocked output of the first) -> Relu, both Convs by
     * compute-shift plans the cost model chose, the Relu by planner (a) */
    ts_graph *g = ts_graph_create("convs");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 8, 6, 6});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){16, 8, 3, 3});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){16});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){12, 16, 1, 1});
    int b2 = tensor(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){12});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int h2 = tensor(g, "h2", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill_scaled(g, w1, 1.0f / 16);
    fill(g, b1);
    fill_scaled(g, w2, 1.0f / 16);
    fill(g, b2);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_CONV, "c1", (int[]){x, w1, b1}, 3, h, &at);
    ts_graph_attrs_init(&at);
    node(g, TS_OP_CONV, "c2", (int[]){h, w2, b2}, 3, h2, &at);
    node(g, TS_OP_RELU, "relu", (int[]){h2}, 1, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    planner = TS_LOWER_PLANNER_T10;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    planner = TS_LOWER_PLANNER_LCS;
    ck_assert(L.rep.layers[0].t10 && L.rep.layers[1].t10 && !L.rep.layers[2].t10);
    double in[8 * 36], inmag[8 * 36], hv[16 * 36], hm[16 * 36], ov[12 * 36], om[12 * 36];
    for (int k = 0; k < 8 * 36; k++) {
        in[k] = val(x, k);
        inmag[k] = fabs(in[k]);
    }
    ref_conv(in, inmag, 8, 6, 6, g, w1, b1, 16, 3, 1, 1, false, hv, hm);
    ref_conv(hv, hm, 16, 6, 6, g, w2, b2, 12, 1, 1, 0, true, ov, om);
    for (int k = 0; k < 12 * 36; k++)
        near(out_at(&L, g, y, (uint64_t)k), ov[k], om[k], "y", (uint64_t)k);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* lower_planned under planner (b). */
static void lower_t10(ts_graph *g, const ts_t10_plan *pick, lowered *L)
{
    lower_planned(g, TS_LOWER_PLANNER_T10, pick, L);
}

/* An f16 Gemm (transB, bias) Y[M,N] = A[M,K] x B[N,K]^T + bias lowered by planner (b) with plan
 * pick (the cost model's when NULL) on ipu_small16, against the double reference of the f16
 * values; tolerance as planner (a)'s f16 (near16). ft: the report's ft must be pick's. */
static void t10_f16_gemm(const char *name, int M, int K, int N, const ts_t10_plan *pick, bool ft)
{
    ts_graph *g = ts_graph_create(name);
    ts_err e;
    ts_err_init(&e);
    int id[3];
    const char *names[3] = {"a", "b", "c"};
    const int64_t dims[3][2] = {{M, K}, {N, K}, {N, 0}};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ts_graph_add_tensor(g, names[i], i ? TS_TENSOR_WEIGHT : TS_TENSOR_INPUT, TS_DT_F16,
                                             i == 2 ? 1 : 2, dims[i], &id[i], &e), TS_OK);
        int64_t n = dims[i][0] * (i == 2 ? 1 : dims[i][1]);
        uint16_t *h = ts_malloc((size_t)n * 2);
        ck_assert_ptr_nonnull(h);
        for (int64_t k = 0; k < n; k++)
            h[k] = ts_f32_to_f16(val(id[i], k));
        ck_assert_int_eq(ts_graph_set_data(g, id[i], h, (size_t)n * 2, &e), TS_OK);
        ts_free(h);
    }
    int y = -1;
    ck_assert_int_eq(ts_graph_add_tensor(g, "y", TS_TENSOR_ACTIVATION, TS_DT_F16, -1, NULL, &y, &e), TS_OK);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc", id, 3, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_t10(g, pick, &L);
    ck_assert(L.rep.layers[0].t10);
    if (pick)
        ck_assert_uint_eq(L.rep.layers[0].rot, pick->rot);
    if (pick && ft)
        ck_assert_uint_eq(L.rep.layers[0].ft, pick->ft);
#define H(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))))
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = H(id[2], j), m = fabs(s);
            for (int k = 0; k < K; k++) {
                s += H(id[0], i * K + k) * H(id[1], j * K + k);
                m += fabs(H(id[0], i * K + k) * H(id[1], j * K + k));
            }
            near16(out_f16(&L, g, y, (uint64_t)(i * N + j)), s, m, "y", (uint64_t)(i * N + j));
        }
#undef H
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
}

START_TEST(test_t10_f16)
{
    /* Y[24,16] = A[24,32] x B[16,32]^T + bias with compute-shift plans: A rotating, B rotating,
     * both, none, and the cost model's; partial sums in f32 between the steps, the output rounded
     * to f16 at the last */
    static const ts_t10_plan plans[] = {
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A},
        {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB},
        {.fm = 4, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
    };
    t10_f16_gemm("mm16", 24, 32, 16, _i < 4 ? &plans[_i] : NULL, false);
}
END_TEST

START_TEST(test_t10_f16_padded)
{
    /* Y[20,16] = A[20,56] x B[16,56]^T + bias with plans whose k per step is whole bodies of the
     * shared-coefficient kernel (24 inputs on these tiles), so that the last slice (8 of 48, or
     * all 56 of 72 in one step) is padded to a whole body, zeros in A's and B's padding: A
     * rotating, B rotating, both, nothing (A's whole k-range padded), and the cost model's */
    static const ts_t10_plan plans[] = {
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A, .bodies = true},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B, .bodies = true},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB, .bodies = true},
        {.fm = 4, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE, .bodies = true},
    };
    t10_f16_gemm("mm16p", 20, 56, 16, _i < 4 ? &plans[_i] : NULL, true);
}
END_TEST

/* A 1x1 Conv x[1][C][H][Wd] -> y[1][M][Ho][Wo] (stride st, bias), f16 (half) or f32, lowered by
 * planner (b) with plan pick (the cost model's when NULL) on ipu_small16, against the double
 * reference of the values (f16: of the f16 values). An f16 Conv reads f32 words, rounds them to
 * halves in its rows of pixels (exact: x holds f16 values), multiplies on f16v4amp (products of
 * halves exact in f32) and sums in f32 (between the steps, and over the tree where k is split); its
 * outputs are f32 words, not rounded: so both within 1e-5 x the sum of |terms|, f32's tolerance. */
static size_t conv_sends, conv_bundles, conv_putcs_step, conv_paced; /* the sends, bundles, ld128putcsstep
                                                                      * and ld2xst64pace in
                                                                      * t10_convk_tail's program */

/* tail: what follows the Conv, fused into its output pass: 0 nothing, 1 a Relu, 2 an Add of a graph
 * input then a Relu, 3 the Add alone (its output the graph's) */
static void t10_convk_tail(bool half, int NB, int C, int H, int Wd, int M, int kk, int st, int pad,
                           const ts_t10_plan *pick, int tail)
{
    ts_graph *g = ts_graph_create("conv");
    int (*mk)(ts_graph *, const char *, ts_tensor_kind, int, const int64_t *) = half ? tensor16 : tensor;
    int x = mk(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){NB, C, H, Wd});
    int w = mk(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){M, C, kk, kk});
    int b = mk(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){M});
    int y = mk(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    if (!half) {
        fill(g, x);
        fill(g, w);
        fill(g, b);
    }
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.strides[0] = at.strides[1] = st;
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = pad;
    node(g, TS_OP_CONV, "conv", (int[]){x, w, b}, 3, y, &at);
    int Ho = (H + 2 * pad - kk) / st + 1, Wo = (Wd + 2 * pad - kk) / st + 1, r = -1, out = y;
    if (tail >= 2) { /* the Add's other operand first, as ONNX exports may order it */
        r = mk(g, "r", TS_TENSOR_INPUT, 4, (int64_t[]){NB, M, Ho, Wo});
        if (!half)
            fill(g, r);
        int s = mk(g, "s", TS_TENSOR_ACTIVATION, -1, NULL);
        node(g, TS_OP_ADD, "add", (int[]){r, y}, 2, s, NULL);
        out = s;
    }
    if (tail == 1 || tail == 2) {
        int z = mk(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
        node(g, TS_OP_RELU, "relu", (int[]){out}, 1, z, NULL);
        out = z;
    }
    ts_graph_mark_output(g, out);
    finalize(g);
    lowered L = {0};
    lower_t10(g, pick, &L);
    ck_assert(L.rep.layers[0].t10);
    for (size_t i = 1; i < L.rep.nlayers; i++) /* the tail done by the Conv: no superstep of its own */
        ck_assert_msg(L.rep.layers[i].steps == 0, "layer %zu: %u supersteps", i, L.rep.layers[i].steps);
    if (pick)
        ck_assert(L.rep.layers[0].rot == pick->rot && L.rep.layers[0].fk == pick->fk);
    size_t amp = 0; /* on the AMP of the dtype */
    for (size_t i = 0; i < L.prog->nstreams; i++)
        for (uint32_t k = 0; k < L.prog->streams[i].n; k++)
            amp += L.prog->streams[i].insn[k].op == (half ? OP_F16V4AMP : OP_F32V2AMP);
    ck_assert_uint_gt(amp, 0);
    conv_sends = conv_bundles = conv_putcs_step = conv_paced = 0;
    for (size_t i = 0; i < L.prog->nstreams; i++)
        for (uint32_t k = 0; k < L.prog->streams[i].n; k++) {
            conv_sends += L.prog->streams[i].insn[k].op == OP_SEND;
            conv_bundles += L.prog->streams[i].insn[k].op == OP_BUNDLE;
            conv_putcs_step += L.prog->streams[i].insn[k].op == OP_LD128PUTCSSTEP;
            conv_paced += L.prog->streams[i].insn[k].op == OP_LD2XST64PACE;
        }
#define H16(t, k) (half ? (double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))) : (double)val(t, k))
    for (int nb = 0; nb < NB; nb++)
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                double v = H16(b, m), mg = fabs(v);
                for (int c = 0; c < C; c++)
                    for (int ky = 0; ky < kk; ky++)
                        for (int kx = 0; kx < kk; kx++) {
                            int iy = oy * st + ky - pad, ix = ox * st + kx - pad;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= Wd)
                                continue;
                            double t = H16(x, ((nb * C + c) * H + iy) * Wd + ix) *
                                       H16(w, ((m * C + c) * kk + ky) * kk + kx);
                            v += t;
                            mg += fabs(t);
                        }
                uint64_t k = (uint64_t)(((nb * M + m) * Ho + oy) * Wo + ox);
                if (r >= 0) {
                    v += H16(r, k);
                    mg += fabs(H16(r, k));
                }
                near(out_at(&L, g, out, k), tail == 1 || tail == 2 ? fmax(v, 0) : v, mg, "y", k);
            }
#undef H16
    lowered_free(&L);
    ts_graph_destroy(g);
}

static void t10_convk(bool half, int NB, int C, int H, int Wd, int M, int kk, int st, int pad,
                      const ts_t10_plan *pick)
{
    t10_convk_tail(half, NB, C, H, Wd, M, kk, st, pad, pick, 0);
}

static void t10_conv1x1(bool half, int C, int H, int Wd, int M, int st, const ts_t10_plan *pick)
{
    t10_convk(half, 1, C, H, Wd, M, 1, st, 0, pick);
}

START_TEST(test_t10_conv3)
{
    /* a 3x3 Conv of padding 1 (an im2col held in the tile: k = channel x 9 + tap, each tile's band
     * of input rows padded on the tile), f16 and f32, 16 -> 16 channels: on 9 x 4 (36 pixels) in
     * blocks of 2 output rows (the last one of 1), the first and last blocks' bands at the padding,
     * with A rotating (slices of 72 inputs, eight channels), k split in two (f32 sums added in the
     * tree), blocks of 1 row with A rotating and with nothing, and the cost model's; on 8 x 4 with
     * B rotating and with both; at stride 2 (5 x 2 outputs of 9 x 4) with A rotating and the
     * model's. An f16 Conv's inputs and weights are f16 values, its products exact in f32 and its
     * sums f32 (its outputs f32 words, not rounded): within 1e-5 x the sum of |terms|, f32's
     * tolerance, as the 1x1 Convs. */
    static const struct {
        bool half;
        int H, st;
        ts_t10_plan p;
    } cs[] = {
        {true, 9, 1, {.fm = 5, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {true, 9, 1, {.fm = 5, .fn = 1, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {true, 8, 1, {.fm = 8, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {true, 9, 1, {.fm = 9, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {true, 9, 1, {0}},
        {true, 8, 1, {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B}},
        {true, 8, 1, {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB}},
        {true, 9, 2, {.fm = 3, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {true, 9, 2, {0}},
        {false, 9, 1, {.fm = 5, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {false, 9, 1, {.fm = 5, .fn = 1, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {false, 9, 2, {0}},
    };
    t10_convk(cs[_i].half, 1, 16, cs[_i].H, 4, 16, 3, cs[_i].st, 1, cs[_i].p.fm ? &cs[_i].p : NULL);
    if (cs[_i].p.fk > 1) /* the tree's adds in the paced loop (tree_adds: 11 pairs a worker) */
        ck_assert_uint_gt(conv_paced, 0);
}
END_TEST

START_TEST(test_t10_conv_padded)
{
    /* f16 batched Convs on a number of input channels not a multiple of 4, their channels padded
     * to one with zeros (zero weights, zero planes in the tile's padded image), batch 2: conv1's
     * shape (3 channels, 7x7 of stride 2 and padding 3, k = 4 x 49) on 11 x 8 in blocks of 2 output
     * rows and of 1 (its k of 196 is one step: 98, a pair of channels, is not whole groups of 4),
     * the model's plan, and at batch 3; 5 channels (padded to 8) 3x3 with A rotating and with B
     * rotating (slices of channels 0-3 and 4-7: one input channel, three zero ones); 2 channels
     * (padded to 4) 4x4 of stride 2 with k split in two (the second part all zero channels:
     * nothing gathered). Tolerance as test_t10_conv3's. At batch 1 such a Conv is planner (a)'s.
     * Last, conv1's shape in one step whose k is padded to whole bodies of the shared-coefficient
     * kernel (196 to 216 with zeros; its bundles in the program). */
    static const struct {
        int NB, C, H, Wd, kk, st, pad;
        ts_t10_plan p;
    } cs[] = {
        {2, 3, 11, 8, 7, 2, 3, {.fm = 6, .fn = 2, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {2, 3, 11, 8, 7, 2, 3, {.fm = 12, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {2, 3, 11, 8, 7, 2, 3, {0}},
        {3, 3, 11, 8, 7, 2, 3, {0}},
        {2, 5, 8, 4, 3, 1, 1, {.fm = 8, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {2, 5, 8, 4, 3, 1, 1, {.fm = 8, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B}},
        {2, 2, 8, 8, 4, 2, 1, {.fm = 4, .fn = 2, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {1, 3, 11, 8, 7, 2, 3, {0}},
        {2, 3, 11, 8, 7, 2, 3, {.fm = 6, .fn = 2, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE, .bodies = true}},
    };
    if (cs[_i].NB == 1) { /* planner (a)'s at batch 1 */
        ts_graph *g = ts_graph_create("conv1");
        int x = tensor16(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 3, 11, 8});
        int w = tensor16(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){16, 3, 7, 7});
        int y = tensor16(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
        ts_graph_attrs at;
        ts_graph_attrs_init(&at);
        at.strides[0] = at.strides[1] = 2;
        at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 3;
        node(g, TS_OP_CONV, "conv", (int[]){x, w}, 2, y, &at);
        ts_graph_mark_output(g, y);
        finalize(g);
        lowered L = {0};
        lower_t10(g, NULL, &L);
        ck_assert(!L.rep.layers[0].t10);
        lowered_free(&L);
        ts_graph_destroy(g);
        return;
    }
    t10_convk(true, cs[_i].NB, cs[_i].C, cs[_i].H, cs[_i].Wd, 16, cs[_i].kk, cs[_i].st, cs[_i].pad,
              cs[_i].p.fm ? &cs[_i].p : NULL);
    if (cs[_i].p.bodies)
        ck_assert_uint_gt(conv_bundles, 0);
}
END_TEST

START_TEST(test_t10_conv_maxpool)
{
    /* ResNet's MaxPool (3x3, stride 2, padding 1) after a batched Conv of planner (b), pooled where
     * the Conv's blocks lie (its output blocked as well): 8 -> 8 channels at batch 2, f32, on 7 x 5
     * in blocks of one row (the last window's bottom row and right column padding), and on 8 x 5 in
     * blocks of 4 rows (two output rows a tile); exactly the maximum of the Conv's outputs read */
    static const struct { int H, fm; } cs[] = {{7, 14}, {8, 4}};
    const int NB = 2, C = 8, M = 8, Wd = 5, H = cs[_i].H, Ho = (H - 1) / 2 + 1, Wo = (Wd - 1) / 2 + 1;
    const ts_t10_plan pick = {.fm = (uint32_t)cs[_i].fm, .fn = 1, .fk = 1, .ft = 1, .rp = 1,
                              .rot = TS_T10_ROT_NONE};
    ts_graph *g = ts_graph_create("conv_pool");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){NB, C, H, Wd});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){M, C, 1, 1});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    int z = tensor(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w);
    ts_graph_attrs a1, ap;
    ts_graph_attrs_init(&a1);
    a1.strides[0] = a1.strides[1] = 1;
    node(g, TS_OP_CONV, "conv", (int[]){x, w}, 2, y, &a1);
    ts_graph_attrs_init(&ap);
    ap.kernel[0] = ap.kernel[1] = 3;
    ap.strides[0] = ap.strides[1] = 2;
    ap.pads[0] = ap.pads[1] = ap.pads[2] = ap.pads[3] = 1;
    node(g, TS_OP_MAXPOOL, "mp", (int[]){y}, 1, z, &ap);
    ts_graph_mark_output(g, y);
    ts_graph_mark_output(g, z);
    finalize(g);
    lowered L = {0};
    lower_t10(g, &pick, &L);
    ck_assert(L.rep.layers[0].t10);
    bool blocked = false;
    for (size_t i = 0; i < L.rep.nplaces; i++)
        blocked |= L.rep.places[i].tensor == z && L.rep.places[i].inner == (uint64_t)(Ho * Wo);
    ck_assert_msg(blocked, "the MaxPool's output is not blocked");
    for (int p = 0; p < NB * M; p++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                float m = -INFINITY;
                for (int ky = 0; ky < 3; ky++)
                    for (int kx = 0; kx < 3; kx++) {
                        int iy = oy * 2 + ky - 1, ix = ox * 2 + kx - 1;
                        if (iy >= 0 && ix >= 0 && iy < H && ix < Wd)
                            m = fmaxf(m, out_at(&L, g, y, (uint64_t)((p * H + iy) * Wd + ix)));
                    }
                uint64_t e = (uint64_t)((p * Ho + oy) * Wo + ox);
                ck_assert_msg(out_at(&L, g, z, e) == m, "z[%llu]: got %g, want %g", (unsigned long long)e,
                              (double)out_at(&L, g, z, e), (double)m);
            }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_t10_gemm_relu16)
{
    /* an f16 Gemm (transB, bias) Y[4,32] = relu(x)[4,48] x B[32,48]^T + b whose A is a Relu's
     * output (held in f32 words, converted to halves for the Gemm) on ipu_small16 with an AMP of
     * 16 f16 units, of which (b)'s code uses 8 (as a Conv's): A rotating, and the cost model's
     * plan (ResNet's fc at batch 4). Tolerance as planner (a)'s f16 (near16). */
    static const char *const wide[] = {"amp.macs_per_cycle_f16=64", NULL};
    static const ts_t10_plan plans[] = {
        {.fm = 2, .fn = 4, .fk = 1, .ft = 4, .rp = 1, .rot = TS_T10_ROT_A},
    };
    run_sets = wide;
    ts_graph *g = ts_graph_create("fc16");
    int x = tensor16(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 48});
    int w = tensor16(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){32, 48});
    int b = tensor16(g, "b", TS_TENSOR_WEIGHT, 1, (int64_t[]){32});
    int r = tensor16(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor16(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_RELU, "relu", (int[]){x}, 1, r, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    node(g, TS_OP_GEMM, "fc", (int[]){r, w, b}, 3, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_t10(g, _i < 1 ? &plans[_i] : NULL, &L);
    run_sets = NULL;
    ck_assert(L.rep.layers[1].t10);
#define H(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))))
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 32; j++) {
            double s = H(b, j), m = fabs(s);
            for (int k = 0; k < 48; k++) {
                double a = H(x, i * 48 + k) > 0 ? H(x, i * 48 + k) : 0, t = a * H(w, j * 48 + k);
                s += t;
                m += fabs(t);
            }
            near16(out_f16(&L, g, y, (uint64_t)(i * 32 + j)), s, m, "y", (uint64_t)(i * 32 + j));
        }
#undef H
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_t10_conv_wide)
{
    /* f16 Convs on an AMP of 16 f16 units (ipu_small16 with amp.macs_per_cycle_f16=64, as MK2), whose
     * plans of whole groups of 16 outputs and steps of whole bodies (24 inputs) planner (b) runs on
     * all 16 units: the coefficient blocks of a group worker by worker, loaded by ld128putcsstep.
     * 3x3 of padding 1, 16 -> 32 channels on 9 x 4: A rotating (steps of 72), one step of 144 on
     * two groups a tile, k split in two, and the model's plan; on 8 x 4 B rotating; a 1x1 48 -> 32
     * of a batch of 2 (the model's plan). Tolerance as test_t10_conv3's. */
    static const char *const wide[] = {"amp.macs_per_cycle_f16=64", NULL};
    static const struct {
        int NB, C, H, kk, pad;
        ts_t10_plan p;
    } cs[] = {
        {1, 16, 9, 3, 1, {.fm = 5, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A}},
        {1, 16, 9, 3, 1, {.fm = 5, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {1, 16, 9, 3, 1, {.fm = 3, .fn = 2, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE}},
        {1, 16, 9, 3, 1, {0}},
        {1, 16, 8, 3, 1, {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B}},
        {2, 48, 6, 1, 0, {0}},
    };
    run_sets = wide;
    t10_convk(true, cs[_i].NB, cs[_i].C, cs[_i].H, 4, 32, cs[_i].kk, 1, cs[_i].pad, cs[_i].p.fm ? &cs[_i].p : NULL);
    run_sets = NULL;
    ck_assert_uint_gt(conv_putcs_step, 0); /* the 16-unit kernel ran */
}
END_TEST

START_TEST(test_t10_conv_batch)
{
    /* a batch of 2 images folded into the pixels (image by image, each image's pixels whole blocks,
     * the output the blocked layout of the batch's planes): 3x3 Convs of padding 1, 16 -> 16
     * channels on 8 x 4, f16 with A rotating (2 blocks of 4 output rows an image), with B rotating
     * (4 blocks of 2 rows), k split in two, the model's plan, and f32 at stride 2; a 1x1 Conv 56 ->
     * 16 on 5 x 4, f16 with A rotating (blocks of 10 pixels), and strided 1x1 (24 -> 16 on 13 x 6
     * at stride 2, f32) with the model's plan. Tolerance as test_t10_conv3's. */
    static const ts_t10_plan plans[] = {
        {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A},
        {.fm = 8, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B},
        {.fm = 4, .fn = 1, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
    };
    if (_i < 3)
        t10_convk(true, 2, 16, 8, 4, 16, 3, 1, 1, &plans[_i]);
    else if (_i == 3)
        t10_convk(true, 2, 16, 8, 4, 16, 3, 1, 1, NULL);
    else if (_i == 4)
        t10_convk(false, 2, 16, 8, 4, 16, 3, 2, 1, NULL);
    else if (_i == 5)
        t10_convk(true, 2, 56, 5, 4, 16, 1, 1, 0, &plans[0]);
    else
        t10_convk(false, 2, 24, 13, 6, 16, 1, 2, 0, NULL);
}
END_TEST

START_TEST(test_t10_conv_tail)
{
    /* the Relu and the Add after a planner (b) Conv done by its output pass (issue 17's tails fused
     * into the producing superstep): an f16 1x1 Conv 56 -> 16 on 5 x 4 at batch 2 with A rotating (a
     * block an image: the output another operator reads is blocked in whole rows),
     * then an Add of a graph input (f16, held as the input is) and a Relu; f32 3x3 16 -> 16 on 8 x 4
     * at stride 2, the model's plan, then a Relu; f32 strided 1x1 24 -> 16 on 13 x 6, batch 1, then
     * the Add alone; then f32 1x1 Convs at batch 2 in blocks of 2 and 5 pixels with a Relu (the
     * software-pipelined loop 0 and 3 times), and in blocks of 2 with the Add and the Relu. Tolerance as test_t10_conv3's, the Add's
     * operand counted in the sum of |terms|. */
    static const ts_t10_plan rota = {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A};
    static const ts_t10_plan px[] = { /* blocks of 2 and 5 pixels: the Relu's loop 0 and 3 times */
        {.fm = 10, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
    };
    if (_i == 0)
        t10_convk_tail(true, 2, 56, 5, 4, 16, 1, 1, 0, &rota, 2);
    else if (_i == 1)
        t10_convk_tail(false, 2, 16, 8, 4, 16, 3, 2, 1, NULL, 1);
    else if (_i == 2)
        t10_convk_tail(false, 1, 24, 13, 6, 16, 1, 2, 0, NULL, 3);
    else if (_i < 5)
        t10_convk_tail(false, 2, 8, 5, _i == 3 ? 2 : 1, 16, 1, 1, 0, &px[_i - 3], 1);
    else
        t10_convk_tail(false, 2, 8, 5, 2, 16, 1, 1, 0, &px[0], 2);
}
END_TEST

START_TEST(test_t10_conv_bcast)
{
    /* the gather of a Conv's input broadcast where tiles read the same words of a holder: a 1x1
     * Conv 16 -> 64 on 4 x 4 (f32) in 8 column blocks, each reading all 16 channels from the one
     * tile that holds the input (the holder one of them: 7 sends without the broadcast, 1 with); _i
     * 1: at batch 2, an image a pixel block by 4 column blocks, the two images' readers in two
     * rounds (a sender that broadcasts sends nothing else in the round: 2 sends, 7 without) */
    static const ts_t10_plan plans[] = {
        {.fm = 1, .fn = 8, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 2, .fn = 4, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
    };
    t10_convk(false, _i ? 2 : 1, 16, 4, 4, 64, 1, 1, 0, &plans[_i]);
    ck_assert_uint_eq(conv_sends, _i ? 2 : 1);
}
END_TEST

START_TEST(test_t10_conv_f16)
{
    /* an f16 1x1 Conv 56 -> 16 on 5 x 4 pixels (20 rows of 56 inputs): A rotating, B rotating,
     * both, nothing, k split in two (f32 sums added in the tree), k per step in
     * whole bodies (the last slice, 8 of 48, padded: zeros in A's and B's padding) with A and with B
     * rotating, and the cost model's */
    static const ts_t10_plan plans[] = {
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_AB},
        {.fm = 4, .fn = 1, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 2, .fn = 2, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A, .bodies = true},
        {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B, .bodies = true},
    };
    enum { NP = sizeof plans / sizeof plans[0] };
    t10_conv1x1(true, 56, 5, 4, 16, 1, _i < NP ? &plans[_i] : NULL);
}
END_TEST

START_TEST(test_t10_conv_strided)
{
    /* a strided 1x1 Conv (a 1x1 Conv on the subsampled image), f16 and f32: 24 -> 16 channels,
     * 13 x 6 at stride 2 (7 x 3 outputs: the last input row read, the last column not), each tile a
     * block of whole output rows gathered as whole input rows: blocks of 2 output rows (the last
     * one of 1) with A rotating, with B rotating, with k split in two (f32 sums added in the tree),
     * blocks of 1 row with nothing rotating, and the cost model's; then 8 -> 8 channels, 7 x 7 at
     * stride 3 with the model's plan */
    static const ts_t10_plan plans[] = {
        {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A},
        {.fm = 4, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_B},
        {.fm = 4, .fn = 1, .fk = 2, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 7, .fn = 2, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE},
    };
    enum { NP = sizeof plans / sizeof plans[0] };
    if (_i <= NP)
        t10_conv1x1(true, 24, 13, 6, 16, 2, _i < NP ? &plans[_i] : NULL);
    else if (_i == NP + 1)
        t10_conv1x1(false, 24, 13, 6, 16, 2, &plans[0]);
    else if (_i == NP + 2)
        t10_conv1x1(false, 24, 13, 6, 16, 2, NULL);
    else
        t10_conv1x1(true, 8, 7, 7, 8, 3, NULL);
}
END_TEST

/* f16v4amp instructions in a program (every copy of the AMP routines). */
static size_t amp16_count(const ts_program *prog)
{
    size_t n = 0;
    for (size_t i = 0; i < prog->nstreams; i++)
        for (uint32_t k = 0; k < prog->streams[i].n; k++)
            n += prog->streams[i].insn[k].op == OP_F16V4AMP;
    return n;
}

START_TEST(test_t10_conv_reuse)
{
    /* two f16 1x1 Convs 16 -> 16 on 6 x 4 pixels one after the other with the same plan: their AMP
     * routines (addresses in each step's table) are the same, so the second Conv runs the first's
     * (lwi_reuse_routine) and the program holds as many f16v4amp as with one Conv; values of the
     * chain against the double reference, the first Conv's outputs rounded to f16 where the second
     * reads them (a rounding apart at a boundary: 2^-10 of the sum of |terms|) */
    enum { C = 16, P = 24 };
    static const ts_t10_plan pl = {.fm = 2, .fn = 2, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_A};
    size_t amp[2];
    for (int two = 0; two < 2; two++) {
        ts_graph *g = ts_graph_create("reuse");
        int x = tensor16(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, C, 6, 4});
        int w1 = tensor16(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 1, 1});
        int w2 = tensor16(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){C, C, 1, 1});
        int h = tensor16(g, "h", TS_TENSOR_ACTIVATION, -1, NULL), y = tensor16(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
        ts_graph_attrs at;
        ts_graph_attrs_init(&at);
        node(g, TS_OP_CONV, "c1", (int[]){x, w1}, 2, h, &at);
        if (two)
            node(g, TS_OP_CONV, "c2", (int[]){h, w2}, 2, y, &at);
        ts_graph_mark_output(g, two ? y : h);
        finalize(g);
        lowered L = {0};
        lower_t10(g, &pl, &L);
        ck_assert(L.rep.layers[0].t10 && (!two || L.rep.layers[1].t10));
        amp[two] = amp16_count(L.prog);
#define H16(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))))
        for (int m = 0; two && m < C; m++)
            for (int q = 0; q < P; q++) {
                double v = 0, mg = 0;
                for (int c = 0; c < C; c++) {
                    double hv = 0;
                    for (int c1 = 0; c1 < C; c1++)
                        hv += H16(x, c1 * P + q) * H16(w1, c * C + c1);
                    double t = (double)ts_f16_to_f32(ts_f32_to_f16((float)hv)) * H16(w2, m * C + c);
                    v += t;
                    mg += fabs(t);
                }
                double got = out_at(&L, g, y, (uint64_t)(m * P + q));
                ck_assert_msg(fabs(got - v) <= mg / 1024 + 1e-6, "y[%d]: got %.9g, want %.9g", m * P + q, got, v);
            }
#undef H16
        lowered_free(&L);
        ts_graph_destroy(g);
    }
    ck_assert_uint_gt(amp[0], 0);
    ck_assert_uint_eq(amp[1], amp[0]);
}
END_TEST

START_TEST(test_t10_f16_gather_packed)
{
    /* f16 C[16,16] = A[16,1024] x B[1024,16] on 12 tiles of ipu_small16, 6 x 2 (blocks of 3 rows)
     * with nothing rotating and k in one step of whole bodies (1,032: A's rows padded): every row of
     * A lies on its own tile (chunks of 1,024 elements), and of the two tiles of a block some hold a
     * row of it and some not (tile 3 holds row 3 of block 1, tile 2 none), so "the r-th transfer of
     * every receiver" would have row 5's holder serve both in one round and the gather's rounds are
     * packed (lower_ipu_exchange.c, gather_pack; 1,986 estimated cycles against 2,498), the rows a
     * tile holds itself copied by its workers; values as planner (a)'s f16 */
    static const ts_t10_plan plan = {.fm = 6, .fn = 2, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE,
                                     .bodies = true};
    ts_graph *g = ts_graph_create("mm16g");
    ts_err e;
    ts_err_init(&e);
    int id[2];
    const char *names[2] = {"a", "b"};
    const int64_t dims[2][2] = {{16, 1024}, {1024, 16}};
    static uint16_t h[16 * 1024];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ts_graph_add_tensor(g, names[i], i ? TS_TENSOR_WEIGHT : TS_TENSOR_INPUT, TS_DT_F16, 2,
                                             dims[i], &id[i], &e), TS_OK);
        for (int64_t k = 0; k < 16 * 1024; k++)
            h[k] = ts_f32_to_f16(val(id[i], k));
        ck_assert_int_eq(ts_graph_set_data(g, id[i], h, sizeof h, &e), TS_OK);
    }
    int y = -1;
    ck_assert_int_eq(ts_graph_add_tensor(g, "y", TS_TENSOR_ACTIVATION, TS_DT_F16, -1, NULL, &y, &e), TS_OK);
    node(g, TS_OP_MATMUL, "mm", id, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_t10(g, &plan, &L);
    ck_assert(L.rep.layers[0].t10);
    ck_assert_uint_eq(L.rep.layers[0].fm, 6);
#define H(t, k) ((double)ts_f16_to_f32(ts_f32_to_f16(val(t, k))))
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            double s = 0, m = 0;
            for (int k = 0; k < 1024; k++) {
                s += H(id[0], i * 1024 + k) * H(id[1], k * 16 + j);
                m += fabs(H(id[0], i * 1024 + k) * H(id[1], k * 16 + j));
            }
            near16(out_f16(&L, g, y, (uint64_t)(i * 16 + j)), s, m, "y", (uint64_t)(i * 16 + j));
        }
#undef H
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* Cycles of g lowered by `pl` on `config`, and the exchange share of its supersteps. */
static uint64_t measure(const ts_graph *g, const char *config, int pl, double *xshare)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *prog = NULL;
    ts_lower_report rep;
    planner = pl;
    ck_assert_int_eq(compile(g, config, NULL, &prog, &rep, &e), TS_OK);
    planner = TS_LOWER_PLANNER_LCS;
    ipu_run r;
    run_prog(config, prog, false, 1, &r);
    const ts_stat *ss = ts_stats_find(r.r.stats, "supersteps");
    ck_assert_ptr_nonnull(ss);
    double x = 0, all = 0;
    for (size_t k = 0; k < ss->nrows; k++) { /* id start compute exchange sync ... */
        x += ss->rows[k * ss->ncols + 3];
        all += ss->rows[k * ss->ncols + 2] + ss->rows[k * ss->ncols + 3] + ss->rows[k * ss->ncols + 4];
    }
    *xshare = all > 0 ? x / all : 0;
    uint64_t cyc = r.r.cycles;
    ipu_run_free(&r);
    ts_lower_report_free(&rep);
    ts_program_destroy(prog);
    ts_err_free(&e);
    return cyc;
}

START_TEST(test_t10_beats_lcs)
{
    /* A product whose weights planner (a) splits into column blocks, replicating A over them by a
     * gather from the few tiles that hold it (T10's case against load-compute-store): the
     * compute-shift plan the cost model chooses takes fewer cycles, with a smaller exchange share.
     * k = 100 (50 pairs, not a multiple of 6): both planners run lwi_emit_mm's routine; at k = 96
     * planner (a)'s rows take the shared-coefficient kernel (lower_ipu_ampk.c), whose compute is
     * 2.6x faster, and (a) wins (30,297 cycles against 52,521) */
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("matmul:m=96,k=100,n=96", &g, &e), TS_OK);
    double xa, xb;
    uint64_t a = measure(g, "ipu_small16", TS_LOWER_PLANNER_LCS, &xa);
    uint64_t b = measure(g, "ipu_small16", TS_LOWER_PLANNER_T10, &xb);
    ck_assert_msg(b < a, "compute-shift %llu cycles, load-compute-store %llu", (unsigned long long)b,
                  (unsigned long long)a);
    ck_assert_msg(xb < xa, "exchange share: compute-shift %.3f, load-compute-store %.3f", xb, xa);
    /* planner (b)'s cost model picks a rotating plan only when it is cheaper than every split one:
     * the split planner's product is not faster by more than the model's error (10 %) */
    double xs;
    uint64_t sp = measure(g, "ipu_small16", TS_LOWER_PLANNER_SPLIT, &xs);
    ck_assert_msg((double)b <= 1.1 * (double)sp, "compute-shift %llu cycles, split %llu", (unsigned long long)b,
                  (unsigned long long)sp);
    /* auto, the default, is no slower than the best single planner by more than 2 % */
    double xo;
    uint64_t au = measure(g, "ipu_small16", TS_LOWER_PLANNER_AUTO, &xo), best = a < b ? a : b;
    best = sp < best ? sp : best;
    ck_assert_msg((double)au <= 1.02 * (double)best, "auto %llu cycles, lcs %llu, t10 %llu, split %llu",
                  (unsigned long long)au, (unsigned long long)a, (unsigned long long)b, (unsigned long long)sp);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_t10_conv_auto)
{
    /* an f16 1x1 Conv 64 -> 64 on 16 x 16, of stride 1 and 2: auto takes (b)'s plan by the cost
     * model (t10 in the report) and it runs faster than planner (a)'s Conv (on this build 22,597
     * against 58,885 cycles at stride 1, 10,111 against 38,303 at stride 2), and no slower than
     * planner (b) alone by more than 2 % */
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin(_i ? "conv2d:c=64,h=16,w=16,k=64,r=1,s=1,pad=0,stride=2,dtype=f16"
                                      : "conv2d:c=64,h=16,w=16,k=64,r=1,s=1,pad=0,dtype=f16",
                                   &g, &e),
                     TS_OK);
    double xa, xb;
    uint64_t a = measure(g, "ipu_small16", TS_LOWER_PLANNER_LCS, &xa);
    uint64_t b = measure(g, "ipu_small16", TS_LOWER_PLANNER_T10, &xb);
    planner = TS_LOWER_PLANNER_AUTO;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    planner = TS_LOWER_PLANNER_LCS;
    uint64_t au = L.run.r.cycles;
    ck_assert(L.rep.layers[0].t10 && L.rep.layers[0].model_cycles > 0);
    lowered_free(&L);
    ck_assert_msg(au < a, "auto %llu cycles, load-compute-store %llu", (unsigned long long)au, (unsigned long long)a);
    ck_assert_msg((double)au <= 1.02 * (double)b, "auto %llu cycles, t10 %llu", (unsigned long long)au,
                  (unsigned long long)b);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* Cycles of g lowered by `pl` on `tiles` tiles of ipu_small16 with tile memory `sram` ("tile.sram=64
 * KiB"), run fast; 0 if it does not fit. */
static uint64_t cycles_at(const ts_graph *g, int pl, const char *sram, uint32_t tiles)
{
    const char *const sets[] = {sram, NULL};
    ts_err e;
    ts_err_init(&e);
    ts_program *prog = NULL;
    ts_lower_report rep;
    planner = pl;
    max_tiles = tiles;
    ts_status rc = compile(g, "ipu_small16", sets, &prog, &rep, &e);
    planner = TS_LOWER_PLANNER_LCS;
    max_tiles = 0;
    uint64_t cyc = 0;
    if (rc == TS_OK) {
        ipu_run r;
        run_sets = sets;
        run_prog("ipu_small16", prog, false, 1, &r);
        run_sets = NULL;
        cyc = r.r.cycles;
        ipu_run_free(&r);
        ts_lower_report_free(&rep);
        ts_program_destroy(prog);
    } else
        ck_assert_msg(rc == TS_EINPUT, "%s, %u tiles: %s", sram, tiles, e.msg); /* only "does not fit" */
    ts_err_free(&e);
    return cyc;
}

START_TEST(test_auto_monotonic)
{
    /* Under auto, the default, more tile memory or more tiles never gives more cycles (nor a model
     * that no longer fits): a MatMul, a 3x3 Conv and a small BERT layer over tile memories of 64,
     * 128 and 256 KiB and 2, 4, 8 and 16 tiles of ipu_small16. On 2 and 16 tiles auto is also no
     * slower than any single planner by more than 2 % (nor fails where one fits). */
    static const char *const models[] = {"matmul:m=96,k=96,n=96", "conv2d:c=16,h=16,w=16,k=32",
                                         "bert-base-layer:seq=16,hidden=64,heads=2,ffn=128"};
    static const char *const srams[] = {"tile.sram=64 KiB", "tile.sram=128 KiB", "tile.sram=256 KiB"};
    static const uint32_t tiles[] = {2, 4, 8, 16};
    enum { NS = 3, NT = 4 };
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin(models[_i], &g, &e), TS_OK);
    uint64_t c[NS][NT];
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NT; t++)
            c[s][t] = cycles_at(g, TS_LOWER_PLANNER_AUTO, srams[s], tiles[t]);
    ck_assert_msg(c[NS - 1][NT - 1] > 0, "%s does not fit the largest point", models[_i]);
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NT; t++) {
            if (!c[s][t])
                continue;
            /* the next larger memory and the next larger tile count: by induction, every larger point */
            if (s + 1 < NS)
                ck_assert_msg(c[s + 1][t] && c[s + 1][t] <= c[s][t], "%s on %u tiles: %s %llu cycles, %s %llu",
                              models[_i], tiles[t], srams[s], (unsigned long long)c[s][t], srams[s + 1],
                              (unsigned long long)c[s + 1][t]);
            if (t + 1 < NT)
                ck_assert_msg(c[s][t + 1] && c[s][t + 1] <= c[s][t], "%s with %s: %u tiles %llu cycles, %u tiles %llu",
                              models[_i], srams[s], tiles[t], (unsigned long long)c[s][t], tiles[t + 1],
                              (unsigned long long)c[s][t + 1]);
        }
    static const int single[] = {TS_LOWER_PLANNER_LCS, TS_LOWER_PLANNER_T10, TS_LOWER_PLANNER_SPLIT};
    for (int s = 0; s < NS; s++)
        for (int t = 0; t < NT; t += NT - 1) /* 2 and 16 tiles */
            for (int k = 0; k < 3; k++) {
                uint64_t o = cycles_at(g, single[k], srams[s], tiles[t]);
                ck_assert_msg(!o || (c[s][t] && (double)c[s][t] <= 1.02 * (double)o), "%s with %s on %u tiles: "
                              "auto %llu cycles, planner %d %llu", models[_i], srams[s], tiles[t],
                              (unsigned long long)c[s][t], single[k], (unsigned long long)o);
            }
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_auto_deep_fits)
{
    /* A deep model of small products (8 layers of d 32, 8 rows) on 16 tiles: planner (a) repeats a
     * product's weights on each of its 8 row groups, every product from tile 0 up, so at 128 KiB
     * its shares of 1/4 .. 1/64 stacked 108 KiB of weights on tiles 0..7 and it did not fit where
     * it fits at 96 KiB (its 1/64 cut the columns over 16 tiles). The shares now go on past 1/64
     * (LW_MIN_SHARE): it fits at every size from 96 KiB up, under auto and under lcs. */
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_int_eq(ts_wl_builtin("gpt:layers=8,hidden=32,heads=2,ffn=64,vocab=40,seq=8,dtype=f16", &g, &e), TS_OK);
    static const char *const srams[] = {"tile.sram=96 KiB", "tile.sram=128 KiB", "tile.sram=160 KiB"};
    for (int s = 0; s < 3; s++)
        ck_assert_msg(cycles_at(g, TS_LOWER_PLANNER_AUTO, srams[s], 16) > 0, "auto, %s: does not fit", srams[s]);
    ck_assert_msg(cycles_at(g, TS_LOWER_PLANNER_LCS, srams[1], 16) > 0, "lcs, %s: does not fit", srams[1]);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

/* The double reference of a chain of np products from the graph's node 0 (node i: the chain so far
 * times its weight), their data |val| (fill_values' magnitudes, the weights scaled by 0.25): v the
 * rows x k values, m the sums of |terms| carried through the chain (the f32 error bound's scale).
 * Such a chain has no cancellation, so that bound, 1e-5 of m, is 1e-5 of each value, where with
 * signed data the sums grew to 2e5 times the values after five products of 64 and the bound passed
 * a reference scaled by 1.04 a product. */
static void chain_ref(const ts_graph *g, int np, int rows, int k, double *v, double *m)
{
    double *nv = calloc((size_t)(rows * k), sizeof *nv), *nm = calloc((size_t)(rows * k), sizeof *nm);
    ck_assert(nv && nm);
    for (int e = 0; e < rows * k; e++) {
        v[e] = fabs(val(ts_graph_get_node(g, 0)->in[0], e));
        m[e] = fabs(v[e]);
    }
    for (int i = 0; i < np; i++) {
        int w = ts_graph_get_node(g, i)->in[1];
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < k; j++) {
                nv[r * k + j] = nm[r * k + j] = 0;
                for (int c = 0; c < k; c++) {
                    double f = fabs((double)val(w, c * k + j)) * 0.25;
                    nv[r * k + j] += v[r * k + c] * f;
                    nm[r * k + j] += m[r * k + c] * fabs(f);
                }
            }
        memcpy(v, nv, (size_t)(rows * k) * sizeof *v);
        memcpy(m, nm, (size_t)(rows * k) * sizeof *m);
    }
    free(nv);
    free(nm);
}

START_TEST(test_products_spread)
{
    /* Five products of 8 rows by a 64 x 64 weight on ipu_small16 (64 KiB tiles), each on one tile
     * (planner (b)'s plan 1 x 1 x 1): from tile 0 on, their weights (16 KiB each) stacked 80 KiB
     * on tile 0 and did not fit; each now starts where the weights before it are fewest, one tile
     * each, and the chain's values are those of the products. A LayerNorm after them likewise. */
    enum { NP = 5, M = 8, K = 64 };
    ts_graph *g = ts_graph_create("chain");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){M, K}), w[NP], y[NP];
    fill_values(g, x, 1.0f, true);
    for (int i = 0, a = x; i < NP; i++) {
        char wn[16], mn[16], yn[16];
        snprintf(wn, sizeof wn, "w%d", i);
        snprintf(mn, sizeof mn, "mm%d", i);
        snprintf(yn, sizeof yn, "y%d", i);
        w[i] = tensor(g, wn, TS_TENSOR_WEIGHT, 2, (int64_t[]){K, K});
        fill_values(g, w[i], 0.25f, true);
        y[i] = tensor(g, yn, TS_TENSOR_ACTIVATION, -1, NULL);
        node(g, TS_OP_MATMUL, mn, (int[]){a, w[i]}, 2, y[i], NULL);
        a = y[i];
    }
    int sc = tensor(g, "scale", TS_TENSOR_WEIGHT, 1, (int64_t[]){K});
    int bi = tensor(g, "bias", TS_TENSOR_WEIGHT, 1, (int64_t[]){K});
    int z = tensor(g, "z", TS_TENSOR_ACTIVATION, -1, NULL);
    ts_graph_attrs at = norm_weights(g, sc, bi);
    node(g, TS_OP_LAYERNORM, "ln", (int[]){y[NP - 1], sc, bi}, 3, z, &at);
    ts_graph_mark_output(g, y[NP - 1]);
    ts_graph_mark_output(g, z);
    finalize(g);
    static const ts_t10_plan one = {.fm = 1, .fn = 1, .fk = 1, .ft = 1, .rp = 1};
    lowered L = {0};
    lower_planned(g, TS_LOWER_PLANNER_T10, &one, &L);
    /* the outputs on five different tiles; the LayerNorm's 8 rows (its scale and bias on each of
     * its tiles) on 4 tiles, not those of the products (it took 8 tiles from tile 0) */
    bool seen[16] = {false};
    for (size_t k = 0; k < L.rep.nplaces; k++) {
        if (L.rep.places[k].tensor == z) {
            ck_assert_uint_eq(L.rep.places[k].ntiles, 4);
            ck_assert_uint_ge(L.rep.places[k].t0, NP);
        }
        for (int i = 0; i < NP; i++)
            if (L.rep.places[k].tensor == y[i]) {
                ck_assert_uint_eq(L.rep.places[k].ntiles, 1);
                ck_assert_uint_lt(L.rep.places[k].t0, 16);
                ck_assert_msg(!seen[L.rep.places[k].t0], "two products on tile %u", L.rep.places[k].t0);
                seen[L.rep.places[k].t0] = true;
            }
    }
    /* f32: each product within 1e-5 of the sum of |terms| carried through the chain */
    double v[M][K], m[M][K];
    chain_ref(g, NP, M, K, &v[0][0], &m[0][0]);
    for (int r = 0; r < M; r++)
        for (int j = 0; j < K; j++)
            near(out_at(&L, g, y[NP - 1], (uint64_t)(r * K + j)), v[r][j], m[r][j], "y", (uint64_t)(r * K + j));
    /* the LayerNorm within 1e-4 (1 + |y|) of the double reference (its input within 1e-5 of the
     * sums of |terms|, of the order of the row's deviation) */
    for (int r = 0; r < M; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < K; j++)
            mean += v[r][j] / K;
        for (int j = 0; j < K; j++)
            var += (v[r][j] - mean) * (v[r][j] - mean) / K;
        for (int j = 0; j < K; j++) {
            double want = (v[r][j] - mean) / sqrt(var + 1e-5) * val(sc, j) + val(bi, j);
            double got = out_at(&L, g, z, (uint64_t)(r * K + j));
            ck_assert_msg(fabs(got - want) <= 1e-4 * (1.0 + fabs(want)), "z[%d][%d]: got %.9g, want %.9g", r, j, got,
                          want);
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
}
END_TEST

/* A chain of np products named as a model's layers ("layers.N.mm", one key), m x k by k x k
 * weights, each on one tile under planner (b)'s plan 1 x 1 x 1; y gets the last product's output. */
static ts_graph *layer_chain(int np, int m, int k, int *y)
{
    ts_graph *g = ts_graph_create("layers");
    int a = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){m, k});
    fill_values(g, a, 1.0f, true);
    for (int i = 0; i < np; i++) {
        char wn[24], mn[24], yn[24];
        snprintf(wn, sizeof wn, "layers.%d.w", i);
        snprintf(mn, sizeof mn, "layers.%d.mm", i);
        snprintf(yn, sizeof yn, "layers.%d.y", i);
        int w = tensor(g, wn, TS_TENSOR_WEIGHT, 2, (int64_t[]){k, k});
        fill_values(g, w, 0.25f, true);
        int o = tensor(g, yn, TS_TENSOR_ACTIVATION, -1, NULL);
        node(g, TS_OP_MATMUL, mn, (int[]){a, w}, 2, o, NULL);
        a = o;
    }
    ts_graph_mark_output(g, a);
    finalize(g);
    *y = a;
    return g;
}

START_TEST(test_code_spread)
{
    /* Sixteen products named as layers (one key), 128 rows by an 8 x 8 weight, each on one tile
     * (planner (b)'s plan 1 x 1 x 1), about 800 instructions each (a row's loads unrolled), on
     * ipu_small16 with 48 KiB tiles (12,288 instructions): from tile 0 on, every product's code
     * stacked on tile 0 and did not fit, nor at the smaller budget; under the code spread each
     * product after the first starts where its last one's code leaves the fullest tile least full,
     * and the chain's values are those of the products. */
    enum { NP = 16, M = 128, K = 8 };
    int y;
    ts_graph *g = layer_chain(NP, M, K, &y);
    static const char *const sets[] = {"tile.sram=48 KiB", NULL};
    static const ts_t10_plan one = {.fm = 1, .fn = 1, .fk = 1, .ft = 1, .rp = 1};
    planner = TS_LOWER_PLANNER_T10;
    t10_plan = &one;
    run_sets = sets;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    run_sets = NULL;
    /* the outputs on more than one tile; no tile's code past 12,288 instructions */
    uint32_t tiles = 0;
    for (size_t k = 0; k < L.rep.nplaces; k++)
        if (L.rep.places[k].ntiles == 1)
            tiles |= 1u << L.rep.places[k].t0;
    ck_assert_uint_gt((uint32_t)__builtin_popcount(tiles), 1);
    for (size_t t = 0; t < L.prog->nstreams; t++)
        ck_assert_uint_le(L.prog->streams[t].n, 48 * 1024 / 4);
    /* f32: within 1e-5 of the sum of |terms| carried through the chain */
    double v[M][K], m[M][K];
    chain_ref(g, NP, M, K, &v[0][0], &m[0][0]);
    for (int r = 0; r < M; r++)
        for (int j = 0; j < K; j++)
            near(out_at(&L, g, y, (uint64_t)(r * K + j)), v[r][j], m[r][j], "y", (uint64_t)(r * K + j));
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
}
END_TEST

START_TEST(test_split_sends_looped)
{
    /* C[64,32] = A[64,32] x B[32,32] under planner split with the plan 1 x 2 x 2 (nothing rotating,
     * k in two halves of 16): each of the plan's four tiles reads 16 of k of each of A's 64 rows,
     * which lie in chunks of whole rows, so a holder of A sends a row's piece of 16 words, the next
     * 128 bytes on in its memory, for each row of its chunk to each tile that reads them. Unrolled,
     * every piece was a send of its own; now one loop a run (5 instructions), and the values are the
     * product's. */
    enum { M = 64, K = 32, N = 32 };
    int a, b, c;
    ts_graph *g = matmul_filled(M, K, N, &a, &b, &c);
    static const ts_t10_plan plan = {.fm = 1, .fn = 2, .fk = 2, .ft = 1, .rp = 1};
    lowered L = {0};
    lower_planned(g, TS_LOWER_PLANNER_SPLIT, &plan, &L);
    ck_assert_uint_eq(L.rep.planner, TS_LOWER_PLANNER_SPLIT);
    ck_assert_uint_eq(L.rep.layers[0].fk, 2);
    /* the pieces other tiles send: every (row, k-half) a plan tile reads from a tile not its own */
    uint64_t pieces = 0;
    for (uint32_t t = 0; t < 4; t++)
        for (int r = 0; r < M; r++) {
            uint32_t ht;
            uint64_t ha;
            ck_assert_int_eq(ts_lower_ipu_locate(&L.rep, g, a, (uint64_t)r * K, &ht, &ha), 0);
            pieces += ht != t;
        }
    size_t sends = 0;
    for (size_t i = 0; i < L.prog->nstreams; i++) {
        ck_assert_ptr_nonnull(L.prog->streams[i].insn);
        for (size_t k = 0; k < L.prog->streams[i].n; k++)
            sends += L.prog->streams[i].insn[k].op == IPU_OP_SEND;
    }
    ck_assert_uint_ge(pieces, 4 * M / 2);
    ck_assert_uint_le(sends * 8, pieces); /* 8 sends for 192 pieces; 194 sends unrolled */
    matmul_check(&L, g, a, b, c, M, K, N);
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
}
END_TEST

/* The code spread's last pass, the one that gives the program, takes back a MatMul/Gemm worker
 * routine that is the same as one already on its tile (lwi_reuse_routine) and, in a ring's shifts,
 * leaves the tile numbers of a receive's sender and a send's receiver in their registers from one
 * shift to the next (xset). Sixteen products named as layers (one key), 128 rows by a k x k weight,
 * on ipu_small16 cut to their tiles: k = 8 on one tile under planner (b)'s plan 1 x 1 x 1, k = 16
 * on four tiles in a ring of four (1 x 4 x 1, A rotating, four steps). With the tile memory the
 * default (64 KiB) the first plan fits and its code is unshared (13,025 and 14,583 instructions on
 * the fullest tile); with a memory 8 instructions smaller than that, the first plan and the smaller
 * budget's do not fit, and the spread's try, whose starts have nowhere else to go, shares and fits
 * (12,395 and 13,094); the values are those of the products. */
static const ts_t10_plan spread_share_plans[] = {{.fm = 1, .fn = 1, .fk = 1, .ft = 1, .rp = 1},
                                                 {.fm = 1, .fn = 4, .fk = 1, .ft = 4, .rp = 1, .rot = TS_T10_ROT_A}};

START_TEST(test_spread_shares)
{
    enum { NP = 16, M = 128, KM = 16 };
    const int K = _i ? 16 : 8;
    const uint32_t tn = _i ? 4 : 1;
    int y;
    ts_graph *g = layer_chain(NP, M, K, &y);
    planner = TS_LOWER_PLANNER_T10;
    t10_plan = &spread_share_plans[_i];
    max_tiles = tn;
    ts_err e;
    ts_err_init(&e);
    ts_program *whole = NULL;
    ts_lower_report rep = {0};
    ts_status rc0 = compile(g, "ipu_small16", NULL, &whole, &rep, &e);
    ck_assert_msg(rc0 == TS_OK, "lower: %s", e.msg);
    size_t most = 0;
    for (size_t t = 0; t < whole->nstreams; t++)
        most = whole->streams[t].n > most ? whole->streams[t].n : most;
    ts_program_destroy(whole);
    ts_lower_report_free(&rep);
    char sram[32];
    snprintf(sram, sizeof sram, "tile.sram=%zu", (most - 8) * 4);
    const char *const sets[] = {sram, NULL};
    run_sets = sets;
    lowered L = {0};
    lower_and_run(g, "ipu_small16", &L);
    run_sets = NULL;
    size_t shared = 0, setm8 = 0, sends = 0;
    for (size_t t = 0; t < L.prog->nstreams; t++) {
        shared = L.prog->streams[t].n > shared ? L.prog->streams[t].n : shared;
        for (size_t k = 0; k < L.prog->streams[t].n; k++) {
            const ts_insn *in = &L.prog->streams[t].insn[k];
            setm8 += in->op == IPU_OP_SETZI && in->a[0] == TS_IPU_MREG(8);
            sends += in->op == IPU_OP_SEND;
        }
    }
    ck_assert_uint_le(shared, most - 8);
    if (_i) /* each product's three shifts on each tile: the second and third set no receiver */
        ck_assert_uint_ge(sends - setm8, NP * 4 * 2);
    static double v[M * KM], m[M * KM];
    chain_ref(g, NP, M, K, v, m);
    for (int k = 0; k < M * K; k++)
        near(out_at(&L, g, y, (uint64_t)k), v[k], m[k], "y", (uint64_t)k);
    lowered_free(&L);
    ts_graph_destroy(g);
    planner = TS_LOWER_PLANNER_LCS;
    t10_plan = NULL;
    max_tiles = 0;
}
END_TEST

/* The tests; with `slow`, only the full-size ResNet-50 block instead (the suite "slow": it runs
 * with TS_SLOW_TESTS=1 and is skipped with 77 otherwise, saying so). */
int main(int argc, char **argv)
{
    arch_modes_default = ARCH_MODES_QUICK; /* long programs: lockstep on threads would cost seconds each */
    arch_modes_address = ARCH_MODES_FAST; /* under ASan + UBSan: tests/arch/arch_modes.h */
    bool slow = argc > 1 && !strcmp(argv[1], "slow");
    if (slow && slow_skipped("test_lower_ipu slow: ResNet-50's layer2.0 at full size"))
        return 77;
    Suite *s = suite_create("lower_ipu");
    TCase *tc = tcase_create("lower_ipu");
    tcase_set_timeout(tc, 300);
    if (slow) {
        printf("running ResNet-50's layer2.0 at full size on ipu_mk1 (TS_SLOW_TESTS=1)\n");
        fflush(stdout);
        tcase_add_test(tc, test_bottleneck_mk1);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
    }
    tcase_add_loop_test(tc, test_matmul, 0, 2);
    tcase_add_test(tc, test_matmul_f16);
    tcase_add_loop_test(tc, test_matmul_shared, 0, 4);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_eltwise_broadcast);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_spread);
    tcase_add_test(tc, test_liveness_reuse);
    tcase_add_test(tc, test_code_fits);
    tcase_add_test(tc, test_auto_falls_back);
    tcase_add_test(tc, test_transpose);
    tcase_add_loop_test(tc, test_batched_matmul, 0, 4);
    tcase_add_loop_test(tc, test_bert_layer, 0, 2);
    tcase_add_test(tc, test_mlp_softmax);
    tcase_add_test(tc, test_conv);
    tcase_add_test(tc, test_matmul_columns);
    tcase_add_test(tc, test_gemm_row);
    tcase_add_loop_test(tc, test_residual, 0, 2);
    tcase_add_test(tc, test_residual_f16);
    tcase_add_loop_test(tc, test_pool, 0, 2);
    tcase_add_test(tc, test_target);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_unsupported_all);
    tcase_add_test(tc, test_builtin_matmul);
    tcase_add_loop_test(tc, test_t10_plans, 0, (int)(sizeof t10_cases / sizeof t10_cases[0]));
    tcase_add_loop_test(tc, test_t10_shared, 0, (int)(sizeof t10_shared_cases / sizeof t10_shared_cases[0]));
    tcase_add_loop_test(tc, test_t10_graph, 0, 3);
    tcase_add_test(tc, test_t10_errors);
    tcase_add_test(tc, test_t10_beats_lcs);
    tcase_add_test(tc, test_t10_convs);
    tcase_add_loop_test(tc, test_t10_f16, 0, 5);
    tcase_add_loop_test(tc, test_t10_f16_padded, 0, 5);
    tcase_add_test(tc, test_t10_f16_gather_packed);
    tcase_add_loop_test(tc, test_t10_conv_f16, 0, 8);
    tcase_add_loop_test(tc, test_t10_conv_tail, 0, 6);
    tcase_add_loop_test(tc, test_t10_conv_bcast, 0, 2);
    tcase_add_loop_test(tc, test_t10_conv_strided, 0, 8);
    tcase_add_loop_test(tc, test_t10_conv3, 0, 12);
    tcase_add_loop_test(tc, test_t10_conv_wide, 0, 6);
    tcase_add_loop_test(tc, test_t10_conv_padded, 0, 9);
    tcase_add_loop_test(tc, test_t10_gemm_relu16, 0, 2);
    tcase_add_loop_test(tc, test_t10_conv_batch, 0, 7);
    tcase_add_loop_test(tc, test_t10_conv_maxpool, 0, 2);
    tcase_add_test(tc, test_t10_conv_reuse);
    tcase_add_loop_test(tc, test_t10_conv_auto, 0, 2);
    tcase_add_loop_test(tc, test_auto_monotonic, 0, 3);
    tcase_add_test(tc, test_auto_deep_fits);
    tcase_add_test(tc, test_products_spread);
    tcase_add_test(tc, test_code_spread);
    tcase_add_test(tc, test_split_sends_looped);
    tcase_add_loop_test(tc, test_spread_shares, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
