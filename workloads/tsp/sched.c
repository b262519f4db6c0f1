/* workloads/tsp/sched.c — the TSP scheduler: its reservation tables and the units as resources
 * (see lower_tsp_int.h).
 *
 * Every instruction gets an exact cycle. The scheduler places one group of instructions at a time
 * (a weight install, one product pass, one elementwise vector) at the first cycle at which all of
 * its reservations are free, taking them with an undo log so a failed attempt leaves nothing. The
 * reservations are bitmaps over cycles:
 *   - issue slots of every queue (a MEM queue has a read slot and a write slot per cycle);
 *   - MEM banks per slice, at the cycle the bank is used (a read and a write per cycle, different
 *     banks);
 *   - VXM ALU latches: the cycles from a result's commit to its last chained read;
 *   - stream registers, by trajectory. Streams are split into pools, each carrying values in one
 *     direction between one group of producers and one group of consumers that lie on either side
 *     of a point every value passes (W MEM -> MXM, W MEM and MXM -> VXM, E MEM -> VXM, VXM -> W MEM,
 *     VXM -> E MEM). Within a pool two values can only meet if they are on the same trajectory
 *     (a value at position p at cycle t is at p +- 1 at t + 1), and then they do meet, so the
 *     reservation is one bit per trajectory: t - p eastward, t + p westward.
 * Queues issue in order, so after placement each queue's instructions are sorted by cycle and the
 * gaps filled with nop (lower_tsp.c). On these tables the units' own rules: MEM reads and writes
 * (read and write ports, banks, the rule that pairs a read with an adjacent write) and VXM
 * operations (the ALUs' queues and latches, chaining through a latch). One file, so the
 * reservations inline into the units' operations (the lowering's hot path).
 */
#include "workloads/tsp/lower_tsp_int.h"

#include <string.h>

#include "core/alloc.h"

/* Within this file instructions go through the static emit, which inlines into the units' hot
 * paths; the lt_ functions below are the same for the other rooms. */
#undef E1
#define E1(L, q, t, op, ...) emit(L, q, t, op, LT_NOPND(__VA_ARGS__), (int32_t[]){__VA_ARGS__})

/* The pools, in three sets, one per mode of the lowering (lower_tsp.c, MODES): [0] the wide ones, where
 * values the VXM reads from the east and its int8 results to the west MEM may take the streams of the
 * others' stretches, their own streams first; [1] the same, from their first stream on (the order
 * whose text fits where [0]'s with the west planes alone does not: MobileNetV2's); [2] the narrow ones
 * every program was scheduled with before (the last try of a model whose text does not fit otherwise). */
const lt_pool lt_pool_sets[3][P_COUNT] = {
    {
        [P_WGT] = {WEST, 0, 16, SEG_W, 0},              /* W MEM -> MXM: weight rows, one iw of 16 streams */
        [P_E2V_W] = {WEST, 0, 28, SEG_V | SEG_E, 16},   /* E MEM -> VXM: partial sums, bias, scales, the east
                                                         * planes' products; s16w-s27w first, then beside
                                                         * P_WGT's rows (other stretches) */
        [P_ACT] = {WEST, 28, 2, SEG_W | SEG_V, 0},      /* W MEM, VXM -> MXM: activations */
        [P_FROMV_W] = {WEST, 16, 16, SEG_W | SEG_V, 14}, /* VXM -> W MEM: int8 results; s30w-s31w first, then
                                                         * where P_E2V_W and P_ACT leave a trajectory free */
        [P_W2V_E] = {EAST, 0, 20, SEG_W | SEG_V, 0},    /* W MEM and W MXM -> VXM: activations, products */
        [P_FROMV_E] = {EAST, 20, 12, SEG_V | SEG_E, 0}, /* VXM -> E MEM: partial sums */
        [P_PACK_W] = {WEST, 16, 16, SEG_W | SEG_V, 0},  /* VXM -> W MEM: packed taps (products.c), on the
                                                         * streams of P_E2V_W and P_FROMV_W where their
                                                         * trajectories are free (a stream is reserved per
                                                         * trajectory and stretch, whichever pool takes it) */
        [P_EACT] = {EAST, 0, 20, SEG_ALL, 16},          /* W MEM -> MXM E0/E1: activations, past the VXM and
                                                         * the east MEM (E MEM -> MXM E0/E1 weight rows take
                                                         * s0e-s15e east of the VXM: SEG_E); s16e-s19e
                                                         * first, so an east plane's lw of 16 rows finds
                                                         * s0e-s15e free beside the passes */
    },
    {
        [P_WGT] = {WEST, 0, 16, SEG_W, 0},
        [P_E2V_W] = {WEST, 0, 28, SEG_V | SEG_E, 0},
        [P_ACT] = {WEST, 28, 2, SEG_W | SEG_V, 0},
        [P_FROMV_W] = {WEST, 16, 16, SEG_W | SEG_V, 0},
        [P_W2V_E] = {EAST, 0, 20, SEG_W | SEG_V, 0},
        [P_FROMV_E] = {EAST, 20, 12, SEG_V | SEG_E, 0},
        [P_PACK_W] = {WEST, 16, 16, SEG_W | SEG_V, 0},
        [P_EACT] = {EAST, 0, 20, SEG_ALL, 0},
    },
    {
        [P_WGT] = {WEST, 0, 16, SEG_W, 0},
        [P_E2V_W] = {WEST, 16, 12, SEG_V | SEG_E, 0},
        [P_ACT] = {WEST, 28, 2, SEG_W | SEG_V, 0},
        [P_FROMV_W] = {WEST, 30, 2, SEG_W | SEG_V, 0},
        [P_W2V_E] = {EAST, 0, 20, SEG_W | SEG_V, 0},
        [P_FROMV_E] = {EAST, 20, 12, SEG_V | SEG_E, 0},
        [P_PACK_W] = {WEST, 16, 16, SEG_W | SEG_V, 0},
        [P_EACT] = {EAST, 0, 20, SEG_ALL, 0},
    },
};

/* ---- bitmaps over cycles ---- */

/* Set or clear bit i, growing the map; -1 when out of memory. */
static int bput(bits *b, uint64_t i, bool v)
{
    size_t k = (size_t)(i >> 6);
    if (k >= b->nw) {
        if (!v)
            return 0;
        size_t n = b->nw ? b->nw : 64;
        while (n <= k)
            n *= 2;
        uint64_t *w = ts_realloc(b->w, n * sizeof *w);
        if (!w)
            return -1;
        memset(w + b->nw, 0, (n - b->nw) * sizeof *w);
        b->w = w;
        b->nw = n;
    }
    if (v)
        b->w[k] |= 1ull << (i & 63);
    else
        b->w[k] &= ~(1ull << (i & 63));
    return 0;
}

/* ---- the undo log and pending instructions ---- */

/* The next instruction tag (1..65535, wrapping). */
uint32_t lt_new_tag(lt *L)
{
    L->tag = L->tag % 65535 + 1;
    return L->tag;
}

/* Bits i .. i + n - 1 of b (n <= 64, i a multiple of 64 or the n bits within two words), bit 0 first. */
static uint64_t bits_at(const bits *b, uint64_t i, uint32_t n)
{
    size_t k = (size_t)(i >> 6);
    uint32_t sh = (uint32_t)(i & 63);
    uint64_t v = k < b->nw ? b->w[k] >> sh : 0;
    if (sh && sh + n > 64 && k + 1 < b->nw)
        v |= b->w[k + 1] << (64 - sh);
    return n == 64 ? v : v & ((1ull << n) - 1);
}

/* Would taking cycle i of a queue's issue bitmap b leave no free cycle in its aligned window of
 * L->fwin cycles? Every queue keeps one, for an ifetch (ifetch.c). The window's cycles are read
 * as words: fwin is at most 64 (the lowering's fetch window, 40 cycles on tsp_v1). */
static bool window_full(const lt *L, const bits *b, uint64_t i)
{
    if (!L->fwin || (const void *)b < (const void *)L->q || (const void *)b >= (const void *)(L->q + L->nq))
        return false;
    const lq *q = &L->q[(size_t)((const char *)b - (const char *)L->q) / sizeof *L->q];
    uint64_t w0 = i / L->fwin * L->fwin;
    if (L->fwin > 64) { /* not on the targets the lowering knows, but kept exact */
        for (uint64_t t = w0; t < w0 + L->fwin; t++)
            if (t != i && !lt_bget(&q->issue, t) && !lt_bget(&q->wr, t))
                return false;
        return true;
    }
    uint64_t all = L->fwin == 64 ? ~0ull : (1ull << L->fwin) - 1;
    uint64_t used = bits_at(&q->issue, w0, L->fwin) | bits_at(&q->wr, w0, L->fwin) | 1ull << (i - w0);
    return used == all;
}

/* Take bit i of b (logged for undo); false if it is taken or would fill a queue's fetch window. */
static bool take(lt *L, bits *b, uint64_t i)
{
    if (lt_bget(b, i) || window_full(L, b, i))
        return false;
    if (L->nu == L->capu && ts_grow((void **)&L->u, &L->capu, L->nu + 1, sizeof *L->u)) {
        L->oom = true;
        return false;
    }
    size_t k = (size_t)(i >> 6);
    if (k < b->nw)
        b->w[k] |= 1ull << (i & 63);
    else if (bput(b, i, true)) {
        L->oom = true;
        return false;
    }
    L->u[L->nu++] = (undo){b, i};
    return true;
}

/* Give back the reservations taken since mark and drop the instructions pending since pmark. */
static void undo_to(lt *L, size_t mark, size_t pmark)
{
    while (L->nu > mark) { /* every logged bit lies in its map (take grew it) */
        L->nu--;
        const undo *u = &L->u[L->nu];
        u->b->w[u->i >> 6] &= ~(1ull << (u->i & 63));
    }
    L->npd = pmark;
}

/* A pending instruction: op with n operands a on queue q at cycle t (see E1). */
static void emit(lt *L, uint32_t q, uint64_t t, uint16_t op, int n, const int32_t *a)
{
    if (L->npd == L->cappd && ts_grow((void **)&L->pd, &L->cappd, L->npd + 1, sizeof *L->pd)) {
        L->oom = true;
        return;
    }
    pend *p = &L->pd[L->npd++];
    memset(p, 0, sizeof *p);
    p->q = q;
    p->t = t;
    p->in.op = op;
    for (int i = 0; i < n; i++)
        p->in.a[i] = a[i];
}

/* Make the pending instructions and reservations permanent, counting them in the current layer. */
int lt_keep(lt *L)
{
    for (size_t i = 0; i < L->npd; i++) {
        pend *p = &L->pd[i];
        lq *q = &L->q[p->q];
        if (ts_grow((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v)) {
            L->oom = true;
            return -1;
        }
        q->v[q->n++] = (rec){p->t, p->in, L->nlayers ? (uint32_t)(L->nlayers - 1) : UINT32_MAX};
        if (p->t > L->last)
            L->last = p->t;
        if (L->nlayers) {
            ts_lower_tsp_layer *y = &L->layers[L->nlayers - 1];
            y->instructions++;
            if (p->in.op == LT_READ || p->in.op == LT_WRITE)
                y->mem_bytes += L->VL;
            else if (p->in.op == LT_ABC)
                y->mxm_macs += (uint64_t)L->VL * L->VL;
            else if (p->q >= L->tg->q_vxm && p->q < L->tg->q_mxm)
                y->vxm_ops++;
        }
    }
    L->npd = 0;
    L->nu = 0;
    return 0;
}

/* The 64 cycles from base that need_next read last: bad has bit i set where a need is taken at base
 * + i. A failed try of lt_search leaves every map as it was, so its next try reads the window again
 * from here, where it read every need's words again one cycle on (a third of the lowering's time
 * for resnet50 on tsp_v1). */
typedef struct need_win {
    uint64_t base, bad;
    bool valid;
} need_win;

/* The first cycle from t (up to end, else end + 1 or a little past) at which every need of n is
 * free: 64 cycles at a time, each need read as a word of its bitmap; win (unchanged maps since it
 * was read) answers from the last window read where it can. */
static uint64_t need_next(const lt *L, const lt_need *n, uint64_t t, uint64_t end, need_win *win);

/* Place a group at the first cycle from *t at which fit succeeds, and keep it: *t and *w (the
 * cycle of its last write) are then the group's. Cycles where a need of the group is taken are
 * not tried. A failed try leaves nothing behind, the rotating start of the slice and ALU choices
 * included, so skipping it changes nothing. Gives up after GIVE_UP cycles with TS_EINTERNAL
 * "<op> '<name>': no cycle found for a group of instructions" (the node's name only if `named`). */
ts_status lt_search(lt *L, lt_fit fit, const void *arg, const lt_need *need, uint64_t *t, uint64_t *w,
                    const ts_graph_node *nd, bool named)
{
    uint32_t rot = L->rot;
    lt_kept ks = L->ks, kb = L->kb;
    need_win win = {0, 0, false};
    for (uint64_t t0 = *t;; (*t)++) {
        size_t mark = L->nu, pm = L->npd;
        if (need)
            *t = need_next(L, need, *t, t0 + GIVE_UP, &win);
        if (*t - t0 > GIVE_UP) {
            if (named)
                return ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no cycle found for a group of instructions",
                                  ts_graph_op_name(nd->op), nd->name);
            return ts_err_set(L->err, TS_EINTERNAL, "%s: no cycle found for a group of instructions",
                              ts_graph_op_name(nd->op));
        }
        L->rdmax = 0;
        *w = 0;
        if (fit(L, arg, *t, w))
            break;
        undo_to(L, mark, pm);
        L->rot = rot; /* a failed try leaves nothing behind, the rotation and the kept latch included */
        L->ks = ks;
        L->kb = kb;
        if (L->oom)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    if (lt_keep(L))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* ---- stream registers ---- */

/* Whether stream s of direction dir is free on trajectory key in every stretch of seg. */
static bool stream_free(const lt *L, int dir, int s, uint64_t key, unsigned seg)
{
    for (int g = 0; g < LT_SEGS; g++)
        if ((seg >> g & 1) && lt_bget(&L->diag[g][dir][s], key))
            return false;
    return true;
}

/* Reserve stream s of direction dir, in the stretches seg, for a value that is at position pos at
 * cycle t. */
static bool take_stream(lt *L, int dir, int s, uint64_t t, uint32_t pos, unsigned seg)
{
    uint64_t key = lt_diag_key(dir, t, pos);
    for (int g = 0; g < LT_SEGS; g++)
        if ((seg >> g & 1) && !take(L, &L->diag[g][dir][s], key))
            return false;
    return true;
}

/* Reserve an aligned group of w streams of a pool; *s gets the first. */
static bool take_group(lt *L, int pool, int w, uint64_t t, uint32_t pos, int *s)
{
    const lt_pool *p = &L->pools[pool];
    int dir = p->dir;
    unsigned seg = p->seg;
    int n = p->n, from = p->from;
    for (int j = 0; j + w <= n; j += w) {
        size_t mark = L->nu, pm = L->npd;
        int i = from + j < n ? from + j : from + j - n, f = p->first + i, k;
        if (i + w > n)
            continue;
        for (k = 0; k < w && stream_free(L, dir, f + k, lt_diag_key(dir, t, pos), seg); k++)
            ;
        if (k < w)
            continue;
        for (k = 0; k < w && take_stream(L, dir, f + k, t, pos, seg); k++)
            ;
        if (k == w) {
            *s = f;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* ---- queues ---- */

/* A queue's instructions in issue order (qsort): by cycle, a read before the write of the same cycle,
 * a `repeat` (LEAN) after the instruction it repeats. */
static int rec_rank(const rec *r)
{
    return r->in.op == LT_WRITE ? 1 : r->in.op == LT_REPEAT ? 2 : 0;
}

int lt_cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return rec_rank(x) - rec_rank(y);
}

/* ---- for the other rooms ---- */

int lt_bput(bits *b, uint64_t i, bool v)
{
    return bput(b, i, v);
}

bool lt_take(lt *L, bits *b, uint64_t i)
{
    return take(L, b, i);
}

void lt_undo_to(lt *L, size_t mark, size_t pmark)
{
    undo_to(L, mark, pmark);
}

void lt_emit(lt *L, uint32_t q, uint64_t t, uint16_t op, int n, const int32_t *a)
{
    emit(L, q, t, op, n, a);
}

bool lt_take_stream(lt *L, int dir, int s, uint64_t t, uint32_t pos, unsigned seg)
{
    return take_stream(L, dir, s, t, pos, seg);
}

bool lt_stream_free(const lt *L, int dir, int s, uint64_t key, unsigned seg)
{
    return stream_free(L, dir, s, key, seg);
}

bool lt_take_group(lt *L, int pool, int w, uint64_t t, uint32_t pos, int *s)
{
    return take_group(L, pool, w, t, pos, s);
}

/* ---- MEM slices ---- */

static uint32_t bank_of(const lt *L, uint32_t word)
{
    return (uint32_t)(word / (L->tg->words / L->tg->banks));
}

/* The issue rule: a read and a write adjacent in a MEM queue issue together (docs/tsp.md). A
 * cycle with a read and a write is emitted as a pair, oriented to follow the cycle before; a
 * cycle with one of them must not sit next to a cycle holding only the other. May an operation
 * of one class (its slots `mine`, the other class's `other`) go at cycle t? */
static bool mem_alone_ok(const bits *mine, const bits *other, uint64_t t)
{
    if (lt_bget(other, t))
        return true; /* it makes a pair */
    if (lt_bget(other, t + 1) && !lt_bget(mine, t + 1))
        return false;
    if (t > 0 && lt_bget(other, t - 1) && !lt_bget(mine, t - 1))
        return false;
    return true;
}

/* A MEM read of (mem, word) whose value reaches position pc on stream (dir, s) at cycle ta, issued
 * no earlier than lb. The stream itself is reserved by the caller. */
bool lt_rd(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag, uint64_t lb)
{
    uint32_t ps = lt_mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)ps - pc : (int64_t)pc - ps;
    if (dist <= 0)
        return false;
    int64_t r = (int64_t)ta - L->tg->d_func.read - dist;
    if (r < 0 || (uint64_t)r < lb)
        return false;
    if (!mem_alone_ok(&L->q[mem].issue, &L->q[mem].wr, (uint64_t)r))
        return false;
    bits *bk = &L->bank[mem][bank_of(L, word)];
    if (lt_bget(&L->q[mem].issue, (uint64_t)r) || lt_bget(bk, (uint64_t)r))
        return false;
    if (!take(L, &L->q[mem].issue, (uint64_t)r) || !take(L, bk, (uint64_t)r))
        return false;
    E1(L, mem, (uint64_t)r, LT_READ, (int32_t)word, lt_sreg(L, dir, s), (int32_t)tag);
    if ((uint64_t)r > L->rdmax)
        L->rdmax = (uint64_t)r;
    return true;
}

/* The same from any slice of a hemisphere that holds the word (replicated constants, zeros); a word
 * of the compact layout's constants (lt_const_region) from the slices of its group. */
bool lt_rd_any(lt *L, int hemi, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag)
{
    uint32_t n = hemi ? L->nE : L->nW, b = hemi ? L->nW : 0;
    if (hemi && word >> LT_GSHIFT) {
        n = L->nE / LT_CGROUPS;
        b = L->nW + ((word >> LT_GSHIFT) - 1) * n;
        word &= (1u << LT_GSHIFT) - 1;
    }
    /* LEAN (lower_tsp.c): a stream's reads of one word start at a slice of their own, so the reads
     * of consecutive cycles (an install's rows of zeros) come from one slice back to back, without
     * a nop between each two */
    uint32_t r0 = L->lean ? (uint32_t)s : L->rot;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mem = b + (r0 + i) % n;
        size_t mark = L->nu, pm = L->npd;
        if (lt_rd(L, mem, word, ta, pc, dir, s, tag, 0)) {
            L->rot++;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* A MEM write of the value born at position pp at cycle tb on stream (dir, s) into (mem, word),
 * at the cycle it passes the slice, which must be after lb. */
bool lt_wr(lt *L, uint32_t mem, uint32_t word, uint64_t tb, uint32_t pp, int dir, int s, uint32_t tag, uint64_t lb,
           uint64_t *when)
{
    uint32_t ps = lt_mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)pp - ps : (int64_t)ps - pp;
    if (dist <= 0)
        return false;
    uint64_t w = tb + (uint64_t)dist;
    if (w <= lb || !mem_alone_ok(&L->q[mem].wr, &L->q[mem].issue, w))
        return false;
    bits *bk = &L->bank[mem][bank_of(L, word)];
    if (lt_bget(&L->q[mem].wr, w) || lt_bget(bk, w + L->tg->d_func.write))
        return false;
    if (!take(L, &L->q[mem].wr, w) || !take(L, bk, w + L->tg->d_func.write))
        return false;
    E1(L, mem, w, LT_WRITE, (int32_t)word, lt_sreg(L, dir, s), (int32_t)tag);
    if (when)
        *when = w;
    return true;
}

/* ---- VXM operations on values ---- */

/* Keep latch value v through cycle t (a stream value must arrive exactly at t). */
static bool hold(lt *L, val *v, uint64_t t)
{
    if (v->alu < 0)
        return v->t == t;
    for (uint64_t c = v->held + 1; c <= t; c++)
        if (!take(L, &L->lat[v->alu], c))
            return false;
    if (t > v->held)
        v->held = t;
    return true;
}

/* Keep latch value v through cycle t (taken now, so later choices of ALU see it): false when
 * another result lands in that latch before. */
bool lt_hold(lt *L, val *v, uint64_t t)
{
    return hold(L, v, t);
}

/* The register that names v as an operand. */
static int32_t vreg(const lt *L, const val *v)
{
    return v->alu >= 0 ? lt_areg(L, v->alu) : lt_sreg(L, v->dir, v->s);
}

/* Issue a VXM instruction at cycle t on some free ALU. op is ADD/ADDS/SUBS/MUL (binary), RELU,
 * CVT (unary; to/from types) or MASK (unary; from is the immediate). pool is the destination
 * stream pool or -1 for the latch only; w the destination width. *out gets the latch value; *ds
 * the destination stream. */
/* A VXM operation's latency. */
uint32_t lt_vop_lat(const lt *L, uint16_t op)
{
    const ts_tsp_dfunc *f = &L->tg->d_func;
    return op == LT_MUL ? f->mul : op == LT_RELU ? f->relu : op == LT_CVT ? f->cvt : op == LT_MASK ? f->mask
         : op == LT_EXP || op == LT_TANH ? f->exp : op == LT_RSQRT ? f->rsqrt : f->add;
}

bool lt_vop(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
            uint32_t tag, val *out, int *ds)
{
    return lt_vop_tags(L, op, type, from, t, a, b, pool, w, tag, tag, out, ds);
}

/* lt_vop whose operands carry itag and whose result carries otag (a value meeting a kept latch's). */
bool lt_vop_tags(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
                 uint32_t itag, uint32_t otag, val *out, int *ds)
{
    uint32_t d = lt_vop_lat(L, op);
    if (!hold(L, a, t) || (b && !hold(L, b, t)))
        return false;
    int s = -1;
    if (pool >= 0 && !take_group(L, pool, w, t + d, L->tg->pos_vxm, &s))
        return false;
    for (uint32_t i = 0; i < L->nalu; i++) {
        /* LEAN (lower_tsp.c): the first free ALU, so each ALU's queue issues in runs without nops */
        uint32_t alu = L->lean ? i : (L->rot + i) % L->nalu, q = L->tg->q_vxm + alu;
        size_t mark = L->nu, pm = L->npd;
        if (lt_bget(&L->q[q].issue, t) || lt_bget(&L->lat[alu], t + d))
            continue;
        if (take(L, &L->q[q].issue, t) && take(L, &L->lat[alu], t + d)) {
            int32_t dst = s >= 0 ? lt_sreg(L, L->pools[pool].dir, s) : L->tg->reg.nul;
            if (op == LT_CVT)
                E1(L, q, t, op, type, from, dst, vreg(L, a), (int32_t)itag, (int32_t)otag);
            else if (op == LT_MASK) /* from: the immediate */
                E1(L, q, t, op, type, dst, vreg(L, a), from, (int32_t)itag, (int32_t)otag);
            else if (b)
                E1(L, q, t, op, type, dst, vreg(L, a), vreg(L, b), (int32_t)itag, (int32_t)otag);
            else
                E1(L, q, t, op, type, dst, vreg(L, a), (int32_t)itag, (int32_t)otag);
            *out = (val){.alu = (int)alu, .t = t + d, .held = t + d};
            if (ds)
                *ds = s;
            L->rot++;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* A stream value read from W MEM reaching the VXM at cycle ta (pool P_W2V_E). */
bool lt_vin_w(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, val *v)
{
    int s;
    if (!take_group(L, P_W2V_E, 1, ta, L->tg->pos_vxm, &s) ||
        !lt_rd(L, mem, word, ta, L->tg->pos_vxm, EAST, s, tag, lb))
        return false;
    *v = (val){.alu = -1, .dir = EAST, .s = s, .t = ta};
    return true;
}

/* The same, but a value from the slice of `other` (which arrives at ta too) comes earlier and
 * waits in an ALU latch (mask with all ones: a copy), since one slice reads one vector a cycle. */
bool lt_vin_w2(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, const val *other,
               uint32_t other_mem, val *v)
{
    if (mem != other_mem || other->alu >= 0)
        return lt_vin_w(L, mem, word, ta, tag, lb, v);
    uint32_t d = L->tg->d_func.mask;
    val raw;
    if (ta < d || !lt_vin_w(L, mem, word, ta - d, tag, lb, &raw))
        return false;
    for (uint32_t i = 0; i < L->nalu; i++) {
        uint32_t alu = (L->rot + i) % L->nalu, q = L->tg->q_vxm + alu;
        size_t mark = L->nu, pm = L->npd;
        if (lt_bget(&L->q[q].issue, ta - d) || lt_bget(&L->lat[alu], ta))
            continue;
        if (take(L, &L->q[q].issue, ta - d) && take(L, &L->lat[alu], ta)) {
            E1(L, q, ta - d, LT_MASK, L->tg->reg.i8, L->tg->reg.nul, vreg(L, &raw), 0xff, (int32_t)tag, (int32_t)tag);
            *v = (val){.alu = (int)alu, .t = ta, .held = ta};
            L->rot++;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* A constant of n words (word .. word + n - 1 of every east MEM slice) reaching the VXM at cycle t
 * on a group of n streams of pool P_E2V_W, word i on the group's stream i. */
static bool east_const_in(lt *L, uint32_t word, int n, uint64_t t, uint32_t tag, val *v)
{
    uint32_t pv = L->tg->pos_vxm;
    int s;
    if (!take_group(L, P_E2V_W, n, t, pv, &s))
        return false;
    for (int b = 0; b < n; b++)
        if (!lt_rd_any(L, 1, word + (uint32_t)b, t, pv, WEST, s + b, tag))
            return false;
    *v = (val){.alu = -1, .dir = WEST, .s = s, .t = t};
    return true;
}

/* An f32 scale, replicated in words sword..sword + 3 of every east MEM slice (one byte plane each),
 * reaching the VXM at cycle t on a group of 4 streams (pool P_E2V_W). */
bool lt_scale_in(lt *L, uint32_t sword, uint64_t t, uint32_t tag, val *v)
{
    return east_const_in(L, sword, 4, t, tag, v);
}

/* How far past the cycle that reads it a kept latch is reserved at once (a product's passes come
 * in about the order of their cycles, so most find the latch held already), and the longest gap
 * a latch is held across to the next read (beyond it a fresh latch is cheaper than an ALU idle). */
#define KEEP_AHEAD 256
#define KEEP_GAP 256

/* Reserve the latch of ALU alu from cycle `from` through `to`: false (and nothing taken) if another
 * result lands there before. */
static bool keep_latch(lt *L, uint32_t alu, uint64_t from, uint64_t to)
{
    size_t mark = L->nu, pm = L->npd;
    for (uint64_t c = from; c <= to; c++)
        if (!take(L, &L->lat[alu], c)) {
            undo_to(L, mark, pm);
            return false;
        }
    return true;
}

/* The 4-word constant of word `word` (lt_scale_in) in a latch read at cycle t: *v the latch, whose
 * value carries *ktag. A latch of k that holds it at t is used, or the last one before t held on
 * to t where it is free and the gap is short, and held on ahead to t + KEEP_AHEAD (as far as it is
 * free) once less than half of that is left, so the passes placed after find it still held (other
 * results would take the latch's cycles past `held`); otherwise, while k has fewer than
 * LT_KEPT_MAX latches, the constant (of type `type`: f32 or i32) is copied afresh by `mask` with all
 * ones, tagged `tag`, into an ALU whose latch is free from t through t + KEEP_AHEAD. False (nothing
 * taken) where none of these fits: the caller reads the constant from the east MEM as before. */
bool lt_kept_in(lt *L, lt_kept *k, uint32_t word, int32_t type, uint64_t t, uint32_t tag, val *v, uint32_t *ktag)
{
    if (k->word != word)
        *k = (lt_kept){.word = word};
    int last = -1;
    for (uint32_t i = 0; i < k->n; i++) {
        if (k->l[i].t0 > t)
            continue;
        if (t <= k->l[i].held) {
            last = (int)i;
            break;
        }
        if (last < 0 || k->l[i].held > k->l[last].held)
            last = (int)i;
    }
    if (last >= 0 && t > k->l[last].held) {
        if (t - k->l[last].held <= KEEP_GAP && keep_latch(L, k->l[last].alu, k->l[last].held + 1, t))
            k->l[last].held = t;
        else
            last = -1;
    }
    if (last >= 0 && k->l[last].held < t + KEEP_AHEAD / 2) /* held on ahead of the reads, as far as it is free */
        while (k->l[last].held < t + KEEP_AHEAD && take(L, &L->lat[k->l[last].alu], k->l[last].held + 1))
            k->l[last].held++;
    if (last < 0) {
        uint32_t d = L->tg->d_func.mask;
        size_t mark = L->nu, pm = L->npd;
        val raw;
        if (k->n == LT_KEPT_MAX || t < d || !east_const_in(L, word, 4, t - d, tag, &raw)) {
            undo_to(L, mark, pm);
            return false;
        }
        for (uint32_t i = 0; i < L->nalu && last < 0; i++) {
            uint32_t alu = (L->rot + i) % L->nalu, q = L->tg->q_vxm + alu;
            if (lt_bget(&L->q[q].issue, t - d) || lt_bget(&L->lat[alu], t) || lt_bget(&L->lat[alu], t + KEEP_AHEAD) ||
                !keep_latch(L, alu, t, t + KEEP_AHEAD))
                continue;
            if (!take(L, &L->q[q].issue, t - d)) {
                undo_to(L, mark, pm);
                return false;
            }
            E1(L, q, t - d, LT_MASK, type, L->tg->reg.nul, vreg(L, &raw), -1, (int32_t)tag, (int32_t)tag);
            last = (int)k->n++;
            k->l[last].alu = alu;
            k->l[last].tag = tag;
            k->l[last].t0 = k->l[last].used = t;
            k->l[last].held = t + KEEP_AHEAD;
            L->rot++;
        }
        if (last < 0) {
            undo_to(L, mark, pm);
            return false;
        }
    }
    *v = (val){.alu = (int)k->l[last].alu, .t = t, .held = k->l[last].held};
    *ktag = k->l[last].tag;
    if (t > k->l[last].used)
        k->l[last].used = t;
    return true;
}

/* The product that kept k is placed: its latches' cycles after their last reads are free again. */
void lt_kept_end(lt *L, lt_kept *k)
{
    for (uint32_t i = 0; i < k->n; i++)
        for (uint64_t c = k->l[i].used + 1; c <= k->l[i].held; c++)
            bput(&L->lat[k->l[i].alu], c, false);
    *k = (lt_kept){.n = 0};
}

/* An int32 bias, words bword..bword + 3 of every east MEM slice (one byte plane each), the same way. */
bool lt_bias_in(lt *L, uint32_t bword, uint64_t t, uint32_t tag, val *v)
{
    return east_const_in(L, bword, 4, t, tag, v);
}

/* An int8 constant vector in word `word` of the east MEM (lt_byte_const) reaching the VXM at cycle t
 * on one stream of pool P_E2V_W. */
bool lt_byte_in(lt *L, uint32_t word, uint64_t t, uint32_t tag, val *v)
{
    return east_const_in(L, word, 1, t, tag, v);
}

/* ---- a group's needs ---- */

/* Bits i .. i + 63 of b, bit 0 first; bits before 0 or past the map read as free. */
static uint64_t word_at(const bits *b, int64_t i)
{
    if (i <= -64)
        return 0;
    if (i < 0)
        return word_at(b, 0) << (uint32_t)-i;
    size_t k = (size_t)((uint64_t)i >> 6);
    uint32_t sh = (uint32_t)(i & 63);
    uint64_t lo = k < b->nw ? b->w[k] : 0;
    if (!sh)
        return lo;
    uint64_t hi = k + 1 < b->nw ? b->w[k + 1] : 0;
    return lo >> sh | hi << (64 - sh);
}

static uint64_t need_next(const lt *L, const lt_need *n, uint64_t t, uint64_t end, need_win *win)
{
    if (t < n->tmin)
        t = n->tmin;
    if (win->valid && t >= win->base && t - win->base < 64) {
        uint64_t avail = ~win->bad >> (t - win->base);
        if (avail)
            return t + (uint64_t)__builtin_ctzll(avail);
        t = win->base + 64;
    }
    for (;; t += 64) {
        if (t > end)
            return t;
        uint64_t bad = 0;
        int64_t ti = (int64_t)t;
        for (uint32_t i = 0; i < n->nb && bad != ~0ull; i++)
            bad |= word_at(n->b[i].b, ti + n->b[i].off);
        for (uint32_t i = 0; i < n->ns && bad != ~0ull; i++) {
            const lt_pool *p = &L->pools[n->s[i].pool];
            uint64_t all = ~0ull;
            for (int g = 0; g + n->s[i].w <= p->n && all; g += n->s[i].w) {
                uint64_t any = 0;
                for (int k = 0; k < n->s[i].w; k++)
                    for (int sg = 0; sg < LT_SEGS; sg++)
                        if (p->seg >> sg & 1)
                            any |= word_at(&L->diag[sg][p->dir][p->first + g + k], ti + n->s[i].off);
                all &= any;
            }
            bad |= all;
        }
        for (uint32_t i = 0; i < n->na && bad != ~0ull; i++) {
            uint64_t all = ~0ull;
            for (uint32_t a = 0; a < L->nalu && all; a++)
                all &= word_at(&L->q[L->tg->q_vxm + a].issue, ti + n->a[i].off) |
                       word_at(&L->lat[a], ti + n->a[i].off + n->a[i].d);
            bad |= all;
        }
        *win = (need_win){t, bad, true};
        if (bad != ~0ull)
            return t + (uint64_t)__builtin_ctzll(~bad);
    }
}

static void need_bit(lt_need *n, const bits *b, int64_t off)
{
    if (n->nb < LT_NEED_MAX)
        n->b[n->nb++] = (lt_need_bit){b, off};
}

/* A MEM read as lt_rd makes it (the stream is the caller's). */
void lt_need_rd(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta, uint32_t pc, int dir)
{
    uint32_t ps = lt_mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)ps - pc : (int64_t)pc - ps, r = ta - L->tg->d_func.read - dist;
    if (dist <= 0)
        return; /* lt_rd fails at every cycle: the try says so */
    need_bit(n, &L->q[mem].issue, r);
    need_bit(n, &L->bank[mem][bank_of(L, word)], r);
}

/* A MEM write as lt_wr makes it, after cycle lb. */
void lt_need_wr(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t tb, uint32_t pp, int dir,
                uint64_t lb)
{
    uint32_t ps = lt_mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)pp - ps : (int64_t)ps - pp;
    if (dist <= 0)
        return;
    if ((int64_t)lb >= tb + dist && (uint64_t)((int64_t)lb - tb - dist) + 1 > n->tmin)
        n->tmin = (uint64_t)((int64_t)lb - tb - dist) + 1; /* lt_wr: the write's cycle after lb */
    need_bit(n, &L->q[mem].wr, tb + dist);
    need_bit(n, &L->bank[mem][bank_of(L, word)], tb + dist + L->tg->d_func.write);
}

/* A group of w streams of a pool as take_group takes it. */
void lt_need_group(const lt *L, lt_need *n, int pool, int w, int64_t t, uint32_t pos)
{
    (void)L;
    if (n->ns < LT_NEED_MAX / 2)
        n->s[n->ns++] = (lt_need_streams){pool, w,
                                          L->pools[pool].dir == EAST ? t + DIAG_OFF - pos : t + (int64_t)pos};
}

/* A VXM operation as lt_vop issues it: an ALU, and the destination streams when pool >= 0. */
void lt_need_vop(const lt *L, lt_need *n, uint16_t op, int64_t t, int pool, int w)
{
    uint32_t d = lt_vop_lat(L, op);
    if (n->na < LT_NEED_MAX / 2)
        n->a[n->na++] = (lt_need_alu){t, d};
    if (pool >= 0)
        lt_need_group(L, n, pool, w, t + d, L->tg->pos_vxm);
}

/* A value read from W MEM to the VXM as lt_vin_w reads it. */
void lt_need_vin(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta)
{
    lt_need_group(L, n, P_W2V_E, 1, ta, L->tg->pos_vxm);
    lt_need_rd(L, n, mem, word, ta, L->tg->pos_vxm, EAST);
}

/* The same as lt_vin_w2 reads it beside a value from other_mem (a stream value when other_stream). */
void lt_need_vin2(const lt *L, lt_need *n, uint32_t mem, uint32_t word, int64_t ta, bool other_stream,
                  uint32_t other_mem)
{
    if (mem != other_mem || !other_stream) {
        lt_need_vin(L, n, mem, word, ta);
        return;
    }
    uint32_t d = L->tg->d_func.mask;
    lt_need_vin(L, n, mem, word, ta - d);
    if (n->na < LT_NEED_MAX / 2)
        n->a[n->na++] = (lt_need_alu){ta - d, d};
}
