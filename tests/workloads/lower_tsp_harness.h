/* tests/workloads/lower_tsp_harness.h — what the TSP lowering's two test files share: the lowered
 * program and its run, and reading outputs back where the lowering reports them. Included after
 * each file's own includes (static inline functions). */
#ifndef TS_TESTS_WORKLOADS_LOWER_TSP_HARNESS_H
#define TS_TESTS_WORKLOADS_LOWER_TSP_HARNESS_H

typedef struct lowered {
    tsp_run run;
    ts_lower_tsp_report rep;
    ts_program *prog;
} lowered;

/* The lowering's parameters for the stock tsp_v1. */
static inline ts_lower_tsp_params v1_params(void)
{
    ts_err e;
    ts_err_init(&e);
    void *cfg = tsp_test_config("tsp_v1", NULL);
    ts_lower_tsp_params p;
    ck_assert_msg(ts_lower_tsp_params_from_config(cfg, &p, &e) == TS_OK, "%s", e.msg);
    ts_config_destroy(cfg);
    ts_err_free(&e);
    return p;
}

static inline void lowered_free(lowered *l)
{
    tsp_run_free(&l->run);
    ts_lower_tsp_report_free(&l->rep);
    ts_program_destroy(l->prog);
}

static inline int8_t got(const lowered *l, int tensor, uint32_t pixel, uint32_t channel)
{
    int slice;
    uint64_t addr;
    ck_assert_int_eq(ts_lower_tsp_locate(&l->rep, tensor, pixel, channel, 320, &slice, &addr), 0);
    return (int8_t)tsp_peek(&l->run, slice, addr);
}

/* Tensor y of M channels by P pixels against want (want[n P + p]), the first 5 differences
 * printed: how many differ. *pos counts the wanted values above 0, *nz those not 0. */
static inline int diff_conv(const lowered *l, int y, const int8_t *want, int M, int P, int *pos, int *nz)
{
    int bad = 0;
    *pos = *nz = 0;
    for (int n = 0; n < M; n++)
        for (int p = 0; p < P; p++) {
            int8_t w = want[(size_t)n * P + p], have = got(l, y, (uint32_t)p, (uint32_t)n);
            *pos += w > 0;
            *nz += w != 0;
            if (w != have && bad++ < 5)
                fprintf(stderr, "y[%d][%d] = %d, want %d\n", n, p, have, w);
        }
    return bad;
}

#endif
