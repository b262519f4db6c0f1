/* fuzz/lower_common.h — what the two lowering fuzzers share: a model (a finalized graph) compiled
 * for a small config of each family through the lowering registry (workloads/lower/lower.h), and
 * each program that comes out simulated for a few cycles.
 *
 * The front end's limits (core/limit.h) are lowered so that every model a fuzzer makes is small:
 * tensors of at most 4,096 elements (16 KiB), 32 operators, 20,000 YAML nodes, 256 KiB of input.
 * A run stops after 200,000 cycles, or 20,000 without progress. So one input costs milliseconds,
 * and what the fuzzer looks for is a crash, a hang or undefined behaviour in the lowerings and
 * the simulators, not their errors: every error is an acceptable answer.
 */
#ifndef TS_FUZZ_LOWER_COMMON_H
#define TS_FUZZ_LOWER_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/limit.h"
#include "core/sim.h"
#include "workloads/graph.h"
#include "workloads/lower/lower.h"

/* One small config per family: the four-tile IPU, the small TSP, the 4 x 4 wafer. tsp_small has
 * fewer streams and MEM slices than the TSP lowering plans with (it refuses the chip: "needs 32
 * streams per direction, 16 MEM slices and two MXM planes west"), so it gets them here, still 2
 * superlanes of 32-byte vectors, with the short instruction queues that reach ifetch early. */
static const char *const ts_fuzz_configs[] = {"ipu_tiny4", "tsp_small", "wse_4x4"};
static const char *const ts_fuzz_tsp_sets[] = {"streams.per_direction=32",
                                               "floorplan=[mxm, mxm, sxm, mem*16, vxm, mem*16, sxm, mxm, mxm]"};
#define TS_FUZZ_NCONFIGS (sizeof ts_fuzz_configs / sizeof ts_fuzz_configs[0])
static ts_config *ts_fuzz_cfg[TS_FUZZ_NCONFIGS];
static ts_energy_table *ts_fuzz_energy[TS_FUZZ_NCONFIGS];

static inline void ts_fuzz_lower_init(void)
{
    static int ready;
    if (ready)
        return;
    ready = 1;
    ts_limit_set(TS_LIMIT_INPUT_BYTES, 256 << 10);
    ts_limit_set(TS_LIMIT_YAML_NODES, 20000);
    ts_limit_set(TS_LIMIT_TENSOR_ELEMS, 4096);
    ts_limit_set(TS_LIMIT_TENSOR_BYTES, 16 << 10);
    ts_limit_set(TS_LIMIT_GRAPH_NODES, 32);
    for (size_t i = 0; i < TS_FUZZ_NCONFIGS; i++) {
        ts_config_opts o = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
        if (!strcmp(ts_fuzz_configs[i], "tsp_small")) {
            o.sets = ts_fuzz_tsp_sets;
            o.nsets = sizeof ts_fuzz_tsp_sets / sizeof ts_fuzz_tsp_sets[0];
        }
        ts_err err;
        ts_err_init(&err);
        if (ts_config_load(&ts_fuzz_cfg[i], ts_fuzz_configs[i], &o, &err) != TS_OK ||
            ts_energy_load(&ts_fuzz_energy[i], ts_config_energy_table(ts_fuzz_cfg[i]), ts_builtin_find, &err) !=
                TS_OK) {
            fprintf(stderr, "fuzz: cannot load %s: %s\n", ts_fuzz_configs[i], err.msg);
            abort();
        }
        ts_err_free(&err);
    }
}

/* Lower g for every config (planner: the IPU's, chosen by the caller), and run what compiles. */
static inline void ts_fuzz_lower_all(const ts_graph *g, const char *planner)
{
    ts_lower_setting set[] = {{"planner", planner}};
    ts_lower_opts opts = {set, planner ? 1 : 0};
    for (size_t i = 0; i < TS_FUZZ_NCONFIGS; i++) {
        const ts_config *cfg = ts_fuzz_cfg[i];
        const ts_lowering *lw = ts_lowering_find(ts_config_arch(cfg));
        const ts_family *fam = ts_family_find(ts_config_arch(cfg));
        if (!lw || !fam)
            continue;
        ts_err err;
        ts_err_init(&err);
        void *state = NULL;
        ts_program *prog = NULL;
        if (lw->create(cfg, &opts, &state, &err) == TS_OK && lw->lower(state, g, &prog, &err) == TS_OK) {
            ts_run_opts ro = {.max_cycles = 200000, .hang_cycles = 20000};
            ts_results res;
            ts_err_free(&err);
            ts_err_init(&err);
            if ((!lw->prepare || lw->prepare(state, &ro, &err) == TS_OK) &&
                ts_sim_run(fam, cfg, prog, &ro, ts_fuzz_energy[i], &res, &err) == TS_OK) {
                ts_err_free(&err);
                ts_err_init(&err);
                if (lw->attribute)
                    lw->attribute(state, &res, ts_fuzz_energy[i], &err);
                ts_results_free(&res);
            }
        }
        if (err.status == TS_EINTERNAL) { /* a broken invariant is a bug, like a crash */
            fprintf(stderr, "fuzz: %s: internal error: %s\n", ts_fuzz_configs[i], err.msg);
            abort();
        }
        ts_program_destroy(prog);
        if (state)
            lw->destroy(state);
        ts_err_free(&err);
    }
}

#endif
