/* tests/workloads/lower_wse_harness.h — what the wafer-mesh lowering's tests share: lower a graph
 * for a w x h mesh, run it in every mode of tests/arch/arch_modes.h (the same report and output
 * bits in each), read outputs back where the lowering reports them, and compare with a tolerance.
 * Included by one test file each (static functions). */
#ifndef TS_TESTS_WORKLOADS_LOWER_WSE_HARNESS_H
#define TS_TESTS_WORKLOADS_LOWER_WSE_HARNESS_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_target.h"
#include "core/config.h"
#include "core/program.h"
#include "tests/arch/wse/wse_test.h"
#include "workloads/graph.h"
#include "workloads/wse/lower_wse.h"

static inline ts_wse_target params(uint32_t w, uint32_t h)
{
    ts_wse_cfg c = wt_cfg(w, h);
    return (ts_wse_target){.width = w, .height = h, .sram_bytes = c.sram_bytes, .colours = (uint32_t)c.colours};
}

typedef struct lowered {
    ts_model *m;
    ts_lower_wse_report rep;
    ts_program *prog;
    uint64_t cycles;
} lowered;

static inline float out_at(const lowered *L, int tensor, uint64_t k)
{
    uint32_t x, y;
    uint64_t addr;
    ck_assert_int_eq(ts_lower_wse_locate(&L->rep, tensor, k, &x, &y, &addr), 0);
    float f;
    ck_assert_int_eq(ts_wse_read_sram(L->m, x, y, addr, &f, 4), 0);
    return f;
}

/* What a run must give in every mode besides its report: the output tensor, element by element. */
typedef struct outputs {
    const ts_graph *g;
    const ts_lower_wse_report *rep;
} outputs;

static inline void output_bits(ts_model *m, void *ud, ts_buf *out)
{
    const outputs *o = ud;
    int tensor = o->rep->out_tensor;
    int64_t n = ts_graph_tensor_elems(ts_graph_get_tensor(o->g, tensor));
    ts_buf_puts(out, "output");
    for (int64_t k = 0; k < n; k++) {
        uint32_t x, y, bits;
        uint64_t addr;
        ck_assert_int_eq(ts_lower_wse_locate(o->rep, tensor, (uint64_t)k, &x, &y, &addr), 0);
        ck_assert_int_eq(ts_wse_read_sram(m, x, y, addr, &bits, 4), 0);
        ts_buf_printf(out, "%s%08x", k % 16 ? " " : "\n", bits);
    }
    ts_buf_puts(out, "\n");
}

/* Lower on a w x h mesh and run in every mode (tests/arch/arch_modes.h): the same report and the
 * same output, bit for bit, in each; L keeps the fast run's model. */
static uint64_t lower_sram; /* when not 0, the lowering plans for PEs of this many bytes */

static inline void lower_and_run(const ts_graph *g, uint32_t w, uint32_t h, lowered *L)
{
    ts_err e;
    ts_err_init(&e);
    ts_wse_target p = params(w, h);
    if (lower_sram)
        p.sram_bytes = lower_sram;
    ts_status rc = ts_lower_wse(g, &p, &L->prog, &L->rep, &e);
    ck_assert_msg(rc == TS_OK, "lower: %s", e.msg);
    if (getenv("LWSE_VERBOSE")) {
        fprintf(stderr, "%s: %u PEs\n", ts_graph_name(g), L->rep.pes_used);
        for (size_t i = 0; i < L->rep.nstages; i++) {
            const ts_lower_wse_stage *s = &L->rep.stages[i];
            fprintf(stderr, "  %-8s x %u y %u w %u h %u kr %u kc %u mem %llu colours %u->%u\n", s->what, s->x, s->y,
                    s->w, s->h, s->kr, s->kc, (unsigned long long)s->mem_bytes, s->colour_in, s->colour_out);
        }
    }
    ts_config *cfg = wt_config(w, h);
    outputs outs = {g, &L->rep};
    arch_opts o = {.run = {.max_cycles = 50000000ull}, .state = output_bits, .ud = &outs};
    arch_run r;
    arch_modes_check(&ts_wse_family, cfg, L->prog, &o, &r);
    ck_assert_msg(r.rc == TS_OK, "run: %s", r.errline);
    L->m = r.m;
    r.m = NULL;
    arch_run_free(&r);
    ts_config_destroy(cfg);
    ts_wse_counts cn;
    ts_wse_counts_get(L->m, &cn);
    L->cycles = cn.cycles;
}

static inline void lowered_free(lowered *L)
{
    wt_free(L->m);
    ts_lower_wse_report_free(&L->rep);
    ts_program_destroy(L->prog);
}

/* |got - want| <= 1e-5 x (sum of |terms| that made want), or 1e-30 */
static inline void near(float got, double want, double scale, const char *what, uint64_t k)
{
    double tol = 1e-5 * (scale > 1e-25 ? scale : 1e-25);
    ck_assert_msg(fabs((double)got - want) <= tol, "%s[%llu]: got %.9g, want %.9g", what, (unsigned long long)k,
                  (double)got, want);
}

static inline const ts_lower_wse_stage *stage_of(const lowered *L, const char *what, size_t nth)
{
    for (size_t i = 0; i < L->rep.nstages; i++)
        if (!strcmp(L->rep.stages[i].what, what) && !nth--)
            return &L->rep.stages[i];
    return NULL;
}

#endif
