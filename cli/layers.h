/* cli/layers.h — `tessera run --layers-simulated K` (cli/layers.c): K of a decoder's N identical
 * layers simulated in full and the figures scaled to N, said in the report. */
#ifndef TS_CLI_LAYERS_H
#define TS_CLI_LAYERS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/results.h"
#include "core/sim.h"
#include "workloads/lower/lower.h"

typedef struct cli_layers {
    uint64_t k, n;          /* layers simulated, of the model's n */
    char *spec;             /* the workload to run: with layers=k when k < n (owned) */
    bool scaled;            /* k < n: the run of k - 1 layers is done */
    uint64_t prev_cycles;   /* its cycles and energy */
    double prev_energy_j;
} cli_layers;

/* Check that workload is a decoder (llm:) of n layers; when k < n, run it with k - 1 layers (quiet,
 * with base's threads and modes) and set L->spec to it with k. k >= 2. */
ts_status cli_layers_prepare(cli_layers *L, const char *workload, uint64_t k, const ts_config *cfg,
                             const ts_family *fam, const ts_lower_opts *lo, const ts_energy_table *energy,
                             const ts_run_opts *base, ts_err *err);
/* After the run of k layers: the scaled figures (scaled_cycles, scaled_time_s, scaled_energy_j, the
 * decoder's scaled_tokens_per_s or scaled_time_to_first_token_s), layers_simulated and layers_total,
 * and "K of N layers simulated" at the head of the workload's description (the report's title). */
ts_status cli_layers_finish(const cli_layers *L, ts_results *res, ts_err *err);
void cli_layers_free(cli_layers *L);

#endif
