/* core/stats.c — the statistics registry.
 *
 * Statistics live in an array of pointers (so a ts_stat handed out stays valid while more are
 * added) in insertion order, with an open-addressing hash of names beside it for duplicate checks
 * and look-ups in O(1). Every string is copied; the registry owns all memory it points to.
 */
#include "core/stats.h"

#include <stdbool.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"

/* One statistic: the public view plus the owned copies it points into. */
typedef struct stat_rec {
    ts_stat pub;     /* pointers in pub alias the owned fields below */
    char *name, *unit, *desc;
    double *v;       /* ARRAY values or HIST counts */
    char **cols, **col_units;
    double *rows;    /* TABLE rows, row-major */
    size_t rows_cap; /* rows allocated, in rows */
    char **label_cols, **labels; /* TABLE text columns: pub.nlabels names, nrows * nlabels cells */
} stat_rec;

struct ts_stats {
    stat_rec **recs; /* owned, insertion order */
    size_t n, cap;
    size_t *hash;    /* owned; slot holds index + 1, 0 = empty; size is a power of two */
    size_t hcap;
};

ts_stats *ts_stats_create(void)
{
    return ts_calloc(1, sizeof(ts_stats));
}

/* Free a table's text columns (all or what a failed ts_stats_table_labels copied). */
static void labels_free(stat_rec *r)
{
    for (size_t i = 0; r->label_cols && i < r->pub.nlabels; i++)
        ts_free(r->label_cols[i]);
    for (size_t i = 0; r->labels && i < r->pub.nlabels * r->pub.nrows; i++)
        ts_free(r->labels[i]);
    ts_free(r->label_cols);
    ts_free(r->labels);
    r->label_cols = r->labels = NULL;
    r->pub.nlabels = 0;
    r->pub.label_cols = r->pub.labels = NULL;
}

static void rec_free(stat_rec *r)
{
    if (!r)
        return;
    ts_free(r->name);
    ts_free(r->unit);
    ts_free(r->desc);
    ts_free(r->v);
    if (r->cols)
        for (size_t i = 0; i < r->pub.ncols; i++)
            ts_free(r->cols[i]);
    if (r->col_units)
        for (size_t i = 0; i < r->pub.ncols; i++)
            ts_free(r->col_units[i]);
    ts_free(r->cols);
    ts_free(r->col_units);
    labels_free(r);
    ts_free(r->rows);
    ts_free(r);
}

void ts_stats_destroy(ts_stats *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        rec_free(s->recs[i]);
    ts_free(s->recs);
    ts_free(s->hash);
    ts_free(s);
}

static size_t name_hash(const char *name)
{
    return (size_t)ts_fnv1a(TS_FNV_SEED, name, strlen(name));
}

/* Slot of name in the hash: the slot holding it, or the empty slot where it would go. */
static size_t slot_of(const ts_stats *s, const char *name)
{
    size_t mask = s->hcap - 1;
    size_t i = name_hash(name) & mask;
    while (s->hash[i] && strcmp(s->recs[s->hash[i] - 1]->name, name) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Keep the hash at most half full. 0 on success. */
static int hash_reserve(ts_stats *s, size_t need)
{
    if (need * 2 <= s->hcap)
        return 0;
    size_t nc = s->hcap ? s->hcap * 2 : 16;
    while (need * 2 > nc)
        nc *= 2;
    size_t *nh = ts_calloc(nc, sizeof *nh);
    if (!nh)
        return -1;
    ts_free(s->hash);
    s->hash = nh;
    s->hcap = nc;
    for (size_t i = 0; i < s->n; i++)
        s->hash[slot_of(s, s->recs[i]->name)] = i + 1;
    return 0;
}

/* Start a statistic: checks the name is new, reserves room and copies the strings.
 * On success *out is a zeroed record not yet in the registry (see add()). */
static ts_status begin(ts_stats *s, const char *name, const char *unit, const char *desc,
                       ts_stat_kind kind, stat_rec **out)
{
    *out = NULL;
    if (!s)
        return TS_ENOMEM; /* the registry itself could not be created */
    if (!name || !*name)
        return TS_EINTERNAL;
    if (s->hcap && s->hash[slot_of(s, name)])
        return TS_EINTERNAL; /* duplicate name */
    if (hash_reserve(s, s->n + 1) || ts_grow((void **)&s->recs, &s->cap, s->n + 1, sizeof *s->recs))
        return TS_ENOMEM;
    stat_rec *r = ts_calloc(1, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    r->name = ts_strdup(name);
    r->unit = ts_strdup(unit ? unit : "");
    r->desc = ts_strdup(desc ? desc : "");
    if (!r->name || !r->unit || !r->desc) {
        rec_free(r);
        return TS_ENOMEM;
    }
    r->pub.name = r->name;
    r->pub.unit = r->unit;
    r->pub.desc = r->desc;
    r->pub.kind = kind;
    *out = r;
    return TS_OK;
}

/* Put a record made by begin() into the registry; cannot fail (room was reserved). */
static size_t add(ts_stats *s, stat_rec *r)
{
    s->recs[s->n] = r;
    s->hash[slot_of(s, r->name)] = s->n + 1;
    return s->n++;
}

ts_status ts_stats_u64(ts_stats *s, const char *name, const char *unit, const char *desc, uint64_t v)
{
    stat_rec *r;
    ts_status st = begin(s, name, unit, desc, TS_STAT_U64, &r);
    if (st)
        return st;
    r->pub.u = v;
    r->pub.f = (double)v;
    add(s, r);
    return TS_OK;
}

ts_status ts_stats_f64(ts_stats *s, const char *name, const char *unit, const char *desc, double v)
{
    stat_rec *r;
    ts_status st = begin(s, name, unit, desc, TS_STAT_F64, &r);
    if (st)
        return st;
    r->pub.f = v;
    add(s, r);
    return TS_OK;
}

ts_status ts_stats_array(ts_stats *s, const char *name, const char *unit, const char *desc,
                         const double *v, size_t n)
{
    if (n && !v)
        return TS_EINTERNAL;
    stat_rec *r;
    ts_status st = begin(s, name, unit, desc, TS_STAT_ARRAY, &r);
    if (st)
        return st;
    if (n) {
        r->v = ts_malloc(n * sizeof *r->v);
        if (!r->v) {
            rec_free(r);
            return TS_ENOMEM;
        }
        memcpy(r->v, v, n * sizeof *r->v);
    }
    r->pub.v = r->v;
    r->pub.n = n;
    add(s, r);
    return TS_OK;
}

ts_status ts_stats_hist(ts_stats *s, const char *name, const char *unit, const char *desc,
                        const uint64_t *counts, size_t n, double lo, double width)
{
    if (n && !counts)
        return TS_EINTERNAL;
    stat_rec *r;
    ts_status st = begin(s, name, unit, desc, TS_STAT_HIST, &r);
    if (st)
        return st;
    if (n) {
        r->v = ts_malloc(n * sizeof *r->v);
        if (!r->v) {
            rec_free(r);
            return TS_ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            r->v[i] = (double)counts[i];
    }
    r->pub.v = r->v;
    r->pub.n = n;
    r->pub.lo = lo;
    r->pub.width = width;
    add(s, r);
    return TS_OK;
}

int ts_stats_table(ts_stats *s, const char *name, const char *desc, size_t ncols,
                   const char *const *cols, const char *const *col_units)
{
    if (ncols == 0 || !cols)
        return -1;
    stat_rec *r;
    if (begin(s, name, "", desc, TS_STAT_TABLE, &r))
        return -1;
    r->cols = ts_calloc(ncols, sizeof *r->cols);
    r->col_units = ts_calloc(ncols, sizeof *r->col_units);
    r->pub.ncols = ncols; /* set before any copy so rec_free frees what was copied */
    if (!r->cols || !r->col_units) {
        rec_free(r);
        return -1;
    }
    for (size_t i = 0; i < ncols; i++) {
        r->cols[i] = ts_strdup(cols[i] ? cols[i] : "");
        r->col_units[i] = ts_strdup(col_units && col_units[i] ? col_units[i] : "");
        if (!r->cols[i] || !r->col_units[i]) {
            rec_free(r);
            return -1;
        }
    }
    r->pub.cols = (const char *const *)r->cols;
    r->pub.col_units = (const char *const *)r->col_units;
    size_t idx = add(s, r);
    return idx > (size_t)0x7fffffff ? -1 : (int)idx;
}

ts_status ts_stats_row(ts_stats *s, int table, const double *vals)
{
    if (!s || table < 0 || (size_t)table >= s->n || !vals)
        return TS_EINTERNAL;
    stat_rec *r = s->recs[table];
    if (r->pub.kind != TS_STAT_TABLE || r->pub.nlabels) /* text columns close a table */
        return TS_EINTERNAL;
    size_t nc = r->pub.ncols;
    if (r->pub.nrows == r->rows_cap) {
        size_t cap = r->rows_cap ? r->rows_cap * 2 : 16;
        if (cap > ((size_t)-1) / sizeof(double) / nc)
            return TS_ENOMEM;
        double *p = ts_realloc(r->rows, cap * nc * sizeof *p);
        if (!p)
            return TS_ENOMEM;
        r->rows = p;
        r->rows_cap = cap;
    }
    memcpy(r->rows + r->pub.nrows * nc, vals, nc * sizeof *vals);
    r->pub.nrows++;
    r->pub.rows = r->rows;
    return TS_OK;
}

ts_status ts_stats_table_labels(ts_stats *s, int table, size_t n, const char *const *cols,
                                const char *const *cells)
{
    if (!s || table < 0 || (size_t)table >= s->n || !n || !cols)
        return TS_EINTERNAL;
    stat_rec *r = s->recs[table];
    if (r->pub.kind != TS_STAT_TABLE || r->pub.nlabels)
        return TS_EINTERNAL;
    size_t nr = r->pub.nrows;
    r->label_cols = ts_calloc(n, sizeof *r->label_cols);
    r->labels = ts_calloc(nr ? nr * n : 1, sizeof *r->labels);
    r->pub.nlabels = n; /* set before any copy so labels_free frees what was copied */
    bool ok = r->label_cols && r->labels;
    for (size_t i = 0; ok && i < n; i++)
        ok = (r->label_cols[i] = ts_strdup(cols[i] ? cols[i] : "")) != NULL;
    for (size_t i = 0; ok && i < nr * n; i++)
        ok = (r->labels[i] = ts_strdup(cells && cells[i] ? cells[i] : "")) != NULL;
    if (!ok) {
        labels_free(r);
        return TS_ENOMEM;
    }
    r->pub.label_cols = (const char *const *)r->label_cols;
    r->pub.labels = (const char *const *)r->labels;
    return TS_OK;
}

ts_status ts_stats_table_add_column(ts_stats *s, int table, const char *name, const char *unit,
                                    const double *vals)
{
    if (!s || table < 0 || (size_t)table >= s->n || !name || (!vals && s->recs[table]->pub.nrows))
        return TS_EINTERNAL;
    stat_rec *r = s->recs[table];
    if (r->pub.kind != TS_STAT_TABLE)
        return TS_EINTERNAL;
    size_t nc = r->pub.ncols, nr = r->pub.nrows;
    char **cols = ts_realloc(r->cols, (nc + 1) * sizeof *cols);
    if (cols)
        r->cols = cols;
    char **units = cols ? ts_realloc(r->col_units, (nc + 1) * sizeof *units) : NULL;
    if (units)
        r->col_units = units;
    double *rows = units ? ts_calloc(nr ? nr * (nc + 1) : 1, sizeof *rows) : NULL;
    char *cn = rows ? ts_strdup(name) : NULL, *cu = cn ? ts_strdup(unit ? unit : "") : NULL;
    if (!cu) {
        ts_free(rows);
        ts_free(cn);
        r->pub.cols = (const char *const *)r->cols;
        r->pub.col_units = (const char *const *)r->col_units;
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < nr; i++) {
        memcpy(rows + i * (nc + 1), r->rows + i * nc, nc * sizeof *rows);
        rows[i * (nc + 1) + nc] = vals[i];
    }
    ts_free(r->rows);
    r->rows = rows;
    r->rows_cap = nr;
    r->cols[nc] = cn;
    r->col_units[nc] = cu;
    r->pub.ncols = nc + 1;
    r->pub.cols = (const char *const *)r->cols;
    r->pub.col_units = (const char *const *)r->col_units;
    r->pub.rows = r->rows;
    return TS_OK;
}

int ts_stats_table_handle(const ts_stats *s, const char *name)
{
    for (size_t i = 0; s && i < s->n && i < 0x7fffffff; i++)
        if (s->recs[i]->pub.kind == TS_STAT_TABLE && !strcmp(s->recs[i]->name, name))
            return (int)i;
    return -1;
}

size_t ts_stats_count(const ts_stats *s)
{
    return s ? s->n : 0;
}

const ts_stat *ts_stats_at(const ts_stats *s, size_t i)
{
    return s && i < s->n ? &s->recs[i]->pub : NULL;
}

const ts_stat *ts_stats_find(const ts_stats *s, const char *name)
{
    if (!s || !name || !s->hcap)
        return NULL;
    size_t slot = slot_of(s, name);
    return s->hash[slot] ? &s->recs[s->hash[slot] - 1]->pub : NULL;
}
