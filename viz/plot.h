/* viz/plot.h — plots of sweep results: a CSV table, line and scatter plots per group, Pareto
 * fronts, drawn with cairo into a PNG.
 *
 * The table is any RFC 4180 CSV with a header row; the sweep's (docs/sweep.md) has a column per
 * axis and metric and an `error` column that is empty when the point ran. Preparing a plot picks
 * the x and y columns (and the group and Pareto columns), skips failing rows, checks that every
 * value used is a number (else `file:line:col`), sorts each group by x and chooses the axis
 * ranges and ticks. Everything but the drawing needs only core, so tests and the fuzz target run
 * without cairo; without cairo in the build, ts_plot_write_png fails with TS_EINPUT.
 */
#ifndef TS_VIZ_PLOT_H
#define TS_VIZ_PLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

/* ---------------------------------------------------------------------------------------------
 * The table. */

typedef struct ts_table ts_table; /* opaque */

/* Read a CSV file whole. Every row must have as many fields as the header; a quoted field may
 * hold commas, doubled quotes and line breaks; CRLF line ends are accepted. */
ts_status ts_table_load(ts_table **out, const char *path, ts_err *err);
/* The same from text; `name` is the file name in messages. */
ts_status ts_table_parse(ts_table **out, const char *name, const char *text, size_t len, ts_err *err);
void ts_table_destroy(ts_table *t); /* NULL is a no-op */

size_t ts_table_ncols(const ts_table *t);
size_t ts_table_nrows(const ts_table *t); /* without the header */
const char *ts_table_name(const ts_table *t);         /* the file name given */
const char *ts_table_header(const ts_table *t, size_t c);
const char *ts_table_cell(const ts_table *t, size_t r, size_t c); /* borrowed, unquoted */
/* Where cell (r, c) starts in the file: 1-based line and column (of its opening quote, if any). */
void ts_table_pos(const ts_table *t, size_t r, size_t c, int *line, int *col);

/* The column named `name`: its index in *col, or TS_EINPUT "unknown column 'x' (did you mean
 * 'y'?; columns: ...)", the suggestion when one name is close. `what` says which option named it
 * (e.g. "--x"), for the message. */
ts_status ts_table_column(const ts_table *t, const char *name, const char *what, size_t *col,
                          ts_err *err);
/* Cell (r, c) as a finite number (decimal or exponent form, as the sweep writes them). An empty
 * cell is 1 with *v untouched; text that is not a number is TS_EINPUT at the cell's line and
 * column. Returns 0 for a number. */
int ts_table_number(const ts_table *t, size_t r, size_t c, double *v, ts_err *err);

/* ---------------------------------------------------------------------------------------------
 * The pure parts of a plot: ticks, tick labels, Pareto fronts. */

#define TS_PLOT_MAX_TICKS 32

/* An axis: its range and tick values. */
typedef struct ts_plot_axis {
    double lo, hi;                   /* the range drawn (data range with a margin) */
    bool log;                        /* logarithmic (lo > 0) */
    double step;                     /* linear: tick spacing; log: ratio between ticks (10^k) or 0 */
    size_t nticks;
    double ticks[TS_PLOT_MAX_TICKS]; /* increasing, inside [lo, hi] */
} ts_plot_axis;

/* The smallest "nice" number (1, 2 or 5 times a power of ten) not below x > 0; with round set,
 * the nice number nearest x (Heckbert's nice numbers, Graphics Gems, 1990). */
double ts_plot_nice(double x, bool round);
/* Linear axis for data in [min, max]: ticks every 1, 2 or 5 x 10^k, about `target` of them
 * (3..12) and never fewer than three, the range padded by 4% of the span on each side (or
 * around a single value). */
void ts_plot_axis_linear(ts_plot_axis *a, double min, double max, int target);
/* Log axis for positive data in [min, max]: ticks at 1, 2 and 5 times powers of ten when the
 * range spans under two decades, at powers of ten (every k-th when many) otherwise; the range
 * padded by 4% of its span in log space. */
void ts_plot_axis_log(ts_plot_axis *a, double min, double max);
/* A tick label with an SI suffix (p n µ m, k M G T P): 0, 250m, 1.5k, 120k, 2.25G. Enough
 * decimals to tell ticks `step` apart (step 0: the shortest form of up to 3 significant
 * digits). Returns the length written (out always NUL-terminated). */
size_t ts_plot_si(double v, double step, char *out, size_t n);

/* Pareto-optimal points of (a[i], b[i]), i < n: minimising both, or maximising a or b when max_a
 * or max_b is set. A point is on the front when no other point is at least as good in both and
 * better in one (equal points are all on it). Sets on[i]; returns how many are on the front.
 * O(n log n). Returns 0 with on untouched when out of memory (*oom set). */
size_t ts_plot_pareto(const double *a, const double *b, size_t n, bool max_a, bool max_b, bool *on,
                      bool *oom);

/* ---------------------------------------------------------------------------------------------
 * A plot. */

typedef struct ts_plot_opts {
    const char *x, *y;          /* column names; NULL: the Pareto columns */
    const char *group;          /* column whose values make one series each; NULL: one series */
    const char *pareto;         /* "A,B" with optional "max:" before either, or NULL */
    bool scatter;               /* markers only (default: lines through the markers, by x) */
    bool logx, logy;
    const char *xlabel, *ylabel, *title; /* NULL: from the column names */
    uint32_t width, height;     /* pixels (0: 800 x 500) */
} ts_plot_opts;

typedef struct ts_plot ts_plot; /* opaque: the series, axes and labels, ready to draw */

/* Pick the columns and rows of t and lay out the plot. Errors (TS_EINPUT): unknown columns, a
 * malformed --pareto, a value that is not a number (at its line and column), a non-positive value
 * on a log axis, no row to plot. t must outlive the plot. */
ts_status ts_plot_prepare(ts_plot **out, const ts_table *t, const ts_plot_opts *o, ts_err *err);
void ts_plot_destroy(ts_plot *p); /* NULL is a no-op */

size_t ts_plot_npoints(const ts_plot *p);   /* rows plotted */
size_t ts_plot_nfailed(const ts_plot *p);   /* rows skipped because their `error` is not empty */
size_t ts_plot_nempty(const ts_plot *p);    /* rows skipped because a value used is empty */
size_t ts_plot_ngroups(const ts_plot *p);
const char *ts_plot_group_name(const ts_plot *p, size_t g); /* the group column's value */
/* The group's legend entry: a numeric value of 1000 or more with an SI prefix (1.25G), when that
 * tells every group apart, else the value as written. */
const char *ts_plot_group_label(const ts_plot *p, size_t g);
/* The group's colour as 0xRRGGBB (the Pareto marks are TS_PLOT_PARETO_RGB, in no group). */
uint32_t ts_plot_group_rgb(size_t g);
#define TS_PLOT_PARETO_RGB 0xd62728u
size_t ts_plot_npareto(const ts_plot *p);   /* rows on the Pareto front (0 without --pareto) */
/* Row index (in the table) of the i-th point on the front, in increasing order of the first
 * Pareto column. */
size_t ts_plot_pareto_row(const ts_plot *p, size_t i);
/* Lines are drawn and several rows of one group share an x value (the line would zig-zag). */
bool ts_plot_x_repeats(const ts_plot *p);
const ts_plot_axis *ts_plot_xaxis(const ts_plot *p);
const ts_plot_axis *ts_plot_yaxis(const ts_plot *p);

/* Draw the plot with cairo and write it as a PNG (through a temporary file and a rename). */
ts_status ts_plot_write_png(const ts_plot *p, const char *path, ts_err *err);

#endif
