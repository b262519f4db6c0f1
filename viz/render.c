/* viz/render.c — the headless renderer (see render.h). */
#include "viz/render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "ts_build.h"

#if TS_HAVE_CAIRO
#include <cairo.h>
#include <pthread.h>
#include <stdlib.h>
#if TS_HAVE_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif
#endif

const uint8_t ts_viz_bg[3] = {16, 16, 24};
const uint8_t ts_viz_state_rgb[TS_ACT_NSTATES][3] = {
    [TS_ACT_COMPUTE] = {60, 200, 80},
    [TS_ACT_NETWORK] = {60, 140, 255},
    [TS_ACT_SYNC] = {255, 170, 40},
    [TS_ACT_MEMORY] = {230, 60, 60},
    [TS_ACT_IDLE] = {70, 70, 80},
};
static const uint8_t text_rgb[3] = {230, 230, 230};
static const uint8_t track_rgb[3] = {64, 64, 72}; /* the line a flow bar runs along */

#define MARGIN 4u
#define TEXT_SCALE 2u
#define TEXT_H (7u * TEXT_SCALE + 2u * MARGIN)
#define TL_H 40u
#define AXIS_H 12u /* a 2-pixel tick, a gap, a 7-pixel label and a gap */
#define MIN_W 600u /* room for the text line at twice the font size */
#define MAP_W 640u
#define FLOW_LABEL_W 18u /* "E>" / "<W" and a gap */
#define FLOW_TEXT_W 96u  /* room for "12345.6 B/CYC" */

/* ---- the font: 5x7, one byte per row, bit 4 = leftmost column ---- */

typedef struct glyph {
    char ch;
    uint8_t rows[7];
} glyph;

static const glyph font[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}}, {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}}, {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}}, {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}}, {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}}, {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}}, {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}}, {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}}, {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}}, {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}}, {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}}, {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}}, {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}}, {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}}, {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}}, {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}}, {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}}, {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},                     {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'.', {0, 0, 0, 0, 0, 0x0C, 0x0C}},               {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'-', {0, 0, 0, 0x1F, 0, 0, 0}},                  {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'=', {0, 0, 0x1F, 0, 0x1F, 0, 0}},               {'_', {0, 0, 0, 0, 0, 0, 0x1F}},
    {',', {0, 0, 0, 0, 0x0C, 0x04, 0x08}},            {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}}, {'+', {0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0}},
    {'<', {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}}, {'>', {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}}, {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
};
static const uint8_t box[7] = {0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F};

const uint8_t *ts_viz_glyph(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        ch = (char)(ch - 'a' + 'A');
    for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
        if (font[i].ch == ch)
            return font[i].rows;
    return NULL;
}

/* ---- pixels ---- */

void ts_viz_image_free(ts_viz_image *img)
{
    if (!img)
        return;
    ts_free(img->px);
    img->px = NULL;
    img->w = img->h = 0;
}

static void put(ts_viz_image *img, uint32_t x, uint32_t y, const uint8_t rgb[3])
{
    if (x >= img->w || y >= img->h)
        return;
    uint8_t *p = img->px + 4 * ((size_t)y * img->w + x);
    p[0] = rgb[0];
    p[1] = rgb[1];
    p[2] = rgb[2];
    p[3] = 255;
}

/* Fill a rectangle, clipped to the image: the first row pixel by pixel, the others copied. */
static void rect(ts_viz_image *img, uint32_t x, uint32_t y, uint32_t w, uint32_t h, const uint8_t rgb[3])
{
    if (x >= img->w || y >= img->h || !w || !h)
        return;
    if (w > img->w - x)
        w = img->w - x;
    if (h > img->h - y)
        h = img->h - y;
    uint8_t *row = img->px + 4 * ((size_t)y * img->w + x);
    for (uint32_t i = 0; i < w; i++)
        put(img, x + i, y, rgb);
    for (uint32_t j = 1; j < h; j++)
        memcpy(row + 4 * (size_t)j * img->w, row, 4 * (size_t)w);
}

/* The built-in 5x7 font: the text's glyphs, or a box for a character it lacks. */
static uint32_t text_5x7(ts_viz_image *img, uint32_t x, uint32_t y, uint32_t scale, const uint8_t rgb[3],
                         const char *s)
{
    for (; *s; s++) {
        const uint8_t *g = ts_viz_glyph(*s);
        if (!g)
            g = box;
        for (uint32_t r = 0; r < 7; r++)
            for (uint32_t c = 0; c < 5; c++)
                if (g[r] >> (4 - c) & 1)
                    rect(img, x + c * scale, y + r * scale, scale, scale, rgb);
        x += 6 * scale;
    }
    return x;
}

#if TS_HAVE_CAIRO
/* cairo and fontconfig keep their font caches for the life of the process; frames draw text
 * many times, so the caches stay until exit and are dropped then, once, so that leak checkers
 * see nothing left behind (a plot drops them after itself the same way). */
static void drop_font_caches(void)
{
    cairo_debug_reset_static_data();
#if TS_HAVE_FONTCONFIG
    FcFini();
#endif
}

static void at_exit_drop_font_caches(void)
{
    atexit(drop_font_caches);
}

/* The text in a monospaced outline font through cairo, drawn as coverage into an 8-bit mask and
 * blended over the image in rgb, each character at the built-in font's pitch (6 x scale pixels)
 * so that every layout made for it holds: DejaVu Sans Mono (fontconfig's "monospace") has an
 * advance of 0.602 em and capitals 0.729 em high, so at 10 x scale pixels a capital is 7.3 x scale
 * pixels high on a 6.0 x scale pitch. The baseline is 7 x scale below y, as the 5x7 capitals'. */
static bool text_cairo(ts_viz_image *img, uint32_t x, uint32_t y, uint32_t scale, const uint8_t rgb[3],
                       const char *s, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, at_exit_drop_font_caches);
    int w = (int)(6 * scale * n + 2), h = (int)(10 * scale);
    cairo_surface_t *m = cairo_image_surface_create(CAIRO_FORMAT_A8, w, h);
    cairo_t *cr = cairo_create(m);
    cairo_select_font_face(cr, "monospace", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 10.0 * scale);
    char one[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        one[0] = s[i];
        cairo_move_to(cr, 6.0 * scale * (double)i, 7.0 * scale);
        cairo_show_text(cr, one);
    }
    cairo_surface_flush(m);
    bool ok = cairo_status(cr) == CAIRO_STATUS_SUCCESS;
    const unsigned char *cov = cairo_image_surface_get_data(m);
    int stride = cairo_image_surface_get_stride(m);
    for (int j = 0; ok && j < h; j++)
        for (int i = 0; i < w; i++) {
            unsigned a = cov[j * stride + i];
            uint32_t px = x + (uint32_t)i, py = y + (uint32_t)j;
            if (!a || px >= img->w || py >= img->h)
                continue;
            uint8_t *p = img->px + 4 * ((size_t)py * img->w + px);
            for (int c = 0; c < 3; c++)
                p[c] = (uint8_t)((p[c] * (255 - a) + rgb[c] * a + 127) / 255);
            p[3] = 255;
        }
    cairo_destroy(cr);
    cairo_surface_destroy(m);
    return ok;
}
#endif

uint32_t ts_viz_text(ts_viz_image *img, uint32_t x, uint32_t y, uint32_t scale, const uint8_t rgb[3],
                     const char *s)
{
#if TS_HAVE_CAIRO
    size_t n = strlen(s);
    if (n && text_cairo(img, x, y, scale, rgb, s, n))
        return x + 6 * scale * (uint32_t)n;
#endif
    return text_5x7(img, x, y, scale, rgb, s);
}

void ts_viz_geometry(const ts_activity *a, ts_viz_geom *g)
{
    uint32_t gw, gh;
    ts_activity_grid(a, &gw, &gh);
    if (!gw)
        gw = 1;
    if (!gh)
        gh = 1;
    memset(g, 0, sizeof *g);
    uint32_t big = gw > gh ? gw : gh, cell, agg = 1;
    if (big > MAP_W / 3) { /* one pixel per block of agg x agg cells */
        while ((big + agg - 1) / agg > MAP_W)
            agg *= 2;
        cell = 1;
    } else {
        cell = MAP_W / gw;
        if (cell > 24)
            cell = 24;
        if (cell < 3)
            cell = 3;
    }
    g->cell = cell;
    g->agg = agg;
    g->map_w = (gw + agg - 1) / agg * cell;
    g->map_h = (gh + agg - 1) / agg * cell;
    g->w = g->map_w + 2 * MARGIN;
    if (g->w < MIN_W)
        g->w = MIN_W;
    g->text_scale = TEXT_SCALE;
    g->title_y = MARGIN;
    g->text_x = MARGIN;
    g->text_y = MARGIN + 7 + MARGIN;
    g->map_x = (g->w - g->map_w) / 2;
    if (!ts_activity_column_label(a, 0) && !ts_activity_column_label(a, gw > 1 ? 1 : 0)) {
        /* numbered rows: the widest number, a gap, and a margin left of it */
        char num[16];
        g->row_lab = 6 * (uint32_t)snprintf(num, sizeof num, "%u", gh - 1) - 1 + 3;
        if (g->map_x < g->row_lab + MARGIN) {
            g->w += g->row_lab + MARGIN - g->map_x;
            g->map_x = g->row_lab + MARGIN;
        }
    }
    g->map_y = TEXT_H + 7 + MARGIN;
    g->tl_x = MARGIN;
    g->tl_w = g->w - 2 * MARGIN;
    g->lab_y = g->map_y + g->map_h + MARGIN;
    g->tl_y = g->lab_y + 7 + 2 * MARGIN;
    if (ts_activity_flow_peak(a) > 0) { /* the flow strips go between the map and the timeline */
        g->flow_y = g->tl_y;
        g->flow_x = MARGIN + FLOW_LABEL_W;
        g->flow_w = g->w - 2 * MARGIN - FLOW_LABEL_W - FLOW_TEXT_W;
        g->tl_y += TS_VIZ_FLOW_ROW + 7 + 2 * MARGIN;
    }
    g->tl_h = TL_H;
    g->axis_y = g->tl_y + g->tl_h + 1;
    g->legend_y = g->axis_y + AXIS_H + MARGIN;
    g->info_y = g->legend_y + 7 + 2 * MARGIN;
    g->h = g->info_y + 7 + MARGIN;
}

void ts_viz_port_clamp(const ts_activity *a, ts_viz_port *p)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    uint32_t gw, gh;
    ts_activity_grid(a, &gw, &gh);
    uint32_t z = 1, max = 64 * g.agg;
    while (z * 2 <= p->zoom && z < max)
        z *= 2;
    p->zoom = z;
    /* the cells the map shows across and down */
    uint32_t px, cells;
    ts_viz_port_scale(&g, p, &px, &cells);
    uint32_t vw = g.map_w / px * cells, vh = g.map_h / px * cells;
    p->x0 = vw >= gw ? 0 : p->x0 > gw - vw ? gw - vw : p->x0;
    p->y0 = vh >= gh ? 0 : p->y0 > gh - vh ? gh - vh : p->y0;
    p->x0 -= p->x0 % cells; /* blocks start on multiples of their size */
    p->y0 -= p->y0 % cells;
}

void ts_viz_port_fit(const ts_activity *a, ts_viz_port *p)
{
    *p = (ts_viz_port){.zoom = 1};
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0, gw, gh;
    ts_activity_grid(a, &gw, &gh);
    for (uint32_t u = 0; u < ts_activity_nunits(a); u++) {
        uint64_t busy = 0;
        for (int s = 0; s < TS_ACT_NSTATES; s++)
            busy += s != TS_ACT_IDLE ? ts_activity_total(a, u, (ts_act_state)s) : 0;
        if (!busy)
            continue;
        uint32_t x, y;
        ts_activity_pos(a, u, &x, &y);
        x0 = x < x0 ? x : x0;
        y0 = y < y0 ? y : y0;
        x1 = x > x1 ? x : x1;
        y1 = y > y1 ? y : y1;
    }
    if (x0 == UINT32_MAX)
        return;
    x0 = x0 ? x0 - 1 : 0; /* a cell of margin */
    y0 = y0 ? y0 - 1 : 0;
    x1 = x1 + 1 < gw ? x1 + 1 : x1;
    y1 = y1 + 1 < gh ? y1 + 1 : y1;
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    /* the largest zoom whose view holds the box */
    for (uint32_t z = 2; z <= 64 * g.agg; z *= 2) {
        ts_viz_port t = {.zoom = z};
        uint32_t px, cells;
        ts_viz_port_scale(&g, &t, &px, &cells);
        if ((uint64_t)(g.map_w / px) * cells < x1 - x0 + 1 || (uint64_t)(g.map_h / px) * cells < y1 - y0 + 1)
            break;
        *p = (ts_viz_port){.zoom = z, .x0 = x0, .y0 = y0};
    }
    ts_viz_port_clamp(a, p);
}

void ts_viz_port_scale(const ts_viz_geom *g, const ts_viz_port *p, uint32_t *px, uint32_t *cells)
{
    uint32_t z = p && p->zoom ? p->zoom : 1;
    if (g->agg == 1) {
        *px = g->cell * z;
        *cells = 1;
    } else if (z < g->agg) {
        *px = 1;
        *cells = g->agg / z;
    } else {
        *px = z / g->agg;
        *cells = 1;
    }
}

bool ts_viz_cell_pixel(const ts_viz_geom *g, const ts_viz_port *p, uint32_t x, uint32_t y, uint32_t *px,
                       uint32_t *py)
{
    uint32_t x0 = p ? p->x0 : 0, y0 = p ? p->y0 : 0, pix, cells;
    ts_viz_port_scale(g, p, &pix, &cells);
    if (x < x0 || y < y0)
        return false;
    uint64_t bx = (x - x0) / cells, by = (y - y0) / cells;
    if ((bx + 1) * pix > g->map_w || (by + 1) * pix > g->map_h)
        return false;
    *px = g->map_x + (uint32_t)bx * pix + (pix >= 3 ? (pix - 1) / 2 : 0);
    *py = g->map_y + (uint32_t)by * pix + (pix >= 3 ? (pix - 1) / 2 : 0);
    return true;
}

bool ts_viz_pixel_cell(const ts_viz_geom *g, const ts_viz_port *p, uint32_t px, uint32_t py, uint32_t *x,
                       uint32_t *y)
{
    uint32_t x0 = p ? p->x0 : 0, y0 = p ? p->y0 : 0, pix, cells;
    ts_viz_port_scale(g, p, &pix, &cells);
    if (px < g->map_x || py < g->map_y || px >= g->map_x + g->map_w / pix * pix ||
        py >= g->map_y + g->map_h / pix * pix)
        return false;
    *x = x0 + (px - g->map_x) / pix * cells;
    *y = y0 + (py - g->map_y) / pix * cells;
    return true;
}

void ts_viz_unit_rgb(const uint64_t cnt[TS_ACT_NSTATES], uint8_t rgb[3])
{
    uint64_t total = cnt[TS_ACT_IDLE];
    int dom = -1; /* the state other than idle with the most cycles */
    for (int s = 0; s < TS_ACT_NSTATES; s++) {
        if (s == TS_ACT_IDLE)
            continue;
        total += cnt[s];
        if (cnt[s] && (dom < 0 || cnt[s] > cnt[dom]))
            dom = s;
    }
    if (dom < 0) {
        memcpy(rgb, ts_viz_state_rgb[TS_ACT_IDLE], 3);
        return;
    }
    double heat = (double)(cnt[TS_ACT_COMPUTE] + cnt[TS_ACT_NETWORK] + cnt[TS_ACT_MEMORY]) / (double)total;
    double k = 0.3 + 0.7 * heat; /* a dim floor so a waiting unit still shows its hue */
    for (int i = 0; i < 3; i++)
        rgb[i] = (uint8_t)((double)ts_viz_state_rgb[dom][i] * k + 0.5);
}

static ts_status alloc_image(ts_viz_image *img, const ts_viz_geom *g, ts_err *err)
{
    if (img->w != g->w || img->h != g->h || !img->px) {
        uint8_t *px = ts_malloc((size_t)g->w * g->h * 4);
        if (!px)
            return ts_err_set(err, TS_ENOMEM, "out of memory for a %ux%u image", g->w, g->h);
        ts_free(img->px);
        img->px = px;
        img->w = g->w;
        img->h = g->h;
    }
    rect(img, 0, 0, img->w, img->h, ts_viz_bg);
    return TS_OK;
}

/* A cycle count in few characters: 950, 12K, 3.5M. */
static void short_count(uint64_t v, char *out, size_t n)
{
    if (v >= 1000000 && v % 100000 == 0)
        snprintf(out, n, "%.*fM", v % 1000000 ? 1 : 0, (double)v / 1e6);
    else if (v >= 10000 && v % 1000 == 0)
        snprintf(out, n, "%" PRIu64 "K", v / 1000);
    else
        snprintf(out, n, "%" PRIu64, v);
}

/* A tick and its label centred under x (the label kept inside the timeline). */
static void axis_tick(ts_viz_image *img, const ts_viz_geom *g, uint32_t x, const char *lab)
{
    rect(img, g->tl_x + x, g->axis_y, 1, 2, text_rgb);
    uint32_t w = 6 * (uint32_t)strlen(lab), lx = x > w / 2 ? x - w / 2 : 0;
    if (lx + w > g->tl_w)
        lx = g->tl_w > w ? g->tl_w - w : 0;
    ts_viz_text(img, g->tl_x + lx, g->axis_y + 4, 1, text_rgb, lab);
}

/* The cycle axis under proportional bars: ticks at multiples of a round step (1, 2 or 5 times a
 * power of ten) at least 80 pixels apart, the last label "CYCLES". */
static void cycle_axis(ts_viz_image *img, const ts_viz_geom *g, uint64_t total)
{
    uint64_t step = 1; /* 1, 2, 5, 10, 20, 50, ... */
    for (int i = 0; step * g->tl_w < total * 80; i++)
        step = i % 3 == 1 ? step / 2 * 5 : step * 2;
    char lab[32];
    for (uint64_t c = 0; c <= total; c += step) {
        uint32_t x = (uint32_t)(g->tl_w * c / total);
        if (x + 60 > g->tl_w && c) /* leave room for the unit at the right end */
            break;
        short_count(c, lab, sizeof lab);
        axis_tick(img, g, x, lab);
    }
    short_count(total, lab, sizeof lab);
    char end[48];
    snprintf(end, sizeof end, "%s CYCLES", lab);
    axis_tick(img, g, g->tl_w - 1, end);
}

/* The timeline: supersteps [0, n). */
static void timeline(ts_viz_image *img, const ts_viz_geom *g, const ts_act_superstep *ss, size_t n)
{
    if (!n)
        return;
    uint64_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += ss[k].compute + ss[k].exchange + ss[k].sync;
    /* proportional widths when every bar gets a slot of at least 2 pixels */
    bool prop = total > 0;
    uint64_t cum = 0;
    for (size_t k = 0; k < n && prop; k++) {
        uint64_t len = ss[k].compute + ss[k].exchange + ss[k].sync;
        uint64_t x0 = g->tl_w * cum / total, x1 = g->tl_w * (cum + len) / total;
        if (x1 < x0 + 2)
            prop = false;
        cum += len;
    }
    size_t first = 0;
    uint32_t slot = 0;
    if (!prop) {
        size_t fit = g->tl_w / 2;
        if (n > fit)
            first = n - fit;
        slot = g->tl_w / (uint32_t)(n - first);
    }
    char lab[48];
    if (prop) {
        cycle_axis(img, g, total);
    } else { /* equal slots: the first and last superstep shown */
        snprintf(lab, sizeof lab, "STEP %zu", first + 1);
        axis_tick(img, g, 0, lab);
        snprintf(lab, sizeof lab, "STEP %zu", n);
        axis_tick(img, g, g->tl_w - 1, lab);
    }
    cum = 0;
    for (size_t k = first; k < n; k++) {
        uint64_t len = ss[k].compute + ss[k].exchange + ss[k].sync;
        uint32_t x0, x1;
        if (prop) {
            x0 = (uint32_t)(g->tl_w * cum / total);
            x1 = (uint32_t)(g->tl_w * (cum + len) / total);
            cum += len;
        } else {
            x0 = (uint32_t)(k - first) * slot;
            x1 = x0 + slot;
        }
        uint32_t bw = x1 - x0 - 1; /* 1-pixel gap after each bar */
        /* stacked bottom to top: compute, exchange, sync; rounded so the parts fill the bar */
        uint64_t parts[3] = {ss[k].compute, ss[k].exchange, ss[k].sync};
        static const int st[3] = {TS_ACT_COMPUTE, TS_ACT_NETWORK, TS_ACT_SYNC};
        uint32_t y = g->tl_y + g->tl_h;
        uint64_t acc = 0;
        for (int p = 0; p < 3; p++) {
            uint32_t top = len ? (uint32_t)((g->tl_h * (acc + parts[p]) + len / 2) / len) : (p == 0 ? g->tl_h : 0);
            uint32_t bot = len ? (uint32_t)((g->tl_h * acc + len / 2) / len) : 0;
            acc += parts[p];
            if (top > bot)
                rect(img, g->tl_x + x0, y - top, bw, top - bot, ts_viz_state_rgb[st[p]]);
        }
    }
}

/* Units, coloured from per-state counts (cnt(u, s) via the callback's data). */
typedef void (*counts_fn)(const void *src, uint32_t u, uint64_t cnt[TS_ACT_NSTATES]);

static ts_status draw_units(ts_viz_image *img, const ts_viz_geom *g, const ts_viz_port *port, const ts_activity *a,
                            counts_fn fn, const void *src, double *util_out, ts_err *err)
{
    uint32_t n = ts_activity_nunits(a), pix, cells;
    ts_viz_port_scale(g, port, &pix, &cells);
    uint32_t x0 = port ? port->x0 : 0, y0 = port ? port->y0 : 0;
    uint32_t bw = g->map_w / pix, bh = g->map_h / pix; /* blocks the map shows */
    uint32_t sq = pix >= 3 ? pix - 1 : pix;             /* a gap between squares when they are large */
    /* blocks of several cells: sum their units' counts first */
    uint64_t *sum = NULL;
    if (cells > 1) {
        sum = ts_calloc((size_t)bw * bh * TS_ACT_NSTATES, sizeof *sum);
        if (!sum)
            return ts_err_set(err, TS_ENOMEM, "out of memory drawing %ux%u blocks", bw, bh);
    }
    double util = 0;
    for (uint32_t u = 0; u < n; u++) {
        uint64_t cnt[TS_ACT_NSTATES], tot = 0;
        fn(src, u, cnt);
        for (int s = 0; s < TS_ACT_NSTATES; s++)
            tot += cnt[s];
        if (tot)
            util += (double)(cnt[TS_ACT_COMPUTE] + cnt[TS_ACT_NETWORK] + cnt[TS_ACT_MEMORY]) / (double)tot;
        uint32_t x, y;
        ts_activity_pos(a, u, &x, &y);
        if (x < x0 || y < y0)
            continue;
        uint32_t bx = (x - x0) / cells, by = (y - y0) / cells;
        if (bx >= bw || by >= bh)
            continue;
        if (sum) {
            uint64_t *c = sum + ((size_t)by * bw + bx) * TS_ACT_NSTATES;
            for (int s = 0; s < TS_ACT_NSTATES; s++)
                c[s] += cnt[s];
            continue;
        }
        uint8_t rgb[3];
        ts_viz_unit_rgb(cnt, rgb);
        rect(img, g->map_x + bx * pix, g->map_y + by * pix, sq, sq, rgb);
    }
    if (sum) {
        for (uint32_t by = 0; by < bh; by++)
            for (uint32_t bx = 0; bx < bw; bx++) {
                const uint64_t *c = sum + ((size_t)by * bw + bx) * TS_ACT_NSTATES;
                uint64_t tot = 0;
                for (int s = 0; s < TS_ACT_NSTATES; s++)
                    tot += c[s];
                if (!tot)
                    continue; /* no unit there */
                uint8_t rgb[3];
                ts_viz_unit_rgb(c, rgb);
                rect(img, g->map_x + bx * pix, g->map_y + by * pix, sq, sq, rgb);
            }
        ts_free(sum);
    }
    *util_out = n ? util / n : 0;
    return TS_OK;
}

uint32_t ts_viz_flow_len(const ts_viz_geom *g, const ts_activity *a, uint64_t bytes, uint64_t cycles)
{
    double peak = ts_activity_flow_peak(a);
    if (!g->flow_w || !(peak > 0) || !cycles)
        return 0;
    double share = (double)bytes / (double)cycles / peak;
    if (share > 1)
        share = 1;
    return (uint32_t)(share * (double)g->flow_w + 0.5);
}

/* The flow strips: east as a bar from the west end with its head to the east, west from the east
 * end with its head to the west; a head (a 4-pixel triangle inside the bar's length) once any
 * byte moved. */
static void flows(ts_viz_image *img, const ts_viz_geom *g, const ts_activity *a, const uint64_t flow[TS_ACT_NDIRS],
                  uint64_t cycles)
{
    if (!g->flow_w)
        return;
    const uint8_t *rgb = ts_viz_state_rgb[TS_ACT_NETWORK];
    for (int d = 0; d < 2; d++) {
        uint32_t y = g->flow_y + (uint32_t)d * TS_VIZ_FLOW_ROW;
        ts_viz_text(img, MARGIN, y, 1, text_rgb, d == 0 ? "E>" : "<W");
        rect(img, g->flow_x, y + 3, g->flow_w, 1, track_rgb); /* the track */
        uint32_t len = ts_viz_flow_len(g, a, flow[d], cycles);
        if (flow[d] && len < 4)
            len = 4; /* a head shows that something moved */
        for (uint32_t i = 0; i < len; i++) {
            uint32_t from_tip = len - 1 - i; /* 0 at the head's point */
            uint32_t half = from_tip < 3 ? from_tip : 3;
            uint32_t x = d == 0 ? g->flow_x + i : g->flow_x + g->flow_w - 1 - i;
            if (from_tip >= 3)
                rect(img, x, y + 1, 1, 5, rgb); /* the body, 5 high */
            else
                rect(img, x, y + 3 - half, 1, 2 * half + 1, rgb); /* the head narrows to its point */
        }
        char t[32];
        snprintf(t, sizeof t, "%.1f B/CYC", cycles ? (double)flow[d] / (double)cycles : 0.0);
        ts_viz_text(img, g->flow_x + g->flow_w + 6, y, 1, text_rgb, t);
    }
}

/* One square of each state's colour, with its name. */
static void legend(ts_viz_image *img, const ts_viz_geom *g)
{
    uint32_t x = MARGIN;
    for (int s = 0; s < TS_ACT_NSTATES; s++) {
        rect(img, x, g->legend_y, 7, 7, ts_viz_state_rgb[s]);
        x = ts_viz_text(img, x + 10, g->legend_y, 1, text_rgb, ts_act_state_name((ts_act_state)s)) + 12;
    }
    /* the heat scale: the compute hue from the dim floor (0 % working) to full (100 %), as
     * ts_viz_unit_rgb draws it */
    x = ts_viz_text(img, x + 6, g->legend_y, 1, text_rgb, "heat 0%") + 4;
    for (uint32_t i = 0; i < 48; i++) {
        uint64_t cnt[TS_ACT_NSTATES] = {0};
        cnt[TS_ACT_COMPUTE] = i + 1;
        cnt[TS_ACT_IDLE] = 48 - (i + 1);
        uint8_t rgb[3];
        ts_viz_unit_rgb(cnt, rgb);
        rect(img, x + i, g->legend_y, 1, 7, rgb);
    }
    ts_viz_text(img, x + 52, g->legend_y, 1, text_rgb, "100%");
}

/* Text centred on pixel column cx of the map, if it starts at or after *free (then *free moves
 * past it, with a gap) and ends inside the map. */
static void label_at(ts_viz_image *img, const ts_viz_geom *g, uint32_t cx, const char *s, uint32_t *free)
{
    uint32_t w = 6 * (uint32_t)strlen(s) - 1;
    if (cx < w / 2 || cx - w / 2 < *free || cx - w / 2 + w > g->map_x + g->map_w + 8)
        return;
    ts_viz_text(img, cx - w / 2, g->lab_y, 1, text_rgb, s);
    *free = cx - w / 2 + w + 6;
}

/* Labels under the map's columns: the family's (each run of equal labels once, centred on it),
 * or else the column number every round step (1, 2, 5, 10, ...) at least 36 pixels apart;
 * a label that would overlap the one before it is left out. */
static void column_labels(ts_viz_image *img, const ts_viz_geom *g, const ts_viz_port *port, const ts_activity *a)
{
    uint32_t pix, cells, gw, gh, free = 0;
    ts_viz_port_scale(g, port, &pix, &cells);
    ts_activity_grid(a, &gw, &gh);
    uint32_t x0 = port ? port->x0 : 0, bw = g->map_w / pix;
    char num[16];
    if (!ts_activity_column_label(a, 0) && !ts_activity_column_label(a, gw > 1 ? 1 : 0)) {
        uint64_t step = 1;
        for (int i = 0; step * pix < 36 * (uint64_t)cells; i++)
            step = i % 3 == 1 ? step / 2 * 5 : step * 2;
        for (uint64_t x = (x0 + step - 1) / step * step; x < gw && x < x0 + (uint64_t)bw * cells; x += step) {
            snprintf(num, sizeof num, "%u", (uint32_t)x);
            uint32_t bx = (uint32_t)(x - x0) / cells;
            label_at(img, g, g->map_x + bx * pix + pix / 2, num, &free);
        }
        return;
    }
    for (uint32_t bx = 0; bx < bw && x0 + bx * cells < gw;) {
        const char *lab = ts_activity_column_label(a, x0 + bx * cells);
        uint32_t be = bx + 1;
        while (be < bw && x0 + be * cells < gw && lab) {
            const char *next = ts_activity_column_label(a, x0 + be * cells);
            if (!next || strcmp(next, lab))
                break;
            be++;
        }
        if (lab)
            label_at(img, g, g->map_x + (bx + be) * pix / 2, lab, &free);
        bx = be;
    }
}

/* Numbers left of the map's rows, for layouts whose columns carry numbers too (the mesh): the row
 * number every round step (1, 2, 5, 10, ...) at least 12 pixels apart, right-aligned. */
static void row_labels(ts_viz_image *img, const ts_viz_geom *g, const ts_viz_port *port, const ts_activity *a)
{
    if (!g->row_lab)
        return;
    uint32_t pix, cells, gw, gh;
    ts_viz_port_scale(g, port, &pix, &cells);
    ts_activity_grid(a, &gw, &gh);
    uint32_t y0 = port ? port->y0 : 0, bh = g->map_h / pix;
    uint64_t step = 1;
    for (int i = 0; step * pix < 12 * (uint64_t)cells; i++)
        step = i % 3 == 1 ? step / 2 * 5 : step * 2;
    char num[16];
    for (uint64_t y = (y0 + step - 1) / step * step; y < gh && y < y0 + (uint64_t)bh * cells; y += step) {
        uint32_t w = 6 * (uint32_t)snprintf(num, sizeof num, "%u", (uint32_t)y) - 1;
        uint32_t cy = g->map_y + (uint32_t)(y - y0) / cells * pix + pix / 2;
        uint32_t ty = cy < g->map_y + 3 ? g->map_y : cy - 3; /* inside the map's height */
        if (ty + 7 > g->map_y + g->map_h)
            ty = g->map_y + g->map_h >= 7 ? g->map_y + g->map_h - 7 : 0;
        if (g->map_x >= w + 3)
            ts_viz_text(img, g->map_x - 3 - w, ty, 1, text_rgb, num);
    }
}

/* The title line: config and workload, when the run gave one. */
static void title_line(ts_viz_image *img, const ts_viz_geom *g, const ts_activity *a)
{
    ts_viz_text(img, g->text_x, g->title_y, 1, text_rgb, ts_activity_title(a));
}

/* The text line at the geometry's scale, or at half of it when it would not fit the width (long
 * runs with the power); the smaller text is centred in the line's height. */
static void text_line(ts_viz_image *img, const ts_viz_geom *g, const char *text)
{
    uint32_t scale = g->text_scale;
    if (scale > 1 && g->text_x + 6 * scale * (uint32_t)strlen(text) > g->w - MARGIN)
        scale = 1;
    uint32_t y = g->text_y + 7 * (g->text_scale - scale) / 2;
    ts_viz_text(img, g->text_x, y, scale, text_rgb, text);
}

static void frame_counts(const void *src, uint32_t u, uint64_t cnt[TS_ACT_NSTATES])
{
    const ts_act_frame *f = src;
    for (int s = 0; s < TS_ACT_NSTATES; s++)
        cnt[s] = f->state[s][u];
}

static void total_counts(const void *src, uint32_t u, uint64_t cnt[TS_ACT_NSTATES])
{
    for (int s = 0; s < TS_ACT_NSTATES; s++)
        cnt[s] = ts_activity_total(src, u, (ts_act_state)s);
}

ts_status ts_viz_render_frame(ts_viz_image *img, const ts_activity *a, const ts_act_frame *f,
                              const ts_viz_port *port, ts_err *err)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ts_status rc = alloc_image(img, &g, err);
    double util = 0;
    if (rc != TS_OK || (rc = draw_units(img, &g, port, a, frame_counts, f, &util, err)) != TS_OK)
        return rc;
    size_t nss;
    const ts_act_superstep *ss = ts_activity_supersteps(a, &nss);
    timeline(img, &g, ss, f->supersteps < nss ? (size_t)f->supersteps : nss);
    legend(img, &g);
    title_line(img, &g, a);
    column_labels(img, &g, port, a);
    row_labels(img, &g, port, a);
    flows(img, &g, a, f->flow, f->cycles);
    char text[160];
    double bpc = f->cycles ? (double)f->bytes / (double)f->cycles : 0;
    if (f->priced) /* single spaces: the power must fit too */
        snprintf(text, sizeof text, "CYCLE %" PRIu64 " STEP %" PRIu64 " UTIL %.0f%% %.1f B/CYC %.1f W",
                 f->start + f->cycles, f->supersteps, 100.0 * util, bpc, f->watts);
    else
        snprintf(text, sizeof text, "CYCLE %" PRIu64 "  STEP %" PRIu64 "  UTIL %.0f%%  %.1f B/CYC",
                 f->start + f->cycles, f->supersteps, 100.0 * util, bpc);
    text_line(img, &g, text);
    return TS_OK;
}

ts_status ts_viz_render_summary(ts_viz_image *img, const ts_activity *a, const ts_viz_port *port, ts_err *err)
{
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    ts_status rc = alloc_image(img, &g, err);
    double util = 0;
    if (rc != TS_OK || (rc = draw_units(img, &g, port, a, total_counts, a, &util, err)) != TS_OK)
        return rc;
    size_t nss;
    const ts_act_superstep *ss = ts_activity_supersteps(a, &nss);
    timeline(img, &g, ss, nss);
    legend(img, &g);
    title_line(img, &g, a);
    column_labels(img, &g, port, a);
    row_labels(img, &g, port, a);
    uint64_t cyc = ts_activity_cycles(a), fl[TS_ACT_NDIRS];
    for (int d = 0; d < TS_ACT_NDIRS; d++)
        fl[d] = ts_activity_total_flow(a, (ts_act_dir)d);
    flows(img, &g, a, fl, cyc);
    char text[160];
    double bpc = cyc ? (double)ts_activity_total_bytes(a) / (double)cyc : 0;
    double joules = ts_activity_total_joules(a), secs = ts_activity_seconds(a);
    if (secs > 0) /* the windows were priced: mean power */
        snprintf(text, sizeof text, "CYCLES %" PRIu64 " STEPS %zu UTIL %.0f%% %.1f B/CYC %.1f W", cyc, nss,
                 100.0 * util, bpc, joules / secs);
    else
        snprintf(text, sizeof text, "CYCLES %" PRIu64 "  STEPS %zu  UTIL %.0f%%  %.1f B/CYC", cyc, nss, 100.0 * util,
                 bpc);
    text_line(img, &g, text);
    return TS_OK;
}
