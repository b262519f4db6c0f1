/* tests/arch/ipu/ipu_test.c — see ipu_test.h. */
#include "tests/arch/ipu/ipu_test.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/program.h"
#include "tests/arch/arch_test.h"

static const ts_schema *lookup(const char *arch) { return strcmp(arch, "ipu") ? NULL : &ts_ipu_schema; }

void *ipu_test_config(const char *name, const char *const *sets)
{
    return arch_test_config(name, sets, lookup);
}

char *ipu_test_expand(const char *text)
{
    ts_buf out = TS_BUF_INIT;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) + 1 : strlen(p);
        unsigned a, b;
        int used = 0;
        if (sscanf(p, " .stream tile %u-%u%n", &a, &b, &used) == 2 && used > 0 && b >= a) {
            const char *body = p + n, *end = body;
            while (*end) { /* the body runs to the next .stream or .data line */
                const char *q = end;
                while (*q == ' ' || *q == '\t')
                    q++;
                if (!strncmp(q, ".stream", 7) || !strncmp(q, ".data", 5))
                    break;
                const char *e2 = strchr(end, '\n');
                end = e2 ? e2 + 1 : end + strlen(end);
            }
            for (unsigned i = a; i <= b; i++) {
                ts_buf_printf(&out, ".stream tile %u\n", i);
                ts_buf_put(&out, body, (size_t)(end - body));
            }
            p = end;
            continue;
        }
        ts_buf_put(&out, p, n);
        p += n;
    }
    return out.data ? out.data : ts_strdup("");
}

static void memory(ts_model *m, void *ud, ts_buf *out)
{
    (void)ud;
    ts_buf_printf(out, "tile memory hash %016" PRIx64 "\n", ts_ipu_memhash(m));
}

arch_opts ipu_test_opts(void)
{
    arch_opts o = {.run = {.phase_events = true, .max_cycles = 400000000ull}, .state = memory};
    return o;
}

static ts_program *assemble(const char *text)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    char *full = ipu_test_expand(text);
    ts_status arc = ts_asm(&p, "test.s", full, strlen(full), &ts_ipu_isa, &e);
    ts_free(full);
    if (arc != TS_OK) {
        char line[1400];
        ts_err_format(&e, line, sizeof line);
        ck_abort_msg("asm: %s", line);
    }
    ts_err_free(&e);
    return p;
}

/* Keep run a (its model, results and error) in out, which has its config. */
static void take(ipu_run *out, arch_run *a)
{
    ck_assert_msg(a->m != NULL, "%s: %s", a->stage, a->errline); /* create must succeed */
    ck_assert_msg(a->rc == TS_OK || strcmp(a->stage, "collect"), "collect: %s", a->errline);
    out->m = a->m;
    out->r = a->r;
    out->err = a->err;
    out->rc = a->rc;
    a->m = NULL;
    a->r.stats = NULL;
    a->err.detail = NULL;
    arch_run_free(a);
}

/* Run p on config `name` in one mode (all_modes false) or in every mode. */
static void run(const char *name, const char *const *sets, const ts_program *p, bool all_modes, bool lockstep,
                int threads, ipu_run *out)
{
    memset(out, 0, sizeof *out);
    ts_err_init(&out->err);
    out->config = ipu_test_config(name, sets);
    out->cfg = ts_config_data(out->config);
    arch_opts o = ipu_test_opts();
    arch_run a;
    if (all_modes)
        arch_modes_check(&ts_ipu_family, out->config, p, &o, &a);
    else
        arch_run_mode(&ts_ipu_family, out->config, p, &o, lockstep, threads, &a);
    take(out, &a);
}

void ipu_test_run_program(const char *name, const char *const *sets, const ts_program *p, bool lockstep,
                          int threads, ipu_run *out)
{
    run(name, sets, p, false, lockstep, threads, out);
}

void ipu_test_run(const char *name, const char *const *sets, const char *text, bool lockstep, int threads,
                  ipu_run *out)
{
    ts_program *p = assemble(text);
    run(name, sets, p, false, lockstep, threads, out);
    ts_program_destroy(p);
}

void ipu_test_modes_program(const char *name, const char *const *sets, const ts_program *p, ipu_run *out)
{
    run(name, sets, p, true, false, 1, out);
}

void ipu_test_modes(const char *name, const char *const *sets, const char *text, ipu_run *out)
{
    ts_program *p = assemble(text);
    run(name, sets, p, true, false, 1, out);
    ts_program_destroy(p);
}

void ipu_run_free(ipu_run *r)
{
    if (r->m)
        ts_ipu_family.destroy(r->m);
    ts_results_free(&r->r);
    ts_err_free(&r->err);
    ts_config_destroy(r->config);
    memset(r, 0, sizeof *r);
}

void ipu_test_run3(const char *name, const char *const *sets, const char *text, ipu_run *out)
{
    ipu_test_modes(name, sets, text, out);
    if (out->rc != TS_OK) {
        char line[1400];
        ts_err_format(&out->err, line, sizeof line);
        ck_abort_msg("run: %s", line);
    }
}

char *ipu_test_spmd(const char *head, const char *body, unsigned n)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n");
    ts_buf_puts(&b, head ? head : "");
    for (unsigned i = 0; i < n; i++)
        ts_buf_printf(&b, ".stream tile %u\n%s\n", i, body);
    return b.data;
}

uint32_t ipu_peek32(ipu_run *r, unsigned tile, uint64_t addr)
{
    uint32_t v = 0;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_ipu_read(r->m, tile, addr, &v, 4, &e), TS_OK);
    return v;
}

float ipu_peekf(ipu_run *r, unsigned tile, uint64_t addr)
{
    uint32_t v = ipu_peek32(r, tile, addr);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

double ipu_stat(const ipu_run *r, const char *name)
{
    const ts_stat *s = ts_stats_find(r->r.stats, name);
    ck_assert_msg(s != NULL, "no statistic %s", name);
    return s->kind == TS_STAT_U64 ? (double)s->u : s->f;
}

double ipu_cell(const ipu_run *r, const char *table, size_t row, const char *col)
{
    const ts_stat *s = ts_stats_find(r->r.stats, table);
    ck_assert_msg(s != NULL && s->kind == TS_STAT_TABLE, "no table %s", table);
    ck_assert_msg(row < s->nrows, "table %s has %zu rows, not %zu", table, s->nrows, row + 1);
    for (size_t k = 0; k < s->ncols; k++)
        if (!strcmp(s->cols[k], col))
            return s->rows[row * s->ncols + k];
    ck_abort_msg("table %s has no column %s", table, col);
    return 0;
}

double ipu_event(const ipu_run *r, const char *name)
{
    for (size_t i = 0; i < r->r.nevents; i++)
        if (!strcmp(r->r.events[i].name, name))
            return r->r.events[i].count;
    ck_abort_msg("no event %s", name);
    return 0;
}
