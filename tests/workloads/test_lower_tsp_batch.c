/* tests/workloads/test_lower_tsp_batch.c — a batch whose unrolled schedule does not fit, lowered as the
 * program of one sample run once per sample (workloads/tsp/unbatch.c, docs/lowering-tsp.md, *Batches
 * and groups*; the runs: docs/tsp.md, *A batch run once per sample*).
 *
 * Each sample's outputs, read back from what the host copied after its run, equal the batch-1 C
 * reference bit for bit; a graph whose operators mix the samples is refused naming the operator; the
 * batch axis of a seq-first graph (torch's nn.TransformerEncoder without batch_first) is found on
 * axis 1 through a Reshape that merges it with the heads. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/tsp/tsp.h"
#include "core/alloc.h"
#include "core/program.h"
#include "tests/arch/arch_modes.h"
#include "tests/arch/tsp/tsp_test.h"
#include "tests/workloads/graph_build.h"
#include "workloads/graph.h"
#include "workloads/lower/fill.h"
#include "workloads/lower/lower.h"
#include "workloads/tsp/lower_tsp.h"
#include "workloads/tsp/unbatch.h"
#include "tests/workloads/lower_tsp_harness.h"

static int8_t requant(int32_t acc, float scale, bool relu)
{
    double r = nearbyint((double)((float)acc * scale));
    int8_t v = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
    return relu && v < 0 ? 0 : v;
}

/* Lowered on tsp_v1 with the overrides sets and run, with no hazard of any kind. */
static void lower_and_run_on(const ts_graph *g, const char *const *sets, bool one, lowered *out)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", sets);
    ts_lower_tsp_params p;
    ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_OK);
    p.one_sample = one;
    ts_status rc = ts_lower_tsp(g, &p, &out->prog, &out->rep, &e);
    ts_config_destroy(cfg);
    ck_assert_msg(rc == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    tsp_test_run2("tsp_v1", sets, out->prog, &out->run);
    static const char *const kinds[] = {"stream_collision", "no_value", "bank_conflict", "queue_underrun", "resource"};
    for (int k = 0; k < 5; k++) {
        char name[64];
        snprintf(name, sizeof name, "hazards.%s", kinds[k]);
        ck_assert_double_eq(tsp_stat(&out->run, name), 0);
    }
}

/* lt_batch_find of g, which must not fail: the batch, or NULL with why. */
static lt_batch *batch_of(const ts_graph *g, char *why, size_t cap)
{
    lt_batch *b = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(lt_batch_find(g, &b, why, cap, &e), TS_OK);
    ts_err_free(&e);
    return b;
}

/* Output `tensor` of the batch as the lowering reads it back (read_output through the family). */
static float *read_back(const lowered *l, const ts_graph *g, int tensor)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
    float *v = ts_calloc((size_t)ts_graph_tensor_elems(t), sizeof *v);
    ck_assert_ptr_nonnull(v);
    ts_lower_mem mem = {&ts_tsp_family, l->run.m};
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(ts_lower_tsp_read_output(&l->rep, 320, g, tensor, &mem, v, &e) == TS_OK, "%s", e.msg);
    return v;
}

/* N = 3 images of 3 x H x W: a 3x3 Conv (the host's im2col) and Relu, GlobalAveragePool, Flatten and
 * a Gemm; *x, *w0, *fw, *r0, *y its tensors. */
static ts_graph *conv_batch(int H, int W, int *x, int *w0, int *fw, int *r0, int *y)
{
    const int N = 3, C = 3, M = 8, F = 5;
    ts_graph *g = ts_graph_create("batch_runs");
    *x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_F32, 4, (int64_t[]){N, C, H, W});
    *w0 = tensor_dt(g, "w0", TS_TENSOR_WEIGHT, TS_DT_I8, 4, (int64_t[]){M, C, 3, 3});
    *fw = tensor_dt(g, "fw", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){F, M});
    ts_graph_attrs a0, fl, fc;
    ts_graph_attrs_init(&a0);
    a0.pads[0] = a0.pads[1] = a0.pads[2] = a0.pads[3] = 1;
    ts_graph_attrs_init(&fl);
    fl.axis = 1;
    ts_graph_attrs_init(&fc);
    fc.trans_b = true;
    int h0 = chain(g, TS_OP_CONV, "c0", *x, *w0, &a0);
    *r0 = chain(g, TS_OP_RELU, "r0", h0, -1, NULL);
    int gp = chain(g, TS_OP_GLOBALAVGPOOL, "gap", *r0, -1, NULL);
    int f = chain(g, TS_OP_FLATTEN, "fl", gp, -1, &fl);
    *y = chain(g, TS_OP_GEMM, "fc", f, *fw, &fc);
    ts_graph_mark_output(g, *y);
    ts_graph_mark_output(g, *r0);
    finalize(g);
    return g;
}

/* conv_batch of 4 x 4 images as one image's program run three times: every image's Relu output and
 * logits, read back from what the host copied after its run, equal the reference of that image
 * alone (its input: elements n C H W .. of the batch's). */
START_TEST(test_batch_runs)
{
    const int N = 3, C = 3, H = 4, W = 4, M = 8, F = 5, P = H * W;
    int x, w0, fw, r0, y;
    ts_graph *g = conv_batch(H, W, &x, &w0, &fw, &r0, &y);
    lowered l;
    lower_and_run_on(g, NULL, true, &l);
    ck_assert_uint_eq(l.rep.runs, (unsigned)N);
    ck_assert_double_eq(tsp_stat(&l.run, "batch.runs"), N);
    ck_assert_double_gt(tsp_stat(&l.run, "batch.host_bytes"), 0);
    ck_assert_double_gt(tsp_stat(&l.run, "batch.host_cycles"), 0);
    /* the host's cycles and the runs' make the whole */
    ck_assert_double_eq(tsp_stat(&l.run, "batch.host_cycles") + N * tsp_stat(&l.run, "batch.first_run_cycles"),
                        (double)l.run.r.cycles);
    float *rv = read_back(&l, g, r0), *yv = read_back(&l, g, y);
    int bad = 0;
    float s = ts_lower_tsp_scale((uint64_t)C * 9), sf = ts_lower_tsp_scale(M);
    for (int n = 0; n < N; n++) {
        int8_t gv[8];
        for (int m = 0; m < M; m++) {
            int32_t sum = 0;
            for (int p = 0; p < P; p++) {
                int32_t acc = 0;
                for (int c = 0; c < C; c++)
                    for (int k = 0; k < 9; k++) {
                        int iy = p / W - 1 + k / 3, ix = p % W - 1 + k % 3;
                        if (iy >= 0 && ix >= 0 && iy < H && ix < W)
                            acc += ts_fill_i8(x, (uint64_t)(((n * C + c) * H + iy) * W + ix)) *
                                   ts_fill_i8(w0, (uint64_t)(m * C + c) * 9 + (uint64_t)k);
                    }
                int8_t r = requant(acc, s, true);
                sum += r;
                float have = rv[((size_t)n * M + m) * P + p];
                if (have != r && bad++ < 5)
                    fprintf(stderr, "r0[%d][%d][%d] = %g, want %d\n", n, m, p, have, r);
            }
            gv[m] = requant(sum, 1.0f / (float)P, false);
        }
        for (int o = 0; o < F; o++) {
            int32_t acc = 0;
            for (int m = 0; m < M; m++)
                acc += gv[m] * ts_fill_i8(fw, (uint64_t)o * M + (uint64_t)m);
            float have = yv[n * F + o];
            if (have != requant(acc, sf, false) && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %g, want %d\n", n, o, have, requant(acc, sf, false));
        }
    }
    ck_assert_int_eq(bad, 0);
    ts_free(rv);
    ts_free(yv);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* test_batch_runs' batch (conv_batch of 4 x 4 images, one image's program run three times) lowered
 * and run into *l; the graph. */
static ts_graph *batch_lowered(lowered *l)
{
    int x, w0, fw, r0, y;
    ts_graph *g = conv_batch(4, 4, &x, &w0, &fw, &r0, &y);
    lower_and_run_on(g, NULL, true, l);
    return g;
}

/* prog run again on tsp_v1 with the options o (NULL: the defaults) into *a. */
static void run_again(const ts_program *prog, const arch_opts *o, arch_run *a)
{
    void *cfg = tsp_test_config("tsp_v1", NULL);
    arch_run_mode(&ts_tsp_family, cfg, prog, o, false, 1, a);
    ts_config_destroy(cfg);
}

/* The host's transfers between the runs are progress: with a hang bound of half the chip's wait for
 * them, the batch of test_batch_runs still runs to its end, in the same cycles. */
START_TEST(test_batch_wait_no_hang)
{
    lowered l;
    ts_graph *g = batch_lowered(&l);
    uint64_t wait = (uint64_t)tsp_stat(&l.run, "batch.host_cycles") / 2; /* two waits between three runs */
    ck_assert_uint_gt(wait, 2);
    arch_opts o = {.run = {.hang_cycles = wait / 2, .max_cycles = 400000000ull}};
    arch_run a;
    run_again(l.prog, &o, &a);
    ck_assert_msg(a.rc == TS_OK, "%s: %s", a.stage ? a.stage : "", a.errline);
    ck_assert_uint_eq(a.r.cycles, l.run.r.cycles);
    arch_run_free(&a);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* A program whose runs would keep more than a gigabyte of read-back outputs (test_batch_runs' with a
 * million runs) is refused at load with the bytes named, not run. */
START_TEST(test_batch_copies_refused)
{
    lowered l;
    ts_graph *g = batch_lowered(&l);
    bool set = false;
    for (size_t i = 0; i < l.prog->nsyms; i++)
        if (!strcmp(l.prog->syms[i].name, TS_TSP_SYM_RUNS)) {
            l.prog->syms[i].value = 1000000;
            set = true;
        }
    ck_assert(set);
    arch_run a;
    run_again(l.prog, NULL, &a);
    ck_assert_int_eq(a.rc, TS_EINPUT);
    ck_assert_str_eq(a.stage, "load");
    ck_assert_msg(strstr(a.errline, "after each of its 1000000 runs") && strstr(a.errline, "bytes of copies"), "%s",
                  a.errline);
    arch_run_free(&a);
    lowered_free(&l);
    ts_graph_destroy(g);
}
END_TEST

/* conv_batch of 16 x 8 images on a MEM of 16 words a slice: the unrolled batch does not fit, so the
 * lowering takes one image's program with three runs by itself (compiled, not run). */
START_TEST(test_batch_fallback)
{
    int x, w0, fw, r0, y;
    ts_graph *g = conv_batch(16, 8, &x, &w0, &fw, &r0, &y);
    static const char *const small[] = {"mem.slice_bytes=5120", NULL};
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", small);
    ts_lower_tsp_params p;
    ck_assert_int_eq(ts_lower_tsp_params_from_config(cfg, &p, &e), TS_OK);
    ts_config_destroy(cfg);
    lowered l = {0};
    ck_assert_msg(ts_lower_tsp(g, &p, &l.prog, &l.rep, &e) == TS_OK, "%s", e.msg);
    ck_assert_uint_eq(l.rep.runs, 3);
    bool runs = false, in = false, out = false;
    for (size_t i = 0; i < l.prog->nsyms; i++)
        runs |= !strcmp(l.prog->syms[i].name, TS_TSP_SYM_RUNS) && l.prog->syms[i].value == 3;
    for (size_t i = 0; i < l.prog->nsegs; i++) {
        in |= l.prog->segs[i].kind == TS_TSP_SEG_INPUT;
        out |= l.prog->segs[i].kind == TS_TSP_SEG_OUTPUT;
    }
    ck_assert(runs && in && out);
    /* the disassembler writes the runs and the host's segments, and the text assembles back to the
     * same program */
    ts_buf dis = TS_BUF_INIT, a = TS_BUF_INIT, b = TS_BUF_INIT;
    ck_assert_int_eq(ts_disasm(l.prog, ts_tsp_family.isa, &dis, &e), TS_OK);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&dis), "tsp.runs"));
    ts_program *q = NULL;
    ck_assert_msg(ts_asm(&q, "batch.s", ts_buf_str(&dis), dis.len, ts_tsp_family.isa, &e) == TS_OK, "%s", e.msg);
    ck_assert_int_eq(ts_program_encode(l.prog, &a, &e), TS_OK);
    ck_assert_int_eq(ts_program_encode(q, &b, &e), TS_OK);
    ck_assert(a.len == b.len && !memcmp(a.data, b.data, a.len));
    ts_buf_free(&dis);
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_program_destroy(q);
    ts_lower_tsp_report_free(&l.rep);
    ts_program_destroy(l.prog);
    ts_graph_destroy(g);
}
END_TEST

/* A MatMul that sums over the samples ([N, 16] transposed, times [N, 8]) mixes them: refused with the
 * operator named. */
START_TEST(test_batch_mixed)
{
    ts_graph *g = ts_graph_create("mixed");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_I8, 2, (int64_t[]){4, 16});
    int w = tensor_dt(g, "w", TS_TENSOR_WEIGHT, TS_DT_I8, 2, (int64_t[]){4, 8});
    ts_graph_attrs t;
    ts_graph_attrs_init(&t);
    t.nperm = 2;
    t.perm[0] = 1;
    t.perm[1] = 0;
    int xt = chain(g, TS_OP_TRANSPOSE, "xt", x, -1, &t);
    int y = chain(g, TS_OP_MATMUL, "mix", xt, w, NULL);
    ts_graph_mark_output(g, y);
    finalize(g);
    char why[256];
    lt_batch *b = batch_of(g, why, sizeof why);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(why, "MatMul 'mix'") && strstr(why, "samples"), "%s", why);
    ts_graph_destroy(g);
}
END_TEST

/* Seq-first attention's layout ([S, N, D], the batch on axis 1) and torch's Reshape to [S, N h, d]
 * with the batch in its shape: the batch is found on axis 1, the Reshape's shape becomes [S, h, d]
 * and the sample's graph keeps the ids and names; the join's [S N, D] rows hold the samples inside
 * the sequence (a block of one row). */
START_TEST(test_batch_seq_first)
{
    const int S = 6, N = 4, D = 32, h = 2;
    ts_graph *g = ts_graph_create("seq_first");
    int x = tensor_dt(g, "x", TS_TENSOR_INPUT, TS_DT_F32, 3, (int64_t[]){S, N, D});
    int w = tensor(g, "w", TS_TENSOR_WEIGHT, 2, (int64_t[]){D, D});
    int q = chain(g, TS_OP_MATMUL, "q", x, w, NULL);
    ts_graph_attrs rs;
    ts_graph_attrs_init(&rs);
    rs.nshape = 3;
    memcpy(rs.shape, (int64_t[]){S, N * h, D / h}, sizeof(int64_t[3]));
    int r = chain(g, TS_OP_RESHAPE, "heads", q, -1, &rs);
    int tr = transpose3(g, "t", r, 1, 0, 2), kt = transpose3(g, "kt", tr, 0, 2, 1);
    ts_graph_attrs sm;
    ts_graph_attrs_init(&sm);
    sm.axis = -1;
    int p = chain(g, TS_OP_SOFTMAX, "p", kt, -1, &sm); /* over the sequence: axis 0 is no batch */
    ts_graph_mark_output(g, p);
    /* the heads' join's form: [S N, D] rows, the samples inside the sequence, and back to [S, N, D] */
    ts_graph_attrs fl = rs, un = rs;
    fl.nshape = 2;
    memcpy(fl.shape, (int64_t[]){S * N, D}, sizeof(int64_t[2]));
    memcpy(un.shape, (int64_t[]){S, N, D}, sizeof(int64_t[3]));
    int rows = chain(g, TS_OP_RESHAPE, "rows", q, -1, &fl);
    int z = chain(g, TS_OP_RELU, "z", rows, -1, NULL);
    int back = chain(g, TS_OP_RESHAPE, "back", z, -1, &un);
    ts_graph_mark_output(g, back);
    finalize(g);
    char why[256];
    lt_batch *b = batch_of(g, why, sizeof why);
    ck_assert_msg(b != NULL, "%s", why);
    ck_assert_int_eq(lt_batch_n(b), N);
    ck_assert_int_eq(lt_batch_axis(b, x), 1);
    ck_assert_int_eq(lt_batch_axis(b, r), 1);
    ck_assert_int_eq(lt_batch_axis(b, tr), 0);
    ck_assert_int_eq(lt_batch_block(b, r), h); /* [N h]: each sample's h heads together */
    ck_assert_int_eq(lt_batch_axis(b, rows), 0);
    ck_assert_int_eq(lt_batch_block(b, rows), 1); /* [S N]: one row of each sample in turn */
    ck_assert_int_eq(lt_batch_axis(b, back), 1);
    ts_graph *one = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_msg(lt_batch_sample(b, 2, false, &one, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    const ts_graph_tensor *t1 = ts_graph_get_tensor(one, tr), *x1 = ts_graph_get_tensor(one, x);
    ck_assert_int_eq(t1->dims[0], h);
    ck_assert_int_eq(t1->dims[1], S);
    ck_assert_int_eq(x1->dims[1], 1);
    ck_assert_int_eq(ts_graph_get_tensor(one, rows)->dims[0], S);
    const int8_t *xv = x1->data; /* sample 2's values: element (s, 2, d) of the batch */
    ck_assert_ptr_nonnull(xv);
    ck_assert_int_eq(xv[D + 3], ts_fill_i8(x, (uint64_t)(1 * N + 2) * D + 3));
    ts_graph_destroy(one);
    lt_batch_free(b);
    ts_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower_tsp_batch");
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_batch_runs);
    tcase_add_test(tc, test_batch_wait_no_hang);
    tcase_add_test(tc, test_batch_copies_refused);
    tcase_add_test(tc, test_batch_fallback);
    tcase_add_test(tc, test_batch_mixed);
    tcase_add_test(tc, test_batch_seq_first);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    arch_modes_default = ARCH_MODES_QUICK; /* the whole tsp_v1, as the other lowering tests */
    arch_modes_address = ARCH_MODES_FAST;
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
