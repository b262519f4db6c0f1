/* tests/arch/tsp/tsp_test.c — see tsp_test.h. */
#include "tests/arch/tsp/tsp_test.h"

#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "tests/arch/arch_test.h"

void *tsp_test_config(const char *name, const char *const *sets)
{
    return arch_test_config(name, sets, ts_tsp_schema_lookup);
}

ts_program *tsp_test_asm(const char *text)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    if (ts_asm(&p, "test.s", text, strlen(text), ts_tsp_family.isa, &e) != TS_OK) {
        char line[1400];
        ts_err_format(&e, line, sizeof line);
        ck_abort_msg("asm: %s", line);
    }
    ts_err_free(&e);
    return p;
}

static void memory(ts_model *m, void *ud, ts_buf *out)
{
    (void)ud;
    ts_buf_printf(out, "MEM hash %016" PRIx64 "\n", ts_tsp_mem_hash(m));
}

/* Run p on config `name` in one mode (all_modes false) or in every mode; out keeps the (fast)
 * run's model, results and error. */
static void run(const char *name, const char *const *sets, const ts_program *p, bool all_modes, bool lockstep,
                bool warn, tsp_run *out)
{
    memset(out, 0, sizeof *out);
    ts_err_init(&out->err);
    out->config = tsp_test_config(name, sets);
    out->cfg = ts_config_data(out->config);
    arch_opts o = {.run = {.warn = warn, .max_cycles = 400000000ull}, .state = memory};
    arch_run a;
    if (all_modes)
        arch_modes_check(&ts_tsp_family, out->config, p, &o, &a);
    else
        arch_run_mode(&ts_tsp_family, out->config, p, &o, lockstep, 1, &a);
    ck_assert_msg(a.m != NULL, "%s: %s", a.stage, a.errline); /* create must succeed */
    ck_assert_msg(a.rc == TS_OK || strcmp(a.stage, "collect"), "collect: %s", a.errline);
    out->m = a.m;
    out->r = a.r;
    out->err = a.err;
    out->rc = a.rc;
    a.m = NULL;
    a.r.stats = NULL;
    a.err.detail = NULL;
    arch_run_free(&a);
}

void tsp_test_run(const char *name, const char *const *sets, const ts_program *p, bool lockstep, bool warn,
                  tsp_run *out)
{
    run(name, sets, p, false, lockstep, warn, out);
}

void tsp_test_modes(const char *name, const char *const *sets, const ts_program *p, bool warn, tsp_run *out)
{
    run(name, sets, p, true, false, warn, out);
}

void tsp_run_free(tsp_run *r)
{
    if (r->m)
        ts_tsp_family.destroy(r->m);
    ts_results_free(&r->r);
    ts_err_free(&r->err);
    ts_config_destroy(r->config);
    memset(r, 0, sizeof *r);
}

void tsp_test_run2(const char *name, const char *const *sets, const ts_program *p, tsp_run *out)
{
    tsp_test_modes(name, sets, p, false, out);
    ck_assert_msg(out->rc == TS_OK, "fast run: %s", tsp_errmsg(out));
}

void tsp_emit(ts_program *p, int q, const char *mn, int n, ...)
{
    int op = ts_tsp_op(mn);
    ck_assert_msg(op >= 0, "no mnemonic %s", mn);
    ts_stream *s = ts_program_stream(p, 0, (uint32_t)q);
    ck_assert_ptr_nonnull(s);
    ts_insn *in = ts_stream_emit(s, (uint16_t)op);
    ck_assert_ptr_nonnull(in);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        in->a[i] = va_arg(ap, int);
    va_end(ap);
}

void tsp_data(ts_program *p, int mem, uint64_t addr, const void *bytes, uint32_t len)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_program_add_segment(p, 1, (uint32_t)mem, addr, bytes, len, &e), TS_OK);
    ts_err_free(&e);
}

uint8_t tsp_peek(const tsp_run *r, int mem, uint64_t addr)
{
    const uint8_t *m = ts_tsp_mem(r->m, mem);
    return m ? m[addr] : 0;
}

double tsp_stat(const tsp_run *r, const char *name)
{
    const ts_stat *s = ts_stats_find(r->r.stats, name);
    ck_assert_msg(s != NULL, "no statistic %s", name);
    return s->kind == TS_STAT_U64 ? (double)s->u : s->f;
}

double tsp_stat_at(const tsp_run *r, const char *name, size_t i)
{
    const ts_stat *s = ts_stats_find(r->r.stats, name);
    ck_assert_msg(s != NULL && s->kind == TS_STAT_ARRAY && i < s->n, "no array statistic %s[%zu]", name, i);
    return s->v[i];
}

double tsp_event(const tsp_run *r, const char *name)
{
    for (size_t i = 0; i < r->r.nevents; i++)
        if (!strcmp(r->r.events[i].name, name))
            return r->r.events[i].count;
    return 0;
}

const char *tsp_errmsg(const tsp_run *r)
{
    static char line[1400];
    ts_err_format(&r->err, line, sizeof line);
    return line;
}
