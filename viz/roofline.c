/* viz/roofline.c — the roofline picture (viz/roofline.h): log-log axes with ticks at powers of
 * ten (ts_plot_axis_log), the roofs min(peak, x * bw) with the ridge point marked, a marker per
 * layer and one for the run, a title, axis labels and a legend. */
#include "viz/roofline.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/fileio.h"
#include "ts_build.h"
#include "viz/plot.h"
#include "viz/plot_int.h"

/* The layout: the frame inside the picture, and the axes over the data and the roofs. */
typedef struct layout {
    double W, H, l, r, t, b; /* picture size; frame left, right, top, bottom */
    ts_plot_axis ax, ay;
} layout;

enum { M_LEFT = 78, M_RIGHT = 24, M_TOP = 56, M_BOTTOM = 56 };

static bool pos(double v) { return v > 0 && isfinite(v); }

/* Axes wide enough for every point, the ridge (peak / bw) and a decade either side of it. */
static int lay_out(const ts_roofline *r, layout *L)
{
    if (!pos(r->peak_ops) || !pos(r->bw))
        return -1;
    L->W = r->width ? r->width : 720;
    L->H = r->height ? r->height : 480;
    L->l = M_LEFT;
    L->r = L->W - M_RIGHT;
    L->t = M_TOP;
    L->b = L->H - M_BOTTOM;
    double ridge = r->peak_ops / r->bw;
    double x0 = ridge / 10, x1 = ridge * 10, y0 = r->peak_ops / 100, y1 = r->peak_ops;
    for (size_t i = 0; i <= r->n; i++) {
        double x = i < r->n ? r->x[i] : r->run_x, y = i < r->n ? r->y[i] : r->run_y;
        if (!pos(x) || !pos(y))
            continue;
        x0 = fmin(x0, x);
        x1 = fmax(x1, x);
        y0 = fmin(y0, y);
        y1 = fmax(y1, y);
    }
    y0 = fmin(y0, x0 * r->bw); /* the slanted roof's left end */
    ts_plot_axis_log(&L->ax, x0, x1);
    ts_plot_axis_log(&L->ay, y0, y1 * 1.5);
    return 0;
}

static double map_x(const layout *L, double x)
{
    return L->l + (log10(x) - log10(L->ax.lo)) / (log10(L->ax.hi) - log10(L->ax.lo)) * (L->r - L->l);
}

static double map_y(const layout *L, double y)
{
    return L->b - (log10(y) - log10(L->ay.lo)) / (log10(L->ay.hi) - log10(L->ay.lo)) * (L->b - L->t);
}

int ts_roofline_map(const ts_roofline *r, double x, double y, double *px, double *py)
{
    layout L;
    if (lay_out(r, &L) || !pos(x) || !pos(y))
        return -1;
    *px = map_x(&L, x);
    *py = map_y(&L, y);
    return 0;
}

#if TS_HAVE_CAIRO

static void axes(const layout *L, cairo_t *cr)
{
    char lab[32];
    cairo_set_line_width(cr, 1);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    for (size_t i = 0; i < L->ax.nticks; i++) {
        double x = floor(map_x(L, L->ax.ticks[i])) + 0.5;
        ts_plot_rgb(cr, 0xe6e6e6);
        cairo_move_to(cr, x, L->t);
        cairo_line_to(cr, x, L->b);
        cairo_stroke(cr);
        ts_plot_rgb(cr, 0x262626);
        ts_plot_si(L->ax.ticks[i], 0, lab, sizeof lab);
        ts_plot_text_at(cr, lab, x, L->b + 17, 0.5);
    }
    for (size_t i = 0; i < L->ay.nticks; i++) {
        double y = floor(map_y(L, L->ay.ticks[i])) + 0.5;
        ts_plot_rgb(cr, 0xe6e6e6);
        cairo_move_to(cr, L->l, y);
        cairo_line_to(cr, L->r, y);
        cairo_stroke(cr);
        ts_plot_rgb(cr, 0x262626);
        ts_plot_si(L->ay.ticks[i], 0, lab, sizeof lab);
        ts_plot_text_at(cr, lab, L->l - 6, y + 4, 1);
    }
    ts_plot_rgb(cr, 0x262626);
    cairo_rectangle(cr, L->l + 0.5, L->t + 0.5, L->r - L->l - 1, L->b - L->t - 1);
    cairo_stroke(cr);
    cairo_set_font_size(cr, 14);
    ts_plot_text_at(cr, "arithmetic intensity (ops per SRAM byte)", (L->l + L->r) / 2, L->H - 14, 0.5);
    cairo_save(cr);
    cairo_translate(cr, 20, (L->t + L->b) / 2);
    cairo_rotate(cr, -M_PI / 2);
    ts_plot_text_at(cr, "ops per cycle", 0, 0, 0.5);
    cairo_restore(cr);
}

static void draw(const ts_roofline *r, const layout *L, cairo_t *cr)
{
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    axes(L, cr);
    /* the roofs: bandwidth-bound up to the ridge, peak-bound after it */
    double ridge = r->peak_ops / r->bw;
    cairo_rectangle(cr, L->l, L->t, L->r - L->l, L->b - L->t);
    cairo_save(cr);
    cairo_clip(cr);
    ts_plot_rgb(cr, TS_ROOF_RGB);
    cairo_set_line_width(cr, 2.5);
    cairo_move_to(cr, map_x(L, L->ax.lo), map_y(L, L->ax.lo * r->bw));
    cairo_line_to(cr, map_x(L, ridge), map_y(L, r->peak_ops));
    cairo_line_to(cr, map_x(L, L->ax.hi), map_y(L, r->peak_ops));
    cairo_stroke(cr);
    cairo_set_line_width(cr, 1.5);
    for (size_t i = 0; i < r->n; i++)
        if (pos(r->x[i]) && pos(r->y[i])) {
            ts_plot_rgb(cr, TS_ROOF_LAYER_RGB);
            cairo_arc(cr, map_x(L, r->x[i]), map_y(L, r->y[i]), 4, 0, 2 * M_PI);
            cairo_fill(cr);
        }
    if (pos(r->run_x) && pos(r->run_y)) {
        double x = map_x(L, r->run_x), y = map_y(L, r->run_y);
        ts_plot_rgb(cr, TS_ROOF_RUN_RGB);
        cairo_rectangle(cr, x - 6, y - 6, 12, 12);
        cairo_fill(cr);
    }
    cairo_restore(cr);
    /* title, note and legend */
    char lab[160];
    ts_plot_rgb(cr, 0x262626);
    ts_plot_title(cr, r->title ? r->title : "roofline", L->l, 20, L->W - L->l - 8, 15);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    char pk[32], bw[32];
    ts_plot_si(r->peak_ops, 0, pk, sizeof pk);
    ts_plot_si(r->bw, 0, bw, sizeof bw);
    snprintf(lab, sizeof lab, "roofs: peak %s ops/cycle, SRAM %s B/cycle", pk, bw);
    ts_plot_text_at(cr, lab, L->l, 38, 0);
    if (r->note)
        ts_plot_text_at(cr, r->note, L->l, 52, 0);
    double lx = L->r - 150, ly = L->b - 40;
    ts_plot_rgb(cr, TS_ROOF_RUN_RGB);
    cairo_rectangle(cr, lx, ly - 9, 10, 10);
    cairo_fill(cr);
    ts_plot_rgb(cr, 0x262626);
    ts_plot_text_at(cr, "the whole run", lx + 16, ly, 0);
    if (r->n) {
        ts_plot_rgb(cr, TS_ROOF_LAYER_RGB);
        cairo_arc(cr, lx + 5, ly + 14, 4, 0, 2 * M_PI);
        cairo_fill(cr);
        ts_plot_rgb(cr, 0x262626);
        ts_plot_text_at(cr, "a layer", lx + 16, ly + 18, 0);
    }
}

ts_status ts_roofline_write_png(const ts_roofline *r, const char *path, ts_err *err)
{
    layout L;
    if (lay_out(r, &L))
        return ts_err_set(err, TS_EINPUT, "no roofline: the chip's peak MACs or SRAM bandwidth is unknown");
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)L.W, (int)L.H);
    cairo_t *cr = cairo_create(s);
    draw(r, &L, cr);
    return ts_plot_finish_png(s, cr, path, err);
}

#else

ts_status ts_roofline_write_png(const ts_roofline *r, const char *path, ts_err *err)
{
    (void)r;
    (void)path;
    return ts_err_set(err, TS_EINPUT, "this build has no cairo: no roofline (install libcairo2-dev and rebuild)");
}

#endif
