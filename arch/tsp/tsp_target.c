/* arch/tsp/tsp_target.c — the typed machine facts a compiler needs, derived once from the typed
 * config and the family's floorplan parse (see tsp_target.h). */
#include "arch/tsp/tsp_target.h"

#include <string.h>

#include "arch/tsp/tsp_int.h"
#include "core/alloc.h"

_Static_assert(TS_TSP_TARGET_MAX_SLICES == TSP_MAX_SLICES, "the target describes every slice a floorplan holds");
_Static_assert(TS_TSP_TARGET_MAX_STREAMS == TSP_MAX_STREAMS, "stream registers per direction");
_Static_assert(TS_TSP_TARGET_MAX_ALUS == TSP_MAX_ALUS, "VXM ALUs");

/* A config value narrowed to 32 bits; *ok becomes false if it does not fit. */
static uint32_t u32(uint64_t v, bool *ok)
{
    if (v > UINT32_MAX)
        *ok = false;
    return (uint32_t)v;
}

/* Geometry, memory, queues, fetch and latencies: the typed config's values. */
static bool machine(const ts_tsp_cfg *c, ts_tsp_target *t)
{
    bool ok = true;
    t->superlanes = u32(c->superlanes, &ok);
    t->lanes = u32(c->lanes, &ok);
    t->streams = u32(c->streams, &ok);
    t->mxm_dim = u32(c->mxm_dim, &ok);
    t->mxm_queues = u32(c->mxm_queues, &ok);
    t->vxm_alus = u32(c->vxm_alus, &ok);
    t->sxm_queues = u32(c->sxm_queues, &ok);
    t->fp16_interval = u32(c->mxm_fp16_interval, &ok);
    t->words = c->mem_slice_bytes / (c->superlanes * c->lanes);
    t->banks = u32(c->mem_banks, &ok);
    t->queue_capacity = c->icu_capacity;
    t->ifetch_bytes = u32(c->icu_ifetch_bytes, &ok);
    t->fetch_bpc = u32(c->icu_fetch_bpc, &ok);
    t->insn_bytes = u32(c->icu_insn_bytes, &ok);
    t->clock_hz = c->clock_hz;
    t->d_skew = (ts_tsp_dskew){.mem = u32(c->d_skew[TSP_U_MEM], &ok), .vxm = u32(c->d_skew[TSP_U_VXM], &ok),
                               .mxm = u32(c->d_skew[TSP_U_MXM], &ok), .sxm = u32(c->d_skew[TSP_U_SXM], &ok)};
    const uint64_t *f = c->d_func;
    t->d_func = (ts_tsp_dfunc){
        .read = u32(f[TSP_OP_READ], &ok), .write = u32(f[TSP_OP_WRITE], &ok), .iw = u32(f[TSP_OP_IW], &ok),
        .abc = u32(f[TSP_OP_ABC], &ok), .acc = u32(f[TSP_OP_ACC], &ok), .add = u32(f[TSP_OP_ADD], &ok),
        .mul = u32(f[TSP_OP_MUL], &ok), .relu = u32(f[TSP_OP_RELU], &ok), .cvt = u32(f[TSP_OP_CVT], &ok),
        .mask = u32(f[TSP_OP_MASK], &ok), .exp = u32(f[TSP_OP_EXP], &ok), .rsqrt = u32(f[TSP_OP_RSQRT], &ok)};
    return ok;
}

/* Positions, hemisphere counts and queue numbering: the family's own floorplan parse. */
static void floorplan(const ts_tsp_cfg *c, const tsp_layout *l, ts_tsp_target *t)
{
    t->npos = l->npos;
    t->pos_vxm = l->pos[l->vxm];
    t->sr_map = c->sr_map.n > 0;
    t->mem_west = l->mem_per_hemi[0];
    t->mem_east = l->mem_per_hemi[1];
    for (uint32_t i = 0; i < l->nmem; i++) {
        uint16_t p = l->pos[l->mem_slice[i]];
        if (i < t->mem_west)
            t->pos_mem_w[i] = p;
        else
            t->pos_mem_e[i - t->mem_west] = p;
    }
    /* planes and SXMs are numbered west first, so a hemisphere's count is where the east ones start */
    for (uint32_t i = 0; i < l->nmxm; i++)
        if (l->hemi[l->mxm_slice[i]] == 0)
            t->pos_mxm_w[t->mxm_west++] = l->pos[l->mxm_slice[i]];
        else
            t->pos_mxm_e[t->mxm_east++] = l->pos[l->mxm_slice[i]];
    for (uint32_t i = 0; i < l->nsxm; i++)
        if (l->hemi[l->sxm_slice[i]] == 0)
            t->sxm_west++;
        else
            t->sxm_east++;
    t->q_vxm = l->q_vxm;
    t->q_mxm = l->q_mxm;
    t->q_sxm = l->q_sxm;
    t->nqueues = l->nqueues;
}

ts_status ts_tsp_target_from_config(const ts_config *cfg, ts_tsp_target *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(ts_config_arch(cfg), "tsp"))
        return ts_err_set(err, TS_EINPUT, "config '%s' is for arch '%s', not 'tsp'", ts_config_name(cfg),
                          ts_config_arch(cfg));
    const ts_tsp_cfg *c = ts_config_data(cfg);
    if (!machine(c, out))
        return ts_err_set(err, TS_EINPUT, "config '%s' has a value the TSP target cannot hold in 32 bits",
                          ts_config_name(cfg));
    tsp_layout *l = ts_malloc(sizeof *l); /* large: keep it off the stack */
    if (!l)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status rc = ts_tsp_layout(c, l, err);
    if (rc == TS_OK)
        floorplan(c, l, out);
    ts_free(l);
    out->reg = (ts_tsp_regs){.east = TSP_REG_EAST, .west = TSP_REG_WEST, .alu = TSP_REG_ALU, .nul = TSP_REG_NUL,
                             .i8 = TSP_REG_TYPE + TSP_I8, .i16 = TSP_REG_TYPE + TSP_I16, .i32 = TSP_REG_TYPE + TSP_I32,
                             .f16 = TSP_REG_TYPE + TSP_F16, .f32 = TSP_REG_TYPE + TSP_F32};
    return rc;
}
