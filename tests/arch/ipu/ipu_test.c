/* tests/arch/ipu/ipu_test.c — see ipu_test.h. */
#include "tests/arch/ipu/ipu_test.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/program.h"
#include "core/report.h"
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

void ipu_test_run(const char *name, const char *const *sets, const char *text, bool lockstep, int threads,
                  ipu_run *out)
{
    memset(out, 0, sizeof *out);
    ts_err_init(&out->err);
    out->config = ipu_test_config(name, sets);
    out->cfg = ts_config_data(out->config);
    ts_program *p = NULL;
    char *full = ipu_test_expand(text);
    ts_status arc = ts_asm(&p, "test.s", full, strlen(full), &ts_ipu_isa, &out->err);
    ts_free(full);
    if (arc != TS_OK) {
        char line[1400];
        ts_err_format(&out->err, line, sizeof line);
        ck_abort_msg("asm: %s", line);
    }
    ts_run_opts o = {.lockstep = lockstep, .threads = threads, .phase_events = true};
    out->rc = ts_ipu_family.create(&out->m, out->config, &o, &out->err);
    ck_assert_int_eq(out->rc, TS_OK);
    out->rc = ts_ipu_family.load(out->m, p, &out->err);
    ts_program_destroy(p);
    if (out->rc != TS_OK)
        return;
    ts_step st = {0};
    while (!st.done) {
        out->rc = ts_ipu_family.step(out->m, st.now + 65536, &st, &out->err);
        if (out->rc != TS_OK)
            return;
        ck_assert_msg(st.now < 400000000ull, "runaway program");
    }
    ts_results_init(&out->r);
    if (!out->r.stats)
        out->r.stats = ts_stats_create();
    out->rc = ts_ipu_family.collect(out->m, &out->r, &out->err);
    ck_assert_int_eq(out->rc, TS_OK);
    ts_report_json(&out->r, &out->json);
    out->memhash = ts_ipu_memhash(out->m);
}

void ipu_run_free(ipu_run *r)
{
    if (r->m)
        ts_ipu_family.destroy(r->m);
    if (r->r.stats)
        ts_results_free(&r->r);
    ts_buf_free(&r->json);
    ts_err_free(&r->err);
    ts_config_destroy(r->config);
    memset(r, 0, sizeof *r);
}

void ipu_test_run3(const char *name, const char *const *sets, const char *text, ipu_run *out)
{
    ipu_test_run(name, sets, text, false, 1, out);
    if (out->rc != TS_OK) {
        char line[1400];
        ts_err_format(&out->err, line, sizeof line);
        ck_abort_msg("run: %s", line);
    }
    ipu_run b, c;
    ipu_test_run(name, sets, text, true, 1, &b);
    ck_assert_int_eq(b.rc, TS_OK);
    ipu_test_run(name, sets, text, false, 3, &c);
    ck_assert_int_eq(c.rc, TS_OK);
    ck_assert_str_eq(ts_buf_str(&out->json), ts_buf_str(&b.json));
    ck_assert_str_eq(ts_buf_str(&out->json), ts_buf_str(&c.json));
    ck_assert_uint_eq(out->memhash, b.memhash);
    ck_assert_uint_eq(out->memhash, c.memhash);
    ipu_run_free(&b);
    ipu_run_free(&c);
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
