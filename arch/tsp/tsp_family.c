/* arch/tsp/tsp_family.c — the TSP family's vtable (arch/registry.c lists it). */
#include "arch/tsp/tsp_model.h"

#include <inttypes.h>
#include <string.h>

/* A batch run once per sample: unit nmem (1 + r) + slice is what the host read back from that slice
 * after run r (its output segments alone). */
static ts_status read_host(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    uint64_t nm = m->lay->nmem, r = unit / nm - 1, slice = unit % nm;
    for (size_t i = 0; i < m->nxout && r < m->runs; i++) {
        const tsp_xfer *x = &m->xout[i];
        if (x->slice == slice && addr >= x->addr && addr - x->addr <= x->len && len <= x->len - (addr - x->addr)) {
            memcpy(dst, x->bytes + r * x->len + (addr - x->addr), len);
            return TS_OK;
        }
    }
    return ts_err_set(err, TS_EINPUT, "run %" PRIu64 " read back no bytes %" PRIu64 "..%" PRIu64 " of MEM slice %" PRIu64,
                      r, addr, addr + len, slice);
}

/* Bytes of MEM slice `unit` (zeros when never touched); past the slices, a batch's outputs (read_host). */
static ts_status tsp_read(ts_model *m, uint64_t unit, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    uint64_t size = m->cfg.mem_slice_bytes;
    if (unit >= m->lay->nmem && m->nxout)
        return read_host(m, unit, addr, dst, len, err);
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

