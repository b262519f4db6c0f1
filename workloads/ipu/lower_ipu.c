/* workloads/ipu/lower_ipu.c — graph to IPU instruction streams, planner (a): load-compute-store.
 *
 * See lower_ipu.h for the contract and docs/lowering-ipu.md for the plan, the kernels and their
 * costs. In short, for every operator in topological order:
 *   1. partition its output over tiles (rows for MatMul/Gemm/Softmax/LayerNorm, each batch's rows
 *      for a MatMul of two activations, output rows for Transpose, and columns for a MatMul/Gemm
 *      with large weights; output-channel groups, row blocks and input-channel parts for Conv and
 *      one-row Gemm; planes for the pools; the input's layout for elementwise ops);
 *   2. gather into each tile the input ranges it needs, unless they are already there: exchange
 *      rounds, one chip-wide superstep each, in which every tile receives from at most one sender
 *      (so no two senders ever meet at a receiver) and a sender serves its receivers one after
 *      another; ranges a tile holds itself are copied by its supervisor;
 *   3. compute on the tile's workers, then sync; the output stays where it was computed (partial
 *      sums of a Conv split over input channels are added in a tree first).
 * Tensors are f32 or f16 (a graph f16 throughout). f16 is held as halves around the f16 MatMul/Gemm
 * routine (f16 x f16 -> f32 on the AMP, the output rounded to f16) and in f32 words elsewhere: a
 * Conv or one-row Gemm rounds its inputs and weights to f16 for f16v4amp and accumulates in f32,
 * and the operators between them run as for f32. Other dtypes are refused. Memory has the same addresses on every tile: tensors
 * and buffers in a first-fit dynamic region freed after their last use; each operator's weights,
 * loaded before the run, above it until the operator has run; shared tables at the top. The
 * lowering runs twice: the first pass sizes each operator's weights, the second places them.
 */
#include "workloads/ipu/lower_ipu.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/half.h"
#include "workloads/lower/fill.h"
#include "workloads/ipu/lower_ipu_int.h"

/* ---- emission ---- */

static size_t emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2)
{
    if (ts_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v)) {
        L->oom = true;
        return c->n;
    }
    ts_insn *in = &c->v[c->n];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->a[0] = a0;
    in->a[1] = a1;
    in->a[2] = a2;
    return c->n++;
}

static int32_t fbits(float f)
{
    int32_t b;
    memcpy(&b, &f, 4);
    return b;
}

#define S(t, op, a, b, c) emit(L, &L->tiles[t].sup, LW_##op, (a), (b), (c))
#define W(t, op, a, b, c) emit(L, &L->tiles[t].wrk, LW_##op, (a), (b), (c))

static void mark(lw *L, uint32_t t)
{
    if (ts_grow((void **)&L->marks, &L->capmarks, L->nmarks + 1, sizeof *L->marks)) {
        L->oom = true;
        return;
    }
    L->marks[L->nmarks++] = (lw_mark){t, (uint32_t)L->tiles[t].sup.n, L->step};
}

/* Every tile ends the superstep with a chip-wide sync. */
static void sync_all(lw *L)
{
    for (uint32_t t = 0; t < L->T; t++)
        S(t, SYNC, 1, 0, 0);
    L->step++;
    for (uint32_t t = 0; t < L->T; t++)
        mark(L, t);
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

/* First fit not overlapping [av0, av1) (av1 = 0: no constraint). */
static uint64_t alloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1)
{
    const uint64_t av[1][2] = {{av0, av1}};
    return alloc_apart(L, bytes, av, 1);
}

static uint64_t alloc(lw *L, uint64_t bytes) { return alloc_avoid(L, bytes, 0, 0); }

static void release(lw *L, uint64_t a)
{
    for (size_t k = 0; k < L->nblk; k++)
        if (L->blk[k].a == a) {
            memmove(&L->blk[k], &L->blk[k + 1], (L->nblk - k - 1) * sizeof *L->blk);
            L->nblk--;
            return;
        }
}

/* A buffer of the current operator: freed once the operator is lowered. */
static uint64_t talloc_avoid(lw *L, uint64_t bytes, uint64_t av0, uint64_t av1)
{
    const uint64_t av[1][2] = {{av0, av1}};
    return ts_lwi_talloc_apart(L, bytes, av, 1);
}

static uint64_t talloc(lw *L, uint64_t bytes) { return talloc_avoid(L, bytes, 0, 0); }

/* The lowest byte of the current operator's weights (and the dynamic region's limit). */
static uint64_t wbase(const lw *L)
{
    uint64_t top = L->p->target.sram_bytes & ~(uint64_t)15, used = L->perm + L->wabove + L->wsz[L->cur];
    return used < top ? top - used : 0;
}

/* Weights of the current operator: initial data placed for it alone. */
static uint64_t salloc(lw *L, uint64_t bytes)
{
    bytes = (bytes + 15) & ~(uint64_t)15;
    if (L->measure) {
        L->wsz[L->cur] += bytes;
        return 0;
    }
    uint64_t a = wbase(L) + L->wnext;
    L->wnext += bytes;
    return a;
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

static void use_tiles(lw *L, uint32_t n)
{
    if (n > L->optiles)
        L->optiles = n;
    if (n > L->used)
        L->used = n;
}

static ts_status seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len)
{
    if (!len || L->measure)
        return TS_OK;
    return ts_program_add_segment(L->prog, 0, t, addr, bytes, (uint32_t)len, L->err);
}

/* Static data the same on every tile (address tables): placed once per content, on tiles 0..tn-1
 * (and on the tiles of later users too). */
static uint64_t stable(lw *L, const void *v, uint64_t bytes, uint32_t tn, ts_status *rc)
{
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

/* ---- values ---- */

static float value(const ts_graph_tensor *t, int id, uint64_t i)
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

/* ---- errors ---- */

static const char *opname(const ts_graph_node *n) { return ts_graph_op_name(n->op); }

static ts_status unsupported(lw *L, const ts_graph_node *n, const char *why)
{
    return ts_err_set(L->err, TS_EINPUT, "%s '%s': %s (the IPU lowering does not support this yet)", opname(n),
                      n->name, why);
}

/* f16 tensors are held in one of two ways: as halves (es 2) around the f16 MatMul/Gemm routine
 * (inputs read and outputs written as halves), or as f32 words (es 4) everywhere else: a Conv
 * (and a one-row Gemm) rounds its inputs and weights to f16 for f16v4amp and accumulates in f32,
 * and the operators between them (Relu, Add, pools, ...) run on the f32 words as for f32. */
static bool held_half(const lw *L, int x) { return L->pl[x].ntiles && L->pl[x].es == 2; }

static ts_status check_f32(lw *L, const ts_graph_node *n)
{
    bool mm = n->op == TS_OP_MATMUL || n->op == TS_OP_GEMM;
    bool view = n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN;
    ts_dtype dt0 = n->nin ? ts_graph_get_tensor(L->g, n->in[0])->dtype : TS_DT_F32;
    for (size_t i = 0; i < n->nin; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(L->g, n->in[i]);
        if (t->dtype == TS_DT_F32 && dt0 == TS_DT_F32)
            continue;
        if (t->dtype == TS_DT_F16 && dt0 == TS_DT_F16) {
            bool weight = t->kind != TS_TENSOR_ACTIVATION && t->kind != TS_TENSOR_INPUT;
            if (weight || !held_half(L, n->in[i]) || mm || view)
                continue;
        }
        char why[160];
        if (t->dtype == TS_DT_F16 && dt0 == TS_DT_F16)
            snprintf(why, sizeof why, "input '%s' is f16 held as halves (the output of an f16 MatMul/Gemm); this "
                     "operator reads f16 held in f32 words", t->name);
        else
            snprintf(why, sizeof why, "input '%s' is %s; this operator is lowered for f32 (or f16 throughout)", t->name,
                     ts_dtype_name(t->dtype));
        return unsupported(L, n, why);
    }
    return TS_OK;
}

/* Tile memory the current operator needs: the tables, the weights of it and the operators after
 * it, and the highest dynamic byte in use since it began. */
static uint64_t need_bytes(const lw *L) { return L->hw + L->perm + L->wabove + L->wsz[L->cur]; }

static ts_status check_fit(lw *L, const char *what, const char *name)
{
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering %s '%s'", what, name);
    uint64_t top = L->p->target.sram_bytes & ~(uint64_t)15, need = need_bytes(L);
    if (L->measure || (need <= top && wbase(L) >= L->p->target.interleaved_base))
        return TS_OK;
    L->overfull = true;
    /* the operator with the most weights still to be used */
    int big = L->cur;
    for (size_t j = (size_t)L->cur; j < ts_graph_node_count(L->g); j++)
        if (L->wsz[j] > L->wsz[big])
            big = (int)j;
    const ts_graph_node *bn = ts_graph_get_node(L->g, big);
    return ts_err_set(L->err, TS_EINPUT,
                      "%s '%s' needs %llu KiB per tile, the tile has %llu KiB (%llu KiB over: %llu KiB of tensors "
                      "and buffers at once, %llu KiB of weights still to be used and tables, the most weights "
                      "%llu KiB for %s '%s')",
                      what, name, (unsigned long long)((need + 1023) / 1024),
                      (unsigned long long)(L->p->target.sram_bytes / 1024),
                      (unsigned long long)((need - (need < top ? need : top) + 1023) / 1024),
                      (unsigned long long)((L->hw + 1023) / 1024), (unsigned long long)((need - L->hw + 1023) / 1024),
                      (unsigned long long)((L->wsz[big] + 1023) / 1024), opname(bn), bn->name);
}

/* ---- gathering input slices ---- */

/* Element e of a tensor placed at P: its tile, its element index there, and how many elements from
 * e on lie contiguously on that tile. */
static uint64_t pl_run(const lw_place *P, uint64_t e, uint32_t *tile, uint64_t *off)
{
    if (!P->inner) {
        *tile = (uint32_t)(e / P->chunk);
        *off = e % P->chunk;
        return P->chunk - *off;
    }
    uint64_t c = e / P->inner, px = e % P->inner;
    *tile = (uint32_t)((c / P->cb) * P->nrb + px / P->pb);
    *off = (c % P->cb) * P->pb + px % P->pb;
    uint64_t end = (px / P->pb + 1) * P->pb;
    return (end < P->inner ? end : P->inner) - px;
}

typedef struct lw_piece { uint32_t src, dst; uint64_t from, to, words; } lw_piece;
typedef struct lw_xfer { uint32_t src, dst; uint64_t to, words; size_t p0, p1; bool staged; } lw_xfer; /* pieces p0..p1-1 */

/* Tile t < tn needs nr[t] (NULL: 1) ranges of tensor x, the j-th [lo[t] + j*sst, hi[t] + j*sst),
 * at element offsets j*dstr of one contiguous slice of its memory; where[t] gets the slice's
 * address. In place when every range lies on the tile itself at those offsets (unless force);
 * otherwise gathered into one buffer (same address on every tile, freed with the operator):
 * pieces held by other tiles travel in exchange rounds, one chip-wide superstep each, in which
 * every receiver takes one transfer (consecutive pieces of one sender, landing one after the
 * other) and a sender serves its receivers in turn; pieces a tile holds itself are copied by its
 * supervisor at the start of the next superstep. */
static ts_status gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                        uint64_t sst, uint64_t dstr, bool force, uint64_t *where)
{
    const lw_place *P = &L->pl[x];
    const char *xname = ts_graph_get_tensor(L->g, x)->name;
    uint64_t es = P->es, need = 0;
    bool *remote = ts_calloc(tn ? tn : 1, sizeof *remote);
    if (!remote)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", xname);
    for (uint32_t t = 0; t < tn; t++) {
        uint32_t n = nr ? nr[t] : 1;
        uint64_t len = hi[t] - lo[t], off0 = 0;
        where[t] = 0;
        if (!len || !n)
            continue;
        bool local = !force;
        for (uint32_t j = 0; j < n && local; j++) {
            uint32_t s;
            uint64_t off, run = pl_run(P, lo[t] + j * sst, &s, &off);
            if (!j)
                off0 = off;
            local = s == t && run >= len && off == off0 + j * dstr;
        }
        if (local) {
            where[t] = P->addr + off0 * es;
            continue;
        }
        remote[t] = true;
        if (((n - 1) * dstr + len) * es > need)
            need = ((n - 1) * dstr + len) * es;
    }
    if (!need) {
        ts_free(remote);
        return TS_OK;
    }
    /* the buffer receives while the tile sends from x's chunk: keep them in different elements */
    uint64_t eb = L->p->target.element_bytes ? L->p->target.element_bytes : 16;
    uint64_t av0 = P->addr / eb * eb, av1 = (P->addr + P->chunk * es + eb - 1) / eb * eb;
    uint64_t g = L->into ? L->into : talloc_avoid(L, need, av0, av1);
    lw_piece *pc = NULL;
    lw_xfer *xf = NULL;
    size_t npc = 0, cap = 0, nxf = 0, capx = 0;
    uint32_t rounds = 0;
    uint64_t stage = 0;
    uint32_t *count = ts_calloc(tn, sizeof *count);
    ts_status rc = count ? TS_OK : ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", xname);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        if (!remote[t])
            continue;
        where[t] = g;
        size_t pt0 = npc;
        uint32_t n = nr ? nr[t] : 1;
        for (uint32_t j = 0; j < n && rc == TS_OK; j++)
            for (uint64_t e = lo[t] + j * sst, end = hi[t] + j * sst; e < end && rc == TS_OK;) {
                uint32_t s;
                uint64_t off, run = pl_run(P, e, &s, &off);
                uint64_t b = e + run < end ? e + run : end;
                uint64_t to = g + (j * dstr + (e - lo[t] - j * sst)) * es;
                if ((off * es) % 4 || ((b - e) * es) % 4 || to % 4) { /* whole 32-bit words only */
                    rc = ts_err_set(L->err, TS_EINPUT, "'%s': f16 slices must start and end on 32-bit words", xname);
                    break;
                }
                if (ts_grow((void **)&pc, &cap, npc + 1, sizeof *pc)) {
                    rc = ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", xname);
                    break;
                }
                pc[npc++] = (lw_piece){s, t, P->addr + off * es, to, (b - e) * es / 4};
                e = b;
            }
        /* the receiver's remote pieces by sender (stable): one transfer per sender, received in
         * place when its pieces follow on from each other, else into a staging buffer and copied */
        for (size_t i = pt0 + 1; i < npc; i++) {
            lw_piece v = pc[i];
            size_t k = i;
            while (k > pt0 && (pc[k - 1].src == t ? 0 : pc[k - 1].src + 1) > (v.src == t ? 0 : v.src + 1)) {
                pc[k] = pc[k - 1];
                k--;
            }
            pc[k] = v;
        }
        size_t x0 = nxf;
        for (size_t i = pt0; i < npc && rc == TS_OK;) {
            size_t k = i + 1;
            bool direct = true;
            uint64_t words = pc[i].words;
            while (k < npc && pc[k].src == pc[i].src) {
                direct &= pc[k].to == pc[k - 1].to + 4 * pc[k - 1].words;
                words += pc[k].words;
                k++;
            }
            if (pc[i].src != t) {
                if (ts_grow((void **)&xf, &capx, nxf + 1, sizeof *xf)) {
                    rc = ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", xname);
                    break;
                }
                xf[nxf++] = (lw_xfer){pc[i].src, t, direct ? pc[i].to : 0, words, i, k, !direct};
                if (!direct && words > stage)
                    stage = words;
                if (++count[t] > rounds)
                    rounds = count[t];
            }
            i = k;
        }
        /* staggered: receiver t starts with its (t mod n)-th sender, so that receivers that read
         * the same senders meet different ones in a round */
        for (size_t r = 0, nx = nxf - x0; L->stagger && rc == TS_OK && nx > 1 && r < t % nx; r++) {
            lw_xfer first = xf[x0];
            memmove(&xf[x0], &xf[x0 + 1], (nx - 1) * sizeof *xf);
            xf[nxf - 1] = first;
        }
    }
    uint64_t sbuf = stage ? talloc_avoid(L, stage * 4, av0, av1) : 0;
    for (size_t i = 0; i < nxf; i++)
        if (xf[i].staged)
            xf[i].to = sbuf;
    /* exchange rounds: round r carries the r-th transfer of every receiver */
    size_t *sel = rc == TS_OK ? ts_calloc(nxf ? nxf : 1, sizeof *sel) : NULL;
    if (rc == TS_OK && !sel)
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory gathering '%s'", xname);
    for (uint32_t r = 0; r < rounds && rc == TS_OK; r++) {
        memset(count, 0, tn * sizeof *count);
        size_t nsel = 0;
        for (size_t i = 0; i < nxf; i++)
            if (count[xf[i].dst]++ == r)
                sel[nsel++] = i;
        for (size_t k = 0; k < nsel; k++) { /* receivers arm first */
            const lw_xfer *q = &xf[sel[k]];
            S(q->dst, SETZI, RM(5), (int32_t)q->to, 0);
            S(q->dst, SETZI, RM(6), (int32_t)q->src, 0);
            S(q->dst, RECV, RM(5), RM(6), (int32_t)q->words);
        }
        /* senders, receivers in ascending order (sel is sorted by receiver) */
        for (size_t k = 0; k < nsel; k++) {
            const lw_xfer *q = &xf[sel[k]];
            for (size_t i = q->p0, j; i < q->p1; i = j) {
                uint64_t words = pc[i].words; /* coalesce: pieces that follow on in the sender's memory */
                for (j = i + 1; L->coalesce && j < q->p1 && pc[j].from == pc[j - 1].from + 4 * pc[j - 1].words; j++)
                    words += pc[j].words;
                S(q->src, SETZI, RM(5), (int32_t)pc[i].from, 0);
                S(q->src, SETZI, RM(6), (int32_t)q->dst, 0);
                S(q->src, SEND, RM(5), RM(6), (int32_t)words);
            }
        }
        for (size_t k = 0; k < nsel; k++) {
            const lw_xfer *q = &xf[sel[k]];
            S(q->dst, RXWAIT, 0, 0, 0);
            for (size_t i = q->p0, j, at = q->to; q->staged && i < q->p1; i = j) {
                /* coalesce: a run of pieces of equal length whose places are equally far apart is
                 * copied in one loop */
                int64_t st = i + 1 < q->p1 ? (int64_t)(pc[i + 1].to - pc[i].to) : 0;
                for (j = i + 1; L->coalesce && j < q->p1 && pc[j].words == pc[i].words &&
                                (int64_t)(pc[j].to - pc[j - 1].to) == st; j++)
                    ;
                if (!L->coalesce)
                    j = i + 1;
                S(q->dst, SETZI, RM(1), (int32_t)at, 0);
                S(q->dst, SETZI, RM(2), (int32_t)pc[i].to, 0);
                S(q->dst, SETZI, RM(3), (int32_t)pc[i].words, 0);
                if (j - i > 1)
                    S(q->dst, SETZI, RM(7), (int32_t)(j - i - 1), 0);
                size_t loop = S(q->dst, RPT, RM(3), 2, 0);
                S(q->dst, LD32STEP, RM(4), RM(1), 4);
                S(q->dst, ST32STEP, RM(4), RM(2), 4);
                if (j - i > 1) {
                    S(q->dst, ADDI, RM(2), RM(2), (int32_t)(st - 4 * (int64_t)pc[i].words));
                    S(q->dst, BRNZDEC, RM(7), (int32_t)loop, 0);
                }
                at += 4 * pc[i].words * (j - i);
            }
        }
        sync_all(L);
    }
    /* what a tile holds itself: its supervisor copies it (start of the compute superstep) */
    for (size_t i = 0; i < npc && rc == TS_OK; i++) {
        const lw_piece *q = &pc[i];
        if (q->src != q->dst)
            continue;
        S(q->dst, SETZI, RM(1), (int32_t)q->from, 0);
        S(q->dst, SETZI, RM(2), (int32_t)q->to, 0);
        S(q->dst, SETZI, RM(3), (int32_t)q->words, 0);
        S(q->dst, RPT, RM(3), 2, 0);
        S(q->dst, LD32STEP, RM(4), RM(1), 4);
        S(q->dst, ST32STEP, RM(4), RM(2), 4);
    }
    ts_free(sel);
    ts_free(pc);
    ts_free(xf);
    ts_free(count);
    ts_free(remote);
    return rc;
}

/* ---- the AMP matrix-product kernel ---- */

/* $m1 := this worker's first row of `rows` split in blocks of rw = ceil(rows / workers): min(w rw,
 * rows - rw), computed without branches so every worker runs the same instructions (the last
 * blocks overlap and recompute the same rows; they write the same values). */
static void emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw)
{
    W(t, GET, RM(1), 2, 0);
    W(t, MULI, RM(1), RM(1), (int32_t)rw);
    W(t, SETZI, RM(2), (int32_t)(rows - rw), 0);
    W(t, CMPSLT, RM(3), RM(1), RM(2));
    W(t, SUB, RM(4), RM(1), RM(2));
    W(t, MUL, RM(4), RM(4), RM(3));
    W(t, ADD, RM(1), RM(2), RM(4));
}

static void emit_quad(lw *L, uint32_t t, const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units;
    W(t, AMPZERO, 0, 0, 0);
    W(t, MOV, RM(4), RM(2), 0);
    if (m->taps)
        W(t, SETZI, RM(12), (int32_t)m->taps - 1, 0);
    size_t kr = W(t, RPT, RM(11), (int32_t)U + 2, 0);
    for (uint32_t s = 0; s < U / 2; s++) {
        W(t, LD128PUTCS, RM(5), (int32_t)s, 0);
        W(t, ADDI, RM(5), RM(5), 16);
    }
    W(t, LD64STEP, RA(0), RM(4), 8);
    if (m->half)
        W(t, F16V4AMP, RA(0), 0, 0);
    else
        W(t, F32V2AMP, RA(0), 0, 0);
    if (m->taps) {
        W(t, ADDI, RM(4), RM(4), m->tap_skip);
        W(t, BRNZDEC, RM(12), (int32_t)kr, 0);
    }
    for (uint32_t s = 0; s < U / 2; s++)
        W(t, AMPGET, RA(2 * s), (int32_t)s, 0);
    if (m->bias || m->acc) {
        for (uint32_t s = 0; s < U / 2; s++) {
            W(t, LD64, RA(8 + 2 * s), RM(8), (int32_t)(8 * s));
            W(t, F32V2ADD, RA(2 * s), RA(2 * s), RA(8 + 2 * s));
        }
        W(t, ADDI, RM(8), RM(8), (int32_t)(4 * U));
    }
    if (m->out16) /* pairs rounded to f16 (nearest even), one 32-bit store per pair */
        for (uint32_t s = 0; 2 * s < nstore; s++) {
            W(t, F32V2TOF16, RA(s), RA(2 * s), 0);
            W(t, ST32, RA(s), RM(6), (int32_t)(m->out_u * 2 * s));
        }
    else
        for (uint32_t u = 0; u < nstore; u++)
            W(t, ST32, RA(u), RM(6), (int32_t)(m->out_u * u));
    W(t, ADDI, RM(6), RM(6), (int32_t)m->out_q);
}

/* Every worker of the tile runs this routine (runall) on its block of rows. The AMP coefficients
 * are tile state shared by the workers: all of them load the same block before using it, and they
 * run the same instructions in the same order one barrel slot apart, so each f32v2amp of every
 * worker sees the block of its own iteration (the coefficient loads of the next iteration issue
 * after the last worker's f32v2amp of this one). */
static void emit_mm(lw *L, uint32_t t, const mm_args *m)
{
    uint32_t U = m->units;
    uint32_t rw = (uint32_t)((m->rows + L->workers - 1) / L->workers);
    uint32_t full = (uint32_t)(m->nq_real / U), tail = (uint32_t)(m->nq_real % U);
    emit_start_row(L, t, m->rows, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)m->a_stride);
    if (m->tab)
        W(t, LD32, RM(3), RM(0), 0);
    else
        W(t, SETZI, RM(3), (int32_t)m->a, 0);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)m->out_row);
    if (m->tab)
        W(t, LD32, RM(4), RM(0), 8);
    else
        W(t, SETZI, RM(4), (int32_t)m->out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    if (m->acc) { /* $m13: this row's partial sums */
        W(t, MULI, RM(13), RM(1), (int32_t)m->acc_row);
        if (m->tab)
            W(t, LD32, RM(4), RM(0), 12);
        else
            W(t, SETZI, RM(4), (int32_t)m->acc, 0);
        W(t, ADD, RM(13), RM(13), RM(4));
    }
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    if (m->tab) { /* $m9 := w, $m10 := bias */
        W(t, LD32, RM(11), RM(0), 20);
        W(t, LD32, RM(9), RM(0), 4);
        W(t, LD32, RM(10), RM(0), 16);
    } else
        W(t, SETZI, RM(11), (int32_t)m->kp, 0);
    size_t row = m->tab ? W(t, MOV, RM(5), RM(9), 0) : W(t, SETZI, RM(5), (int32_t)m->w, 0);
    if (m->acc)
        W(t, MOV, RM(8), RM(13), 0);
    else if (m->tab)
        W(t, MOV, RM(8), RM(10), 0);
    else
        W(t, SETZI, RM(8), (int32_t)m->bias, 0);
    W(t, MOV, RM(6), RM(3), 0);
    if (full) {
        W(t, SETZI, RM(7), (int32_t)full - 1, 0);
        size_t q = L->tiles[t].wrk.n;
        emit_quad(L, t, m, U);
        W(t, BRNZDEC, RM(7), (int32_t)q, 0);
    }
    if (tail)
        emit_quad(L, t, m, tail);
    W(t, ADDI, RM(2), RM(2), (int32_t)m->a_stride);
    W(t, ADDI, RM(3), RM(3), (int32_t)m->out_row);
    if (m->acc)
        W(t, ADDI, RM(13), RM(13), (int32_t)m->acc_row);
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
}

/* Run the routine at wrk pc `entry` on every worker of tile t, wait for them. */
static void run_all(lw *L, uint32_t t, size_t entry)
{
    S(t, SETZI, RM(1), 0, 0);
    S(t, RUNALL, (int32_t)entry, RM(1), 0);
    S(t, SYNC, 0, 0, 0);
}

/* ---- operators ---- */

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static ts_status need_placed(lw *L, const ts_graph_node *n, int x)
{
    if (L->pl[x].ntiles)
        return TS_OK;
    char why[160];
    snprintf(why, sizeof why, "input '%s' is a %s; only activations and graph inputs are lowered as data",
             ts_graph_get_tensor(L->g, x)->name, ts_tensor_kind_name(ts_graph_get_tensor(L->g, x)->kind));
    return unsupported(L, n, why);
}

static ts_status scratch(lw *L, lw_scr *s)
{
    s->lo = ts_calloc(L->T, sizeof *s->lo);
    s->hi = ts_calloc(L->T, sizeof *s->hi);
    s->where = ts_calloc(L->T, sizeof *s->where);
    s->nr = ts_calloc(L->T, sizeof *s->nr);
    if (!s->lo || !s->hi || !s->where || !s->nr)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

static void scratch_free(lw_scr *s)
{
    ts_free(s->lo);
    ts_free(s->hi);
    ts_free(s->where);
    ts_free(s->nr);
}

/* A convolution's shape (a Gemm of one row is one of C = K input channels on a 1x1 image). */
typedef struct cv_shape {
    uint64_t C, H, Wd, M, kh, kw, sh, sw, pt, pl, pbot, pr, Ho, Wo;
    const ts_graph_tensor *Wt, *Bt; /* weights; bias of M values or NULL */
    int wid, bid;
    int wmode;                      /* 0: Conv [M][C][kh][kw]; 1: Gemm B[N][K] (transB); 2: B[K][N] */
    bool half;                      /* f16: inputs and weights rounded to f16 for f16v4amp (if C is even) */
} cv_shape;

static ts_status lower_conv_shape(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s);

/* MatMul A[..., K] x B[K, N] and Gemm (transB, bias [N]): rows of A partitioned over tiles. */
static ts_status lower_matmul(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *A = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *B = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_tensor *C = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL;
    bool gemm = n->op == TS_OP_GEMM;
    bool tb = gemm && n->attrs.trans_b;
    if (gemm && (n->attrs.trans_a || n->attrs.alpha != 1.0 || (C && n->attrs.beta != 1.0)))
        return unsupported(L, n, "transA, alpha or beta other than 1");
    if (B->kind == TS_TENSOR_ACTIVATION || B->kind == TS_TENSOR_INPUT || B->rank != 2 || A->rank < 1)
        return unsupported(L, n, "the second operand must be a 2-d weight");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t K = (uint64_t)A->dims[A->rank - 1];
    uint64_t N = (uint64_t)(tb ? B->dims[0] : B->dims[1]);
    uint64_t M = (uint64_t)ts_graph_tensor_elems(A) / K;
    if (C && ts_graph_tensor_elems(C) != (int64_t)N)
        return unsupported(L, n, "a bias that is not one value per output column");
    bool half = A->dtype == TS_DT_F16;
    if (M == 1 && !held_half(L, n->in[0])) { /* one row: a 1x1 Conv of K channels, the weights split over the columns */
        cv_shape s = {.C = K, .H = 1, .Wd = 1, .M = N, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .Ho = 1, .Wo = 1,
                      .Wt = B, .wid = n->in[1], .Bt = C, .bid = C ? n->in[2] : -1, .wmode = tb ? 1 : 2, .half = half};
        return lower_conv_shape(L, n, sc, &s);
    }
    if (half && !held_half(L, n->in[0]))
        return unsupported(L, n, "an f16 input of more than one row held in f32 words (the f16 routine reads halves)");
    uint32_t per = half ? 4 : 2; /* inputs per AMP unit and instruction */
    if (K % per)
        return unsupported(L, n, half ? "an f16 inner dimension that is not a multiple of 4 (f16v4amp)"
                                      : "an odd inner dimension (the AMP takes input pairs)");
    if (half && N % 2)
        return unsupported(L, n, "an odd number of f16 output columns (outputs are stored in pairs)");
    uint32_t U = half ? L->units16 : L->units;
    if (half && (U < 2 || U > 8 || U % 2))
        return unsupported(L, n, "f16 on an AMP of other than 2, 4 or 8 f16 units");
    uint64_t es = half ? 2 : 4;
    uint64_t nq = cdiv(N, U), kp = K / per;
    /* columns: all on every tile while their weights take at most a quarter of the tile memory
     * (1/mmshare: less when the model's weights do not fit at a quarter); beyond that split into ncb
     * blocks of qpb groups (the output is then blocked: rows over tile groups, columns over the
     * tiles of a group) */
    uint64_t qpb = nq;
    while (qpb > 1 && qpb * kp * U * 8 > L->p->target.sram_bytes / L->mmshare)
        qpb = cdiv(qpb, 2);
    uint64_t ncb = cdiv(nq, qpb);
    if (ncb > L->T)
        ncb = L->T, qpb = cdiv(nq, ncb), ncb = cdiv(nq, qpb);
    uint64_t pbc = ncb > 1 ? qpb * U : N; /* output columns per tile (storage) */
    uint64_t rp = cdiv(M, L->T / ncb);
    uint32_t nrg = (uint32_t)cdiv(M, rp), tn = (uint32_t)(nrg * ncb);
    /* when the model's weights do not fit at a quarter (mmshare > 4), the inner dimension is cut
     * into nks slices whose rows of A take at most 1/mmshare of the tile memory: each slice is
     * gathered into one buffer and multiplied in turn, adding the sums of the slices before (f32) */
    uint64_t nks = 1;
    while (!half && L->mmshare > 4 && rp * (kp / nks) * 8 > L->p->target.sram_bytes / L->mmshare && kp % (2 * nks) == 0)
        nks *= 2;
    uint64_t kps = kp / nks;
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t rg = t / ncb;
        sc->lo[t] = rg * rp * K;
        sc->hi[t] = (rg + 1) * rp < M ? (rg + 1) * rp * K : M * K;
    }
    if (nks == 1 && (rc = gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    /* weights: coefficient blocks [group][input step][unit][per] of the tile's column block (f16
     * blocks hold halves); the bias stays f32, added to the f32 accumulators */
    uint64_t wbytes = qpb * kp * U * 8;
    float *w = ts_calloc(wbytes / 4 + qpb * U, 4);
    if (!w)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    uint16_t *w16 = (uint16_t *)w;
    float *bias = w + wbytes / 4;
    uint64_t waddr = salloc(L, wbytes);
    uint64_t baddr = C ? salloc(L, qpb * U * 4) : 0;
    uint64_t out = alloc(L, rp * pbc * es);
    for (uint64_t cbk = 0; cbk < ncb && rc == TS_OK; cbk++) {
        uint64_t q0 = cbk * qpb, q1 = q0 + qpb < nq ? q0 + qpb : nq;
        memset(w, 0, wbytes + qpb * U * 4);
        for (uint64_t q = q0; q < q1; q++)
            for (uint64_t k2 = 0; k2 < kp; k2++)
                for (uint32_t u = 0; u < U; u++)
                    for (uint32_t j = 0; j < per; j++) {
                        uint64_t o = q * U + u, k = per * k2 + j;
                        uint64_t at = (((k2 / kps * qpb + q - q0) * kps + k2 % kps) * U + u) * per + j;
                        float v = o < N ? value(B, n->in[1], tb ? o * K + k : k * N + o) : 0.0f;
                        if (half)
                            w16[at] = ts_f32_to_f16(v);
                        else
                            w[at] = v;
                    }
        for (uint64_t o = q0 * U; C && o < N && o < q1 * U; o++)
            bias[o - q0 * U] = value(C, n->in[2], o);
        for (uint32_t t = (uint32_t)cbk; t < tn && rc == TS_OK; t += (uint32_t)ncb) {
            rc = seg(L, t, waddr, w, nks > 1 ? wbytes : (q1 - q0) * kp * U * 8);
            if (rc == TS_OK && C)
                rc = seg(L, t, baddr, bias, qpb * U * 4);
        }
    }
    ts_free(w);
    if (rc != TS_OK)
        return rc;
    /* slice s writes its sums to out when nks - 1 - s is even, else to a second buffer, reading the
     * other's (workers whose blocks overlap must not read sums another has already added to) */
    uint64_t tmp = nks > 1 ? talloc(L, rp * pbc * 4) : 0, abuf = 0;
    if (nks > 1) {
        const lw_place *PA = &L->pl[n->in[0]];
        uint64_t eb = L->p->target.element_bytes ? L->p->target.element_bytes : 16;
        abuf = talloc_avoid(L, rp * kps * 8, PA->addr / eb * eb, (PA->addr + PA->chunk * 4 + eb - 1) / eb * eb);
    }
    uint32_t *rows = ts_calloc(tn, sizeof *rows);
    if (!rows)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint32_t t = 0; t < tn; t++)
        rows[t] = (uint32_t)((sc->hi[t] - sc->lo[t]) / K);
    for (uint64_t sl = 0; sl < nks && rc == TS_OK; sl++) {
        if (nks > 1) {
            for (uint32_t t = 0; t < tn; t++) {
                sc->lo[t] = t / ncb * rp * K + sl * kps * 2;
                sc->hi[t] = sc->lo[t] + kps * 2;
                sc->nr[t] = rows[t];
            }
            L->into = abuf;
            rc = gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, K, kps * 2, false, sc->where);
            L->into = 0;
        }
        uint64_t dst = (nks - 1 - sl) % 2 ? tmp : out, prev = (nks - sl) % 2 ? tmp : out;
        for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
            uint64_t cbk = t % ncb, q0 = cbk * qpb, q1 = q0 + qpb < nq ? q0 + qpb : nq;
            mm_args m = {.rows = rows[t], .nq = (uint32_t)(q1 - q0), .kp = (uint32_t)kps,
                         .nq_real = (q1 * U < N ? q1 * U : N) - q0 * U, .units = U, .half = half, .out16 = half,
                         .a = sc->where[t], .a_stride = (nks > 1 ? kps * 2 : K) * es,
                         .w = waddr + sl * qpb * kps * U * 8, .bias = sl ? 0 : baddr, .out = dst,
                         .out_row = (int64_t)(pbc * es), .out_q = (int64_t)(U * es), .out_u = (int64_t)es,
                         .acc = sl ? prev : 0, .acc_row = (int64_t)(pbc * 4)};
            size_t entry = L->tiles[t].wrk.n;
            emit_mm(L, t, &m);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        }
        if (sl + 1 < nks)
            sync_all(L);
    }
    ts_free(rows);
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rp * pbc, .addr = out, .es = (uint32_t)es};
    if (ncb > 1) {
        lw_place *o = &L->pl[n->out[0]];
        o->inner = N;
        o->cb = rp;
        o->pb = pbc;
        o->nrb = (uint32_t)ncb;
    }
    (void)Y;
    sync_all(L);
    return TS_OK;
}


static float cv_weight(const cv_shape *s, uint64_t m, uint64_t c, uint64_t ky, uint64_t kx)
{
    if (s->wmode == 1)
        return value(s->Wt, s->wid, m * s->C + c);
    if (s->wmode == 2)
        return value(s->Wt, s->wid, c * s->M + m);
    return value(s->Wt, s->wid, ((m * s->C + c) * s->kh + ky) * s->kw + kx);
}

/* A Conv worker's pointers for its first pixel (start row in $m1 from emit_start_row): $m10 into
 * the table bt of pixel offsets, $m3 into the output out (a word per pixel); $m1 = rw - 1 pixels
 * to go after it, $m11 = r11 (the AMP step count the kernel reads). */
static void emit_pixel_ptrs(lw *L, uint32_t t, uint64_t bt, uint64_t out, uint32_t rw, int32_t r11)
{
    W(t, SHLI, RM(10), RM(1), 2);
    W(t, SETZI, RM(3), (int32_t)bt, 0);
    W(t, ADD, RM(10), RM(10), RM(3));
    W(t, SHLI, RM(3), RM(1), 2);
    W(t, SETZI, RM(4), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(4));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(11), r11, 0);
}

/* The end of a Conv worker's pixel loop: the pixel's AMP groups (full whole groups of m->units
 * outputs, then tail outputs) from the weights at waddr, the output pointer to the next pixel,
 * back to pc `pixel` while pixels are left, exit. */
static void emit_pixel_groups(lw *L, uint32_t t, const mm_args *m, uint64_t waddr, uint32_t full, uint32_t tail,
                              size_t pixel)
{
    W(t, SETZI, RM(5), (int32_t)waddr, 0);
    W(t, SETZI, RM(8), (int32_t)m->bias, 0);
    W(t, MOV, RM(6), RM(3), 0);
    if (full) {
        W(t, SETZI, RM(7), (int32_t)full - 1, 0);
        size_t q = L->tiles[t].wrk.n;
        emit_quad(L, t, m, m->units);
        W(t, BRNZDEC, RM(7), (int32_t)q, 0);
    }
    if (tail)
        emit_quad(L, t, m, tail);
    W(t, ADDI, RM(3), RM(3), 4);
    W(t, BRNZDEC, RM(1), (int32_t)pixel, 0);
    W(t, EXIT, 0, 0, 0);
}

/* Run the routine at wrk pc `entry` on every worker of tile t with $m0 := v, wait for them. */
static void run_all_m0(lw *L, uint32_t t, size_t entry, uint64_t v)
{
    S(t, SETZI, RM(1), (int32_t)v, 0);
    S(t, RUNALL, (int32_t)entry, RM(1), 0);
    S(t, SYNC, 0, 0, 0);
}

/* Conv (batch 1, group 1, no dilation) as an im2col'd matrix product on the AMP. The output is
 * split three ways over tiles t = (gk * ngc + gc) * nrb + gr: groups of AMP units of output
 * channels (gc), blocks of output rows (gr) and parts of the input channels (gk). A tile gathers its input channels over the input rows its
 * output rows need (halo rows included), copies them into a zeroed, padded image when the Conv
 * pads, and for each of its output pixels builds the pixel's im2col row in a worker buffer (a
 * table of byte offsets within the image added to the pixel's base offset from a table of bases)
 * and multiplies it on the AMP with its coefficient blocks (its weights only: weights are split
 * over gc and gk, repeated over gr). Partial sums over gk are added in a tree, one superstep per
 * level: in level d a tile with gk = d mod 2d sends its sums to gk - d, which adds them. The output
 * stays on the gk = 0 tiles, each channel's pixels of the tile in a row of rb * Wo. */
static ts_status lower_conv_shape(lw *L, const ts_graph_node *n, lw_scr *sc, const cv_shape *s)
{
    const uint64_t C = s->C, H = s->H, Wd = s->Wd, M = s->M, kh = s->kh, kw = s->kw, sh = s->sh, sw = s->sw;
    const uint64_t Ho = s->Ho, Wo = s->Wo, P = Ho * Wo;
    /* f16 (f16v4amp: U16 units of 4 inputs) when asked for, the channels are even (the inputs are
     * converted in pairs) and the AMP has 2, 4 or 8 f16 units; else f32 (f32v2amp: units of 2) */
    const bool half = s->half && C % 2 == 0 && L->units16 >= 2 && L->units16 <= 8 && L->units16 % 2 == 0;
    const uint32_t U = half ? L->units16 : L->units;
    const uint64_t per = half ? 4 : 2, eb = half ? 2 : 4; /* inputs per AMP step; bytes of a kernel input */
    const uint64_t nq = cdiv(M, U);
    const bool pad = s->pt || s->pl || s->pbot || s->pr;
    /* a kernel larger than 1x1 reads a channel-last image: every pixel's K inputs are kh runs of
     * kw x channels in memory, read by the AMP loop itself (no im2col row) */
    const bool hwc = kh * kw > 1;
    const uint64_t WI = Wd + s->pl + s->pr;
    /* The plan: groups per tile qpt, row blocks nrb, input-channel parts nks, by an estimate of
     * the tile cycles (issues: the six workers fill every cycle) under two memory limits: the
     * operator's buffers within 1/3 of the tile, and its weights per tile within 1.05 times an
     * even share of them over the chip (weights stay for the whole run). */
    uint64_t qpt = 0, nrb = 0, nks = 0, rb = 0, cpk = 0;
    const lw_place *XP = &L->pl[n->in[0]];
    {
        double best = 0;
        uint64_t tb = L->p->target.sram_bytes / 3;
        /* AMP loop issues per input of a group: (U + 2) per step of per inputs, taken as 2 for f32
         * (as calibrated) and scaled by the f16 loop's ratio to it */
        const double ki = half ? 2.0 * (U + 2) * 2 / (6.0 * (double)per) : 2.0;
        uint64_t wb = (uint64_t)(1.05 * (double)(M * C * kh * kw * eb) / (double)L->T);
        if (wb < 2048)
            wb = 2048;
        for (uint64_t q = cdiv(nq, L->T); q <= nq; q = q * 2 > nq && q < nq ? nq : q * 2) {
            uint64_t ng = cdiv(nq, q), sp = L->T / ng;
            for (uint64_t r = Ho; r >= 1; r--) {
                uint64_t nr_ = cdiv(Ho, r);
                if (r < Ho && cdiv(Ho, r + 1) == nr_)
                    continue; /* the same number of blocks with fewer rows */
                if (nr_ > sp)
                    break;
                /* f16 on images of 14 x 14 or less: whole images only. Blocked outputs of small
                 * images are sent to the next operator's many channel groups in pieces per channel
                 * and row block; on ResNet-50's 14 x 14 layers that took tile 0's supervisor code
                 * past the tile memory (the cost below does not price code). */
                if (half && nr_ > 1 && P <= 196)
                    continue;
                for (uint64_t k = 1; k <= sp / nr_; k = k * 2 > sp / nr_ && k < sp / nr_ ? sp / nr_ : k * 2) {
                    uint64_t cp = cdiv(C, k), nk = cdiv(C, cp);
                    if (half && cp % 2)
                        continue; /* f16 inputs are converted in channel pairs */
                    uint64_t Kt = cp * kh * kw, npx = r * Wo;
                    uint64_t band = (r - 1) * sh + kh < H + s->pt + s->pbot ? (r - 1) * sh + kh : H;
                    uint64_t cpe = (cp + per - 1) / per * per; /* channel-last image: channels padded */
                    double comp = (double)(cdiv(npx, L->workers) * L->workers) *
                                  (hwc ? (double)(8 + (double)q * (ki * (double)(kh * kw * cpe) + 12 + 2 * kh))
                                       : (double)(3 * Kt + 8) + (double)q * (ki * (double)Kt + 12));
                    /* gathering: what a tile receives, or what a tile holding the input sends
                     * (every receiver of its words in turn), whichever is more */
                    double recv = (double)(cp * band * Wd);
                    double send = recv * (double)(ng * nr_ * nk) / (double)(XP->ntiles ? XP->ntiles : 1);
                    double gat = 1.5 * (recv > send ? recv : send) + (pad || hwc ? 3.0 * (double)(cpe * band * WI) : 0);
                    double lev = 0;
                    for (uint64_t d = 1; d < nk; d *= 2)
                        lev++;
                    double red = lev * (5.0 * (double)(q * U * npx) + 150);
                    /* exchange rounds: about one per input tile a tile reads from */
                    double rounds = XP->inner ? (double)(cdiv(cp, XP->cb) + 1) * (double)(band * Wd / XP->pb + 1)
                                              : (double)(cp * band * Wd / XP->chunk + 1);
                    if (nr_ == 1 && !XP->inner)
                        rounds = (double)(cp * H * Wd / XP->chunk + 1);
                    /* and the next operator's: about one per group of this output's channels (f16:
                     * per group and row block, and on images of 28 x 28 or less 16 cycles per
                     * channel and row block, as a blocked output is sent in pieces per channel and
                     * row block, each a few supervisor instructions; tried on ResNet-50: without
                     * it layer3.0's downsample took 2.4 M cycles instead of 1.5 M, with it also on
                     * 56 x 56 layer1.0's 0.9 M instead of 0.3 M; the f32 plans, calibrated without
                     * these terms, keep the old one) */
                    double cost = comp + gat + red + 250.0 * (rounds + (double)(half ? ng * nr_ : ng)) +
                                  (half && nr_ > 1 && P <= 784 ? 16.0 * (double)(M * nr_) : 0);
                    double mem = 4.0 * (double)(cp * band * Wd + (hwc ? cpe * band * WI * eb / 4 : pad ? cpe * band * WI : 0) +
                                                (hwc ? 0 : L->workers * (Kt + 1)) + q * U * npx * (nk > 1 ? 3 : 1));
                    double wt = (double)eb * (double)(q * U * Kt);
                    /* past a limit, every byte costs as much as 1024 cycles */
                    cost += 1024.0 * ((mem > (double)tb ? mem - (double)tb : 0) + (wt > (double)wb ? wt - (double)wb : 0));
                    if (!qpt || cost < best) {
                        qpt = q, nrb = nr_, rb = r, nks = nk, cpk = cp;
                        best = cost;
                    }
                }
            }
            if (q == nq)
                break;
        }
    }
    uint64_t ngc = cdiv(nq, qpt);
    uint32_t tn = (uint32_t)(ngc * nrb * nks), tout = (uint32_t)(ngc * nrb);
    uint64_t pbk = rb * Wo;                      /* output pixels per channel row of a tile */
    uint64_t HB = (rb - 1) * sh + kh;            /* padded image rows of a row block */
    /* input rows of each row block: [ya, yb) of the image rows from iy_lo on */
    uint64_t NB = 0;
    for (uint64_t gr = 0; gr < nrb; gr++) {
        int64_t lo = (int64_t)(gr * rb * sh) - (int64_t)s->pt;
        uint64_t oy1 = (gr + 1) * rb < Ho ? (gr + 1) * rb : Ho;
        int64_t hi = (int64_t)((oy1 - 1) * sh + kh) - (int64_t)s->pt;
        uint64_t ya = lo > 0 ? (uint64_t)lo : 0, yb = hi < (int64_t)H ? (uint64_t)hi : H;
        if (yb > ya && yb - ya > NB)
            NB = yb - ya;
    }
    if (nrb == 1)
        NB = H;
    uint64_t HI = pad || hwc ? HB : NB, WIm = pad || hwc ? WI : Wd; /* the image the kernel reads */
    uint64_t Cs = hwc ? (cpk + per - 1) / per * per : 1; /* channel-last: channels per image pixel */
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t gr = t % nrb, gk = t / tout;
        uint64_t ci0 = gk * cpk, ci1 = ci0 + cpk < C ? ci0 + cpk : C;
        int64_t lo = (int64_t)(gr * rb * sh) - (int64_t)s->pt;
        uint64_t ya = lo > 0 ? (uint64_t)lo : 0;
        if (nrb == 1) { /* whole images: one run of channels */
            sc->lo[t] = ci0 * H * Wd;
            sc->hi[t] = ci1 * H * Wd;
            sc->nr[t] = 1;
        } else {
            uint64_t oy1 = (gr + 1) * rb < Ho ? (gr + 1) * rb : Ho;
            int64_t hi = (int64_t)((oy1 - 1) * sh + kh) - (int64_t)s->pt;
            uint64_t yb = hi < (int64_t)H ? (uint64_t)hi : H;
            sc->lo[t] = ci0 * H * Wd + ya * Wd;
            sc->hi[t] = sc->lo[t] + (yb > ya ? yb - ya : 0) * Wd;
            sc->nr[t] = (uint32_t)(ci1 - ci0);
        }
    }
    ts_status rc = gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, H * Wd, NB * Wd, false, sc->where);
    if (rc != TS_OK)
        return rc;
    uint64_t img = pad || hwc ? talloc(L, hwc ? Cs * HI * WIm * eb : cpk * HI * WIm * 4) : 0;
    uint64_t kpm = hwc ? kh * kw * Cs / per : cdiv(cpk * kh * kw, per);
    uint64_t colbuf = hwc ? 0 : talloc(L, L->workers * kpm * 8);
    uint64_t wbytes = qpt * kpm * U * 8, bbytes = qpt * U * 4;
    uint64_t waddr = salloc(L, wbytes), baddr = s->Bt ? salloc(L, bbytes) : 0;
    uint64_t out = alloc(L, qpt * U * pbk * 4), alt = 0, rbuf = 0;
    if (nks > 1) {
        alt = alloc(L, qpt * U * pbk * 4);
        rbuf = talloc(L, qpt * U * pbk * 4);
    }
    uint32_t *bv = ts_calloc(pbk, 4);
    float *w = ts_calloc(wbytes / 4 + bbytes / 4, 4);
    if (!bv || !w) {
        ts_free(bv);
        ts_free(w);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    }
    for (uint64_t ly = 0; ly < rb; ly++)
        for (uint64_t ox = 0; ox < Wo; ox++)
            bv[ly * Wo + ox] = (uint32_t)((ly * sh * WIm + ox * sw) * Cs * (hwc ? eb : 4));
    uint64_t bt = stable(L, bv, pbk * 4, tn, &rc);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        uint64_t gr = t % nrb, gc = t / nrb % ngc, gk = t / tout;
        uint64_t ci0 = gk * cpk, cp = ci0 + cpk < C ? cpk : C - ci0, K = hwc ? kh * kw * Cs : cp * kh * kw;
        uint64_t kp = cdiv(K, per);
        uint64_t q0 = gc * qpt, q1 = q0 + qpt < nq ? q0 + qpt : nq;
        uint64_t oy0 = gr * rb, oy1 = oy0 + rb < Ho ? oy0 + rb : Ho, npx = (oy1 - oy0) * Wo;
        int64_t iylo = (int64_t)(oy0 * sh) - (int64_t)s->pt;
        uint64_t ya = iylo > 0 ? (uint64_t)iylo : 0;
        uint64_t nbt = (sc->hi[t] - sc->lo[t]) / Wd;
        if (nrb == 1)
            nbt = H;
        bool bias = s->Bt && gk == 0;
        /* this tile's coefficient blocks [q][k/per][u][per] (f16: halves) and bias (f32) */
        memset(w, 0, wbytes + bbytes);
        uint16_t *w16 = (uint16_t *)w;
        float *bb = w + wbytes / 4;
        for (uint64_t q = q0; q < q1; q++)
            for (uint32_t u = 0; u < U; u++) {
                uint64_t m = q * U + u;
                if (m >= M)
                    continue;
                for (uint64_t k = 0; k < K; k++) {
                    float v = 0;
                    if (!hwc)
                        v = cv_weight(s, m, ci0 + k / (kh * kw), k / kw % kh, k % kw);
                    else if (k % Cs < cp) /* k = (ky * kw + kx) * Cs + c */
                        v = cv_weight(s, m, ci0 + k % Cs, k / Cs / kw, k / Cs % kw);
                    uint64_t at = (((q - q0) * kp + k / per) * U + u) * per + k % per;
                    if (half)
                        w16[at] = ts_f32_to_f16(v);
                    else
                        w[at] = v;
                }
                if (bias)
                    bb[(q - q0) * U + u] = value(s->Bt, s->bid, m);
            }
        rc = seg(L, t, waddr, w, (q1 - q0) * kp * U * 8);
        if (rc == TS_OK && bias)
            rc = seg(L, t, baddr, bb, bbytes);
        if (rc != TS_OK)
            break;
        uint64_t im = pad || hwc ? img : sc->where[t];
        uint64_t rwc = cdiv(cp, L->workers);
        if (hwc) {
            /* zero the image (rows over the workers), then copy the channels in, each at its
             * place in every pixel (channels over the workers; two runs, since the last workers'
             * blocks overlap) */
            uint64_t rwh = cdiv(HI, L->workers);
            size_t entry = L->tiles[t].wrk.n;
            emit_start_row(L, t, (uint32_t)HI, (uint32_t)rwh);
            W(t, MULI, RM(3), RM(1), (int32_t)(WIm * Cs * eb));
            W(t, SETZI, RM(4), (int32_t)img, 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, SETZI, RA(0), 0, 0);
            W(t, SETZI, RM(5), (int32_t)(rwh * WIm * Cs * eb / 4), 0);
            W(t, RPT, RM(5), 1, 0);
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
            entry = L->tiles[t].wrk.n;
            if (half) {
                /* channel pairs over the workers: both rounded to f16 into one word of the pixel */
                uint64_t rwp = cdiv(cp / 2, L->workers), cs = NB * Wd * 4;
                emit_start_row(L, t, (uint32_t)(cp / 2), (uint32_t)rwp);
                W(t, MULI, RM(2), RM(1), (int32_t)(2 * cs));
                W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
                W(t, ADD, RM(2), RM(2), RM(3));
                W(t, SHLI, RM(3), RM(1), 2);
                W(t, SETZI, RM(4), (int32_t)(img + ((uint64_t)((int64_t)ya - iylo) * WIm + s->pl) * Cs * 2), 0);
                W(t, ADD, RM(3), RM(3), RM(4));
                W(t, SETZI, RM(5), (int32_t)rwp - 1, 0);
                W(t, SETZI, RM(8), (int32_t)Wd, 0);
                size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
                size_t row = W(t, RPT, RM(8), 4, 0);
                W(t, LD32, RA(1), RM(2), (int32_t)cs);
                W(t, LD32STEP, RA(0), RM(2), 4);
                W(t, F32V2TOF16, RA(0), RA(0), 0);
                W(t, ST32STEP, RA(0), RM(3), (int32_t)(Cs * 2));
                W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * Cs * 2));
                W(t, BRNZDEC, RM(6), (int32_t)row, 0);
                W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4 + cs));
                W(t, ADDI, RM(3), RM(3), (int32_t)(4 - (int64_t)(nbt * WIm * Cs * 2)));
                W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
                W(t, EXIT, 0, 0, 0);
                run_all(L, t, entry);
                goto amp;
            }
            emit_start_row(L, t, (uint32_t)cp, (uint32_t)rwc);
            W(t, MULI, RM(2), RM(1), (int32_t)(NB * Wd * 4));
            W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(2), RM(2), RM(3));
            W(t, SHLI, RM(3), RM(1), 2);
            W(t, SETZI, RM(4), (int32_t)(img + ((uint64_t)((int64_t)ya - iylo) * WIm + s->pl) * Cs * 4), 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
            W(t, SETZI, RM(8), (int32_t)Wd, 0);
            size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
            size_t row = W(t, RPT, RM(8), 2, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, ST32STEP, RA(0), RM(3), (int32_t)(Cs * 4));
            W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * Cs * 4));
            W(t, BRNZDEC, RM(6), (int32_t)row, 0);
            W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4));
            W(t, ADDI, RM(3), RM(3), (int32_t)(4 - (int64_t)(nbt * WIm * Cs * 4)));
            W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        } else if (pad) {
            /* zero the image (its padding), then copy the rows in (channels over the workers; two
             * runs, since the last workers' channel blocks overlap) */
            size_t entry = L->tiles[t].wrk.n;
            emit_start_row(L, t, (uint32_t)cp, (uint32_t)rwc);
            W(t, MULI, RM(3), RM(1), (int32_t)(HI * WIm * 4));
            W(t, SETZI, RM(4), (int32_t)img, 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, SETZI, RA(0), 0, 0);
            W(t, SETZI, RM(5), (int32_t)(rwc * HI * WIm), 0);
            W(t, RPT, RM(5), 1, 0);
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
            entry = L->tiles[t].wrk.n;
            emit_start_row(L, t, (uint32_t)cp, (uint32_t)rwc);
            W(t, MULI, RM(2), RM(1), (int32_t)(NB * Wd * 4));
            W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(2), RM(2), RM(3));
            W(t, MULI, RM(3), RM(1), (int32_t)(HI * WIm * 4));
            W(t, SETZI, RM(4), (int32_t)(img + ((uint64_t)((int64_t)ya - iylo) * WIm + s->pl) * 4), 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, SETZI, RM(5), (int32_t)rwc - 1, 0);
            W(t, SETZI, RM(8), (int32_t)Wd, 0);
            size_t ch = W(t, SETZI, RM(6), (int32_t)nbt - 1, 0);
            size_t row = W(t, RPT, RM(8), 2, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, ADDI, RM(3), RM(3), (int32_t)((WIm - Wd) * 4));
            W(t, BRNZDEC, RM(6), (int32_t)row, 0);
            W(t, ADDI, RM(2), RM(2), (int32_t)((NB - nbt) * Wd * 4));
            W(t, ADDI, RM(3), RM(3), (int32_t)((HI - nbt) * WIm * 4));
            W(t, BRNZDEC, RM(5), (int32_t)ch, 0);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        }
    amp:;
        /* pixels over the workers: im2col row, then the AMP groups of this tile */
        uint64_t Kpad = 2 * kp; /* 32-bit words of a row */
        uint32_t rw = (uint32_t)cdiv(npx, L->workers);
        mm_args m = {.rows = (uint32_t)npx, .nq = (uint32_t)(q1 - q0), .kp = (uint32_t)kp,
                     .nq_real = (q1 * U < M ? q1 * U : M) - q0 * U, .units = U, .half = half, .a_stride = 0, .w = waddr,
                     .bias = bias ? baddr : 0, .out = out, .out_row = 4, .out_q = (int64_t)(U * pbk * 4),
                     .out_u = (int64_t)(pbk * 4)};
        uint32_t full = (uint32_t)(m.nq_real / U), tail = (uint32_t)(m.nq_real % U);
        size_t entry = L->tiles[t].wrk.n;
        if (hwc) {
            m.taps = (uint32_t)kh;
            m.tap_skip = (int32_t)((WIm - kw) * Cs * eb);
            emit_start_row(L, t, (uint32_t)npx, rw);
            emit_pixel_ptrs(L, t, bt, out, rw, (int32_t)(kw * Cs / per));
            size_t hpix = W(t, LD32STEP, RM(9), RM(10), 4);
            W(t, ADD, RM(2), RM(9), RM(0));
            emit_pixel_groups(L, t, &m, waddr, full, tail, hpix);
            run_all_m0(L, t, entry, im);
            continue;
        }
        emit_start_row(L, t, (uint32_t)npx, rw);
        W(t, GET, RM(2), 2, 0);
        W(t, MULI, RM(2), RM(2), (int32_t)(Kpad * 4));
        W(t, SETZI, RM(3), (int32_t)colbuf, 0);
        W(t, ADD, RM(2), RM(2), RM(3));
        emit_pixel_ptrs(L, t, bt, out, rw, (int32_t)kp);
        W(t, SETZI, RA(1), 0, 0);
        size_t pix = W(t, LD32STEP, RM(9), RM(10), 4);
        W(t, ADD, RM(9), RM(9), RM(0));
        W(t, MOV, RM(14), RM(2), 0);
        /* the pixel's im2col row: channel by channel, kernel row by row (2 issues per element; f16:
         * channel pairs rounded into one word, 4 issues per pair, then zero words to a whole step) */
        if (half) {
            W(t, SETZI, RM(13), (int32_t)(cp / 2), 0);
            W(t, RPT, RM(13), 4, 0);
            W(t, LD32, RA(1), RM(9), (int32_t)(HI * WIm * 4));
            W(t, LD32STEP, RA(0), RM(9), (int32_t)(2 * HI * WIm * 4));
            W(t, F32V2TOF16, RA(0), RA(0), 0);
            W(t, ST32STEP, RA(0), RM(14), 4);
            if (cp / 2 < Kpad) /* at most one word: kp = ceil(cp / 4) steps of two words */
                W(t, SETZI, RA(1), 0, 0);
            for (uint64_t z = cp / 2; z < Kpad; z++)
                W(t, ST32STEP, RA(1), RM(14), 4);
        } else if (kh * kw == 1) {
            W(t, SETZI, RM(13), (int32_t)cp, 0);
            W(t, RPT, RM(13), 2, 0);
            W(t, LD32STEP, RA(0), RM(9), (int32_t)(HI * WIm * 4));
            W(t, ST32STEP, RA(0), RM(14), 4);
        } else {
            W(t, SETZI, RM(7), (int32_t)cp - 1, 0);
            W(t, SETZI, RM(13), (int32_t)kw, 0);
            size_t ch = W(t, MOV, RM(4), RM(9), 0);
            W(t, SETZI, RM(8), (int32_t)kh - 1, 0);
            size_t kr = W(t, MOV, RM(12), RM(4), 0);
            W(t, RPT, RM(13), 2, 0);
            W(t, LD32STEP, RA(0), RM(12), 4);
            W(t, ST32STEP, RA(0), RM(14), 4);
            W(t, ADDI, RM(4), RM(4), (int32_t)(WIm * 4));
            W(t, BRNZDEC, RM(8), (int32_t)kr, 0);
            W(t, ADDI, RM(9), RM(9), (int32_t)(HI * WIm * 4));
            W(t, BRNZDEC, RM(7), (int32_t)ch, 0);
        }
        if (K % 2) /* the pad position: zero (its weight is zero too) */
            W(t, ST32, RA(1), RM(14), 0);
        emit_pixel_groups(L, t, &m, waddr, full, tail, pix);
        run_all_m0(L, t, entry, im);
    }
    ts_free(bv);
    ts_free(w);
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    sync_all(L);
    /* partial sums over the input channels: a tree, one superstep per level; a receiver writes
     * cur + received into the other buffer (so workers whose blocks overlap write the same values) */
    uint64_t fin = out;
    for (uint64_t d = 1; d < nks; d *= 2) {
        for (uint32_t t = 0; t < tout; t++) {
            uint64_t gc = t / nrb, q0 = gc * qpt, q1 = q0 + qpt < nq ? q0 + qpt : nq;
            uint64_t nw = (q1 - q0) * U * pbk;
            /* the tile's current buffer: out after an even number of additions */
            for (uint64_t gk = 0; gk + d < nks; gk += 2 * d) {
                uint32_t tr = (uint32_t)(gk * tout + t), ts_ = (uint32_t)((gk + d) * tout + t);
                uint64_t adds_r = 0, adds_s = 0;
                for (uint64_t e = 1; e < d; e *= 2) {
                    adds_r += gk + e < nks;
                    adds_s += gk + d + e < nks;
                }
                uint64_t cur = adds_r % 2 ? alt : out, nxt = adds_r % 2 ? out : alt;
                uint64_t scur = adds_s % 2 ? alt : out;
                S(tr, SETZI, RM(5), (int32_t)rbuf, 0);
                S(tr, SETZI, RM(6), (int32_t)ts_, 0);
                S(tr, RECV, RM(5), RM(6), (int32_t)nw);
                S(ts_, SETZI, RM(5), (int32_t)scur, 0);
                S(ts_, SETZI, RM(6), (int32_t)tr, 0);
                S(ts_, SEND, RM(5), RM(6), (int32_t)nw);
                S(tr, RXWAIT, 0, 0, 0);
                uint32_t rw = (uint32_t)cdiv(nw, L->workers);
                size_t entry = L->tiles[tr].wrk.n;
                emit_start_row(L, tr, (uint32_t)nw, rw);
                W(tr, SHLI, RM(1), RM(1), 2);
                W(tr, SETZI, RM(2), (int32_t)cur, 0);
                W(tr, ADD, RM(2), RM(2), RM(1));
                W(tr, SETZI, RM(5), (int32_t)rbuf, 0);
                W(tr, ADD, RM(5), RM(5), RM(1));
                W(tr, SETZI, RM(3), (int32_t)nxt, 0);
                W(tr, ADD, RM(3), RM(3), RM(1));
                W(tr, SETZI, RM(4), (int32_t)rw, 0);
                W(tr, RPT, RM(4), 4, 0);
                W(tr, LD32STEP, RA(0), RM(2), 4);
                W(tr, LD32STEP, RA(1), RM(5), 4);
                W(tr, F32ADD, RA(0), RA(0), RA(1));
                W(tr, ST32STEP, RA(0), RM(3), 4);
                W(tr, EXIT, 0, 0, 0);
                run_all(L, tr, entry);
                if (gk == 0)
                    fin = nxt;
            }
        }
        sync_all(L);
    }
    if (alt)
        release(L, fin == out ? alt : out);
    lw_place *o = &L->pl[n->out[0]];
    *o = (lw_place){.ntiles = tout, .chunk = qpt * U * pbk, .addr = fin, .es = 4};
    if (nrb > 1) {
        o->inner = P;
        o->cb = qpt * U;
        o->pb = pbk;
        o->nrb = (uint32_t)nrb;
    }
    return TS_OK;
}

static ts_status lower_conv(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph *g = L->g;
    const ts_graph_tensor *X = ts_graph_get_tensor(g, n->in[0]);
    const ts_graph_tensor *Wt = ts_graph_get_tensor(g, n->in[1]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(g, n->out[0]);
    const ts_graph_attrs *at = &n->attrs;
    if (X->rank != 4 || X->dims[0] != 1)
        return unsupported(L, n, "a batch other than 1");
    if (at->group != 1 || at->dilations[0] != 1 || at->dilations[1] != 1)
        return unsupported(L, n, "groups or dilations");
    if (Wt->kind == TS_TENSOR_ACTIVATION || Wt->kind == TS_TENSOR_INPUT)
        return unsupported(L, n, "weights computed at run time");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    cv_shape s = {.C = (uint64_t)X->dims[1], .H = (uint64_t)X->dims[2], .Wd = (uint64_t)X->dims[3],
                  .M = (uint64_t)Wt->dims[0], .kh = (uint64_t)Wt->dims[2], .kw = (uint64_t)Wt->dims[3],
                  .sh = (uint64_t)at->strides[0], .sw = (uint64_t)at->strides[1], .pt = (uint64_t)at->pads[0],
                  .pl = (uint64_t)at->pads[1], .pbot = (uint64_t)at->pads[2], .pr = (uint64_t)at->pads[3],
                  .Ho = (uint64_t)Y->dims[2], .Wo = (uint64_t)Y->dims[3], .Wt = Wt, .wid = n->in[1],
                  .Bt = n->nin > 2 ? ts_graph_get_tensor(g, n->in[2]) : NULL, .bid = n->nin > 2 ? n->in[2] : -1,
                  .half = X->dtype == TS_DT_F16};
    return lower_conv_shape(L, n, sc, &s);
}

/* 1/d in $a4 for d > 0 in $a12: bit-trick seed, four Newton steps r = r (2 - d r); uses $a13, $a14,
 * $m8, $m9. */
static void emit_recip(lw *L, uint32_t t)
{
    W(t, MOV, RM(8), RA(12), 0);
    W(t, SETZI, RM(9), 0x7EF311C3, 0);
    W(t, SUB, RM(9), RM(9), RM(8));
    W(t, MOV, RA(4), RM(9), 0);
    W(t, LDCONST, RA(13), fbits(2.0f), 0);
    for (int i = 0; i < 4; i++) {
        W(t, F32MUL, RA(14), RA(12), RA(4));
        W(t, F32SUB, RA(14), RA(13), RA(14));
        W(t, F32MUL, RA(4), RA(4), RA(14));
    }
}

static size_t recip_len(void) { return 5 + 12; }

static void emit_exp(lw *L, uint32_t t);
static size_t exp_len(void);

/* Gelu (erf form) of $a0 into $a2: 0.5 (x + |x| erf(|x|/sqrt 2)), erf(y) = 1 - q(s) e^(-y^2), s =
 * 1/(1 + p y), q of degree 5 (Abramowitz and Stegun 7.1.26, |error| <= 1.5e-7); uses $a1..$a15,
 * $m8, $m9. */
static void emit_gelu(lw *L, uint32_t t)
{
    static const float c[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    W(t, SETZI, RA(15), 0, 0);
    W(t, F32SUB, RA(2), RA(15), RA(0));
    W(t, F32MAX, RA(2), RA(0), RA(2));          /* |x| */
    W(t, LDCONST, RA(11), fbits(0.707106781f), 0);
    W(t, F32MUL, RA(11), RA(2), RA(11));        /* y = |x| / sqrt 2 */
    W(t, F32MUL, RA(1), RA(11), RA(11));
    W(t, F32SUB, RA(1), RA(15), RA(1));         /* -y^2 */
    emit_exp(L, t);                             /* $a3 = e^(-y^2) */
    W(t, LDCONST, RA(12), fbits(0.3275911f), 0);
    W(t, LDCONST, RA(13), fbits(1.0f), 0);
    W(t, F32MAC, RA(13), RA(12), RA(11));
    W(t, MOV, RA(12), RA(13), 0);               /* 1 + p y */
    emit_recip(L, t);                           /* $a4 = s */
    W(t, LDCONST, RA(12), fbits(c[4]), 0);
    int acc = 12;
    for (int d = 3; d >= 0; d--) {
        int nx = acc == 12 ? 13 : 12;
        W(t, LDCONST, RA(nx), fbits(c[d]), 0);
        W(t, F32MAC, RA(nx), RA(acc), RA(4));
        acc = nx;
    }
    W(t, F32MUL, RA(acc), RA(acc), RA(4));      /* q(s) */
    W(t, F32MUL, RA(acc), RA(acc), RA(3));
    W(t, LDCONST, RA(14), fbits(1.0f), 0);
    W(t, F32SUB, RA(14), RA(14), RA(acc));      /* erf(y) */
    W(t, F32MUL, RA(2), RA(2), RA(14));
    W(t, F32ADD, RA(2), RA(2), RA(0));
    W(t, LDCONST, RA(14), fbits(0.5f), 0);
    W(t, F32MUL, RA(2), RA(2), RA(14));
}

static size_t gelu_len(void) { return 7 + exp_len() + 4 + recip_len() + 1 + 8 + 2 + 2 + 2 + 2; }

/* Elementwise ops on x's chunks: Relu, Gelu; Add, Sub, Mul of two tensors of the same shape, and
 * Add, Sub, Mul, Div by a weight or constant broadcast over x (its elements the trailing axes of
 * x, or one value). The broadcast operand is initial data arranged per tile as x's elements there
 * (Div: its f32 reciprocals, so x / b is computed as x * (1/b)). */
static ts_status lower_eltwise(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    /* Add and Mul of a weight or constant and an activation: the activation is x */
    bool swap = n->nin == 2 && (n->op == TS_OP_ADD || n->op == TS_OP_MUL) &&
                ts_graph_get_tensor(L->g, n->in[0])->kind != TS_TENSOR_ACTIVATION &&
                ts_graph_get_tensor(L->g, n->in[0])->kind != TS_TENSOR_INPUT;
    int x = n->in[swap ? 1 : 0], y = n->nin == 2 ? n->in[swap ? 0 : 1] : -1;
    ts_status rc = need_placed(L, n, x);
    if (rc != TS_OK)
        return rc;
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, x);
    uint64_t total = (uint64_t)ts_graph_tensor_elems(X);
    const lw_place P = L->pl[x];
    bool two = n->nin == 2, bcast = false;
    const ts_graph_tensor *B = two ? ts_graph_get_tensor(L->g, y) : NULL;
    uint64_t nb = B ? (uint64_t)ts_graph_tensor_elems(B) : 0;
    if (two && (B->kind == TS_TENSOR_WEIGHT || B->kind == TS_TENSOR_CONST)) {
        bcast = true;
        int64_t tail = 1; /* nb must be the product of x's last axes (after B's leading 1s) */
        bool ok = nb == 1;
        for (int a = X->rank - 1; a >= 0 && !ok && tail < (int64_t)nb; a--)
            ok = (tail *= X->dims[a]) == (int64_t)nb;
        if (!ok)
            return unsupported(L, n, "a broadcast operand that is not one value or x's trailing axes");
    } else if (two) {
        if (nb != total)
            return unsupported(L, n, "broadcasting an activation");
        if (n->op == TS_OP_DIV)
            return unsupported(L, n, "dividing by an activation");
        if ((rc = need_placed(L, n, y)) != TS_OK)
            return rc;
    }
    uint32_t tn = P.ntiles;
    uint64_t *cnts = ts_calloc(tn ? tn : 1, sizeof *cnts);
    if (!cnts)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    for (uint32_t t = 0; t < tn; t++) {
        if (P.inner) { /* blocked: the tile's channels, each a run of its pixels */
            uint64_t c0 = t / P.nrb * P.cb, p0 = t % P.nrb * P.pb, C = total / P.inner;
            uint64_t nc = c0 < C ? (C - c0 < P.cb ? C - c0 : P.cb) : 0;
            uint64_t len = P.inner - p0 < P.pb ? P.inner - p0 : P.pb;
            sc->lo[t] = c0 * P.inner + p0;
            sc->hi[t] = sc->lo[t] + (nc ? len : 0);
            sc->nr[t] = (uint32_t)nc;
            cnts[t] = nc ? (nc - 1) * P.pb + len : 0;
        } else {
            sc->lo[t] = t * P.chunk < total ? t * P.chunk : total;
            sc->hi[t] = (t + 1) * P.chunk < total ? (t + 1) * P.chunk : total;
            sc->nr[t] = 1;
            cnts[t] = sc->hi[t] - sc->lo[t];
        }
    }
    if (two && !bcast &&
        (rc = gather(L, y, tn, sc->lo, sc->hi, sc->nr, P.inner, P.pb, false, sc->where)) != TS_OK) {
        ts_free(cnts);
        return rc;
    }
    if (bcast) { /* per tile: b[e mod nb] for each of x's elements e there, at x's offsets */
        uint64_t baddr = salloc(L, P.chunk * 4);
        float *v = ts_calloc(P.chunk ? P.chunk : 1, 4);
        if (!v)
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory for the operand of '%s'", n->name);
        for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
            uint64_t len = sc->hi[t] - sc->lo[t], dstr = P.inner ? P.pb : 0;
            for (uint32_t j = 0; j < sc->nr[t]; j++)
                for (uint64_t i = 0; i < len; i++) {
                    float b = value(B, y, (sc->lo[t] + j * P.inner + i) % nb);
                    v[j * dstr + i] = n->op == TS_OP_DIV ? (float)(1.0 / (double)b) : b;
                }
            sc->where[t] = baddr;
            rc = seg(L, t, baddr, v, cnts[t] * 4);
        }
        ts_free(v);
        if (rc != TS_OK) {
            ts_free(cnts);
            return rc;
        }
    }
    uint64_t out = alloc(L, P.chunk * 4);
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t cnt = cnts[t];
        if (!cnt)
            continue;
        /* every worker a block of ceil(cnt / workers) elements (the last blocks overlap) */
        uint32_t rw = (uint32_t)((cnt + L->workers - 1) / L->workers);
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)cnt, rw);
        W(t, SHLI, RM(1), RM(1), 2);
        W(t, SETZI, RM(2), (int32_t)P.addr, 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(4), (int32_t)rw, 0);
        if (two) {
            W(t, SETZI, RM(5), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(5), RM(5), RM(1));
            W(t, RPT, RM(4), 4, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, LD32STEP, RA(1), RM(5), 4);
            if (n->op == TS_OP_ADD)
                W(t, F32ADD, RA(0), RA(0), RA(1));
            else if (n->op == TS_OP_SUB)
                W(t, F32SUB, RA(0), RA(0), RA(1));
            else
                W(t, F32MUL, RA(0), RA(0), RA(1));
            W(t, ST32STEP, RA(0), RM(3), 4);
        } else if (n->op == TS_OP_GELU) {
            W(t, RPT, RM(4), (int32_t)(gelu_len() + 2), 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            emit_gelu(L, t);
            W(t, ST32STEP, RA(2), RM(3), 4);
        } else {
            W(t, SETZI, RA(1), 0, 0);
            W(t, RPT, RM(4), 3, 0);
            W(t, LD32STEP, RA(0), RM(2), 4);
            W(t, F32MAX, RA(0), RA(0), RA(1));
            W(t, ST32STEP, RA(0), RM(3), 4);
        }
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    ts_free(cnts);
    use_tiles(L, tn);
    L->pl[n->out[0]] = P;
    L->pl[n->out[0]].addr = out;
    sync_all(L);
    return TS_OK;
}

/* exp(x) for x in $a1 (x <= 0), result in $a3; uses $a5..$a10, $m9. 2^x·log2e = 2^n · 2^f with n =
 * trunc(y), f in (-1, 0]; 2^f = e^t, t = f·ln 2, by a degree-8 Taylor polynomial (|error| < 1e-7). */
static void emit_exp(lw *L, uint32_t t)
{
    W(t, LDCONST, RA(5), fbits(-87.0f), 0);
    W(t, F32MAX, RA(1), RA(1), RA(5));
    W(t, LDCONST, RA(5), fbits(1.44269504f), 0);
    W(t, F32MUL, RA(5), RA(1), RA(5));      /* y */
    W(t, F32TOI32, RA(6), RA(5), 0);        /* n */
    W(t, F32FROMI32, RA(7), RA(6), 0);
    W(t, F32SUB, RA(5), RA(5), RA(7));      /* f */
    W(t, LDCONST, RA(7), fbits(0.693147181f), 0);
    W(t, F32MUL, RA(5), RA(5), RA(7));      /* t */
    static const double inv_fact[9] = {1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                       1.0 / 40320};
    W(t, LDCONST, RA(8), fbits((float)inv_fact[8]), 0);
    int acc = 8;
    for (int d = 7; d >= 0; d--) {
        int nx = acc == 8 ? 9 : 8;
        W(t, LDCONST, RA(nx), fbits((float)inv_fact[d]), 0);
        W(t, F32MAC, RA(nx), RA(acc), RA(5)); /* c_d + p*t */
        acc = nx;
    }
    W(t, MOV, RM(9), RA(6), 0);
    W(t, ADDI, RM(9), RM(9), 127);
    W(t, SHLI, RM(9), RM(9), 23);
    W(t, MOV, RA(10), RM(9), 0);             /* 2^n */
    W(t, F32MUL, RA(3), RA(acc), RA(10));
}

static size_t exp_len(void) { return 9 + 1 + 16 + 5; }

/* Softmax over the last axis: rows partitioned over tiles; per row max, exp and sum, 1/sum by
 * Newton's iteration, scale. */
static ts_status lower_softmax(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + X->rank : n->attrs.axis;
    if (axis != X->rank - 1)
        return unsupported(L, n, "an axis other than the last");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t Lw = (uint64_t)X->dims[X->rank - 1], R = (uint64_t)ts_graph_tensor_elems(X) / Lw;
    uint64_t rp = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * Lw;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * Lw;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t out = alloc(L, rp * Lw * 4);
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t rows = (sc->hi[t] - sc->lo[t]) / Lw;
        uint32_t rw = (uint32_t)((rows + L->workers - 1) / L->workers);
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)rows, rw);
        W(t, MULI, RM(1), RM(1), (int32_t)(Lw * 4));
        W(t, SETZI, RM(2), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(10), (int32_t)Lw - 1, 0);
        W(t, SETZI, RM(11), (int32_t)Lw, 0);
        size_t row = W(t, MOV, RM(4), RM(2), 0);
        W(t, LD32STEP, RA(0), RM(4), 4);
        W(t, RPT, RM(10), 2, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32MAX, RA(0), RA(0), RA(1));
        W(t, MOV, RM(4), RM(2), 0);
        W(t, MOV, RM(5), RM(3), 0);
        W(t, SETZI, RA(2), 0, 0);
        W(t, RPT, RM(11), (int32_t)(exp_len() + 4), 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32SUB, RA(1), RA(1), RA(0));
        emit_exp(L, t);
        W(t, F32ADD, RA(2), RA(2), RA(3));
        W(t, ST32STEP, RA(3), RM(5), 4);
        /* r = 1/sum: bit-trick seed, four Newton steps r = r (2 - s r) */
        W(t, MOV, RM(8), RA(2), 0);
        W(t, SETZI, RM(9), 0x7EF311C3, 0);
        W(t, SUB, RM(9), RM(9), RM(8));
        W(t, MOV, RA(4), RM(9), 0);
        W(t, LDCONST, RA(9), fbits(2.0f), 0);
        for (int i = 0; i < 4; i++) {
            W(t, F32MUL, RA(8), RA(2), RA(4));
            W(t, F32SUB, RA(8), RA(9), RA(8));
            W(t, F32MUL, RA(4), RA(4), RA(8));
        }
        W(t, MOV, RM(5), RM(3), 0);
        W(t, RPT, RM(11), 3, 0);
        W(t, LD32, RA(1), RM(5), 0);
        W(t, F32MUL, RA(1), RA(1), RA(4));
        W(t, ST32STEP, RA(1), RM(5), 4);
        W(t, ADDI, RM(2), RM(2), (int32_t)(Lw * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)(Lw * 4));
        W(t, BRNZDEC, RM(1), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rp * Lw, .addr = out, .es = 4};
    sync_all(L);
    return TS_OK;
}

/* 1/sqrt($a2) into $a4 (v > 0): seed 0x5F3759DF - bits/2, four Newton steps r = r (1.5 - v/2 r^2);
 * uses $a6..$a9 and the $m registers ma, mb. */
static void emit_rsqrt(lw *L, uint32_t t, int ma, int mb)
{
    W(t, MOV, ma, RA(2), 0);
    W(t, SHRI, ma, ma, 1);
    W(t, SETZI, mb, 0x5F3759DF, 0);
    W(t, SUB, mb, mb, ma);
    W(t, MOV, RA(4), mb, 0);
    W(t, LDCONST, RA(6), fbits(0.5f), 0);
    W(t, F32MUL, RA(7), RA(2), RA(6));
    W(t, LDCONST, RA(8), fbits(1.5f), 0);
    for (int i = 0; i < 4; i++) {
        W(t, F32MUL, RA(9), RA(4), RA(4));
        W(t, F32MUL, RA(9), RA(9), RA(7));
        W(t, F32SUB, RA(9), RA(8), RA(9));
        W(t, F32MUL, RA(4), RA(4), RA(9));
    }
}

/* $m1 := 4 w (this worker's slot), $m2 := 4 w cw (its block's byte offset in a row of Lw), $m10 :=
 * the block's length min(cw, max(0, Lw - w cw)): blocks of cw = ceil(Lw / workers) that do not
 * overlap (the sums of the blocks make the row's). */
static void emit_row_block(lw *L, uint32_t t, uint64_t Lw, uint32_t cw)
{
    W(t, GET, RM(1), 2, 0);
    W(t, MULI, RM(2), RM(1), (int32_t)cw);
    W(t, SETZI, RM(3), (int32_t)Lw, 0);
    W(t, SUB, RM(3), RM(3), RM(2));
    W(t, SETZI, RM(4), (int32_t)cw, 0);
    W(t, CMPSLT, RM(5), RM(3), RM(4));
    W(t, SUB, RM(6), RM(3), RM(4));
    W(t, MUL, RM(6), RM(6), RM(5));
    W(t, ADD, RM(10), RM(4), RM(6));
    W(t, SETZI, RM(7), 0, 0);
    W(t, CMPSLT, RM(5), RM(10), RM(7));
    W(t, MUL, RM(6), RM(10), RM(5));
    W(t, SUB, RM(10), RM(10), RM(6));
    W(t, SHLI, RM(2), RM(2), 2);
    W(t, SHLI, RM(1), RM(1), 2);
}

/* LayerNorm of `rows` rows of Lw at `in` on tile t, each row split over the workers in three runs:
 * the blocks' sums (to part[row][0][w]); the mean and the blocks' sums of (x - mean)^2 (to
 * part[row][1][w]); the mean, 1/sqrt(variance + eps) and the block normalised, scaled, shifted. */
static void emit_layernorm_split(lw *L, uint32_t t, uint64_t rows, uint64_t Lw, uint64_t in, uint64_t part,
                                 uint64_t gaddr, uint64_t baddr, uint64_t out, float eps)
{
    uint32_t W_ = L->workers, cw = (uint32_t)((Lw + W_ - 1) / W_);
    int32_t prow = (int32_t)(2 * W_ * 4);
    for (int run = 0; run < 3; run++) {
        size_t entry = L->tiles[t].wrk.n;
        emit_row_block(L, t, Lw, cw);
        W(t, SETZI, RM(8), (int32_t)in, 0);
        W(t, ADD, RM(8), RM(8), RM(2));          /* the block in row 0 */
        W(t, SETZI, RM(12), (int32_t)part, 0);   /* part of row 0 */
        W(t, ADD, RM(9), RM(12), RM(1));         /* this worker's slot */
        W(t, SETZI, RM(14), (int32_t)out, 0);
        W(t, ADD, RM(14), RM(14), RM(2));
        W(t, SETZI, RM(11), (int32_t)rows - 1, 0);
        W(t, SETZI, RM(13), (int32_t)W_, 0);
        W(t, LDCONST, RA(5), fbits((float)(1.0 / (double)Lw)), 0);
        size_t row = W(t, MOV, RM(4), RM(8), 0);
        if (run == 0) {
            W(t, SETZI, RA(0), 0, 0);
            W(t, RPT, RM(10), 2, 0);
            W(t, LD32STEP, RA(1), RM(4), 4);
            W(t, F32ADD, RA(0), RA(0), RA(1));
            W(t, ST32, RA(0), RM(9), 0);
        } else {
            W(t, MOV, RM(4), RM(12), 0);             /* the mean from the blocks' sums */
            W(t, SETZI, RA(0), 0, 0);
            W(t, RPT, RM(13), 2, 0);
            W(t, LD32STEP, RA(1), RM(4), 4);
            W(t, F32ADD, RA(0), RA(0), RA(1));
            W(t, F32MUL, RA(0), RA(0), RA(5));
            W(t, SETZI, RA(2), 0, 0);
            if (run == 1) {
                W(t, MOV, RM(4), RM(8), 0);
                W(t, RPT, RM(10), 3, 0);
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32SUB, RA(1), RA(1), RA(0));
                W(t, F32MAC, RA(2), RA(1), RA(1));
                W(t, ST32, RA(2), RM(9), (int32_t)(W_ * 4));
            } else {
                W(t, RPT, RM(13), 2, 0);             /* $m4 is at the row's second half */
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32ADD, RA(2), RA(2), RA(1));
                W(t, F32MUL, RA(2), RA(2), RA(5));
                W(t, LDCONST, RA(6), fbits(eps), 0);
                W(t, F32ADD, RA(2), RA(2), RA(6));
                emit_rsqrt(L, t, RM(3), RM(5));
                W(t, MOV, RM(4), RM(8), 0);
                W(t, MOV, RM(5), RM(14), 0);
                W(t, SETZI, RM(6), (int32_t)gaddr, 0);
                W(t, ADD, RM(6), RM(6), RM(2));
                W(t, SETZI, RM(7), (int32_t)baddr, 0);
                W(t, ADD, RM(7), RM(7), RM(2));
                W(t, RPT, RM(10), 8, 0);
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32SUB, RA(1), RA(1), RA(0));
                W(t, F32MUL, RA(1), RA(1), RA(4));
                W(t, LD32STEP, RA(2), RM(6), 4);
                W(t, F32MUL, RA(1), RA(1), RA(2));
                W(t, LD32STEP, RA(3), RM(7), 4);
                W(t, F32ADD, RA(1), RA(1), RA(3));
                W(t, ST32STEP, RA(1), RM(5), 4);
            }
        }
        W(t, ADDI, RM(8), RM(8), (int32_t)(Lw * 4));
        W(t, ADDI, RM(14), RM(14), (int32_t)(Lw * 4));
        W(t, ADDI, RM(9), RM(9), prow);
        W(t, ADDI, RM(12), RM(12), prow);
        W(t, BRNZDEC, RM(11), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
}

/* LayerNormalization over the last axis: rows partitioned over tiles as for Softmax; per row the
 * mean, the variance, 1/sqrt(variance + epsilon) by Newton's iteration from a bit-trick seed, then
 * (x - mean) * r * scale + bias, scale and bias initial data on every tile (1 and 0 when absent). */
static ts_status lower_layernorm(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + X->rank : n->attrs.axis;
    if (axis != X->rank - 1)
        return unsupported(L, n, "normalising over more than the last axis");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t Lw = (uint64_t)X->dims[X->rank - 1], R = (uint64_t)ts_graph_tensor_elems(X) / Lw;
    for (size_t i = 1; i < n->nin; i++) {
        const ts_graph_tensor *P = ts_graph_get_tensor(L->g, n->in[i]);
        if (P->kind == TS_TENSOR_ACTIVATION || P->kind == TS_TENSOR_INPUT || ts_graph_tensor_elems(P) != (int64_t)Lw)
            return unsupported(L, n, "a scale or bias that is not a weight of one value per element of a row");
    }
    uint64_t rp = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * Lw;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * Lw;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t gaddr = salloc(L, Lw * 4), baddr = salloc(L, Lw * 4);
    float *v = ts_calloc(2 * Lw, 4);
    if (!v)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    for (uint64_t i = 0; i < Lw; i++) {
        v[i] = n->nin > 1 ? value(ts_graph_get_tensor(L->g, n->in[1]), n->in[1], i) : 1.0f;
        v[Lw + i] = n->nin > 2 ? value(ts_graph_get_tensor(L->g, n->in[2]), n->in[2], i) : 0.0f;
    }
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        rc = seg(L, t, gaddr, v, Lw * 4);
        if (rc == TS_OK)
            rc = seg(L, t, baddr, v + Lw, Lw * 4);
    }
    ts_free(v);
    if (rc != TS_OK)
        return rc;
    uint64_t out = alloc(L, rp * Lw * 4);
    if (rp < L->workers) { /* fewer rows than workers: each row split over the workers */
        uint64_t part = talloc(L, rp * 2 * L->workers * 4);
        for (uint32_t t = 0; t < tn; t++)
            emit_layernorm_split(L, t, (sc->hi[t] - sc->lo[t]) / Lw, Lw, sc->where[t], part, gaddr, baddr, out,
                                 (float)n->attrs.epsilon);
    }
    for (uint32_t t = 0; t < tn && rp >= L->workers; t++) {
        uint64_t rows = (sc->hi[t] - sc->lo[t]) / Lw;
        uint32_t rw = (uint32_t)((rows + L->workers - 1) / L->workers);
        size_t entry = L->tiles[t].wrk.n;
        emit_start_row(L, t, (uint32_t)rows, rw);
        W(t, MULI, RM(1), RM(1), (int32_t)(Lw * 4));
        W(t, SETZI, RM(2), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(11), (int32_t)Lw, 0);
        W(t, LDCONST, RA(5), fbits((float)(1.0 / (double)Lw)), 0);
        size_t row = W(t, MOV, RM(4), RM(2), 0);
        W(t, SETZI, RA(0), 0, 0);
        W(t, RPT, RM(11), 2, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32ADD, RA(0), RA(0), RA(1));
        W(t, F32MUL, RA(0), RA(0), RA(5));       /* mean */
        W(t, MOV, RM(4), RM(2), 0);
        W(t, SETZI, RA(2), 0, 0);
        W(t, RPT, RM(11), 3, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32SUB, RA(1), RA(1), RA(0));
        W(t, F32MAC, RA(2), RA(1), RA(1));
        W(t, F32MUL, RA(2), RA(2), RA(5));
        W(t, LDCONST, RA(6), fbits((float)n->attrs.epsilon), 0);
        W(t, F32ADD, RA(2), RA(2), RA(6));       /* v = variance + epsilon */
        emit_rsqrt(L, t, RM(8), RM(9)); /* r = 1/sqrt(v) */
        W(t, MOV, RM(4), RM(2), 0);
        W(t, MOV, RM(5), RM(3), 0);
        W(t, SETZI, RM(6), (int32_t)gaddr, 0);
        W(t, SETZI, RM(7), (int32_t)baddr, 0);
        W(t, RPT, RM(11), 8, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32SUB, RA(1), RA(1), RA(0));
        W(t, F32MUL, RA(1), RA(1), RA(4));
        W(t, LD32STEP, RA(2), RM(6), 4);
        W(t, F32MUL, RA(1), RA(1), RA(2));
        W(t, LD32STEP, RA(3), RM(7), 4);
        W(t, F32ADD, RA(1), RA(1), RA(3));
        W(t, ST32STEP, RA(1), RM(5), 4);
        W(t, ADDI, RM(2), RM(2), (int32_t)(Lw * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)(Lw * 4));
        W(t, BRNZDEC, RM(1), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rp * Lw, .addr = out, .es = 4};
    sync_all(L);
    return TS_OK;
}

/* Transpose: a data movement. The output's rows (its last axis) are partitioned over tiles,
 * ceil(rows / tiles) each; row slot j of every tile is gathered in one call: the row's elements
 * are one range of the input when the last output axis is the input's last, else one range of
 * one element per output element, strided. The copies go over the exchange when they cross
 * tiles. */
static ts_status lower_transpose(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(L->g, n->out[0]);
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    if (L->pl[n->in[0]].es != 4)
        return unsupported(L, n, "an input held as f16 halves");
    int r = X->rank;
    int64_t perm[TS_GRAPH_MAX_RANK];
    uint64_t istr[TS_GRAPH_MAX_RANK];
    for (int a = 0; a < r; a++)
        perm[a] = n->attrs.nperm ? n->attrs.perm[a] : r - 1 - a;
    for (int a = r - 1; a >= 0; a--)
        istr[a] = a == r - 1 ? 1 : istr[a + 1] * (uint64_t)X->dims[a + 1];
    uint64_t Lo = r ? (uint64_t)Y->dims[r - 1] : 1, R = (uint64_t)ts_graph_tensor_elems(Y) / (Lo ? Lo : 1);
    uint64_t st1 = r ? istr[perm[r - 1]] : 1;
    uint64_t rpt = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rpt);
    const lw_place *P = &L->pl[n->in[0]];
    uint64_t eb = L->p->target.element_bytes ? L->p->target.element_bytes : 16;
    uint64_t av0 = P->addr / eb * eb, av1 = (P->addr + P->chunk * 4 + eb - 1) / eb * eb;
    uint64_t out = alloc_avoid(L, rpt * Lo * 4, av0, av1);
    for (uint64_t j = 0; j < rpt && rc == TS_OK; j++) {
        for (uint32_t t = 0; t < tn; t++) {
            uint64_t row = t * rpt + j, base = 0, rest = row;
            sc->lo[t] = sc->hi[t] = 0;
            sc->nr[t] = 0;
            if (row >= R)
                continue;
            for (int a = r - 2; a >= 0; a--) {
                base += rest % (uint64_t)Y->dims[a] * istr[perm[a]];
                rest /= (uint64_t)Y->dims[a];
            }
            sc->lo[t] = base;
            sc->hi[t] = base + (st1 == 1 ? Lo : 1);
            sc->nr[t] = st1 == 1 ? 1 : (uint32_t)Lo;
        }
        bool co = L->coalesce;
        L->into = out + j * Lo * 4;
        L->coalesce = true;
        rc = gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, st1, 1, true, sc->where);
        L->into = 0;
        L->coalesce = co;
        sync_all(L); /* the pieces each tile held itself are copied in this superstep (before the next
                      * call's receivers arm) */
    }
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rpt * Lo, .addr = out, .es = 4};
    return TS_OK;
}

/* MatMul of two activations A[..., M, K] x B[..., K, N] over the same batch dimensions: the rows of
 * each batch over its own tiles (rp rows a tile, rp dividing M so that the output stays flat); a
 * tile gathers its rows of A and the whole of its batch's B (staggered, so that the tiles of a
 * batch read its holders in turn), and its workers split the N columns: four outputs at a time
 * (N a multiple of 4), per k an element of A loaded and doubled into a pair, two pairs of B's row
 * and two f32v2mac; else per output a dot product of K f32mac (ld32step of A, ld32step down B's
 * column). */
static ts_status lower_bmm(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *A = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *B = ts_graph_get_tensor(L->g, n->in[1]);
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc == TS_OK)
        rc = need_placed(L, n, n->in[1]);
    if (rc != TS_OK)
        return rc;
    if (A->rank < 2 || A->rank != B->rank)
        return unsupported(L, n, "operands of different ranks, or of rank 1");
    for (int a = 0; a < A->rank - 2; a++)
        if (A->dims[a] != B->dims[a])
            return unsupported(L, n, "broadcasting batch dimensions");
    if (L->pl[n->in[0]].es != 4 || L->pl[n->in[1]].es != 4)
        return unsupported(L, n, "an operand held as f16 halves");
    uint64_t M = (uint64_t)A->dims[A->rank - 2], K = (uint64_t)A->dims[A->rank - 1];
    uint64_t N = (uint64_t)B->dims[B->rank - 1], nb = (uint64_t)ts_graph_tensor_elems(A) / (M * K);
    if (nb > L->T)
        return unsupported(L, n, "more batches than tiles");
    uint64_t rp = cdiv(M, L->T / nb);
    while (M % rp)
        rp++;
    uint32_t tn = (uint32_t)(nb * M / rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * K;
        sc->hi[t] = (t + 1) * rp * K;
    }
    if ((rc = gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t *wa = ts_calloc(tn, sizeof *wa);
    if (!wa)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    memcpy(wa, sc->where, tn * sizeof *wa);
    sync_all(L); /* A's pieces a tile holds itself are copied before B's receivers arm */
    for (uint32_t t = 0; t < tn; t++) {
        uint64_t b = t * rp / M;
        sc->lo[t] = b * K * N;
        sc->hi[t] = (b + 1) * K * N;
    }
    bool co = L->coalesce;
    L->stagger = L->coalesce = true;
    rc = gather(L, n->in[1], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where);
    L->stagger = false;
    L->coalesce = co;
    uint64_t out = alloc(L, rp * N * 4);
    uint32_t cw = (uint32_t)cdiv(N, L->workers), cq = (uint32_t)cdiv(N / 4, L->workers);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        size_t entry = L->tiles[t].wrk.n;
        if (N % 4 == 0 && sc->where[t] % 16 == 0) { /* four outputs a step: 6 issues per 4 MACs */
            emit_start_row(L, t, (uint32_t)(N / 4), cq);
            W(t, SHLI, RM(1), RM(1), 4);
            W(t, SETZI, RM(2), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(2), RM(2), RM(1));      /* B's columns 4 q0.. */
            W(t, SETZI, RM(3), (int32_t)out, 0);
            W(t, ADD, RM(3), RM(3), RM(1));
            W(t, SETZI, RM(6), (int32_t)wa[t], 0);
            W(t, SETZI, RM(7), (int32_t)rp - 1, 0);
            W(t, SETZI, RM(11), (int32_t)K, 0);
            size_t row4 = W(t, MOV, RM(8), RM(2), 0);
            W(t, MOV, RM(9), RM(3), 0);
            W(t, SETZI, RM(10), (int32_t)cq - 1, 0);
            size_t quad = W(t, MOV, RM(4), RM(6), 0);
            W(t, MOV, RM(5), RM(8), 0);
            for (int r = 8; r < 12; r++)
                W(t, SETZI, RA(r), 0, 0);
            W(t, RPT, RM(11), 6, 0);
            W(t, LD32STEP, RA(0), RM(4), 4);
            W(t, MOV, RA(1), RA(0), 0);
            W(t, LD64, RA(4), RM(5), 8);
            W(t, LD64STEP, RA(2), RM(5), (int32_t)(N * 4));
            W(t, F32V2MAC, RA(8), RA(0), RA(2));
            W(t, F32V2MAC, RA(10), RA(0), RA(4));
            W(t, ST64STEP, RA(8), RM(9), 8);
            W(t, ST64STEP, RA(10), RM(9), 8);
            W(t, ADDI, RM(8), RM(8), 16);
            W(t, BRNZDEC, RM(10), (int32_t)quad, 0);
            W(t, ADDI, RM(6), RM(6), (int32_t)(K * 4));
            W(t, ADDI, RM(3), RM(3), (int32_t)(N * 4));
            W(t, BRNZDEC, RM(7), (int32_t)row4, 0);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
            continue;
        }
        emit_start_row(L, t, (uint32_t)N, cw);
        W(t, SHLI, RM(1), RM(1), 2);
        W(t, SETZI, RM(2), (int32_t)sc->where[t], 0);
        W(t, ADD, RM(2), RM(2), RM(1));          /* B's column o0 */
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));          /* output row 0, column o0 */
        W(t, SETZI, RM(6), (int32_t)wa[t], 0);   /* A's row */
        W(t, SETZI, RM(7), (int32_t)rp - 1, 0);
        W(t, SETZI, RM(11), (int32_t)K, 0);
        size_t row = W(t, MOV, RM(8), RM(2), 0);
        W(t, MOV, RM(9), RM(3), 0);
        W(t, SETZI, RM(10), (int32_t)cw - 1, 0);
        size_t col = W(t, MOV, RM(4), RM(6), 0);
        W(t, MOV, RM(5), RM(8), 0);
        W(t, SETZI, RA(0), 0, 0);
        W(t, RPT, RM(11), 3, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, LD32STEP, RA(2), RM(5), (int32_t)(N * 4));
        W(t, F32MAC, RA(0), RA(1), RA(2));
        W(t, ST32STEP, RA(0), RM(9), 4);
        W(t, ADDI, RM(8), RM(8), 4);
        W(t, BRNZDEC, RM(10), (int32_t)col, 0);
        W(t, ADDI, RM(6), RM(6), (int32_t)(K * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)(N * 4));
        W(t, BRNZDEC, RM(7), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        run_all(L, t, entry);
    }
    ts_free(wa);
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rp * N, .addr = out, .es = 4};
    sync_all(L);
    return TS_OK;
}

/* MaxPool and GlobalAveragePool over (n, c) planes, which are contiguous in NCHW: planes
 * partitioned over tiles and, within a tile, over its workers. MaxPool reads each window through
 * a table of byte offsets within the plane; a padded position repeats the window's first valid
 * element, which leaves the maximum unchanged. */
static ts_status lower_pool(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(L->g, n->out[0]);
    const ts_graph_attrs *at = &n->attrs;
    if (X->rank != 4)
        return unsupported(L, n, "an input that is not NCHW");
    bool gap = n->op == TS_OP_GLOBALAVGPOOL;
    if (!gap && (at->dilations[0] != 1 || at->dilations[1] != 1))
        return unsupported(L, n, "dilations");
    ts_status rc = need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t H = (uint64_t)X->dims[2], Wd = (uint64_t)X->dims[3], HW = H * Wd;
    uint64_t Ho = (uint64_t)Y->dims[2], Wo = (uint64_t)Y->dims[3], P = Ho * Wo;
    uint64_t R = (uint64_t)(X->dims[0] * X->dims[1]);
    uint64_t kh = gap ? H : (uint64_t)at->kernel[0], kw = gap ? Wd : (uint64_t)at->kernel[1];
    uint64_t rp = cdiv(R, L->T);
    uint32_t tn = (uint32_t)cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * HW;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * HW;
    }
    /* the padded image, large enough for the last window (ceil_mode) */
    uint64_t HP = H + (uint64_t)at->pads[0] + (uint64_t)at->pads[2], WP = Wd + (uint64_t)at->pads[1] + (uint64_t)at->pads[3];
    uint64_t sy = gap ? 1 : (uint64_t)at->strides[0], sx = gap ? 1 : (uint64_t)at->strides[1];
    if ((Ho - 1) * sy + kh > HP)
        HP = (Ho - 1) * sy + kh;
    if ((Wo - 1) * sx + kw > WP)
        WP = (Wo - 1) * sx + kw;
    bool avg = n->op == TS_OP_AVGPOOL;
    /* one plane a tile: the image is filled first (a superstep of its own) and the plane's rows are
     * gathered straight into it; otherwise the planes are gathered, then copied in plane by plane */
    bool direct = !gap && rp == 1;
    uint64_t eb = L->p->target.element_bytes ? L->p->target.element_bytes : 16, xa = L->pl[n->in[0]].addr;
    uint64_t img = gap ? 0 : talloc_avoid(L, HP * WP * 4, xa / eb * eb,
                                          (xa + L->pl[n->in[0]].chunk * L->pl[n->in[0]].es + eb - 1) / eb * eb);
    if (direct) {
        for (uint32_t t = 0; t < tn; t++) {
            uint32_t rwh = (uint32_t)cdiv(HP, L->workers);
            size_t entry = L->tiles[t].wrk.n;
            emit_start_row(L, t, (uint32_t)HP, rwh);
            W(t, MULI, RM(3), RM(1), (int32_t)(WP * 4));
            W(t, SETZI, RM(4), (int32_t)img, 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, LDCONST, RA(0), fbits(avg ? 0.0f : -FLT_MAX), 0);
            W(t, SETZI, RM(5), (int32_t)(rwh * WP), 0);
            W(t, RPT, RM(5), 1, 0);
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        }
        use_tiles(L, tn);
        sync_all(L);
        for (uint32_t t = 0; t < tn; t++) {
            sc->hi[t] = sc->lo[t] + Wd;
            sc->nr[t] = (uint32_t)H;
        }
        L->into = img + ((uint64_t)at->pads[0] * WP + (uint64_t)at->pads[1]) * 4;
        rc = gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, Wd, WP, true, sc->where);
        L->into = 0;
    } else
        rc = gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where);
    if (rc != TS_OK)
        return rc;
    uint64_t rtab = 0;
    if (avg) { /* 1 / the number of positions each window counts */
        float *rv = ts_calloc(P, 4);
        if (!rv)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
        for (uint64_t oy = 0; oy < Ho; oy++)
            for (uint64_t ox = 0; ox < Wo; ox++) {
                uint64_t cnt = 0;
                for (uint64_t ky = 0; ky < kh; ky++)
                    for (uint64_t kx = 0; kx < kw; kx++) {
                        int64_t iy = (int64_t)(oy * sy + ky) - at->pads[0], ix = (int64_t)(ox * sx + kx) - at->pads[1];
                        if (at->count_include_pad ? iy < (int64_t)(H + (uint64_t)at->pads[2]) && ix < (int64_t)(Wd + (uint64_t)at->pads[3])
                                                  : iy >= 0 && ix >= 0 && iy < (int64_t)H && ix < (int64_t)Wd)
                            cnt++;
                    }
                rv[oy * Wo + ox] = cnt ? 1.0f / (float)cnt : 0.0f;
            }
        rtab = stable(L, rv, P * 4, tn, &rc);
        ts_free(rv);
        if (rc != TS_OK)
            return rc;
    }
    uint64_t out = alloc(L, rp * P * 4);
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        uint32_t planes = (uint32_t)((t + 1) * rp < R ? rp : R - t * rp);
        if (gap) {
            uint32_t rw = (planes + L->workers - 1) / L->workers;
            size_t entry = L->tiles[t].wrk.n;
            emit_start_row(L, t, planes, rw);
            W(t, MULI, RM(2), RM(1), (int32_t)(HW * 4));
            W(t, SETZI, RM(3), (int32_t)sc->where[t], 0);
            W(t, ADD, RM(2), RM(2), RM(3));
            W(t, MULI, RM(4), RM(1), (int32_t)(P * 4));
            W(t, SETZI, RM(3), (int32_t)out, 0);
            W(t, ADD, RM(4), RM(4), RM(3));
            W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
            W(t, SETZI, RM(9), (int32_t)HW, 0);
            W(t, LDCONST, RA(2), fbits((float)(1.0 / (double)HW)), 0);
            size_t plane = W(t, SETZI, RA(0), 0, 0);
            W(t, RPT, RM(9), 2, 0);
            W(t, LD32STEP, RA(1), RM(2), 4);
            W(t, F32ADD, RA(0), RA(0), RA(1));
            W(t, F32MUL, RA(0), RA(0), RA(2));
            W(t, ST32STEP, RA(0), RM(4), 4);
            W(t, BRNZDEC, RM(1), (int32_t)plane, 0);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
            continue;
        }
        /* MaxPool: the padded image filled with -FLT_MAX once (rows over the workers); per plane,
         * its rows copied in, then output rows over the workers, each window by kernel rows */
        uint32_t rwh = (uint32_t)cdiv(HP, L->workers);
        size_t entry = L->tiles[t].wrk.n;
        uint32_t rwr = (uint32_t)cdiv(H, L->workers), rwo = (uint32_t)cdiv(Ho, L->workers);
        if (!direct) {
            emit_start_row(L, t, (uint32_t)HP, rwh);
            W(t, MULI, RM(3), RM(1), (int32_t)(WP * 4));
            W(t, SETZI, RM(4), (int32_t)img, 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            W(t, LDCONST, RA(0), fbits(avg ? 0.0f : -FLT_MAX), 0);
            W(t, SETZI, RM(5), (int32_t)(rwh * WP), 0);
            W(t, RPT, RM(5), 1, 0);
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        }
        for (uint32_t i = 0; i < planes; i++) {
            entry = L->tiles[t].wrk.n;
            if (!direct) {
                emit_start_row(L, t, (uint32_t)H, rwr);
                W(t, MULI, RM(2), RM(1), (int32_t)(Wd * 4));
                W(t, SETZI, RM(3), (int32_t)(sc->where[t] + i * HW * 4), 0);
                W(t, ADD, RM(2), RM(2), RM(3));
                W(t, MULI, RM(3), RM(1), (int32_t)(WP * 4));
                W(t, SETZI, RM(4), (int32_t)(img + ((uint64_t)at->pads[0] * WP + (uint64_t)at->pads[1]) * 4), 0);
                W(t, ADD, RM(3), RM(3), RM(4));
                W(t, SETZI, RM(1), (int32_t)rwr - 1, 0);
                W(t, SETZI, RM(8), (int32_t)Wd, 0);
                size_t row = W(t, RPT, RM(8), 2, 0);
                W(t, LD32STEP, RA(0), RM(2), 4);
                W(t, ST32STEP, RA(0), RM(3), 4);
                W(t, ADDI, RM(3), RM(3), (int32_t)((WP - Wd) * 4));
                W(t, BRNZDEC, RM(1), (int32_t)row, 0);
                W(t, EXIT, 0, 0, 0);
                run_all(L, t, entry);
                entry = L->tiles[t].wrk.n;
            }
            emit_start_row(L, t, (uint32_t)Ho, rwo);
            W(t, MULI, RM(2), RM(1), (int32_t)((uint64_t)at->strides[0] * WP * 4));
            W(t, SETZI, RM(3), (int32_t)img, 0);
            W(t, ADD, RM(2), RM(2), RM(3));
            W(t, MULI, RM(3), RM(1), (int32_t)(Wo * 4));
            W(t, SETZI, RM(4), (int32_t)(out + i * P * 4), 0);
            W(t, ADD, RM(3), RM(3), RM(4));
            if (avg) {
                W(t, MULI, RM(10), RM(1), (int32_t)(Wo * 4));
                W(t, SETZI, RM(4), (int32_t)rtab, 0);
                W(t, ADD, RM(10), RM(10), RM(4));
            }
            W(t, SETZI, RM(1), (int32_t)rwo - 1, 0);
            W(t, SETZI, RM(13), (int32_t)kw, 0);
            size_t orow = W(t, MOV, RM(9), RM(2), 0);
            W(t, SETZI, RM(6), (int32_t)Wo - 1, 0);
            size_t pix = W(t, LDCONST, RA(0), fbits(avg ? 0.0f : -FLT_MAX), 0);
            W(t, MOV, RM(4), RM(9), 0);
            W(t, SETZI, RM(8), (int32_t)kh - 1, 0);
            size_t kr = W(t, MOV, RM(12), RM(4), 0);
            W(t, RPT, RM(13), 2, 0);
            W(t, LD32STEP, RA(1), RM(12), 4);
            if (avg)
                W(t, F32ADD, RA(0), RA(0), RA(1));
            else
                W(t, F32MAX, RA(0), RA(0), RA(1));
            W(t, ADDI, RM(4), RM(4), (int32_t)(WP * 4));
            W(t, BRNZDEC, RM(8), (int32_t)kr, 0);
            if (avg) {
                W(t, LD32STEP, RA(2), RM(10), 4);
                W(t, F32MUL, RA(0), RA(0), RA(2));
            }
            W(t, ST32STEP, RA(0), RM(3), 4);
            W(t, ADDI, RM(9), RM(9), (int32_t)((uint64_t)at->strides[1] * 4));
            W(t, BRNZDEC, RM(6), (int32_t)pix, 0);
            W(t, ADDI, RM(2), RM(2), (int32_t)((uint64_t)at->strides[0] * WP * 4));
            W(t, BRNZDEC, RM(1), (int32_t)orow, 0);
            W(t, EXIT, 0, 0, 0);
            run_all(L, t, entry);
        }
    }
    if (rc != TS_OK)
        return rc;
    use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rp * P, .addr = out, .es = 4};
    sync_all(L);
    return TS_OK;
}

static ts_status lower_node(lw *L, int id, lw_scr *sc)
{
    const ts_graph_node *n = ts_graph_get_node(L->g, id);
    ts_status rc = check_f32(L, n);
    if (rc != TS_OK)
        return rc;
    switch (n->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
        if (n->op == TS_OP_MATMUL && n->nin == 2) {
            ts_tensor_kind bk = ts_graph_get_tensor(L->g, n->in[1])->kind;
            if (bk == TS_TENSOR_ACTIVATION || bk == TS_TENSOR_INPUT)
                return lower_bmm(L, n, sc);
        }
        if (L->plans && L->plans[id].tiles) /* planner (b) chose a compute-shift plan */
            return ts_lwi_t10_matmul(L, n, sc, &L->plans[id]);
        return lower_matmul(L, n, sc);
    case TS_OP_CONV:
        if (L->plans && L->plans[id].tiles) /* planner (b): a 1x1 Conv as a compute-shift product */
            return ts_lwi_t10_matmul(L, n, sc, &L->plans[id]);
        return lower_conv(L, n, sc);
    case TS_OP_RELU:
    case TS_OP_ADD:
    case TS_OP_SUB:
    case TS_OP_MUL:
    case TS_OP_DIV:
    case TS_OP_GELU:
        if (n->op == TS_OP_GELU && n->attrs.approximate_tanh)
            return unsupported(L, n, "the tanh approximation");
        return lower_eltwise(L, n, sc);
    case TS_OP_SOFTMAX: return lower_softmax(L, n, sc);
    case TS_OP_LAYERNORM: return lower_layernorm(L, n, sc);
    case TS_OP_TRANSPOSE: return lower_transpose(L, n, sc);
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
    case TS_OP_GLOBALAVGPOOL: return lower_pool(L, n, sc);
    case TS_OP_RESHAPE:
    case TS_OP_FLATTEN:
        if ((rc = need_placed(L, n, n->in[0])) != TS_OK)
            return rc;
        L->pl[n->out[0]] = L->pl[n->in[0]]; /* same elements in the same order */
        return TS_OK;
    default: return unsupported(L, n, "this operator");
    }
}
/* ---- what planner (b) shares (lower_ipu_int.h) ---- */

size_t ts_lwi_emit(lw *L, lw_code *c, int op, int32_t a0, int32_t a1, int32_t a2) { return emit(L, c, op, a0, a1, a2); }
void ts_lwi_sync_all(lw *L) { sync_all(L); }
void ts_lwi_emit_mm(lw *L, uint32_t t, const mm_args *m) { emit_mm(L, t, m); }
void ts_lwi_run_all(lw *L, uint32_t t, size_t entry) { run_all(L, t, entry); }
void ts_lwi_run_all_m0(lw *L, uint32_t t, size_t entry, uint64_t v) { run_all_m0(L, t, entry, v); }
void ts_lwi_use_tiles(lw *L, uint32_t n) { use_tiles(L, n); }
void ts_lwi_emit_start_row(lw *L, uint32_t t, uint32_t rows, uint32_t rw) { emit_start_row(L, t, rows, rw); }
uint64_t ts_lwi_alloc(lw *L, uint64_t bytes) { return alloc(L, bytes); }
uint64_t ts_lwi_salloc(lw *L, uint64_t bytes) { return salloc(L, bytes); }
ts_status ts_lwi_seg(lw *L, uint32_t t, uint64_t addr, const void *bytes, uint64_t len)
{
    return seg(L, t, addr, bytes, len);
}
float ts_lwi_value(const ts_graph_tensor *t, int id, uint64_t i) { return value(t, id, i); }
ts_status ts_lwi_unsupported(lw *L, const ts_graph_node *n, const char *why) { return unsupported(L, n, why); }

uint64_t ts_lwi_talloc_apart(lw *L, uint64_t bytes, const uint64_t (*av)[2], size_t nav)
{
    uint64_t a = alloc_apart(L, bytes, av, nav);
    if (ts_grow((void **)&L->tmp, &L->captmp, L->ntmp + 1, sizeof *L->tmp))
        L->oom = true;
    else
        L->tmp[L->ntmp++] = a;
    return a;
}

ts_status ts_lwi_gather(lw *L, int x, uint32_t tn, const uint64_t *lo, const uint64_t *hi, const uint32_t *nr,
                        uint64_t sst, uint64_t dstr, bool force, uint64_t *where)
{
    return gather(L, x, tn, lo, hi, nr, sst, dstr, force, where);
}

/* ---- the program ---- */

static ts_status finish(lw *L, ts_program **out)
{
    for (uint32_t t = 0; t < L->used; t++)
        S(t, HALT, 0, 0, 0);
    if (L->oom)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
    for (uint32_t t = 0; t < L->used; t++) {
        ts_stream *s = ts_program_stream(L->prog, 0, t);
        if (!s)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
        lw_tile *T = &L->tiles[t];
        int32_t off = (int32_t)T->sup.n;
        for (size_t i = 0; i < T->sup.n + T->wrk.n; i++) {
            bool w = i >= T->sup.n;
            ts_insn in = w ? T->wrk.v[i - T->sup.n] : T->sup.v[i];
            if (in.op == LW_RUN || in.op == LW_RUNALL)
                in.a[0] += off;
            else if (w && (in.op == LW_BR))
                in.a[0] += off;
            else if (w && (in.op == LW_BRZ || in.op == LW_BRNZ || in.op == LW_BRNEG || in.op == LW_BRNZDEC))
                in.a[1] += off;
            ts_insn *d = ts_stream_emit(s, in.op);
            if (!d)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory emitting the program");
            memcpy(d->a, in.a, sizeof d->a);
        }
    }
    for (size_t i = 0; i < L->nmarks; i++) {
        const lw_mark *k = &L->marks[i];
        if (k->tile >= L->used)
            continue;
        ts_stream *s = ts_program_stream(L->prog, 0, k->tile);
        ts_status rc = ts_program_add_mark(L->prog, (uint32_t)(s - L->prog->streams), k->pc, k->id, L->err);
        if (rc != TS_OK)
            return rc;
    }
    ts_program_canonicalize(L->prog);
    *out = L->prog;
    L->prog = NULL;
    return TS_OK;
}

void ts_lower_report_free(ts_lower_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->places);
    ts_free(rep->layers);
    memset(rep, 0, sizeof *rep);
}

/* One pass of the lowering: with measure, only the weight bytes per node (wsz) and the table bytes
 * (*perm) are found; otherwise they place the static data. */
static ts_status lower_pass(const ts_graph *g, const ts_lower_ipu_params *p, const ts_t10_plan *plans, bool measure,
                            uint32_t mmshare, uint64_t *wsz, uint64_t *perm, ts_program **out, ts_lower_report *rep,
                            bool *overfull, ts_err *err)
{
    uint32_t U = p->target.amp_units_f32;
    lw L0 = {0}, *L = &L0;
    L->measure = measure;
    L->mmshare = mmshare;
    L->coalesce = mmshare > 4;
    L->plans = plans;
    L->wsz = wsz;
    L->perm = measure ? 0 : *perm;
    L->ptop = p->target.sram_bytes & ~(uint64_t)15;
    uint64_t wtotal = 0, wdone = 0, maxneed = 0;
    for (size_t i = 0; !measure && i < ts_graph_node_count(g); i++)
        wtotal += wsz[i];
    L->wabove = wtotal - (ts_graph_node_count(g) ? wsz[0] : 0);
    L->g = g;
    L->p = p;
    L->err = err;
    L->units = U;
    L->units16 = p->target.amp_units_f16;
    L->workers = p->target.workers ? p->target.workers : 6;
    L->T = p->max_tiles && p->max_tiles < p->target.tiles ? p->max_tiles : p->target.tiles;
    size_t nt = ts_graph_tensor_count(g);
    L->tiles = ts_calloc(L->T, sizeof *L->tiles);
    L->pl = ts_calloc(nt ? nt : 1, sizeof *L->pl);
    L->prog = ts_program_create("ipu");
    lw_scr sc = {0};
    ts_status rc = TS_OK;
    if (!L->tiles || !L->pl || !L->prog) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
        goto done;
    }
    if ((rc = scratch(L, &sc)) != TS_OK)
        goto done;
    for (uint32_t t = 0; t < L->T; t++)
        mark(L, t);
    /* liveness: the memory of a tensor (of its root, through Reshape and Flatten) is freed after
     * its last consumer; graph outputs are kept */
    L->root = ts_calloc(nt ? nt : 1, sizeof *L->root);
    L->last = ts_calloc(nt ? nt : 1, sizeof *L->last);
    if (!L->root || !L->last) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
        goto done;
    }
    for (size_t i = 0; i < nt; i++)
        L->root[i] = (int)i;
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        if ((n->op == TS_OP_RESHAPE || n->op == TS_OP_FLATTEN) && n->nin && n->nout)
            L->root[n->out[0]] = L->root[n->in[0]];
        for (size_t k = 0; k < n->nin; k++)
            L->last[L->root[n->in[k]]] = (int)i;
    }
    for (size_t i = 0; i < nt; i++)
        if (ts_graph_get_tensor(g, (int)i)->is_output)
            L->last[L->root[i]] = -1;
    /* graph inputs: as initial data, in equal chunks of whole rows over the tiles, at least 1024
     * elements (or the whole input) per tile */
    for (size_t i = 0; i < nt; i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        size_t nc = 0;
        ts_graph_consumers(g, (int)i, &nc);
        if (t->kind != TS_TENSOR_INPUT || (!nc && !t->is_output))
            continue;
        /* f16: halves for an f16 MatMul/Gemm, f32 words for anything else (see held_half) */
        uint32_t es = 4;
        const int *cons = ts_graph_consumers(g, (int)i, &nc);
        for (size_t c = 0; t->dtype == TS_DT_F16 && c < nc; c++) {
            int op = ts_graph_get_node(g, cons[c])->op;
            if (op == TS_OP_MATMUL || op == TS_OP_GEMM)
                es = 2;
        }
        if (t->dtype != TS_DT_F32 && t->dtype != TS_DT_F16) {
            rc = ts_err_set(err, TS_EINPUT, "input '%s' is %s; the IPU lowering handles f32 and f16 only", t->name,
                            ts_dtype_name(t->dtype));
            goto done;
        }
        uint64_t ne = (uint64_t)ts_graph_tensor_elems(t);
        float *v = ts_calloc(ne ? ne : 1, 4);
        if (!v) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory placing '%s'", t->name);
            goto done;
        }
        for (uint64_t k = 0; k < ne; k++) {
            float f = value(t, (int)i, k);
            if (es == 2) {
                uint16_t h = ts_f32_to_f16(f);
                memcpy((char *)v + 2 * k, &h, 2);
            } else
                v[k] = f;
        }
        /* whole rows of the last axis, as the row-partitioned operators (MatMul, Softmax) want */
        uint64_t ld = t->rank > 0 && t->dims[t->rank - 1] > 0 ? (uint64_t)t->dims[t->rank - 1] : 1;
        uint64_t chunk = ne ? (ne / ld + L->T - 1) / L->T * ld : 1;
        if (chunk < 1024) /* at least 1024 elements a tile (whole rows): fewer pieces to gather */
            chunk = ne < 1024 ? ne : (1024 + ld - 1) / ld * ld;
        if (!chunk)
            chunk = 1;
        if (es == 2 && chunk % 2) {
            rc = ts_err_set(err, TS_EINPUT, "f16 input '%s' needs an even last dimension (it is placed in 32-bit words)",
                            t->name);
            ts_free(v);
            goto done;
        }
        uint32_t tn = (uint32_t)((ne + chunk - 1) / chunk);
        uint64_t a = alloc(L, chunk * es);
        for (uint32_t k = 0; k < tn && rc == TS_OK; k++)
            rc = seg(L, k, a, (char *)v + k * chunk * es, ((k + 1) * chunk < ne ? chunk : ne - k * chunk) * es);
        ts_free(v);
        if (rc != TS_OK)
            goto done;
        L->pl[i] = (lw_place){.ntiles = tn ? tn : 1, .chunk = chunk, .addr = a, .es = es};
        use_tiles(L, tn ? tn : 1);
        uint64_t wa = L->wabove, w0 = ts_graph_node_count(g) ? wsz[0] : 0;
        L->wabove = 0; /* the weights are counted by the first operator's check */
        if (ts_graph_node_count(g))
            wsz[0] = 0;
        rc = check_fit(L, "input", t->name);
        L->wabove = wa;
        if (ts_graph_node_count(g))
            wsz[0] = w0;
        if (rc != TS_OK)
            goto done;
    }
    uint64_t in_hw = L->hw;
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        uint32_t first = L->step;
        L->optiles = 0;
        L->cur = (int)i;
        L->wnext = 0;
        wdone += measure ? 0 : wsz[i];
        L->wabove = wtotal - wdone;
        const ts_graph_node *nd = ts_graph_get_node(g, (int)i);
        L->hw = in_hw;
        for (size_t k = 0; k < L->nblk; k++)
            if (L->blk[k].a + L->blk[k].n > L->hw)
                L->hw = L->blk[k].a + L->blk[k].n;
        if ((rc = lower_node(L, (int)i, &sc)) != TS_OK)
            goto done;
        if ((rc = check_fit(L, opname(nd), nd->name)) != TS_OK)
            goto done;
        in_hw = 0;
        /* the operator's buffers, then the tensors it was the last to read */
        for (size_t k = 0; k < L->ntmp; k++)
            release(L, L->tmp[k]);
        L->ntmp = 0;
        for (size_t k = 0; k < nd->nin; k++) {
            int r = L->root[nd->in[k]];
            if (L->last[r] == (int)i && L->pl[r].ntiles) {
                release(L, L->pl[r].addr);
                L->last[r] = -2; /* freed once */
            }
        }
        if (ts_grow((void **)&L->layers, &L->caplayers, L->nlayers + 1, sizeof *L->layers)) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        uint32_t tiles = L->optiles;
        if (need_bytes(L) > maxneed)
            maxneed = need_bytes(L);
        ts_lower_layer *ly = &L->layers[L->nlayers++];
        *ly = (ts_lower_layer){.node = (int)i, .tiles = tiles, .first_step = first, .steps = L->step - first,
                               .mem_bytes = need_bytes(L), .op = (int)nd->op, .macs = ts_graph_node_macs(g, (int)i)};
        if (plans && plans[i].tiles) {
            const ts_t10_plan *pl = &plans[i];
            ly->t10 = true;
            ly->fm = pl->fm, ly->fn = pl->fn, ly->fk = pl->fk, ly->ft = pl->ft, ly->rp = pl->rp, ly->rot = pl->rot;
            ly->model_cycles = pl->cycles;
        }
    }
    if (measure) {
        *perm = L->perm;
        goto done;
    }
    if ((rc = finish(L, out)) != TS_OK)
        goto done;
    char desc[256];
    snprintf(desc, sizeof desc, "%s lowered to the IPU (%s, %u tiles, %u supersteps)", ts_graph_name(g),
             !plans ? "load-compute-store"
             : p->planner == TS_LOWER_PLANNER_SPLIT
                 ? "split plans without rotation for MatMul, Gemm and 1x1 Conv, load-compute-store for the rest"
                 : "compute-shift for MatMul, Gemm and 1x1 Conv, load-compute-store for the rest",
             L->used, L->step);
    (*out)->workload = ts_strdup(desc);
    if (rep) {
        rep->tiles_used = L->used;
        rep->supersteps = L->step;
        rep->mem_bytes = maxneed;
        rep->planner = plans ? p->planner : TS_LOWER_PLANNER_LCS;
        rep->layers = L->layers;
        rep->nlayers = L->nlayers;
        L->layers = NULL;
        for (size_t i = 0; i < nt; i++)
            if (L->pl[i].ntiles)
                rep->nplaces++;
        rep->places = ts_calloc(rep->nplaces ? rep->nplaces : 1, sizeof *rep->places);
        if (!rep->places) {
            ts_program_destroy(*out);
            *out = NULL;
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        size_t k = 0;
        for (size_t i = 0; i < nt; i++)
            if (L->pl[i].ntiles)
                rep->places[k++] = (ts_lower_place){(int)i, L->pl[i].ntiles, L->pl[i].chunk, L->pl[i].addr,
                                                    L->pl[i].inner, L->pl[i].cb, L->pl[i].pb, L->pl[i].nrb,
                                                    L->pl[i].es};
    }
done:
    if (overfull)
        *overfull = L->overfull;
    scratch_free(&sc);
    for (uint32_t t = 0; L->tiles && t < L->T; t++) {
        ts_free(L->tiles[t].sup.v);
        ts_free(L->tiles[t].wrk.v);
    }
    ts_free(L->tiles);
    ts_free(L->pl);
    ts_free(L->blk);
    ts_free(L->tabs);
    ts_free(L->tmp);
    ts_free(L->root);
    ts_free(L->last);
    ts_free(L->marks);
    ts_free(L->layers);
    ts_program_destroy(L->prog);
    if (rc != TS_OK && rep)
        ts_lower_report_free(rep);
    return rc;
}

ts_status ts_lower_ipu(const ts_graph *g, const void *ipu_params, ts_program **out, ts_lower_report *rep,
                       ts_err *err)
{
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    const ts_lower_ipu_params *p = ipu_params;
    if (!p || !p->target.tiles || !p->target.sram_bytes)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: no tiles or no tile memory in the parameters");
    uint32_t U = p->target.amp_units_f32;
    if (U != 2 && U != 4 && U != 8)
        return ts_err_set(err, TS_EINPUT, "IPU lowering: %u AMP f32 MACs per cycle; the lowering handles 4, 8 or 16",
                          p->target.amp_macs_f32);
    size_t nn = ts_graph_node_count(g);
    uint64_t *wsz = ts_calloc(nn ? nn : 1, sizeof *wsz), perm = 0;
    bool shift = p->planner == TS_LOWER_PLANNER_T10 || p->planner == TS_LOWER_PLANNER_SPLIT;
    ts_t10_plan *plans = shift ? ts_calloc(nn ? nn : 1, sizeof *plans) : NULL;
    if (!wsz || (shift && !plans)) {
        ts_free(wsz);
        return ts_err_set(err, TS_ENOMEM, "out of memory lowering '%s'", ts_graph_name(g));
    }
    /* planner (b): the plans are chosen for a budget of tile memory; an operator that then does not
     * fit (the tensors live around it, the weights of the operators (a) lowers, alignment) makes the
     * planner choose again for 3/4 of the budget, down to 1/8 of the tile. Planner (a) alone: a
     * MatMul/Gemm keeps its weights within 1/4 of the tile memory per tile; if an operator does not
     * fit (all weights are loaded before the run), within 1/8, then 1/16, down to 1/64. */
    ts_status rc = TS_OK;
    uint32_t mmshare = 4;
    for (uint64_t budget = p->target.sram_bytes;; budget = budget / 4 * 3, mmshare *= plans ? 1 : 2) {
        memset(wsz, 0, nn * sizeof *wsz);
        perm = 0;
        if (plans && (rc = ts_lwi_t10_plans(g, p, budget, plans, err)) != TS_OK)
            break;
        bool overfull = false;
        /* the same plan twice: first the sizes of the static data, then with its addresses */
        rc = lower_pass(g, p, plans, true, mmshare, wsz, &perm, out, NULL, NULL, err);
        if (rc == TS_OK)
            rc = lower_pass(g, p, plans, false, mmshare, wsz, &perm, out, rep, &overfull, err);
        if (rc == TS_OK || !overfull || (plans && budget / 4 * 3 < p->target.sram_bytes / 8) || (!plans && mmshare >= 64))
            break;
        if (err) {
            ts_err_free(err);
            ts_err_init(err);
        }
    }
    ts_free(plans);
    ts_free(wsz);
    return rc;
}

int ts_lower_ipu_locate(const ts_lower_report *rep, const ts_graph *g, int tensor, uint64_t elem, uint32_t *tile,
                        uint64_t *addr)
{
    for (size_t i = 0; i < rep->nplaces; i++) {
        const ts_lower_place *p = &rep->places[i];
        if (p->tensor != tensor)
            continue;
        const ts_graph_tensor *t = ts_graph_get_tensor(g, tensor);
        if (!t || elem >= (uint64_t)ts_graph_tensor_elems(t))
            return -1;
        lw_place P = {.ntiles = p->ntiles, .chunk = p->chunk, .addr = p->addr, .inner = p->inner, .cb = p->cb,
                      .pb = p->pb, .nrb = p->nrb};
        uint64_t off;
        pl_run(&P, elem, tile, &off);
        *addr = p->addr + off * (p->es ? p->es : ts_dtype_size(t->dtype));
        return 0;
    }
    return -1;
}

ts_status ts_lower_ipu_layer_stats(const ts_lower_report *rep, ts_results *res, const ts_energy_table *energy,
                                   ts_err *err)
{
    ts_stats *s = res->stats;
    const ts_stat *ss = ts_stats_find(s, TS_IPU_TABLE_SUPERSTEPS);
    if (!ss || ss->kind != TS_STAT_TABLE || ss->ncols < 7)
        return ts_err_set(err, TS_EINPUT, "the run has no supersteps table to join the layers with");
    if (ss->nrows < rep->supersteps)
        return ts_err_set(err, TS_EINPUT, "the run passed %zu supersteps, the plan has %u", ss->nrows, rep->supersteps);
    const ts_stat *ev = ts_stats_find(s, TS_IPU_TABLE_SUPERSTEP_EVENTS);
    static const char *const cols[] = {"node", "op", "tiles", "supersteps", "cycles", "compute_share",
                                       "exchange_share", "sync_share", "exchange_bytes", "mem_bytes", "macs",
                                       "bandwidth", "energy", "t10", "fm", "fn", "fk", "ft", "rp", "rot",
                                       "model_cycles"};
    static const char *const units[] = {"", "", "", "", "cycles", "", "", "", "B", "B", "", "GB/s", "uJ", "", "",
                                        "", "", "", "", "", "cycles"};
    /* the plan columns only for planner (b) */
    size_t nc = rep->planner != TS_LOWER_PLANNER_LCS ? 21 : 13;
    int tab = ts_stats_table(s, "layers", "one row per operator of the lowered model: its supersteps' cycles "
                             "and their compute, exchange and sync shares, its tile memory per tile, its exchange "
                             "bytes per second over its cycles and its dynamic energy", nc, cols, units);
    if (tab < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the layers table");
    for (size_t i = 0; i < rep->nlayers; i++) {
        const ts_lower_layer *l = &rep->layers[i];
        if (!l->steps)
            continue;
        double c = 0, x = 0, y = 0, b = 0;
        for (uint32_t k = l->first_step; k < l->first_step + l->steps; k++) {
            const double *r = ss->rows + (size_t)k * ss->ncols; /* id start compute exchange sync critical bytes */
            c += r[2];
            x += r[3];
            y += r[4];
            b += r[6];
        }
        double tot = c + x + y, secs = res->clock_hz > 0 ? tot / res->clock_hz : 0;
        double j = ts_results_price_rows(ev, l->first_step, l->steps, energy);
        double row[21] = {l->node, l->op, l->tiles, l->steps, tot, tot > 0 ? c / tot : 0, tot > 0 ? x / tot : 0,
                          tot > 0 ? y / tot : 0, b, (double)l->mem_bytes, (double)l->macs,
                          secs > 0 ? b / secs / 1e9 : 0, j >= 0 ? j * 1e6 : -1, l->t10, l->fm, l->fn, l->fk, l->ft,
                          l->rp, l->rot, (double)l->model_cycles};
        ts_status rc = ts_stats_row(s, tab, row);
        if (rc != TS_OK)
            return ts_err_set(err, rc, "out of memory for the layers table");
    }
    return TS_OK;
}

/* ---- parameters from a config ---- */

ts_status ts_lower_ipu_params_from_config(const ts_config *cfg, ts_lower_ipu_params *out, ts_err *err)
{
    memset(out, 0, sizeof *out);
    return ts_ipu_target_from_config(cfg, &out->target, err);
}

ts_status ts_lower_ipu_planner(const char *name, int *out, ts_err *err)
{
    if (!strcmp(name, "lcs"))
        *out = TS_LOWER_PLANNER_LCS;
    else if (!strcmp(name, "t10"))
        *out = TS_LOWER_PLANNER_T10;
    else if (!strcmp(name, "split"))
        *out = TS_LOWER_PLANNER_SPLIT;
    else
        return ts_err_set(err, TS_EINPUT, "unknown planner '%s': lcs (load-compute-store), t10 (compute-shift) or "
                          "split (t10's partitions, nothing rotating)", name);
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct ipu_lowering {
    ts_lower_ipu_params p;
    ts_lower_report rep;
} ipu_lowering;

static ts_status ipu_check_planner(const char *value, ts_err *err)
{
    int planner;
    return ts_lower_ipu_planner(value, &planner, err);
}

static const ts_lower_param ipu_params[] = {
    {"planner", "how MatMul, Gemm and 1x1 Conv are planned: lcs, t10 or split", ipu_check_planner},
};

static ts_status ipu_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    ipu_lowering *s = ts_calloc(1, sizeof *s);
    if (!s)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    *state = s;
    ts_status rc = ts_lower_ipu_params_from_config(cfg, &s->p, err);
    const char *planner = ts_lower_opts_get(opts, "planner");
    if (rc == TS_OK && planner)
        rc = ts_lower_ipu_planner(planner, &s->p.planner, err);
    return rc;
}

static ts_status ipu_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    ipu_lowering *s = state;
    return ts_lower_ipu(g, &s->p, out, &s->rep, err);
}

static ts_status ipu_prepare(void *state, ts_run_opts *ro, ts_err *err)
{
    (void)err;
    const ipu_lowering *s = state;
    ro->phase_events = s->rep.nlayers > 0; /* the layers table prices each operator's supersteps */
    return TS_OK;
}

static ts_status ipu_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const ipu_lowering *s = state;
    return s->rep.nlayers ? ts_lower_ipu_layer_stats(&s->rep, res, energy, err) : TS_OK;
}

static void ipu_destroy(void *state)
{
    ipu_lowering *s = state;
    ts_lower_report_free(&s->rep);
    ts_free(s);
}

const ts_lowering ts_ipu_lowering = {
    .arch = "ipu",
    .name = "IPU load-compute-store / compute-shift",
    .params = ipu_params,
    .nparams = sizeof ipu_params / sizeof ipu_params[0],
    .create = ipu_create,
    .lower = ipu_lower,
    .prepare = ipu_prepare,
    .attribute = ipu_attribute,
    .destroy = ipu_destroy,
};
