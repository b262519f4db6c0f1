/* arch/wse/wse_family.c — the wafer-mesh family's vtable. */
#include "arch/wse/wse_int.h"

static ts_status wse_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    return ts_wse_create(out, ts_config_data(cfg), opts, err);
}

const ts_family ts_wse_family = {
    .name = "wse",
    .schema = &ts_wse_schema,
    .isa = &ts_wse_isa,
    .info = ts_wse_info,
    .create = wse_create,
    .load = ts_wse_load,
    .step = ts_wse_step,
    .collect = ts_wse_collect,
    .blocked = ts_wse_blocked,
    .destroy = ts_wse_destroy,
    .default_config = "wse_32x32",
    .default_workload = "wse_default",
};
