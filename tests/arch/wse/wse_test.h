/* tests/arch/wse/wse_test.h — helpers shared by the wafer-mesh tests: assemble, run, report. */
#ifndef TS_TESTS_WSE_TEST_H
#define TS_TESTS_WSE_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/wse/wse.h"
#include "core/buf.h"

/* Assemble src and run it on cfg to completion (or max_cycles); the model is returned for
 * inspection (destroy with wt_free). On failure returns NULL and fills st and err. */
ts_model *wt_run(const ts_wse_cfg *cfg, const char *src, bool lockstep, int threads, uint64_t max_cycles,
                 ts_status *st, ts_err *err);
void wt_free(ts_model *m);
/* A default config of w x h PEs. */
ts_wse_cfg wt_cfg(uint32_t w, uint32_t h);
/* Run through the kernel (ts_sim_run) with a YAML config text and return the text and JSON report
 * in out (or the error message). Returns the status. */
ts_status wt_report(const char *yaml, const char *src, bool lockstep, int threads, ts_buf *out);

/* Program builders: port masks and X-then-Y routes for one colour from (sx, sy) to (dx, dy). */
enum { WT_N = 1, WT_S = 2, WT_E = 4, WT_W = 8, WT_R = 16 };
/* Append to per-PE route text arrays (one ts_buf per PE, w*h of them). */
void wt_route_xy(ts_buf *pe, uint32_t w, uint32_t colour, uint32_t sx, uint32_t sy, uint32_t dx, uint32_t dy);
/* Join per-PE text (route lines first, then code) into one program. */
void wt_join(ts_buf *out, ts_buf *routes, ts_buf *code, uint32_t npes);

/* GEMV y = A x of (WT_GEMV_P * WT_GEMV_B)^2 on WT_GEMV_P^2 PEs (test_wse_pe.c explains the
 * mapping); the result y[4py..] is at address 96 of PE (P-1, py). Caller frees. */
#define WT_GEMV_P 32
#define WT_GEMV_B 4
float wt_gemv_a(int i, int j);
float wt_gemv_x(int j);
char *wt_gemv_program(void);

#endif
