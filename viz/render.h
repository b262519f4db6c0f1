/* viz/render.h — draw activity into RGBA pixels, and write them as PNG.
 *
 * A picture has five parts, top to bottom:
 *   - a title line: the config and workload (ts_activity_set_title);
 *   - a text line (a built-in 5x7 bitmap font, drawn twice its size): cycle, superstep,
 *     utilization, network bytes per cycle and, when the windows are priced, power in watts;
 *   - the units in their physical arrangement (the family's layout grid), one square each (or one
 *     pixel per block of cells on a large layout, see ts_viz_geom). Its hue is the unit's busiest
 *     state other than idle (compute green, network blue, sync orange, memory red), grey when it
 *     did nothing; its brightness is the heat: the share of the cycles the unit was working
 *     (compute, network or memory); under it a line of column labels (the family's, such as
 *     the TSP's slice types and the IPU's tile numbers, or column numbers);
 *   - when the family reports flows (the TSP's streams): two strips, bytes sent east (an arrow
 *     growing from the west edge toward the east) and west (from the east edge toward the west),
 *     as long as their bytes per cycle over the family's peak, with the figure beside them;
 *   - the superstep timeline: one bar per superstep, as wide as its share of the time shown
 *     (at least 1 pixel, with a 1-pixel gap between bars; when that does not fit, the latest
 *     supersteps that fit in equal slots), stacked bottom to top as compute, exchange and sync;
 *     under it a cycle axis (ticks at round cycle counts; with equal slots, the first and last
 *     superstep's number);
 *   - a legend: each state's colour and name, and the heat scale (a unit's brightness from 0 %
 *     to 100 % of its cycles working, in the compute hue);
 *   - an info line, left empty (the live view writes there).
 * A frame shows one window; the summary shows the whole run (per-unit totals).
 * viz knows no chip: everything comes from core/activity.h.
 */
#ifndef TS_VIZ_RENDER_H
#define TS_VIZ_RENDER_H

#include <stdbool.h>
#include <stdint.h>
#include "core/activity.h"
#include "core/err.h"

typedef struct ts_viz_image {
    uint32_t w, h;
    uint8_t *px; /* owned, w x h RGBA, row-major; ts_viz_image_free */
} ts_viz_image;

void ts_viz_image_free(ts_viz_image *img);

/* Where things are drawn for a given layout (in pixels). A layout of at most 213 cells across
 * and down gets cells of 3 to 24 pixels; a larger one (a wafer mesh) is drawn at one pixel per
 * block of `agg` x `agg` cells (agg a power of two), each block coloured from the summed counts
 * of its units. */
#define TS_VIZ_FLOW_ROW 10u /* pixels from the east strip's top to the west strip's */

typedef struct ts_viz_geom {
    uint32_t w, h;                  /* image size */
    uint32_t cell;                  /* pixels per layout cell or block (the square is cell - 1 wide
                                     * when cell >= 3) */
    uint32_t agg;                   /* layout cells per block side: 1, or a power of two */
    uint32_t map_x, map_y;          /* top left of layout cell (0, 0) */
    uint32_t map_w, map_h;          /* the map's size */
    uint32_t lab_y;                 /* the column labels' line under the map */
    uint32_t row_lab;               /* a layout without column labels (the mesh): its rows are
                                     * numbered left of the map, in this many pixels; else 0 */
    uint32_t flow_x, flow_y, flow_w; /* the flow strips (flow_w 0: the family reports no flows):
                                      * east at row flow_y, west at flow_y + FLOW_ROW, each a bar
                                      * of up to flow_w pixels from flow_x, 7 high */
    uint32_t tl_x, tl_y, tl_w, tl_h; /* the timeline strip */
    uint32_t title_y;                /* the title line (config and workload, at scale 1) */
    uint32_t text_x, text_y, text_scale;
    uint32_t axis_y;                 /* the timeline's cycle axis: ticks, then their labels */
    uint32_t legend_y;               /* the legend line: each state's colour and name */
    uint32_t info_y;                 /* a line for the live view's notes (empty in files) */
} ts_viz_geom;

void ts_viz_geometry(const ts_activity *a, ts_viz_geom *g);

/* The length in pixels of a flow bar of `bytes` over `cycles` at the geometry's scale. */
uint32_t ts_viz_flow_len(const ts_viz_geom *g, const ts_activity *a, uint64_t bytes, uint64_t cycles);

/* The part of the layout drawn in the map: zoom 1 (or 0) shows all of it; zoom z (a power of
 * two) shows 1/z of it across and down, from layout cell (x0, y0) at the map's top left. */
typedef struct ts_viz_port {
    uint32_t zoom, x0, y0;
} ts_viz_port;

/* Clamp a port to the layout (zoom a power of two up to 64 x agg, the origin inside it). */
void ts_viz_port_clamp(const ts_activity *a, ts_viz_port *p);
/* The port that shows the units that did anything over the run (their bounding box, with a
 * cell of margin) as large as the map allows; zoom 1 when none did or they span the layout.
 * The wafer's summary is drawn so: a small program fills the map instead of a dot in it. */
void ts_viz_port_fit(const ts_activity *a, ts_viz_port *p);
/* Pixels per drawn block and layout cells per block side under a port. */
void ts_viz_port_scale(const ts_viz_geom *g, const ts_viz_port *p, uint32_t *px, uint32_t *cells);
/* The pixel at the middle of layout cell (x, y)'s square (or of its block's pixel); false when
 * the port does not show it. */
bool ts_viz_cell_pixel(const ts_viz_geom *g, const ts_viz_port *p, uint32_t x, uint32_t y, uint32_t *px,
                       uint32_t *py);
/* The layout cell under pixel (px, py): the top-left cell of the block there; false off the map. */
bool ts_viz_pixel_cell(const ts_viz_geom *g, const ts_viz_port *p, uint32_t px, uint32_t py, uint32_t *x,
                       uint32_t *y);

/* Background, and the hue of each state at full heat. */
extern const uint8_t ts_viz_bg[3];
extern const uint8_t ts_viz_state_rgb[TS_ACT_NSTATES][3];

/* The colour of a unit that spent cnt[s] cycles in state s. */
void ts_viz_unit_rgb(const uint64_t cnt[TS_ACT_NSTATES], uint8_t rgb[3]);

/* Draw one window. img is (re)allocated to the geometry's size. port NULL: the whole layout. */
ts_status ts_viz_render_frame(ts_viz_image *img, const ts_activity *a, const ts_act_frame *f,
                              const ts_viz_port *port, ts_err *err);
/* Draw the whole run: per-unit totals of every flushed window and every superstep. */
ts_status ts_viz_render_summary(ts_viz_image *img, const ts_activity *a, const ts_viz_port *port, ts_err *err);

/* Text on a 6-pixel pitch, times `scale`, capitals 7 x scale pixels high from y: in a monospaced
 * outline font through cairo (anti-aliased, blended over the image) when the build has cairo,
 * else in the built-in 5x7 font (digits, letters with lowercase drawn as capitals, space and
 * : . % - / = _ , ( ) + < > [ ]; anything else a box). Clipped to the image. Returns the x after
 * the text. */
uint32_t ts_viz_text(ts_viz_image *img, uint32_t x, uint32_t y, uint32_t scale, const uint8_t rgb[3],
                     const char *s);
/* The rows of a glyph (bit 4 = leftmost column); NULL when the font has none. */
const uint8_t *ts_viz_glyph(char ch);

/* Write img as an 8-bit RGBA PNG, atomically. TS_EINPUT when built without libpng. */
ts_status ts_viz_png_write(const ts_viz_image *img, const char *path, ts_err *err);

#endif
