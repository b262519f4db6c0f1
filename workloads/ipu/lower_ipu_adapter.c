/* workloads/ipu/lower_ipu_adapter.c — the IPU lowering as the registry sees it
 * (workloads/lower/lower.h): the per-layer attribution of a run's results, the parameters from a
 * config, the settings, and the ts_lowering. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/ipu/lower_ipu.h"

/* ---- the per-layer attribution ---- */

/* The columns first and last (cycles) of the layers table from span (owned, freed here): each
 * row's first cycle and last cycle, interleaved; the trace's layers track reads them. Then the
 * bytes by level from lv (owned, freed here; n rows of each level). */
static ts_status layer_span_columns(ts_stats *s, int tab, double *span, double *lv, size_t n, ts_err *err)
{
    double *col = ts_calloc(n ? 2 * n : 1, sizeof *col);
    ts_status st = col ? TS_OK : TS_ENOMEM;
    for (size_t i = 0; col && i < n; i++) {
        col[i] = span[2 * i];
        col[n + i] = span[2 * i + 1];
    }
    if (st == TS_OK)
        st = ts_stats_table_add_column(s, tab, "first", "cycles", col);
    if (st == TS_OK)
        st = ts_stats_table_add_column(s, tab, "last", "cycles", col + n);
    if (st == TS_OK)
        st = ts_results_level_columns(s, tab, lv, n);
    ts_free(col);
    ts_free(span);
    ts_free(lv);
    return st == TS_OK ? TS_OK : ts_err_set(err, st, "out of memory for the layers table");
}

ts_status ts_lower_ipu_layer_stats(const ts_lower_report *rep, ts_results *res, const ts_energy_table *energy,
                                   ts_err *err)
{
    ts_stats *s = res->stats;
    const ts_stat *ss = ts_stats_find(s, TS_IPU_TABLE_SUPERSTEPS);
    if (!ss || ss->kind != TS_STAT_TABLE || ss->ncols < 7)
        return ts_err_set(err, TS_EINPUT, "the run has no supersteps table to join the layers with");
    if (ss->nrows < rep->supersteps)
        return ts_err_set(err, TS_EINPUT, "the run passed %zu supersteps, the plan has %u", ss->nrows, rep->supersteps);
    const ts_stat *ev = ts_stats_find(s, TS_IPU_TABLE_SUPERSTEP_EVENTS);
    static const char *const cols[] = {"node", "op", "tiles", "supersteps", "cycles", "compute_share",
                                       "exchange_share", "sync_share", "exchange_bytes", "mem_bytes", "macs",
                                       "bandwidth", "energy", "t10", "fm", "fn", "fk", "ft", "rp", "rot",
                                       "model_cycles", "plan"};
    static const char *const units[] = {"", "", "", "", "cycles", "", "", "", "B", "B", "", "GB/s", "uJ", "", "",
                                        "", "", "", "", "", "cycles", ""};
    /* the plan columns whatever the planner: every planner names each operator's plan */
    size_t nc = sizeof cols / sizeof cols[0];
    int tab = ts_stats_table(s, "layers", "one row per operator of the lowered model: its supersteps' cycles "
                             "and their compute, exchange and sync shares, its tile memory per tile, its exchange "
                             "bytes per second over its cycles, its dynamic energy, and its plan (t10: lowered by "
                             "the compute-shift code; fm fn fk ft rp rot; the cost model's cycles; plan 0 "
                             "load-compute-store, 1 split, 2 compute-shift)", nc, cols, units);
    if (tab < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the layers table");
    size_t nr = 0, nrow = 0; /* rows: the layers with supersteps */
    for (size_t i = 0; i < rep->nlayers; i++)
        nr += rep->layers[i].steps > 0;
    double *span = ts_calloc(2 * (nr ? nr : 1), sizeof *span);
    double *lv = ts_calloc(TS_LEVEL_COUNT * (nr ? nr : 1), sizeof *lv);
    if (!span || !lv) {
        ts_free(span);
        ts_free(lv);
        return ts_err_set(err, TS_ENOMEM, "out of memory for the layers table");
    }
    for (size_t i = 0; i < rep->nlayers; i++) {
        const ts_lower_layer *l = &rep->layers[i];
        if (!l->steps)
            continue;
        double c = 0, x = 0, y = 0, b = 0;
        for (uint32_t k = l->first_step; k < l->first_step + l->steps; k++) {
            const double *r = ss->rows + (size_t)k * ss->ncols; /* id start compute exchange sync critical bytes */
            c += r[2];
            x += r[3];
            y += r[4];
            b += r[6];
        }
        double tot = c + x + y, secs = res->clock_hz > 0 ? tot / res->clock_hz : 0;
        double j = ts_results_price_rows(ev, l->first_step, l->steps, energy);
        double row[22] = {l->node, l->op, l->tiles, l->steps, tot, tot > 0 ? c / tot : 0, tot > 0 ? x / tot : 0,
                          tot > 0 ? y / tot : 0, b, (double)l->mem_bytes, (double)l->macs,
                          secs > 0 ? b / secs / 1e9 : 0, j >= 0 ? j * 1e6 : -1, l->t10, l->fm, l->fn, l->fk, l->ft,
                          l->rp, l->rot, (double)l->model_cycles, l->plan};
        ts_status rc = ts_stats_row(s, tab, row);
        if (rc != TS_OK) {
            ts_free(span);
            ts_free(lv);
            return ts_err_set(err, rc, "out of memory for the layers table");
        }
        /* bytes by level from its supersteps' events: tile memory in 64-bit words (ops and the
         * exchange's reads and writes), the exchange's bytes, the host link in bits */
        lv[nrow] = 8.0 * (ts_results_sum_rows(ev, l->first_step, l->steps, "sram_read_64b") +
                          ts_results_sum_rows(ev, l->first_step, l->steps, "sram_write_64b"));
        lv[nr + nrow] = b;
        lv[2 * nr + nrow] = ts_results_sum_rows(ev, l->first_step, l->steps, "pcie_bit") / 8.0;
        /* the cycles its supersteps span: the first's start to the last's end */
        const double *f = ss->rows + (size_t)l->first_step * ss->ncols,
                     *e = ss->rows + (size_t)(l->first_step + l->steps - 1) * ss->ncols;
        span[2 * nrow] = f[1];
        span[2 * nrow++ + 1] = e[1] + e[2] + e[3] + e[4] - 1;
    }
    return layer_span_columns(s, tab, span, lv, nrow, err);
}

/* ---- parameters from a config ---- */

ts_status ts_lower_ipu_params_from_config(const ts_config *cfg, ts_lower_ipu_params *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    out->planner = TS_LOWER_PLANNER_AUTO;
    return ts_ipu_target_from_config(cfg, &out->target, err);
}

ts_status ts_lower_ipu_planner(const char *name, int *out, ts_err *err)
{
    if (!strcmp(name, "auto"))
        *out = TS_LOWER_PLANNER_AUTO;
    else if (!strcmp(name, "lcs"))
        *out = TS_LOWER_PLANNER_LCS;
    else if (!strcmp(name, "t10"))
        *out = TS_LOWER_PLANNER_T10;
    else if (!strcmp(name, "split"))
        *out = TS_LOWER_PLANNER_SPLIT;
    else
        return ts_err_set(err, TS_EINPUT, "unknown planner '%s': auto (the cheapest plan per operator, the default), "
                          "lcs (load-compute-store), t10 (compute-shift) or split (t10's partitions, nothing "
                          "rotating)", name);
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct ipu_lowering {
    ts_lower_ipu_params p;
    ts_lower_report rep;
} ipu_lowering;

static ts_status ipu_check_planner(const char *value, ts_err *err)
{
    int planner;
    return ts_lower_ipu_planner(value, &planner, err);
}

/* max_tiles: a whole number of tiles, 1 or more (a chip with fewer uses all of its own) */
static ts_status ipu_max_tiles(const char *value, uint32_t *out, ts_err *err)
{
    char *end;
    errno = 0;
    unsigned long long v = value[0] >= '0' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
    if (!v || errno || *end || v > UINT32_MAX)
        return ts_err_set(err, TS_EINPUT, "max_tiles '%s': expected a whole number of tiles, 1 or more", value);
    *out = (uint32_t)v;
    return TS_OK;
}

static ts_status ipu_check_max_tiles(const char *value, ts_err *err)
{
    uint32_t t;
    return ipu_max_tiles(value, &t, err);
}

static const ts_lower_param ipu_params[] = {
    {"planner", "how MatMul, Gemm and 1x1 Conv are planned: auto (the default), lcs, t10 or split",
     ipu_check_planner},
    {"max_tiles", "the most tiles a plan may use (the first N; default all of the chip's)", ipu_check_max_tiles},
};

static ts_status ipu_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    ipu_lowering *s = ts_lower_state_new(sizeof *s, state, err);
    if (!s)
        return TS_ENOMEM;
    ts_status rc = ts_lower_ipu_params_from_config(cfg, &s->p, err);
    const char *planner = ts_lower_opts_get(opts, "planner");
    if (rc == TS_OK && planner)
        rc = ts_lower_ipu_planner(planner, &s->p.planner, err);
    const char *tiles = ts_lower_opts_get(opts, "max_tiles");
    if (rc == TS_OK && tiles)
        rc = ipu_max_tiles(tiles, &s->p.max_tiles, err);
    return rc;
}

static ts_status ipu_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    ipu_lowering *s = state;
    return ts_lower_ipu(g, &s->p, out, &s->rep, err);
}

static ts_status ipu_prepare(void *state, ts_run_opts *ro, ts_err *err)
{
    (void)err;
    const ipu_lowering *s = state;
    ro->phase_events = s->rep.nlayers > 0; /* the layers table prices each operator's supersteps */
    return TS_OK;
}

static ts_status ipu_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const ipu_lowering *s = state;
    return s->rep.nlayers ? ts_lower_ipu_layer_stats(&s->rep, res, energy, err) : TS_OK;
}

/* Each layer's supersteps, the plan's: the chip's superstep and tile slices carry their number. */
static ts_status ipu_trace_layers(void *state, const ts_graph *g, ts_trace *t)
{
    const ts_lower_report *rep = &((const ipu_lowering *)state)->rep;
    ts_status st = TS_OK;
    for (size_t i = 0; i < rep->nlayers && st == TS_OK; i++) {
        const ts_lower_layer *l = &rep->layers[i];
        if (l->steps)
            st = ts_lower_trace_layer(t, g, TS_TRACE_BY_SUPERSTEP, l->first_step, l->first_step + l->steps - 1,
                                      l->node);
    }
    return st;
}

static void ipu_destroy(void *state)
{
    ipu_lowering *s = state;
    ts_lower_report_free(&s->rep);
    ts_free(s);
}

static ts_status ipu_read_output(void *state, const ts_graph *g, int tensor, const ts_lower_mem *mem, float *dst,
                                 ts_err *err)
{
    return ts_lower_ipu_read_output(&((const ipu_lowering *)state)->rep, g, tensor, mem, dst, err);
}

const ts_lowering ts_ipu_lowering = {
    .arch = "ipu",
    .name = "IPU load-compute-store / compute-shift",
    .params = ipu_params,
    .nparams = sizeof ipu_params / sizeof ipu_params[0],
    .create = ipu_create,
    .lower = ipu_lower,
    .prepare = ipu_prepare,
    .attribute = ipu_attribute,
    .trace_layers = ipu_trace_layers,
    .destroy = ipu_destroy,
    .read_output = ipu_read_output,
};
