/* viz/plot_draw.c — drawing a prepared plot with cairo (image surface, toy text API) and writing
 * it as a PNG: a frame with grid lines at the ticks, SI tick labels, axis labels and a title,
 * one colour and marker shape per group (lines through a group's points by x unless scatter),
 * the Pareto-optimal points ringed and their front dashed, and a legend right of the frame. */
#include "viz/plot.h"

#include <math.h>
#include <string.h>

#include "core/buf.h"
#include "core/fileio.h"
#include "ts_build.h"
#include "viz/plot_int.h"

#if TS_HAVE_CAIRO
#include <cairo.h>
#if TS_HAVE_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif

/* Font sizes in pixels and the gaps of the layout. */
enum { TICK_PX = 12, LABEL_PX = 14, TITLE_PX = 16, LEGEND_PX = 13, TICK_LEN = 5, GAP = 8 };
#define FONT "sans-serif"

void ts_plot_rgb(cairo_t *cr, uint32_t c)
{
    cairo_set_source_rgb(cr, ((c >> 16) & 255) / 255.0, ((c >> 8) & 255) / 255.0, (c & 255) / 255.0);
}

static void font(cairo_t *cr, double px, bool bold)
{
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, px);
}

static double text_w(cairo_t *cr, const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

void ts_plot_text_at(cairo_t *cr, const char *s, double x, double y, double anchor)
{
    cairo_move_to(cr, x - anchor * text_w(cr, s), y);
    cairo_show_text(cr, s);
}

void ts_plot_title(cairo_t *cr, const char *title, double x, double y, double width, double size)
{
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    for (;; size -= 0.5) {
        cairo_set_font_size(cr, size);
        if (text_w(cr, title) <= width || size <= 9)
            break;
    }
    ts_plot_text_at(cr, title, x, y, 0);
}

/* Where v falls between p0 (at a->lo) and p1 (at a->hi). */
static double map(const ts_plot_axis *a, double v, double p0, double p1)
{
    double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return p0 + t * (p1 - p0);
}

/* The marker of group g: circle, square, triangle, diamond, in turn. */
static void marker(cairo_t *cr, size_t g, double x, double y, double r)
{
    switch (g % 4) {
    case 0: cairo_arc(cr, x, y, r, 0, 2 * M_PI); break;
    case 1: cairo_rectangle(cr, x - 0.9 * r, y - 0.9 * r, 1.8 * r, 1.8 * r); break;
    case 2:
        cairo_move_to(cr, x, y - 1.2 * r);
        cairo_line_to(cr, x + 1.1 * r, y + 0.8 * r);
        cairo_line_to(cr, x - 1.1 * r, y + 0.8 * r);
        cairo_close_path(cr);
        break;
    default:
        cairo_move_to(cr, x, y - 1.25 * r);
        cairo_line_to(cr, x + 1.25 * r, y);
        cairo_line_to(cr, x, y + 1.25 * r);
        cairo_line_to(cr, x - 1.25 * r, y);
        cairo_close_path(cr);
        break;
    }
    cairo_fill(cr);
}

static cairo_status_t png_out(void *closure, const unsigned char *data, unsigned int len)
{
    ts_buf *b = closure;
    ts_buf_put(b, (const char *)data, len);
    return b->oom ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

static void draw(const ts_plot *p, cairo_t *cr)
{
    const double W = p->width, H = p->height;
    const uint32_t ink = 0x262626, grid = 0xe6e6e6;
    char lab[64];
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    /* Layout: the widest y tick label sets the left margin, the legend the right one. */
    font(cr, TICK_PX, false);
    double ywmax = 0;
    for (size_t i = 0; i < p->ya.nticks; i++) {
        ts_plot_si(p->ya.ticks[i], p->ya.step, lab, sizeof lab);
        ywmax = fmax(ywmax, text_w(cr, lab));
    }
    double legend_w = 0;
    if (p->has_legend) {
        font(cr, LEGEND_PX, true);
        legend_w = text_w(cr, p->group_title);
        font(cr, LEGEND_PX, false);
        if (p->ngroups > 1 || p->group_title[0])
            for (size_t g = 0; g < p->ngroups; g++)
                legend_w = fmax(legend_w, 34 + text_w(cr, ts_plot_group_label(p, g)));
        if (p->has_pareto)
            legend_w = fmax(legend_w, 34 + text_w(cr, p->pareto_label));
        legend_w += 2 * GAP;
    }
    double top = p->title[0] ? GAP + TITLE_PX + 2 * GAP : 2 * GAP;
    double left = GAP + LABEL_PX + 2 * GAP + ywmax + GAP / 2 + TICK_LEN;
    double bottom = TICK_LEN + GAP / 2 + TICK_PX + GAP + LABEL_PX + GAP;
    double right = p->has_legend ? legend_w + 3 * GAP : 3 * GAP;
    double x0 = round(left), x1 = round(W - right), y0 = round(top), y1 = round(H - bottom);
    if (x1 - x0 < 40)
        x1 = x0 + 40;
    if (y1 - y0 < 40)
        y1 = y0 + 40;

    /* Grid lines and ticks. */
    cairo_set_line_width(cr, 1);
    ts_plot_rgb(cr, grid);
    for (size_t i = 0; i < p->xa.nticks; i++) {
        double x = floor(map(&p->xa, p->xa.ticks[i], x0, x1)) + 0.5;
        cairo_move_to(cr, x, y0);
        cairo_line_to(cr, x, y1);
    }
    for (size_t i = 0; i < p->ya.nticks; i++) {
        double y = floor(map(&p->ya, p->ya.ticks[i], y1, y0)) + 0.5;
        cairo_move_to(cr, x0, y);
        cairo_line_to(cr, x1, y);
    }
    cairo_stroke(cr);
    ts_plot_rgb(cr, ink);
    font(cr, TICK_PX, false);
    double last_right = -1e9;
    for (size_t i = 0; i < p->xa.nticks; i++) {
        double x = floor(map(&p->xa, p->xa.ticks[i], x0, x1)) + 0.5;
        cairo_move_to(cr, x, y1);
        cairo_line_to(cr, x, y1 + TICK_LEN);
        ts_plot_si(p->xa.ticks[i], p->xa.step, lab, sizeof lab);
        double w = text_w(cr, lab);
        if (x - w / 2 > last_right + GAP) { /* a label that would touch the previous one is left out */
            ts_plot_text_at(cr, lab, x, y1 + TICK_LEN + GAP / 2 + TICK_PX - 2, 0.5);
            last_right = x + w / 2;
        }
    }
    for (size_t i = 0; i < p->ya.nticks; i++) {
        double y = floor(map(&p->ya, p->ya.ticks[i], y1, y0)) + 0.5;
        cairo_move_to(cr, x0 - TICK_LEN, y);
        cairo_line_to(cr, x0, y);
        ts_plot_si(p->ya.ticks[i], p->ya.step, lab, sizeof lab);
        ts_plot_text_at(cr, lab, x0 - TICK_LEN - GAP / 2, y + TICK_PX / 2.0 - 2, 1);
    }
    cairo_stroke(cr);
    cairo_rectangle(cr, x0 + 0.5, y0 + 0.5, x1 - x0 - 1, y1 - y0 - 1);
    cairo_stroke(cr);

    /* Labels and title. */
    font(cr, LABEL_PX, false);
    ts_plot_text_at(cr, p->xlabel, (x0 + x1) / 2, H - GAP - 3, 0.5);
    cairo_save(cr);
    cairo_translate(cr, GAP + LABEL_PX - 2, (y0 + y1) / 2);
    cairo_rotate(cr, -M_PI / 2);
    ts_plot_text_at(cr, p->ylabel, 0, 0, 0.5);
    cairo_restore(cr);
    if (p->title[0]) {
        /* over the frame when it fits there, else over the image, in a smaller font if need be */
        double px = TITLE_PX;
        font(cr, px, true);
        while (text_w(cr, p->title) > W - 2 * GAP && px > 9)
            font(cr, --px, true);
        double w = text_w(cr, p->title), cx = (x0 + x1) / 2;
        if (cx - w / 2 < GAP)
            cx = GAP + w / 2;
        if (cx + w / 2 > W - GAP)
            cx = fmax(W - GAP - w / 2, w / 2);
        ts_plot_text_at(cr, p->title, cx, GAP + TITLE_PX, 0.5);
    }

    /* The data, clipped to the frame. */
    cairo_save(cr);
    cairo_rectangle(cr, x0 + 1, y0 + 1, x1 - x0 - 2, y1 - y0 - 2);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    if (p->front_line && p->nfront > 1) {
        ts_plot_rgb(cr, TS_PLOT_PARETO_RGB);
        cairo_set_line_width(cr, 1.5);
        static const double dash[] = {6, 4};
        cairo_set_dash(cr, dash, 2, 0);
        for (size_t i = 0; i < p->nfront; i++) {
            const ts_plot_pt *pt = &p->pts[p->front[i]];
            double x = map(&p->xa, pt->x, x0, x1), y = map(&p->ya, pt->y, y1, y0);
            if (i)
                cairo_line_to(cr, x, y);
            else
                cairo_move_to(cr, x, y);
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    for (size_t g = 0; g < p->ngroups; g++) {
        const ts_plot_group *gr = &p->groups[g];
        ts_plot_rgb(cr, ts_plot_group_rgb(g));
        if (!p->scatter && gr->n > 1) {
            cairo_set_line_width(cr, 2);
            for (size_t i = 0; i < gr->n; i++) {
                const ts_plot_pt *pt = &p->pts[gr->start + i];
                double x = map(&p->xa, pt->x, x0, x1), y = map(&p->ya, pt->y, y1, y0);
                if (i)
                    cairo_line_to(cr, x, y);
                else
                    cairo_move_to(cr, x, y);
            }
            cairo_stroke(cr);
        }
        for (size_t i = 0; i < gr->n; i++) {
            const ts_plot_pt *pt = &p->pts[gr->start + i];
            marker(cr, g, map(&p->xa, pt->x, x0, x1), map(&p->ya, pt->y, y1, y0), 4.5);
        }
    }
    ts_plot_rgb(cr, TS_PLOT_PARETO_RGB);
    cairo_set_line_width(cr, 2);
    for (size_t i = 0; i < p->nfront; i++) {
        const ts_plot_pt *pt = &p->pts[p->front[i]];
        double x = map(&p->xa, pt->x, x0, x1), y = map(&p->ya, pt->y, y1, y0);
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, 8, 0, 2 * M_PI);
    }
    cairo_stroke(cr);
    cairo_restore(cr);

    /* The legend, right of the frame. */
    if (!p->has_legend)
        return;
    bool groups = p->ngroups > 1 || p->group_title[0];
    size_t rows = (groups ? p->ngroups : 0) + (p->has_pareto ? 1 : 0);
    double lx = x1 + 2 * GAP, ly = y0, row_h = LEGEND_PX + 7;
    double lh = GAP + (p->group_title[0] ? row_h : 0) + rows * row_h + GAP / 2;
    cairo_set_line_width(cr, 1);
    ts_plot_rgb(cr, 0xcccccc);
    cairo_rectangle(cr, round(lx) + 0.5, round(ly) + 0.5, round(legend_w), round(lh));
    cairo_stroke(cr);
    double y = ly + GAP;
    if (p->group_title[0]) {
        ts_plot_rgb(cr, ink);
        font(cr, LEGEND_PX, true);
        ts_plot_text_at(cr, p->group_title, lx + GAP, y + LEGEND_PX - 2, 0);
        y += row_h;
    }
    font(cr, LEGEND_PX, false);
    for (size_t g = 0; groups && g < p->ngroups; g++) {
        double cy = y + row_h / 2 - 2;
        ts_plot_rgb(cr, ts_plot_group_rgb(g));
        if (!p->scatter) {
            cairo_set_line_width(cr, 2);
            cairo_move_to(cr, lx + GAP, cy);
            cairo_line_to(cr, lx + GAP + 22, cy);
            cairo_stroke(cr);
        }
        marker(cr, g, lx + GAP + 11, cy, 4.5);
        ts_plot_rgb(cr, ink);
        ts_plot_text_at(cr, ts_plot_group_label(p, g), lx + GAP + 30, cy + LEGEND_PX / 2.0 - 2, 0);
        y += row_h;
    }
    if (p->has_pareto) {
        double cy = y + row_h / 2 - 2;
        ts_plot_rgb(cr, TS_PLOT_PARETO_RGB);
        if (p->front_line) {
            static const double dash[] = {6, 4};
            cairo_set_dash(cr, dash, 2, 0);
            cairo_set_line_width(cr, 1.5);
            cairo_move_to(cr, lx + GAP, cy);
            cairo_line_to(cr, lx + GAP + 22, cy);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        cairo_set_line_width(cr, 2);
        cairo_arc(cr, lx + GAP + 11, cy, 7, 0, 2 * M_PI);
        cairo_stroke(cr);
        ts_plot_rgb(cr, ink);
        ts_plot_text_at(cr, p->pareto_label, lx + GAP + 30, cy + LEGEND_PX / 2.0 - 2, 0);
    }
}

ts_status ts_plot_write_png(const ts_plot *p, const char *path, ts_err *err)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)p->width, (int)p->height);
    cairo_t *cr = cairo_create(s);
    draw(p, cr);
    return ts_plot_finish_png(s, cr, path, err);
}

ts_status ts_plot_finish_png(cairo_surface_t *s, cairo_t *cr, const char *path, ts_err *err)
{
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    ts_buf png = TS_BUF_INIT;
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_write_to_png_stream(s, png_out, &png);
    cairo_surface_destroy(s);
    /* cairo and fontconfig keep their font caches for the life of the process; a command draws
     * one plot, so they are dropped here and leak checkers see nothing left behind. */
    cairo_debug_reset_static_data();
#if TS_HAVE_FONTCONFIG
    FcFini();
#endif
    ts_status st;
    if (cs != CAIRO_STATUS_SUCCESS)
        st = ts_err_set(err, cs == CAIRO_STATUS_NO_MEMORY ? TS_ENOMEM : TS_EINTERNAL, "cannot draw %s: %s", path,
                        cairo_status_to_string(cs));
    else
        st = ts_write_file_atomic(path, png.data, png.len, err);
    ts_buf_free(&png);
    return st;
}

#else

ts_status ts_plot_write_png(const ts_plot *p, const char *path, ts_err *err)
{
    (void)p;
    (void)path;
    return ts_err_set(err, TS_EINPUT, "this build has no cairo: no plots (install libcairo2-dev and rebuild)");
}

#endif
