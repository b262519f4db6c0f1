/* tests/arch/wse/wse_test.c — helpers shared by the wafer-mesh tests. */
#include "tests/arch/wse/wse_test.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
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

ts_config *wt_config(uint32_t w, uint32_t h)
{
    char yaml[128];
    snprintf(yaml, sizeof yaml, "arch: wse\nname: wse_%ux%u\nmesh: {width: %u, height: %u}\n", w, h, w, h);
    return wt_config_text(yaml);
}

ts_config *wt_config_text(const char *yaml)
{
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = lookup};
    ck_assert_msg(ts_config_load_string(&cfg, "test.yaml", yaml, strlen(yaml), &co, &err) == TS_OK, "%s", err.msg);
    ts_err_free(&err);
    return cfg;
}

/* Load the YAML config text and assemble src; on failure the formatted error. */
static ts_status prepare(const char *yaml, const char *src, ts_config **cfg, ts_program **p, ts_err *err)
{
    *cfg = NULL;
    *p = NULL;
    ts_config_opts co = {.schema = lookup};
    ts_status st = ts_config_load_string(cfg, "test.yaml", yaml, strlen(yaml), &co, err);
    if (!st)
        st = ts_asm(p, "test.s", src, strlen(src), &ts_wse_isa, err);
    return st;
}

ts_status wt_report(const char *yaml, const char *src, bool lockstep, int threads, ts_buf *out)
{
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg;
    ts_program *p;
    ts_status st = prepare(yaml, src, &cfg, &p, &err);
    if (st) {
        char msg[1200];
        ts_err_format(&err, msg, sizeof msg);
        ts_buf_puts(out, msg);
    } else {
        arch_run r;
        st = arch_run_mode(&ts_wse_family, cfg, p, NULL, lockstep, threads, &r);
        if (!st) {
            ts_report_text(&r.r, out);
            ts_buf_puts(out, ts_buf_str(&r.text));
        } else {
            ts_buf_puts(out, r.errline);
        }
        arch_run_free(&r);
    }
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&err);
    return st;
}

void wt_modes(const char *yaml, const char *src)
{
    wt_modes_in(yaml, src, 0);
}

void wt_modes_in(const char *yaml, const char *src, unsigned modes)
{
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg;
    ts_program *p;
    ck_assert_msg(prepare(yaml, src, &cfg, &p, &err) == TS_OK, "%s", err.msg);
    arch_opts o = {.modes = modes};
    arch_run r;
    arch_modes_check(&ts_wse_family, cfg, p, &o, &r);
    arch_run_free(&r);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&err);
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

float wt_gemv_a(int i, int j) { return (float)((i * 7 + j * 13) % 17 - 8) * 0.125f + (float)(i % 3) * 0.5f; }
float wt_gemv_x(int j) { return (float)(j % 11 - 5) * 0.25f + 0.0625f; }

char *wt_gemv_program(void)
{
    ts_buf b = {0};
    ts_buf_puts(&b, ".arch wse\n.workload \"gemv 128 x 128 on 32 x 32 PEs\"\n");
    const int A = 0, X = 64, Y = 96;
    for (int py = 0; py < WT_GEMV_P; py++)
        for (int px = 0; px < WT_GEMV_P; px++) {
            ts_buf_printf(&b, ".stream pe %d\n", py * WT_GEMV_P + px);
            int cin = (px - 1) % 2 + 1, cout = px % 2 + 1;
            if (px > 0)
                ts_buf_printf(&b, "    route %d, 8, 16\n", cin);
            if (px < WT_GEMV_P - 1)
                ts_buf_printf(&b, "    route %d, 16, 4\n", cout);
            ts_buf_printf(&b, "    dsdm 0, %d, %d, 1\n", Y, WT_GEMV_B);
            for (int k = 0; k < WT_GEMV_B; k++)
                ts_buf_printf(&b, "    ld r1, r0, %d\n    dsdm 1, %d, %d, 1\n    fmacs 0, 0, 1, r1, -1, -1\n", X + 4 * k,
                              A + 4 * WT_GEMV_B * k, WT_GEMV_B);
            if (px > 0)
                ts_buf_printf(&b, "    dsdin 2, %d, %d\n", cin, WT_GEMV_B);
            if (px < WT_GEMV_P - 1)
                ts_buf_printf(&b, "    dsdout 3, %d, %d, 0\n", cout, WT_GEMV_B);
            if (px == 0)
                ts_buf_puts(&b, "    fmovs 3, 0, -1, -1\n");
            else if (px < WT_GEMV_P - 1)
                ts_buf_puts(&b, "    fadds 3, 0, 2, -1, -1\n");
            else
                ts_buf_puts(&b, "    fadds 0, 0, 2, -1, -1\n");
            ts_buf_printf(&b, ".data pe %d %d\n    .word ", py * WT_GEMV_P + px, A);
            for (int k = 0; k < WT_GEMV_B; k++)
                for (int i = 0; i < WT_GEMV_B; i++) {
                    float v = wt_gemv_a(py * WT_GEMV_B + i, px * WT_GEMV_B + k);
                    uint32_t u;
                    memcpy(&u, &v, 4);
                    ts_buf_printf(&b, "%s0x%08x", k || i ? ", " : "", u);
                }
            ts_buf_printf(&b, "\n.data pe %d %d\n    .word ", py * WT_GEMV_P + px, X);
            for (int k = 0; k < WT_GEMV_B; k++) {
                float v = wt_gemv_x(px * WT_GEMV_B + k);
                uint32_t u;
                memcpy(&u, &v, 4);
                ts_buf_printf(&b, "%s0x%08x", k ? ", " : "", u);
            }
            ts_buf_puts(&b, "\n");
        }
    return b.data;
}

