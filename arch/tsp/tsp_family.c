/* arch/tsp/tsp_family.c — the TSP family's vtable (arch/registry.c lists it). */
#include "arch/tsp/tsp_model.h"

const ts_family ts_tsp_family = {
    .name = "tsp",
    .schema = &ts_tsp_schema,
    .isa = &ts_tsp_isa,
    .info = ts_tsp_info,
    .create = ts_tsp_create,
    .load = ts_tsp_load,
    .step = ts_tsp_step,
    .collect = ts_tsp_collect,
    .blocked = ts_tsp_blocked,
    .destroy = ts_tsp_destroy,
    .default_config = "tsp_v1",
    .default_workload = "tsp_default",
};

