/* core/results.c — family-neutral run results and their pricing in joules. */
#include "core/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

void ts_results_init(ts_results *r)
{
    memset(r, 0, sizeof *r);
    /* If this allocation fails stats stays NULL: every ts_stats_* call then returns TS_ENOMEM
     * and report writers see an empty registry. */
    r->stats = ts_stats_create();
}

double ts_results_peak_macs(const ts_results *r)
{
    double p = 0;
    for (size_t i = 0; i < r->npeak; i++)
        if (r->peak[i].macs_per_cycle > p)
            p = r->peak[i].macs_per_cycle;
    return p;
}

double ts_results_mac_share(const ts_results *r)
{
    double p = ts_results_peak_macs(r);
    return p > 0 && r->cycles ? (double)r->macs / (p * (double)r->cycles) : NAN;
}

void ts_results_free(ts_results *r)
{
    if (!r)
        return;
    ts_stats_destroy(r->stats);
    r->stats = NULL;
    for (size_t i = 0; i < r->noutputs; i++)
        ts_free(r->outputs[i].name);
    ts_free(r->outputs);
    r->outputs = NULL;
    r->noutputs = 0;
}

uint64_t ts_results_checksum(const float *v, uint64_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t b;
        float f = v[i];
        if (isnan(f))
            b = 0x7fc00000u;
        else if (f == 0)
            b = 0;
        else
            memcpy(&b, &f, 4);
        for (int k = 0; k < 4; k++)
            h = (h ^ ((b >> (8 * k)) & 0xff)) * 0x100000001b3ULL;
    }
    return h;
}

ts_status ts_results_output(ts_results *r, const char *name, int rank, const int64_t *dims, const float *v,
                            uint64_t n, ts_err *err)
{
    if (rank < 0 || rank > TS_OUTPUT_MAX_RANK)
        return ts_err_set(err, TS_EINTERNAL, "output '%s' has rank %d", name, rank);
    ts_result_output *o = ts_realloc(r->outputs, (r->noutputs + 1) * sizeof *o);
    if (!o)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    r->outputs = o;
    o = &o[r->noutputs];
    memset(o, 0, sizeof *o);
    if (!(o->name = ts_strdup(name)))
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    r->noutputs++;
    o->rank = rank;
    memcpy(o->dims, dims, sizeof(int64_t) * (size_t)rank);
    o->checksum = ts_results_checksum(v, n);
    double m = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (isnan(v[i])) {
            m = NAN;
            break;
        }
        if (fabs((double)v[i]) > m)
            m = fabs((double)v[i]);
    }
    o->max_abs = m;
    return TS_OK;
}

ts_status ts_results_event(ts_results *r, const char *name, double count, ts_err *err)
{
    if (!name || !*name || strlen(name) >= sizeof r->events[0].name)
        return ts_err_set(err, TS_EINTERNAL, "event name '%s' is empty or longer than %zu characters",
                          name ? name : "", sizeof r->events[0].name - 1);
    if (!isfinite(count) || count < 0)
        return ts_err_set(err, TS_EINTERNAL, "count %g of event '%s' is negative or not finite", count, name);
    for (size_t i = 0; i < r->nevents; i++) {
        if (!strcmp(r->events[i].name, name)) {
            r->events[i].count += count;
            return TS_OK;
        }
    }
    if (r->nevents == TS_MAX_EVENTS)
        return ts_err_set(err, TS_EINTERNAL, "too many kinds of event: '%s' would be number %d", name,
                          TS_MAX_EVENTS + 1);
    ts_event_count *e = &r->events[r->nevents++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->count = count;
    return TS_OK;
}

/* A kind added again is merged: units and busy unit-cycles both add up, so a family may report
 * groups of the same kind separately. */
ts_status ts_results_util(ts_results *r, const char *name, uint64_t units, uint64_t busy, ts_err *err)
{
    if (!name || !*name || strlen(name) >= sizeof r->util[0].name)
        return ts_err_set(err, TS_EINTERNAL, "unit kind '%s' is empty or longer than %zu characters",
                          name ? name : "", sizeof r->util[0].name - 1);
    for (size_t i = 0; i < r->nutil; i++) {
        if (!strcmp(r->util[i].name, name)) {
            r->util[i].units += units;
            r->util[i].busy += busy;
            return TS_OK;
        }
    }
    if (r->nutil == TS_MAX_UTIL)
        return ts_err_set(err, TS_EINTERNAL, "too many unit kinds: '%s' would be number %d", name,
                          TS_MAX_UTIL + 1);
    ts_util *u = &r->util[r->nutil++];
    snprintf(u->name, sizeof u->name, "%s", name);
    u->units = units;
    u->busy = busy;
    return TS_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ts_component_energy *)a)->name, ((const ts_component_energy *)b)->name);
}

/* Add joules to a component of out[0..*n), creating it. 0 on success, -1 if full. */
static int charge(ts_component_energy *out, size_t *n, const char *name, double j)
{
    for (size_t i = 0; i < *n; i++) {
        if (!strcmp(out[i].name, name)) {
            out[i].joules += j;
            return 0;
        }
    }
    if (*n == TS_MAX_COMPONENTS)
        return -1;
    snprintf(out[*n].name, sizeof out[*n].name, "%s", name);
    out[*n].joules = j;
    (*n)++;
    return 0;
}

ts_status ts_results_price(ts_results *r, const ts_energy_table *t, ts_err *err)
{
    ts_component_energy comp[TS_MAX_COMPONENTS];
    size_t ncomp = 0;
    memset(comp, 0, sizeof comp);
    double total = 0;
    /* Events are summed in insertion order, which a deterministic family fixes. */
    for (size_t i = 0; i < r->nevents; i++) {
        const ts_energy_entry *e = ts_energy_find(t, r->events[i].name);
        if (!e)
            return ts_err_set(err, TS_EINPUT, "energy table '%s' has no entry for event '%s'",
                              ts_energy_name(t), r->events[i].name);
        double j = r->events[i].count * e->joules;
        if (charge(comp, &ncomp, e->component, j))
            return ts_err_set(err, TS_EINTERNAL, "too many energy components (max %d)", TS_MAX_COMPONENTS);
        total += j;
    }
    double stat_j = r->static_w * ts_results_time_s(r);
    if (charge(comp, &ncomp, "static", stat_j))
        return ts_err_set(err, TS_EINTERNAL, "too many energy components (max %d)", TS_MAX_COMPONENTS);
    total += stat_j;
    qsort(comp, ncomp, sizeof comp[0], by_name);
    /* Only now that nothing can fail are the results touched. */
    memcpy(r->by_component, comp, sizeof comp);
    r->ncomponents = ncomp;
    r->energy_j = total;
    snprintf(r->energy_table, sizeof r->energy_table, "%s", ts_energy_name(t));
    return TS_OK;
}

double ts_results_time_s(const ts_results *r)
{
    return r->clock_hz > 0 ? (double)r->cycles / r->clock_hz : 0.0;
}

int ts_results_events_table(ts_stats *s, const char *name, const char *desc, const char *first,
                            const char *const *events, size_t nevents)
{
    const char **cols = ts_malloc((1 + nevents) * sizeof *cols), **units = ts_malloc((1 + nevents) * sizeof *units);
    int tab = -1;
    if (cols && units) {
        cols[0] = first;
        units[0] = "";
        for (size_t e = 0; e < nevents; e++) {
            cols[1 + e] = events[e];
            units[1 + e] = "";
        }
        tab = ts_stats_table(s, name, desc, 1 + nevents, cols, units);
    }
    ts_free(cols);
    ts_free(units);
    return tab;
}

double ts_results_sum_rows(const ts_stat *tab, size_t row, size_t n, const char *col)
{
    if (!tab || tab->kind != TS_STAT_TABLE || row + n > tab->nrows)
        return NAN;
    for (size_t c = 0; c < tab->ncols; c++) {
        if (strcmp(tab->cols[c], col))
            continue;
        double v = 0;
        for (size_t k = row; k < row + n; k++)
            v += tab->rows[k * tab->ncols + c];
        return v;
    }
    return NAN;
}

ts_status ts_results_level_columns(ts_stats *s, int tab, const double *v, size_t n)
{
    static const char *const names[TS_LEVEL_COUNT] = {"sram_bytes", "network_bytes", "offchip_bytes"};
    ts_status st = TS_OK;
    for (int l = 0; l < TS_LEVEL_COUNT && st == TS_OK; l++)
        st = ts_stats_table_add_column(s, tab, names[l], "B", v + (size_t)l * n);
    return st;
}

double ts_results_price_rows(const ts_stat *tab, size_t row, size_t n, const ts_energy_table *t)
{
    if (!tab || !t || tab->kind != TS_STAT_TABLE || row + n > tab->nrows)
        return -1;
    double j = 0;
    for (size_t c = 1; c < tab->ncols; c++) {
        const ts_energy_entry *e = ts_energy_find(t, tab->cols[c]);
        if (!e)
            return -1;
        for (size_t k = row; k < row + n; k++)
            j += e->joules * tab->rows[k * tab->ncols + c];
    }
    return j;
}
