/* workloads/tsp/values.c — a graph output read back from MEM after a run (workloads/lower/lower.h
 * read_output). The TSP computes in int8 (lower_tsp.h): an int8 output is written as its integer
 * value q in f32 (scale 1: the lowering's numbers are its own int8 domain, docs/values.md); the
 * f16 output of Softmax is widened. Element e of a rank-4 tensor [1, C, H, W] is channel e / (H W)
 * of pixel e mod (H W); of any other, pixel e / channels, channel e mod channels (a matrix's rows
 * are pixels). */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/tsp/lower_tsp.h"

static ts_status byte_at(const ts_lower_tsp_report *rep, int tensor, uint32_t p, uint32_t c, uint32_t vl,
                         const ts_lower_mem *mem, uint64_t unit0, uint8_t *out, ts_err *err)
{
    int slice;
    uint64_t addr;
    if (ts_lower_tsp_locate(rep, tensor, p, c, vl, &slice, &addr))
        return ts_err_set(err, TS_EINPUT, "tensor %d has no place in MEM", tensor);
    return ts_lower_mem_read(mem, unit0 + (uint64_t)slice, addr, out, 1, err);
}

/* One run's output: MEM slices from unit unit0 (0: the MEM after the run; a batch's runs, read_output). */
static ts_status read_one(const ts_lower_tsp_report *rep, uint32_t vl, const ts_graph *g, int tensor,
                          const ts_lower_mem *mem, uint64_t unit0, float *dst, ts_err *err)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
    const ts_lower_tsp_place *pl = NULL;
    for (size_t i = 0; i < rep->nplaces; i++)
        if (rep->places[i].tensor == tensor)
            pl = &rep->places[i];
    if (!pl || !pl->channels || !pl->pixels)
        return ts_err_set(err, TS_EINPUT, "output '%s' was not placed in MEM", t->name);
    bool f16 = t->producer >= 0 && ts_graph_get_node(g, t->producer)->op == TS_OP_SOFTMAX;
    uint64_t n = (uint64_t)ts_graph_tensor_elems(t);
    uint32_t cols = f16 ? (uint32_t)(t->rank ? t->dims[t->rank - 1] : 1) : pl->channels; /* f16: 2 bytes a lane */
    if (!f16 && n != (uint64_t)pl->pixels * pl->channels)
        return ts_err_set(err, TS_EINTERNAL, "output '%s' has %llu elements, its place %u x %u", t->name,
                          (unsigned long long)n, pl->pixels, pl->channels);
    for (uint64_t e = 0; e < n; e++) {
        uint32_t p, c;
        if (t->rank == 4 && !f16) {
            c = (uint32_t)(e / pl->pixels);
            p = (uint32_t)(e % pl->pixels);
        } else {
            p = (uint32_t)(e / cols);
            c = (uint32_t)(e % cols);
        }
        uint8_t lo, hi = 0;
        ts_status rc = byte_at(rep, tensor, p, c, vl, mem, unit0, &lo, err);
        if (rc == TS_OK && f16)
            rc = byte_at(rep, tensor, p, vl + c, vl, mem, unit0, &hi, err);
        if (rc != TS_OK)
            return rc;
        dst[e] = f16 ? ts_f16_to_f32((uint16_t)(lo | hi << 8)) : (float)(int8_t)lo;
    }
    return TS_OK;
}

/* A batch run once per sample (rep->runs > 1): each sample's output from what the host read back
 * after its run (the family's units past the MEM slices: nmem (1 + run) + slice), put at its place on
 * the tensor's batch axis (in blocks of rep->batch_block). */
ts_status ts_lower_tsp_read_output(const ts_lower_tsp_report *rep, uint32_t vl, const ts_graph *g, int tensor,
                                   const ts_lower_mem *mem, float *dst, ts_err *err)
{
    if (rep->runs <= 1 || !rep->sample)
        return read_one(rep, vl, g, tensor, mem, 0, dst, err);
    const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
    int a = rep->batch_axis[tensor];
    uint64_t n1 = (uint64_t)ts_graph_tensor_elems(ts_graph_get_tensor(rep->sample, tensor)), outer = 1;
    if (a < 0)
        return ts_err_set(err, TS_EINTERNAL, "output '%s' does not carry the samples", t->name);
    outer = (uint64_t)(t->dims[a] / ((int64_t)rep->runs * rep->batch_block[tensor])); /* (o, s, r): o N blk + s blk + r */
    for (int k = 0; k < a; k++)
        outer *= (uint64_t)t->dims[k];
    uint64_t blk = n1 / outer;
    float *one = ts_malloc((size_t)n1 * sizeof *one + 1);
    if (!one)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status rc = TS_OK;
    for (uint32_t s = 0; s < rep->runs && rc == TS_OK; s++) {
        rc = read_one(rep, vl, rep->sample, tensor, mem, (uint64_t)rep->nmem * (1 + s), one, err);
        for (uint64_t o = 0; o < outer && rc == TS_OK; o++)
            memcpy(dst + (o * rep->runs + s) * blk, one + o * blk, (size_t)blk * sizeof *one);
    }
    ts_free(one);
    return rc;
}
