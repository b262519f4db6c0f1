/* core/report.c — results as text for people, JSON for tools (docs/report-schema.md) and CSV
 * for sweeps.
 *
 * All three read only the ts_results. Every list is written in a fixed order (insertion order
 * for utilization and statistics, name order for energy components and events), so the same
 * results always give the same bytes. Rendering never fails half-way: an allocation failure
 * sets the output buffer's oom flag, which ts_report_write turns into TS_ENOMEM.
 */
#include "core/report.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"

int ts_format_parse(const char *s)
{
    if (!s)
        return -1;
    if (!strcmp(s, "text"))
        return TS_FMT_TEXT;
    if (!strcmp(s, "json"))
        return TS_FMT_JSON;
    if (!strcmp(s, "csv"))
        return TS_FMT_CSV;
    return -1;
}

static const char *const level_key[TS_LEVEL_COUNT] = {"sram", "network", "offchip"};

/* a / b, or NaN when b is 0 (written as null in JSON, empty in CSV, "-" in text). */
static double ratio(double a, double b)
{
    return b != 0 ? a / b : NAN;
}

static double avg_power(const ts_results *r)
{
    return r->energy_table[0] ? ratio(r->energy_j, ts_results_time_s(r)) : NAN;
}

/* Power of the whole chip were every unit as active as the occupied ones: static power plus
 * the run's dynamic power over its occupancy (docs/energy.md); NaN when not known. */
static double whole_chip_power(const ts_results *r)
{
    double t = ts_results_time_s(r);
    if (!r->energy_table[0] || !(r->occupancy > 0 && r->occupancy < 1) || t <= 0)
        return NAN;
    return r->static_w + (r->energy_j / t - r->static_w) / r->occupancy;
}

static double util_fraction(const ts_results *r, const ts_util *u)
{
    return ratio((double)u->busy, (double)u->units * (double)r->cycles);
}

/* Order of r->events by name, written to idx[0..r->nevents). */
static void events_by_name(const ts_results *r, size_t *idx)
{
    for (size_t i = 0; i < r->nevents; i++)
        idx[i] = i;
    /* Insertion sort: at most TS_MAX_EVENTS entries, and no shared state as qsort would need. */
    for (size_t i = 1; i < r->nevents; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && strcmp(r->events[idx[j - 1]].name, r->events[v].name) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Text
 * ------------------------------------------------------------------------------------------- */

/* An aligned table of text cells, filled row by row. */
typedef struct tbl {
    size_t ncols, n, cap; /* n cells so far */
    char **cells;         /* owned */
    bool oom;
} tbl;

static void tbl_init(tbl *t, size_t ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

static void tbl_free(tbl *t)
{
    for (size_t i = 0; i < t->n; i++)
        ts_free(t->cells[i]);
    ts_free(t->cells);
    memset(t, 0, sizeof *t);
}

static void tbl_cell(tbl *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tbl_cell(tbl *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    if (ts_grow((void **)&t->cells, &t->cap, t->n + 1, sizeof *t->cells)) {
        t->oom = true;
        return;
    }
    ts_buf b = TS_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    ts_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *s = b.oom ? NULL : ts_strdup(ts_buf_str(&b));
    ts_buf_free(&b);
    if (!s) {
        t->oom = true;
        return;
    }
    t->cells[t->n++] = s;
}

/* Width on screen: UTF-8 continuation bytes take no column. */
static size_t cols_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void spaces(ts_buf *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ts_buf_putc(out, ' ');
}

/* Write the table with `indent` spaces before each row and two between columns. align has one
 * letter per column: 'l' or 'r'. Trailing spaces are never written. */
static void tbl_emit(tbl *t, ts_buf *out, size_t indent, const char *align)
{
    if (t->oom) {
        out->oom = true;
        return;
    }
    size_t w[16] = {0};
    size_t nc = t->ncols < 16 ? t->ncols : 16;
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->ncols, cw = cols_of(t->cells[i]);
        if (c < nc && cw > w[c])
            w[c] = cw;
    }
    size_t nrows = (t->n + t->ncols - 1) / t->ncols;
    for (size_t r = 0; r < nrows; r++) {
        /* The last non-empty cell of the row ends it, so nothing trails. */
        size_t last = 0;
        for (size_t c = 0; c < nc && r * t->ncols + c < t->n; c++)
            if (t->cells[r * t->ncols + c][0])
                last = c;
        spaces(out, indent);
        for (size_t c = 0; c <= last; c++) {
            const char *s = t->cells[r * t->ncols + c];
            size_t pad = w[c] - cols_of(s);
            bool right = align[c] == 'r';
            if (c)
                spaces(out, 2);
            if (right)
                spaces(out, pad);
            ts_buf_puts(out, s);
            if (!right && c < last)
                spaces(out, pad);
        }
        ts_buf_putc(out, '\n');
    }
}

/* 1234567 -> "1,234,567". */
static void grouped(char *buf, size_t n, uint64_t v)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
}

/* A number for people: whole numbers grouped ("20,037"), others with at least 6 significant
 * digits and the whole part grouped ("5,096.5", "0.8125"). */
static void num_text(char *buf, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return;
    }
    double a = fabs(v);
    if (a >= 1e15 || (a < 1000 && v != floor(v))) {
        snprintf(buf, n, "%.6g", v);
        return;
    }
    char whole[40], frac[16] = "";
    if (v != floor(v)) {
        /* 1000 <= a < 1e15: enough decimals for 6 significant digits, trailing zeros dropped. */
        int digits = (int)floor(log10(a)) + 1;
        int dec = digits < 6 ? 6 - digits : 0;
        char tmp[48];
        snprintf(tmp, sizeof tmp, "%.*f", dec, a);
        char *dot = strchr(tmp, '.');
        if (dot) {
            size_t k = strlen(dot);
            while (k > 1 && dot[k - 1] == '0')
                dot[--k] = 0;
            if (k > 1)
                snprintf(frac, sizeof frac, "%s", dot);
            *dot = 0;
        }
        grouped(whole, sizeof whole, (uint64_t)strtoull(tmp, NULL, 10));
    } else {
        grouped(whole, sizeof whole, (uint64_t)a);
    }
    snprintf(buf, n, "%s%s%s", v < 0 ? "-" : "", whole, frac);
}

/* v with an SI prefix and 4 significant digits: "1.6 GHz", "771.6 µs", "0 J". */
static void si_text(char *buf, size_t n, double v, const char *unit)
{
    static const char *const pre[] = {"a", "f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E"};
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return;
    }
    if (v == 0) {
        snprintf(buf, n, "0 %s", unit);
        return;
    }
    int e = (int)floor(log10(fabs(v)) / 3);
    if (e < -6)
        e = -6;
    if (e > 6)
        e = 6;
    double m = v / pow(10, 3 * e);
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.4g", m);
    if (fabs(strtod(tmp, NULL)) >= 1000 && e < 6) { /* 999.96 rounds up into the next prefix */
        e++;
        snprintf(tmp, sizeof tmp, "%.4g", v / pow(10, 3 * e));
    }
    snprintf(buf, n, "%s %s%s", tmp, pre[e + 6], unit);
}

static void pct_text(char *buf, size_t n, double f)
{
    if (isfinite(f))
        snprintf(buf, n, "%.1f %%", 100 * f);
    else
        snprintf(buf, n, "-");
}

static void section(ts_buf *out, const char *title)
{
    ts_buf_printf(out, "\n%s\n", title);
}

static void text_stat_hist(const ts_stat *s, ts_buf *out)
{
    if (s->unit[0])
        ts_buf_printf(out, "  %s (%s)\n", s->name, s->unit);
    else
        ts_buf_printf(out, "  %s\n", s->name);
    if (s->desc[0])
        ts_buf_printf(out, "    %s\n", s->desc);
    double max = 0;
    for (size_t i = 0; i < s->n; i++)
        max = s->v[i] > max ? s->v[i] : max;
    tbl t;
    tbl_init(&t, 3);
    for (size_t i = 0; i < s->n; i++) {
        char c[48];
        num_text(c, sizeof c, s->v[i]);
        tbl_cell(&t, "[%g, %g)", s->lo + (double)i * s->width, s->lo + (double)(i + 1) * s->width);
        tbl_cell(&t, "%s", c);
        /* A bar of up to 40 marks, proportional to the largest bin. */
        size_t bar = max > 0 ? (size_t)lround(40.0 * s->v[i] / max) : 0;
        char marks[41];
        memset(marks, '#', bar);
        marks[bar] = 0;
        tbl_cell(&t, "%s", marks);
    }
    tbl_emit(&t, out, 4, "lrl");
    tbl_free(&t);
}

#define TS_TEXT_MAX_ROWS 40 /* longer tables are cut in text; JSON has every row */

static void text_stat_table(const ts_stat *s, ts_buf *out)
{
    ts_buf_printf(out, "  %s\n", s->name);
    if (s->desc[0])
        ts_buf_printf(out, "    %s\n", s->desc);
    /* Text shows the first 16 columns, the text columns (an operator's type and name) after the
     * first number (its node); JSON has them all. */
    size_t nl = s->labels ? (s->nlabels < 4 ? s->nlabels : 4) : 0;
    size_t nc = s->ncols < 16 - nl ? s->ncols : 16 - nl;
    tbl t;
    tbl_init(&t, nc + nl);
    char align[17];
    for (size_t c = 0, k = 0; c < nc; c++) {
        align[k++] = 'r';
        if (s->col_units[c][0])
            tbl_cell(&t, "%s (%s)", s->cols[c], s->col_units[c]);
        else
            tbl_cell(&t, "%s", s->cols[c]);
        for (size_t l = 0; c == 0 && l < nl; l++) {
            align[k++] = 'l';
            tbl_cell(&t, "%s", s->label_cols[l]);
        }
    }
    align[nc + nl] = 0;
    size_t shown = s->nrows < TS_TEXT_MAX_ROWS ? s->nrows : TS_TEXT_MAX_ROWS;
    for (size_t r = 0; r < shown; r++) {
        for (size_t c = 0; c < nc; c++) {
            char v[48];
            num_text(v, sizeof v, s->rows[r * s->ncols + c]);
            tbl_cell(&t, "%s", v);
            for (size_t l = 0; c == 0 && l < nl; l++)
                tbl_cell(&t, "%s", s->labels[r * s->nlabels + l]);
        }
    }
    tbl_emit(&t, out, 4, align);
    tbl_free(&t);
    if (s->nrows > shown)
        ts_buf_printf(out, "    … %zu more rows\n", s->nrows - shown);
    if (s->ncols > nc)
        ts_buf_printf(out, "    … %zu more columns\n", s->ncols - nc);
}

static void text_stats(const ts_stats *st, ts_buf *out)
{
    size_t n = ts_stats_count(st), nscalar = 0, narray = 0;
    for (size_t i = 0; i < n; i++) {
        ts_stat_kind k = ts_stats_at(st, i)->kind;
        nscalar += k == TS_STAT_U64 || k == TS_STAT_F64;
        narray += k == TS_STAT_ARRAY;
    }
    if (!n)
        return;
    section(out, "statistics");
    if (nscalar) {
        tbl t;
        tbl_init(&t, 4);
        for (size_t i = 0; i < n; i++) {
            const ts_stat *s = ts_stats_at(st, i);
            char v[48];
            if (s->kind == TS_STAT_U64)
                grouped(v, sizeof v, s->u);
            else if (s->kind == TS_STAT_F64)
                num_text(v, sizeof v, s->f);
            else
                continue;
            tbl_cell(&t, "%s", s->name);
            tbl_cell(&t, "%s", v);
            tbl_cell(&t, "%s", s->unit);
            tbl_cell(&t, "%s", s->desc);
        }
        tbl_emit(&t, out, 2, "lrll");
        tbl_free(&t);
    }
    if (narray) {
        ts_buf_puts(out, "\n");
        tbl t;
        tbl_init(&t, 8);
        static const char *const head[] = {"per-unit", "n", "min", "mean", "max", "argmax", "unit", ""};
        for (size_t c = 0; c < 8; c++)
            tbl_cell(&t, "%s", head[c]);
        for (size_t i = 0; i < n; i++) {
            const ts_stat *s = ts_stats_at(st, i);
            if (s->kind != TS_STAT_ARRAY)
                continue;
            double mn = INFINITY, mx = -INFINITY, sum = 0;
            size_t arg = 0;
            for (size_t j = 0; j < s->n; j++) {
                mn = s->v[j] < mn ? s->v[j] : mn;
                if (s->v[j] > mx) {
                    mx = s->v[j];
                    arg = j;
                }
                sum += s->v[j];
            }
            char a[48], b[48], c[48];
            num_text(a, sizeof a, s->n ? mn : NAN);
            num_text(b, sizeof b, s->n ? sum / (double)s->n : NAN);
            num_text(c, sizeof c, s->n ? mx : NAN);
            tbl_cell(&t, "%s", s->name);
            tbl_cell(&t, "%zu", s->n);
            tbl_cell(&t, "%s", a);
            tbl_cell(&t, "%s", b);
            tbl_cell(&t, "%s", c);
            if (s->n)
                tbl_cell(&t, "%zu", arg);
            else
                tbl_cell(&t, "-");
            tbl_cell(&t, "%s", s->unit);
            tbl_cell(&t, "%s", s->desc);
        }
        tbl_emit(&t, out, 2, "lrrrrrll");
        tbl_free(&t);
    }
    for (size_t i = 0; i < n; i++) {
        const ts_stat *s = ts_stats_at(st, i);
        if (s->kind == TS_STAT_HIST || s->kind == TS_STAT_TABLE) {
            ts_buf_puts(out, "\n");
            if (s->kind == TS_STAT_HIST)
                text_stat_hist(s, out);
            else
                text_stat_table(s, out);
        }
    }
}

/* "[1, 1000]" */
static void shape_str(char *buf, size_t n, const ts_result_output *o)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < o->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", o->dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* The graph outputs of a lowered model, when the run read them back. */
static void text_outputs(const ts_results *r, ts_buf *out)
{
    if (!r->noutputs)
        return;
    section(out, "outputs");
    tbl t;
    tbl_init(&t, 4);
    tbl_cell(&t, "output");
    tbl_cell(&t, "shape");
    tbl_cell(&t, "checksum");
    tbl_cell(&t, "max |value|");
    for (size_t i = 0; i < r->noutputs; i++) {
        const ts_result_output *o = &r->outputs[i];
        char sh[256];
        shape_str(sh, sizeof sh, o);
        tbl_cell(&t, "%s", o->name);
        tbl_cell(&t, "%s", sh);
        tbl_cell(&t, "%016" PRIx64, o->checksum);
        tbl_cell(&t, "%.9g", o->max_abs);
    }
    tbl_emit(&t, out, 2, "llll");
    tbl_free(&t);
}

void ts_report_text(const ts_results *r, ts_buf *out)
{
    char a[64], b[64], c[64];
    double t_s = ts_results_time_s(r);
    ts_buf_printf(out, "tessera report: %s on %s\n", r->workload[0] ? r->workload : "(no workload)",
                  r->config[0] ? r->config : "(no config)");

    section(out, "run");
    tbl t;
    tbl_init(&t, 2);
    grouped(a, sizeof a, r->cycles);
    si_text(b, sizeof b, t_s, "s");
    si_text(c, sizeof c, r->clock_hz, "Hz");
    tbl_cell(&t, "arch");     tbl_cell(&t, "%s", r->arch);
    tbl_cell(&t, "config");   tbl_cell(&t, "%s", r->config);
    tbl_cell(&t, "workload"); tbl_cell(&t, "%s", r->workload);
    tbl_cell(&t, "cycles");   tbl_cell(&t, "%s", a);
    tbl_cell(&t, "time");     tbl_cell(&t, "%s", b);
    tbl_cell(&t, "clock");    tbl_cell(&t, "%s", c);
    tbl_emit(&t, out, 2, "ll");
    tbl_free(&t);

    section(out, "data movement");
    tbl_init(&t, 4);
    tbl_cell(&t, "level");
    tbl_cell(&t, "bytes");
    tbl_cell(&t, "B/cycle");
    tbl_cell(&t, "bandwidth");
    for (int l = 0; l < TS_LEVEL_COUNT; l++) {
        if (l == TS_LEVEL_NET && r->net_name[0])
            tbl_cell(&t, "network (%s)", r->net_name);
        else
            tbl_cell(&t, "%s", level_key[l]);
        grouped(a, sizeof a, r->bytes[l]);
        double bpc = ratio((double)r->bytes[l], (double)r->cycles);
        if (isfinite(bpc))
            snprintf(b, sizeof b, "%.4g", bpc);
        else
            snprintf(b, sizeof b, "-");
        si_text(c, sizeof c, ratio((double)r->bytes[l], t_s), "B/s");
        tbl_cell(&t, "%s", a);
        tbl_cell(&t, "%s", b);
        tbl_cell(&t, "%s", c);
    }
    tbl_emit(&t, out, 2, "lrrr");
    tbl_free(&t);

    if (r->nutil) {
        section(out, "utilization");
        tbl_init(&t, 4);
        tbl_cell(&t, "unit");
        tbl_cell(&t, "units");
        tbl_cell(&t, "busy unit-cycles");
        tbl_cell(&t, "busy");
        for (size_t i = 0; i < r->nutil; i++) {
            const ts_util *u = &r->util[i];
            tbl_cell(&t, "%s", u->name);
            grouped(a, sizeof a, u->units);
            tbl_cell(&t, "%s", a);
            grouped(a, sizeof a, u->busy);
            tbl_cell(&t, "%s", a);
            pct_text(a, sizeof a, util_fraction(r, u));
            tbl_cell(&t, "%s", a);
        }
        tbl_emit(&t, out, 2, "lrrr");
        tbl_free(&t);
    }

    section(out, "compute");
    tbl_init(&t, 2);
    grouped(a, sizeof a, r->macs);
    tbl_cell(&t, "MACs");
    tbl_cell(&t, "%s", a);
    num_text(a, sizeof a, r->flops);
    tbl_cell(&t, "FLOPs");
    tbl_cell(&t, "%s", a);
    si_text(a, sizeof a, ratio(r->flops, t_s), "FLOP/s");
    tbl_cell(&t, "achieved");
    tbl_cell(&t, "%s", a);
    if (r->ops != r->flops) { /* integer work: the row only where there is some */
        num_text(a, sizeof a, r->ops);
        tbl_cell(&t, "all ops");
        tbl_cell(&t, "%s", a);
    }
    if (r->macs_executed != r->macs) {
        grouped(a, sizeof a, r->macs_executed);
        tbl_cell(&t, "MACs executed");
        tbl_cell(&t, "%s", a);
    }
    if (ts_results_peak_macs(r) > 0) {
        num_text(a, sizeof a, ts_results_peak_macs(r));
        tbl_cell(&t, "peak MACs/cycle");
        tbl_cell(&t, "%s", a);
        pct_text(a, sizeof a, ts_results_mac_share(r));
        tbl_cell(&t, "share of peak");
        tbl_cell(&t, "%s", a);
    }
    if (r->macs && r->bytes[TS_LEVEL_SRAM]) {
        snprintf(a, sizeof a, "%.3g", 2.0 * (double)r->macs / (double)r->bytes[TS_LEVEL_SRAM]);
        tbl_cell(&t, "ops/SRAM byte");
        tbl_cell(&t, "%s", a);
    }
    tbl_emit(&t, out, 2, "lr");
    tbl_free(&t);

    if (r->energy_table[0]) {
        ts_buf_printf(out, "\nenergy (table %s)\n", r->energy_table);
        tbl_init(&t, 2);
        si_text(a, sizeof a, r->energy_j, "J");
        tbl_cell(&t, "total");
        tbl_cell(&t, "%s", a);
        si_text(a, sizeof a, avg_power(r), "W");
        tbl_cell(&t, "average power");
        tbl_cell(&t, "%s", a);
        si_text(a, sizeof a, r->static_w, "W");
        tbl_cell(&t, "static power");
        tbl_cell(&t, "%s", a);
        if (!isnan(whole_chip_power(r))) {
            si_text(a, sizeof a, whole_chip_power(r), "W");
            tbl_cell(&t, "whole chip");
            tbl_cell(&t, "%s (static + dynamic / %.3g %% occupancy)", a, 100 * r->occupancy);
        }
        tbl_emit(&t, out, 2, "ll");
        tbl_free(&t);
        ts_buf_puts(out, "\n");
        tbl_init(&t, 3);
        tbl_cell(&t, "component");
        tbl_cell(&t, "energy");
        tbl_cell(&t, "share");
        for (size_t i = 0; i < r->ncomponents; i++) {
            si_text(a, sizeof a, r->by_component[i].joules, "J");
            pct_text(b, sizeof b, ratio(r->by_component[i].joules, r->energy_j));
            tbl_cell(&t, "%s", r->by_component[i].name);
            tbl_cell(&t, "%s", a);
            tbl_cell(&t, "%s", b);
        }
        tbl_emit(&t, out, 2, "lrr");
        tbl_free(&t);
    } else {
        section(out, "energy");
        ts_buf_puts(out, "  not priced: no energy table\n");
    }
    if (r->nevents) {
        size_t idx[TS_MAX_EVENTS];
        events_by_name(r, idx);
        ts_buf_puts(out, "\n");
        tbl_init(&t, 2);
        tbl_cell(&t, "event");
        tbl_cell(&t, "count");
        for (size_t i = 0; i < r->nevents; i++) {
            num_text(a, sizeof a, r->events[idx[i]].count);
            tbl_cell(&t, "%s", r->events[idx[i]].name);
            tbl_cell(&t, "%s", a);
        }
        tbl_emit(&t, out, 2, "lr");
        tbl_free(&t);
    }
    text_outputs(r, out);
    text_stats(r->stats, out);
}

/* ---------------------------------------------------------------------------------------------
 * JSON
 * ------------------------------------------------------------------------------------------- */

/* The report is a jansson tree dumped with two spaces per level, members in insertion order and
 * reals with TS_JSON_DIGITS significant digits. A member whose value
 * could not be allocated is left out; the dump then fails and the buffer says out of memory. */
static void set(json_t *o, const char *k, json_t *v) { json_object_set_new(o, k, v); }

static json_t *jnums(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, ts_json_num(v[i]));
    return a;
}

static const char *kind_name(ts_stat_kind k)
{
    switch (k) {
    case TS_STAT_U64: return "u64";
    case TS_STAT_F64: return "f64";
    case TS_STAT_ARRAY: return "array";
    case TS_STAT_HIST: return "hist";
    case TS_STAT_TABLE: return "table";
    }
    return "unknown";
}

static json_t *json_table(const ts_stat *s)
{
    json_t *t = json_object(), *cols = json_array(), *rows = json_array();
    for (size_t c = 0; c < s->ncols; c++) {
        json_t *col = json_object();
        set(col, "name", ts_json_str(s->cols[c]));
        set(col, "unit", ts_json_str(s->col_units[c]));
        json_array_append_new(cols, col);
    }
    for (size_t r = 0; r < s->nrows; r++)
        json_array_append_new(rows, jnums(s->rows + r * s->ncols, s->ncols));
    set(t, "columns", cols);
    set(t, "rows", rows);
    if (s->labels) { /* text columns beside the numbers: names of columns, then rows of strings */
        json_t *lc = json_array(), *lr = json_array();
        for (size_t c = 0; c < s->nlabels; c++)
            json_array_append_new(lc, ts_json_str(s->label_cols[c]));
        for (size_t r = 0; r < s->nrows; r++) {
            json_t *row = json_array();
            for (size_t c = 0; c < s->nlabels; c++)
                json_array_append_new(row, ts_json_str(s->labels[r * s->nlabels + c]));
            json_array_append_new(lr, row);
        }
        json_t *l = json_object();
        set(l, "columns", lc);
        set(l, "rows", lr);
        set(t, "labels", l);
    }
    return t;
}

static json_t *json_stat(const ts_stat *s)
{
    json_t *o = json_object();
    set(o, "kind", ts_json_str(kind_name(s->kind)));
    set(o, "unit", ts_json_str(s->unit));
    set(o, "desc", ts_json_str(s->desc));
    switch (s->kind) {
    case TS_STAT_U64:
        set(o, "value", json_integer((json_int_t)s->u));
        break;
    case TS_STAT_F64:
        set(o, "value", ts_json_num(s->f));
        break;
    case TS_STAT_ARRAY:
        set(o, "values", jnums(s->v, s->n));
        break;
    case TS_STAT_HIST: {
        json_t *h = json_object();
        set(h, "lo", ts_json_num(s->lo));
        set(h, "width", ts_json_num(s->width));
        set(h, "counts", jnums(s->v, s->n));
        set(o, "hist", h);
        break;
    }
    case TS_STAT_TABLE:
        set(o, "table", json_table(s));
        break;
    }
    return o;
}

/* One object of the three memory levels, v[l] each. */
static json_t *json_levels(const double *v)
{
    json_t *o = json_object();
    for (int l = 0; l < TS_LEVEL_COUNT; l++)
        set(o, level_key[l], ts_json_num(v[l]));
    return o;
}

static json_t *json_energy(const ts_results *r)
{
    bool priced = r->energy_table[0] != 0;
    json_t *e = json_object(), *by = json_object(), *ev = json_object();
    set(e, "table", priced ? ts_json_str(r->energy_table) : json_null());
    set(e, "total_j", ts_json_num(priced ? r->energy_j : NAN));
    set(e, "avg_power_w", ts_json_num(avg_power(r)));
    set(e, "static_w", ts_json_num(r->static_w));
    if (!isnan(whole_chip_power(r)))
        set(e, "whole_chip_power_w", ts_json_num(whole_chip_power(r)));
    for (size_t i = 0; priced && i < r->ncomponents; i++)
        set(by, r->by_component[i].name, ts_json_num(r->by_component[i].joules));
    set(e, "by_component", by);
    size_t idx[TS_MAX_EVENTS];
    events_by_name(r, idx);
    for (size_t i = 0; i < r->nevents; i++)
        set(ev, r->events[idx[i]].name, ts_json_num(r->events[idx[i]].count));
    set(e, "events", ev);
    return e;
}

static json_t *json_outputs(const ts_results *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->noutputs; i++) {
        const ts_result_output *o = &r->outputs[i];
        char ck[20];
        snprintf(ck, sizeof ck, "%016" PRIx64, o->checksum);
        json_t *j = json_object(), *shape = json_array();
        for (int k = 0; k < o->rank; k++)
            json_array_append_new(shape, json_integer((json_int_t)o->dims[k]));
        set(j, "name", ts_json_str(o->name));
        set(j, "shape", shape);
        set(j, "checksum", ts_json_str(ck));
        set(j, "max_abs", ts_json_num(o->max_abs));
        json_array_append_new(a, j);
    }
    return a;
}

json_t *ts_report_json_tree(const ts_results *r)
{
    json_t *j = json_object();
    double t_s = ts_results_time_s(r), per_cycle[TS_LEVEL_COUNT], per_s[TS_LEVEL_COUNT];
    json_t *bytes = json_object();
    for (int l = 0; l < TS_LEVEL_COUNT; l++) {
        set(bytes, level_key[l], json_integer((json_int_t)r->bytes[l]));
        per_cycle[l] = ratio((double)r->bytes[l], (double)r->cycles);
        per_s[l] = ratio((double)r->bytes[l], t_s);
    }
    set(j, "schema_version", json_integer(TS_REPORT_SCHEMA_VERSION));
    set(j, "arch", ts_json_str(r->arch));
    set(j, "config", ts_json_str(r->config));
    set(j, "workload", ts_json_str(r->workload));
    set(j, "cycles", json_integer((json_int_t)r->cycles));
    set(j, "time_s", ts_json_num(t_s));
    set(j, "clock_hz", ts_json_num(r->clock_hz));
    set(j, "network_name", ts_json_str(r->net_name));
    set(j, "bytes", bytes);
    set(j, "bytes_per_cycle", json_levels(per_cycle));
    set(j, "bandwidth_bytes_per_s", json_levels(per_s));
    json_t *util = json_object();
    for (size_t i = 0; i < r->nutil; i++) {
        json_t *u = json_object();
        set(u, "units", json_integer((json_int_t)r->util[i].units));
        set(u, "busy_unit_cycles", json_integer((json_int_t)r->util[i].busy));
        set(u, "fraction", ts_json_num(util_fraction(r, &r->util[i])));
        set(util, r->util[i].name, u);
    }
    set(j, "utilization", util);
    set(j, "macs", json_integer((json_int_t)r->macs));
    set(j, "flops", ts_json_num(r->flops));
    set(j, "flops_per_s", ts_json_num(ratio(r->flops, t_s)));
    set(j, "ops", ts_json_num(r->ops));
    set(j, "ops_per_s", ts_json_num(ratio(r->ops, t_s)));
    set(j, "macs_executed", json_integer((json_int_t)r->macs_executed));
    json_t *peak = json_object();
    for (size_t i = 0; i < r->npeak; i++)
        set(peak, r->peak[i].dtype, ts_json_num(r->peak[i].macs_per_cycle));
    set(j, "peak_macs_per_cycle", peak);
    set(j, "mac_share", ts_json_num(ts_results_mac_share(r)));
    double ai[TS_LEVEL_COUNT];
    for (int l = 0; l < TS_LEVEL_COUNT; l++)
        ai[l] = ratio(2.0 * (double)r->macs, (double)r->bytes[l]);
    set(j, "arithmetic_intensity", json_levels(ai));
    set(j, "energy", json_energy(r));
    if (r->noutputs)
        set(j, "outputs", json_outputs(r));
    json_t *stats = json_object();
    for (size_t i = 0; i < ts_stats_count(r->stats); i++) {
        const ts_stat *st = ts_stats_at(r->stats, i);
        set(stats, st->name, json_stat(st));
    }
    set(j, "stats", stats);
    return j;
}

void ts_report_json(const ts_results *r, ts_buf *out)
{
    json_t *j = ts_report_json_tree(r);
    ts_buf_json(out, j, JSON_INDENT(2) | JSON_REAL_PRECISION(TS_JSON_DIGITS));
    ts_buf_putc(out, '\n');
    json_decref(j);
}

/* ---------------------------------------------------------------------------------------------
 * CSV (RFC 4180)
 * ------------------------------------------------------------------------------------------- */

/* The JSON paths of the first 17 columns, which keep their names of schema 1; every other scalar
 * of the JSON report follows them under its own path. */
static const char *const csv_fixed[] = {
    "arch", "config", "workload", "cycles", "time_s", "clock_hz", "bytes.sram", "bytes.network",
    "bytes.offchip", "bandwidth_bytes_per_s.sram", "bandwidth_bytes_per_s.network",
    "bandwidth_bytes_per_s.offchip", "macs", "flops", "energy.total_j", "energy.avg_power_w",
};

static bool csv_is_fixed(const char *path)
{
    for (size_t i = 0; i < sizeof csv_fixed / sizeof *csv_fixed; i++)
        if (!strcmp(path, csv_fixed[i]))
            return true;
    return false;
}

static void csv_str(ts_buf *out, const char *s);

/* One field of a JSON scalar: strings quoted as needed, numbers as in JSON, null empty. */
static void csv_scalar(ts_buf *out, const json_t *v)
{
    if (json_is_string(v))
        csv_str(out, json_string_value(v));
    else if (json_is_integer(v))
        ts_buf_printf(out, "%" PRId64, (int64_t)json_integer_value(v));
    else if (json_is_real(v))
        ts_buf_json_num(out, json_real_value(v));
    else if (json_is_boolean(v))
        ts_buf_puts(out, json_is_true(v) ? "true" : "false");
}

/* Where a walk of the report is: anywhere, the "stats" object, or one statistic in it. */
typedef enum csv_where { CSV_PLAIN, CSV_STATS, CSV_STAT } csv_where;

/* What a walk of a report calls: scalar for each scalar under its dotted path, table (when not
 * NULL) for each table statistic. */
typedef struct report_visit {
    void (*scalar)(void *ud, const char *path, const json_t *v);
    void (*table)(void *ud, const char *path, const json_t *t);
    void *ud;
} report_visit;

/* Every scalar of a report under its dotted path; a statistic stands for its value (or, a table,
 * is handed whole to f->table); arrays (per-unit figures, histograms, the outputs) are left out. */
static void report_walk(const json_t *v, ts_buf *path, csv_where where, const report_visit *f)
{
    if (where == CSV_STAT) {
        const json_t *t = json_object_get(v, "table");
        if (t) {
            if (f->table)
                f->table(f->ud, ts_buf_str(path), t);
            return;
        }
        if (!(v = json_object_get(v, "value")))
            return;
    }
    if (json_is_array(v))
        return;
    if (!json_is_object(v)) {
        f->scalar(f->ud, ts_buf_str(path), v);
        return;
    }
    size_t mark = path->len;
    const char *k;
    const json_t *m;
    json_object_foreach((json_t *)v, k, m) {
        if (mark)
            ts_buf_putc(path, '.');
        ts_buf_puts(path, k);
        csv_where next = where == CSV_STATS ? CSV_STAT : !mark && !strcmp(k, "stats") ? CSV_STATS : CSV_PLAIN;
        report_walk(m, path, next, f);
        path->len = mark;
        if (path->data)
            path->data[mark] = 0;
    }
}

/* The CSV's columns after the fixed ones: paths into hdr, fields into row (either may be NULL). */
typedef struct csv_out { ts_buf *hdr, *row; } csv_out;

static void csv_visit(void *ud, const char *path, const json_t *v)
{
    const csv_out *o = ud;
    if (csv_is_fixed(path))
        return;
    if (o->hdr) {
        ts_buf_putc(o->hdr, ',');
        csv_str(o->hdr, path);
    }
    if (o->row) {
        ts_buf_putc(o->row, ',');
        csv_scalar(o->row, v);
    }
}

/* The columns after the fixed ones, of the report of r. */
static void csv_rest(const ts_results *r, ts_buf *hdr, ts_buf *row)
{
    json_t *j = ts_report_json_tree(r);
    ts_buf path = TS_BUF_INIT;
    csv_out o = {hdr, row};
    report_visit f = {csv_visit, NULL, &o};
    if (!j)
        (hdr ? hdr : row)->oom = true;
    else
        report_walk(j, &path, CSV_PLAIN, &f);
    if (path.oom)
        (hdr ? hdr : row)->oom = true;
    ts_buf_free(&path);
    json_decref(j);
}

void ts_report_csv_header(const ts_results *r, ts_buf *out)
{
    ts_buf_puts(out, "arch,config,workload,cycles,time_s,clock_hz,sram_bytes,network_bytes,offchip_bytes,"
                     "sram_bw,network_bw,offchip_bw,macs,flops,energy_j,avg_power_w,outputs");
    csv_rest(r, out, NULL);
    ts_buf_putc(out, '\n');
}

static void csv_str(ts_buf *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        ts_buf_puts(out, s);
        return;
    }
    ts_buf_putc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            ts_buf_putc(out, '"');
        ts_buf_putc(out, *s);
    }
    ts_buf_putc(out, '"');
}

/* An undefined figure (NaN) is an empty field. */
static void csv_num(ts_buf *out, double v)
{
    ts_buf_putc(out, ',');
    if (isfinite(v))
        ts_buf_json_num(out, v);
}

void ts_report_csv_row(const ts_results *r, ts_buf *out)
{
    double t_s = ts_results_time_s(r);
    csv_str(out, r->arch);
    ts_buf_putc(out, ',');
    csv_str(out, r->config);
    ts_buf_putc(out, ',');
    csv_str(out, r->workload);
    ts_buf_printf(out, ",%" PRIu64, r->cycles);
    csv_num(out, t_s);
    csv_num(out, r->clock_hz);
    for (int l = 0; l < TS_LEVEL_COUNT; l++)
        ts_buf_printf(out, ",%" PRIu64, r->bytes[l]);
    for (int l = 0; l < TS_LEVEL_COUNT; l++)
        csv_num(out, ratio((double)r->bytes[l], t_s));
    ts_buf_printf(out, ",%" PRIu64, r->macs);
    csv_num(out, r->flops);
    csv_num(out, r->energy_table[0] ? r->energy_j : NAN);
    csv_num(out, avg_power(r));
    /* the graph outputs, "name[1x1000]:checksum:max_abs" separated by spaces */
    ts_buf b = TS_BUF_INIT;
    for (size_t i = 0; i < r->noutputs; i++) {
        const ts_result_output *o = &r->outputs[i];
        ts_buf_printf(&b, "%s%s[", i ? " " : "", o->name);
        for (int k = 0; k < o->rank; k++)
            ts_buf_printf(&b, "%s%" PRId64, k ? "x" : "", o->dims[k]);
        ts_buf_printf(&b, "]:%016" PRIx64 ":%.9g", o->checksum, o->max_abs);
    }
    ts_buf_putc(out, ',');
    csv_str(out, ts_buf_str(&b));
    ts_buf_free(&b);
    csv_rest(r, NULL, out);
    ts_buf_puts(out, "\n");
}

ts_status ts_report_write(const ts_results *r, ts_format fmt, const char *path, ts_err *err)
{
    ts_buf b = TS_BUF_INIT;
    switch (fmt) {
    case TS_FMT_TEXT:
        ts_report_text(r, &b);
        break;
    case TS_FMT_JSON:
        ts_report_json(r, &b);
        break;
    case TS_FMT_CSV:
        ts_report_csv_header(r, &b);
        ts_report_csv_row(r, &b);
        break;
    default:
        return ts_err_set(err, TS_EINTERNAL, "unknown report format %d", (int)fmt);
    }
    if (b.oom) {
        ts_buf_free(&b);
        return ts_err_set(err, TS_ENOMEM, "out of memory rendering the report");
    }
    ts_status st = ts_write_file_atomic(path, ts_buf_str(&b), b.len, err);
    ts_buf_free(&b);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Two reports side by side (tessera diff)
 * ------------------------------------------------------------------------------------------- */

/* One metric: its path and its value in each report (borrowed from the trees; NULL where the
 * report does not have it). */
typedef struct drow {
    char *name; /* owned */
    const json_t *v[2];
} drow;

typedef struct dlist {
    drow *rows; /* owned */
    size_t n, cap;
    bool oom;
} dlist;

/* Set side's value of metric name, adding the metric when it is new. Linear search: a report has
 * a few hundred scalars and a layers table a few thousand cells. */
static void dl_put(dlist *l, const char *name, int side, const json_t *v)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->rows[i].name, name)) {
            if (!l->rows[i].v[side])
                l->rows[i].v[side] = v;
            return;
        }
    char *s = ts_strdup(name);
    if (!s || ts_grow((void **)&l->rows, &l->cap, l->n + 1, sizeof *l->rows)) {
        ts_free(s);
        l->oom = true;
        return;
    }
    l->rows[l->n++] = (drow){.name = s, .v = {side == 0 ? v : NULL, side == 1 ? v : NULL}};
}

/* A table statistic's cells as "stats.NAME[KEY].COLUMN", KEY the row's first cell (the node of a
 * layers table, the superstep of a BSP table), or "#i" (the row's index) when first cells repeat. */
static void dl_table(dlist *l, const char *path, const json_t *t, int side)
{
    const json_t *cols = json_object_get(t, "columns"), *rows = json_object_get(t, "rows");
    const json_t *lab = json_object_get(t, "labels"), *lcols = json_object_get(lab, "columns"),
                 *lrows = json_object_get(lab, "rows");
    size_t nr = json_array_size(rows), nc = json_array_size(cols);
    bool unique = true;
    for (size_t i = 0; i < nr && unique; i++)
        for (size_t k = 0; k < i && unique; k++)
            unique = !json_equal(json_array_get(json_array_get(rows, i), 0),
                                 json_array_get(json_array_get(rows, k), 0));
    ts_buf name = TS_BUF_INIT;
    for (size_t i = 0; i < nr; i++) {
        const json_t *row = json_array_get(rows, i), *lrow = json_array_get(lrows, i);
        ts_buf_reset(&name);
        ts_buf_printf(&name, "%s[", path);
        if (unique)
            ts_buf_json(&name, json_array_get(row, 0), JSON_REAL_PRECISION(TS_JSON_DIGITS));
        else
            ts_buf_printf(&name, "#%zu", i);
        ts_buf_puts(&name, "].");
        size_t mark = name.len;
        /* the text columns first (an operator's type and name), as the text report shows them */
        for (size_t c = 0; c < json_array_size(lcols) + nc; c++) {
            bool text = c < json_array_size(lcols);
            size_t k = text ? c : c - json_array_size(lcols);
            const char *col = text ? json_string_value(json_array_get(lcols, k))
                                   : json_string_value(json_object_get(json_array_get(cols, k), "name"));
            if (!text && k == 0)
                continue; /* the key */
            name.len = mark;
            ts_buf_puts(&name, col ? col : "");
            if (!name.oom)
                dl_put(l, ts_buf_str(&name), side, json_array_get(text ? lrow : row, k));
        }
    }
    l->oom |= name.oom;
    ts_buf_free(&name);
}

/* One report's side of the list: a scalar, or a table cell by cell. */
typedef struct dl_side { dlist *l; int side; } dl_side;

static void dl_scalar(void *ud, const char *path, const json_t *v)
{
    const dl_side *d = ud;
    dl_put(d->l, path, d->side, v);
}

static void dl_table_visit(void *ud, const char *path, const json_t *t)
{
    const dl_side *d = ud;
    dl_table(d->l, path, t, d->side);
}

static bool is_num(const json_t *v) { return json_is_number(v); }

/* Whether a metric is the same in both reports (absent from both counts as the same). */
static bool drow_same(const drow *d)
{
    return d->v[0] && d->v[1] ? json_equal(d->v[0], d->v[1]) : d->v[0] == d->v[1];
}

/* B / A of a metric: NAN unless both are numbers and A is not 0 (both 0 gives 1: unchanged). */
static double drow_ratio(const drow *d)
{
    if (!is_num(d->v[0]) || !is_num(d->v[1]))
        return NAN;
    double a = json_number_value(d->v[0]), b = json_number_value(d->v[1]);
    if (a == 0)
        return b == 0 ? 1 : NAN;
    return b / a;
}

/* A value for people: numbers as in the text report, strings as they are, absent as "-". */
static void dval_text(char *buf, size_t n, const json_t *v)
{
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        num_text(buf, n, (double)json_integer_value(v));
    else if (json_is_real(v))
        num_text(buf, n, json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        snprintf(buf, n, "-");
}

static void diff_text(const dlist *l, const char *const names[2], bool changed, ts_buf *out)
{
    tbl t;
    tbl_init(&t, 4);
    tbl_cell(&t, "metric");
    tbl_cell(&t, "A");
    tbl_cell(&t, "B");
    tbl_cell(&t, "B/A");
    size_t ndiff = 0;
    for (size_t i = 0; i < l->n; i++) {
        const drow *d = &l->rows[i];
        bool same = drow_same(d);
        ndiff += !same;
        if (changed && same)
            continue;
        char a[256], b[256];
        dval_text(a, sizeof a, d->v[0]);
        dval_text(b, sizeof b, d->v[1]);
        double q = drow_ratio(d);
        tbl_cell(&t, "%s", d->name);
        tbl_cell(&t, "%s", a);
        tbl_cell(&t, "%s", b);
        if (isfinite(q))
            tbl_cell(&t, "%.4f", q);
        else
            tbl_cell(&t, "%s", same ? "" : !d->v[0] ? "only in B" : !d->v[1] ? "only in A" : "differs");
    }
    ts_buf_printf(out, "A: %s\nB: %s\n%zu of %zu metrics differ\n\n", names[0], names[1], ndiff, l->n);
    tbl_emit(&t, out, 0, "lrrr");
    tbl_free(&t);
}

static void diff_json(const dlist *l, const char *const names[2], bool changed, ts_buf *out)
{
    json_t *j = json_object(), *rows = json_array();
    json_object_set_new(j, "a", ts_json_str(names[0]));
    json_object_set_new(j, "b", ts_json_str(names[1]));
    for (size_t i = 0; i < l->n; i++) {
        const drow *d = &l->rows[i];
        if (changed && drow_same(d))
            continue;
        json_t *r = json_object();
        json_object_set_new(r, "metric", ts_json_str(d->name));
        json_object_set_new(r, "a", d->v[0] ? json_deep_copy(d->v[0]) : json_null());
        json_object_set_new(r, "b", d->v[1] ? json_deep_copy(d->v[1]) : json_null());
        json_object_set_new(r, "ratio", ts_json_num(drow_ratio(d)));
        json_array_append_new(rows, r);
    }
    json_object_set_new(j, "metrics", rows);
    ts_buf_json(out, j, JSON_INDENT(2) | JSON_REAL_PRECISION(TS_JSON_DIGITS));
    ts_buf_putc(out, '\n');
    json_decref(j);
}

static void diff_csv(const dlist *l, bool changed, ts_buf *out)
{
    ts_buf_puts(out, "metric,a,b,ratio\n");
    for (size_t i = 0; i < l->n; i++) {
        const drow *d = &l->rows[i];
        if (changed && drow_same(d))
            continue;
        csv_str(out, d->name);
        for (int s = 0; s < 2; s++) {
            ts_buf_putc(out, ',');
            csv_scalar(out, d->v[s]);
        }
        csv_num(out, drow_ratio(d));
        ts_buf_putc(out, '\n');
    }
}

ts_status ts_report_diff(const struct json_t *a, const struct json_t *b, const char *const names[2],
                         ts_format fmt, bool changed, ts_buf *out, ts_err *err)
{
    const json_t *rep[2] = {a, b};
    for (int s = 0; s < 2; s++)
        if (!json_is_object(rep[s]) || !json_is_integer(json_object_get(rep[s], "schema_version")))
            return ts_err_at(err, TS_EINPUT, names[s], 0, 0,
                             "not a tessera report (no schema_version; write one with 'tessera run -f json')");
    dlist l = {0};
    ts_buf path = TS_BUF_INIT;
    for (int s = 0; s < 2; s++) {
        dl_side d = {&l, s};
        report_visit f = {dl_scalar, dl_table_visit, &d};
        report_walk(rep[s], &path, CSV_PLAIN, &f);
    }
    ts_status st = TS_OK;
    if (l.oom || path.oom)
        st = ts_err_set(err, TS_ENOMEM, "out of memory comparing reports");
    else if (fmt == TS_FMT_JSON)
        diff_json(&l, names, changed, out);
    else if (fmt == TS_FMT_CSV)
        diff_csv(&l, changed, out);
    else
        diff_text(&l, names, changed, out);
    for (size_t i = 0; i < l.n; i++)
        ts_free(l.rows[i].name);
    ts_free(l.rows);
    ts_buf_free(&path);
    if (st == TS_OK && out->oom)
        st = ts_err_set(err, TS_ENOMEM, "out of memory comparing reports");
    return st;
}
