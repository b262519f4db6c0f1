/* arch/wse/wse_family.c — the wafer-mesh family's vtable. */
#include "arch/wse/wse_int.h"

#include <inttypes.h>

static ts_status wse_create(ts_model **out, const ts_config *cfg, const ts_run_opts *opts, ts_err *err)
{
    return ts_wse_create(out, ts_config_data(cfg), opts, err);
}

/* PE (unit mod width, unit / width)'s SRAM. */
static ts_status wse_read(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    uint64_t x = unit % m->w, y = unit / m->w;
    if (y >= m->h || ts_wse_read_sram(m, (uint32_t)x, (uint32_t)y, addr, dst, len))
        return ts_err_set(err, TS_EINPUT, "PE %" PRIu64 " has no SRAM bytes %" PRIu64 "..%" PRIu64, unit, addr,
                          addr + len);
    return TS_OK;
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
    .read = wse_read,
    .destroy = ts_wse_destroy,
    .default_config = "wse_32x32",
    .default_workload = "wse_default",
};
