/* tests/viz/test_viz.c — activity sampling (core/activity), the IPU's tile states, and the
 * headless renderer, checked by pixel statistics. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/registry.h"
#include "arch/wse/wse_isa.h"
#include "arch/wse/wse_kernels.h"
#include "configs/builtin.h"
#include "core/activity.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/program.h"
#include "core/sim.h"
#include "core/stats.h"
#include "tests/arch/wse/wse_test.h"
#include "ts_build.h"
#include "viz/render.h"

#if TS_HAVE_PNG
#include <png.h>
#endif

/* ---- a recorder: every frame, serialised, plus checks that hold for every frame ---- */

typedef struct rec {
    ts_buf bytes;         /* every frame's fields and counters, for comparing runs */
    uint64_t frames, bad_sums, next_start;
    int fail_at;          /* return an error from this frame (-1 = never) */
} rec;

static ts_status on_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    rec *r = ud;
    (void)a;
    if (f->start != r->next_start)
        r->bad_sums++;
    r->next_start = f->start + f->cycles;
    ts_buf_put(&r->bytes, (const char *)&f->index, sizeof f->index);
    ts_buf_put(&r->bytes, (const char *)&f->start, sizeof f->start);
    ts_buf_put(&r->bytes, (const char *)&f->cycles, sizeof f->cycles);
    ts_buf_put(&r->bytes, (const char *)&f->supersteps, sizeof f->supersteps);
    ts_buf_put(&r->bytes, (const char *)&f->bytes, sizeof f->bytes);
    for (uint32_t u = 0; u < f->nunits; u++) {
        uint64_t sum = 0;
        for (int s = 0; s < TS_ACT_NSTATES; s++) {
            sum += f->state[s][u];
            ts_buf_put(&r->bytes, (const char *)&f->state[s][u], sizeof f->state[s][u]);
        }
        if (sum != f->cycles) /* every cycle of every unit is in exactly one state */
            r->bad_sums++;
    }
    if (r->fail_at >= 0 && (uint64_t)r->fail_at == f->index)
        return ts_err_set(err, TS_EIO, "frame %d refused", r->fail_at);
    r->frames++;
    return TS_OK;
}

/* ---- core/activity on its own ---- */

static ts_activity *make(uint64_t window, rec *r, uint32_t n)
{
    ts_err e;
    ts_err_init(&e);
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, window, r ? on_frame : NULL, r, &e), TS_OK);
    uint32_t x[8], y[8];
    for (uint32_t u = 0; u < n; u++) {
        x[u] = u % 4;
        y[u] = u / 4;
    }
    ck_assert_int_eq(ts_activity_layout(a, "test", n, 4, (n + 3) / 4, x, y, &e), TS_OK);
    ts_err_free(&e);
    return a;
}

START_TEST(spans_split_over_windows)
{
    rec r = {.bytes = TS_BUF_INIT, .fail_at = -1};
    ts_activity *a = make(10, &r, 2);
    ts_err e;
    ts_err_init(&e);
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 0, 25);   /* windows 0, 1, 2 */
    ts_activity_span(a, 0, TS_ACT_SYNC, 25, 30);
    ts_activity_span(a, 1, TS_ACT_IDLE, 0, 7);
    ts_activity_span(a, 1, TS_ACT_NETWORK, 7, 30);
    ts_activity_bytes(a, 12, 64);
    ck_assert_int_eq(ts_activity_advance(a, 19, &e), TS_OK); /* window 1 ends at 20: not yet */
    ck_assert_uint_eq(ts_activity_frames(a), 1);
    ck_assert_int_eq(ts_activity_advance(a, 30, &e), TS_OK);
    ck_assert_uint_eq(ts_activity_frames(a), 3);
    ck_assert_uint_eq(r.bad_sums, 0);
    ck_assert_uint_eq(ts_activity_total(a, 0, TS_ACT_COMPUTE), 25);
    ck_assert_uint_eq(ts_activity_total(a, 0, TS_ACT_SYNC), 5);
    ck_assert_uint_eq(ts_activity_total(a, 1, TS_ACT_IDLE), 7);
    ck_assert_uint_eq(ts_activity_total(a, 1, TS_ACT_NETWORK), 23);
    ck_assert_uint_eq(ts_activity_total_bytes(a), 64);
    /* a last, partial window */
    ts_activity_span(a, 0, TS_ACT_MEMORY, 30, 33);
    ts_activity_span(a, 1, TS_ACT_IDLE, 30, 33);
    ck_assert_int_eq(ts_activity_finish(a, 33, &e), TS_OK);
    ck_assert_uint_eq(ts_activity_frames(a), 4);
    ck_assert_uint_eq(ts_activity_cycles(a), 33);
    ck_assert_uint_eq(r.bad_sums, 0);
    ck_assert_uint_eq(ts_activity_total(a, 0, TS_ACT_MEMORY), 3);
    /* spans far ahead grow the ring; nothing is recorded after finish */
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 40, 50);
    ck_assert_uint_eq(ts_activity_total(a, 0, TS_ACT_COMPUTE), 25);
    ts_activity_destroy(a);
    ts_buf_free(&r.bytes);
    ts_err_free(&e);
}
END_TEST

START_TEST(ring_grows_far_ahead)
{
    rec r = {.bytes = TS_BUF_INIT, .fail_at = -1};
    ts_activity *a = make(3, &r, 1);
    ts_err e;
    ts_err_init(&e);
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 0, 1000);
    ts_activity_span(a, 0, TS_ACT_IDLE, 1000, 1001);
    ck_assert_int_eq(ts_activity_finish(a, 1001, &e), TS_OK);
    ck_assert_uint_eq(ts_activity_frames(a), 334);
    ck_assert_uint_eq(r.bad_sums, 0);
    ck_assert_uint_eq(ts_activity_total(a, 0, TS_ACT_COMPUTE), 1000);
    ts_activity_destroy(a);
    ts_buf_free(&r.bytes);
    ts_err_free(&e);
}
END_TEST

START_TEST(callback_error_stops)
{
    rec r = {.bytes = TS_BUF_INIT, .fail_at = 1};
    ts_activity *a = make(10, &r, 1);
    ts_err e;
    ts_err_init(&e);
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 0, 40);
    ck_assert_int_eq(ts_activity_advance(a, 40, &e), TS_EIO);
    ck_assert_str_eq(e.msg, "frame 1 refused");
    ck_assert_uint_eq(r.frames, 1);
    ck_assert_int_eq(ts_activity_advance(a, 40, &e), TS_OK); /* stopped: nothing more */
    ck_assert_int_eq(ts_activity_finish(a, 40, &e), TS_OK);
    ck_assert_uint_eq(r.frames, 1);
    ts_activity_destroy(a);
    ts_activity_destroy(NULL);
    ts_buf_free(&r.bytes);
    ts_err_free(&e);
}
END_TEST

START_TEST(out_of_memory_is_reported)
{
    ts_activity *a = make(10, NULL, 2);
    ts_err e;
    ts_err_init(&e);
    ts_alloc_fail_after(1);
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 0, 25);
    ts_alloc_fail_after(0);
    ck_assert_int_eq(ts_activity_advance(a, 30, &e), TS_ENOMEM);
    ts_activity_destroy(a);
    ts_err_free(&e);
}
END_TEST

START_TEST(bad_layout)
{
    ts_activity *a = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_activity_create(&a, 0, NULL, NULL, &e), TS_EINPUT);
    ck_assert_int_eq(ts_activity_create(&a, 1ull << 32, NULL, NULL, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "activity window of 4294967296 cycles is not in 1 .. 4294967295");
    ck_assert_int_eq(ts_activity_create(&a, 5, NULL, NULL, &e), TS_OK);
    uint32_t x[1] = {4}, y[1] = {0};
    ck_assert_int_eq(ts_activity_layout(a, "l", 1, 4, 1, x, y, &e), TS_EINTERNAL);
    ck_assert_str_eq(ts_act_state_name(TS_ACT_NETWORK), "network");
    ts_activity_destroy(a);
    ts_err_free(&e);
}
END_TEST

/* ---- the renderer on synthetic activity ---- */

static const uint8_t *pix(const ts_viz_image *img, uint32_t x, uint32_t y)
{
    return img->px + 4 * ((size_t)y * img->w + x);
}

static bool is_rgb(const uint8_t *p, const uint8_t rgb[3])
{
    return p[0] == rgb[0] && p[1] == rgb[1] && p[2] == rgb[2] && p[3] == 255;
}

/* The colour at the middle of unit u's square (the whole layout shown). */
static const uint8_t *unit_pix(const ts_viz_image *img, const ts_activity *a, uint32_t u)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    uint32_t x, y, px, py;
    ts_activity_pos(a, u, &x, &y);
    ck_assert(ts_viz_cell_pixel(&g, NULL, x, y, &px, &py));
    return pix(img, px, py);
}

/* Bars on the timeline: runs of non-background pixels on a row near its bottom. */
static unsigned count_bars(const ts_viz_image *img, const ts_activity *a)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    uint32_t y = g.tl_y + g.tl_h - 1;
    unsigned runs = 0;
    bool in = false;
    for (uint32_t x = 0; x < img->w; x++) {
        bool on = !is_rgb(pix(img, x, y), ts_viz_bg);
        runs += on && !in;
        in = on;
    }
    return runs;
}

START_TEST(frame_colours_and_bars)
{
    rec r = {.bytes = TS_BUF_INIT, .fail_at = -1};
    ts_activity *a = make(100, &r, 8);
    ts_err e;
    ts_err_init(&e);
    for (uint32_t u = 0; u < 8; u++) {
        ts_act_state s = u < 3 ? TS_ACT_COMPUTE : u < 5 ? TS_ACT_NETWORK : u == 5 ? TS_ACT_SYNC : TS_ACT_IDLE;
        ts_activity_span(a, u, s, 0, 100);
    }
    for (int k = 0; k < 5; k++) {
        ts_act_superstep s = {(uint64_t)k * 20, 10, 6, 4};
        ck_assert_int_eq(ts_activity_superstep(a, &s, &e), TS_OK);
    }
    ck_assert_int_eq(ts_activity_finish(a, 100, &e), TS_OK);
    ts_viz_image img = {0};
    ck_assert_int_eq(ts_viz_render_summary(&img, a, NULL, &e), TS_OK);
    for (uint32_t u = 0; u < 3; u++)
        ck_assert(is_rgb(unit_pix(&img, a, u), ts_viz_state_rgb[TS_ACT_COMPUTE]));
    for (uint32_t u = 3; u < 5; u++)
        ck_assert(is_rgb(unit_pix(&img, a, u), ts_viz_state_rgb[TS_ACT_NETWORK]));
    const uint8_t *p = unit_pix(&img, a, 5); /* waiting: orange, dimmed (no work) */
    ck_assert(p[0] > p[1] && p[1] > p[2] && p[0] < ts_viz_state_rgb[TS_ACT_SYNC][0]);
    for (uint32_t u = 6; u < 8; u++)
        ck_assert(is_rgb(unit_pix(&img, a, u), ts_viz_state_rgb[TS_ACT_IDLE]));
    ck_assert_uint_eq(count_bars(&img, a), 5);
    /* each bar is compute at the bottom, sync at the top */
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ck_assert(is_rgb(pix(&img, g.tl_x + 2, g.tl_y + g.tl_h - 1), ts_viz_state_rgb[TS_ACT_COMPUTE]));
    ck_assert(is_rgb(pix(&img, g.tl_x + 2, g.tl_y), ts_viz_state_rgb[TS_ACT_SYNC]));
    /* the legend starts with the compute colour */
    ck_assert(is_rgb(pix(&img, 4 + 3, g.legend_y + 3), ts_viz_state_rgb[TS_ACT_COMPUTE]));
    ck_assert_uint_eq(g.info_y + 7 + 4, img.h);
    /* the heat scale in the legend ends in the full compute colour: its last column and the
     * compute square on the legend's middle row */
    unsigned full = 0;
    for (uint32_t x = 0; x < img.w; x++)
        full += is_rgb(pix(&img, x, g.legend_y + 3), ts_viz_state_rgb[TS_ACT_COMPUTE]);
    ck_assert_uint_eq(full, 8);
    /* the cycle axis: 100 cycles of supersteps, a tick every 20 cycles and none between */
    for (uint64_t c = 0; c <= 80; c += 20)
        ck_assert_msg(!is_rgb(pix(&img, g.tl_x + (uint32_t)(g.tl_w * c / 100), g.axis_y), ts_viz_bg), "no tick at %d",
                      (int)c);
    ck_assert(is_rgb(pix(&img, g.tl_x + g.tl_w / 10, g.axis_y), ts_viz_bg));
    /* no column labels given: the column numbers, "0" under the first column */
    unsigned lab_ink = 0;
    for (uint32_t y = g.lab_y; y < g.lab_y + 7; y++)
        for (uint32_t x = g.map_x; x < g.map_x + g.cell; x++)
            lab_ink += !is_rgb(pix(&img, x, y), ts_viz_bg);
    ck_assert_uint_gt(lab_ink, 5);
    /* ... and the row numbers left of the map, "0" beside the first row */
    ck_assert_uint_gt(g.row_lab, 0);
    ck_assert_uint_ge(g.map_x, g.row_lab);
    unsigned row_ink = 0;
    for (uint32_t y = g.map_y; y < g.map_y + g.cell; y++)
        for (uint32_t x = g.map_x - g.row_lab; x < g.map_x; x++)
            row_ink += !is_rgb(pix(&img, x, y), ts_viz_bg);
    ck_assert_uint_gt(row_ink, 5);
    /* no title given: an empty title line; a title: ink there */
    unsigned ink = 0;
    for (uint32_t y = g.title_y; y < g.title_y + 7; y++)
        for (uint32_t x = 0; x < img.w; x++)
            ink += !is_rgb(pix(&img, x, y), ts_viz_bg);
    ck_assert_uint_eq(ink, 0);
    ts_activity_set_title(a, "matmul on ipu_mk1");
    ck_assert_str_eq(ts_activity_title(a), "matmul on ipu_mk1");
    ck_assert_int_eq(ts_viz_render_summary(&img, a, NULL, &e), TS_OK);
    for (uint32_t y = g.title_y; y < g.title_y + 7; y++)
        for (uint32_t x = 0; x < img.w; x++)
            ink += !is_rgb(pix(&img, x, y), ts_viz_bg);
    ck_assert_uint_gt(ink, 50);
    ts_viz_image_free(&img);
    ts_activity_destroy(a);
    ts_buf_free(&r.bytes);
    ts_err_free(&e);
}
END_TEST

START_TEST(many_supersteps_fit)
{
    ts_activity *a = make(100, NULL, 1);
    ts_err e;
    ts_err_init(&e);
    for (int k = 0; k < 1000; k++) {
        ts_act_superstep s = {(uint64_t)k * 3, 1 + (uint64_t)(k % 7 == 0) * 500, 1, 1};
        ck_assert_int_eq(ts_activity_superstep(a, &s, &e), TS_OK);
    }
    ts_viz_image img = {0};
    ck_assert_int_eq(ts_viz_render_summary(&img, a, NULL, &e), TS_OK);
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ck_assert_uint_eq(count_bars(&img, a), g.tl_w / 2); /* the latest that fit, in 2-pixel slots */
    ts_viz_image_free(&img);
    ts_activity_destroy(a);
    ts_err_free(&e);
}
END_TEST

START_TEST(font)
{
    const char *all = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ :.%-/=_,()+<>[]";
    for (const char *c = all; *c; c++)
        ck_assert_msg(ts_viz_glyph(*c) != NULL, "no glyph for '%c'", *c);
    ck_assert_ptr_eq(ts_viz_glyph('q'), ts_viz_glyph('Q'));
    ck_assert_ptr_null(ts_viz_glyph('#'));
    /* every glyph but space is distinct and lights something */
    for (const char *c = all; *c; c++)
        for (const char *d = c + 1; *d; d++)
            ck_assert_msg(memcmp(ts_viz_glyph(*c), ts_viz_glyph(*d), 7), "'%c' and '%c' look alike", *c, *d);
    ts_viz_image img = {40, 10, ts_calloc(40 * 10, 4)};
    const uint8_t white[3] = {255, 255, 255};
    ck_assert_uint_eq(ts_viz_text(&img, 0, 0, 1, white, "1"), 6);
    unsigned lit = 0, inside = 0;
    for (uint32_t y = 0; y < 10; y++)
        for (uint32_t x = 0; x < 40; x++) {
            bool ink = pix(&img, x, y)[0] != 0;
            lit += ink;
            inside += ink && x < 6 && y < 8;
        }
#if TS_HAVE_CAIRO
    /* the outline font, anti-aliased: ink in the character's cell, most of it at the capitals' height */
    ck_assert_uint_gt(inside, 5);
    ck_assert_uint_ge(inside * 10, lit * 9);
#else
    ck_assert_uint_eq(lit, 10); /* the '1': 1 + 2 + 1 + 1 + 1 + 1 + 3 pixels */
    ck_assert_uint_eq(inside, 10);
#endif
    ts_viz_text(&img, 36, 8, 1, white, "88"); /* clipped, not written outside */
    ts_viz_image_free(&img);
}
END_TEST

/* ---- the IPU ---- */

/* Tiles 0-3 of ipu_small16 run a ring: supersteps of worker compute, a sync and an exchange of 16
 * words to the next tile; tiles 4-15 have no program. */
static char *ring_program(void)
{
    static const char body[] =
        "    get $m10, 0\n    addi $m12, $m10, 1\n    andi $m12, $m12, 3\n    addi $m14, $m10, 3\n"
        "    andi $m14, $m14, 3\n    setzi $m15, 2\nstep:\n    setzi $m1, 0\n    runall work, $m1\n"
        "    sync 0\n    sync 1\n    setzi $m2, 0x800\n    recv $m2, $m14, 16\n    setzi $m3, 0x400\n"
        "    send $m3, $m12, 16\n    rxwait\n    brnzdec $m15, step\n    sync 1\n    halt\n"
        "work:\n    rpti 50, 1\n    nop\n    exit\n";
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, ".arch ipu\n");
    for (int t = 0; t < 4; t++)
        ts_buf_printf(&b, ".stream tile %d\n%s", t, body);
    return b.data;
}

/* ipu_small16 and the ring program assembled for it (the caller frees both). */
static void ring_setup(ts_config **cfg, ts_program **p, ts_err *e)
{
    char *text = ring_program();
    const ts_family *fam = ts_family_find("ipu");
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    *cfg = NULL;
    *p = NULL;
    ck_assert_int_eq(ts_config_load(cfg, "ipu_small16", &co, e), TS_OK);
    ck_assert_int_eq(ts_asm(p, "test.s", text, strlen(text), fam->isa, e), TS_OK);
    ts_free(text);
}

typedef struct ipu_out {
    rec r;
    ts_activity *a;
    uint64_t cycles, supersteps;
} ipu_out;

static void run_ipu(const char *config, const char *text, bool lockstep, int threads, uint64_t window,
                    ipu_out *o)
{
    memset(o, 0, sizeof *o);
    o->r.bytes = (ts_buf)TS_BUF_INIT;
    o->r.fail_at = -1;
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find("ipu");
    ck_assert_ptr_nonnull(fam);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    ck_assert_int_eq(ts_config_load(&cfg, config, &co, &e), TS_OK);
    ts_program *p = NULL;
    ck_assert_msg(ts_asm(&p, "test.s", text, strlen(text), fam->isa, &e) == TS_OK, "%s", e.msg);
    ck_assert_int_eq(ts_activity_create(&o->a, window, on_frame, &o->r, &e), TS_OK);
    ts_run_opts ro = {.lockstep = lockstep, .threads = threads, .activity = o->a};
    ts_results res;
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e) == TS_OK, "%s", e.msg);
    o->cycles = res.cycles;
    o->supersteps = ts_stats_find(res.stats, "supersteps.count")->u;
    ts_results_free(&res);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}

static void ipu_out_free(ipu_out *o)
{
    ts_activity_destroy(o->a);
    ts_buf_free(&o->r.bytes);
}

START_TEST(ipu_fast_equals_lockstep)
{
    char *text = ring_program();
    ipu_out f, l, t;
    run_ipu("ipu_small16", text, false, 1, 97, &f);
    run_ipu("ipu_small16", text, true, 1, 97, &l);
    run_ipu("ipu_small16", text, false, 3, 97, &t);
    ck_assert_uint_eq(f.r.bad_sums, 0);
    ck_assert_uint_eq(f.r.frames, (f.cycles + 96) / 97);
    ck_assert_uint_eq(ts_activity_cycles(f.a), f.cycles);
    ck_assert_uint_eq(f.r.bytes.len, l.r.bytes.len);
    ck_assert(!memcmp(f.r.bytes.data, l.r.bytes.data, f.r.bytes.len));
    ck_assert_uint_eq(f.r.bytes.len, t.r.bytes.len);
    ck_assert(!memcmp(f.r.bytes.data, t.r.bytes.data, f.r.bytes.len));
    /* the columns are labelled with their top tile's number */
    uint32_t cx, cy;
    ts_activity_pos(f.a, 0, &cx, &cy);
    ck_assert_str_eq(ts_activity_column_label(f.a, cx), "0");
    /* 4 tiles send 16 words in each of 3 supersteps */
    ck_assert_uint_eq(ts_activity_total_bytes(f.a), 4 * 3 * 64);
    /* idle tiles are idle all the time; working tiles compute most, then exchange and sync */
    for (uint32_t u = 4; u < 16; u++)
        ck_assert_uint_eq(ts_activity_total(f.a, u, TS_ACT_IDLE), f.cycles);
    for (uint32_t u = 0; u < 4; u++) {
        ck_assert_uint_gt(ts_activity_total(f.a, u, TS_ACT_COMPUTE), ts_activity_total(f.a, u, TS_ACT_SYNC));
        ck_assert_uint_gt(ts_activity_total(f.a, u, TS_ACT_NETWORK), 0);
        ck_assert_uint_gt(ts_activity_total(f.a, u, TS_ACT_SYNC), 0);
    }
    size_t nss;
    ts_activity_supersteps(f.a, &nss);
    ck_assert_uint_eq(nss, f.supersteps);
    ipu_out_free(&f);
    ipu_out_free(&l);
    ipu_out_free(&t);
    ts_free(text);
}
END_TEST

START_TEST(ipu_default_fast_equals_lockstep)
{
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find("ipu_default", &text, &len), 0);
    char *s = ts_strndup(text, len);
    ipu_out f, l;
    run_ipu("ipu_mk1", s, false, 1, 250, &f);
    run_ipu("ipu_mk1", s, true, 1, 250, &l);
    ck_assert_uint_eq(f.r.bad_sums, 0);
    ck_assert_uint_gt(f.r.frames, 5);
    ck_assert_uint_eq(f.r.bytes.len, l.r.bytes.len);
    ck_assert(!memcmp(f.r.bytes.data, l.r.bytes.data, f.r.bytes.len));
    uint32_t gw, gh;
    ts_activity_grid(f.a, &gw, &gh);
    ck_assert_uint_eq(gw, 64 + 15); /* 16 islands of 4 columns, one empty column between them */
    ck_assert_uint_eq(gh, 19);
    ck_assert_str_eq(ts_activity_layout_name(f.a), "ipu columns");
    uint32_t x, y;
    ts_activity_pos(f.a, 19 * 4, &x, &y); /* the first tile of the second island */
    ck_assert_uint_eq(x, 5);
    ck_assert_uint_eq(y, 0);
    ipu_out_free(&f);
    ipu_out_free(&l);
    ts_free(s);
}
END_TEST

/* Frames come inside supersteps, as their windows complete, not all at the superstep's sync: when
 * a frame arrives, no superstep recorded so far has its sync after the frame's window (a frame
 * made at the sync would see its own superstep recorded). Each frame's superstep count is the
 * supersteps that ended at or before its window. Supersteps of the ring program span several
 * windows of 97 cycles. */
typedef struct ss_seen {
    uint64_t end[256], count[256];
    unsigned n, late;
} ss_seen;

static ts_status note_supersteps(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    ss_seen *s = ud;
    (void)err;
    size_t nss;
    const ts_act_superstep *ss = ts_activity_supersteps(a, &nss);
    for (size_t j = 0; j < nss; j++)
        s->late += ss[j].start + ss[j].compute + ss[j].exchange > f->start + f->cycles;
    if (s->n < 256) {
        s->end[s->n] = f->start + f->cycles;
        s->count[s->n++] = f->supersteps;
    }
    return TS_OK;
}

START_TEST(ipu_frames_inside_supersteps)
{
    for (int mode = 0; mode < 3; mode++) { /* fast, lockstep, fast on 3 threads */
        ts_err e;
        ts_err_init(&e);
        const ts_family *fam = ts_family_find("ipu");
        ts_config *cfg;
        ts_program *p;
        ring_setup(&cfg, &p, &e);
        ss_seen s = {0};
        ts_activity *a = NULL;
        ck_assert_int_eq(ts_activity_create(&a, 97, note_supersteps, &s, &e), TS_OK);
        ts_run_opts ro = {.activity = a, .lockstep = mode == 1, .threads = mode == 2 ? 3 : 1};
        ts_results res;
        ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e) == TS_OK, "%s", e.msg);
        size_t nss;
        const ts_act_superstep *ss = ts_activity_supersteps(a, &nss);
        ck_assert_uint_ge(nss, 4);
        ck_assert_uint_gt(s.n, 2 * nss);
        ck_assert_uint_eq(s.late, 0);
        for (unsigned k = 0; k < s.n; k++) {
            uint64_t ended = 0;
            for (size_t j = 0; j < nss; j++)
                ended += ss[j].start + ss[j].compute + ss[j].exchange + ss[j].sync <= s.end[k];
            ck_assert_uint_eq(s.count[k], ended);
        }
        ts_results_free(&res);
        ts_activity_destroy(a);
        ts_program_destroy(p);
        ts_config_destroy(cfg);
        ts_err_free(&e);
    }
}
END_TEST

/* Frames of the ring program: active tiles in the compute colour, idle ones in the idle colour,
 * as many timeline bars as supersteps. */
typedef struct shots {
    ts_viz_image img;
    unsigned frames, green_ok, idle_ok, bars_ok;
} shots;

static ts_status shoot(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    shots *s = ud;
    ts_status rc = ts_viz_render_frame(&s->img, a, f, NULL, err);
    if (rc != TS_OK)
        return rc;
    s->frames++;
    bool green = true, idle = true;
    for (uint32_t u = 0; u < f->nunits; u++) {
        const uint8_t *p = unit_pix(&s->img, a, u);
        uint8_t want[3];
        uint64_t cnt[TS_ACT_NSTATES];
        for (int k = 0; k < TS_ACT_NSTATES; k++)
            cnt[k] = f->state[k][u];
        ts_viz_unit_rgb(cnt, want);
        if (u < 4 && f->state[TS_ACT_COMPUTE][u] == f->cycles)
            green &= is_rgb(p, ts_viz_state_rgb[TS_ACT_COMPUTE]);
        if (u >= 4)
            idle &= is_rgb(p, ts_viz_state_rgb[TS_ACT_IDLE]);
        green &= is_rgb(p, want);
    }
    s->green_ok += green;
    s->idle_ok += idle;
    s->bars_ok += count_bars(&s->img, a) == f->supersteps;
    return TS_OK;
}

START_TEST(ipu_frames_by_pixels)
{
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find("ipu");
    ts_config *cfg;
    ts_program *p;
    ring_setup(&cfg, &p, &e);
    shots s = {0};
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, 50, shoot, &s, &e), TS_OK);
    ts_run_opts ro = {.activity = a};
    ts_results res;
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e) == TS_OK, "%s", e.msg);
    ck_assert_uint_gt(s.frames, 10);
    ck_assert_uint_eq(s.green_ok, s.frames);
    ck_assert_uint_eq(s.idle_ok, s.frames);
    ck_assert_uint_eq(s.bars_ok, s.frames);
    /* the summary: tiles 0-3 mostly computing (green hue), the rest idle, one bar per superstep */
    ts_viz_image img = {0};
    ck_assert_int_eq(ts_viz_render_summary(&img, a, NULL, &e), TS_OK);
    for (uint32_t u = 0; u < 16; u++) {
        const uint8_t *q = unit_pix(&img, a, u);
        if (u < 4)
            ck_assert(q[1] > q[0] && q[1] > q[2]);
        else
            ck_assert(is_rgb(q, ts_viz_state_rgb[TS_ACT_IDLE]));
    }
    ck_assert_uint_eq(count_bars(&img, a), ts_stats_find(res.stats, "supersteps.count")->u);
#if TS_HAVE_PNG
    /* PNG round trip */
    char path[] = "/tmp/ts_viz_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(ts_viz_png_write(&img, path, &e), TS_OK);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    ck_assert(png_image_begin_read_from_file(&pi, path));
    pi.format = PNG_FORMAT_RGBA;
    ck_assert_uint_eq(pi.width, img.w);
    ck_assert_uint_eq(pi.height, img.h);
    uint8_t *back = malloc(PNG_IMAGE_SIZE(pi));
    ck_assert(png_image_finish_read(&pi, NULL, back, 0, NULL));
    ck_assert(!memcmp(back, img.px, (size_t)img.w * img.h * 4));
    free(back);
    unlink(path);
#else
    ck_assert_int_eq(ts_viz_png_write(&img, "/tmp/x.png", &e), TS_EINPUT);
#endif
    ts_viz_image_free(&img);
    ts_viz_image_free(&s.img);
    ts_results_free(&res);
    ts_activity_destroy(a);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* A frame callback that fails stops the run with its error. */
START_TEST(ipu_frame_error_stops_run)
{
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find("ipu");
    ts_config *cfg;
    ts_program *p;
    ring_setup(&cfg, &p, &e);
    rec r = {.bytes = TS_BUF_INIT, .fail_at = 2};
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, 50, on_frame, &r, &e), TS_OK);
    ts_run_opts ro = {.activity = a};
    ts_results res;
    ck_assert_int_eq(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e), TS_EIO);
    ck_assert_str_eq(e.msg, "frame 2 refused");
    ts_activity_destroy(a);
    ts_buf_free(&r.bytes);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* ---- every family: frames by pixel statistics, identical in every mode ---- */

/* Checks on every frame: each unit drawn in the colour of its counts; a unit that did nothing is
 * the idle colour, one that worked is not; a unit computing the whole window is pure green. */
typedef struct family_shots {
    rec r;
    ts_viz_image img;
    unsigned frames, bad;
    uint64_t active, idle; /* unit-frames seen working / doing nothing */
} family_shots;

static ts_status family_shoot(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    family_shots *s = ud;
    ts_status rc = on_frame(&s->r, a, f, err);
    if (rc == TS_OK)
        rc = ts_viz_render_frame(&s->img, a, f, NULL, err);
    if (rc != TS_OK)
        return rc;
    s->frames++;
    for (uint32_t u = 0; u < f->nunits; u++) {
        uint64_t cnt[TS_ACT_NSTATES], work = 0;
        for (int k = 0; k < TS_ACT_NSTATES; k++)
            cnt[k] = f->state[k][u];
        work = cnt[TS_ACT_COMPUTE] + cnt[TS_ACT_NETWORK] + cnt[TS_ACT_MEMORY];
        const uint8_t *p = unit_pix(&s->img, a, u);
        uint8_t want[3];
        ts_viz_unit_rgb(cnt, want);
        bool idle_rgb = is_rgb(p, ts_viz_state_rgb[TS_ACT_IDLE]);
        s->bad += !is_rgb(p, want);
        if (work) {
            s->active++;
            s->bad += idle_rgb;
        } else if (cnt[TS_ACT_IDLE] == f->cycles) {
            s->idle++;
            s->bad += !idle_rgb;
        }
        if (cnt[TS_ACT_COMPUTE] == f->cycles)
            s->bad += !is_rgb(p, ts_viz_state_rgb[TS_ACT_COMPUTE]);
    }
    return TS_OK;
}

typedef struct fam_run {
    family_shots s;
    ts_activity *a;
    uint64_t cycles;
} fam_run;

static void run_family(const char *family, const char *config, const char *const *sets, size_t nsets,
                       const ts_program *p, bool lockstep, int threads, uint64_t window, fam_run *o)
{
    memset(o, 0, sizeof *o);
    o->s.r.bytes = (ts_buf)TS_BUF_INIT;
    o->s.r.fail_at = -1;
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find(family);
    ck_assert_ptr_nonnull(fam);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find, .sets = sets, .nsets = nsets};
    ts_config *cfg = NULL;
    ck_assert_msg(ts_config_load(&cfg, config, &co, &e) == TS_OK, "%s", e.msg);
    ck_assert_int_eq(ts_activity_create(&o->a, window, family_shoot, &o->s, &e), TS_OK);
    ts_run_opts ro = {.lockstep = lockstep, .threads = threads, .activity = o->a};
    ts_results res;
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e) == TS_OK, "%s", e.msg);
    o->cycles = res.cycles;
    ts_results_free(&res);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}

static void fam_run_free(fam_run *o)
{
    ts_activity_destroy(o->a);
    ts_buf_free(&o->s.r.bytes);
    ts_viz_image_free(&o->s.img);
}

static void same_frames(const fam_run *x, const fam_run *y)
{
    ck_assert_uint_eq(x->s.r.bytes.len, y->s.r.bytes.len);
    ck_assert(!memcmp(x->s.r.bytes.data, y->s.r.bytes.data, x->s.r.bytes.len));
}

static ts_program *builtin_program(const char *family, const char *name)
{
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find(name, &text, &len), 0);
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ck_assert_msg(ts_asm(&p, name, text, len, ts_family_find(family)->isa, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    return p;
}

/* The TSP's default workload (MEM -> MXM -> VXM -> MEM): the slices it uses are drawn working,
 * the others idle; MEM slices show stream traffic, the MXM and VXM compute. */
START_TEST(tsp_frames_by_pixels)
{
    ts_program *p = builtin_program("tsp", "tsp_default");
    fam_run f, l, t;
    run_family("tsp", "tsp_v1", NULL, 0, p, false, 1, 20, &f);
    run_family("tsp", "tsp_v1", NULL, 0, p, true, 1, 20, &l);
    run_family("tsp", "tsp_v1", NULL, 0, p, false, 3, 20, &t);
    ck_assert_uint_eq(f.s.r.bad_sums, 0);
    ck_assert_uint_eq(f.s.frames, (f.cycles + 19) / 20);
    ck_assert_uint_eq(f.s.bad, 0);
    ck_assert_uint_gt(f.s.active, 100);
    ck_assert_uint_gt(f.s.idle, f.s.active);
    same_frames(&f, &l);
    same_frames(&f, &t);
    ck_assert_str_eq(ts_activity_layout_name(f.a), "tsp superlanes");
    uint32_t gw, gh, nmem = 0, nwork = 0;
    ts_activity_grid(f.a, &gw, &gh);
    /* every column labelled with its slice's type and hemisphere: one VXM, MEM on both sides */
    unsigned nvxm = 0, nmemw = 0, nmeme = 0;
    for (uint32_t x = 0; x < gw; x++) {
        const char *lab = ts_activity_column_label(f.a, x);
        ck_assert_ptr_nonnull(lab);
        nvxm += !strcmp(lab, "VXM");
        nmemw += !strcmp(lab, "MEM W");
        nmeme += !strcmp(lab, "MEM E");
    }
    ck_assert_uint_eq(nvxm, 1);
    ck_assert_uint_gt(nmemw, 1);
    ck_assert_uint_eq(nmemw, nmeme);
    ck_assert_uint_eq(gh, 20); /* superlanes */
    for (uint32_t u = 0; u < ts_activity_nunits(f.a); u++) {
        nmem += ts_activity_total(f.a, u, TS_ACT_NETWORK) > 0;
        nwork += ts_activity_total(f.a, u, TS_ACT_COMPUTE) > 0;
    }
    ck_assert_uint_gt(nmem, 0);
    ck_assert_uint_gt(nwork, 0);
    ck_assert_uint_gt(ts_activity_total_bytes(f.a), 0);
    /* every superlane of a working slice works: the instruction sweeps them all */
    for (uint32_t u = 0; u < ts_activity_nunits(f.a); u++) {
        uint32_t first = u - u % 20;
        ck_assert_uint_eq(ts_activity_total(f.a, u, TS_ACT_IDLE) == f.cycles,
                          ts_activity_total(f.a, first, TS_ACT_IDLE) == f.cycles);
    }
    fam_run_free(&f);
    fam_run_free(&l);
    fam_run_free(&t);
    ts_program_destroy(p);
}
END_TEST

/* Queues parked at a sync put their slices' superlanes in sync until the release; the release is a
 * step of the timeline (queue 0 parks at 0, queue 8 at 10, queue 30 notifies at 3: release at 38). */
START_TEST(tsp_sync_is_sync)
{
    static const char text[] = ".arch tsp\n"
                               ".stream queue 0\n  sync\n  nop 1\n"
                               ".stream queue 8\n  nop 10\n  sync\n  nop 1\n"
                               ".stream queue 30\n  nop 3\n  notify\n";
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_asm(&p, "sync.s", text, strlen(text), ts_family_find("tsp")->isa, &e), TS_OK);
    fam_run f, l;
    run_family("tsp", "tsp_small", NULL, 0, p, false, 1, 16, &f);
    run_family("tsp", "tsp_small", NULL, 0, p, true, 1, 16, &l);
    same_frames(&f, &l);
    ck_assert_uint_eq(f.s.r.bad_sums, 0);
    ck_assert_uint_eq(f.s.bad, 0);
    uint32_t gw, gh, n38 = 0, n28 = 0;
    ts_activity_grid(f.a, &gw, &gh);
    for (uint32_t u = 0; u < ts_activity_nunits(f.a); u++) {
        uint64_t sy = ts_activity_total(f.a, u, TS_ACT_SYNC);
        n38 += sy == 38;
        n28 += sy == 28;
        ck_assert(sy == 0 || sy == 38 || sy == 28);
    }
    ck_assert_uint_eq(n38, gh); /* every superlane of queue 0's slice */
    ck_assert_uint_eq(n28, gh); /* and of queue 8's */
    size_t nss;
    const ts_act_superstep *ss = ts_activity_supersteps(f.a, &nss);
    ck_assert_uint_eq(nss, 1);
    ck_assert_uint_eq(ss[0].start, 0);
    ck_assert_uint_eq(ss[0].compute, 0);
    ck_assert_uint_eq(ss[0].sync, 38);
    fam_run_free(&f);
    fam_run_free(&l);
    ts_program_destroy(p);
    ts_err_free(&e);
}
END_TEST

/* A radius-1 stencil on the top 16 x 6 PEs of a 16 x 16 mesh: frames the same with 1, 2 and 3
 * threads and in lockstep; the program's PEs drawn working, the 10 rows below idle. */
START_TEST(wse_frames_by_pixels)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_stencil_program(&p, 16, 6, 8, 1, 3, true, &e), TS_OK);
    static const char *const sets[] = {"mesh.width=16", "mesh.height=16"};
    fam_run f, t2, t3, l;
    run_family("wse", "wse_32x32", sets, 2, p, false, 1, 50, &f);
    run_family("wse", "wse_32x32", sets, 2, p, false, 2, 50, &t2);
    run_family("wse", "wse_32x32", sets, 2, p, false, 3, 50, &t3);
    run_family("wse", "wse_32x32", sets, 2, p, true, 1, 50, &l);
    ck_assert_uint_eq(f.s.r.bad_sums, 0);
    ck_assert_uint_gt(f.s.frames, 3);
    ck_assert_uint_eq(f.s.frames, (f.cycles + 49) / 50);
    ck_assert_uint_eq(f.s.bad, 0);
    same_frames(&f, &t2);
    same_frames(&f, &t3);
    same_frames(&f, &l);
    ck_assert_str_eq(ts_activity_layout_name(f.a), "wse mesh");
    for (uint32_t u = 0; u < 256; u++) {
        uint64_t work = ts_activity_total(f.a, u, TS_ACT_COMPUTE) + ts_activity_total(f.a, u, TS_ACT_NETWORK);
        if (u < 16 * 6)
            ck_assert_msg(work > 0, "PE %u did nothing", u);
        else
            ck_assert_uint_eq(ts_activity_total(f.a, u, TS_ACT_IDLE), f.cycles);
    }
    ck_assert_uint_gt(ts_activity_total_bytes(f.a), 0);
    /* the summary: the program's rows have the hue of work, the rest is idle grey */
    ts_viz_image img = {0};
    ck_assert_int_eq(ts_viz_render_summary(&img, f.a, NULL, &e), TS_OK);
    for (uint32_t u = 0; u < 256; u++)
        ck_assert(is_rgb(unit_pix(&img, f.a, u), ts_viz_state_rgb[TS_ACT_IDLE]) == (u >= 16 * 6));
    ts_viz_image_free(&img);
    fam_run_free(&f);
    fam_run_free(&t2);
    fam_run_free(&t3);
    fam_run_free(&l);
    ts_program_destroy(p);
    ts_err_free(&e);
}
END_TEST

/* Tiles asleep while blocked or while a vector op runs alone count their cycles late: the frames
 * still equal lockstep's and those of 2 and 3 threads, with windows (7 cycles) much shorter than
 * the sleeps. */
START_TEST(wse_frames_sleepers)
{
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    const char *src = WT_SLEEPERS_PROGRAM;
    ck_assert_int_eq(ts_asm(&p, "sleepers.s", src, strlen(src), &ts_wse_isa, &e), TS_OK);
    static const char *const sets[] = {"mesh.width=2", "mesh.height=2"};
    fam_run f, t2, t3, l;
    run_family("wse", "wse_32x32", sets, 2, p, false, 1, 7, &f);
    run_family("wse", "wse_32x32", sets, 2, p, false, 2, 7, &t2);
    run_family("wse", "wse_32x32", sets, 2, p, false, 3, 7, &t3);
    run_family("wse", "wse_32x32", sets, 2, p, true, 1, 7, &l);
    ck_assert_uint_eq(f.s.r.bad_sums, 0);
    ck_assert_uint_eq(f.s.frames, (f.cycles + 6) / 7);
    ck_assert_uint_eq(f.cycles, l.cycles);
    same_frames(&f, &t2);
    same_frames(&f, &t3);
    same_frames(&f, &l);
    fam_run_free(&f);
    fam_run_free(&t2);
    fam_run_free(&t3);
    fam_run_free(&l);
    ts_program_destroy(p);
    ts_err_free(&e);
}
END_TEST

/* A wafer-sized layout (750 x 994 cells) is drawn one pixel per 2 x 2 block; zooming in shows
 * one cell per pixel and more. */
START_TEST(big_layout_aggregates)
{
    const uint32_t W = 750, H = 994, n = W * H;
    ts_err e;
    ts_err_init(&e);
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, 10, NULL, NULL, &e), TS_OK);
    uint32_t *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (uint32_t u = 0; u < n; u++) {
        x[u] = u % W;
        y[u] = u / W;
    }
    ck_assert_int_eq(ts_activity_layout(a, "mesh", n, W, H, x, y, &e), TS_OK);
    free(x);
    free(y);
    /* one working PE at (101, 201) and a working 8 x 8 square at (400..407, 600..607) */
    ts_activity_span(a, 201 * W + 101, TS_ACT_COMPUTE, 0, 10);
    for (uint32_t j = 600; j < 608; j++)
        for (uint32_t i = 400; i < 408; i++)
            ts_activity_span(a, j * W + i, TS_ACT_NETWORK, 0, 10);
    ck_assert_int_eq(ts_activity_finish(a, 10, &e), TS_OK);
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ck_assert_uint_eq(g.agg, 2);
    ck_assert_uint_eq(g.cell, 1);
    ck_assert_uint_eq(g.map_w, 375);
    ck_assert_uint_eq(g.map_h, 497);
    ts_viz_image img = {0};
    ck_assert_int_eq(ts_viz_render_summary(&img, a, NULL, &e), TS_OK);
    /* the square's blocks are pure network blue; the lone PE's block is a quarter working: green,
     * dimmed; its neighbours idle */
    uint32_t px, py;
    ck_assert(ts_viz_cell_pixel(&g, NULL, 402, 602, &px, &py));
    ck_assert(is_rgb(pix(&img, px, py), ts_viz_state_rgb[TS_ACT_NETWORK]));
    ck_assert(ts_viz_cell_pixel(&g, NULL, 101, 201, &px, &py));
    const uint8_t *q = pix(&img, px, py);
    ck_assert(q[1] > q[0] && q[1] > q[2] && q[1] < ts_viz_state_rgb[TS_ACT_COMPUTE][1]);
    ck_assert(is_rgb(pix(&img, px + 1, py), ts_viz_state_rgb[TS_ACT_IDLE]));
    unsigned blue = 0, green = 0;
    for (uint32_t j = 0; j < g.map_h; j++)
        for (uint32_t i = 0; i < g.map_w; i++) {
            const uint8_t *r = pix(&img, g.map_x + i, g.map_y + j);
            blue += is_rgb(r, ts_viz_state_rgb[TS_ACT_NETWORK]);
            green += !is_rgb(r, ts_viz_state_rgb[TS_ACT_IDLE]) && r[1] > r[2];
        }
    ck_assert_uint_eq(blue, 16); /* 8 x 8 cells in 2 x 2 blocks */
    ck_assert_uint_eq(green, 1);
    /* zoom 8 around the square: 4 pixels per cell, a gap between squares */
    ts_viz_port port = {8, 390, 590};
    ts_viz_port_clamp(a, &port);
    ck_assert_uint_eq(port.zoom, 8);
    uint32_t ppx, cells;
    ts_viz_port_scale(&g, &port, &ppx, &cells);
    ck_assert_uint_eq(ppx, 4);
    ck_assert_uint_eq(cells, 1);
    ck_assert_int_eq(ts_viz_render_summary(&img, a, &port, &e), TS_OK);
    blue = 0;
    for (uint32_t j = 0; j < g.map_h; j++)
        for (uint32_t i = 0; i < g.map_w; i++)
            blue += is_rgb(pix(&img, g.map_x + i, g.map_y + j), ts_viz_state_rgb[TS_ACT_NETWORK]);
    ck_assert_uint_eq(blue, 64 * 9); /* 3 x 3 pixels a cell */
    ck_assert(ts_viz_cell_pixel(&g, &port, 400, 600, &px, &py));
    uint32_t cx, cy;
    ck_assert(ts_viz_pixel_cell(&g, &port, px, py, &cx, &cy));
    ck_assert_uint_eq(cx, 400);
    ck_assert_uint_eq(cy, 600);
    ck_assert_uint_eq(ts_activity_unit_at(a, cx, cy), 600 * W + 400);
    ck_assert(!ts_viz_cell_pixel(&g, &port, 10, 10, &px, &py)); /* outside the port */
    /* fit to the units that worked: the box from the lone PE to the square, (100..408) x
     * (200..608) with its margin, fits at zoom 2 (a pixel a cell: 375 x 497 cells), not 4 */
    ts_viz_port_fit(a, &port);
    ck_assert_uint_eq(port.zoom, 2);
    ck_assert_uint_eq(port.x0, 100);
    ck_assert_uint_eq(port.y0, 200);
    ck_assert(ts_viz_cell_pixel(&g, &port, 101, 201, &px, &py));
    ck_assert(ts_viz_cell_pixel(&g, &port, 407, 607, &px, &py));
    /* a port far off the edge is pulled back inside */
    port = (ts_viz_port){3, 100000, 100000};
    ts_viz_port_clamp(a, &port);
    ck_assert_uint_eq(port.zoom, 2);
    ck_assert_uint_eq(port.x0 + g.map_w, W);
    ts_viz_image_free(&img);
    ts_activity_destroy(a);
    ts_err_free(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("viz");
    TCase *c = tcase_create("activity");
    tcase_add_test(c, spans_split_over_windows);
    tcase_add_test(c, ring_grows_far_ahead);
    tcase_add_test(c, callback_error_stops);
    tcase_add_test(c, out_of_memory_is_reported);
    tcase_add_test(c, bad_layout);
    suite_add_tcase(s, c);
    c = tcase_create("render");
    tcase_add_test(c, frame_colours_and_bars);
    tcase_add_test(c, many_supersteps_fit);
    tcase_add_test(c, font);
    suite_add_tcase(s, c);
    c = tcase_create("ipu");
    tcase_add_test(c, ipu_fast_equals_lockstep);
    tcase_add_test(c, ipu_default_fast_equals_lockstep);
    tcase_add_test(c, ipu_frames_inside_supersteps);
    tcase_add_test(c, ipu_frames_by_pixels);
    tcase_add_test(c, ipu_frame_error_stops_run);
    suite_add_tcase(s, c);
    c = tcase_create("families");
    tcase_add_test(c, tsp_frames_by_pixels);
    tcase_add_test(c, tsp_sync_is_sync);
    tcase_add_test(c, wse_frames_by_pixels);
    tcase_add_test(c, wse_frames_sleepers);
    tcase_add_test(c, big_layout_aggregates);
    tcase_set_timeout(c, 120);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
