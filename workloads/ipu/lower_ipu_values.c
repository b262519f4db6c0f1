/* workloads/ipu/lower_ipu_values.c — a graph output read back from tile memory after a run
 * (workloads/lower/lower.h read_output): element by element where ts_lower_ipu_locate places it,
 * an f32 word, or an f16 half widened to f32 where the plan keeps halves. */
#include "core/half.h"
#include "workloads/ipu/lower_ipu.h"

ts_status ts_lower_ipu_read_output(const ts_lower_report *rep, const ts_graph *g, int tensor, const ts_lower_mem *mem,
                                   float *dst, ts_err *err)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
    uint32_t es = 0;
    for (size_t i = 0; i < rep->nplaces; i++)
        if (rep->places[i].tensor == tensor)
            es = rep->places[i].es ? rep->places[i].es : (uint32_t)ts_dtype_size(t->dtype);
    if (!es)
        return ts_err_set(err, TS_EINPUT, "output '%s' was not placed in tile memory", t->name);
    uint64_t n = (uint64_t)ts_graph_tensor_elems(t);
    for (uint64_t k = 0; k < n; k++) {
        uint32_t tile;
        uint64_t addr;
        if (ts_lower_ipu_locate(rep, g, tensor, k, &tile, &addr))
            return ts_err_set(err, TS_EINTERNAL, "output '%s' element %llu has no place", t->name, (unsigned long long)k);
        ts_status rc;
        if (es == 2) {
            uint16_t h;
            rc = ts_lower_mem_read(mem, tile, addr, &h, 2, err);
            dst[k] = ts_f16_to_f32(h);
        } else {
            rc = ts_lower_mem_read(mem, tile, addr, &dst[k], 4, err);
        }
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}
