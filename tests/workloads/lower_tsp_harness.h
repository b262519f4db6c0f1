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

#endif
