/* workloads/lower/lower.c — the lowering interface's wrapper: load a model, lower it with its
 * family's lowering, and carry the program and the lowering's state to the run and back. */
#include "workloads/lower/lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/graph_values.h"
#include "workloads/onnx.h"
#include "workloads/workload.h"

struct ts_lowered {
    const ts_lowering *lw; /* borrowed: static */
    void *state;           /* owned by lw */
    ts_program *prog;      /* owned until taken */
    ts_graph *g;           /* owned: the graph lowered */
    ts_npz values;         /* owned: every input's and weight's values before finalize (with values) */
    ts_npz outputs;        /* owned: the graph outputs read back after the run */
};

const char *ts_lower_opts_get(const ts_lower_opts *opts, const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; opts && i < opts->n; i++)
        if (!strcmp(opts->v[i].name, name))
            v = opts->v[i].value;
    return v;
}

void *ts_lower_state_new(size_t size, void **state, ts_err *err)
{
    *state = ts_calloc(1, size);
    if (!*state)
        ts_err_set(err, TS_ENOMEM, "out of memory");
    return *state;
}

ts_status ts_lower_check_setting(const char *name, const char *value, ts_err *err)
{
    const ts_lower_param *first = NULL;
    for (size_t i = 0; ts_lowering_at(i); i++) {
        const ts_lowering *lw = ts_lowering_at(i);
        for (size_t j = 0; j < lw->nparams; j++) {
            const ts_lower_param *p = &lw->params[j];
            if (strcmp(p->name, name))
                continue;
            if (!first)
                first = p;
            ts_err e;
            ts_err_init(&e);
            ts_status rc = p->check(value, &e);
            ts_err_free(&e);
            if (rc == TS_OK)
                return TS_OK;
        }
    }
    if (!first)
        return ts_err_set(err, TS_EINPUT, "no lowering takes the setting '%s'", name);
    return first->check(value, err);
}

/* Before finalize (ONNX): the given values, fill values for the rest, and a copy of them all. */
typedef struct values_hook {
    const ts_lower_values *v;
    ts_npz *keep;
} values_hook;

static ts_status give_values(void *ud, ts_graph *g, ts_err *err)
{
    const values_hook *h = ud;
    ts_status rc = TS_OK;
    if (h->v->given)
        rc = ts_graph_values_set(g, h->v->given, h->v->file, true, err);
    if (rc == TS_OK)
        rc = ts_graph_values_fill(g, err);
    if (rc == TS_OK)
        rc = ts_graph_values_get(g, h->keep, err);
    return rc;
}

static bool is_onnx(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".onnx");
}

/* Load the model at path with the values of v (NULL: none). */
static ts_status load(ts_lowered *l, const char *path, const ts_lower_values *v, ts_err *err)
{
    if (!v || (!v->given && !v->fill))
        return ts_wl_load_model(path, NULL, NULL, &l->g, err);
    values_hook h = {v, &l->values};
    if (is_onnx(path)) {
        ts_onnx_hook hook = {give_values, &h};
        return ts_onnx_load_hooked(path, NULL, &hook, &l->g, err);
    }
    ts_status rc = ts_wl_load_model(path, NULL, NULL, &l->g, err);
    return rc == TS_OK ? give_values(&h, l->g, err) : rc;
}

ts_status ts_lower_model_values(const char *path, const ts_config *cfg, const ts_lower_opts *opts,
                                const ts_lower_values *v, ts_lowered **out, ts_err *err)
{
    *out = NULL;
    const ts_lowering *lw = ts_lowering_find(ts_config_arch(cfg));
    if (!lw)
        return ts_err_set(err, TS_EINPUT, "no lowering for arch '%s' yet", ts_config_arch(cfg));
    ts_lowered *l = ts_calloc(1, sizeof *l);
    if (!l)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    l->lw = lw;
    ts_status rc = lw->create(cfg, opts, &l->state, err);
    if (rc == TS_OK)
        rc = load(l, path, v, err);
    if (rc == TS_OK)
        rc = lw->lower(l->state, l->g, &l->prog, err);
    if (rc != TS_OK) {
        ts_lowered_destroy(l);
        return rc;
    }
    *out = l;
    return TS_OK;
}

ts_status ts_lower_model_given(const char *path, const ts_lower_values *v, ts_npz *out, ts_err *err)
{
    ts_lowered l = {0};
    ts_lower_values fill = {v ? v->given : NULL, v ? v->file : NULL, true};
    ts_status rc = load(&l, path, &fill, err);
    ts_graph_destroy(l.g);
    if (rc == TS_OK)
        *out = l.values;
    else
        ts_npz_free(&l.values);
    return rc;
}

ts_status ts_lower_model(const char *path, const ts_config *cfg, const ts_lower_opts *opts, ts_lowered **out,
                         ts_err *err)
{
    return ts_lower_model_values(path, cfg, opts, NULL, out, err);
}

const ts_graph *ts_lowered_graph(const ts_lowered *l) { return l->g; }
const ts_npz *ts_lowered_values(const ts_lowered *l) { return &l->values; }
const ts_npz *ts_lowered_outputs(const ts_lowered *l) { return &l->outputs; }
void ts_lowered_clear_outputs(ts_lowered *l) { ts_npz_free(&l->outputs); }
bool ts_lowered_reads_outputs(const ts_lowered *l) { return l->lw->read_output != NULL; }

ts_status ts_lower_mem_read(const ts_lower_mem *mem, uint64_t unit, uint64_t addr, void *dst, size_t len,
                            ts_err *err)
{
    if (!mem->fam->read)
        return ts_err_set(err, TS_EINPUT, "family '%s' cannot read its memory back", mem->fam->name);
    return mem->fam->read(mem->m, unit, addr, dst, len, err);
}

ts_status ts_lowered_read_outputs(ts_lowered *l, const ts_family *fam, ts_model *m, ts_err *err)
{
    if (!l->lw->read_output)
        return ts_err_set(err, TS_EINPUT, "the %s lowering cannot read outputs back yet", l->lw->name);
    ts_npz_free(&l->outputs);
    ts_lower_mem mem = {fam, m};
    for (size_t id = 0; id < ts_graph_tensor_count(l->g); id++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(l->g, (int)id);
        if (!t->is_output)
            continue;
        ts_npy_array *v = ts_realloc(l->outputs.v, (l->outputs.n + 1) * sizeof *v);
        if (!v)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        l->outputs.v = v;
        ts_npy_array *a = &v[l->outputs.n];
        memset(a, 0, sizeof *a);
        a->dtype = TS_NPY_F32;
        a->rank = t->rank;
        memcpy(a->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
        a->nbytes = (size_t)ts_graph_tensor_elems(t) * sizeof(float);
        a->name = ts_strdup(t->name);
        a->data = ts_calloc(1, a->nbytes ? a->nbytes : 1);
        if (!a->name || !a->data) {
            ts_npy_array_free(a);
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        }
        l->outputs.n++;
        ts_status rc = l->lw->read_output(l->state, l->g, (int)id, &mem, a->data, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

ts_program *ts_lowered_take_program(ts_lowered *l)
{
    ts_program *p = l->prog;
    l->prog = NULL;
    return p;
}

void *ts_lowered_state(const ts_lowered *l) { return l->state; }

ts_status ts_lowered_prepare(ts_lowered *l, ts_run_opts *ro, ts_err *err)
{
    return l && l->lw->prepare ? l->lw->prepare(l->state, ro, err) : TS_OK;
}

/* Give each row of the run's "layers" table its operator's type and ONNX node name, from the
 * graph lowered and the row's "node" column (the first on the IPU and TSP, the second on the WSE) (a row of no node, -1, gets empty cells): the same
 * two text columns on every family. */
static ts_status label_layers(const ts_graph *g, ts_stats *stats, ts_err *err)
{
    int tab = ts_stats_table_handle(stats, "layers");
    const ts_stat *t = ts_stats_find(stats, "layers");
    size_t col = 0;
    while (t && t->kind == TS_STAT_TABLE && col < t->ncols && strcmp(t->cols[col], "node"))
        col++;
    if (tab < 0 || !t || t->kind != TS_STAT_TABLE || t->nlabels || col == t->ncols)
        return TS_OK;
    const char **cells = ts_calloc(t->nrows ? 2 * t->nrows : 1, sizeof *cells);
    if (!cells)
        return ts_err_set(err, TS_ENOMEM, "out of memory naming the layers");
    size_t nn = ts_graph_node_count(g);
    for (size_t r = 0; r < t->nrows; r++) {
        double node = t->rows[r * t->ncols + col];
        if (node >= 0 && node < (double)nn) {
            const ts_graph_node *n = ts_graph_get_node(g, (int)node);
            cells[2 * r] = ts_graph_op_name(n->op);
            cells[2 * r + 1] = n->name;
        }
    }
    static const char *const cols[] = {"op_type", "name"};
    ts_status st = ts_stats_table_labels(stats, tab, 2, cols, cells);
    ts_free(cells);
    return st == TS_OK ? TS_OK : ts_err_set(err, st, "out of memory naming the layers");
}

/* The index of the first of the named columns that table t has, or t->ncols. */
static size_t column_of(const ts_stat *t, const char *const *names, size_t n)
{
    for (size_t k = 0; k < n; k++)
        for (size_t c = 0; c < t->ncols; c++)
            if (!strcmp(t->cols[c], names[k]))
                return c;
    return t->ncols;
}

/* The columns every family's layers table ends with, from its own cycles (the wafer's: the
 * busiest PE's) and useful MACs and the run's: share (of the run's cycles), mac_bound_cycles (its
 * MACs at the chip's peak) and mac_efficiency (the one over its cycles); null where a figure is
 * missing. */
static ts_status common_columns(ts_results *res, ts_err *err)
{
    int tab = ts_stats_table_handle(res->stats, "layers");
    const ts_stat *t = ts_stats_find(res->stats, "layers");
    if (tab < 0 || !t || t->kind != TS_STAT_TABLE)
        return TS_OK;
    static const char *const cyc_names[] = {"cycles", "busiest"}, *const mac_names[] = {"macs"};
    size_t cc = column_of(t, cyc_names, 2), cm = column_of(t, mac_names, 1), nr = t->nrows, nc = t->ncols;
    double peak = ts_results_peak_macs(res);
    double *v = ts_calloc(3 * (nr ? nr : 1), sizeof *v);
    if (!v)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the layers table");
    for (size_t r = 0; r < nr; r++) {
        const double *row = t->rows + r * nc;
        double cyc = cc < nc && row[cc] > 0 ? row[cc] : NAN, macs = cm < nc ? row[cm] : NAN;
        v[r] = res->cycles ? cyc / (double)res->cycles : NAN;
        v[nr + r] = peak > 0 ? macs / peak : NAN;
        v[2 * nr + r] = v[nr + r] / cyc;
    }
    ts_status st = ts_stats_table_add_column(res->stats, tab, "share", "", v);
    if (st == TS_OK)
        st = ts_stats_table_add_column(res->stats, tab, "mac_bound_cycles", "cycles", v + nr);
    if (st == TS_OK)
        st = ts_stats_table_add_column(res->stats, tab, "mac_efficiency", "", v + 2 * nr);
    ts_free(v);
    return st == TS_OK ? TS_OK : ts_err_set(err, st, "out of memory for the layers table");
}

/* Column name of table t, or t->ncols. */
static size_t column_named(const ts_stat *t, const char *name)
{
    return column_of(t, &name, 1);
}

/* Each row of the run's "supersteps" table (the IPU's) gets the layer it belongs to: a "node"
 * column (-1 for a superstep of no layer, such as a host transfer) and a "layer" label ("Conv
 * conv1"), from the layers table's node and its first and last cycles (each layer's supersteps
 * are one run of them, so a superstep belongs to the layer whose span holds its start). */
static ts_status superstep_layers(const ts_graph *g, ts_stats *stats, ts_err *err)
{
    int tab = ts_stats_table_handle(stats, "supersteps");
    const ts_stat *ss = ts_stats_find(stats, "supersteps"), *ly = ts_stats_find(stats, "layers");
    if (tab < 0 || !ss || !ly || ss->kind != TS_STAT_TABLE || ly->kind != TS_STAT_TABLE || ss->nlabels)
        return TS_OK;
    size_t cs = column_named(ss, "start"), cn = column_named(ly, "node"), cf = column_named(ly, "first"),
           cl = column_named(ly, "last");
    if (cs == ss->ncols || cn == ly->ncols || cf == ly->ncols || cl == ly->ncols)
        return TS_OK;
    size_t nr = ss->nrows, nl = ly->nrows, nn = ts_graph_node_count(g);
    double *node = ts_malloc((nr ? nr : 1) * sizeof *node);
    const char **cells = ts_calloc(nr ? nr : 1, sizeof *cells);
    char **names = ts_calloc(nl ? nl : 1, sizeof *names);
    ts_status st = node && cells && names ? TS_OK : TS_ENOMEM;
    for (size_t i = 0; st == TS_OK && i < nl; i++) {
        double v = ly->rows[i * ly->ncols + cn];
        if (v < 0 || v >= (double)nn)
            continue;
        const ts_graph_node *n = ts_graph_get_node(g, (int)v);
        size_t len = strlen(ts_graph_op_name(n->op)) + strlen(n->name) + 2;
        if (!(names[i] = ts_malloc(len)))
            st = TS_ENOMEM;
        else
            snprintf(names[i], len, "%s %s", ts_graph_op_name(n->op), n->name);
    }
    for (size_t r = 0, i = 0; st == TS_OK && r < nr; r++) { /* both in time order: one merge */
        double start = ss->rows[r * ss->ncols + cs];
        while (i < nl && ly->rows[i * ly->ncols + cl] <= start)
            i++;
        bool in = i < nl && ly->rows[i * ly->ncols + cf] <= start;
        node[r] = in ? ly->rows[i * ly->ncols + cn] : -1;
        cells[r] = in ? names[i] : NULL;
    }
    if (st == TS_OK)
        st = ts_stats_table_add_column(stats, tab, "node", "", node);
    static const char *const col[] = {"layer"};
    if (st == TS_OK)
        st = ts_stats_table_labels(stats, tab, 1, col, cells);
    for (size_t i = 0; names && i < nl; i++)
        ts_free(names[i]);
    ts_free(names);
    ts_free(cells);
    ts_free(node);
    return st == TS_OK ? TS_OK : ts_err_set(err, st, "out of memory naming the supersteps' layers");
}

/* A decoder language model's figures (ts_graph_llm): decode's tokens per second (one token per
 * sequence of the batch per run) and time per token, prefill's time to the first token and tokens
 * per second; both the run's time over its layers, and its energy and on-chip bytes per token. */
static ts_status llm_figures(const ts_graph *g, ts_results *res, ts_err *err)
{
    const ts_graph_llm *m = ts_graph_llm_of(g);
    double secs = ts_results_time_s(res);
    if (m->phase == TS_LLM_NONE || !(secs > 0))
        return TS_OK;
    bool dec = m->phase == TS_LLM_DECODE, bad;
    double toks = (double)m->batch * (dec ? 1.0 : (double)m->seq);
    if (dec)
        bad = ts_stats_f64(res->stats, "tokens_per_s", "1/s",
                           "decode: tokens per second, one per sequence of the batch per step", toks / secs) ||
              ts_stats_f64(res->stats, "time_per_token_s", "s", "decode: the time of one step", secs);
    else
        bad = ts_stats_f64(res->stats, "time_to_first_token_s", "s",
                           "prefill: the time to take the prompt and give the first token", secs) ||
              ts_stats_f64(res->stats, "prefill_tokens_per_s", "1/s", "prefill: prompt tokens per second", toks / secs);
    if (!bad)
        bad = ts_stats_f64(res->stats, "time_per_layer_s", "s",
                           "the run's time over its decoder layers (the LM head's share included)",
                           secs / (double)m->layers);
    /* per token: the run's energy (static included, when priced) and the bytes it moved on chip */
    if (!bad && res->energy_j > 0)
        bad = ts_stats_f64(res->stats, "energy_per_token_j", "J",
                           dec ? "decode: the step's energy per token" : "prefill: the energy per prompt token",
                           res->energy_j / toks);
    if (!bad)
        bad = ts_stats_f64(res->stats, "sram_bytes_per_token", "B", "on-chip memory bytes read and written per token",
                           (double)res->bytes[TS_LEVEL_SRAM] / toks) ||
              ts_stats_f64(res->stats, "network_bytes_per_token", "B",
                           "on-chip network bytes per token (exchange, streams or fabric)",
                           (double)res->bytes[TS_LEVEL_NET] / toks);
    return bad ? ts_err_set(err, TS_ENOMEM, "out of memory for the decoder figures") : TS_OK;
}

ts_status ts_lowered_attribute(ts_lowered *l, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    if (!l || !l->lw->attribute)
        return TS_OK;
    ts_status st = l->lw->attribute(l->state, res, energy, err);
    if (st == TS_OK && l->g && res->stats)
        st = label_layers(l->g, res->stats, err);
    if (st == TS_OK && l->g && res->stats)
        st = superstep_layers(l->g, res->stats, err);
    if (st == TS_OK && res->stats)
        st = common_columns(res, err);
    if (st == TS_OK && l->g) { /* the useful MACs: the graph's, whatever the schedule executed */
        uint64_t macs = 0;
        for (size_t i = 0; i < ts_graph_node_count(l->g); i++)
            macs += ts_graph_node_macs(l->g, (int)i);
        res->macs = macs;
    }
    if (st == TS_OK && l->g && res->stats)
        st = llm_figures(l->g, res, err);
    return st;
}

ts_status ts_lowered_trace_layers(const ts_lowered *l, ts_trace *t, ts_err *err)
{
    if (!l || !t || !l->g || !l->lw->trace_layers)
        return TS_OK;
    ts_status st = l->lw->trace_layers(l->state, l->g, t);
    return st == TS_OK ? TS_OK : ts_err_set(err, st, "out of memory naming the trace's layers");
}

ts_status ts_lower_trace_layer(ts_trace *t, const ts_graph *g, ts_trace_key key, uint64_t lo, uint64_t hi, int node)
{
    if (node < 0 || (size_t)node >= ts_graph_node_count(g))
        return TS_OK;
    const ts_graph_node *n = ts_graph_get_node(g, node);
    char label[300];
    snprintf(label, sizeof label, "%s %s", ts_graph_op_name(n->op), n->name);
    return ts_trace_layer(t, key, lo, hi, label);
}

void ts_lowered_destroy(ts_lowered *l)
{
    if (!l)
        return;
    if (l->state)
        l->lw->destroy(l->state);
    ts_program_destroy(l->prog);
    ts_graph_destroy(l->g);
    ts_npz_free(&l->values);
    ts_npz_free(&l->outputs);
    ts_free(l);
}
