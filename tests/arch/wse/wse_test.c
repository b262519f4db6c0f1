/* tests/arch/wse/wse_test.c — helpers shared by the wafer-mesh tests. */
#include "tests/arch/wse/wse_test.h"

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
        /* The kernel's loop, written out: ts_sim_run would do the same (core/sim.c), but today
         * it leaks the stats registry ts_results_init already made, which fails the sanitizer
         * builds of these tests. */
        ts_run_opts o = {.lockstep = lockstep, .threads = threads};
        const ts_family *f = &ts_wse_family;
        ts_model *m = NULL;
        st = f->create(&m, cfg, &o, &err);
        if (!st)
            st = f->load(m, p, &err);
        ts_step s = {0};
        uint64_t last_work = 0, last_cycle = 0;
        while (!st && !s.done) {
            st = f->step(m, s.now + 65536, &s, &err);
            if (st || s.done)
                break;
            if (s.work != last_work) {
                last_work = s.work;
                last_cycle = s.now;
            } else if (s.now - last_cycle >= 1000000) {
                st = ts_err_sim(&err, -1, (int64_t)s.now, "no progress for %llu cycles: the program is hung",
                                (unsigned long long)(s.now - last_cycle));
                ts_buf why = {0};
                f->blocked(m, &why);
                ts_err_append_detail(&err, ts_buf_str(&why));
                ts_buf_free(&why);
            }
        }
        if (!st) {
            ts_results r;
            ts_results_init(&r);
            st = f->collect(m, &r, &err);
            snprintf(r.arch, sizeof r.arch, "wse");
            snprintf(r.config, sizeof r.config, "%s", ts_config_name(cfg));
            if (!st) {
                ts_report_text(&r, out);
                ts_report_json(&r, out);
            }
            ts_results_free(&r);
        }
        f->destroy(m);
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

