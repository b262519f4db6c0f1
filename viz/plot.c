/* viz/plot.c — the parts of a plot that need no drawing library: the CSV table, column look-up,
 * numbers, ticks and tick labels, Pareto fronts, and the layout of series (viz/plot_draw.c draws
 * them with cairo). */
#include "viz/plot.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/fileio.h"
#include "core/suggest.h"
#include "viz/plot_int.h"

/* ---------------------------------------------------------------------------------------------
 * The table. */

struct ts_table {
    char *name;          /* owned */
    ts_buf text;         /* owned: every cell, header first, each NUL-terminated */
    size_t ncols, nrows; /* nrows without the header */
    size_t *off;         /* owned: (nrows + 1) * ncols offsets into text */
    int *pos;            /* owned: (nrows + 1) * ncols * 2: line and column of each cell */
    size_t cap;          /* cells off and pos have room for */
};

void ts_table_destroy(ts_table *t)
{
    if (!t)
        return;
    ts_free(t->name);
    ts_buf_free(&t->text);
    ts_free(t->off);
    ts_free(t->pos);
    ts_free(t);
}

size_t ts_table_ncols(const ts_table *t) { return t->ncols; }
size_t ts_table_nrows(const ts_table *t) { return t->nrows; }
const char *ts_table_name(const ts_table *t) { return t->name; }
const char *ts_table_header(const ts_table *t, size_t c) { return t->text.data + t->off[c]; }

const char *ts_table_cell(const ts_table *t, size_t r, size_t c)
{
    return t->text.data + t->off[(r + 1) * t->ncols + c];
}

void ts_table_pos(const ts_table *t, size_t r, size_t c, int *line, int *col)
{
    size_t k = (r + 1) * t->ncols + c;
    *line = t->pos[2 * k];
    *col = t->pos[2 * k + 1];
}

/* Append a cell that starts at line:col and holds text.data[start..] (already in the buffer). */
static int add_cell(ts_table *t, size_t ncells, size_t start, int line, int col)
{
    if (ncells >= t->cap) {
        size_t cap = t->cap, cap2 = t->cap;
        void *o = t->off, *p = t->pos;
        if (ts_grow(&o, &cap, ncells + 1, sizeof *t->off))
            return -1;
        t->off = o;
        if (ts_grow(&p, &cap2, ncells + 1, 2 * sizeof *t->pos))
            return -1;
        t->pos = p;
        t->cap = cap < cap2 ? cap : cap2;
    }
    t->off[ncells] = start;
    t->pos[2 * ncells] = line;
    t->pos[2 * ncells + 1] = col;
    return 0;
}

ts_status ts_table_parse(ts_table **out, const char *name, const char *text, size_t len, ts_err *err)
{
    *out = NULL;
    ts_table *t = ts_calloc(1, sizeof *t);
    if (!t || !(t->name = ts_strdup(name))) {
        ts_table_destroy(t);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    ts_status st = TS_OK;
    size_t i = 0, ncells = 0, rec_cells = 0;
    int line = 1, col = 1, rec_line = 1;
    bool in_record = false;
    while (i < len) {
        char ch = text[i];
        if (!in_record) {
            /* a blank line between records is skipped */
            if (ch == '\n' || (ch == '\r' && i + 1 < len && text[i + 1] == '\n')) {
                i += ch == '\r' ? 2 : 1;
                line++;
                col = 1;
                continue;
            }
            in_record = true;
            rec_line = line;
            rec_cells = 0;
        }
        /* one field */
        size_t start = t->text.len;
        int fline = line, fcol = col;
        if (ch == '"') {
            i++;
            col++;
            for (;;) {
                if (i >= len) {
                    st = ts_err_at(err, TS_EINPUT, name, fline, fcol, "quoted field is not closed");
                    goto fail;
                }
                char q = text[i];
                if (q == '"') {
                    if (i + 1 < len && text[i + 1] == '"') {
                        ts_buf_putc(&t->text, '"');
                        i += 2;
                        col += 2;
                        continue;
                    }
                    i++;
                    col++;
                    break;
                }
                if (q == 0) {
                    st = ts_err_at(err, TS_EINPUT, name, line, col, "NUL byte in a field");
                    goto fail;
                }
                ts_buf_putc(&t->text, q);
                i++;
                if (q == '\n') {
                    line++;
                    col = 1;
                } else {
                    col++;
                }
            }
            if (i < len && text[i] != ',' && text[i] != '\n' && !(text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')) {
                st = ts_err_at(err, TS_EINPUT, name, line, col,
                               "unexpected character after a closing quote (a field is quoted whole)");
                goto fail;
            }
        } else {
            while (i < len && text[i] != ',' && text[i] != '\n' &&
                   !(text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')) {
                if (text[i] == '"') {
                    st = ts_err_at(err, TS_EINPUT, name, line, col,
                                   "quote inside an unquoted field (quote the whole field and double the quote)");
                    goto fail;
                }
                if (text[i] == 0) {
                    st = ts_err_at(err, TS_EINPUT, name, line, col, "NUL byte in a field");
                    goto fail;
                }
                ts_buf_putc(&t->text, text[i]);
                i++;
                col++;
            }
        }
        ts_buf_putc(&t->text, 0);
        if (t->text.oom || add_cell(t, ncells, start, fline, fcol)) {
            st = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto fail;
        }
        ncells++;
        rec_cells++;
        /* after the field: a comma (another field follows), a line end or the end of the text */
        if (i < len && text[i] == ',') {
            i++;
            col++;
            if (i < len && text[i] != '\n' && !(text[i] == '\r' && i + 1 < len && text[i + 1] == '\n'))
                continue;
            /* a comma at the end of a line: one more, empty field */
            if (add_cell(t, ncells, t->text.len, line, col)) {
                st = ts_err_set(err, TS_ENOMEM, "out of memory");
                goto fail;
            }
            ts_buf_putc(&t->text, 0);
            if (t->text.oom) {
                st = ts_err_set(err, TS_ENOMEM, "out of memory");
                goto fail;
            }
            ncells++;
            rec_cells++;
            if (i >= len)
                goto end_record;
        }
        if (i < len) { /* a line end */
            i += text[i] == '\r' ? 2 : 1;
            line++;
            col = 1;
        }
    end_record:
        in_record = false;
        if (!t->ncols) {
            t->ncols = rec_cells;
        } else if (rec_cells != t->ncols) {
            st = ts_err_at(err, TS_EINPUT, name, rec_line, 1, "row has %zu field%s, the header has %zu",
                           rec_cells, rec_cells == 1 ? "" : "s", t->ncols);
            goto fail;
        } else {
            t->nrows++;
        }
    }
    if (!t->ncols) {
        st = ts_err_at(err, TS_EINPUT, name, 1, 1, "no header row (the file is empty)");
        goto fail;
    }
    *out = t;
    return TS_OK;
fail:
    ts_table_destroy(t);
    return st;
}

ts_status ts_table_load(ts_table **out, const char *path, ts_err *err)
{
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    ts_status st = ts_read_file(path, &data, &len, err);
    if (st != TS_OK)
        return st;
    st = ts_table_parse(out, path, data, len, err);
    ts_free(data);
    return st;
}

ts_status ts_table_column(const ts_table *t, const char *name, const char *what, size_t *col,
                          ts_err *err)
{
    size_t found = SIZE_MAX;
    for (size_t c = 0; c < t->ncols; c++) {
        if (strcmp(ts_table_header(t, c), name))
            continue;
        if (found != SIZE_MAX)
            return ts_err_at(err, TS_EINPUT, t->name, 1, 1, "%s: column '%s' appears twice in the header",
                             what, name);
        found = c;
    }
    if (found != SIZE_MAX) {
        *col = found;
        return TS_OK;
    }
    size_t best = 4, nl = strlen(name);
    const char *pick = NULL;
    for (size_t c = 0; c < t->ncols; c++) {
        const char *h = ts_table_header(t, c);
        size_t d = ts_edit_distance(name, nl, h, strlen(h), true);
        if (d < best && d < nl) {
            best = d;
            pick = h;
        }
    }
    if (pick)
        return ts_err_set(err, TS_EINPUT, "%s: %s has no column '%s' (did you mean '%s'?)", what, t->name,
                          name, pick);
    ts_buf cols = TS_BUF_INIT;
    for (size_t c = 0; c < t->ncols && cols.len < 300; c++)
        ts_buf_printf(&cols, "%s%s", c ? ", " : "", ts_table_header(t, c));
    ts_err_set(err, TS_EINPUT, "%s: %s has no column '%s' (its columns: %s%s)", what, t->name, name,
               ts_buf_str(&cols), cols.len >= 300 ? ", ..." : "");
    ts_buf_free(&cols);
    return TS_EINPUT;
}

int ts_table_number(const ts_table *t, size_t r, size_t c, double *v, ts_err *err)
{
    const char *s = ts_table_cell(t, r, c);
    if (!*s)
        return 1;
    /* decimal or exponent notation only: no spaces, hex, inf or nan */
    bool ok = true;
    for (const char *p = s; *p && ok; p++)
        ok = isdigit((unsigned char)*p) || *p == '.' || *p == '-' || *p == '+' || *p == 'e' || *p == 'E';
    char *end = NULL;
    double x = ok ? strtod(s, &end) : 0;
    if (ok && (end == s || *end))
        ok = false;
    int line, col;
    ts_table_pos(t, r, c, &line, &col);
    if (!ok) {
        ts_err_at(err, TS_EINPUT, t->name, line, col, "column '%s': expected a number, got '%.40s%s'",
                  ts_table_header(t, c), s, strlen(s) > 40 ? "..." : "");
        return -1;
    }
    if (!isfinite(x)) {
        ts_err_at(err, TS_EINPUT, t->name, line, col, "column '%s': %.40s is out of range",
                  ts_table_header(t, c), s);
        return -1;
    }
    *v = x;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Ticks and labels. */

double ts_plot_nice(double x, bool round)
{
    double e = floor(log10(x));
    double f = x / pow(10, e);
    if (f >= 10 - 1e-9) { /* log10 rounded down a power of ten */
        f /= 10;
        e += 1;
    } else if (f < 1) {
        f *= 10;
        e -= 1;
    }
    double nf;
    if (round)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10;
    return nf * pow(10, e);
}

/* Ticks k * step inside [a->lo, a->hi]. */
static void linear_ticks(ts_plot_axis *a, double step)
{
    a->step = step;
    a->nticks = 0;
    double k0 = ceil(a->lo / step - 1e-9), k1 = floor(a->hi / step + 1e-9);
    for (double k = k0; k <= k1 && a->nticks < TS_PLOT_MAX_TICKS; k++) {
        double v = k * step;
        if (fabs(v) < step * 1e-9)
            v = 0;
        a->ticks[a->nticks++] = v;
    }
}

void ts_plot_axis_linear(ts_plot_axis *a, double min, double max, int target)
{
    memset(a, 0, sizeof *a);
    if (target < 3)
        target = 3;
    if (target > 12)
        target = 12;
    if (max < min) {
        double s = min;
        min = max;
        max = s;
    }
    if (!(max - min > 1e-300)) { /* one value (or two a denormal apart) */
        double pad = fabs(min) < 1e-300 ? 1 : fabs(min) * 0.1;
        min -= pad;
        max += pad;
    }
    double span = max - min;
    if (!isfinite(span)) { /* beyond the largest double: the two ends only */
        a->lo = min;
        a->hi = max;
        a->nticks = 2;
        a->ticks[0] = min;
        a->ticks[1] = max;
        return;
    }
    a->lo = fmax(min - 0.04 * span, -DBL_MAX);
    a->hi = fmin(max + 0.04 * span, DBL_MAX);
    double step = ts_plot_nice(span / (target - 1), true);
    linear_ticks(a, step);
    /* at least three ticks: the next smaller nice step (5 -> 2 -> 1 -> 0.5) until they fit */
    for (int tries = 0; a->nticks < 3 && tries < 8; tries++) {
        double e = pow(10, floor(log10(step) + 1e-9)), m = step / e;
        step = m > 4 ? 2 * e : m > 1.5 ? e : 0.5 * e;
        linear_ticks(a, step);
    }
}

void ts_plot_axis_log(ts_plot_axis *a, double min, double max)
{
    memset(a, 0, sizeof *a);
    a->log = true;
    if (max < min) {
        double s = min;
        min = max;
        max = s;
    }
    double l0 = log10(min), l1 = log10(max);
    if (l1 - l0 < 1e-9) {
        l0 -= 0.3;
        l1 += 0.3;
    }
    double pad = 0.04 * (l1 - l0);
    l0 -= pad;
    l1 += pad;
    a->lo = fmax(pow(10, l0), DBL_TRUE_MIN);
    a->hi = fmin(pow(10, l1), DBL_MAX);
    double decades = l1 - l0;
    if (decades < 2) {
        /* 1, 2 and 5 times powers of ten */
        static const double m[] = {1, 2, 5};
        for (double e = floor(l0); e <= ceil(l1) && a->nticks < TS_PLOT_MAX_TICKS; e++)
            for (size_t j = 0; j < 3 && a->nticks < TS_PLOT_MAX_TICKS; j++) {
                double v = m[j] * pow(10, e);
                if (v >= a->lo * (1 - 1e-9) && v <= a->hi * (1 + 1e-9))
                    a->ticks[a->nticks++] = v;
            }
        if (a->nticks < 3) /* under half a decade: evenly spaced ticks read better */
            linear_ticks(a, ts_plot_nice(ts_plot_nice(a->hi - a->lo, false) / 4, true));
        else
            a->step = 0;
        return;
    }
    double every = ceil(decades / 8);
    a->step = 0;
    for (double e = ceil(l0 - 1e-9); e <= l1 + 1e-9 && a->nticks < TS_PLOT_MAX_TICKS; e++)
        if (fmod(e, every) == 0)
            a->ticks[a->nticks++] = pow(10, e);
}

size_t ts_plot_si(double v, double step, char *out, size_t n)
{
    static const char *const prefix[] = {"f", "p", "n", "\xc2\xb5", "m", "", "k", "M", "G", "T", "P"};
    if (!n)
        return 0;
    double av = fabs(v);
    if (!isfinite(v))
        return (size_t)snprintf(out, n, "%g", v);
    if (av == 0 || (step > 0 && av < step * 1e-6))
        return (size_t)snprintf(out, n, "0");
    int e3 = (int)floor(log10(av) / 3 + 1e-9) * 3;
    /* 999.9996 should read 1k, not 1000 */
    if (step == 0 && av / pow(10, e3) >= 999.5)
        e3 += 3;
    if (e3 < -15 || e3 > 15)
        return (size_t)snprintf(out, n, "%.3g", v);
    double scaled = v / pow(10, e3);
    int dec = 0;
    if (step > 0) {
        double s = step / pow(10, e3);
        while (dec < 6 && fabs(s * pow(10, dec) - round(s * pow(10, dec))) > 1e-6 * s * pow(10, dec))
            dec++;
        return (size_t)snprintf(out, n, "%.*f%s", dec, scaled, prefix[e3 / 3 + 5]);
    }
    char num[32];
    snprintf(num, sizeof num, "%.3g", scaled);
    return (size_t)snprintf(out, n, "%s%s", num, prefix[e3 / 3 + 5]);
}

/* ---------------------------------------------------------------------------------------------
 * Pareto fronts. */

typedef struct pkey {
    double a, b;
    size_t i;
} pkey;

static int pkey_cmp(const void *x, const void *y)
{
    const pkey *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

size_t ts_plot_pareto(const double *a, const double *b, size_t n, bool max_a, bool max_b, bool *on,
                      bool *oom)
{
    *oom = false;
    if (!n)
        return 0;
    pkey *k = ts_calloc(n, sizeof *k);
    if (!k) {
        *oom = true;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (pkey){max_a ? -a[i] : a[i], max_b ? -b[i] : b[i], i};
    qsort(k, n, sizeof *k, pkey_cmp);
    /* By increasing a: a point is on the front when its b is below every b seen at a smaller a
     * and it is the least b of its own a. */
    size_t count = 0;
    double best = INFINITY;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double least = k[i].b;
        while (j < n && k[j].a == k[i].a) {
            on[k[j].i] = k[j].b == least && least < best;
            count += on[k[j].i];
            j++;
        }
        if (least < best)
            best = least;
        i = j;
    }
    ts_free(k);
    return count;
}

/* ---------------------------------------------------------------------------------------------
 * A plot. */

#define MAX_GROUPS 24

void ts_plot_destroy(ts_plot *p)
{
    if (!p)
        return;
    ts_free(p->pts);
    ts_free(p->front);
    ts_free(p->groups);
    ts_free(p->xlabel);
    ts_free(p->ylabel);
    ts_free(p->title);
    ts_free(p->pareto_label);
    ts_free(p);
}

size_t ts_plot_npoints(const ts_plot *p) { return p->npts; }
size_t ts_plot_nfailed(const ts_plot *p) { return p->nfailed; }
size_t ts_plot_nempty(const ts_plot *p) { return p->nempty; }
size_t ts_plot_ngroups(const ts_plot *p) { return p->ngroups; }
const char *ts_plot_group_name(const ts_plot *p, size_t g) { return p->groups[g].name; }

const char *ts_plot_group_label(const ts_plot *p, size_t g)
{
    return p->groups[g].label[0] ? p->groups[g].label : p->groups[g].name;
}
size_t ts_plot_npareto(const ts_plot *p) { return p->nfront; }
size_t ts_plot_pareto_row(const ts_plot *p, size_t i) { return p->pts[p->front[i]].row; }
bool ts_plot_x_repeats(const ts_plot *p) { return p->x_repeats && !p->scatter; }
const ts_plot_axis *ts_plot_xaxis(const ts_plot *p) { return &p->xa; }
const ts_plot_axis *ts_plot_yaxis(const ts_plot *p) { return &p->ya; }

uint32_t ts_plot_group_rgb(size_t g)
{
    /* Tableau 10 without its red, which marks the Pareto front. */
    static const uint32_t palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0x8c564b,
                                       0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
    return palette[g % (sizeof palette / sizeof palette[0])];
}

/* Split "A,B" (each part may start with "max:" or "min:") into the two column names. */
static ts_status parse_pareto(const char *spec, char *a, char *b, size_t n, bool *max_a, bool *max_b,
                              ts_err *err)
{
    const char *comma = strchr(spec, ',');
    if (!comma || comma == spec || !comma[1] || strchr(comma + 1, ','))
        return ts_err_set(err, TS_EINPUT,
                          "--pareto takes two columns, 'A,B' (each may start with 'max:'), got '%s'", spec);
    const char *part[2] = {spec, comma + 1};
    size_t len[2] = {(size_t)(comma - spec), strlen(comma + 1)};
    char *dst[2] = {a, b};
    bool *mx[2] = {max_a, max_b};
    for (int k = 0; k < 2; k++) {
        *mx[k] = false;
        if (len[k] > 4 && (!strncmp(part[k], "max:", 4) || !strncmp(part[k], "min:", 4))) {
            *mx[k] = part[k][1] == 'a';
            part[k] += 4;
            len[k] -= 4;
        }
        if (len[k] >= n)
            return ts_err_set(err, TS_EINPUT, "--pareto: column name too long");
        memcpy(dst[k], part[k], len[k]);
        dst[k][len[k]] = 0;
    }
    return TS_OK;
}

static int pt_cmp(const void *x, const void *y)
{
    const ts_plot_pt *p = x, *q = y;
    if (p->group != q->group)
        return p->group < q->group ? -1 : 1;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return p->row < q->row ? -1 : p->row > q->row;
}

static int group_num_cmp(const void *x, const void *y)
{
    const ts_plot_group *p = x, *q = y;
    if (p->num != q->num)
        return p->num < q->num ? -1 : 1;
    return p->first < q->first ? -1 : p->first > q->first;
}

/* A number cell for the plot: 0 a number, 1 empty, -1 an error (set). */
static int value(const ts_table *t, size_t r, size_t c, bool log, const char *logopt, double *v,
                 ts_err *err)
{
    int rc = ts_table_number(t, r, c, v, err);
    if (rc || !log || *v > 0)
        return rc;
    int line, col;
    ts_table_pos(t, r, c, &line, &col);
    ts_err_at(err, TS_EINPUT, t->name, line, col, "%s needs positive values, but column '%s' has %s", logopt,
              ts_table_header(t, c), ts_table_cell(t, r, c));
    return -1;
}

static char *dup_or(const char *s, const char *fallback)
{
    return ts_strdup(s ? s : fallback);
}

ts_status ts_plot_prepare(ts_plot **out, const ts_table *t, const ts_plot_opts *o, ts_err *err)
{
    *out = NULL;
    char pa_name[256] = "", pb_name[256] = "";
    bool max_a = false, max_b = false;
    if (o->pareto && parse_pareto(o->pareto, pa_name, pb_name, sizeof pa_name, &max_a, &max_b, err) != TS_OK)
        return TS_EINPUT;
    const char *xname = o->x ? o->x : o->pareto ? pa_name : NULL;
    const char *yname = o->y ? o->y : o->pareto ? pb_name : NULL;
    if (!xname || !yname)
        return ts_err_set(err, TS_EINPUT, "a plot needs --x and --y (or --pareto A,B)");
    size_t xc, yc, gc = SIZE_MAX, pac = SIZE_MAX, pbc = SIZE_MAX, ec = SIZE_MAX;
    if (ts_table_column(t, xname, o->x ? "--x" : "--pareto", &xc, err) != TS_OK ||
        ts_table_column(t, yname, o->y ? "--y" : "--pareto", &yc, err) != TS_OK ||
        (o->group && ts_table_column(t, o->group, "--group", &gc, err) != TS_OK) ||
        (o->pareto && (ts_table_column(t, pa_name, "--pareto", &pac, err) != TS_OK ||
                       ts_table_column(t, pb_name, "--pareto", &pbc, err) != TS_OK)))
        return TS_EINPUT;
    for (size_t c = 0; c < t->ncols; c++)
        if (!strcmp(ts_table_header(t, c), "error"))
            ec = c;

    ts_plot *p = ts_calloc(1, sizeof *p);
    size_t nr = t->nrows;
    if (!p || (nr && (!(p->pts = ts_calloc(nr, sizeof *p->pts)) ||
                      !(p->groups = ts_calloc(MAX_GROUPS, sizeof *p->groups))))) {
        ts_plot_destroy(p);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    p->width = o->width ? o->width : 800;
    p->height = o->height ? o->height : 500;
    p->scatter = o->scatter || (o->pareto && !o->x && !o->y); /* a front of two metrics is no series */
    p->has_pareto = o->pareto != NULL;
    p->has_legend = o->group != NULL || o->pareto != NULL;
    ts_status st = TS_OK;
    double *pa = NULL, *pb = NULL;
    bool *on = NULL;
    for (size_t r = 0; r < nr; r++) {
        if (ec != SIZE_MAX && ts_table_cell(t, r, ec)[0]) {
            p->nfailed++;
            continue;
        }
        ts_plot_pt pt = {.row = r};
        int rc = value(t, r, xc, o->logx, "--logx", &pt.x, err);
        int rc2 = rc < 0 ? 0 : value(t, r, yc, o->logy, "--logy", &pt.y, err);
        int rc3 = 0, rc4 = 0;
        if (o->pareto && rc >= 0 && rc2 >= 0) {
            rc3 = value(t, r, pac, false, NULL, &pt.pa, err);
            rc4 = rc3 < 0 ? 0 : value(t, r, pbc, false, NULL, &pt.pb, err);
        }
        if (rc < 0 || rc2 < 0 || rc3 < 0 || rc4 < 0) {
            st = TS_EINPUT;
            goto fail;
        }
        if (rc || rc2 || rc3 || rc4) {
            p->nempty++;
            continue;
        }
        if (o->group) {
            const char *gv = ts_table_cell(t, r, gc);
            size_t g = 0;
            while (g < p->ngroups && strcmp(p->groups[g].name, gv))
                g++;
            if (g == p->ngroups) {
                if (g == MAX_GROUPS) {
                    st = ts_err_set(err, TS_EINPUT,
                                    "--group: column '%s' has more than %d values, too many for a legend",
                                    o->group, MAX_GROUPS);
                    goto fail;
                }
                p->groups[g].name = gv;
                p->groups[g].first = r;
                p->ngroups++;
            }
            pt.group = g;
        }
        p->pts[p->npts++] = pt;
    }
    if (!p->npts) {
        if (p->nfailed || p->nempty)
            st = ts_err_set(err, TS_EINPUT, "%s: no row to plot (%zu with an error, %zu without a value)",
                            t->name, p->nfailed, p->nempty);
        else
            st = ts_err_set(err, TS_EINPUT, "%s: no row to plot (the file has only a header)", t->name);
        goto fail;
    }
    if (!o->group) {
        p->ngroups = 1;
        p->groups[0].name = "";
    }
    /* Groups whose values are all numbers go in numeric order, others in order of appearance. */
    bool numeric = o->group != NULL;
    for (size_t g = 0; g < p->ngroups && numeric; g++) {
        char *end;
        const char *s = p->groups[g].name;
        p->groups[g].num = strtod(s, &end);
        numeric = *s && !*end && isfinite(p->groups[g].num);
    }
    if (numeric) {
        size_t remap[MAX_GROUPS];
        for (size_t g = 0; g < p->ngroups; g++)
            p->groups[g].old = g;
        qsort(p->groups, p->ngroups, sizeof *p->groups, group_num_cmp);
        for (size_t g = 0; g < p->ngroups; g++)
            remap[p->groups[g].old] = g;
        for (size_t i = 0; i < p->npts; i++)
            p->pts[i].group = remap[p->pts[i].group];
        /* legend labels of large values with SI prefixes (1.25G for 1250000000; 0.25 stays),
         * unless two would read the same */
        bool distinct = true;
        for (size_t g = 0; g < p->ngroups; g++) {
            if (fabs(p->groups[g].num) >= 1000)
                ts_plot_si(p->groups[g].num, 0, p->groups[g].label, sizeof p->groups[g].label);
            for (size_t h = 0; h < g && distinct; h++)
                distinct = strcmp(ts_plot_group_label(p, g), ts_plot_group_label(p, h)) != 0;
        }
        for (size_t g = 0; g < p->ngroups && !distinct; g++)
            p->groups[g].label[0] = 0;
    }
    qsort(p->pts, p->npts, sizeof *p->pts, pt_cmp);
    for (size_t i = 0; i < p->npts; i++) {
        ts_plot_group *g = &p->groups[p->pts[i].group];
        if (!g->n)
            g->start = i;
        g->n++;
        if (i && p->pts[i - 1].group == p->pts[i].group && p->pts[i - 1].x == p->pts[i].x)
            p->x_repeats = true;
    }

    if (o->pareto) {
        pa = ts_calloc(p->npts, sizeof *pa);
        pb = ts_calloc(p->npts, sizeof *pb);
        on = ts_calloc(p->npts, sizeof *on);
        p->front = ts_calloc(p->npts, sizeof *p->front);
        bool oom = !pa || !pb || !on || !p->front;
        for (size_t i = 0; i < p->npts && !oom; i++) {
            pa[i] = p->pts[i].pa;
            pb[i] = p->pts[i].pb;
        }
        if (!oom)
            ts_plot_pareto(pa, pb, p->npts, max_a, max_b, on, &oom);
        if (oom) {
            st = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < p->npts; i++) {
            p->pts[i].on_front = on[i];
            if (on[i])
                p->front[p->nfront++] = i;
        }
        /* the front in increasing order of its first column (insertion sort: fronts are short) */
        for (size_t i = 1; i < p->nfront; i++) {
            size_t v = p->front[i], j = i;
            while (j && (p->pts[p->front[j - 1]].pa > p->pts[v].pa ||
                         (p->pts[p->front[j - 1]].pa == p->pts[v].pa && p->pts[p->front[j - 1]].pb > p->pts[v].pb))) {
                p->front[j] = p->front[j - 1];
                j--;
            }
            p->front[j] = v;
        }
        /* the front is a line in this plot when its columns are the axes */
        p->front_line = (pac == xc && pbc == yc) || (pac == yc && pbc == xc);
    }

    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < p->npts; i++) {
        x0 = fmin(x0, p->pts[i].x);
        x1 = fmax(x1, p->pts[i].x);
        y0 = fmin(y0, p->pts[i].y);
        y1 = fmax(y1, p->pts[i].y);
    }
    if (o->logx)
        ts_plot_axis_log(&p->xa, x0, x1);
    else
        ts_plot_axis_linear(&p->xa, x0, x1, 7);
    if (o->logy)
        ts_plot_axis_log(&p->ya, y0, y1);
    else
        ts_plot_axis_linear(&p->ya, y0, y1, 6);

    char deftitle[600];
    if (o->pareto && !o->x && !o->y)
        snprintf(deftitle, sizeof deftitle, "Pareto front of %s and %s (%s)", pa_name, pb_name,
                 max_a == max_b ? (max_a ? "both maximised" : "both minimised")
                                : (max_a ? "max first, min second" : "min first, max second"));
    else if (o->group)
        snprintf(deftitle, sizeof deftitle, "%s against %s, by %s", yname, xname, o->group);
    else
        snprintf(deftitle, sizeof deftitle, "%s against %s", yname, xname);
    p->group_title = o->group ? o->group : "";
    p->xlabel = dup_or(o->xlabel, xname);
    p->ylabel = dup_or(o->ylabel, yname);
    p->title = dup_or(o->title, deftitle);
    p->pareto_label = ts_strdup("Pareto front");
    if (!p->xlabel || !p->ylabel || !p->title || !p->pareto_label) {
        st = ts_err_set(err, TS_ENOMEM, "out of memory");
        goto fail;
    }
    ts_free(pa);
    ts_free(pb);
    ts_free(on);
    *out = p;
    return TS_OK;
fail:
    ts_free(pa);
    ts_free(pb);
    ts_free(on);
    ts_plot_destroy(p);
    return st;
}
