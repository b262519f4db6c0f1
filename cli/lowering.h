/* cli/lowering.h — workloads that are models: compiled in memory through the lowering of the
 * config's family (workloads/lower_<family>.h) before they run or are written out. */
#ifndef TS_CLI_LOWERING_H
#define TS_CLI_LOWERING_H

#include "cli/common.h"
#include "core/results.h"
#include "core/sim.h"
#include "workloads/lower_ipu.h"

/* Like cli_load_program, but a model (ts_wl_is_model: an ONNX file, a workload YAML file or a
 * built-in workload spec such as "matmul:m=256,k=256,n=256") is loaded and lowered for cfg's arch.
 * Without cfg, or for an arch without a lowering ("no lowering for arch 'wse' yet"), that is
 * TS_EINPUT. */
ts_status cli_load_workload(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                            ts_err *err);

/* As cli_load_workload; rep (may be NULL) gets the plan of a model lowered for the IPU (it stays
 * zeroed otherwise). Free it with ts_lower_report_free. */
ts_status cli_load_workload_rep(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                                ts_lower_report *rep, ts_err *err);
/* --planner NAME: the planner ("lcs" or "t10") the IPU lowering uses for the models loaded after
 * it (default lcs). 0, or the usage error's exit code (after printing it) for another name. */
int cli_set_planner(const char *name);

/* After a run: when cli_load_workload lowered a model for the TSP or the WSE, add its per-operator
 * (TSP: from the static schedule, energy priced with `energy`) or per-stage (WSE:
 * ts_lower_wse_stage_stats) table "layers" to res and forget the lowering; otherwise nothing.
 * (The IPU's plan comes back through cli_load_workload_rep.) */
ts_status cli_lowering_stats(ts_results *res, const ts_energy_table *energy, ts_err *err);
/* Before the run of a model lowered by cli_load_workload: the regions whose energy events the run
 * is to sum for cli_lowering_stats (a WSE lowering's stages; none otherwise). They stay valid until
 * cli_lowering_stats. */
ts_status cli_lowering_regions(ts_run_opts *ro, ts_err *err);

#endif
