/* tests/arch/wse/wse_test.h — helpers shared by the wafer-mesh tests: assemble, run, report. */
#ifndef TS_TESTS_WSE_TEST_H
#define TS_TESTS_WSE_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/wse/wse.h"
#include "core/buf.h"
#include "core/config.h"
#include "tests/arch/arch_modes.h"

/* Assemble src and run it on cfg to completion (or max_cycles); the model is returned for
 * inspection (destroy with wt_free). On failure returns NULL and fills st and err. */
ts_model *wt_run(const ts_wse_cfg *cfg, const char *src, bool lockstep, int threads, uint64_t max_cycles,
                 ts_status *st, ts_err *err);
void wt_free(ts_model *m);
/* A default config of w x h PEs. */
ts_wse_cfg wt_cfg(uint32_t w, uint32_t h);
/* The same as a loaded config, for the harness (tests/arch/arch_modes.h); owned by the caller. */
ts_config *wt_config(uint32_t w, uint32_t h);
/* A config from YAML text (the test fails on a bad one); owned by the caller. */
ts_config *wt_config_text(const char *yaml);
/* Run with a YAML config text as the kernel would (tests/arch/arch_modes.h) and return the text
 * and JSON report in out (or the error message). Returns the status. */
ts_status wt_report(const char *yaml, const char *src, bool lockstep, int threads, ts_buf *out);
/* Run in every mode of the harness (tests/arch/arch_modes.h) and assert that all give the same
 * report, or fail with the same message. */
void wt_modes(const char *yaml, const char *src);
/* The same in the modes of tests/arch/arch_modes.h that modes names (bit i for arch_modes[i]; 0:
 * the default set). */
void wt_modes_in(const char *yaml, const char *src, unsigned modes);

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

/* Two PEs in a row for the sleepers of the active set (wse_pe.c, wse_band.c): PE 0 runs a 300-element fmacs
 * on memory (the tile asleep while it runs alone) while its microthread sends 40 wavelets that PE 1
 * takes slowly (PE 0 blocked on a full queue, woken by the pop), then one more on colour 1; PE 1
 * receives on a microthread while its own 500-element fmacs runs, waits 50 cycles (a timer), and
 * at the end waits in `recv` on colour 1 (blocked on an empty queue). */
#define WT_SLEEPERS_PROGRAM \
    ".arch wse\n" \
    ".stream pe 0\n" \
    "    route 0, 16, 4\n" \
    "    route 1, 16, 4\n" \
    "    li r2, 6\n" \
    "    fli r1, 0.5\n" \
    "    dsdm 0, 0, 300, 1\n" \
    "    dsdm 1, 2048, 300, 1\n" \
    "    dsdm 2, 4096, 40, 1\n" \
    "    dsdout 3, 0, 40, 0\n" \
    "l:  fmovs 3, 2, 0, -1\n" \
    "    fmacs 0, 0, 1, r1, -1, -1\n" \
    "    addi r2, r2, -1\n" \
    "    bnz r2, l\n" \
    "    send 1, r2\n" \
    ".stream pe 1\n" \
    "    route 0, 8, 16\n" \
    "    route 1, 8, 16\n" \
    "    li r2, 6\n" \
    "    fli r1, 2.0\n" \
    "    dsdin 0, 0, 40\n" \
    "    dsdm 1, 0, 40, 1\n" \
    "    dsdm 2, 1024, 500, 1\n" \
    "    dsdm 3, 8192, 500, 1\n" \
    "l:  fmovs 1, 0, 0, -1\n" \
    "    fmacs 2, 2, 3, r1, -1, -1\n" \
    "    wait 50\n" \
    "    addi r2, r2, -1\n" \
    "    bnz r2, l\n" \
    "    recv r5, 1\n"

#endif
