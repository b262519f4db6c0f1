/* viz/links.c — the heat map of a mesh's links (viz/links.h): the layout (blocks of PEs, a cell
 * per block), each link's utilisation (wavelets per cycle), a five-stop colour map, the colour
 * bar, PE coordinates and the title. */
#include "viz/links.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "ts_build.h"
#include "viz/plot.h"
#include "viz/plot_int.h"

enum { M_LEFT = 56, M_RIGHT = 110, M_TOP = 58, M_BOTTOM = 44, MIN_CELL = 12 };

typedef struct layout {
    double W, H;
    uint32_t k, bw, bh; /* PEs per block side; blocks across and down */
    double cell;        /* pixels per block */
    double sq;          /* the PE (block) square's side; a bar is sq / 2 thick */
} layout;

static int lay_out(const ts_links *l, layout *L)
{
    if (!l->mw || !l->mh || !(l->cycles > 0) || !isfinite(l->cycles))
        return -1;
    L->W = l->width ? l->width : 760;
    L->H = l->height ? l->height : 640;
    double mw = L->W - M_LEFT - M_RIGHT, mh = L->H - M_TOP - M_BOTTOM;
    if (mw < MIN_CELL || mh < MIN_CELL)
        return -1;
    /* the fewest PEs per block that leave every block MIN_CELL pixels */
    uint32_t k = 1;
    while ((double)((l->mw + k - 1) / k) * MIN_CELL > mw || (double)((l->mh + k - 1) / k) * MIN_CELL > mh)
        k++;
    L->k = k;
    L->bw = (l->mw + k - 1) / k;
    L->bh = (l->mh + k - 1) / k;
    L->cell = fmin(mw / L->bw, mh / L->bh);
    L->cell = fmin(L->cell, 64);
    L->sq = floor(L->cell * 0.4);
    return 0;
}

/* The PE a link from (x, y) in direction d reaches; false when it leaves the mesh. */
static bool neighbour(const ts_links *l, uint32_t x, uint32_t y, int d, uint32_t *nx, uint32_t *ny)
{
    *nx = x;
    *ny = y;
    switch (d) {
    case TS_LINK_N: return y > 0 ? (*ny = y - 1, true) : false;
    case TS_LINK_S: return y + 1 < l->mh ? (*ny = y + 1, true) : false;
    case TS_LINK_E: return x + 1 < l->mw ? (*nx = x + 1, true) : false;
    default: return x > 0 ? (*nx = x - 1, true) : false;
    }
}

#if TS_HAVE_CAIRO
/* The utilisation of block (bx, by)'s bar in direction d: the busiest link from a PE of the block
 * to a PE of another; -1 when no such link exists. */
static double block_util(const ts_links *l, const layout *L, uint32_t bx, uint32_t by, int d)
{
    double best = -1;
    for (uint32_t y = by * L->k; y < (by + 1) * L->k && y < l->mh; y++)
        for (uint32_t x = bx * L->k; x < (bx + 1) * L->k && x < l->mw; x++) {
            uint32_t nx, ny;
            if (!neighbour(l, x, y, d, &nx, &ny) || (nx / L->k == bx && ny / L->k == by))
                continue;
            double v = l->sent[d] ? l->sent[d][(size_t)y * l->mw + x] / l->cycles : 0;
            best = fmax(best, v > 0 && isfinite(v) ? v : 0);
        }
    return best;
}
#endif

int ts_links_scale(const ts_links *l, double *top)
{
    layout L;
    if (lay_out(l, &L))
        return -1;
    double t = 1e-6;
    for (size_t i = 0; i < (size_t)l->mw * l->mh; i++)
        for (int d = 0; d < TS_LINK_DIRS; d++) {
            double v = l->sent[d] ? l->sent[d][i] / l->cycles : 0;
            t = v > t && isfinite(v) ? v : t;
        }
    *top = t;
    return 0;
}

/* The middle of block (bx, by)'s square. */
static void centre(const layout *L, uint32_t bx, uint32_t by, double *cx, double *cy)
{
    *cx = M_LEFT + (bx + 0.5) * L->cell;
    *cy = M_TOP + (by + 0.5) * L->cell;
}

/* The bar of a link from block (bx, by) in direction d: its rectangle (x, y, w, h). East and
 * west share the gap between two squares (east above, west below); north and south share the gap
 * below and above (north on the left, south on the right). */
static void bar(const layout *L, uint32_t bx, uint32_t by, int d, double r[4])
{
    double cx, cy, h = L->sq / 2, gap = L->cell - L->sq;
    centre(L, bx, by, &cx, &cy);
    switch (d) {
    case TS_LINK_E: r[0] = cx + h, r[1] = cy - h, r[2] = gap, r[3] = h; break;
    case TS_LINK_W: r[0] = cx - h - gap, r[1] = cy, r[2] = gap, r[3] = h; break;
    case TS_LINK_S: r[0] = cx, r[1] = cy + h, r[2] = h, r[3] = gap; break;
    default: r[0] = cx - h, r[1] = cy - h - gap, r[2] = h, r[3] = gap; break;
    }
}

int ts_links_map(const ts_links *l, uint32_t x, uint32_t y, int dir, double *px, double *py)
{
    layout L;
    uint32_t nx, ny;
    if (lay_out(l, &L) || x >= l->mw || y >= l->mh || dir < 0 || dir >= TS_LINK_DIRS ||
        !neighbour(l, x, y, dir, &nx, &ny))
        return -1;
    double r[4];
    bar(&L, x / L.k, y / L.k, dir, r);
    *px = r[0] + r[2] / 2;
    *py = r[1] + r[3] / 2;
    return 0;
}

#if TS_HAVE_CAIRO

/* Light yellow to dark red (ColorBrewer's YlOrRd, five of its stops), by t in [0, 1]. */
static uint32_t ramp(double t)
{
    static const uint32_t stop[5] = {TS_LINKS_LOW_RGB, 0xfecc5c, 0xfd8d3c, 0xe31a1c, TS_LINKS_HIGH_RGB};
    t = fmin(fmax(t, 0), 1) * 4;
    int i = t >= 4 ? 3 : (int)t;
    double f = t - i;
    uint32_t c = 0;
    for (int s = 16; s >= 0; s -= 8) {
        double a = (stop[i] >> s) & 255, b = (stop[i + 1] >> s) & 255;
        c |= (uint32_t)lround(a + (b - a) * f) << s;
    }
    return c;
}

static void fill(cairo_t *cr, const double r[4], uint32_t c)
{
    ts_plot_rgb(cr, c);
    cairo_rectangle(cr, r[0], r[1], r[2], r[3]);
    cairo_fill(cr);
}

static void mesh(const ts_links *l, const layout *L, double top, cairo_t *cr)
{
    for (uint32_t by = 0; by < L->bh; by++)
        for (uint32_t bx = 0; bx < L->bw; bx++) {
            double cx, cy, r[4];
            centre(L, bx, by, &cx, &cy);
            double sqr[4] = {cx - L->sq / 2, cy - L->sq / 2, L->sq, L->sq};
            fill(cr, sqr, 0x5a5a5a);
            for (int d = 0; d < TS_LINK_DIRS; d++) {
                double u = block_util(l, L, bx, by, d);
                if (u < 0)
                    continue;
                bar(L, bx, by, d, r);
                fill(cr, r, u > 0 ? ramp(u / top) : TS_LINKS_IDLE_RGB);
            }
        }
}

/* PE coordinates: a label every `step` PEs (a multiple of the block side, at least 36 pixels
 * apart) under the map and left of it. */
static void coordinates(const ts_links *l, const layout *L, cairo_t *cr)
{
    char lab[24];
    double per_pe = L->cell / L->k;
    uint32_t step = (uint32_t)ts_plot_nice(36 / per_pe, false);
    step = step < L->k ? L->k : (step + L->k - 1) / L->k * L->k;
    ts_plot_rgb(cr, 0x262626);
    cairo_set_font_size(cr, 11);
    double bottom = M_TOP + L->bh * L->cell, right = M_LEFT + L->bw * L->cell;
    for (uint32_t x = 0; x < l->mw; x += step) {
        snprintf(lab, sizeof lab, "%u", x);
        ts_plot_text_at(cr, lab, M_LEFT + (x / L->k + 0.5) * L->cell, bottom + 14, 0.5);
    }
    for (uint32_t y = 0; y < l->mh; y += step) {
        snprintf(lab, sizeof lab, "%u", y);
        ts_plot_text_at(cr, lab, M_LEFT - 6, M_TOP + (y / L->k + 0.5) * L->cell + 4, 1);
    }
    cairo_set_font_size(cr, 12);
    ts_plot_text_at(cr, "PE x (east)", (M_LEFT + right) / 2, bottom + 32, 0.5);
    cairo_save(cr);
    cairo_translate(cr, 16, (M_TOP + bottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    ts_plot_text_at(cr, "PE y (south)", 0, 0, 0.5);
    cairo_restore(cr);
}

/* The colour bar right of the map: the ramp from 0 (bottom) to top, labelled in per cent. */
static void colour_bar(const layout *L, double top, cairo_t *cr)
{
    double x = L->W - M_RIGHT + 24, y0 = M_TOP, y1 = L->H - M_BOTTOM;
    for (double y = y0; y < y1; y++) {
        double r[4] = {x, y, 16, 1};
        fill(cr, r, ramp((y1 - 1 - y) / (y1 - y0 - 1))); /* top row 1, bottom row 0 */
    }
    ts_plot_rgb(cr, 0x262626);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x - 0.5, y0 - 0.5, 17, y1 - y0 + 1);
    cairo_stroke(cr);
    cairo_set_font_size(cr, 11);
    char lab[32];
    for (int i = 0; i <= 4; i++) {
        double y = y1 - i * (y1 - y0) / 4;
        snprintf(lab, sizeof lab, "%.3g %%", 100 * top * i / 4);
        ts_plot_text_at(cr, lab, x + 21, y + 4, 0);
    }
    cairo_save(cr);
    cairo_translate(cr, L->W - 6, (y0 + y1) / 2);
    cairo_rotate(cr, -M_PI / 2);
    ts_plot_text_at(cr, "link utilisation (wavelets per cycle)", 0, 0, 0.5);
    cairo_restore(cr);
}

static void draw(const ts_links *l, const layout *L, double top, cairo_t *cr)
{
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE); /* flat bars: a pixel is one link's colour */
    mesh(l, L, top, cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    coordinates(l, L, cr);
    colour_bar(L, top, cr);
    ts_plot_rgb(cr, 0x262626);
    ts_plot_title(cr, l->title ? l->title : "links", M_LEFT, 20, L->W - M_LEFT - 8, 14);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 12);
    char lab[200];
    int n = snprintf(lab, sizeof lab, "%ux%u PEs, %.0f cycles; busiest link %.3g %%; light grey: idle; dark squares: PEs", l->mw, l->mh,
                     l->cycles, 100 * top);
    if (L->k > 1 && n > 0 && (size_t)n < sizeof lab)
        snprintf(lab + n, sizeof lab - (size_t)n, "; blocks of %ux%u PEs, the busiest link of each", L->k, L->k);
    ts_plot_text_at(cr, lab, M_LEFT, 38, 0);
    ts_plot_text_at(cr, "each gap: east above west, north left of south", M_LEFT, 52, 0);
}

ts_status ts_links_write_png(const ts_links *l, const char *path, ts_err *err)
{
    layout L;
    double top;
    if (lay_out(l, &L) || ts_links_scale(l, &top))
        return ts_err_set(err, TS_EINPUT, "no link heat map: the run has no mesh or no cycles");
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)L.W, (int)L.H);
    cairo_t *cr = cairo_create(s);
    draw(l, &L, top, cr);
    return ts_plot_finish_png(s, cr, path, err);
}

#else

ts_status ts_links_write_png(const ts_links *l, const char *path, ts_err *err)
{
    (void)l;
    (void)path;
    return ts_err_set(err, TS_EINPUT, "this build has no cairo: no link heat map (install libcairo2-dev and rebuild)");
}

#endif
