/* viz/roofline.h — a roofline picture of a run (tessera run --roofline FILE): ops per cycle
 * against arithmetic intensity (ops per SRAM byte), both logarithmic, under the chip's two roofs,
 * the SRAM bandwidth (slanted) and the peak MACs (flat), with the run and its layers as points.
 * Drawn with cairo; without cairo in the build, writing fails with TS_EINPUT. */
#ifndef TS_VIZ_ROOFLINE_H
#define TS_VIZ_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* Colours, for tests that find the parts of the picture by their pixels. */
#define TS_ROOF_RGB 0xb2182bu       /* the roofs */
#define TS_ROOF_LAYER_RGB 0x2166acu /* a layer's marker */
#define TS_ROOF_RUN_RGB 0xf28e2bu   /* the whole run's marker */

typedef struct ts_roofline {
    const char *title;      /* borrowed: the title line (config and workload) */
    double peak_ops;        /* ops per cycle at the peak (2 per MAC of the fastest dtype), > 0 */
    double bw;              /* SRAM bytes per cycle, > 0 */
    const double *x, *y;    /* borrowed: n layers' intensity (op/B) and ops per cycle */
    size_t n;               /* layers; a point with x or y not above 0 is left out */
    double run_x, run_y;    /* the whole run's point (left out when not above 0) */
    const char *note;       /* borrowed, optional: a line under the title (why no layers) */
    uint32_t width, height; /* pixels; 0 gives 720 x 480 */
} ts_roofline;

/* Where the point (x, y) lands in the picture of r, in pixels from the top left: for tests.
 * Returns -1 when r is not drawable (no peak or bandwidth). */
int ts_roofline_map(const ts_roofline *r, double x, double y, double *px, double *py);

/* Draw r into a PNG at path (written atomically). TS_EINPUT without a peak or bandwidth, or
 * without cairo in the build. */
ts_status ts_roofline_write_png(const ts_roofline *r, const char *path, ts_err *err);

#endif
