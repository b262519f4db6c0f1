/* core/stats.h — named statistics with units: scalars, per-unit arrays, histograms and tables.
 *
 * Families fill a registry after a run; report writers walk it in insertion order, so the order of
 * the report is the order of the calls, deterministic for any thread count.
 */
#ifndef TS_CORE_STATS_H
#define TS_CORE_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef enum ts_stat_kind {
    TS_STAT_U64,   /* an exact count */
    TS_STAT_F64,   /* a derived figure */
    TS_STAT_ARRAY, /* one value per tile / PE / slice */
    TS_STAT_HIST,  /* counts in bins [lo + i*width, lo + (i+1)*width) */
    TS_STAT_TABLE, /* rows of named columns, e.g. one row per superstep or per layer */
} ts_stat_kind;

/* Read-only view of one statistic (all pointers owned by the registry). */
typedef struct ts_stat {
    const char *name;   /* dotted, e.g. "exchange.bytes" */
    const char *unit;   /* "B", "cycles", "J", "" ... */
    const char *desc;
    ts_stat_kind kind;
    uint64_t u;                /* U64 */
    double f;                  /* F64 */
    const double *v; size_t n; /* ARRAY values; HIST counts */
    double lo, width;          /* HIST */
    size_t ncols, nrows;       /* TABLE */
    const char *const *cols, *const *col_units;
    const double *rows;        /* TABLE: nrows * ncols, row-major */
    size_t nlabels;            /* TABLE: text columns beside the numbers (0 when none) */
    const char *const *label_cols;
    const char *const *labels; /* TABLE: nrows * nlabels, row-major */
} ts_stat;

typedef struct ts_stats ts_stats; /* opaque */

ts_stats *ts_stats_create(void);
void ts_stats_destroy(ts_stats *s);

/* Adding a name twice is TS_EINTERNAL. Strings are copied. */
ts_status ts_stats_u64(ts_stats *s, const char *name, const char *unit, const char *desc, uint64_t v);
ts_status ts_stats_f64(ts_stats *s, const char *name, const char *unit, const char *desc, double v);
ts_status ts_stats_array(ts_stats *s, const char *name, const char *unit, const char *desc,
                         const double *v, size_t n);
ts_status ts_stats_hist(ts_stats *s, const char *name, const char *unit, const char *desc,
                        const uint64_t *counts, size_t n, double lo, double width);
/* A table; returns its handle (>= 0) or -1 on OOM / duplicate name. */
int ts_stats_table(ts_stats *s, const char *name, const char *desc, size_t ncols,
                   const char *const *cols, const char *const *col_units);
ts_status ts_stats_row(ts_stats *s, int table, const double *vals);
/* Text columns of a table whose rows are all added (ts_stats_row refuses a row after them): n column names and nrows * n cells (row-major,
 * NULL for an empty cell), copied; the layers table's operator type and node name. Set once. */
ts_status ts_stats_table_labels(ts_stats *s, int table, size_t n, const char *const *cols,
                                const char *const *cells);
/* Append a numeric column to a table whose rows are all added: its name, unit and one value per
 * row (nrows of them), copied. */
ts_status ts_stats_table_add_column(ts_stats *s, int table, const char *name, const char *unit,
                                    const double *vals);
/* The handle of table name for ts_stats_row and ts_stats_table_labels, or -1. */
int ts_stats_table_handle(const ts_stats *s, const char *name);

size_t ts_stats_count(const ts_stats *s);
const ts_stat *ts_stats_at(const ts_stats *s, size_t i);
const ts_stat *ts_stats_find(const ts_stats *s, const char *name);

#endif
