/* workloads/wse/lower_wse_values.c — the graph output read back from PE memory after a run
 * (workloads/lower/lower.h read_output): element by element where ts_lower_wse_locate places it,
 * an f32 word (the wafer lowering computes in f32). */
#include "workloads/wse/lower_wse.h"

ts_status ts_lower_wse_read_output(const ts_lower_wse_report *rep, uint32_t mesh_width, const ts_graph *g, int tensor,
                                   const ts_lower_mem *mem, float *dst, ts_err *err)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
    uint64_t n = (uint64_t)ts_graph_tensor_elems(t);
    for (uint64_t k = 0; k < n; k++) {
        uint32_t x, y;
        uint64_t addr;
        if (ts_lower_wse_locate(rep, tensor, k, &x, &y, &addr))
            return ts_err_set(err, TS_EINPUT, "output '%s' is not the tensor the wafer lowering keeps", t->name);
        ts_status rc = ts_lower_mem_read(mem, (uint64_t)y * mesh_width + x, addr, &dst[k], 4, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}
