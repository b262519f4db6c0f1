/* workloads/tsp/lowering.c — the TSP lowering in the registry (workloads/lower/lower.h): its
 * parameters from a chip config, the lowering of a graph, and the per-layer attribution of a run's
 * results from the static schedule.
 */
#include "workloads/tsp/lower_tsp.h"

#include <string.h>

#include "core/alloc.h"

/* ---- parameters from a config ---- */

/* The target, and the lowering's own restrictions on it: dispatch without skew, an abc at least as
 * long as the superlanes, one stream-register position per slice, the west planes at the west
 * edge, 3 queues per plane. */
ts_status ts_lower_tsp_params_from_config(const ts_config *cfg, ts_lower_tsp_params *out, ts_err *err)
{
    memset(out, 0, sizeof *out); /* one_sample false, and the padding zero: params compare by their bytes */
    ts_tsp_target *t = &out->target;
    ts_status rc = ts_tsp_target_from_config(cfg, t, err);
    if (rc != TS_OK)
        return rc;
    if (t->d_skew.mem || t->d_skew.vxm || t->d_skew.mxm || t->d_skew.sxm)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering assumes d_skew 0 for every unit",
                          ts_config_name(cfg));
    if (t->d_func.abc < t->superlanes)
        return ts_err_set(err, TS_EINPUT, "config '%s': " TS_TSP_KEY_ABC " is shorter than the superlanes",
                          ts_config_name(cfg));
    if (t->sr_map)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering takes one stream-register position per slice "
                                          "(an empty " TS_TSP_KEY_SR_MAP ")", ts_config_name(cfg));
    /* the west planes must lie west of every west MEM slice (weights and activations flow west) */
    for (uint32_t j = 0; j < t->mxm_west && j < 2; j++)
        if (t->mem_west && t->pos_mxm_w[j] > t->pos_mem_w[t->mem_west - 1])
            return ts_err_set(err, TS_EINPUT,
                              "config '%s': the TSP lowering needs the west MXM planes at the west edge",
                              ts_config_name(cfg));
    if (t->mxm_queues < 3)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering needs 3 queues per MXM plane",
                          ts_config_name(cfg));
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct tsp_lowering {
    ts_lower_tsp_params p;
    ts_lower_tsp_report rep;
} tsp_lowering;

static ts_status tsp_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    (void)opts;
    tsp_lowering *s = ts_lower_state_new(sizeof *s, state, err);
    return s ? ts_lower_tsp_params_from_config(cfg, &s->p, err) : TS_ENOMEM;
}

static ts_status tsp_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    tsp_lowering *s = state;
    return ts_lower_tsp(g, &s->p, out, &s->rep, err);
}

/* The per-operator table "layers" of a TSP run: cycles, bandwidth and energy from the static
 * schedule, priced with energy. */
static ts_status tsp_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const ts_lower_tsp_report *rep = &((const tsp_lowering *)state)->rep;
    if (!rep->nlayers || !res->stats || strcmp(res->arch, "tsp"))
        return TS_OK;
    static const char *const cols[] = {"node", "first", "last", "cycles", "mem_bytes", "bandwidth", "macs",
                                       "mxm_macs", "vxm_ops", "energy"};
    static const char *const units[] = {"", "cycles", "cycles", "cycles", "B", "GB/s", "", "", "", "uJ"};
    int t = ts_stats_table(res->stats, "layers",
                           "per operator, from the static schedule: first and last instruction (operators overlap), "
                           "MEM bytes moved and their rate over its cycles, useful and executed MACs, VXM "
                           "instructions, and its energy priced with the run's table (MXM MACs, MEM bytes, "
                           "instruction issues)", 10, cols, units);
    if (t < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    const ts_energy_entry *mac = energy ? ts_energy_find(energy, "int8_mac") : NULL;
    const ts_energy_entry *rd = energy ? ts_energy_find(energy, "sram_read_64b") : NULL;
    const ts_energy_entry *is = energy ? ts_energy_find(energy, "insn_issue") : NULL;
    size_t n = rep->nlayers;
    double *lv = ts_calloc(TS_LEVEL_COUNT * n, sizeof *lv);
    if (!lv)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const ts_lower_tsp_layer *y = &rep->layers[i];
        double cyc = y->instructions ? (double)(y->last - y->first + 1) : 0;
        double secs = res->clock_hz > 0 ? cyc / res->clock_hz : 0;
        double j = (mac ? mac->joules * (double)y->mxm_macs : 0) + (rd ? rd->joules * (double)y->mem_bytes / 8.0 : 0) +
                   (is ? is->joules * (double)y->instructions : 0);
        double row[10] = {(double)y->node, (double)y->first, (double)y->last, cyc, (double)y->mem_bytes,
                          secs > 0 ? (double)y->mem_bytes / secs / 1e9 : 0, (double)y->macs, (double)y->mxm_macs,
                          (double)y->vxm_ops, j * 1e6};
        if (!y->instructions)
            row[1] = row[2] = 0;
        /* bytes by level, from the schedule: its MEM bytes; the same bytes on the streams (every
         * byte a layer reads or writes in MEM crosses the streams to or from its units); nothing
         * off the chip (the weights and inputs are in MEM before the run) */
        lv[i] = (double)y->mem_bytes;
        lv[n + i] = (double)y->mem_bytes;
        ts_status rc = ts_stats_row(res->stats, t, row);
        if (rc != TS_OK) {
            ts_free(lv);
            return ts_err_set(err, rc, "out of memory");
        }
    }
    ts_status rc = ts_results_level_columns(res->stats, t, lv, n);
    ts_free(lv);
    return rc == TS_OK ? TS_OK : ts_err_set(err, rc, "out of memory");
}

/* Each layer's cycles, first to last instruction of the static schedule: a queue's slice carries
 * the layers running when it starts (they overlap). */
static ts_status tsp_trace_layers(void *state, const ts_graph *g, ts_trace *t)
{
    const ts_lower_tsp_report *rep = &((const tsp_lowering *)state)->rep;
    ts_status st = TS_OK;
    for (size_t i = 0; i < rep->nlayers && st == TS_OK; i++) {
        const ts_lower_tsp_layer *y = &rep->layers[i];
        if (y->instructions)
            st = ts_lower_trace_layer(t, g, TS_TRACE_BY_CYCLE, y->first, y->last, y->node);
    }
    return st;
}

static void tsp_destroy(void *state)
{
    tsp_lowering *s = state;
    ts_lower_tsp_report_free(&s->rep);
    ts_free(s);
}

static ts_status tsp_read_output(void *state, const ts_graph *g, int tensor, const ts_lower_mem *mem, float *dst,
                                 ts_err *err)
{
    const tsp_lowering *s = state;
    return ts_lower_tsp_read_output(&s->rep, s->p.target.superlanes * s->p.target.lanes, g, tensor, mem, dst, err);
}

const ts_lowering ts_tsp_lowering = {
    .arch = "tsp",
    .name = "TSP static schedule",
    .create = tsp_create,
    .lower = tsp_lower,
    .attribute = tsp_attribute,
    .trace_layers = tsp_trace_layers,
    .destroy = tsp_destroy,
    .read_output = tsp_read_output,
};
