/* tests/arch/tsp/tsp_test.h — helpers for the TSP tests: load a config, assemble or build a
 * program, run it in one mode or in every mode of the shared harness (tests/arch/arch_modes.h,
 * MEM compared too), read MEM and statistics after the run. */
#ifndef TS_TESTS_TSP_TEST_H
#define TS_TESTS_TSP_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/tsp/tsp.h"
#include "core/buf.h"
#include "core/program.h"
#include "core/results.h"
#include "tests/arch/arch_modes.h"

typedef struct tsp_run {
    ts_model *m;        /* kept after the run so tests can read MEM */
    ts_results r;       /* the results of a run that succeeded */
    ts_err err;
    ts_status rc;
    const void *cfg;    /* typed config */
    void *config;       /* the ts_config */
} tsp_run;

/* Load configs/<name>.yaml from the source tree with "key=value" overrides (NULL-terminated). */
void *tsp_test_config(const char *name, const char *const *sets);
ts_program *tsp_test_asm(const char *text);
/* Run p on config `name` in one mode; never aborts on a simulation error (see out->rc / out->err).
 * warn: record hazards and go on. */
void tsp_test_run(const char *name, const char *const *sets, const ts_program *p, bool lockstep, bool warn,
                  tsp_run *out);
/* Run in every mode of the harness and assert that all give the same report and MEM, or fail with
 * the same message; returns the fast run, whatever its outcome. */
void tsp_test_modes(const char *name, const char *const *sets, const ts_program *p, bool warn, tsp_run *out);
/* The same without warn, and the fast run must have succeeded. */
void tsp_test_run2(const char *name, const char *const *sets, const ts_program *p, tsp_run *out);
void tsp_run_free(tsp_run *r);

/* Append an instruction to queue q: mnemonic and its operands. */
void tsp_emit(ts_program *p, int q, const char *mn, int n, ...);
/* Add a data segment to MEM slice `mem` at byte address addr. */
void tsp_data(ts_program *p, int mem, uint64_t addr, const void *bytes, uint32_t len);

uint8_t tsp_peek(const tsp_run *r, int mem, uint64_t addr);
double tsp_stat(const tsp_run *r, const char *name);
double tsp_stat_at(const tsp_run *r, const char *name, size_t i);
double tsp_event(const tsp_run *r, const char *name);
/* The formatted error message of a failed run. */
const char *tsp_errmsg(const tsp_run *r);

/* Register shorthands. */
#define E(s) ts_tsp_reg_east(s)
#define W(s) ts_tsp_reg_west(s)
#define ALU(a) ts_tsp_reg_alu(a)
#define NUL ts_tsp_reg_nul()
#define T_I8 ts_tsp_reg_type(0)
#define T_I16 ts_tsp_reg_type(1)
#define T_I32 ts_tsp_reg_type(2)
#define T_F16 ts_tsp_reg_type(3)
#define T_F32 ts_tsp_reg_type(4)

#endif
