/* tests/workloads/test_lower_wse.c — the wafer-mesh lowering: graphs built through the workloads
 * API are compiled, run on the WSE family (every mode of tests/arch/arch_modes.h must agree), and
 * their outputs, read back from the sink PEs where the lowering reports them, are compared with C
 * references computed in double. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_target.h"
#include "configs/builtin.h"
#include "core/energy.h"
#include "core/results.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/program.h"
#include "tests/arch/wse/wse_test.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/wse/lower_wse.h"

/* ---- compiling and running ---- */

#include "tests/workloads/lower_wse_harness.h"

/* Run prog in the timing-only mode (no values); its cycles in *cycles. */
static ts_model *run_timing_only(const ts_program *prog, uint32_t w, uint32_t h, uint64_t *cycles)
{
    ts_wse_cfg c = wt_cfg(w, h);
    c.timing_only = true;
    ts_err e;
    ts_err_init(&e);
    ts_model *m = NULL;
    ts_run_opts o = {0};
    ck_assert_int_eq(ts_wse_create(&m, &c, &o, &e), TS_OK);
    ts_status st = ts_wse_family.load(m, prog, &e);
    ck_assert_msg(st == TS_OK, "load: %s", e.msg);
    ts_step s = {0};
    while (!s.done) {
        st = ts_wse_family.step(m, s.now + 65536, &s, &e);
        ck_assert_msg(st == TS_OK, "run: PE %lld cycle %lld: %s", (long long)e.tile, (long long)e.cycle, e.msg);
        ck_assert_msg(s.now < 50000000ull, "runaway program");
    }
    ts_wse_counts cn;
    ts_wse_counts_get(m, &cn);
    *cycles = cn.cycles;
    return m;
}

/* ---- tests ---- */

START_TEST(test_matmul)
{
    /* C[6,24] = A[6,40] x B[40,24] on 32 x 32: K is split over rows of PEs (partial sums go north)
     * and N over columns (outputs chained east) */
    int a, b, c;
    ts_graph *g = matmul_filled(6, 40, 24, &a, &b, &c);
    lowered L = {0};
    lower_and_run(g, 32, 32, &L);
    const ts_lower_wse_stage *s = stage_of(&L, "matmul", 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_gt(s->kr, 1);
    ck_assert_uint_gt(s->kc, 1);
    ck_assert_uint_eq(s->macs, 6 * 40 * 24);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 24; j++) {
            double sum = 0, mag = 0;
            for (int k = 0; k < 40; k++) {
                double t = (double)val(a, i * 40 + k) * val(b, k * 24 + j);
                sum += t;
                mag += fabs(t);
            }
            near(out_at(&L, c, (uint64_t)(i * 24 + j)), sum, mag, "c", (uint64_t)(i * 24 + j));
        }
    /* timing-only: same cycles, no values */
    uint64_t tc;
    ts_model *m = run_timing_only(L.prog, 32, 32, &tc);
    ck_assert_uint_eq(tc, L.cycles);
    wt_free(m);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* A run given the stages as regions sums each stage's energy events (table region_events): the
 * product stage's fp32_mac events are its MACs, no region has more of an event than the run, and
 * the layers table prices each stage (energy) and gives its bandwidth. */
START_TEST(test_stage_energy)
{
    int a, b, c;
    ts_graph *g = matmul_filled(6, 40, 24, &a, &b, &c);
    ts_err e;
    ts_err_init(&e);
    ts_wse_target p = params(32, 32);
    ts_lower_wse_report rep = {0};
    ts_program *prog = NULL;
    ck_assert_int_eq(ts_lower_wse(g, &p, &prog, &rep, &e), TS_OK);
    ts_region *rg = NULL;
    size_t nrg = 0;
    ck_assert_int_eq(ts_lower_wse_regions(&rep, &rg, &nrg, &e), TS_OK);
    ck_assert_uint_eq(nrg, rep.nstages);
    ts_wse_cfg cf = wt_cfg(32, 32);
    ts_model *m = NULL;
    ts_run_opts o = {.regions = rg, .nregions = nrg};
    ck_assert_int_eq(ts_wse_create(&m, &cf, &o, &e), TS_OK);
    ck_assert_int_eq(ts_wse_family.load(m, prog, &e), TS_OK);
    ts_step st = {0};
    while (!st.done)
        ck_assert_int_eq(ts_wse_family.step(m, st.now + 65536, &st, &e), TS_OK);
    ts_results res;
    ts_results_init(&res);
    ck_assert_int_eq(ts_wse_family.collect(m, &res, &e), TS_OK);
    const ts_stat *ev = ts_stats_find(res.stats, "region_events");
    ck_assert_ptr_nonnull(ev);
    ck_assert_uint_eq(ev->nrows, rep.nstages);
    for (size_t k = 1; k < ev->ncols; k++) {
        double run_count = -1, sum = 0;
        for (size_t i = 0; i < res.nevents; i++)
            if (!strcmp(res.events[i].name, ev->cols[k]))
                run_count = res.events[i].count;
        ck_assert_double_ge(run_count, 0);
        for (size_t i = 0; i < ev->nrows; i++)
            sum += ev->rows[i * ev->ncols + k];
        ck_assert_msg(sum <= run_count * (1 + 1e-12), "%s: regions %g, run %g", ev->cols[k], sum, run_count);
    }
    size_t mm = 0, macs_col = 0;
    for (size_t i = 0; i < rep.nstages; i++)
        if (!strcmp(rep.stages[i].what, "matmul"))
            mm = i;
    for (size_t k = 0; k < ev->ncols; k++)
        if (!strcmp(ev->cols[k], "fp32_mac"))
            macs_col = k;
    ck_assert_double_eq(ev->rows[mm * ev->ncols + macs_col], (double)rep.stages[mm].macs);
    ts_energy_table *t = NULL;
    ck_assert_int_eq(ts_energy_load(&t, "horowitz45", ts_builtin_find, &e), TS_OK);
    ck_assert_int_eq(ts_results_price(&res, t, &e), TS_OK);
    /* the regions' own figures equal the per-PE arrays (written on this 32 x 32 mesh) summed over
     * each rectangle: busy, stall, the busiest PE and the four links */
    const ts_stat *rs = ts_stats_find(res.stats, WSE_STAT_REGION_STATS);
    const ts_stat *bu = ts_stats_find(res.stats, WSE_STAT_BUSY_PER_PE), *sl = ts_stats_find(res.stats, WSE_STAT_STALL_PER_PE);
    const ts_stat *lk[4] = {ts_stats_find(res.stats, WSE_STAT_LINK_NORTH), ts_stats_find(res.stats, WSE_STAT_LINK_SOUTH),
                            ts_stats_find(res.stats, WSE_STAT_LINK_EAST), ts_stats_find(res.stats, WSE_STAT_LINK_WEST)};
    ck_assert(rs && bu && sl && lk[0] && lk[1] && lk[2] && lk[3]);
    ck_assert_uint_eq(rs->nrows, rep.nstages);
    for (size_t i = 0; i < rep.nstages; i++) {
        const ts_lower_wse_stage *sg = &rep.stages[i];
        double bsum = 0, stl = 0, mx = 0, l = 0;
        for (uint32_t y = sg->y; y < sg->y + sg->h; y++)
            for (uint32_t x = sg->x; x < sg->x + sg->w; x++) {
                size_t id = (size_t)y * 32 + x;
                bsum += bu->v[id];
                stl += sl->v[id];
                mx = bu->v[id] > mx ? bu->v[id] : mx;
                for (int q = 0; q < 4; q++)
                    l += lk[q]->v[id];
            }
        const double *r = rs->rows + i * rs->ncols; /* region, busy, stall, busiest, link_wavelets */
        ck_assert_double_eq(r[1], bsum);
        ck_assert_double_eq(r[2], stl);
        ck_assert_double_eq(r[3], mx);
        ck_assert_double_eq(r[4], l);
    }
    ck_assert_int_eq(ts_lower_wse_stage_stats(&rep, &res, t, &e), TS_OK);
    const ts_stat *ly = ts_stats_find(res.stats, "layers");
    ck_assert_ptr_nonnull(ly);
    size_t ecol = ly->ncols, bcol = 0, scol = ly->ncols;
    for (size_t k = 0; k < ly->ncols; k++) {
        bcol = strcmp(ly->cols[k], "bandwidth") ? bcol : k;
        ecol = strcmp(ly->cols[k], "energy") ? ecol : k;
        scol = strcmp(ly->cols[k], "sram_bytes") ? scol : k;
    }
    ck_assert_uint_lt(ecol, ly->ncols);
    ck_assert_uint_lt(scol, ly->ncols);
    /* the matmul stage's PEs read and write their SRAM: the layer has SRAM bytes */
    ck_assert_double_gt(ly->rows[mm * ly->ncols + scol], 0);
    double total = 0;
    for (size_t i = 0; i < ly->nrows; i++) {
        ck_assert_double_ge(ly->rows[i * ly->ncols + ecol], 0);
        ck_assert_double_gt(ly->rows[i * ly->ncols + bcol], 0);
        total += ly->rows[i * ly->ncols + ecol] * 1e-6;
    }
    ck_assert_double_gt(ly->rows[mm * ly->ncols + ecol], 0);
    ck_assert_double_le(total, res.energy_j);
    ts_energy_destroy(t);
    ts_results_free(&res);
    ts_free(rg);
    wt_free(m);
    ts_program_destroy(prog);
    ts_lower_wse_report_free(&rep);
    ts_graph_destroy(g);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_mlp_softmax)
{
    /* Gemm (transB, bias, alpha) -> Relu (fused) -> MatMul -> Add (a parameter) -> Softmax */
    ts_graph *g = ts_graph_create("mlp");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){5, 6});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 6});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){12});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int r = tensor(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 2, (int64_t[]){12, 10});
    int h2 = tensor(g, "h2", TS_TENSOR_ACTIVATION, -1, NULL);
    int bb = tensor(g, "bb", TS_TENSOR_WEIGHT, 2, (int64_t[]){5, 10});
    int s = tensor(g, "s", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    fill(g, bb);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.trans_b = true;
    at.alpha = 0.5;
    node(g, TS_OP_GEMM, "fc1", (int[]){x, w1, b1}, 3, h, &at);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, r, NULL);
    node(g, TS_OP_MATMUL, "fc2", (int[]){r, w2}, 2, h2, NULL);
    node(g, TS_OP_ADD, "add", (int[]){h2, bb}, 2, s, NULL);
    ts_graph_attrs_init(&at);
    at.axis = -1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){s}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 32, 8, &L);
    ck_assert_ptr_nonnull(stage_of(&L, "softmax", 0));
    ck_assert_ptr_null(stage_of(&L, "relu", 0)); /* fused into fc1 */
    for (int i = 0; i < 5; i++) {
        double hv[12], sv[10], mx = -1e30, sum = 0;
        for (int j = 0; j < 12; j++) {
            double t = val(b1, j);
            for (int k = 0; k < 6; k++)
                t += 0.5 * val(x, i * 6 + k) * val(w1, j * 6 + k);
            hv[j] = fmax(t, 0);
        }
        for (int j = 0; j < 10; j++) {
            double t = val(bb, i * 10 + j);
            for (int k = 0; k < 12; k++)
                t += hv[k] * val(w2, k * 10 + j);
            sv[j] = t;
            mx = fmax(mx, t);
        }
        for (int j = 0; j < 10; j++)
            sum += exp(sv[j] - mx);
        for (int j = 0; j < 10; j++)
            near(out_at(&L, y, (uint64_t)(i * 10 + j)), exp(sv[j] - mx) / sum, 1.0, "y", (uint64_t)(i * 10 + j));
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_softmax)
{
    /* rows of 33 with values from -150 to 150: exp underflows to 0 below e^-87 */
    ts_graph *g = ts_graph_create("sm");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){4, 33});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill_scaled(g, x, 150.0f);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = 1;
    node(g, TS_OP_SOFTMAX, "sm", (int[]){x}, 1, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 8, 4, &L);
    for (int i = 0; i < 4; i++) {
        double mx = -1e30, sum = 0;
        for (int j = 0; j < 33; j++)
            mx = fmax(mx, 150.0 * val(x, i * 33 + j));
        for (int j = 0; j < 33; j++)
            sum += exp((double)(150.0f * val(x, i * 33 + j)) - mx);
        for (int j = 0; j < 33; j++) {
            double want = exp((double)(150.0f * val(x, i * 33 + j)) - mx) / sum;
            float got = out_at(&L, y, (uint64_t)(i * 33 + j));
            ck_assert_msg(fabs(got - want) <= 1e-5 * want + 1e-30, "y[%d][%d]: got %.9g, want %.9g", i, j,
                          (double)got, want);
        }
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

/* C reference of a Conv (NCHW, group 1) in double; mag gets the sum of |products|. */
static void conv_ref(const float *in, int C, int H, int W, const float *wt, const float *bias, int M, int kh, int kw,
                     int s, int pad, int Ho, int Wo, double *out, double *mag)
{
    for (int m = 0; m < M; m++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                double t = bias ? bias[m] : 0, a = bias ? fabs(bias[m]) : 0;
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < kh; i++)
                        for (int j = 0; j < kw; j++) {
                            int y = oy * s + i - pad, x = ox * s + j - pad;
                            if (y < 0 || y >= H || x < 0 || x >= W)
                                continue;
                            double p = (double)in[(c * H + y) * W + x] * wt[((m * C + c) * kh + i) * kw + j];
                            t += p;
                            a += fabs(p);
                        }
                out[(m * Ho + oy) * Wo + ox] = t;
                mag[(m * Ho + oy) * Wo + ox] = a;
            }
}

START_TEST(test_conv)
{
    /* Conv 3->6 8x8 3x3 pad 1 + bias + Relu (fused), then Conv 6->5 3x3 stride 2 pad 1; _i 1 plans
     * for 200-byte PEs: the feeders split channels over 3 and 6 PEs, the input over 4 source PEs,
     * the output over 2 sink PEs */
    lower_sram = _i ? 200 : 0;
    ts_graph *g = ts_graph_create("conv");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 3, 8, 8});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){6, 3, 3, 3});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){6});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){5, 6, 3, 3});
    int h = tensor(g, "h", TS_TENSOR_ACTIVATION, -1, NULL);
    int r = tensor(g, "r", TS_TENSOR_ACTIVATION, -1, NULL);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_CONV, "c1", (int[]){x, w1, b1}, 3, h, &at);
    node(g, TS_OP_RELU, "relu", (int[]){h}, 1, r, NULL);
    at.strides[0] = at.strides[1] = 2;
    node(g, TS_OP_CONV, "c2", (int[]){r, w2}, 2, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 32, 8, &L);
    ck_assert_ptr_nonnull(stage_of(&L, "im2col", 1));
    if (_i) {
        ck_assert_uint_eq(stage_of(&L, "im2col", 0)->w, 3);
        ck_assert_uint_eq(stage_of(&L, "im2col", 1)->w, 6);
        ck_assert_uint_eq(stage_of(&L, "source", 0)->w, 4);
        ck_assert_uint_eq(stage_of(&L, "sink", 0)->w, 2);
    }
    ck_assert(L.rep.out_nhwc);
    float in[192], wa[162], ba[6], wb[270];
    for (int i = 0; i < 192; i++)
        in[i] = val(x, i);
    for (int i = 0; i < 162; i++)
        wa[i] = val(w1, i);
    for (int i = 0; i < 6; i++)
        ba[i] = val(b1, i);
    for (int i = 0; i < 270; i++)
        wb[i] = val(w2, i);
    double h1[384], m1[384], out[80], m2[80];
    conv_ref(in, 3, 8, 8, wa, ba, 6, 3, 3, 1, 1, 8, 8, h1, m1);
    float hr[384];
    for (int i = 0; i < 384; i++)
        hr[i] = (float)fmax(h1[i], 0);
    conv_ref(hr, 6, 8, 8, wb, NULL, 5, 3, 3, 2, 1, 4, 4, out, m2);
    for (int i = 0; i < 80; i++)
        near(out_at(&L, y, (uint64_t)i), out[i], m2[i] + 1e-5 * 100, "y", (uint64_t)i);
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_pool)
{
    /* MaxPool 3x3 stride 2 pad 1 then GlobalAveragePool, Flatten and a Gemm; _i 1 plans for
     * 300-byte PEs: the maxpool splits its 4 channels over 2 PEs */
    lower_sram = _i ? 300 : 0;
    ts_graph *g = ts_graph_create("pool");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 4, 9, 9});
    int p = tensor(g, "p", TS_TENSOR_ACTIVATION, -1, NULL);
    int a = tensor(g, "a", TS_TENSOR_ACTIVATION, -1, NULL);
    int f = tensor(g, "f", TS_TENSOR_ACTIVATION, -1, NULL);
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){4, 3});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    fill(g, x);
    fill(g, w);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.kernel[0] = at.kernel[1] = 3;
    at.strides[0] = at.strides[1] = 2;
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_MAXPOOL, "mp", (int[]){x}, 1, p, &at);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){p}, 1, a, NULL);
    ts_graph_attrs_init(&at);
    at.axis = 1;
    node(g, TS_OP_FLATTEN, "fl", (int[]){a}, 1, f, &at);
    node(g, TS_OP_GEMM, "fc", (int[]){f, w}, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    lowered L = {0};
    lower_and_run(g, 16, 4, &L);
    ck_assert_uint_eq(stage_of(&L, "maxpool", 0)->w, _i ? 2 : 1);
    double avg[4];
    for (int c = 0; c < 4; c++) {
        double s = 0;
        for (int oy = 0; oy < 5; oy++)
            for (int ox = 0; ox < 5; ox++) {
                double m = -1e30;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) {
                        int yy = oy * 2 + i - 1, xx = ox * 2 + j - 1;
                        if (yy >= 0 && yy < 9 && xx >= 0 && xx < 9)
                            m = fmax(m, val(x, (c * 9 + yy) * 9 + xx));
                    }
                s += m;
            }
        avg[c] = s / 25;
    }
    for (int j = 0; j < 3; j++) {
        double t = 0, mag = 0;
        for (int c = 0; c < 4; c++) {
            t += avg[c] * val(w, c * 3 + j);
            mag += fabs(avg[c] * val(w, c * 3 + j));
        }
        near(out_at(&L, y, (uint64_t)j), t, mag + 1, "y", (uint64_t)j);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

START_TEST(test_residual)
{
    /* a bottleneck block: 1x1 8->4, Relu, 3x3 pad 1 4->4 (stride 1 or 2), Relu, 1x1 4->8, plus
     * the input (_i 0) or a 1x1 projection of it with the same stride (_i 1), Relu; then
     * GlobalAveragePool, Flatten, Gemm. The skip path runs in the rows below with FIFO PEs. */
    const int st = _i ? 2 : 1, Ho = 6 / st;
    ts_graph *g = ts_graph_create("res");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 8, 6, 6});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 8, 1, 1});
    int b1 = tensor(g, "b1", TS_TENSOR_WEIGHT, 1, (int64_t[]){4});
    int w2 = tensor(g, "w2", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 4, 3, 3});
    int b2 = tensor(g, "b2", TS_TENSOR_WEIGHT, 1, (int64_t[]){4});
    int w3 = tensor(g, "w3", TS_TENSOR_WEIGHT, 4, (int64_t[]){8, 4, 1, 1});
    int wd = tensor(g, "wd", TS_TENSOR_WEIGHT, 4, (int64_t[]){8, 8, 1, 1});
    int wf = tensor(g, "wf", TS_TENSOR_WEIGHT, 2, (int64_t[]){8, 3});
    int t[10];
    for (int k = 0; k < 10; k++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", k);
        t[k] = tensor(g, nm, TS_TENSOR_ACTIVATION, -1, NULL);
    }
    fill(g, x);
    fill(g, w1);
    fill(g, b1);
    fill(g, w2);
    fill(g, b2);
    fill(g, w3);
    fill(g, wd);
    fill(g, wf);
    ts_graph_attrs at, a3;
    ts_graph_attrs_init(&at);
    node(g, TS_OP_CONV, "c1", (int[]){x, w1, b1}, 3, t[0], &at);
    node(g, TS_OP_RELU, "r1", (int[]){t[0]}, 1, t[1], NULL);
    ts_graph_attrs_init(&a3);
    a3.pads[0] = a3.pads[1] = a3.pads[2] = a3.pads[3] = 1;
    a3.strides[0] = a3.strides[1] = st;
    node(g, TS_OP_CONV, "c2", (int[]){t[1], w2, b2}, 3, t[2], &a3);
    node(g, TS_OP_RELU, "r2", (int[]){t[2]}, 1, t[3], NULL);
    node(g, TS_OP_CONV, "c3", (int[]){t[3], w3}, 2, t[4], &at);
    int skip = x;
    if (_i) {
        ts_graph_attrs ad;
        ts_graph_attrs_init(&ad);
        ad.strides[0] = ad.strides[1] = st;
        node(g, TS_OP_CONV, "ds", (int[]){x, wd}, 2, t[5], &ad);
        skip = t[5];
    }
    node(g, TS_OP_ADD, "add", (int[]){t[4], skip}, 2, t[6], NULL);
    node(g, TS_OP_RELU, "r3", (int[]){t[6]}, 1, t[7], NULL);
    node(g, TS_OP_GLOBALAVGPOOL, "gap", (int[]){t[7]}, 1, t[8], NULL);
    ts_graph_attrs_init(&at);
    at.axis = 1;
    node(g, TS_OP_FLATTEN, "fl", (int[]){t[8]}, 1, t[9], &at);
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_GEMM, "fc", (int[]){t[9], wf}, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    y = ts_graph_find(g, "y"); /* the unused projection weight of _i 0 is gone: ids moved */
    lowered L = {0};
    lower_and_run(g, 32, 16, &L);
    ck_assert_ptr_nonnull(stage_of(&L, "fifo", 0));
    ck_assert_ptr_nonnull(stage_of(&L, "join", 0));
    ck_assert(stage_of(&L, "fifo", 0)->skip);
    ck_assert_uint_eq(L.rep.colours_used, 16);
    /* C reference */
    float in[288], fw1[32], fb1[4], fw2[144], fb2[4], fw3[32], fwd[64];
    for (int i = 0; i < 288; i++)
        in[i] = val(x, i);
    for (int i = 0; i < 32; i++) {
        fw1[i] = val(w1, i);
        fw3[i] = val(w3, i);
    }
    for (int i = 0; i < 4; i++) {
        fb1[i] = val(b1, i);
        fb2[i] = val(b2, i);
    }
    for (int i = 0; i < 144; i++)
        fw2[i] = val(w2, i);
    for (int i = 0; i < 64; i++)
        fwd[i] = val(wd, i);
    double h1[144], m1[144], h2[144], m2[144], h3[288], m3[288], d[288], md[288];
    float r1[144], r2[144];
    conv_ref(in, 8, 6, 6, fw1, fb1, 4, 1, 1, 1, 0, 6, 6, h1, m1);
    for (int i = 0; i < 144; i++)
        r1[i] = (float)fmax(h1[i], 0);
    conv_ref(r1, 4, 6, 6, fw2, fb2, 4, 3, 3, st, 1, Ho, Ho, h2, m2);
    for (int i = 0; i < 4 * Ho * Ho; i++)
        r2[i] = (float)fmax(h2[i], 0);
    conv_ref(r2, 4, Ho, Ho, fw3, NULL, 8, 1, 1, 1, 0, Ho, Ho, h3, m3);
    if (_i)
        conv_ref(in, 8, 6, 6, fwd, NULL, 8, 1, 1, st, 0, Ho, Ho, d, md);
    else
        for (int i = 0; i < 288; i++) {
            d[i] = in[i];
            md[i] = fabs(in[i]);
        }
    double avg[8], mavg[8];
    for (int c = 0; c < 8; c++) {
        avg[c] = mavg[c] = 0;
        for (int i = 0; i < Ho * Ho; i++) {
            avg[c] += fmax(h3[c * Ho * Ho + i] + d[c * Ho * Ho + i], 0) / (Ho * Ho);
            mavg[c] += (m3[c * Ho * Ho + i] + md[c * Ho * Ho + i] + 10) / (Ho * Ho);
        }
    }
    for (int j = 0; j < 3; j++) {
        double s = 0, m = 0;
        for (int c = 0; c < 8; c++) {
            s += avg[c] * val(wf, c * 3 + j);
            m += mavg[c] * fabs(val(wf, c * 3 + j));
        }
        near(out_at(&L, y, (uint64_t)j), s, m, "y", (uint64_t)j);
    }
    lowered_free(&L);
    ts_graph_destroy(g);
}
END_TEST

static void expect_error(ts_graph *g, uint32_t w, uint32_t h, const char *const *parts)
{
    ts_err e;
    ts_err_init(&e);
    ts_wse_target p = params(w, h);
    ts_program *prog = NULL;
    ck_assert_int_eq(ts_lower_wse(g, &p, &prog, NULL, &e), TS_EINPUT);
    ck_assert_ptr_null(prog);
    for (; *parts; parts++)
        ck_assert_msg(strstr(e.msg, *parts), "'%s' not in: %s", *parts, e.msg);
}

START_TEST(test_errors)
{
    /* 4096 x 4096 f32 weights (64 MiB) on a 32 x 32 mesh of 48 KiB PEs (48 MiB) */
    ts_graph *g = ts_graph_create("big");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){1, 4096});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){4096, 4096});
    int y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_MATMUL, "fc", (int[]){x, w}, 2, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    /* over 32 rows a PE holds 128 inputs, so 48 KiB fits 94 outputs per PE (128 * 95 * 4 +
     * 128 * 4 + 95 * 8 + 8 = 49,908 > 49,152): 44 columns of 94 and one of 60, 45 in all; 30 are
     * left after the 1-PE source and the 1-PE sink */
    static const char *const short_of[] = {"MatMul 'fc'", "needs 45 columns of PEs for its weights 'w'", "30 are left",
                                           "15 columns short", NULL};
    expect_error(g, 32, 32, short_of);
    ts_graph_destroy(g);

    g = ts_graph_create("erf");
    x = tensor(g, "x", TS_TENSOR_INPUT, 2, (int64_t[]){2, 8});
    y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    node(g, TS_OP_ERF, "t", (int[]){x}, 1, y, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    expect_error(g, 32, 32,
                 (const char *const[]){"the WSE lowering does not support 1 operator of this model: Erf (node 't')",
                                       NULL});
    ts_graph_destroy(g);

    /* a 1 x 4 x 16384 image: three padded rows of one channel are 192 KiB, over a 48 KiB PE */
    g = ts_graph_create("img");
    x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 1, 4, 16384});
    w = tensor(g, "w", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 1, 3, 3});
    y = tensor(g, "y", TS_TENSOR_ACTIVATION, -1, NULL);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.pads[0] = at.pads[1] = at.pads[2] = at.pads[3] = 1;
    node(g, TS_OP_CONV, "conv1", (int[]){x, w}, 2, y, &at);
    ts_graph_mark_output(g, y);
    finalize(g);
    expect_error(g, 32, 32, (const char *const[]){"Conv 'conv1'", "pixels of input 'x' needs 192.0 KiB for one channel",
                                                   "144.0 KiB too much (147488 bytes)",
                                                   NULL});
    ts_graph_destroy(g);
}
END_TEST

/* Ten operators the lowering does not take, of six kinds and forms (a MaxPool with ceil_mode),
 * among a Conv and a Relu it takes: one error lists all ten, grouped, with the count and the
 * first node of each, before the graph's shape is looked at. */
START_TEST(test_unsupported_all)
{
    ts_graph *g = ts_graph_create("ten");
    int x = tensor(g, "x", TS_TENSOR_INPUT, 4, (int64_t[]){1, 4, 8, 8});
    int w1 = tensor(g, "w1", TS_TENSOR_WEIGHT, 4, (int64_t[]){4, 4, 3, 3});
    ts_graph_attrs c1, mp, ap, rm;
    ts_graph_attrs_init(&c1);
    c1.pads[0] = c1.pads[1] = c1.pads[2] = c1.pads[3] = 1;
    ts_graph_attrs_init(&mp);
    mp.kernel[0] = mp.kernel[1] = 1;
    ap = mp;
    mp.ceil_mode = true;
    x = chain(g, TS_OP_ERF, "t0", x, -1, NULL);
    x = chain(g, TS_OP_SQRT, "s0", x, -1, NULL);
    x = chain(g, TS_OP_AVGPOOL, "cg0", x, -1, &ap);
    x = chain(g, TS_OP_POW, "d0", x, x, NULL);
    x = chain(g, TS_OP_CONV, "conv", x, w1, &c1);
    x = chain(g, TS_OP_MAXPOOL, "mp0", x, -1, &mp);
    x = chain(g, TS_OP_ERF, "t1", x, -1, NULL);
    x = chain(g, TS_OP_RELU, "r0", x, -1, NULL);
    ts_graph_attrs_init(&rm);
    rm.naxes = 1;
    rm.axes[0] = 1;
    rm.keepdims = true;
    x = chain(g, TS_OP_REDUCEMEAN, "cd0", x, -1, &rm);
    x = chain(g, TS_OP_SQRT, "q0", x, -1, NULL);
    x = chain(g, TS_OP_SQRT, "s1", x, -1, NULL);
    x = chain(g, TS_OP_ERF, "t2", x, -1, NULL);
    ts_graph_mark_output(g, x);
    finalize(g);
    expect_error(g, 32, 32,
                 (const char *const[]){"the WSE lowering does not support 6 operators of this model (10 nodes): Erf "
                                       "(3 nodes, first 't0'), Sqrt (3 nodes, first 's0'), AveragePool (node "
                                       "'cg0'), Pow (node 'd0'), MaxPool with ceil_mode (node 'mp0'), ReduceMean "
                                       "(node 'cd0')",
                                       NULL});
    ts_graph_destroy(g);
}
END_TEST

/* ---- the machine facts from a config ---- */

/* Configs of the wafer-mesh family; "wse" under another schema and another arch, for the refusals. */
typedef struct other_cfg {
    uint64_t tiles;
} other_cfg;
static const ts_cfg_key other_keys[] = {
    {"tiles", TS_CFG_UINT, TS_UNIT_NONE, 1, 1e6, "4", "tiles", offsetof(other_cfg, tiles), NULL},
};
static const ts_schema other_wse = {"wse", "not the family's schema", other_keys, 1, sizeof(other_cfg), NULL};
static const ts_schema other_tsp = {"tsp", "another family", other_keys, 1, sizeof(other_cfg), NULL};

static const ts_schema *wse_schema(const char *arch)
{
    return !strcmp(arch, "wse") ? &ts_wse_schema : !strcmp(arch, "tsp") ? &other_tsp : NULL;
}

static const ts_schema *other_schema(const char *arch) { return !strcmp(arch, "wse") ? &other_wse : NULL; }

static ts_config *load_cfg(const char *name, ts_schema_lookup_fn schema, const char *const *sets, size_t nsets)
{
    ts_config_opts o = {.schema = schema, .builtin = ts_builtin_find, .sets = sets, .nsets = nsets};
    ts_err e;
    ts_err_init(&e);
    ts_config *c = NULL;
    ck_assert_msg(ts_config_load(&c, name, &o, &e) == TS_OK, "%s: %s", name, e.msg);
    return c;
}

static ts_config *load_text(const char *text, ts_schema_lookup_fn schema)
{
    ts_config_opts o = {.schema = schema};
    ts_err e;
    ts_err_init(&e);
    ts_config *c = NULL;
    ck_assert_msg(ts_config_load_string(&c, "t.yaml", text, strlen(text), &o, &e) == TS_OK, "%s", e.msg);
    return c;
}

/* The machine facts the lowering derives from config `name` (with n overrides `sets`). */
static void expect_target(const char *name, const char *const *sets, size_t n, uint32_t width, uint32_t height,
                          uint64_t sram_kib, uint32_t colours)
{
    ts_err e;
    ts_err_init(&e);
    ts_wse_target t;
    ts_config *c = load_cfg(name, wse_schema, sets, n);
    ck_assert_int_eq(ts_wse_target_from_config(c, &t, &e), TS_OK);
    ck_assert_uint_eq(t.width, width);
    ck_assert_uint_eq(t.height, height);
    ck_assert_uint_eq(t.sram_bytes, sram_kib * 1024);
    ck_assert_uint_eq(t.colours, colours);
    ts_config_destroy(c);
}

START_TEST(test_target)
{
    ts_err e;
    ts_err_init(&e);
    ts_wse_target t;
    /* wse_32x32: a 32 x 32 corner with the WSE-2's PEs (configs/wse_32x32.yaml, base wse2) */
    expect_target("wse_32x32", NULL, 0, 32, 32, 48, 24);
    /* wse2: 750 x 994 PEs of 48 KiB, 24 colours (configs/wse2.yaml) */
    expect_target("wse2", NULL, 0, 750, 994, 48, 24);
    /* the facts follow the typed config, overrides included */
    static const char *const sets[] = {"pe.sram=16 KiB", "fabric.colours=16", "mesh.height=8"};
    expect_target("wse_32x32", sets, 3, 32, 8, 16, 16);
    /* another family's config is refused, by the target and by the lowering's create alike */
    ts_config *c = load_text("arch: tsp\nname: chip\n", wse_schema);
    ck_assert_int_eq(ts_wse_target_from_config(c, &t, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "config 'chip' is for arch 'tsp', not 'wse'");
    ts_err_init(&e);
    void *state = NULL;
    ck_assert_int_eq(ts_wse_lowering.create(c, NULL, &state, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "config 'chip' is for arch 'tsp', not 'wse'");
    if (state)
        ts_wse_lowering.destroy(state);
    ts_config_destroy(c);
    /* "wse" read with another schema has none of the family's keys */
    ts_err_init(&e);
    c = load_text("arch: wse\nname: fake\n", other_schema);
    ck_assert_int_eq(ts_wse_target_from_config(c, &t, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "config 'fake' lacks a key the WSE lowering reads");
    ts_config_destroy(c);
}
END_TEST

int main(void)
{
    /* long programs on meshes of up to 32 x 32: lockstep on threads would cost seconds; the
     * quick set, and 2 threads as this test always ran */
    arch_modes_default = ARCH_MODES_QUICK | 1u << ARCH_THREADS2;
    arch_modes_address = ARCH_MODES_FAST; /* under ASan + UBSan: tests/arch/arch_modes.h */
    Suite *s = suite_create("lower_wse");
    TCase *tc = tcase_create("lower_wse");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_target);
    tcase_add_test(tc, test_matmul);
    tcase_add_test(tc, test_stage_energy);
    tcase_add_test(tc, test_mlp_softmax);
    tcase_add_test(tc, test_softmax);
    tcase_add_loop_test(tc, test_conv, 0, 2);
    tcase_add_loop_test(tc, test_pool, 0, 2);
    tcase_add_loop_test(tc, test_residual, 0, 2);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_unsupported_all);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
