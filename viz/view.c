/* viz/view.c — the SDL2 live window (see view.h). Drawn through the window surface, so it also
 * runs under SDL's offscreen and dummy video drivers. */
#include "viz/view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ts_build.h"

#define DELAY_START 50u
#define DELAY_MAX 2000u

#if TS_HAVE_SDL2
#include <SDL.h>

struct ts_view {
    SDL_Window *win;
    char *title; /* owned */
    uint32_t w, h, delay;
    bool paused, closed;
    uint64_t shown;
    bool to_step;        /* running to the end of superstep `step_target` */
    uint64_t step_target;
    ts_viz_port port;
    bool fitted;         /* the port was zoomed to the working units once (a block layout) */
    ts_viz_image img;    /* owned: the frame as drawn */
    int mx, my;          /* the mouse, -1 before it moves */
    uint32_t hover, pin; /* units under the mouse and clicked, UINT32_MAX for none */
    char info[256];      /* the info line */
    const ts_activity *a; /* the frame shown: borrowed for the call of ts_view_frame */
    const ts_act_frame *f;
};

ts_status ts_view_open(ts_view **out, const char *title, ts_err *err)
{
    *out = NULL;
    if (SDL_InitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS))
        return ts_err_set(err, TS_EINPUT, "cannot open the view: %s", SDL_GetError());
    /* With no display SDL falls back to a driver that shows nothing (offscreen, dummy, or the
     * console's KMSDRM): the run would go on with no window. Refused unless SDL_VIDEODRIVER asks
     * for that driver (the tests draw into the dummy one). */
    const char *drv = SDL_GetCurrentVideoDriver(), *asked = getenv("SDL_VIDEODRIVER");
    if (drv && (!asked || !*asked) &&
        (!strcmp(drv, "offscreen") || !strcmp(drv, "dummy") || !strcmp(drv, "KMSDRM") ||
         !strcmp(drv, "evdev"))) {
        SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS);
        return ts_err_set(err, TS_EINPUT,
                          "no display for the live view (DISPLAY and WAYLAND_DISPLAY are not set; SDL found "
                          "only its '%s' driver): --frames DIR or --summary-png FILE draw the run without one", drv);
    }
    ts_view *v = ts_calloc(1, sizeof *v);
    if (v)
        v->title = ts_strdup(title ? title : "tessera");
    if (!v || !v->title) {
        ts_free(v);
        SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS);
        return ts_err_set(err, TS_ENOMEM, "out of memory opening the view");
    }
    v->delay = DELAY_START;
    v->port.zoom = 1;
    v->mx = v->my = -1;
    v->hover = v->pin = UINT32_MAX;
    *out = v;
    return TS_OK;
}

static void do_close(ts_view *v)
{
    if (v->win)
        SDL_DestroyWindow(v->win);
    v->win = NULL;
    v->closed = true;
}

/* The info line: the shown unit's counts in this frame and the family's words, or the port. */
static void info_line(ts_view *v)
{
    uint32_t u = v->pin != UINT32_MAX ? v->pin : v->hover;
    v->info[0] = 0;
    if (u != UINT32_MAX && u < v->f->nunits) {
        uint32_t x, y;
        ts_activity_pos(v->a, u, &x, &y);
        /* in words: the cycles of the frame in each state it spent any in, e.g. "UNIT 100 AT (4,7):
         * COMPUTE 80 CYC, IDLE 20 CYC" ("[" before it while pinned by a click) */
        int n = snprintf(v->info, sizeof v->info, "%sUNIT %u AT (%u,%u):", v->pin != UINT32_MAX ? "[" : "", u, x, y);
        bool first = true;
        for (int s = 0; s < TS_ACT_NSTATES && n > 0 && (size_t)n < sizeof v->info; s++) {
            uint32_t c = v->f->state[s][u];
            if (!c)
                continue;
            int k = snprintf(v->info + n, sizeof v->info - (size_t)n, "%s %s %" PRIu32 " CYC", first ? "" : ",",
                             ts_act_state_name((ts_act_state)s), c);
            n = k > 0 ? n + k : n;
            first = false;
        }
        char fam[160];
        if (n > 0 && (size_t)n < sizeof v->info && ts_activity_describe(v->a, u, fam, sizeof fam) && fam[0])
            snprintf(v->info + n, sizeof v->info - (size_t)n, " %s", fam);
    } else if (v->port.zoom > 1) {
        snprintf(v->info, sizeof v->info, "ZOOM %ux AT (%u,%u)", v->port.zoom, v->port.x0, v->port.y0);
    }
}

/* Draw the current frame through the port, the info line, and show it. */
static ts_status draw(ts_view *v, ts_err *err)
{
    ts_status rc = ts_viz_render_frame(&v->img, v->a, v->f, &v->port, err);
    if (rc != TS_OK)
        return rc;
    ts_viz_geom g;
    ts_viz_geometry(v->a, &g);
    info_line(v);
    static const uint8_t info_rgb[3] = {230, 230, 120};
    ts_viz_text(&v->img, g.text_x, g.info_y, 1, info_rgb, v->info);
    if (!v->win || v->w != v->img.w || v->h != v->img.h) {
        if (v->win)
            SDL_DestroyWindow(v->win);
        v->win = SDL_CreateWindow(v->title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, (int)v->img.w,
                                  (int)v->img.h, 0);
        if (!v->win)
            return ts_err_set(err, TS_EINPUT, "cannot open the view window: %s", SDL_GetError());
        v->w = v->img.w;
        v->h = v->img.h;
    }
    SDL_Surface *dst = SDL_GetWindowSurface(v->win);
    SDL_Surface *src = SDL_CreateRGBSurfaceWithFormatFrom(v->img.px, (int)v->img.w, (int)v->img.h, 32,
                                                          (int)v->img.w * 4, SDL_PIXELFORMAT_RGBA32);
    if (!dst || !src || SDL_BlitSurface(src, NULL, dst, NULL) || SDL_UpdateWindowSurface(v->win)) {
        SDL_FreeSurface(src);
        return ts_err_set(err, TS_EINPUT, "cannot draw the view: %s", SDL_GetError());
    }
    SDL_FreeSurface(src);
    return TS_OK;
}

/* Zoom by a factor of two (in > 0) or out, putting layout cell (cx, cy) in the middle of the map. */
static void zoom_to(ts_view *v, int in, uint64_t cx, uint64_t cy)
{
    ts_viz_geom g;
    ts_viz_geometry(v->a, &g);
    uint32_t px, cells;
    v->port.zoom = in > 0 ? v->port.zoom * 2 : v->port.zoom / 2;
    if (!v->port.zoom)
        v->port.zoom = 1;
    ts_viz_port_clamp(v->a, &v->port);
    ts_viz_port_scale(&g, &v->port, &px, &cells);
    uint64_t hw = (uint64_t)g.map_w / px * cells / 2, hh = (uint64_t)g.map_h / px * cells / 2;
    v->port.x0 = cx > hw ? (uint32_t)(cx - hw) : 0;
    v->port.y0 = cy > hh ? (uint32_t)(cy - hh) : 0;
    ts_viz_port_clamp(v->a, &v->port);
}

/* Zoom by a factor of two (in > 0) or out, keeping the middle of the map where it is. */
static void zoom(ts_view *v, int in)
{
    ts_viz_geom g;
    ts_viz_geometry(v->a, &g);
    uint32_t px, cells;
    ts_viz_port_scale(&g, &v->port, &px, &cells);
    zoom_to(v, in, v->port.x0 + (uint64_t)g.map_w / px * cells / 2, v->port.y0 + (uint64_t)g.map_h / px * cells / 2);
}

/* Pan by a quarter of the map (dx, dy in -1, 0, 1). */
static void pan(ts_view *v, int dx, int dy)
{
    ts_viz_geom g;
    ts_viz_geometry(v->a, &g);
    uint32_t px, cells;
    ts_viz_port_scale(&g, &v->port, &px, &cells);
    uint32_t sx = g.map_w / px * cells / 4, sy = g.map_h / px * cells / 4;
    sx = sx ? sx : 1;
    sy = sy ? sy : 1;
    v->port.x0 = dx < 0 ? (v->port.x0 > sx ? v->port.x0 - sx : 0) : v->port.x0 + (dx > 0 ? sx : 0);
    v->port.y0 = dy < 0 ? (v->port.y0 > sy ? v->port.y0 - sy : 0) : v->port.y0 + (dy > 0 ? sy : 0);
    ts_viz_port_clamp(v->a, &v->port);
}

/* The unit under window pixel (x, y), UINT32_MAX for none. */
static uint32_t unit_under(const ts_view *v, int x, int y)
{
    ts_viz_geom g;
    ts_viz_geometry(v->a, &g);
    uint32_t cx, cy;
    if (x < 0 || y < 0 || !ts_viz_pixel_cell(&g, &v->port, (uint32_t)x, (uint32_t)y, &cx, &cy))
        return UINT32_MAX;
    return ts_activity_unit_at(v->a, cx, cy);
}

enum { EV_NONE, EV_GO, EV_REDRAW };

/* One event: EV_GO when it lets a paused view go on (resume, step or close), EV_REDRAW when the
 * picture changes. */
static int handle(ts_view *v, const SDL_Event *e)
{
    if (e->type == SDL_QUIT || (e->type == SDL_WINDOWEVENT && e->window.event == SDL_WINDOWEVENT_CLOSE)) {
        do_close(v);
        return EV_GO;
    }
    if (e->type == SDL_MOUSEMOTION) {
        v->mx = e->motion.x;
        v->my = e->motion.y;
        uint32_t u = unit_under(v, v->mx, v->my);
        if (u == v->hover)
            return EV_NONE;
        v->hover = u;
        return EV_REDRAW;
    }
    if (e->type == SDL_MOUSEBUTTONDOWN) {
        ts_viz_geom g;
        ts_viz_geometry(v->a, &g);
        uint32_t cx, cy;
        bool on = e->button.x >= 0 && e->button.y >= 0 &&
                  ts_viz_pixel_cell(&g, &v->port, (uint32_t)e->button.x, (uint32_t)e->button.y, &cx, &cy);
        if (on && (e->button.button == SDL_BUTTON_RIGHT || e->button.clicks >= 2)) {
            zoom_to(v, 1, cx, cy); /* a right or double click zooms in on that cell */
            return EV_REDRAW;
        }
        v->pin = unit_under(v, e->button.x, e->button.y);
        return EV_REDRAW;
    }
    if (e->type == SDL_MOUSEWHEEL && e->wheel.y) {
        zoom(v, e->wheel.y);
        return EV_REDRAW;
    }
    if (e->type != SDL_KEYDOWN)
        return EV_NONE;
    switch (e->key.keysym.sym) {
    case SDLK_SPACE:
        v->paused = !v->paused;
        return v->paused ? EV_NONE : EV_GO;
    case SDLK_n:
        return v->paused ? EV_GO : EV_NONE;
    case SDLK_s:
        v->to_step = true;
        v->step_target = v->f->supersteps + 1;
        return v->paused ? EV_GO : EV_NONE;
    case SDLK_PLUS:
    case SDLK_EQUALS:
    case SDLK_KP_PLUS:
        v->delay /= 2;
        return EV_NONE;
    case SDLK_MINUS:
    case SDLK_KP_MINUS:
        v->delay = v->delay ? (v->delay * 2 > DELAY_MAX ? DELAY_MAX : v->delay * 2) : 1;
        return EV_NONE;
    case SDLK_z:
        zoom(v, 1);
        return EV_REDRAW;
    case SDLK_x:
        zoom(v, -1);
        return EV_REDRAW;
    case SDLK_LEFT:
        pan(v, -1, 0);
        return EV_REDRAW;
    case SDLK_RIGHT:
        pan(v, 1, 0);
        return EV_REDRAW;
    case SDLK_UP:
        pan(v, 0, -1);
        return EV_REDRAW;
    case SDLK_DOWN:
        pan(v, 0, 1);
        return EV_REDRAW;
    case SDLK_q:
    case SDLK_ESCAPE:
        do_close(v);
        return EV_GO;
    default:
        return EV_NONE;
    }
}

ts_status ts_view_frame(ts_view *v, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    if (v->closed)
        return TS_OK;
    v->a = a;
    v->f = f;
    if (!v->fitted && v->port.zoom <= 1) { /* the wafer: open on the units that work, not a dot */
        ts_viz_geom g;
        ts_viz_geometry(a, &g);
        ts_viz_port fit;
        ts_viz_port_fit(a, &fit);
        if (g.agg > 1 && fit.zoom > 1) {
            v->port = fit;
            v->fitted = true;
        }
    }
    ts_viz_port_clamp(a, &v->port);
    ts_status rc = draw(v, err);
    if (rc != TS_OK)
        return rc;
    v->shown++;
    SDL_Event e;
    if (v->to_step) { /* running to the end of a superstep: no waiting until it is reached */
        if (f->supersteps < v->step_target) {
            bool redraw = false;
            while (!v->closed && SDL_PollEvent(&e)) /* keys pressed meanwhile (q closes) */
                redraw |= handle(v, &e) == EV_REDRAW;
            return redraw && !v->closed ? draw(v, err) : TS_OK;
        }
        v->to_step = false;
        v->paused = true;
    }
    uint32_t t0 = SDL_GetTicks();
    for (;;) {
        if (v->closed)
            return TS_OK;
        int ev = EV_NONE;
        if (v->paused) {
            if (SDL_WaitEvent(&e))
                ev = handle(v, &e);
        } else {
            uint32_t spent = SDL_GetTicks() - t0;
            if (spent >= v->delay) {
                bool redraw = false;
                while (!v->closed && SDL_PollEvent(&e)) /* events during the last wait */
                    redraw |= handle(v, &e) == EV_REDRAW;
                if (redraw && !v->closed && (rc = draw(v, err)) != TS_OK)
                    return rc;
                if (!v->paused || v->closed)
                    return TS_OK;
                continue;
            }
            if (SDL_WaitEventTimeout(&e, (int)(v->delay - spent)))
                ev = handle(v, &e);
        }
        if (ev == EV_GO && (v->paused || v->closed))
            return TS_OK;
        if (ev == EV_REDRAW && !v->closed && (rc = draw(v, err)) != TS_OK)
            return rc;
    }
}

ts_status ts_view_screenshot(const ts_view *v, const char *path, ts_err *err)
{
    SDL_Surface *s = v->win ? SDL_GetWindowSurface(v->win) : NULL;
    if (!s)
        return ts_err_set(err, TS_EINPUT, "no view window to take a picture of");
    SDL_Surface *c = SDL_ConvertSurfaceFormat(s, SDL_PIXELFORMAT_RGBA32, 0);
    if (!c)
        return ts_err_set(err, TS_EINPUT, "cannot read the view: %s", SDL_GetError());
    ts_viz_image img = {(uint32_t)c->w, (uint32_t)c->h, ts_malloc((size_t)c->w * (size_t)c->h * 4)};
    if (!img.px) {
        SDL_FreeSurface(c);
        return ts_err_set(err, TS_ENOMEM, "out of memory reading the view");
    }
    SDL_LockSurface(c);
    for (int y = 0; y < c->h; y++)
        memcpy(img.px + (size_t)y * img.w * 4, (const uint8_t *)c->pixels + (size_t)y * (size_t)c->pitch, img.w * 4);
    SDL_UnlockSurface(c);
    SDL_FreeSurface(c);
    ts_status rc = ts_viz_png_write(&img, path, err);
    ts_viz_image_free(&img);
    return rc;
}

void ts_view_close(ts_view *v)
{
    if (!v)
        return;
    if (v->win)
        SDL_DestroyWindow(v->win);
    ts_viz_image_free(&v->img);
    ts_free(v->title);
    ts_free(v);
    SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS);
}

bool ts_view_paused(const ts_view *v) { return v->paused; }
bool ts_view_closed(const ts_view *v) { return v->closed; }
uint32_t ts_view_delay_ms(const ts_view *v) { return v->delay; }
uint64_t ts_view_shown(const ts_view *v) { return v->shown; }
bool ts_view_stepping(const ts_view *v) { return v->to_step; }
ts_viz_port ts_view_port(const ts_view *v) { return v->port; }
uint32_t ts_view_unit(const ts_view *v) { return v->pin != UINT32_MAX ? v->pin : v->hover; }
const char *ts_view_info(const ts_view *v) { return v->info; }

#else

struct ts_view {
    int unused;
};

ts_status ts_view_open(ts_view **out, const char *title, ts_err *err)
{
    (void)title;
    *out = NULL;
    return ts_err_set(err, TS_EINPUT, "this build has no SDL2: no live view (use --frames)");
}

ts_status ts_view_frame(ts_view *v, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    (void)v;
    (void)a;
    (void)f;
    (void)err;
    return TS_OK;
}

ts_status ts_view_screenshot(const ts_view *v, const char *path, ts_err *err)
{
    (void)v;
    (void)path;
    return ts_err_set(err, TS_EINPUT, "this build has no SDL2: no live view");
}

void ts_view_close(ts_view *v) { (void)v; }
bool ts_view_paused(const ts_view *v) { (void)v; return false; }
bool ts_view_closed(const ts_view *v) { (void)v; return true; }
uint32_t ts_view_delay_ms(const ts_view *v) { (void)v; return 0; }
uint64_t ts_view_shown(const ts_view *v) { (void)v; return 0; }
bool ts_view_stepping(const ts_view *v) { (void)v; return false; }
ts_viz_port ts_view_port(const ts_view *v) { (void)v; return (ts_viz_port){1, 0, 0}; }
uint32_t ts_view_unit(const ts_view *v) { (void)v; return UINT32_MAX; }
const char *ts_view_info(const ts_view *v) { (void)v; return ""; }

#endif
