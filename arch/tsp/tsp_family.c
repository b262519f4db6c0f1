/* arch/tsp/tsp_family.c — the TSP family's vtable (arch/registry.c lists it). */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <string.h>

/* Bytes of MEM slice `unit` (zeros when never touched). */
static ts_status tsp_read(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    uint64_t size = m->cfg.mem_slice_bytes;
    if (unit >= m->lay->nmem || addr > size || len > size - addr)
        return ts_err_set(err, TS_EINPUT, "MEM slice %" PRIu64 " has no bytes %" PRIu64 "..%" PRIu64, unit, addr,
                          addr + len);
    const uint8_t *p = ts_tsp_mem(m, (int)unit);
    if (p)
        memcpy(dst, p + addr, len);
    else
        memset(dst, 0, len);
    return TS_OK;
}

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
    .read = tsp_read,
    .destroy = ts_tsp_destroy,
    .default_config = "tsp_v1",
    .default_workload = "tsp_default",
};

