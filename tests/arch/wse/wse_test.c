/* tests/arch/wse/wse_test.c — helpers shared by the wafer-mesh tests. */
#include "tests/arch/wse/wse_test.h"

#include <string.h>

#include "arch/wse/wse_isa.h"
#include "core/program.h"
#include "core/report.h"
#include "core/sim.h"

ts_wse_cfg wt_cfg(uint32_t w, uint32_t h)
{
    ts_wse_cfg c;
    ts_err e;
    ts_err_init(&e);
    ts_wse_cfg_defaults(&c, &e);
    ts_err_free(&e);
    c.width = w;
    c.height = h;
    return c;
}

ts_model *wt_run(const ts_wse_cfg *cfg, const char *src, bool lockstep, int threads, uint64_t max_cycles,
                 ts_status *st, ts_err *err)
{
    ts_program *p = NULL;
    ts_model *m = NULL;
    *st = ts_asm(&p, "test.s", src, strlen(src), &ts_wse_isa, err);
    if (*st)
        return NULL;
    ts_run_opts o = {.lockstep = lockstep, .threads = threads};
    *st = ts_wse_create(&m, cfg, &o, err);
    if (!*st)
        *st = ts_wse_family.load(m, p, err);
    ts_step s = {0};
    while (!*st && !s.done) {
        uint64_t lim = s.now + 4096;
        if (max_cycles && lim > max_cycles)
            lim = max_cycles;
        *st = ts_wse_family.step(m, lim, &s, err);
        if (!*st && !s.done && s.now >= max_cycles && max_cycles)
            break;
    }
    ts_program_destroy(p);
    if (*st) {
        ts_wse_family.destroy(m);
        return NULL;
    }
    return m;
}

void wt_free(ts_model *m) { ts_wse_family.destroy(m); }

static const ts_schema *lookup(const char *arch) { return strcmp(arch, "wse") ? NULL : &ts_wse_schema; }

ts_status wt_report(const char *yaml, const char *src, bool lockstep, int threads, ts_buf *out)
{
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg = NULL;
    ts_program *p = NULL;
    ts_config_opts co = {.schema = lookup};
    ts_status st = ts_config_load_string(&cfg, "test.yaml", yaml, strlen(yaml), &co, &err);
    if (!st)
        st = ts_asm(&p, "test.s", src, strlen(src), &ts_wse_isa, &err);
    if (!st) {
        ts_run_opts o = {.lockstep = lockstep, .threads = threads};
        ts_results r;
        st = ts_sim_run(&ts_wse_family, cfg, p, &o, NULL, &r, &err);
        if (!st) {
            ts_report_text(&r, out);
            ts_report_json(&r, out);
            ts_results_free(&r);
        }
    }
    if (st) {
        char msg[1200];
        ts_err_format(&err, msg, sizeof msg);
        ts_buf_puts(out, msg);
    }
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&err);
    return st;
}

void wt_route_xy(ts_buf *pe, uint32_t w, uint32_t colour, uint32_t sx, uint32_t sy, uint32_t dx, uint32_t dy)
{
    uint32_t x = sx, y = sy, from = WT_R;
    for (;;) {
        uint32_t to, nx = x, ny = y;
        if (x < dx) to = WT_E, nx++;
        else if (x > dx) to = WT_W, nx--;
        else if (y < dy) to = WT_S, ny++;
        else if (y > dy) to = WT_N, ny--;
        else to = WT_R;
        ts_buf_printf(&pe[y * w + x], "    route %u, %u, %u\n", colour, from, to);
        if (to == WT_R)
            break;
        from = to == WT_E ? WT_W : to == WT_W ? WT_E : to == WT_S ? WT_N : WT_S;
        x = nx;
        y = ny;
    }
}

void wt_join(ts_buf *out, ts_buf *routes, ts_buf *code, uint32_t npes)
{
    ts_buf_puts(out, ".arch wse\n");
    for (uint32_t i = 0; i < npes; i++) {
        if (!routes[i].len && !code[i].len)
            continue;
        ts_buf_printf(out, ".stream pe %u\n", i);
        if (routes[i].len)
            ts_buf_put(out, routes[i].data, routes[i].len);
        if (code[i].len)
            ts_buf_put(out, code[i].data, code[i].len);
    }
}
