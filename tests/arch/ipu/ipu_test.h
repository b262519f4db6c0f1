/* tests/arch/ipu/ipu_test.h — helpers for the IPU tests: load a config, assemble, run a program
 * in the fast mode, in lockstep and on three threads, and check that all three agree. */
#ifndef TS_TESTS_IPU_TEST_H
#define TS_TESTS_IPU_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/ipu/ipu.h"
#include "core/buf.h"
#include "core/results.h"

typedef struct ipu_run {
    ts_model *m;       /* kept after the run so tests can read tile memory */
    ts_results r;
    ts_err err;
    ts_status rc;
    ts_buf json;       /* the JSON report, for comparisons */
    uint64_t memhash;
    const void *cfg;   /* typed config */
    void *config;      /* the ts_config */
} ipu_run;

/* Load configs/<name>.yaml from the source tree with "key=value" overrides (NULL-terminated). */
void *ipu_test_config(const char *name, const char *const *sets);
/* Run asm text on config `name`; never aborts on a simulation error (see out->rc / out->err). */
void ipu_test_run(const char *name, const char *const *sets, const char *text, bool lockstep, int threads,
                  ipu_run *out);
/* Run in the fast mode, lockstep and on three threads; assert equal reports and memory. Returns
 * the fast run, which must have succeeded. */
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
