/* viz/links.h — a heat map of a mesh's links (tessera run --links-png FILE, the wafer): each PE
 * a small grey square, each link between neighbours two bars (one per direction) coloured by its
 * utilisation, the wavelets it carried per cycle of the run (a link carries at most one a cycle),
 * with a colour bar, PE coordinates on the axes and a title line. A mesh too large to draw a PE
 * per 12 pixels is drawn in blocks of PEs, each block's bar the busiest link it stands for.
 * Drawn with cairo; without cairo in the build, writing fails with TS_EINPUT. */
#ifndef TS_VIZ_LINKS_H
#define TS_VIZ_LINKS_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* The colour of a link that carried nothing, and the colour map's ends (for tests). */
#define TS_LINKS_IDLE_RGB 0xdededeu
#define TS_LINKS_LOW_RGB 0xfff5b4u  /* the least utilisation above zero */
#define TS_LINKS_HIGH_RGB 0x800026u /* the colour bar's top */

/* The directions, as the wafer's ports: north is toward y - 1. */
enum { TS_LINK_N, TS_LINK_S, TS_LINK_E, TS_LINK_W, TS_LINK_DIRS };

typedef struct ts_links {
    const char *title;               /* borrowed: the title line (config and workload) */
    uint32_t mw, mh;                 /* the mesh's PEs across and down, > 0 */
    const double *sent[TS_LINK_DIRS]; /* borrowed: mw * mh wavelets each PE's router sent that
                                       * way (index y * mw + x); NULL counts as none */
    double cycles;                   /* the run's cycles, > 0 */
    uint32_t width, height;          /* pixels; 0 gives 760 x 640 */
} ts_links;

/* The utilisation the colour bar's top stands for: the busiest link's, at least 1e-6 (a run
 * with no traffic gets an empty map under a bar of that height). Returns -1 when l is not drawable
 * (no mesh or no cycles). */
int ts_links_scale(const ts_links *l, double *top);

/* The pixel in the middle of the bar of the link PE (x, y) sends over in direction dir, in the
 * picture of l: for tests. Returns -1 when l is not drawable, the PE is outside the mesh or the
 * link leaves it. */
int ts_links_map(const ts_links *l, uint32_t x, uint32_t y, int dir, double *px, double *py);

/* Draw l into a PNG at path (written atomically). TS_EINPUT when not drawable or without cairo. */
ts_status ts_links_write_png(const ts_links *l, const char *path, ts_err *err);

#endif
