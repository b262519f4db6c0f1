/* viz/plot_int.h — the prepared plot, shared by viz/plot.c (layout) and viz/plot_draw.c (cairo). */
#ifndef TS_VIZ_PLOT_INT_H
#define TS_VIZ_PLOT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ts_build.h"
#include "viz/plot.h"

typedef struct ts_plot_pt {
    double x, y;   /* the plotted values */
    double pa, pb; /* the Pareto columns' values (with --pareto) */
    size_t row;    /* row in the table */
    size_t group;  /* index into groups */
    bool on_front;
} ts_plot_pt;

typedef struct ts_plot_group {
    const char *name; /* borrowed from the table: the group column's value ("" without --group) */
    double num;       /* the value as a number, when every group's is one */
    char label[32];   /* the legend's text: num with an SI prefix, or "" for the name itself */
    size_t first;     /* first row with this value */
    size_t old;       /* index before sorting */
    size_t start, n;  /* its points: pts[start .. start + n), sorted by x */
} ts_plot_group;

struct ts_plot {
    uint32_t width, height;
    bool scatter, has_pareto, has_legend, front_line, x_repeats;
    ts_plot_pt *pts; /* owned: by group, then x, then row */
    size_t npts, nfailed, nempty;
    ts_plot_group *groups; /* owned */
    size_t ngroups;
    size_t *front; /* owned: indices into pts of the front, by the first Pareto column */
    size_t nfront;
    ts_plot_axis xa, ya;
    char *xlabel, *ylabel, *title, *pareto_label; /* owned */
    const char *group_title;                      /* borrowed: the group column's name or "" */
};

#if TS_HAVE_CAIRO
#include <cairo.h>
/* Destroy cr, write surface s as a PNG at path (atomically) and destroy it, then drop cairo's and
 * fontconfig's caches (a command draws one picture); cr's error, if any, is the result. */
ts_status ts_plot_finish_png(cairo_surface_t *s, cairo_t *cr, const char *path, ts_err *err);
/* The source colour 0xRRGGBB. */
void ts_plot_rgb(cairo_t *cr, uint32_t c);
/* Text with its anchor at (x, y): anchor 0 left, 0.5 centre, 1 right; y is the baseline. */
void ts_plot_text_at(cairo_t *cr, const char *s, double x, double y, double anchor);
/* A bold title at (x, y), its size shrunk from `size` in half pixels until it fits `width`
 * (down to 9 px). */
void ts_plot_title(cairo_t *cr, const char *title, double x, double y, double width, double size);
#endif

#endif
