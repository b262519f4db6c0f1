/* tests/arch/ipu/ipu_test.h — helpers for the IPU tests: load a config, assemble, run a program
 * in one mode or in every mode of the shared harness (tests/arch/arch_modes.h, tile memory
 * compared too), read tile memory and statistics after the run. */
#ifndef TS_TESTS_IPU_TEST_H
#define TS_TESTS_IPU_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/ipu/ipu.h"
#include "core/buf.h"
#include "core/program.h"
#include "core/results.h"
#include "tests/arch/arch_modes.h"

typedef struct ipu_run {
    ts_model *m;       /* kept after the run so tests can read tile memory */
    ts_results r;      /* the results of a run that succeeded */
    ts_err err;
    ts_status rc;
    const void *cfg;   /* typed config */
    void *config;      /* the ts_config */
} ipu_run;

/* Load configs/<name>.yaml from the source tree with "key=value" overrides (NULL-terminated). */
void *ipu_test_config(const char *name, const char *const *sets);
/* The options the IPU tests run with: energy per superstep, a cycle limit against runaway
 * programs, tile memory compared across modes (ts_ipu_memhash). */
arch_opts ipu_test_opts(void);
/* Run asm text (or program p) on config `name` in one mode; never aborts on a simulation error
 * (see out->rc / out->err). */
void ipu_test_run(const char *name, const char *const *sets, const char *text, bool lockstep, int threads,
                  ipu_run *out);
void ipu_test_run_program(const char *name, const char *const *sets, const ts_program *p, bool lockstep,
                          int threads, ipu_run *out);
/* Run in every mode of the harness and assert that all give the same report and memory, or fail
 * with the same message; returns the fast run, whatever its outcome. */
void ipu_test_modes(const char *name, const char *const *sets, const char *text, ipu_run *out);
void ipu_test_modes_program(const char *name, const char *const *sets, const ts_program *p, ipu_run *out);
/* The same, and the fast run must have succeeded. */
void ipu_test_run3(const char *name, const char *const *sets, const char *text, ipu_run *out);
void ipu_run_free(ipu_run *r);
/* A program with the same body on tiles [0, n): ".stream tile i" + body for each i. */
char *ipu_test_spmd(const char *head, const char *body, unsigned n);
/* Expand ".stream tile A-B" into one stream per tile with the same body (what the assembler's
 * range form means), so the tests do not depend on the assembler having it. */
char *ipu_test_expand(const char *text);
/* Read a 32-bit word / float from tile memory after a run. */
uint32_t ipu_peek32(ipu_run *r, unsigned tile, uint64_t addr);
float ipu_peekf(ipu_run *r, unsigned tile, uint64_t addr);
/* A statistic's scalar or table cell; aborts if missing. */
double ipu_stat(const ipu_run *r, const char *name);
double ipu_cell(const ipu_run *r, const char *table, size_t row, const char *col);
/* Event count by name. */
double ipu_event(const ipu_run *r, const char *name);

#endif
