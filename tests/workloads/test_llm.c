/* tests/workloads/test_llm.c — decoder language models (the built-in `gpt` workload, docs/llm.md)
 * lowered and run, their logits against the double-precision interpreter of the same graph
 * (graph_ref.h) with the same inputs and weights. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "core/alloc.h"
#include "core/half.h"
#include "tests/arch/ipu/ipu_test.h"
#include "tests/workloads/graph_ref.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/workload.h"
#include "tests/workloads/lower_ipu_harness.h"

/* Two reduced decoders, each in both phases: GPT-2's form (LayerNorm, tanh Gelu, biases, one key
 * head a query head) and Llama's (RMSNorm, SwiGLU, rotary positions, no biases, two query heads
 * a key head). */
static const char *const models[] = {
    "gpt:layers=2,hidden=32,heads=2,ffn=64,kv_heads=2,vocab=40,seq=8,dtype=f32",
    "gpt:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,vocab=40,seq=8,dtype=f32,norm=rmsnorm,act=swiglu,bias=0,"
    "rope=1,rope_theta=500000",
};

static ts_graph *build(const char *spec, const char *phase)
{
    char full[300];
    snprintf(full, sizeof full, "%s,phase=%s", spec, phase);
    ts_err e;
    ts_err_init(&e);
    ts_graph *g = NULL;
    ck_assert_msg(ts_wl_builtin(full, &g, &e) == TS_OK, "%s: %s", full, e.msg);
    return g;
}

/* ipu_small16 with 256 KiB tiles: the rotary tables and the grouped heads of Llama's form do not
 * fit 64 KiB at once */
static const char *const big_tiles[] = {"tile.sram=256 KiB", NULL};

/* g lowered for ipu_small16 (big_tiles) under the default planner and run. */
static void lower_run(const ts_graph *g, lowered *L)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = ipu_test_config("ipu_small16", big_tiles);
    ts_lower_ipu_params p;
    ck_assert_int_eq(ts_lower_ipu_params_from_config(cfg, &p, &e), TS_OK);
    ts_status rc = ts_lower_ipu(g, &p, &L->prog, &L->rep, &e);
    ts_config_destroy(cfg);
    ck_assert_msg(rc == TS_OK, "lower: %s", e.msg);
    ipu_test_run_program("ipu_small16", big_tiles, L->prog, false, 1, &L->run);
    ck_assert_msg(L->run.rc == TS_OK, "run: tile %lld cycle %lld: %s", (long long)L->run.err.tile,
                  (long long)L->run.err.cycle, L->run.err.msg);
}

/* The decoder `spec` in `phase` lowered and run (lower_run), its logits against the double
 * interpreter's within tol (1 + |y|), read as the lowering holds them (f32 words or f16 halves). */
static void check_logits(const char *spec, const char *phase, double tol)
{
    ts_graph *g = build(spec, phase);
    lowered L = {0};
    lower_run(g, &L);
    gref r;
    gref_run(g, &r);
    int y = ts_graph_find(g, "logits");
    const ts_graph_tensor *t = ts_graph_get_tensor(g, y);
    uint32_t es = 0;
    for (size_t i = 0; i < L.rep.nplaces; i++)
        if (L.rep.places[i].tensor == y)
            es = L.rep.places[i].es;
    ck_assert(es == 2 || es == 4);
    for (int64_t k = 0; k < ts_graph_tensor_elems(t); k++) {
        double got = es == 2 ? out_f16(&L, g, y, (uint64_t)k) : out_at(&L, g, y, (uint64_t)k), want = r.v[y][k];
        ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)), "%s %s logits[%lld]: got %.9g, want %.9g", spec,
                      phase, (long long)k, got, want);
    }
    gref_free(&r);
    lowered_free(&L);
    ts_graph_destroy(g);
}

START_TEST(test_ipu_logits)
{
    /* on ipu_small16 (256 KiB tiles) under the default planner; f32 throughout. The lowering's exp, 1/x and
     * 1/sqrt are f32 to about 1e-7 relative and its sums are f32 (K <= 64 terms), against double
     * sums: after two layers the logits (sums of 32 products of order 1) agree within
     * 2e-5 (1 + |y|), a few hundred f32 roundings (at most 3.2e-6 seen, Llama's prefill) */
    check_logits(models[_i / 2], _i % 2 ? "decode" : "prefill", 2e-5);
}
END_TEST

START_TEST(test_ipu_logits_f16)
{
    /* GPT-2's reduced form in f16 (its default dtype) on ipu_small16, both phases: the operators
     * between the MatMuls read f32 words, the f16 MatMul routine of more than one row reads halves
     * (prefill: the lowering converts between the two), the one-row routines round their inputs to
     * f16. Against the double interpreter the logits carry f16 roundings of every MatMul's inputs
     * and outputs (2^-11 relative each): within 1e-2 (1 + |y|) (at most 1.6e-3 seen in prefill, 2.6e-3
     * in decode); a lane swapped or a value read the wrong way is off by the order of the values */
    char spec[200];
    snprintf(spec, sizeof spec, "%s", models[0]);
    char *d = strstr(spec, "dtype=f32");
    ck_assert_ptr_nonnull(d);
    memcpy(d, "dtype=f16", 9);
    check_logits(spec, _i ? "decode" : "prefill", 1e-2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("llm");
    TCase *tc = tcase_create("ipu");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_ipu_logits, 0, 4);
    tcase_add_loop_test(tc, test_ipu_logits_f16, 0, 2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
