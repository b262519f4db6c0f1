/* workloads/ipu/lower_ipu_values.c — the values the IPU lowering places as initial data: a
 * tensor's data when the graph carries it, otherwise deterministic pseudo-random values in [-1, 1)
 * (ts_fill_f32); f16 tensors rounded to f16. */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"
#include "workloads/lower/fill.h"

/* shared candidate: workloads/lower/fill (an element's value from the tensor's data or ts_fill_f32,
 * f32 and f16; the WSE lowering has its own for f32) */
float lwi_value(const ts_graph_tensor *t, int id, uint64_t i)
{
    if (t->dtype == TS_DT_F16) {
        uint16_t h;
        if (!t->data)
            return ts_f16_to_f32(ts_f32_to_f16(ts_fill_f32(id, i)));
        memcpy(&h, (const char *)t->data + 2 * i, 2);
        return ts_f16_to_f32(h);
    }
    if (t->data) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    return ts_fill_f32(id, i);
}

void *lwi_values(const ts_graph_tensor *t, int id, uint32_t es, uint64_t ne)
{
    float *v = ts_calloc(ne ? ne : 1, 4);
    if (!v)
        return NULL;
    for (uint64_t k = 0; k < ne; k++) {
        float f = lwi_value(t, id, k);
        if (es == 2) {
            uint16_t h = ts_f32_to_f16(f);
            memcpy((char *)v + 2 * k, &h, 2);
        } else
            v[k] = f;
    }
    return v;
}
