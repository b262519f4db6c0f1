/* viz/view.c — the SDL2 live window (see view.h). Drawn through the window surface, so it also
 * runs under SDL's offscreen and dummy video drivers. */
#include "viz/view.h"

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
};

ts_status ts_view_open(ts_view **out, const char *title, ts_err *err)
{
    *out = NULL;
    if (SDL_InitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS))
        return ts_err_set(err, TS_EINPUT, "cannot open the view: %s", SDL_GetError());
    ts_view *v = ts_calloc(1, sizeof *v);
    if (v)
        v->title = ts_strdup(title ? title : "tessera");
    if (!v || !v->title) {
        ts_free(v);
        SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS);
        return ts_err_set(err, TS_ENOMEM, "out of memory opening the view");
    }
    v->delay = DELAY_START;
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

/* One event. Returns true when it lets a paused view go on (resume, step or close). */
static bool handle(ts_view *v, const SDL_Event *e)
{
    if (e->type == SDL_QUIT || (e->type == SDL_WINDOWEVENT && e->window.event == SDL_WINDOWEVENT_CLOSE)) {
        do_close(v);
        return true;
    }
    if (e->type != SDL_KEYDOWN)
        return false;
    switch (e->key.keysym.sym) {
    case SDLK_SPACE:
        v->paused = !v->paused;
        return !v->paused;
    case SDLK_n:
    case SDLK_RIGHT:
        return v->paused;
    case SDLK_PLUS:
    case SDLK_EQUALS:
    case SDLK_KP_PLUS:
        v->delay /= 2;
        return false;
    case SDLK_MINUS:
    case SDLK_KP_MINUS:
        v->delay = v->delay ? (v->delay * 2 > DELAY_MAX ? DELAY_MAX : v->delay * 2) : 1;
        return false;
    case SDLK_q:
    case SDLK_ESCAPE:
        do_close(v);
        return true;
    default:
        return false;
    }
}

ts_status ts_view_frame(ts_view *v, const ts_viz_image *img, ts_err *err)
{
    if (v->closed)
        return TS_OK;
    if (!v->win || v->w != img->w || v->h != img->h) {
        if (v->win)
            SDL_DestroyWindow(v->win);
        v->win = SDL_CreateWindow(v->title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, (int)img->w,
                                  (int)img->h, 0);
        if (!v->win)
            return ts_err_set(err, TS_EINPUT, "cannot open the view window: %s", SDL_GetError());
        v->w = img->w;
        v->h = img->h;
    }
    SDL_Surface *dst = SDL_GetWindowSurface(v->win);
    SDL_Surface *src = SDL_CreateRGBSurfaceWithFormatFrom(img->px, (int)img->w, (int)img->h, 32, (int)img->w * 4,
                                                          SDL_PIXELFORMAT_RGBA32);
    if (!dst || !src || SDL_BlitSurface(src, NULL, dst, NULL) || SDL_UpdateWindowSurface(v->win)) {
        SDL_FreeSurface(src);
        return ts_err_set(err, TS_EINPUT, "cannot draw the view: %s", SDL_GetError());
    }
    SDL_FreeSurface(src);
    v->shown++;
    SDL_Event e;
    uint32_t t0 = SDL_GetTicks();
    for (;;) {
        if (v->closed)
            return TS_OK;
        if (v->paused) {
            if (SDL_WaitEvent(&e) && handle(v, &e))
                return TS_OK;
            continue;
        }
        uint32_t spent = SDL_GetTicks() - t0;
        if (spent >= v->delay) {
            while (SDL_PollEvent(&e)) /* keys pressed during the last wait */
                handle(v, &e);
            if (!v->paused)
                return TS_OK;
            continue;
        }
        if (SDL_WaitEventTimeout(&e, (int)(v->delay - spent)))
            handle(v, &e);
    }
}

void ts_view_close(ts_view *v)
{
    if (!v)
        return;
    if (v->win)
        SDL_DestroyWindow(v->win);
    ts_free(v->title);
    ts_free(v);
    SDL_QuitSubSystem(SDL_INIT_VIDEO | SDL_INIT_EVENTS);
}

bool ts_view_paused(const ts_view *v) { return v->paused; }
bool ts_view_closed(const ts_view *v) { return v->closed; }
uint32_t ts_view_delay_ms(const ts_view *v) { return v->delay; }
uint64_t ts_view_shown(const ts_view *v) { return v->shown; }

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

ts_status ts_view_frame(ts_view *v, const ts_viz_image *img, ts_err *err)
{
    (void)v;
    (void)img;
    (void)err;
    return TS_OK;
}

void ts_view_close(ts_view *v) { (void)v; }
bool ts_view_paused(const ts_view *v) { (void)v; return false; }
bool ts_view_closed(const ts_view *v) { (void)v; return true; }
uint32_t ts_view_delay_ms(const ts_view *v) { (void)v; return 0; }
uint64_t ts_view_shown(const ts_view *v) { (void)v; return 0; }

#endif
