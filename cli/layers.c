/* cli/layers.c — `tessera run --layers-simulated K`: a decoder of N identical layers (a workload
 * with `llm:`, docs/llm.md) simulated with K of them in full, and its figures scaled to N. The
 * per-layer figure is the difference of two runs, K layers and K - 1, so it holds whatever a layer
 * costs on the chip (exchange, pipeline fill, the LM head's share excluded): scaled = run(K) +
 * (N - K) x (run(K) - run(K - 1)). The report is run(K)'s, its title and JSON say so, and the
 * scaled figures are statistics of their own (scaled_*); nothing is scaled silently. */
#include "cli/layers.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/graph.h"
#include "workloads/workload.h"

/* spec with its layers parameter set to k (a later key=value wins). */
static char *with_layers(const char *spec, uint64_t k)
{
    size_t n = strlen(spec) + 40;
    char *s = ts_malloc(n);
    if (s)
        snprintf(s, n, "%s%clayers=%llu", spec, strchr(spec, ':') ? ',' : ':', (unsigned long long)k);
    return s;
}

ts_status cli_layers_prepare(cli_layers *L, const char *workload, uint64_t k, const ts_config *cfg,
                             const ts_family *fam, const ts_lower_opts *lo, const ts_energy_table *energy,
                             const ts_run_opts *base, ts_err *err)
{
    memset(L, 0, sizeof *L);
    L->k = k;
    if (!ts_wl_is_model(workload))
        return ts_err_set(err, TS_EINPUT, "--layers-simulated needs a decoder workload (one with llm:, such as gpt), "
                          "not the program '%s'", workload);
    ts_graph *g = NULL;
    ts_status st = ts_wl_load_model(workload, NULL, NULL, &g, err);
    if (st != TS_OK)
        return st;
    const ts_graph_llm *m = ts_graph_llm_of(g);
    L->n = (uint64_t)m->layers;
    bool llm = m->phase != TS_LLM_NONE;
    ts_graph_destroy(g);
    if (!llm)
        return ts_err_set(err, TS_EINPUT, "--layers-simulated needs a decoder workload (one with llm:, such as gpt): "
                          "'%s' does not say how many identical layers it has", workload);
    if (k >= L->n) /* every layer simulated: a plain run */
        return (L->spec = ts_strdup(workload)) ? TS_OK : ts_err_set(err, TS_ENOMEM, "out of memory");
    char *prev = with_layers(workload, k - 1);
    L->spec = with_layers(workload, k);
    if (!prev || !L->spec) {
        ts_free(prev);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    /* the run with one layer fewer: quiet, nothing traced or drawn */
    ts_run_opts ro = *base;
    ro.trace = NULL;
    ro.activity = NULL;
    ro.progress = NULL;
    ro.finished = NULL;
    ro.regions = NULL;
    ts_program *p = NULL;
    ts_lowered *lw = NULL;
    ts_results res; /* ts_sim_run fills it, and frees what it made when it fails */
    st = ts_lower_model(prev, cfg, lo, &lw, err);
    if (st == TS_OK) {
        p = ts_lowered_take_program(lw);
        st = ts_lowered_prepare(lw, &ro, err);
    }
    if (st == TS_OK)
        st = ts_sim_run(fam, cfg, p, &ro, energy, &res, err);
    if (st == TS_OK) {
        L->prev_cycles = res.cycles;
        L->prev_energy_j = res.energy_j;
        L->scaled = true;
        ts_results_free(&res);
    }
    ts_program_destroy(p);
    ts_lowered_destroy(lw);
    ts_free(prev);
    return st;
}

ts_status cli_layers_finish(const cli_layers *L, ts_results *res, ts_err *err)
{
    if (!L->scaled)
        return TS_OK;
    double more = (double)(L->n - L->k);
    double cycles = (double)res->cycles + more * ((double)res->cycles - (double)L->prev_cycles);
    double secs = res->clock_hz > 0 ? cycles / res->clock_hz : 0;
    double joules = res->energy_j + more * (res->energy_j - L->prev_energy_j);
    ts_stats *s = res->stats;
    bool bad = ts_stats_u64(s, "layers_simulated", "", "decoder layers simulated in full", L->k) ||
               ts_stats_u64(s, "layers_total", "", "decoder layers of the model", L->n) ||
               ts_stats_f64(s, "scaled_cycles", "cycles",
                            "the run's cycles scaled to every layer: cycles + (total - simulated) x (cycles - those of "
                            "one layer fewer)", cycles) ||
               ts_stats_f64(s, "scaled_time_s", "s", "scaled_cycles at the clock", secs) ||
               ts_stats_f64(s, "scaled_energy_j", "J", "the energy scaled to every layer, as the cycles", joules);
    const ts_stat *tok = ts_stats_find(s, "tokens_per_s");
    if (!bad && tok && secs > 0)
        bad = ts_stats_f64(s, "scaled_tokens_per_s", "1/s", "decode: tokens per second with every layer",
                           tok->f * ts_results_time_s(res) / secs);
    if (!bad && ts_stats_find(s, "time_to_first_token_s"))
        bad = ts_stats_f64(s, "scaled_time_to_first_token_s", "s", "prefill: the time to the first token with every "
                           "layer", secs);
    if (bad)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the scaled figures");
    char head[64], w[sizeof res->workload];
    size_t hn = (size_t)snprintf(head, sizeof head, "%llu of %llu layers simulated, scaled_* for all: ",
                                 (unsigned long long)L->k, (unsigned long long)L->n);
    size_t rest = strnlen(res->workload, sizeof res->workload - 1);
    if (hn + rest >= sizeof w) /* the description is cut, not the note */
        rest = sizeof w - 1 - hn;
    memcpy(w, head, hn);
    memcpy(w + hn, res->workload, rest);
    w[hn + rest] = 0;
    memcpy(res->workload, w, sizeof w);
    return TS_OK;
}

void cli_layers_free(cli_layers *L) { ts_free(L->spec); }
