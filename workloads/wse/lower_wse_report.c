/* workloads/wse/lower_wse_report.c — what the lowering tells its callers: the report of the
 * placed stages, where an output element is after the run, the stages as regions for the run,
 * the per-stage table of the run's results ("layers"), and the lowering in the registry.
 */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/stats.h"
#include "workloads/wse/lower_wse_int.h"

ts_status ts_lww_report(const lw *L, uint32_t hm, int output, ts_lower_wse_report *rep)
{
    rep->stages = ts_calloc(L->n, sizeof *rep->stages);
    if (!rep->stages)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < L->n; i++) {
        const lw_stage *s = &L->st[i];
        rep->stages[i] = (ts_lower_wse_stage){.node = s->node, .what = ts_lww_kind_name[s->kind],
                                              .skip = s->lane != 0, .x = s->x, .y = s->y0, .w = s->w,
                                              .h = s->h, .kr = s->kr, .kc = s->kc, .macs = s->macs,
                                              .mem_bytes = s->mem, .in_elems = s->in_n, .out_elems = s->out_n,
                                              .colour_in = s->cin, .colour_out = s->cout};
        rep->pes_used += s->w * s->h;
        if (s->y0 + s->h > rep->height_used)
            rep->height_used = s->y0 + s->h;
        if (s->x + s->w > rep->width_used)
            rep->width_used = s->x + s->w;
    }
    rep->nstages = L->n;
    rep->colours_used = hm < L->t->height ? 16 : L->n > 1 ? 8 : 4;
    const lw_stage *k = &L->st[L->n - 1];
    rep->out_tensor = output;
    rep->out_nhwc = k->in_nhwc;
    const ts_graph_tensor *o = ts_graph_get_tensor(L->g, output);
    for (int d = 0; d < 4 && d < o->rank; d++)
        rep->out_dims[d] = o->dims[d];
    rep->sink_x = k->x;
    rep->sink_chunk = k->chunk;
    if (L->out_rows) {
        int64_t W;
        const int64_t R = ts_lww_rows(o, &W);
        if (!(rep->out_rows = ts_malloc((size_t)R * sizeof *rep->out_rows)))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        memcpy(rep->out_rows, L->out_rows, (size_t)R * sizeof *rep->out_rows);
        rep->out_row_len = (uint64_t)W;
    }
    return TS_OK;
}

int ts_lower_wse_locate(const ts_lower_wse_report *rep, int tensor, uint64_t elem, uint32_t *x, uint32_t *y,
                        uint64_t *addr)
{
    if (!rep || tensor != rep->out_tensor || !rep->sink_chunk)
        return -1;
    uint64_t s = elem;
    if (rep->out_nhwc) { /* graph index (n, c, h, w) to stream index (n, h, w, c) */
        uint64_t C = (uint64_t)rep->out_dims[1], HW = (uint64_t)(rep->out_dims[2] * rep->out_dims[3]);
        uint64_t px = elem % HW, ch = (elem / HW) % C, n = elem / (HW * C);
        s = (n * HW + px) * C + ch;
    }
    if (rep->out_rows) /* the row's place in the stream */
        s = (uint64_t)rep->out_rows[elem / rep->out_row_len] * rep->out_row_len + elem % rep->out_row_len;
    *x = rep->sink_x + (uint32_t)(s / rep->sink_chunk);
    *y = 0;
    *addr = (s % rep->sink_chunk) * 4;
    return 0;
}

ts_status ts_lower_wse_regions(const ts_lower_wse_report *rep, ts_region **out, size_t *n, ts_err *err)
{
    *out = NULL;
    *n = 0;
    if (!rep->nstages)
        return TS_OK;
    ts_region *g = ts_malloc(rep->nstages * sizeof *g);
    if (!g)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < rep->nstages; i++)
        g[i] = (ts_region){rep->stages[i].x, rep->stages[i].y, rep->stages[i].w, rep->stages[i].h};
    *out = g;
    *n = rep->nstages;
    return TS_OK;
}

ts_status ts_lower_wse_stage_stats(const ts_lower_wse_report *rep, ts_results *res,
                                   const ts_energy_table *energy, ts_err *err)
{
    static const char *const cols[] = {"stage",       "node",         "x",         "y",       "w",
                                       "h",           "pes",          "macs",      "busy",    "stall",
                                       "wavelets_in", "wavelets_out", "bandwidth", "busiest", "link_wavelets",
                                       "energy"};
    static const char *const units[] = {"", "", "", "", "", "", "", "", "cycles", "cycles", "", "", "GB/s",
                                        "cycles", "", "uJ"};
    enum { NC = sizeof cols / sizeof *cols };
    ts_stats *stats = res->stats;
    const ts_stat *ev = ts_stats_find(stats, WSE_STAT_REGION_EVENTS);
    const ts_stat *rs = ts_stats_find(stats, WSE_STAT_REGION_STATS);
    double secs = ts_results_time_s(res), worst = 0;
    int tb = ts_stats_table(stats, "layers", "one row per stage of the WSE lowering (docs/lowering-wse.md); node -1 is "
                            "the input source, the output sink or a skip path's FIFO; bandwidth is its wavelets in "
                            "and out (4 B each) over the run, energy the dynamic energy of its PEs and routers",
                            NC, cols, units);
    size_t n = rep->nstages;
    double *lv = tb < 0 ? NULL : ts_calloc(TS_LEVEL_COUNT * (n ? n : 1), sizeof *lv);
    if (!lv)
        return ts_err_set(err, TS_ENOMEM, "cannot add the layer table");
    for (size_t i = 0; i < n; i++) {
        const ts_lower_wse_stage *s = &rep->stages[i];
        /* the run's figures for the stage's rectangle: region, busy, stall, busiest, link_wavelets */
        bool have = rs && rs->kind == TS_STAT_TABLE && i < rs->nrows && rs->ncols == 5;
        const double *q = have ? rs->rows + i * rs->ncols : NULL;
        double b = have ? q[1] : 0, st = have ? q[2] : 0, mx = have ? q[3] : 0, lk = have ? q[4] : 0;
        double j = ts_results_price_rows(ev, i, 1, energy);
        double row[NC] = {(double)i, s->what && !strcmp(s->what, "fifo") ? -1 : (double)s->node, s->x, s->y, s->w,
                          s->h, (double)s->w * s->h, (double)s->macs, have ? b : -1, have ? st : -1,
                          (double)s->in_elems, (double)s->out_elems,
                          secs > 0 ? 4.0 * (double)(s->in_elems + s->out_elems) / secs / 1e9 : 0, have ? mx : -1,
                          have ? lk : -1, j >= 0 ? j * 1e6 : -1};
        if (ts_stats_row(stats, tb, row)) {
            ts_free(lv);
            return ts_err_set(err, TS_ENOMEM, "cannot add the layer table");
        }
        worst = have && mx > worst ? mx : worst;
        /* bytes by level: its PEs' SRAM words (region_events), the wavelets on its PEs' links (4 B
         * each, as the bandwidth column), and off the wafer, from the plan: what the source stage
         * sends and the sink stage receives (the host's data) */
        lv[i] = 8.0 * (ts_results_sum_rows(ev, i, 1, "sram_read_64b") + ts_results_sum_rows(ev, i, 1, "sram_write_64b"));
        lv[n + i] = have ? 4.0 * lk : NAN;
        bool src = s->what && !strcmp(s->what, "source"), snk = s->what && !strcmp(s->what, "sink");
        lv[2 * n + i] = 4.0 * (double)(src ? s->out_elems : snk ? s->in_elems : 0);
    }
    ts_status lc = ts_results_level_columns(stats, tb, lv, n);
    ts_free(lv);
    if (lc != TS_OK)
        return ts_err_set(err, lc, "cannot add the layer table");
    if (rep->batch > 1 && worst > 0 && secs > 0 && res->cycles) {
        /* in steady state every stage works on its own image; the busiest limits the rate */
        double per_image = worst / (double)rep->batch * secs / (double)res->cycles;
        if (ts_stats_f64(stats, "images_per_s", "1/s",
                         "steady-state images per second of the layer pipeline: one per (busiest stage's busy "
                         "cycles / batch)", 1.0 / per_image))
            return ts_err_set(err, TS_ENOMEM, "cannot add images_per_s");
    }
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct wse_lowering {
    ts_wse_target t;
    ts_lower_wse_report rep;
    ts_region *regions; /* owned: the stages as regions, for the run */
} wse_lowering;

static ts_status wse_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    (void)opts;
    wse_lowering *s = ts_lower_state_new(sizeof *s, state, err);
    return s ? ts_wse_target_from_config(cfg, &s->t, err) : TS_ENOMEM;
}

static ts_status wse_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    wse_lowering *s = state;
    return ts_lower_wse(g, &s->t, out, &s->rep, err);
}

static ts_status wse_prepare(void *state, ts_run_opts *ro, ts_err *err)
{
    wse_lowering *s = state;
    size_t n = 0;
    ts_free(s->regions);
    s->regions = NULL;
    ts_status rc = ts_lower_wse_regions(&s->rep, &s->regions, &n, err);
    ro->regions = s->regions;
    ro->nregions = n;
    return rc;
}

static ts_status wse_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const wse_lowering *s = state;
    return s->rep.nstages && res->stats ? ts_lower_wse_stage_stats(&s->rep, res, energy, err) : TS_OK;
}

static void wse_destroy(void *state)
{
    wse_lowering *s = state;
    ts_lower_wse_report_free(&s->rep);
    ts_free(s->regions);
    ts_free(s);
}

static ts_status wse_read_output(void *state, const ts_graph *g, int tensor, const ts_lower_mem *mem, float *dst,
                                 ts_err *err)
{
    const wse_lowering *s = state;
    return ts_lower_wse_read_output(&s->rep, s->t.width, g, tensor, mem, dst, err);
}

const ts_lowering ts_wse_lowering = {
    .arch = "wse",
    .name = "wafer-mesh layer pipeline",
    .create = wse_create,
    .lower = wse_lower,
    .prepare = wse_prepare,
    .attribute = wse_attribute,
    .destroy = wse_destroy,
    .read_output = wse_read_output,
};
