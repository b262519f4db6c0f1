/* tests/viz/test_view.c — the SDL2 live view under SDL's dummy video driver, on a real run (the
 * IPU's default workload on ipu_mk1, 100-cycle windows): the frame callback queues synthetic key
 * and mouse events before each frame, checks what they did, and takes a screenshot, which must
 * show what the renderer draws. With TS_VIEW_SHOT=FILE the screenshot is also written there
 * (docs/img/view.png is made so); the TSP's and the wafer's views are shot too. */
#include <check.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <SDL.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/program.h"
#include "core/sim.h"
#include "viz/render.h"
#include "viz/view.h"

static void key(SDL_Keycode k)
{
    SDL_Event e;
    memset(&e, 0, sizeof e);
    e.type = SDL_KEYDOWN;
    e.key.keysym.sym = k;
    ck_assert_int_eq(SDL_PushEvent(&e), 1);
}

/* A mouse move (click false) or click over layout cell of unit u, as the view draws it now. */
static void mouse(const ts_view *v, const ts_activity *a, uint32_t u, bool click)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ts_viz_port port = ts_view_port(v);
    uint32_t x, y, px, py;
    ts_activity_pos(a, u, &x, &y);
    ck_assert(ts_viz_cell_pixel(&g, &port, x, y, &px, &py));
    SDL_Event e;
    memset(&e, 0, sizeof e);
    if (click) {
        e.type = SDL_MOUSEBUTTONDOWN;
        e.button.x = (int)px;
        e.button.y = (int)py;
    } else {
        e.type = SDL_MOUSEMOTION;
        e.motion.x = (int)px;
        e.motion.y = (int)py;
    }
    ck_assert_int_eq(SDL_PushEvent(&e), 1);
}

typedef struct script {
    ts_view *v;
    ts_viz_image ref;
    uint64_t frames, step_from, stepped_to, shown_at_close;
    bool checked_shot;
    char shot[64];
} script;

/* The view's screenshot now: the renderer's picture of frame f at the view's port above the info
 * line, text on the info line; also written to `keep` when it is not NULL. */
static void check_shot(script *s, const ts_activity *a, const ts_act_frame *f, const char *keep)
{
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_view_screenshot(s->v, s->shot, &e), TS_OK);
    if (keep)
        ck_assert_int_eq(ts_view_screenshot(s->v, keep, &e), TS_OK);
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    ck_assert(png_image_begin_read_from_file(&pi, s->shot));
    pi.format = PNG_FORMAT_RGBA;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(pi));
    ck_assert(png_image_finish_read(&pi, NULL, px, 0, NULL));
    /* the same map, timeline and legend as the renderer draws; the info line has text */
    ts_viz_port port = ts_view_port(s->v);
    ck_assert_int_eq(ts_viz_render_frame(&s->ref, a, f, &port, &e), TS_OK);
    ck_assert_uint_eq(pi.width, s->ref.w);
    ck_assert_uint_eq(pi.height, s->ref.h);
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    size_t row = (size_t)s->ref.w * 4;
    ck_assert(!memcmp(px, s->ref.px, (size_t)g.info_y * row));
    unsigned lit = 0;
    for (size_t i = (size_t)g.info_y * row; i < (size_t)s->ref.h * row; i += 4)
        lit += px[i] != ts_viz_bg[0] || px[i + 1] != ts_viz_bg[1];
    ck_assert_uint_gt(lit, 200);
    free(px);
    unlink(s->shot);
    s->checked_shot = true;
    ts_err_free(&e);
}

static ts_status on_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    script *s = ud;
    ts_view *v = s->v;
    uint64_t k = s->frames++;
    bool stepping = ts_view_stepping(v);
    switch (k) {
    case 0: key(SDLK_PLUS); key(SDLK_PLUS); break;         /* faster: 50 -> 25 -> 12 ms */
    case 1: key(SDLK_MINUS); break;                        /* 24 ms */
    case 2: key(SDLK_SPACE); key(SDLK_n); break;           /* pause, then one frame on */
    case 3: key(SDLK_z); key(SDLK_RIGHT); key(SDLK_n); break; /* zoom in, pan east */
    case 4: key(SDLK_x); key(SDLK_n); break;              /* zoom out */
    case 5: mouse(v, a, 100, false); key(SDLK_n); break;   /* hover tile 100 */
    case 6: mouse(v, a, 1000, true); mouse(v, a, 5, false); key(SDLK_n); break; /* pin tile 1000 */
    case 7: s->step_from = f->supersteps; key(SDLK_s); break; /* to the end of the next superstep */
    default:
        if (stepping && f->supersteps > s->step_from)
            key(SDLK_n); /* the frame the view stops at: let it go on after */
        if (!stepping && s->stepped_to && !s->shown_at_close && ts_view_paused(v))
            key(SDLK_SPACE); /* resume */
        if (!s->shown_at_close && s->stepped_to && !ts_view_paused(v) && k > 14)
            key(SDLK_q);
        break;
    }
    ts_status rc = ts_view_frame(v, a, f, err);
    if (rc != TS_OK)
        return rc;
    switch (k) {
    case 0: ck_assert_uint_eq(ts_view_delay_ms(v), 12); break;
    case 1: ck_assert_uint_eq(ts_view_delay_ms(v), 24); break;
    case 2: ck_assert(ts_view_paused(v)); break;
    case 3:
        ck_assert(ts_view_paused(v));
        ck_assert_uint_eq(ts_view_port(v).zoom, 2);
        ck_assert_uint_gt(ts_view_port(v).x0, 0);
        break;
    case 4:
        ck_assert_uint_eq(ts_view_port(v).zoom, 1);
        ck_assert_uint_eq(ts_view_port(v).x0, 0);
        break;
    case 5:
        ck_assert_uint_eq(ts_view_unit(v), 100);
        ck_assert_msg(strstr(ts_view_info(v), "UNIT 100 AT (") && strstr(ts_view_info(v), "SUP "), "%s", ts_view_info(v));
        break;
    case 6:
        ck_assert_uint_eq(ts_view_unit(v), 1000); /* the click holds it while the mouse moves on */
        ck_assert_msg(strstr(ts_view_info(v), "[UNIT 1000 AT ("), "%s", ts_view_info(v));
        check_shot(s, a, f, getenv("TS_VIEW_SHOT"));
        break;
    case 7: ck_assert(ts_view_stepping(v)); break;
    default:
        if (stepping && !ts_view_stepping(v)) { /* stopped at the end of the next superstep */
            ck_assert_uint_gt(f->supersteps, s->step_from);
            ck_assert(ts_view_paused(v));
            s->stepped_to = f->supersteps;
        }
        if (ts_view_closed(v) && !s->shown_at_close)
            s->shown_at_close = ts_view_shown(v);
        break;
    }
    return TS_OK;
}

/* The wafer's view opens zoomed to the PEs its program uses (a block layout fitted once). */
/* Then x zooms out and a right click three quarters across and down the map zooms in there. */
typedef struct wafer_seen {
    ts_view *v;
    ts_viz_port first, out, clicked;
    uint32_t cell_x, cell_y; /* the cell clicked */
    uint64_t frames;
} wafer_seen;

static ts_status on_wafer_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    wafer_seen *w = ud;
    ts_status rc = ts_view_frame(w->v, a, f, err);
    switch (w->frames++) {
    case 0:
        w->first = ts_view_port(w->v);
        key(SDLK_x);
        break;
    case 1: {
        w->out = ts_view_port(w->v);
        ts_viz_geom g;
        ts_viz_geometry(a, &g);
        /* a block three quarters across and down the map */
        uint32_t px = g.map_x + g.map_w * 3 / 4, py = g.map_y + g.map_h * 3 / 4;
        ck_assert(ts_viz_pixel_cell(&g, &w->out, px, py, &w->cell_x, &w->cell_y));
        SDL_Event e;
        memset(&e, 0, sizeof e);
        e.type = SDL_MOUSEBUTTONDOWN;
        e.button.button = SDL_BUTTON_RIGHT;
        e.button.clicks = 1;
        e.button.x = (int)px;
        e.button.y = (int)py;
        ck_assert_int_eq(SDL_PushEvent(&e), 1);
        break;
    }
    case 2:
        w->clicked = ts_view_port(w->v);
        key(SDLK_q);
        break;
    default: break;
    }
    return rc;
}

/* Run family's built-in default program on config (a built-in) with activity windows of
 * `window` cycles calling fn: the cycles it ran. */
static uint64_t run_with_frames(const char *family, const char *config, const char *program, uint64_t window,
                                ts_act_frame_fn fn, void *ud)
{
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find(family);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    ck_assert_int_eq(ts_config_load(&cfg, config, &co, &e), TS_OK);
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find(program, &text, &len), 0);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_asm(&p, program, text, len, fam->isa, &e), TS_OK);
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, window, fn, ud, &e), TS_OK);
    char title[96];
    snprintf(title, sizeof title, "%s on %s", program, config); /* as tessera run titles it */
    ts_activity_set_title(a, title);
    ts_run_opts ro = {.activity = a};
    ts_results res;
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, &res, &e) == TS_OK, "%s", e.msg);
    uint64_t cycles = res.cycles;
    ts_results_free(&res);
    ts_activity_destroy(a);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
    return cycles;
}

START_TEST(wafer_opens_on_its_program)
{
    ts_err e;
    ts_err_init(&e);
    wafer_seen w = {0};
    ck_assert_msg(ts_view_open(&w.v, "test", &e) == TS_OK, "%s", e.msg);
    run_with_frames("wse", "wse2", "wse_default", 10, on_wafer_frame, &w);
    ck_assert_uint_gt(w.frames, 0);
    ck_assert_uint_gt(w.first.zoom, 8); /* a handful of PEs of 850,000: far in */
    ck_assert_uint_ge(w.frames, 3);
    ck_assert_uint_eq(w.out.zoom * 2, w.first.zoom);
    ck_assert_uint_eq(w.clicked.zoom, w.first.zoom);
    /* the clicked cell is now in the middle: the port moved toward it, past the zoomed-out one */
    ck_assert_uint_gt(w.clicked.x0, w.out.x0);
    ck_assert_uint_gt(w.clicked.y0, w.out.y0);
    ck_assert_uint_lt(w.clicked.x0, w.cell_x);
    ck_assert_uint_lt(w.clicked.y0, w.cell_y);
    ts_view_close(w.v);
    ts_err_free(&e);
}
END_TEST

/* The TSP's and the wafer's live views: on the second frame the mouse is over a unit; the
 * screenshot holds the renderer's picture (the wafer's zoomed to its program) and the unit's
 * words on the info line. With TS_VIEW_SHOT_DIR=DIR the shots are kept there as view-tsp.png and
 * view-wse.png (docs/img/ has them). */
typedef struct family_view {
    script s;
    uint32_t unit;
    const char *name;
} family_view;

static ts_status on_family_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    family_view *w = ud;
    uint64_t k = w->s.frames++;
    if (k == 1)
        mouse(w->s.v, a, w->unit, true);
    ts_status rc = ts_view_frame(w->s.v, a, f, err);
    if (rc != TS_OK || k != 1)
        return rc;
    char keep[512];
    const char *dir = getenv("TS_VIEW_SHOT_DIR");
    if (dir)
        snprintf(keep, sizeof keep, "%s/view-%s.png", dir, w->name);
    ck_assert_uint_eq(ts_view_unit(w->s.v), w->unit);
    check_shot(&w->s, a, f, dir ? keep : NULL);
    key(SDLK_q);
    return TS_OK;
}

static void family_view_run(const char *family, const char *config, const char *program, uint64_t window,
                            uint32_t unit)
{
    ts_err e;
    ts_err_init(&e);
    family_view w = {.unit = unit, .name = family};
    snprintf(w.s.shot, sizeof w.s.shot, "/tmp/ts_view_XXXXXX");
    int fd = mkstemp(w.s.shot);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(ts_view_open(&w.s.v, "test", &e) == TS_OK, "%s", e.msg);
    run_with_frames(family, config, program, window, on_family_frame, &w);
    ck_assert(w.s.checked_shot);
    ts_view_close(w.s.v);
    ts_viz_image_free(&w.s.ref);
    ts_err_free(&e);
}

START_TEST(tsp_and_wafer_views)
{
    family_view_run("tsp", "tsp_v1", "tsp_default", 20, 40);
    family_view_run("wse", "wse2", "wse_default", 10, 0);
}
END_TEST

START_TEST(drive_a_run)
{
    ts_err e;
    ts_err_init(&e);
    script s = {0};
    snprintf(s.shot, sizeof s.shot, "/tmp/ts_view_XXXXXX");
    int fd = mkstemp(s.shot);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(ts_view_open(&s.v, "test", &e) == TS_OK, "%s", e.msg);
    uint64_t cycles = run_with_frames("ipu", "ipu_mk1", "ipu_default", 100, on_frame, &s);
    ck_assert_uint_eq(s.frames, (cycles + 99) / 100);
    ck_assert(s.checked_shot);
    ck_assert_uint_gt(s.stepped_to, 0);
    ck_assert_uint_gt(s.shown_at_close, 0);
    ck_assert(ts_view_closed(s.v));
    ck_assert_uint_eq(ts_view_shown(s.v), s.shown_at_close); /* nothing shown after q */
    ck_assert_uint_lt(s.shown_at_close, s.frames);
    ts_view_close(s.v);
    ts_view_close(NULL);
    ts_viz_image_free(&s.ref);
    ts_err_free(&e);
}
END_TEST

int main(void)
{
    setenv("SDL_VIDEODRIVER", "dummy", 0);
    Suite *s = suite_create("view");
    TCase *c = tcase_create("sdl");
    tcase_add_test(c, drive_a_run);
    tcase_add_test(c, wafer_opens_on_its_program);
    tcase_add_test(c, tsp_and_wafer_views);
    tcase_set_timeout(c, 60);
    suite_add_tcase(s, c);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
