/* tests/workloads/lower_ipu_harness.h — what the IPU lowering's two test files share: the lowered
 * program and its run, and reading outputs back where the lowering reports them. Included after
 * each file's own includes (static inline functions). */
#ifndef TS_TESTS_WORKLOADS_LOWER_IPU_HARNESS_H
#define TS_TESTS_WORKLOADS_LOWER_IPU_HARNESS_H

typedef struct lowered {
    ipu_run run;
    ts_lower_report rep;
    ts_program *prog;
} lowered;

static inline void lowered_free(lowered *L)
{
    ipu_run_free(&L->run);
    ts_lower_report_free(&L->rep);
    ts_program_destroy(L->prog);
}

static inline float out_at(lowered *L, const ts_graph *g, int tensor, uint64_t k)
{
    uint32_t tile;
    uint64_t addr;
    ck_assert_int_eq(ts_lower_ipu_locate(&L->rep, g, tensor, k, &tile, &addr), 0);
    return ipu_peekf(&L->run, tile, addr);
}

static inline float out_f16(lowered *L, const ts_graph *g, int tensor, uint64_t k)
{
    uint32_t tile;
    uint64_t addr;
    ck_assert_int_eq(ts_lower_ipu_locate(&L->rep, g, tensor, k, &tile, &addr), 0);
    uint32_t w = ipu_peek32(&L->run, tile, addr & ~(uint64_t)3);
    return ts_f16_to_f32((uint16_t)(addr & 2 ? w >> 16 : w & 0xffff));
}

#endif
