/* workloads/ipu/lower_ipu_mem.c — tile memory of the IPU lowering: the dynamic region (tensors and
 * buffers, first fit from the bottom up, freed after their last use, the same addresses on every
 * tile), each operator's weights (a stack per tile) and the tables shared by content (initial data,
 * from the top down; lower_ipu_int.h's lw says how they stack), the check that an operator fits,
 * and the graph inputs placed as initial data. */
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/ipu/lower_ipu_int.h"
#include "workloads/lower/fill.h"

uint64_t lwi_element_bytes(const lw *L)
{
    return L->p->target.element_bytes ? L->p->target.element_bytes : 16;
}

void lwi_elem_span(const lw *L, uint64_t addr, uint64_t bytes, uint64_t av[2])
{
    uint64_t eb = lwi_element_bytes(L);
    av[0] = addr / eb * eb;
    av[1] = ts_geom_cdiv(addr + bytes, eb) * eb;
}

/* First fit in the dynamic region, not overlapping the spans av[0..nav) ([lo, hi), hi 0: none). */
static uint64_t alloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav)
{
    bytes = (bytes + 15) & ~(uint64_t)15;
    if (!bytes)
        bytes = 16;
    uint64_t a = 16; /* address 0 stays unused */
    for (bool moved = true; moved;) { /* blocks are sorted: one pass moves past each in turn */
        moved = false;
        for (size_t k = 0; k < nav; k++)
            if (av[k][1] && a < av[k][1] && a + bytes > av[k][0]) {
                a = (av[k][1] + 15) & ~(uint64_t)15;
                moved = true;
            }
        for (size_t i = 0; i < L->nblk; i++)
            if (a < L->blk[i].a + L->blk[i].n && a + bytes > L->blk[i].a) {
                a = L->blk[i].a + L->blk[i].n;
                moved = true;
            }
    }
    /* insert at the sorted position */
    if (ts_grow((void **)&L->blk, &L->capblk, L->nblk + 1, sizeof *L->blk)) {
        L->oom = true;
        return a;
    }
    size_t k = 0;
    while (k < L->nblk && L->blk[k].a < a)
        k++;
    memmove(&L->blk[k + 1], &L->blk[k], (L->nblk - k) * sizeof *L->blk);
    L->blk[k] = (lw_blk){a, bytes};
    L->nblk++;
    if (a + bytes > L->hw)
        L->hw = a + bytes;
    return a;
}

uint64_t lwi_alloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1)
{
    const uint64_t av[1][2] = {{av0, av1}};
    return alloc_apart(L, bytes, av, 1);
}

uint64_t lwi_alloc(lw *L, uint64_t bytes) { return lwi_alloc_avoid(L, bytes, 0, 0); }

uint64_t lwi_alloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav)
{
    return alloc_apart(L, bytes, av, nav);
}

void lwi_release(lw *L, uint64_t a)
{
    for (size_t k = 0; k < L->nblk; k++)
        if (L->blk[k].a == a) {
            memmove(&L->blk[k], &L->blk[k + 1], (L->nblk - k - 1) * sizeof *L->blk);
            L->nblk--;
            return;
        }
}

uint64_t lwi_talloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav)
{
    uint64_t a = alloc_apart(L, bytes, av, nav);
    if (ts_grow((void **)&L->tmp, &L->captmp, L->ntmp + 1, sizeof *L->tmp))
        L->oom = true;
    else
        L->tmp[L->ntmp++] = a;
    return a;
}

uint64_t lwi_talloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1)
{
    const uint64_t av[1][2] = {{av0, av1}};
    return lwi_talloc_apart(L, bytes, av, 1);
}

uint64_t lwi_talloc(lw *L, uint64_t bytes) { return lwi_talloc_avoid(L, bytes, 0, 0); }

uint64_t lwi_salloc(lw *L, uint64_t bytes)
{
    bytes = (bytes + 15) & ~(uint64_t)15;
    if (L->measure) {
        L->w[L->cur].bytes += bytes;
        return 0;
    }
    uint64_t a = L->w[L->cur].addr + L->wnext;
    L->wnext += bytes;
    return a;
}

ts_status lwi_place_weights_by(lw_wt *w, size_t nn, uint32_t T, uint64_t top, uint32_t narrow, ts_err *err)
{
    uint64_t *floor = ts_calloc(T ? T : 1, sizeof *floor), lim = top;
    if (!floor)
        return ts_err_set(err, TS_ENOMEM, "out of memory placing the weights");
    for (uint32_t t = 0; t < T; t++)
        floor[t] = top;
    /* with narrow, the operators of at most narrow tiles first (from the top), then the others */
    for (int group = narrow ? 0 : 1; group < 2; group++)
        for (size_t k = nn; k-- > 0;) {
            lw_wt *e = &w[k];
            if (!e->bytes || e->lo >= e->hi || (narrow && (e->hi - e->lo <= narrow) != !group))
                continue;
            uint64_t f = top;
            for (uint32_t t = e->lo; t < e->hi && t < T; t++)
                f = floor[t] < f ? floor[t] : f;
            e->addr = f > e->bytes ? f - e->bytes : 0;
            for (uint32_t t = e->lo; t < e->hi && t < T; t++)
                floor[t] = e->addr;
        }
    for (size_t k = nn; k-- > 0;) {
        if (w[k].bytes && w[k].lo < w[k].hi)
            lim = w[k].addr < lim ? w[k].addr : lim;
        w[k].lim = lim;
    }
    ts_free(floor);
    return TS_OK;
}

ts_status lwi_place_weights(lw_wt *w, size_t nn, uint32_t T, uint64_t top, ts_err *err)
{
    return lwi_place_weights_by(w, nn, T, top, 0, err);
}

void lwi_weight_sums(const lw_wt *w, size_t nn, uint32_t T, bool wide, uint64_t *load)
{
    memset(load, 0, (size_t)T * sizeof *load);
    for (size_t k = 0; k < nn; k++)
        if (w[k].bytes && (!wide || (uint64_t)(w[k].hi - w[k].lo) * 8 > T))
            for (uint32_t t = w[k].lo; t < w[k].hi && t < T; t++)
                load[t] += w[k].bytes;
}

bool lwi_tile_load(const lw_wt *w, size_t nn, uint32_t T, uint64_t *tload)
{
    bool spread = false;
    for (size_t k = 0; k < nn; k++)
        spread |= w[k].spread && w[k].bytes;
    lwi_weight_sums(w, nn, T, true, tload);
    return spread;
}

/* Tables, kept for the whole run. */
static uint64_t palloc(lw *L, uint64_t bytes)
{
    bytes = (bytes + 15) & ~(uint64_t)15;
    if (L->measure) {
        L->perm += bytes;
        return 0;
    }
    L->ptop = L->ptop > bytes ? L->ptop - bytes : 0;
    return L->ptop;
}

ts_status lwi_seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len)
{
    t += L->toff;
    if (!len || L->cur < 0) /* the graph inputs are dynamic data */
        return L->measure || !len ? TS_OK : ts_program_add_segment(L->prog, 0, t, addr, bytes, (uint32_t)len, L->err);
    if (L->measure)
        return TS_OK;
    const lw_wt *e = &L->w[L->cur];
    if (t < e->lo || t >= e->hi)
        return ts_err_set(L->err, TS_EINTERNAL, "weights of node %d on tile %u, outside its tiles %u..%u", L->cur, t,
                          e->lo, e->hi ? e->hi - 1 : 0);
    return ts_program_add_segment(L->prog, 0, t, addr, bytes, (uint32_t)len, L->err);
}

/* Static data the same on every tile (address tables): placed once per content, on tiles 0..tn-1
 * (and on the tiles of later users too). */
uint64_t lwi_stable(lw *L, const void *v, uint64_t bytes, uint32_t tn, ts_status *rc)
{
    tn += L->toff; /* the operator's tiles (the table's address is the same on every tile) */
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)v)[i]) * 1099511628211ull;
    lw_tab *e = NULL;
    for (size_t i = 0; i < L->ntabs && !e; i++)
        if (L->tabs[i].hash == h && L->tabs[i].bytes == bytes)
            e = &L->tabs[i];
    if (e && e->tiles >= tn)
        return e->addr;
    uint64_t a = e ? e->addr : palloc(L, bytes);
    for (uint32_t t = e ? e->tiles : 0; t < tn && *rc == TS_OK && !L->measure; t++)
        *rc = ts_program_add_segment(L->prog, 0, t, a, v, (uint32_t)bytes, L->err);
    if (e)
        e->tiles = tn;
    else if (!ts_grow((void **)&L->tabs, &L->captabs, L->ntabs + 1, sizeof *L->tabs))
        L->tabs[L->ntabs++] = (lw_tab){h, bytes, a, tn};
    return a;
}

/* Tile memory the current operator needs: the tables, the weights of it and the operators after
 * it on the tile that holds the most of them, and the highest dynamic byte in use since it began. */
uint64_t lwi_need_bytes(const lw *L)
{
    uint64_t top = L->p->target.sram_bytes & ~(uint64_t)15;
    return L->hw + (top - (L->slim < top ? L->slim : top));
}

ts_status lwi_check_fit(lw *L, const char *what, const char *name)
{
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering %s '%s'", what, name);
    uint64_t top = L->p->target.sram_bytes & ~(uint64_t)15, need = lwi_need_bytes(L);
    if (L->measure || (need <= top && L->slim >= L->p->target.interleaved_base))
        return TS_OK;
    L->overfull = true;
    L->short_by = need > top ? need - top : 1;
    /* the operator with the most weights still to be used */
    int big = L->cur < 0 ? 0 : L->cur;
    for (size_t j = (size_t)big; j < ts_graph_node_count(L->g); j++)
        if (L->w[j].bytes > L->w[big].bytes)
            big = (int)j;
    const ts_graph_node *bn = ts_graph_get_node(L->g, big);
    return ts_err_set(L->err, TS_EINPUT,
                      "%s '%s' needs %llu KiB per tile, the tile has %llu KiB: %llu bytes short (%llu KiB over: "
                      "%llu KiB of tensors and buffers at once, %llu KiB of weights still to be used and tables, the "
                      "most weights %llu KiB for %s '%s')",
                      what, name, (unsigned long long)((need + 1023) / 1024),
                      (unsigned long long)(L->p->target.sram_bytes / 1024),
                      (unsigned long long)(need - (need < top ? need : top)),
                      (unsigned long long)((need - (need < top ? need : top) + 1023) / 1024),
                      (unsigned long long)((L->hw + 1023) / 1024), (unsigned long long)((need - L->hw + 1023) / 1024),
                      (unsigned long long)((L->w[big].bytes + 1023) / 1024), ts_graph_op_name(bn->op), bn->name);
}

/* ---- the graph inputs ---- */

/* The bytes an input's element is held in: f16 as halves for an f16 MatMul/Gemm, f32 words for
 * anything else (see lwi_held_half). */
static uint32_t input_es(const ts_graph *g, int id)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    size_t nc = 0;
    uint32_t es = 4;
    const int *cons = ts_graph_consumers(g, id, &nc);
    for (size_t c = 0; t->dtype == TS_DT_F16 && c < nc; c++) {
        int op = ts_graph_get_node(g, cons[c])->op;
        if (op == TS_OP_MATMUL || op == TS_OP_GEMM)
            es = 2;
    }
    return es;
}

/* Elements per tile of an input of ne elements: whole rows of the last axis, as the
 * row-partitioned operators (MatMul, Softmax) want, at least 1024 elements (or the whole input). */
static uint64_t input_chunk(const lw *L, const ts_graph_tensor *t, uint64_t ne)
{
    uint64_t ld = t->rank > 0 && t->dims[t->rank - 1] > 0 ? (uint64_t)t->dims[t->rank - 1] : 1;
    uint64_t chunk = ne ? ts_geom_cdiv(ne / ld, L->T) * ld : 1;
    if (chunk < 1024) /* at least 1024 elements a tile (whole rows): fewer pieces to gather */
        chunk = ne < 1024 ? ne : ts_geom_cdiv(1024, ld) * ld;
    return chunk ? chunk : 1;
}

/* The ne elements of t (graph id `id`) as es-byte elements, f32 words (es 4) or f16 halves (es 2),
 * owned by the caller (ts_free); NULL when out of memory. */
static void *input_values(const ts_graph_tensor *t, int id, uint32_t es, uint64_t ne)
{
    float *v = ts_calloc(ne ? ne : 1, 4);
    if (!v)
        return NULL;
    for (uint64_t k = 0; k < ne; k++) {
        float f = ts_fill_value_f32(t, id, k);
        if (es == 2) {
            uint16_t h = ts_f32_to_f16(f);
            memcpy((char *)v + 2 * k, &h, 2);
        } else
            v[k] = f;
    }
    return v;
}

/* Graph input `id` as initial data in equal chunks over the tiles, then checked against the tile
 * (the weights are counted by the first operator's check, not here). */
static ts_status place_input(lw *L, int id)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    uint32_t es = input_es(g, id);
    if (t->dtype != TS_DT_F32 && t->dtype != TS_DT_F16)
        return ts_err_set(L->err, TS_EINPUT, "input '%s' is %s; the IPU lowering handles f32 and f16 only", t->name,
                          ts_dtype_name(t->dtype));
    uint64_t ne = (uint64_t)ts_graph_tensor_elems(t);
    void *v = input_values(t, id, es, ne);
    if (!v)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory placing '%s'", t->name);
    uint64_t chunk = input_chunk(L, t, ne);
    if (es == 2 && chunk % 2) {
        ts_free(v);
        return ts_err_set(L->err, TS_EINPUT, "f16 input '%s' needs an even last dimension (it is placed in 32-bit words)",
                          t->name);
    }
    uint32_t tn = (uint32_t)ts_geom_cdiv(ne, chunk);
    uint64_t a = lwi_alloc(L, chunk * es);
    ts_status rc = TS_OK;
    for (uint32_t k = 0; k < tn && rc == TS_OK; k++)
        rc = lwi_seg(L, k, a, (char *)v + k * chunk * es, ((k + 1) * chunk < ne ? chunk : ne - k * chunk) * es);
    ts_free(v);
    if (rc != TS_OK)
        return rc;
    L->pl[id] = (lw_place){.ntiles = tn ? tn : 1, .chunk = chunk, .addr = a, .es = es};
    lwi_use_tiles(L, tn ? tn : 1);
    uint64_t lim = L->slim;
    L->slim = L->p->target.sram_bytes & ~(uint64_t)15; /* the weights are counted by the first operator's check */
    L->slim = L->slim > L->perm ? L->slim - L->perm : 0;
    rc = lwi_check_fit(L, "input", t->name);
    L->slim = lim;
    return rc;
}

ts_status lwi_place_inputs(lw *L)
{
    L->cur = -1;
    for (size_t i = 0; i < ts_graph_tensor_count(L->g); i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(L->g, (int)i);
        size_t nc = 0;
        ts_graph_consumers(L->g, (int)i, &nc);
        if (t->kind != TS_TENSOR_INPUT || (!nc && !t->is_output))
            continue;
        ts_status rc = place_input(L, (int)i);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}
