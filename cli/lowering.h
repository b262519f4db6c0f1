/* cli/lowering.h — workloads that are models: compiled in memory through the registry of lowerings
 * (workloads/lower/lower.h) before they run or are written out. The caller owns what comes back;
 * nothing is kept between calls. */
#ifndef TS_CLI_LOWERING_H
#define TS_CLI_LOWERING_H

#include "cli/common.h"
#include "core/sim.h"
#include "workloads/lower/lower.h"

/* Like cli_load_program, but a model (ts_wl_is_model: an ONNX file, a workload YAML file or a
 * built-in workload spec such as "matmul:m=256,k=256,n=256") is loaded and lowered for cfg's arch
 * with opts (may be NULL). Without cfg, or for an arch without a lowering ("no lowering for arch
 * 'x' yet"), that is TS_EINPUT. When lowered is not NULL it gets the lowering of a model (NULL for
 * a program), for ts_lowered_prepare and ts_lowered_attribute around the run; destroy it with
 * ts_lowered_destroy. */
ts_status cli_load_workload(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                            const ts_lower_opts *opts, ts_lowered **lowered, ts_err *err);
/* The same with values for a model (docs/values.md; vals may be NULL). Values for a workload that
 * is a program are TS_EINPUT. */
ts_status cli_load_workload_values(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                                   const ts_lower_opts *opts, const ts_lower_values *vals, ts_lowered **lowered,
                                   ts_err *err);

/* After a run of a lowered model (ts_run_opts.finished, ud a cli_outputs): read its graph outputs
 * back when the lowering can (it must when required: --outputs). */
typedef struct cli_outputs {
    ts_lowered *lowered; /* borrowed */
    bool required;
} cli_outputs;
ts_status cli_read_outputs(void *ud, const struct ts_family *fam, ts_model *m, ts_err *err);
/* Put the outputs read back into res (name, shape, checksum, largest magnitude) and write them to
 * path (NULL: not written) as a .npz archive. */
ts_status cli_report_outputs(const ts_lowered *l, ts_results *res, const char *path, ts_err *err);

/* --planner NAME: 0 when a lowering takes NAME as its planner, else the usage error's exit code
 * (after printing it). */
int cli_check_planner(const char *name);
/* The same for any lowering setting (--max-tiles N is max_tiles): 0, or the usage error's exit code
 * (printed). */
int cli_check_setting(const char *setting, const char *value);
/* The settings of --planner and --max-tiles (each NULL when not given), in settings[2]. */
ts_lower_opts cli_lower_opts(ts_lower_setting settings[2], const char *planner, const char *max_tiles);

#endif
