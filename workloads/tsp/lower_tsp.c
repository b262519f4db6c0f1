/* workloads/tsp/lower_tsp.c — graph to one static TSP schedule (see lower_tsp.h, docs/lowering-tsp.md).
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
 * gaps filled with nop.
 */
#include "workloads/tsp/lower_tsp.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/lower/fill.h"

/* Opcode numbers: the TSP's one table. */
enum lt_op {
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc) LT_##id,
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) LT_##id,
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
    LT_COUNT
};

enum { EAST = 0, WEST = 1 };

/* Stream pools (32 streams per direction): first stream and count. Groups of 4 (int32, f32) start
 * at multiples of 4. */
enum { P_WGT, P_ACT, P_E2V_W, P_FROMV_W, P_W2V_E, P_FROMV_E, P_COUNT };
static const struct { int dir; int first, n; } pools[P_COUNT] = {
    [P_WGT] = {WEST, 0, 16},     /* W MEM -> MXM: weight rows, one iw of 16 streams */
    [P_E2V_W] = {WEST, 16, 12},  /* E MEM -> VXM: partial sums, bias, scales */
    [P_ACT] = {WEST, 28, 2},     /* W MEM -> MXM: activations */
    [P_FROMV_W] = {WEST, 30, 2}, /* VXM -> W MEM: int8 results */
    [P_W2V_E] = {EAST, 0, 20},   /* W MEM and W MXM -> VXM: activations, products */
    [P_FROMV_E] = {EAST, 20, 12},/* VXM -> E MEM: partial sums */
};

#define IW_STREAMS 16
#define DUAL_PASSES 128  /* a block streaming this many vectors is installed on both west planes */
#define GIVE_UP 1000000u /* cycles searched for one group before the lowering gives up */
#define DIAG_OFF 65536u

/* ---- bitmaps over cycles ---- */

typedef struct bits { uint64_t *w; size_t nw; } bits;

static bool bget(const bits *b, uint64_t i)
{
    size_t k = (size_t)(i >> 6);
    return k < b->nw && (b->w[k] >> (i & 63)) & 1;
}

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

/* ---- the scheduler's state ---- */

typedef struct rec { uint64_t t; ts_insn in; } rec;
typedef struct lq { rec *v; size_t n, cap; bits issue, wr; } lq;
typedef struct undo { bits *b; uint64_t i; } undo;
typedef struct pend { uint32_t q; uint64_t t; ts_insn in; } pend;

/* A free range of words (the same range in every slice of a hemisphere). */
typedef struct fr { uint32_t base, len; uint64_t avail; } fr;
typedef struct alloc { fr *v; size_t n, cap; uint32_t first, top, limit; } alloc;

/* A placed int8 tensor. */
typedef struct tens {
    bool placed, nonneg, output;
    uint32_t P, T, C;       /* pixels, channel tiles, channels */
    uint32_t base, off, nw; /* region: words base..base+nw in every W slice */
    uint64_t avail;         /* writes into the region only after this cycle */
    uint64_t *ready;        /* per vector: first cycle a read may issue */
    uint64_t last_read;
    int users;              /* consumer nodes not yet scheduled */
    int owner;              /* tensor whose region this is (aliases), else itself */
} tens;

typedef struct lt {
    const ts_graph *g;
    const ts_tsp_target *tg;
    ts_err *err;
    ts_program *prog;
    uint32_t VL, nW, nE, nalu, nq;
    lq *q;
    bits (*bank)[2];       /* [MEM data-segment index][bank] */
    bits lat[16];
    bits diag[2][64];
    undo *u; size_t nu, capu;
    pend *pd; size_t npd, cappd;
    bool oom;
    uint32_t tag;
    uint64_t last;         /* last cycle with an instruction */
    uint64_t rdmax;        /* latest MEM read of the group being placed */
    uint32_t rot;          /* rotating start for slice and ALU choices */
    alloc al[2][2];        /* [hemisphere][bank]: west, east; words below and above half */
    uint32_t half;         /* first word of bank 1 */
    tens *t;               /* per graph tensor */
    /* per-plane: the last abc of the block it holds */
    uint64_t plane_busy[2];
    int next_plane;
    uint32_t zero_e;       /* a word of zeros in every E slice */
    ts_lower_tsp_layer *layers; size_t nlayers, caplayers;
    uint64_t words_used;
    uint32_t fwin;         /* every queue keeps a free cycle in each aligned window of fwin (0: none) */
    uint32_t (*tnext)[2];  /* [MEM data-segment index][bank]: next free word for instruction text */
    uint64_t fetches;
} lt;

/* Register numbers (the target's numbering): stream s of direction dir, the latch of ALU a. */
static int32_t sreg(const lt *L, int dir, int s)
{
    return dir == WEST ? L->tg->reg.west + s : L->tg->reg.east + s;
}

static int32_t areg(const lt *L, int a)
{
    return L->tg->reg.alu + a;
}

static uint32_t new_tag(lt *L)
{
    L->tag = L->tag % 65535 + 1;
    return L->tag;
}

/* Would taking cycle i of a queue's issue bitmap b leave no free cycle in its aligned window of
 * L->fwin cycles? Every queue keeps one, for an ifetch (plan_fetches). */
static bool window_full(const lt *L, const bits *b, uint64_t i)
{
    if (!L->fwin || (const void *)b < (const void *)L->q || (const void *)b >= (const void *)(L->q + L->nq))
        return false;
    const lq *q = &L->q[(size_t)((const char *)b - (const char *)L->q) / sizeof *L->q];
    uint64_t w0 = i / L->fwin * L->fwin;
    for (uint64_t t = w0; t < w0 + L->fwin; t++)
        if (t != i && !bget(&q->issue, t) && !bget(&q->wr, t))
            return false;
    return true;
}

static bool take(lt *L, bits *b, uint64_t i)
{
    if (bget(b, i) || window_full(L, b, i))
        return false;
    if (bput(b, i, true) || ts_grow((void **)&L->u, &L->capu, L->nu + 1, sizeof *L->u)) {
        L->oom = true;
        return false;
    }
    L->u[L->nu++] = (undo){b, i};
    return true;
}

static void undo_to(lt *L, size_t mark, size_t pmark)
{
    while (L->nu > mark) {
        L->nu--;
        bput(L->u[L->nu].b, L->u[L->nu].i, false);
    }
    L->npd = pmark;
}

static void emit(lt *L, uint32_t q, uint64_t t, uint16_t op, int n, const int32_t *a)
{
    if (ts_grow((void **)&L->pd, &L->cappd, L->npd + 1, sizeof *L->pd)) {
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

/* Make the pending instructions and reservations permanent. */
static int keep(lt *L)
{
    for (size_t i = 0; i < L->npd; i++) {
        pend *p = &L->pd[i];
        lq *q = &L->q[p->q];
        if (ts_grow((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v)) {
            L->oom = true;
            return -1;
        }
        q->v[q->n++] = (rec){p->t, p->in};
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

#define E1(L, q, t, op, ...) emit(L, q, t, op, (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)), (int32_t[]){__VA_ARGS__})

static uint64_t diag_key(int dir, uint64_t t, uint32_t pos)
{
    return dir == EAST ? t + DIAG_OFF - pos : t + pos;
}

/* Reserve stream s of pool direction dir for a value that is at position pos at cycle t. */
static bool take_stream(lt *L, int dir, int s, uint64_t t, uint32_t pos)
{
    return take(L, &L->diag[dir][s], diag_key(dir, t, pos));
}

/* Reserve an aligned group of w streams of a pool; *s gets the first. */
static bool take_group(lt *L, int pool, int w, uint64_t t, uint32_t pos, int *s)
{
    int dir = pools[pool].dir;
    for (int i = 0; i + w <= pools[pool].n; i += w) {
        size_t mark = L->nu, pm = L->npd;
        int f = pools[pool].first + i, k;
        for (k = 0; k < w && !bget(&L->diag[dir][f + k], diag_key(dir, t, pos)); k++)
            ;
        if (k < w)
            continue;
        for (k = 0; k < w && take_stream(L, dir, f + k, t, pos); k++)
            ;
        if (k == w) {
            *s = f;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

static uint32_t mem_pos(const lt *L, uint32_t mem)
{
    return mem < L->nW ? L->tg->pos_mem_w[mem] : L->tg->pos_mem_e[mem - L->nW];
}

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
    if (bget(other, t))
        return true; /* it makes a pair */
    if (bget(other, t + 1) && !bget(mine, t + 1))
        return false;
    if (t > 0 && bget(other, t - 1) && !bget(mine, t - 1))
        return false;
    return true;
}

/* A MEM read of (mem, word) whose value reaches position pc on stream (dir, s) at cycle ta, issued
 * no earlier than lb. The stream itself is reserved by the caller. */
static bool rd(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag, uint64_t lb)
{
    uint32_t ps = mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)ps - pc : (int64_t)pc - ps;
    if (dist <= 0)
        return false;
    int64_t r = (int64_t)ta - L->tg->d_func.read - dist;
    if (r < 0 || (uint64_t)r < lb)
        return false;
    if (!mem_alone_ok(&L->q[mem].issue, &L->q[mem].wr, (uint64_t)r))
        return false;
    bits *bk = &L->bank[mem][bank_of(L, word)];
    if (bget(&L->q[mem].issue, (uint64_t)r) || bget(bk, (uint64_t)r))
        return false;
    if (!take(L, &L->q[mem].issue, (uint64_t)r) || !take(L, bk, (uint64_t)r))
        return false;
    E1(L, mem, (uint64_t)r, LT_READ, (int32_t)word, sreg(L, dir, s), (int32_t)tag);
    if ((uint64_t)r > L->rdmax)
        L->rdmax = (uint64_t)r;
    return true;
}

/* The same from any slice of a hemisphere that holds the word (replicated constants, zeros). */
static bool rd_any(lt *L, int hemi, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag)
{
    uint32_t n = hemi ? L->nE : L->nW, b = hemi ? L->nW : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mem = b + (L->rot + i) % n;
        size_t mark = L->nu, pm = L->npd;
        if (rd(L, mem, word, ta, pc, dir, s, tag, 0)) {
            L->rot++;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* A MEM write of the value born at position pp at cycle tb on stream (dir, s) into (mem, word),
 * at the cycle it passes the slice, which must be after lb. */
static bool wr(lt *L, uint32_t mem, uint32_t word, uint64_t tb, uint32_t pp, int dir, int s, uint32_t tag, uint64_t lb,
               uint64_t *when)
{
    uint32_t ps = mem_pos(L, mem);
    int64_t dist = dir == WEST ? (int64_t)pp - ps : (int64_t)ps - pp;
    if (dist <= 0)
        return false;
    uint64_t w = tb + (uint64_t)dist;
    if (w <= lb || !mem_alone_ok(&L->q[mem].wr, &L->q[mem].issue, w))
        return false;
    bits *bk = &L->bank[mem][bank_of(L, word)];
    if (bget(&L->q[mem].wr, w) || bget(bk, w + L->tg->d_func.write))
        return false;
    if (!take(L, &L->q[mem].wr, w) || !take(L, bk, w + L->tg->d_func.write))
        return false;
    E1(L, mem, w, LT_WRITE, (int32_t)word, sreg(L, dir, s), (int32_t)tag);
    if (when)
        *when = w;
    return true;
}

/* ---- VXM operations on values ---- */

/* A value the VXM reads: a stream group arriving at the VXM at cycle t, or an ALU latch committed
 * at cycle t and held (reserved) through cycle `held`. */
typedef struct val { int alu; int dir, s; uint64_t t, held; } val;

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

static int32_t vreg(const lt *L, const val *v)
{
    return v->alu >= 0 ? areg(L, v->alu) : sreg(L, v->dir, v->s);
}

/* Issue a VXM instruction at cycle t on some free ALU. op is ADD/ADDS/SUBS/MUL (binary), RELU or
 * CVT (unary; to/from types). pool is the destination stream pool or -1 for the latch only; w the
 * destination width. *out gets the latch value; *ds the destination stream. */
static bool vop(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
                uint32_t tag, val *out, int *ds)
{
    uint32_t d = op == LT_MUL ? L->tg->d_func.mul : op == LT_RELU ? L->tg->d_func.relu : op == LT_CVT ? L->tg->d_func.cvt
               : op == LT_EXP ? L->tg->d_func.exp : op == LT_RSQRT ? L->tg->d_func.rsqrt : L->tg->d_func.add;
    if (!hold(L, a, t) || (b && !hold(L, b, t)))
        return false;
    int s = -1;
    if (pool >= 0 && !take_group(L, pool, w, t + d, L->tg->pos_vxm, &s))
        return false;
    for (uint32_t i = 0; i < L->nalu; i++) {
        uint32_t alu = (L->rot + i) % L->nalu;
        size_t mark = L->nu, pm = L->npd;
        if (bget(&L->q[L->tg->q_vxm + alu].issue, t) || bget(&L->lat[alu], t + d))
            continue;
        if (take(L, &L->q[L->tg->q_vxm + alu].issue, t) && take(L, &L->lat[alu], t + d)) {
            int32_t dst = s >= 0 ? sreg(L, pools[pool].dir, s) : L->tg->reg.nul;
            if (op == LT_CVT)
                E1(L, L->tg->q_vxm + alu, t, op, type, from, dst, vreg(L, a), (int32_t)tag, (int32_t)tag);
            else if (b)
                E1(L, L->tg->q_vxm + alu, t, op, type, dst, vreg(L, a), vreg(L, b), (int32_t)tag, (int32_t)tag);
            else
                E1(L, L->tg->q_vxm + alu, t, op, type, dst, vreg(L, a), (int32_t)tag, (int32_t)tag);
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
static bool vin_w(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, val *v)
{
    int s;
    if (!take_group(L, P_W2V_E, 1, ta, L->tg->pos_vxm, &s) ||
        !rd(L, mem, word, ta, L->tg->pos_vxm, EAST, s, tag, lb))
        return false;
    *v = (val){.alu = -1, .dir = EAST, .s = s, .t = ta};
    return true;
}

/* The same, but a value from the slice of `other` (which arrives at ta too) comes earlier and
 * waits in an ALU latch (mask with all ones: a copy), since one slice reads one vector a cycle. */
static bool vin_w2(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, const val *other,
                   uint32_t other_mem, val *v)
{
    if (mem != other_mem || other->alu >= 0)
        return vin_w(L, mem, word, ta, tag, lb, v);
    uint32_t d = L->tg->d_func.mask;
    val raw;
    if (ta < d || !vin_w(L, mem, word, ta - d, tag, lb, &raw))
        return false;
    for (uint32_t i = 0; i < L->nalu; i++) {
        uint32_t alu = (L->rot + i) % L->nalu;
        size_t mark = L->nu, pm = L->npd;
        if (bget(&L->q[L->tg->q_vxm + alu].issue, ta - d) || bget(&L->lat[alu], ta))
            continue;
        if (take(L, &L->q[L->tg->q_vxm + alu].issue, ta - d) && take(L, &L->lat[alu], ta)) {
            E1(L, L->tg->q_vxm + alu, ta - d, LT_MASK, L->tg->reg.i8, L->tg->reg.nul, vreg(L, &raw), 0xff, (int32_t)tag, (int32_t)tag);
            *v = (val){.alu = (int)alu, .t = ta, .held = ta};
            L->rot++;
            return true;
        }
        undo_to(L, mark, pm);
    }
    return false;
}

/* ---- MEM regions ---- */

static int al_get(alloc *a, uint32_t len, uint32_t *base, uint64_t *avail)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].len >= len) {
            *base = a->v[i].base;
            *avail = a->v[i].avail;
            a->v[i].base += len;
            a->v[i].len -= len;
            if (!a->v[i].len)
                memmove(a->v + i, a->v + i + 1, (--a->n - i) * sizeof *a->v);
            return 0;
        }
    if ((uint64_t)a->top + len > a->limit)
        return -1;
    *base = a->top;
    *avail = 0;
    a->top += len;
    return 0;
}

static int al_put(alloc *a, uint32_t base, uint32_t len, uint64_t avail)
{
    if (!len)
        return 0;
    size_t i = 0;
    while (i < a->n && a->v[i].base < base)
        i++;
    if (ts_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v))
        return -1;
    memmove(a->v + i + 1, a->v + i, (a->n - i) * sizeof *a->v);
    a->v[i] = (fr){base, len, avail};
    a->n++;
    /* merge with the neighbours */
    if (i + 1 < a->n && a->v[i].base + a->v[i].len == a->v[i + 1].base) {
        a->v[i].len += a->v[i + 1].len;
        if (a->v[i + 1].avail > a->v[i].avail)
            a->v[i].avail = a->v[i + 1].avail;
        memmove(a->v + i + 1, a->v + i + 2, (a->n - i - 2) * sizeof *a->v);
        a->n--;
    }
    if (i > 0 && a->v[i - 1].base + a->v[i - 1].len == a->v[i].base) {
        a->v[i - 1].len += a->v[i].len;
        if (a->v[i].avail > a->v[i - 1].avail)
            a->v[i - 1].avail = a->v[i].avail;
        memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof *a->v);
        a->n--;
    }
    return 0;
}

/* Words base..base+words in every slice of a hemisphere. Regions that hold initial data must be
 * fresh (never written by the schedule); others may reuse freed words after *avail. */
static ts_status region(lt *L, int hemi, uint32_t words, const char *what, const ts_graph_node *nd, bool fresh,
                        int bank, uint32_t *base, uint64_t *avail)
{
    int bad = -1;
    for (int k = 0; k < 2 && bad; k++) {
        alloc *a = &L->al[hemi][k ? 1 - bank : bank];
        size_t n = a->n;
        if (fresh)
            a->n = 0;
        bad = al_get(a, words, base, avail);
        if (fresh)
            a->n = n;
    }
    if (bad) {
        uint64_t taken = (uint64_t)(L->al[hemi][0].top - L->al[hemi][0].first) + (L->al[hemi][1].top - L->al[hemi][1].first);
        return ts_err_set(L->err, TS_EINPUT,
                          "%s '%s' needs %" PRIu32 " more words of %s in every %s MEM slice; %" PRIu64
                          " of the slice's %" PRIu64 " are taken",
                          ts_graph_op_name(nd->op), nd->name, words, what, hemi ? "east" : "west", taken, L->tg->words);
    }
    return TS_OK;
}

static alloc *alloc_of(lt *L, int hemi, uint32_t base)
{
    return &L->al[hemi][base >= L->half];
}

static int bank_pref(const lt *L, const tens *x)
{
    return x && x->base >= L->half ? 0 : 1;
}

static void slot(const lt *L, const tens *x, uint64_t i, uint32_t *mem, uint32_t *word)
{
    uint64_t k = x->off + i;
    *mem = (uint32_t)(k % L->nW);
    *word = x->base + (uint32_t)(k / L->nW);
}

/* Place a tensor of P pixels x C channels in the west MEM. */
static ts_status place(lt *L, int id, uint32_t P, uint32_t C, const ts_graph_node *nd, bool fresh, int bank)
{
    tens *x = &L->t[id];
    x->P = P;
    x->C = C;
    x->T = (C + L->VL - 1) / L->VL;
    uint64_t n = (uint64_t)P * x->T;
    x->off = L->rot % L->nW;
    x->nw = (uint32_t)((x->off + n + L->nW - 1) / L->nW);
    ts_status rc = region(L, 0, x->nw, "activations", nd, fresh, bank, &x->base, &x->avail);
    if (rc != TS_OK)
        return rc;
    x->ready = ts_calloc(n ? n : 1, sizeof *x->ready);
    if (!x->ready)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    x->placed = true;
    x->owner = id;
    x->last_read = 0;
    return TS_OK;
}

/* A tensor's last user was scheduled: its region may be written after its last read. */
static void release(lt *L, int id)
{
    tens *x = &L->t[id];
    if (!x->placed || x->output || x->owner != id || --x->users > 0)
        return;
    if (al_put(alloc_of(L, 0, x->base), x->base, x->nw, x->last_read))
        L->oom = true;
    x->nw = 0;
}

/* ---- data ---- */

float ts_lower_tsp_scale(uint64_t k)
{
    return (float)(1.0 / (8.0 * sqrt((double)(k ? k : 1))));
}

static int8_t weight_at(const lt *L, int id, uint64_t i)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, id);
    if (t->data && t->dtype == TS_DT_I8)
        return ((const int8_t *)t->data)[i];
    return ts_fill_i8(id, i);
}

/* Per-slice images of a region, added as data segments. */
typedef struct image { uint8_t **s; uint32_t n, words, base; } image;

static int img_init(image *im, uint32_t nslices, uint32_t base, uint32_t words, uint32_t VL)
{
    im->n = nslices;
    im->words = words;
    im->base = base;
    im->s = ts_calloc(nslices, sizeof *im->s);
    if (!im->s)
        return -1;
    for (uint32_t i = 0; i < nslices; i++)
        if (!(im->s[i] = ts_calloc(words ? (size_t)words * VL : 1, 1)))
            return -1;
    return 0;
}

static ts_status img_flush(lt *L, image *im, uint32_t first)
{
    ts_status rc = TS_OK;
    for (uint32_t i = 0; i < im->n; i++) {
        if (rc == TS_OK && im->words) {
            bool any = false;
            for (size_t b = 0; b < (size_t)im->words * L->VL && !any; b++)
                any = im->s[i][b] != 0;
            if (any)
                rc = ts_program_add_segment(L->prog, 1, first + i, (uint64_t)im->base * L->VL, im->s[i],
                                            im->words * L->VL, L->err);
        }
        ts_free(im->s[i]);
    }
    ts_free(im->s);
    im->s = NULL;
    return rc;
}

static void img_free(image *im)
{
    for (uint32_t i = 0; im->s && i < im->n; i++)
        ts_free(im->s[i]);
    ts_free(im->s);
    im->s = NULL;
}

/* ---- layers ---- */

static ts_lower_tsp_layer *layer(lt *L, int node)
{
    if (ts_grow((void **)&L->layers, &L->caplayers, L->nlayers + 1, sizeof *L->layers)) {
        L->oom = true;
        return NULL;
    }
    ts_lower_tsp_layer *y = &L->layers[L->nlayers++];
    memset(y, 0, sizeof *y);
    y->node = node;
    y->first = UINT64_MAX;
    return y;
}

static void span(ts_lower_tsp_layer *y, uint64_t a, uint64_t b)
{
    if (a < y->first)
        y->first = a;
    if (b > y->last)
        y->last = b;
}

/* The consumer of a node's output when it is a lone Relu that can be fused. */
static int fused_relu(const lt *L, int out)
{
    size_t n;
    const int *c = ts_graph_consumers(L->g, out, &n);
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, out);
    if (n != 1 || t->is_output)
        return -1;
    const ts_graph_node *r = ts_graph_get_node(L->g, c[0]);
    return r->op == TS_OP_RELU ? c[0] : -1;
}

/* ---- products: MatMul, Gemm, Conv ---- */

typedef struct prod {
    const ts_graph_node *nd;
    int wid, bid;            /* weight and bias tensors (bias -1) */
    tens *x;                 /* input (activations) */
    tens *y;                 /* output */
    uint32_t M, N, K, NT, KT, CT;
    /* conv geometry (kh = kw = 1, no padding for a matrix product) */
    uint32_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl;
    int kind;                /* 0 matrix (B[k][n]), 1 matrix transposed (B[n][k]), 2 conv, 3 conv on host im2col */
    uint32_t Cin;            /* conv input channels */
    bool relu;
    float scale;
} prod;

/* The vector of x that pass (m, kt) reads, -1 for zeros (padding). */
static int64_t act_vec(const prod *p, uint32_t m, uint32_t kt)
{
    if (p->kind != 2)
        return (int64_t)m * p->CT + kt;
    uint32_t tap = kt / p->CT, c = kt % p->CT, ky = tap / p->kw, kx = tap % p->kw;
    int64_t iy = (int64_t)(m / p->Wo) * p->sh - p->pt + (int64_t)ky * p->dh;
    int64_t ix = (int64_t)(m % p->Wo) * p->sw - p->pl + (int64_t)kx * p->dw;
    if (iy < 0 || ix < 0 || iy >= p->H || ix >= p->W)
        return -1;
    return (iy * p->W + ix) * p->CT + c;
}

/* The weight multiplying input lane l of block kt for output n, as an element index of the weight
 * tensor; -1 for none. */
static int64_t wgt_index(const prod *p, uint32_t n, uint32_t kt, uint32_t l, uint32_t VL)
{
    if (p->kind == 2) {
        uint32_t tap = kt / p->CT, c = (kt % p->CT) * VL + l, ky = tap / p->kw, kx = tap % p->kw;
        if (c >= p->Cin)
            return -1;
        return (((int64_t)n * p->Cin + c) * p->kh + ky) * p->kw + kx;
    }
    uint64_t k = (uint64_t)kt * VL + l;
    if (k >= p->K)
        return -1;
    if (p->kind == 0)
        return (int64_t)(k * p->N + n);
    return (int64_t)((uint64_t)n * p->K + k); /* kinds 1 and 3: [N][K] */
}

static bool try_install(lt *L, int pl, const uint32_t *rows_mem, const uint32_t *rows_word, uint32_t nvalid, uint64_t I,
                        uint32_t tag)
{
    uint32_t pp = L->tg->pos_mxm_w[pl], q = L->tg->q_mxm + L->tg->mxm_queues * (uint32_t)pl;
    for (uint32_t c = 0; c < L->VL / IW_STREAMS; c++) {
        uint64_t t = I + c;
        if (!take(L, &L->q[q].issue, t))
            return false;
        for (uint32_t i = 0; i < IW_STREAMS; i++) {
            uint32_t r = c * IW_STREAMS + i;
            if (!take_stream(L, WEST, (int)i, t, pp))
                return false;
            if (r < nvalid ? !rd(L, rows_mem[r], rows_word[r], t, pp, WEST, (int)i, tag, 0)
                           : !rd_any(L, 0, 0, t, pp, WEST, (int)i, tag))
                return false;
        }
        E1(L, q, t, LT_IW, L->tg->reg.i8, sreg(L, WEST, 0), IW_STREAMS, (int32_t)tag);
    }
    return true;
}

typedef struct pass {
    int pl;
    int64_t xv;              /* activation vector, -1 zeros */
    bool first, final;
    uint32_t pmem[4], pword[4]; /* partial sums: slices, words read (not first) */
    uint32_t wmem[4], wword[4]; /* slices, words the new partial sums go to (not final) */
    uint64_t pready;
    uint32_t bword, sword;   /* bias (first) and scale (final) words, in every E slice */
    uint32_t omem, oword;    /* final: output vector */
    uint64_t lb;             /* earliest abc */
} pass;

/* Try one pass with its abc at T; on success *wdone is the cycle of its last write. */
static bool try_pass(lt *L, const prod *p, const pass *ps, uint64_t T, uint64_t *wdone)
{
    const ts_tsp_target *P = L->tg;
    uint32_t pp = P->pos_mxm_w[ps->pl], q = P->q_mxm + P->mxm_queues * (uint32_t)ps->pl, pv = P->pos_vxm;
    uint32_t tag = L->tag % 65535 + 1;
    int s;
    if (!take(L, &L->q[q + 1].issue, T) || !take(L, &L->q[q + 2].issue, T + P->d_func.abc))
        return false;
    /* the activation, westward to the plane */
    if (!take_group(L, P_ACT, 1, T, pp, &s))
        return false;
    if (ps->xv >= 0) {
        uint32_t mem, word;
        slot(L, p->x, (uint64_t)ps->xv, &mem, &word);
        if (!rd(L, mem, word, T, pp, WEST, s, tag, p->x->ready[ps->xv]))
            return false;
    } else if (!rd_any(L, 0, 0, T, pp, WEST, s, tag)) {
        return false;
    }
    E1(L, q + 1, T, LT_ABC, L->tg->reg.i8, sreg(L, WEST, s), 0, (int32_t)tag, (int32_t)tag);
    /* the products, eastward to the VXM */
    uint64_t ta = T + P->d_func.abc + P->d_func.acc, A = ta + (pv - pp);
    int sa;
    if (!take_group(L, P_W2V_E, 4, ta, pp, &sa))
        return false;
    E1(L, q + 2, T + P->d_func.abc, LT_ACC, sreg(L, EAST, sa), (int32_t)tag, (int32_t)tag);
    val acc = {.alu = -1, .dir = EAST, .s = sa, .t = A};
    /* bias or partial sums, westward from the east MEM */
    int sb;
    if (!take_group(L, P_E2V_W, 4, A, pv, &sb))
        return false;
    for (int b = 0; b < 4; b++) {
        if (ps->first ? !rd_any(L, 1, ps->bword + (uint32_t)b, A, pv, WEST, sb + b, tag)
                      : !rd(L, ps->pmem[b], ps->pword[b], A, pv, WEST, sb + b, tag, ps->pready))
            return false;
    }
    val part = {.alu = -1, .dir = WEST, .s = sb, .t = A};
    val sum, v1, v2, v3, v4;
    if (!ps->final) {
        int sd;
        if (!vop(L, LT_ADD, L->tg->reg.i32, 0, A, &acc, &part, P_FROMV_E, 4, tag, &sum, &sd))
            return false;
        uint64_t last = 0;
        for (int b = 0; b < 4; b++) {
            uint64_t w;
            if (!wr(L, ps->wmem[b], ps->wword[b], A + P->d_func.add, pv, EAST, sd + b, tag, 0, &w))
                return false;
            if (w > last)
                last = w;
        }
        *wdone = last;
        L->tag = tag;
        return true;
    }
    if (!vop(L, LT_ADD, L->tg->reg.i32, 0, A, &acc, &part, -1, 0, tag, &sum, NULL))
        return false;
    uint64_t t1 = sum.t;
    if (!vop(L, LT_CVT, L->tg->reg.f32, L->tg->reg.i32, t1, &sum, NULL, -1, 0, tag, &v1, NULL))
        return false;
    uint64_t t2 = v1.t;
    int sc;
    if (!take_group(L, P_E2V_W, 4, t2, pv, &sc))
        return false;
    for (int b = 0; b < 4; b++)
        if (!rd_any(L, 1, ps->sword + (uint32_t)b, t2, pv, WEST, sc + b, tag))
            return false;
    val scl = {.alu = -1, .dir = WEST, .s = sc, .t = t2};
    if (!vop(L, LT_MUL, L->tg->reg.f32, 0, t2, &v1, &scl, -1, 0, tag, &v2, NULL))
        return false;
    int so;
    uint64_t tb;
    if (p->relu) {
        if (!vop(L, LT_CVT, L->tg->reg.i8, L->tg->reg.f32, v2.t, &v2, NULL, -1, 0, tag, &v3, NULL) ||
            !vop(L, LT_RELU, L->tg->reg.i8, 0, v3.t, &v3, NULL, P_FROMV_W, 1, tag, &v4, &so))
            return false;
        tb = v4.t;
    } else {
        if (!vop(L, LT_CVT, L->tg->reg.i8, L->tg->reg.f32, v2.t, &v2, NULL, P_FROMV_W, 1, tag, &v3, &so))
            return false;
        tb = v3.t;
    }
    if (!wr(L, ps->omem, ps->oword, tb, pv, WEST, so, tag, p->y->avail, wdone))
        return false;
    L->tag = tag;
    return true;
}

static ts_status sched_product(lt *L, prod *p, ts_lower_tsp_layer *ly)
{
    const ts_tsp_target *P = L->tg;
    uint32_t VL = L->VL;
    const ts_graph_node *nd = p->nd;
    ts_status rc;
    /* weights: the valid rows of every block, striped over the west MEM */
    uint64_t rows = 0;
    for (uint32_t nt = 0; nt < p->NT; nt++) {
        uint32_t nv = p->N - nt * VL < VL ? p->N - nt * VL : VL;
        rows += (uint64_t)nv * p->KT;
    }
    uint32_t woff = L->rot % L->nW, wwords = (uint32_t)((woff + rows + L->nW - 1) / L->nW), wbase;
    uint64_t wav;
    if ((rc = region(L, 0, wwords, "weights", nd, true, 1, &wbase, &wav)) != TS_OK)
        return rc;
    image im;
    if (img_init(&im, L->nW, wbase, wwords, VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    uint64_t g = 0;
    for (uint32_t nt = 0; nt < p->NT; nt++)
        for (uint32_t kt = 0; kt < p->KT; kt++) {
            uint32_t nv = p->N - nt * VL < VL ? p->N - nt * VL : VL;
            for (uint32_t r = 0; r < nv; r++, g++) {
                uint64_t k = woff + g;
                uint8_t *row = im.s[k % L->nW] + (size_t)(k / L->nW) * VL;
                for (uint32_t l = 0; l < VL; l++) {
                    int64_t wi = wgt_index(p, nt * VL + r, kt, l, VL);
                    row[l] = wi < 0 ? 0 : (uint8_t)weight_at(L, p->wid, (uint64_t)wi);
                }
            }
        }
    if ((rc = img_flush(L, &im, 0)) != TS_OK)
        return rc;
    L->words_used += (uint64_t)wwords * L->nW;
    /* bias and scale: replicated in every east slice (4 byte planes per tile of outputs) */
    uint32_t cwords = 4 * p->NT + 4, cbase;
    uint64_t cav;
    if ((rc = region(L, 1, cwords, "bias and scale", nd, true, 0, &cbase, &cav)) != TS_OK)
        return rc;
    if (img_init(&im, L->nE, cbase, cwords, VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    for (uint32_t e = 0; e < L->nE; e++) {
        for (uint32_t n = 0; n < p->NT * VL; n++) {
            int32_t b = p->bid >= 0 && n < p->N ? ts_fill_bias(p->bid, n) : 0;
            const ts_graph_tensor *bt = p->bid >= 0 ? ts_graph_get_tensor(L->g, p->bid) : NULL;
            if (bt && bt->data && bt->dtype == TS_DT_I32 && n < p->N)
                b = ((const int32_t *)bt->data)[n];
            for (int by = 0; by < 4; by++)
                im.s[e][((size_t)(4 * (n / VL) + (uint32_t)by)) * VL + n % VL] = (uint8_t)((uint32_t)b >> (8 * by));
        }
        uint32_t sb;
        memcpy(&sb, &p->scale, 4);
        for (uint32_t l = 0; l < VL; l++)
            for (int by = 0; by < 4; by++)
                im.s[e][((size_t)(4 * p->NT + (uint32_t)by)) * VL + l] = (uint8_t)(sb >> (8 * by));
    }
    if ((rc = img_flush(L, &im, L->nW)) != TS_OK)
        return rc;
    /* partial sums: 4 words per output vector, striped over the east MEM */
    /* two buffers, each on half of the east slices and in its own bank: a pass reads one and
     * writes the other, so no slice mixes the reads and writes of one block */
    uint64_t nparts = p->KT > 1 ? (uint64_t)p->M * p->NT * 4 : 0;
    uint32_t hE = L->nE / 2, pbases[2] = {0, 0}, pwords = (uint32_t)((nparts + hE - 1) / hE);
    uint64_t pav = 0, av2 = 0;
    if (pwords && ((rc = region(L, 1, pwords, "int32 partial sums", nd, false, 1, &pbases[0], &pav)) != TS_OK ||
                   (rc = region(L, 1, pwords, "int32 partial sums", nd, false, 0, &pbases[1], &av2)) != TS_OK))
        return rc;
    if (av2 > pav)
        pav = av2;
    uint8_t *pbuf = NULL; /* per output vector: the buffer holding its partial sum */
    uint64_t *pready = NULL;
    uint32_t *firstk = ts_calloc(p->M, sizeof *firstk), *lastk = ts_calloc(p->M, sizeof *lastk);
    uint32_t *rmem = ts_calloc(VL, sizeof *rmem), *rword = ts_calloc(VL, sizeof *rword);
    if (nparts) {
        pready = ts_calloc(p->M * p->NT, sizeof *pready);
        pbuf = ts_calloc(p->M * p->NT, 1);
    }
    if (!firstk || !lastk || !rmem || !rword || (nparts && (!pready || !pbuf))) {
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t m = 0; m < p->M; m++) {
        firstk[m] = UINT32_MAX;
        for (uint32_t kt = 0; kt < p->KT; kt++)
            if (act_vec(p, m, kt) >= 0) {
                if (firstk[m] == UINT32_MAX)
                    firstk[m] = kt;
                lastk[m] = kt;
            }
    }
    uint64_t rd_last = 0;
    /* blocks reduction-major: the output tiles' partial-sum chains interleave, so a block need not
     * wait for the previous block of its own tile to write its partial sums */
    for (uint32_t kt = 0; kt < p->KT; kt++)
        for (uint32_t nt = 0; nt < p->NT; nt++) {
            uint32_t nv = p->N - nt * VL < VL ? p->N - nt * VL : VL;
            /* rows are stored tile by tile, block by block; only the last tile is short */
            g = (uint64_t)nt * VL * p->KT + (uint64_t)kt * nv;
            for (uint32_t r = 0; r < VL; r++) {
                if (r < nv) {
                    uint64_t k = woff + g + r;
                    rmem[r] = (uint32_t)(k % L->nW);
                    rword[r] = wbase + (uint32_t)(k / L->nW);
                }
            }
            bool any = false;
            for (uint32_t m = 0; m < p->M && !any; m++)
                any = act_vec(p, m, kt) >= 0;
            if (!any)
                continue;
            /* a block with many passes goes on both planes, which take every other pass; else the
             * blocks alternate between the planes, one installing while the other streams */
            int planes[2], np = p->M >= DUAL_PASSES ? 2 : 1;
            planes[0] = np == 2 ? 0 : L->next_plane;
            planes[1] = 1;
            if (np == 1)
                L->next_plane ^= 1;
            uint64_t lbs[2] = {0, 0}, last_abcs[2] = {0, 0};
            for (int j = 0; j < np; j++) {
                int pl = planes[j];
                uint32_t wt = new_tag(L);
                uint64_t I = L->plane_busy[pl];
                for (uint64_t I0 = I;; I++) {
                    size_t mark = L->nu, pm = L->npd;
                    if (I - I0 > GIVE_UP)
                        goto stuck;
                    if (try_install(L, pl, rmem, rword, nv, I, wt))
                        break;
                    undo_to(L, mark, pm);
                    if (L->oom)
                        goto oom;
                }
                if (keep(L))
                    goto oom;
                span(ly, I, I + VL / IW_STREAMS);
                ly->blocks++;
                lbs[j] = I + VL / IW_STREAMS - 1 + P->d_func.iw;
                last_abcs[j] = I;
            }
            uint32_t turn = 0;
            for (uint32_t m = 0; m < p->M; m++) {
                int64_t xv = act_vec(p, m, kt);
                if (xv < 0)
                    continue;
                int j = (int)(turn++ % (uint32_t)np), pl = planes[j];
                uint64_t lb = lbs[j], last_abc = last_abcs[j];
                pass ps = {.pl = pl, .xv = xv, .first = kt == firstk[m], .final = kt == lastk[m]};
                uint64_t pi = (uint64_t)m * p->NT + nt;
                for (int b = 0; b < 4; b++) {
                    uint64_t k = pi * 4 + (uint64_t)b;
                    if (nparts) {
                        uint32_t rb = pbuf[pi], wb = kt & 1;
                        ps.pmem[b] = L->nW + rb * hE + (uint32_t)(k % hE);
                        ps.pword[b] = pbases[rb] + (uint32_t)(k / hE);
                        ps.wmem[b] = L->nW + wb * hE + (uint32_t)(k % hE);
                        ps.wword[b] = pbases[wb] + (uint32_t)(k / hE);
                    }
                }
                ps.pready = nparts ? pready[pi] : 0;
                ps.bword = cbase + 4 * nt;
                ps.sword = cbase + 4 * p->NT;
                if (ps.final) {
                    uint64_t v = (uint64_t)m * p->y->T + nt;
                    slot(L, p->y, v, &ps.omem, &ps.oword);
                }
                uint64_t T = lb > last_abc ? lb : last_abc;
                if (!ps.first && ps.pready > T)
                    T = ps.pready;
                if (!ps.final && pav > T)
                    T = pav;
                if (xv >= 0) {
                    uint32_t xm, xw;
                    slot(L, p->x, (uint64_t)xv, &xm, &xw);
                    uint64_t e = p->x->ready[xv] + P->d_func.read + (mem_pos(L, xm) - P->pos_mxm_w[pl]);
                    if (e > T)
                        T = e;
                }
                for (uint64_t T0 = T;; T++) {
                    size_t mark = L->nu, pm = L->npd;
                    uint64_t w = 0;
                    if (T - T0 > GIVE_UP)
                        goto stuck;
                    L->rdmax = 0;
                    if (try_pass(L, p, &ps, T, &w)) {
                        if (ps.xv >= 0 && L->rdmax > rd_last)
                            rd_last = L->rdmax;
                        if (ps.final)
                            p->y->ready[(uint64_t)m * p->y->T + nt] = w + P->d_func.write + 1;
                        else {
                            pready[pi] = w + P->d_func.write + 1;
                            pbuf[pi] = (uint8_t)(kt & 1);
                        }
                        span(ly, T, w);
                        break;
                    }
                    undo_to(L, mark, pm);
                    if (L->oom)
                        goto oom;
                }
                if (keep(L))
                    goto oom;
                last_abcs[j] = T;
                ly->passes++;
            }
            for (int j = 0; j < np; j++)
                L->plane_busy[planes[j]] = last_abcs[j];
        }
    if (rd_last > p->x->last_read)
        p->x->last_read = rd_last;
    if (pwords) {
        uint64_t pl = 0;
        for (uint64_t i = 0; i < (uint64_t)p->M * p->NT; i++)
            if (pready[i] > pl)
                pl = pready[i];
        if (al_put(alloc_of(L, 1, pbases[0]), pbases[0], pwords, pl) ||
            al_put(alloc_of(L, 1, pbases[1]), pbases[1], pwords, pl))
            goto oom;
    }
    rc = TS_OK;
    goto out;
stuck:
    rc = ts_err_set(L->err, TS_EINTERNAL, "%s '%s': no cycle found for a group of instructions",
                    ts_graph_op_name(nd->op), nd->name);
    goto out;
oom:
    rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
out:
    ts_free(firstk);
    ts_free(lastk);
    ts_free(rmem);
    ts_free(rword);
    ts_free(pready);
    ts_free(pbuf);
    return rc;
}

/* ---- VXM operators: Relu, Add, MaxPool, GlobalAveragePool ---- */

/* Elementwise over the vectors of y: out = relu(a) or out = adds(a, b) [relu]. */
static bool try_elem(lt *L, int op, tens *a, tens *b, tens *y, bool relu, uint64_t v, uint64_t A, uint64_t *w)
{
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val va, vb, r1, r2;
    int so;
    slot(L, a, v, &mem, &word);
    if (!vin_w(L, mem, word, A, tag, a->ready[v], &va))
        return false;
    uint64_t tb;
    if (op == TS_OP_RELU) {
        if (!vop(L, LT_RELU, L->tg->reg.i8, 0, A, &va, NULL, P_FROMV_W, 1, tag, &r1, &so))
            return false;
        tb = r1.t;
    } else {
        uint32_t amem = mem;
        slot(L, b, v, &mem, &word);
        if (!vin_w2(L, mem, word, A, tag, b->ready[v], &va, amem, &vb))
            return false;
        if (relu) {
            if (!vop(L, LT_ADDS, L->tg->reg.i8, 0, A, &va, &vb, -1, 0, tag, &r1, NULL) ||
                !vop(L, LT_RELU, L->tg->reg.i8, 0, r1.t, &r1, NULL, P_FROMV_W, 1, tag, &r2, &so))
                return false;
            tb = r2.t;
        } else {
            if (!vop(L, LT_ADDS, L->tg->reg.i8, 0, A, &va, &vb, P_FROMV_W, 1, tag, &r1, &so))
                return false;
            tb = r1.t;
        }
    }
    slot(L, y, v, &mem, &word);
    if (!wr(L, mem, word, tb, L->tg->pos_vxm, WEST, so, tag, y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

static uint64_t start_lb(const lt *L, const tens *x, uint64_t v)
{
    uint32_t mem, word;
    slot(L, x, v, &mem, &word);
    return x->ready[v] + L->tg->d_func.read + (L->tg->pos_vxm - mem_pos(L, mem));
}

static ts_status sched_elem(lt *L, int op, tens *a, tens *b, tens *y, bool relu, ts_lower_tsp_layer *ly)
{
    uint64_t n = (uint64_t)y->P * y->T;
    for (uint64_t v = 0; v < n; v++) {
        uint64_t A = start_lb(L, a, v), w = 0;
        if (b && start_lb(L, b, v) > A)
            A = start_lb(L, b, v);
        for (uint64_t A0 = A;; A++) {
            size_t mark = L->nu, pm = L->npd;
            if (A - A0 > GIVE_UP)
                return ts_err_set(L->err, TS_EINTERNAL, "%s: no cycle found for a group of instructions", ts_graph_op_name((ts_graph_op)op));
            L->rdmax = 0;
            if (try_elem(L, op, a, b, y, relu, v, A, &w))
                break;
            undo_to(L, mark, pm);
            if (L->oom)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        if (keep(L))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        y->ready[v] = w + L->tg->d_func.write + 1;
        if (L->rdmax > a->last_read)
            a->last_read = L->rdmax;
        if (b && L->rdmax > b->last_read)
            b->last_read = L->rdmax;
        span(ly, A, w);
        ly->passes++;
    }
    return TS_OK;
}

/* MaxPool of non-negative int8 (max(m, x) = x + relu(m - x), exact for values in 0..127): a chain
 * through the ALU latches over the window's vectors. */
static bool try_pool(lt *L, tens *x, tens *y, const uint64_t *win, uint32_t nwin, uint64_t v, uint64_t A, uint64_t *w)
{
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val m, xi, d, r, x0;
    int so = -1;
    slot(L, x, win[0], &mem, &word);
    uint64_t tb;
    if (nwin == 1) {
        if (!vin_w(L, mem, word, A, tag, x->ready[win[0]], &x0) ||
            !vop(L, LT_RELU, L->tg->reg.i8, 0, A, &x0, NULL, P_FROMV_W, 1, tag, &m, &so))
            return false;
        tb = m.t;
    } else {
        /* m = x_i + relu(m - x_i), x_i read twice, so the running maximum waits in a latch for
         * one cycle only (m starts as x0, read from MEM) */
        uint64_t t = A;
        for (uint32_t i = 1; i < nwin; i++) {
            uint32_t mi, wi;
            slot(L, x, win[i], &mi, &wi);
            if (i == 1) {
                if (!vin_w(L, mem, word, t, tag, x->ready[win[0]], &x0) ||
                    !vin_w2(L, mi, wi, t, tag, x->ready[win[i]], &x0, mem, &xi) ||
                    !vop(L, LT_SUBS, L->tg->reg.i8, 0, t, &x0, &xi, -1, 0, tag, &d, NULL))
                    return false;
            } else if (!vin_w(L, mi, wi, t, tag, x->ready[win[i]], &xi) ||
                       !vop(L, LT_SUBS, L->tg->reg.i8, 0, t, &m, &xi, -1, 0, tag, &d, NULL)) {
                return false;
            }
            bool last = i + 1 == nwin;
            if (!vop(L, LT_RELU, L->tg->reg.i8, 0, d.t, &d, NULL, -1, 0, tag, &r, NULL) ||
                !vin_w(L, mi, wi, r.t, tag, x->ready[win[i]], &xi) ||
                !vop(L, LT_ADDS, L->tg->reg.i8, 0, r.t, &xi, &r, last ? P_FROMV_W : -1, 1, tag, &m, &so))
                return false;
            t = m.t;
        }
        tb = m.t;
    }
    uint32_t om, ow;
    slot(L, y, v, &om, &ow);
    if (!wr(L, om, ow, tb, L->tg->pos_vxm, WEST, so, tag, y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

/* GlobalAveragePool: sum = i32(x0) + i32(x1) + ..., then i8(f32(sum) x scale). */
static bool try_gap(lt *L, tens *x, tens *y, uint32_t c, uint32_t sword, uint64_t A, uint64_t *w)
{
    uint32_t tag = L->tag % 65535 + 1, mem, word;
    val s = {0}, xi, ci, f, mu, o; /* s is set by the first input (a pool has at least one) */
    int so;
    uint64_t t = A;
    for (uint32_t i = 0; i < x->P; i++) {
        uint64_t v = (uint64_t)i * x->T + c;
        slot(L, x, v, &mem, &word);
        if (!vin_w(L, mem, word, t, tag, x->ready[v], &xi))
            return false;
        if (!vop(L, LT_CVT, L->tg->reg.i32, L->tg->reg.i8, t, &xi, NULL, -1, 0, tag, i ? &ci : &s, NULL))
            return false;
        if (i) {
            if (!vop(L, LT_ADD, L->tg->reg.i32, 0, ci.t, &s, &ci, -1, 0, tag, &s, NULL))
                return false;
            t = s.t;
        } else {
            t = s.t;
        }
    }
    if (!vop(L, LT_CVT, L->tg->reg.f32, L->tg->reg.i32, s.t, &s, NULL, -1, 0, tag, &f, NULL))
        return false;
    int sc;
    if (!take_group(L, P_E2V_W, 4, f.t, L->tg->pos_vxm, &sc))
        return false;
    for (int b = 0; b < 4; b++)
        if (!rd_any(L, 1, sword + (uint32_t)b, f.t, L->tg->pos_vxm, WEST, sc + b, tag))
            return false;
    val scl = {.alu = -1, .dir = WEST, .s = sc, .t = f.t};
    if (!vop(L, LT_MUL, L->tg->reg.f32, 0, f.t, &f, &scl, -1, 0, tag, &mu, NULL) ||
        !vop(L, LT_CVT, L->tg->reg.i8, L->tg->reg.f32, mu.t, &mu, NULL, P_FROMV_W, 1, tag, &o, &so))
        return false;
    uint32_t om, ow;
    slot(L, y, c, &om, &ow);
    if (!wr(L, om, ow, o.t, L->tg->pos_vxm, WEST, so, tag, y->avail, w))
        return false;
    L->tag = tag;
    return true;
}

static ts_status sched_pool(lt *L, const ts_graph_node *nd, tens *x, tens *y, uint32_t H, uint32_t W, uint32_t Ho,
                            uint32_t Wo, ts_lower_tsp_layer *ly)
{
    const ts_graph_attrs *at = &nd->attrs;
    uint64_t win[64];
    for (uint32_t oy = 0; oy < Ho; oy++)
        for (uint32_t ox = 0; ox < Wo; ox++)
            for (uint32_t c = 0; c < y->T; c++) {
                uint32_t nwin = 0;
                for (int64_t ky = 0; ky < at->kernel[0]; ky++)
                    for (int64_t kx = 0; kx < at->kernel[1]; kx++) {
                        int64_t iy = oy * at->strides[0] - at->pads[0] + ky * at->dilations[0];
                        int64_t ix = ox * at->strides[1] - at->pads[1] + kx * at->dilations[1];
                        if (iy >= 0 && ix >= 0 && iy < H && ix < W && nwin < 64)
                            win[nwin++] = ((uint64_t)iy * W + (uint64_t)ix) * x->T + c;
                    }
                if (!nwin)
                    return ts_err_set(L->err, TS_EINPUT, "MaxPool '%s': a window holds no input pixel", nd->name);
                uint64_t v = ((uint64_t)oy * Wo + ox) * y->T + c, A = 0, w = 0;
                for (uint32_t i = 0; i < nwin; i++)
                    if (start_lb(L, x, win[i]) > A)
                        A = start_lb(L, x, win[i]);
                for (uint64_t A0 = A;; A++) {
                    size_t mark = L->nu, pm = L->npd;
                    if (A - A0 > GIVE_UP)
                        return ts_err_set(L->err, TS_EINTERNAL, "%s: no cycle found for a group of instructions", ts_graph_op_name(nd->op));
                    L->rdmax = 0;
                    if (try_pool(L, x, y, win, nwin, v, A, &w))
                        break;
                    undo_to(L, mark, pm);
                    if (L->oom)
                        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
                }
                if (keep(L))
                    return ts_err_set(L->err, TS_ENOMEM, "out of memory");
                y->ready[v] = w + L->tg->d_func.write + 1;
                if (L->rdmax > x->last_read)
                    x->last_read = L->rdmax;
                span(ly, A, w);
                ly->passes++;
            }
    return TS_OK;
}

static ts_status sched_gap(lt *L, const ts_graph_node *nd, tens *x, tens *y, ts_lower_tsp_layer *ly)
{
    uint32_t cbase;
    uint64_t cav;
    ts_status rc = region(L, 1, 4, "scale", nd, true, 0, &cbase, &cav);
    if (rc != TS_OK)
        return rc;
    image im;
    if (img_init(&im, L->nE, cbase, 4, L->VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    float sc = 1.0f / (float)x->P;
    ly->scale = sc;
    uint32_t sb;
    memcpy(&sb, &sc, 4);
    for (uint32_t e = 0; e < L->nE; e++)
        for (uint32_t l = 0; l < L->VL; l++)
            for (int by = 0; by < 4; by++)
                im.s[e][(size_t)by * L->VL + l] = (uint8_t)(sb >> (8 * by));
    if ((rc = img_flush(L, &im, L->nW)) != TS_OK)
        return rc;
    for (uint32_t c = 0; c < y->T; c++) {
        uint64_t A = 0, w = 0;
        for (uint32_t i = 0; i < x->P; i++)
            if (start_lb(L, x, (uint64_t)i * x->T + c) > A)
                A = start_lb(L, x, (uint64_t)i * x->T + c);
        for (uint64_t A0 = A;; A++) {
            size_t mark = L->nu, pm = L->npd;
            if (A - A0 > GIVE_UP)
                return ts_err_set(L->err, TS_EINTERNAL, "%s: no cycle found for a group of instructions", ts_graph_op_name(nd->op));
            L->rdmax = 0;
            if (try_gap(L, x, y, c, cbase, A, &w))
                break;
            undo_to(L, mark, pm);
            if (L->oom)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        if (keep(L))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if (L->rdmax > x->last_read)
            x->last_read = L->rdmax;
        y->ready[c] = w + L->tg->d_func.write + 1;
        span(ly, A, w);
        ly->passes++;
    }
    return TS_OK;
}

/* Softmax of one row (one vector, N <= VL lanes) of int8 values read as q / 16:
 *   e = exp(f32(q) x 1/16) on the VXM, to f16, through plane W1 holding an all-ones f16 block
 *   (columns < N), whose f32 accumulators give the row sum in every lane; then 1/sum = rsqrt(sum)^2,
 *   e recomputed, p = e x 1/sum, to f16, to MEM (two byte planes). No max is subtracted: |q/16| <= 8
 *   keeps exp below 3e3 (f16 holds it, the f32 sum cannot overflow). */
static bool try_smax(lt *L, tens *x, tens *y, uint32_t m, uint64_t T, uint32_t sword, uint64_t *wdone)
{
    const ts_tsp_target *P = L->tg;
    uint32_t pp = P->pos_mxm_w[1], q = P->q_mxm + P->mxm_queues, pv = P->pos_vxm, tag = L->tag % 65535 + 1;
    uint32_t mem, word;
    slot(L, x, m, &mem, &word);
    for (uint32_t i = 0; i < P->fp16_interval; i++)
        if (!take(L, &L->q[q + 1].issue, T + i))
            return false;
    if (!take(L, &L->q[q + 2].issue, T + P->d_func.abc))
        return false;
    /* phase 1: e in f16 reaches the plane at T */
    uint64_t tb = T - (pv - pp), lead = P->d_func.cvt + P->d_func.mul + P->d_func.exp + P->d_func.cvt;
    if (T < (pv - pp) || tb < lead + 8)
        return false;
    uint64_t a0 = tb - lead;
    val xv, v0, v1, v2, v3, scl;
    int sc, sx;
    if (!vin_w(L, mem, word, a0, tag, x->ready[m], &xv) ||
        !vop(L, LT_CVT, L->tg->reg.f32, L->tg->reg.i8, a0, &xv, NULL, -1, 0, tag, &v0, NULL) ||
        !take_group(L, P_E2V_W, 4, v0.t, pv, &sc))
        return false;
    for (int b = 0; b < 4; b++)
        if (!rd_any(L, 1, sword + (uint32_t)b, v0.t, pv, WEST, sc + b, tag))
            return false;
    scl = (val){.alu = -1, .dir = WEST, .s = sc, .t = v0.t};
    if (!vop(L, LT_MUL, L->tg->reg.f32, 0, v0.t, &v0, &scl, -1, 0, tag, &v1, NULL) ||
        !vop(L, LT_EXP, L->tg->reg.f32, 0, v1.t, &v1, NULL, -1, 0, tag, &v2, NULL) ||
        !vop(L, LT_CVT, L->tg->reg.f16, L->tg->reg.f32, v2.t, &v2, NULL, P_ACT, 2, tag, &v3, &sx))
        return false;
    E1(L, q + 1, T, LT_ABC, L->tg->reg.f16, sreg(L, WEST, sx), 0, (int32_t)tag, (int32_t)tag);
    /* the sums, eastward to the VXM */
    uint64_t ta = T + P->d_func.abc + P->d_func.acc, B = ta + (pv - pp);
    int sa;
    if (!take_group(L, P_W2V_E, 4, ta, pp, &sa))
        return false;
    E1(L, q + 2, T + P->d_func.abc, LT_ACC, sreg(L, EAST, sa), (int32_t)tag, (int32_t)tag);
    val sum = {.alu = -1, .dir = EAST, .s = sa, .t = B}, r, inv;
    if (!vop(L, LT_RSQRT, L->tg->reg.f32, 0, B, &sum, NULL, -1, 0, tag, &r, NULL) ||
        !vop(L, LT_MUL, L->tg->reg.f32, 0, r.t, &r, &r, -1, 0, tag, &inv, NULL))
        return false;
    /* phase 2: e again, times 1/sum */
    uint64_t C = inv.t, c0 = C - P->d_func.exp - P->d_func.mul - P->d_func.cvt;
    val w0, w1, e, pr, o;
    if (!vin_w(L, mem, word, c0, tag, x->ready[m], &xv) ||
        !vop(L, LT_CVT, L->tg->reg.f32, L->tg->reg.i8, c0, &xv, NULL, -1, 0, tag, &w0, NULL) ||
        !take_group(L, P_E2V_W, 4, w0.t, pv, &sc))
        return false;
    for (int b = 0; b < 4; b++)
        if (!rd_any(L, 1, sword + (uint32_t)b, w0.t, pv, WEST, sc + b, tag))
            return false;
    scl = (val){.alu = -1, .dir = WEST, .s = sc, .t = w0.t};
    int so;
    if (!vop(L, LT_MUL, L->tg->reg.f32, 0, w0.t, &w0, &scl, -1, 0, tag, &w1, NULL) ||
        !vop(L, LT_EXP, L->tg->reg.f32, 0, w1.t, &w1, NULL, -1, 0, tag, &e, NULL) || e.t != C ||
        !vop(L, LT_MUL, L->tg->reg.f32, 0, C, &e, &inv, -1, 0, tag, &pr, NULL) ||
        !vop(L, LT_CVT, L->tg->reg.f16, L->tg->reg.f32, pr.t, &pr, NULL, P_FROMV_W, 2, tag, &o, &so))
        return false;
    uint64_t last = 0;
    for (int b = 0; b < 2; b++) {
        uint32_t om, ow;
        uint64_t w;
        slot(L, y, (uint64_t)m * 2 + (uint64_t)b, &om, &ow);
        if (!wr(L, om, ow, o.t, pv, WEST, so + b, tag, y->avail, &w))
            return false;
        if (w > last)
            last = w;
    }
    *wdone = last;
    L->tag = tag;
    return true;
}

static ts_status sched_softmax(lt *L, const ts_graph_node *nd, tens *x, tens *y, uint32_t N, ts_lower_tsp_layer *ly)
{
    const ts_tsp_target *P = L->tg;
    uint32_t VL = L->VL, cbase, obase;
    uint64_t cav, oav;
    ts_status rc;
    if ((rc = region(L, 1, 4, "scale", nd, true, 0, &cbase, &cav)) != TS_OK ||
        (rc = region(L, 0, 1, "ones", nd, true, 1, &obase, &oav)) != TS_OK)
        return rc;
    image im;
    if (img_init(&im, L->nE, cbase, 4, VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    float sc = 1.0f / 16.0f;
    uint32_t sb;
    memcpy(&sb, &sc, 4);
    for (uint32_t e = 0; e < L->nE; e++)
        for (uint32_t l = 0; l < VL; l++)
            for (int by = 0; by < 4; by++)
                im.s[e][(size_t)by * VL + l] = (uint8_t)(sb >> (8 * by));
    if ((rc = img_flush(L, &im, L->nW)) != TS_OK)
        return rc;
    /* the high byte of f16 1.0 (0x3c00) in the first N lanes, in every west slice */
    if (img_init(&im, L->nW, obase, 1, VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < L->nW; i++)
        for (uint32_t l = 0; l < N; l++)
            im.s[i][l] = 0x3c;
    if ((rc = img_flush(L, &im, 0)) != TS_OK)
        return rc;
    /* the ones block on plane W1: row r is streams 2r (low bytes: zeros) and 2r + 1 */
    uint32_t pp = P->pos_mxm_w[1], q = P->q_mxm + P->mxm_queues, rows_per = IW_STREAMS / 2, wt = new_tag(L);
    uint64_t I = L->plane_busy[1];
    for (uint64_t I0 = I;; I++) {
        size_t mark = L->nu, pm = L->npd;
        if (I - I0 > GIVE_UP)
            return ts_err_set(L->err, TS_EINTERNAL, "Softmax: no cycle found for a group of instructions");
        bool ok = true;
        for (uint32_t c = 0; ok && c < VL / rows_per; c++) {
            uint64_t t = I + c;
            ok = take(L, &L->q[q].issue, t);
            for (uint32_t i = 0; ok && i < IW_STREAMS; i++) {
                uint32_t r = c * rows_per + i / 2;
                ok = take_stream(L, WEST, (int)i, t, pp) &&
                     rd_any(L, 0, (i & 1) && r < N ? obase : 0, t, pp, WEST, (int)i, wt);
            }
            if (ok)
                E1(L, q, t, LT_IW, L->tg->reg.f16, sreg(L, WEST, 0), IW_STREAMS, (int32_t)wt);
        }
        if (ok)
            break;
        undo_to(L, mark, pm);
        if (L->oom)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    if (keep(L))
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ly->blocks++;
    span(ly, I, I + VL / rows_per);
    uint64_t T = I + VL / rows_per - 1 + P->d_func.iw;
    for (uint32_t m = 0; m < x->P; m++) {
        uint64_t w = 0;
        for (uint64_t T0 = T;; T++) {
            size_t mark = L->nu, pm = L->npd;
            if (T - T0 > GIVE_UP)
                return ts_err_set(L->err, TS_EINTERNAL, "Softmax: no cycle found for a group of instructions");
            L->rdmax = 0;
            if (try_smax(L, x, y, m, T, cbase, &w))
                break;
            undo_to(L, mark, pm);
            if (L->oom)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        }
        if (keep(L))
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        if (L->rdmax > x->last_read)
            x->last_read = L->rdmax;
        y->ready[2 * m] = y->ready[2 * m + 1] = w + P->d_func.write + 1;
        span(ly, T, w);
        ly->passes++;
        T += P->fp16_interval;
    }
    L->plane_busy[1] = T;
    return TS_OK;
}

/* ---- the graph ---- */

static const int64_t *dims_of(const lt *L, int id, int *rank)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, id);
    *rank = t->rank;
    return t->dims;
}

/* Pixels and channels of an activation: NCHW (batch 1) or a matrix [M, K]. */
static ts_status shape_pc(lt *L, const ts_graph_node *nd, int id, uint32_t *P, uint32_t *C)
{
    int r;
    const int64_t *d = dims_of(L, id, &r);
    if (r == 4 && d[0] == 1) {
        *P = (uint32_t)(d[2] * d[3]);
        *C = (uint32_t)d[1];
    } else if (r == 2) {
        *P = (uint32_t)d[0];
        *C = (uint32_t)d[1];
    } else if (r == 1) {
        *P = 1;
        *C = (uint32_t)d[0];
    } else {
        return ts_err_set(L->err, TS_EINPUT, "%s '%s': the TSP lowering takes batch-1 NCHW or 2-D tensors, not rank %d",
                          ts_graph_op_name(nd->op), nd->name, r);
    }
    return TS_OK;
}

/* Place a graph input (int8 values from the graph or the fill) in the west MEM. */
static ts_status place_input(lt *L, int id, const ts_graph_node *nd)
{
    uint32_t P, C;
    ts_status rc = shape_pc(L, nd, id, &P, &C);
    if (rc != TS_OK || (rc = place(L, id, P, C, nd, true, 0)) != TS_OK)
        return rc;
    tens *x = &L->t[id];
    int r;
    const int64_t *d = dims_of(L, id, &r);
    image im;
    if (img_init(&im, L->nW, x->base, x->nw, L->VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, id);
    for (uint32_t px = 0; px < P; px++)
        for (uint32_t c = 0; c < C; c++) {
            uint64_t e = r == 4 ? (uint64_t)c * P + px : (uint64_t)px * C + c;
            int8_t v = t->data && t->dtype == TS_DT_I8 ? ((const int8_t *)t->data)[e] : ts_fill_i8(id, e);
            uint64_t k = x->off + (uint64_t)px * x->T + c / L->VL;
            im.s[k % L->nW][(size_t)(k / L->nW) * L->VL + c % L->VL] = (uint8_t)v;
        }
    (void)d;
    L->words_used += (uint64_t)x->nw * L->nW;
    return img_flush(L, &im, 0);
}

/* A Conv whose input is a graph input with C x kh x kw <= VL: the host lays the input out as
 * im2col vectors (one per output pixel), so the layer is one product with K = C kh kw. */
static ts_status place_im2col(lt *L, prod *p, int xid, tens *x)
{
    uint32_t K = p->Cin * p->kh * p->kw;
    memset(x, 0, sizeof *x);
    x->P = p->Ho * p->Wo;
    x->C = K;
    x->T = 1;
    x->off = L->rot % L->nW;
    x->nw = (x->off + x->P + L->nW - 1) / L->nW;
    uint64_t av;
    ts_status rc = region(L, 0, x->nw, "im2col input", p->nd, true, 0, &x->base, &av);
    if (rc != TS_OK)
        return rc;
    x->ready = ts_calloc(x->P, sizeof *x->ready);
    if (!x->ready)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    x->placed = true;
    x->owner = -1;
    image im;
    if (img_init(&im, L->nW, x->base, x->nw, L->VL)) {
        img_free(&im);
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    }
    const ts_graph_tensor *t = ts_graph_get_tensor(L->g, xid);
    for (uint32_t m = 0; m < x->P; m++) {
        uint64_t k = x->off + m;
        uint8_t *vec = im.s[k % L->nW] + (size_t)(k / L->nW) * L->VL;
        for (uint32_t c = 0; c < p->Cin; c++)
            for (uint32_t ky = 0; ky < p->kh; ky++)
                for (uint32_t kx = 0; kx < p->kw; kx++) {
                    int64_t iy = (int64_t)(m / p->Wo) * p->sh - p->pt + (int64_t)ky * p->dh;
                    int64_t ix = (int64_t)(m % p->Wo) * p->sw - p->pl + (int64_t)kx * p->dw;
                    if (iy < 0 || ix < 0 || iy >= p->H || ix >= p->W)
                        continue;
                    uint64_t e = ((uint64_t)c * p->H + (uint64_t)iy) * p->W + (uint64_t)ix;
                    int8_t v = t->data && t->dtype == TS_DT_I8 ? ((const int8_t *)t->data)[e]
                                                                : ts_fill_i8(xid, e);
                    vec[(c * p->kh + ky) * p->kw + kx] = (uint8_t)v;
                }
    }
    L->words_used += (uint64_t)x->nw * L->nW;
    return img_flush(L, &im, 0);
}

static ts_status lower_node(lt *L, int ni)
{
    const ts_graph_node *nd = ts_graph_get_node(L->g, ni);
    const ts_tsp_target *P = L->tg;
    ts_status rc;
    int out = nd->out[0];
    tens *y = &L->t[out];
    /* activations that are graph inputs are placed on first use (a Conv may lay its own out) */
    size_t nact = nd->op == TS_OP_ADD ? 2 : nd->op == TS_OP_CONV || nd->nin == 0 ? 0 : 1;
    for (size_t i = 0; i < nact && i < nd->nin; i++) {
        int id = nd->in[i];
        if (!L->t[id].placed && ts_graph_get_tensor(L->g, id)->kind == TS_TENSOR_INPUT &&
            (rc = place_input(L, id, nd)) != TS_OK)
            return rc;
    }
    ts_lower_tsp_layer *ly = layer(L, ni);
    if (!ly)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ly->macs = ts_graph_node_macs(L->g, ni);
    switch (nd->op) {
    case TS_OP_MATMUL:
    case TS_OP_GEMM:
    case TS_OP_CONV: {
        prod p = {.nd = nd, .bid = -1};
        tens im2 = {0};
        int xid = nd->in[0];
        const ts_graph_tensor *wt = ts_graph_get_tensor(L->g, nd->in[1]);
        p.wid = nd->in[1];
        int yr;
        const int64_t *yd = dims_of(L, out, &yr);
        if (nd->op == TS_OP_CONV) {
            const ts_graph_attrs *a = &nd->attrs;
            int xr;
            const int64_t *xd = dims_of(L, xid, &xr);
            if (a->group != 1 || xr != 4 || xd[0] != 1)
                return ts_err_set(L->err, TS_EINPUT, "Conv '%s': the TSP lowering takes batch-1 convolutions with group 1",
                                  nd->name);
            p.Cin = (uint32_t)xd[1];
            p.H = (uint32_t)xd[2];
            p.W = (uint32_t)xd[3];
            p.N = (uint32_t)wt->dims[0];
            p.kh = (uint32_t)wt->dims[2];
            p.kw = (uint32_t)wt->dims[3];
            p.sh = (uint32_t)a->strides[0];
            p.sw = (uint32_t)a->strides[1];
            p.dh = (uint32_t)a->dilations[0];
            p.dw = (uint32_t)a->dilations[1];
            p.pt = (uint32_t)a->pads[0];
            p.pl = (uint32_t)a->pads[1];
            p.Ho = (uint32_t)yd[2];
            p.Wo = (uint32_t)yd[3];
            p.M = p.Ho * p.Wo;
            p.K = p.Cin * p.kh * p.kw;
            if (nd->nin > 2)
                p.bid = nd->in[2];
            const ts_graph_tensor *xt = ts_graph_get_tensor(L->g, xid);
            if (!L->t[xid].placed && xt->kind == TS_TENSOR_INPUT && p.K <= L->VL) {
                p.kind = 3;
                if ((rc = place_im2col(L, &p, xid, &im2)) != TS_OK)
                    return rc;
                p.x = &im2;
                p.CT = 1;
                p.KT = 1;
            } else {
                if (!L->t[xid].placed && xt->kind == TS_TENSOR_INPUT && (rc = place_input(L, xid, nd)) != TS_OK)
                    return rc;
                p.kind = 2;
                p.x = &L->t[xid];
                p.CT = p.x->T;
                p.KT = p.kh * p.kw * p.CT;
            }
        } else {
            int xr, wr_;
            const int64_t *xd = dims_of(L, xid, &xr);
            const int64_t *wd = dims_of(L, p.wid, &wr_);
            if (xr != 2 || wr_ != 2 || (wt->kind != TS_TENSOR_WEIGHT && wt->kind != TS_TENSOR_CONST))
                return ts_err_set(L->err, TS_EINPUT,
                                  "%s '%s': the TSP lowering takes a 2-D activation times a 2-D weight",
                                  ts_graph_op_name(nd->op), nd->name);
            if (nd->op == TS_OP_GEMM && (nd->attrs.trans_a || nd->attrs.alpha != 1.0 || nd->attrs.beta != 1.0))
                return ts_err_set(L->err, TS_EINPUT, "Gemm '%s': the TSP lowering takes alpha = beta = 1 and no transA",
                                  nd->name);
            p.M = (uint32_t)xd[0];
            p.K = (uint32_t)xd[1];
            bool tb = nd->op == TS_OP_GEMM && nd->attrs.trans_b;
            p.N = (uint32_t)(tb ? wd[0] : wd[1]);
            p.kind = tb ? 1 : 0;
            if (nd->op == TS_OP_GEMM && nd->nin > 2) {
                if (ts_graph_tensor_elems(ts_graph_get_tensor(L->g, nd->in[2])) != p.N)
                    return ts_err_set(L->err, TS_EINPUT, "Gemm '%s': the TSP lowering takes a bias of N elements", nd->name);
                p.bid = nd->in[2];
            }
            p.x = &L->t[xid];
            p.CT = p.x->T;
            p.KT = p.CT;
        }
        if (!p.x->placed)
            return ts_err_set(L->err, TS_EINPUT, "%s '%s': its input is not an int8 activation the lowering placed",
                              ts_graph_op_name(nd->op), nd->name);
        p.NT = (p.N + L->VL - 1) / L->VL;
        int fu = fused_relu(L, out);
        p.relu = fu >= 0;
        p.scale = ts_lower_tsp_scale(p.K);
        ly->scale = p.scale;
        uint32_t yP = p.M;
        int yid = fu >= 0 ? ts_graph_get_node(L->g, fu)->out[0] : out;
        if ((rc = place(L, yid, yP, p.N, nd, false, bank_pref(L, p.x))) != TS_OK)
            return rc;
        p.y = &L->t[yid];
        p.y->nonneg = p.relu;
        if (fu >= 0) {
            /* the Relu is done: its output is this product's */
            L->t[out] = L->t[yid];
            L->t[out].ready = NULL;
            L->t[out].placed = false;
        }
        (void)yr;
        rc = sched_product(L, &p, ly);
        if (p.kind == 3) {
            if (al_put(alloc_of(L, 0, im2.base), im2.base, im2.nw, im2.last_read))
                L->oom = true;
            ts_free(im2.ready);
        }
        if (rc != TS_OK)
            return rc;
        release(L, xid);
        return TS_OK;
    }
    case TS_OP_RELU:
    case TS_OP_ADD: {
        if (nd->op == TS_OP_RELU && !L->t[nd->in[0]].placed) {
            /* fused into the product before it */
            ly->first = ly->last = 0;
            return TS_OK;
        }
        tens *a = &L->t[nd->in[0]], *b = nd->op == TS_OP_ADD ? &L->t[nd->in[1]] : NULL;
        if (!a->placed || (b && !b->placed))
            return ts_err_set(L->err, TS_EINPUT, "%s '%s': an input is not an int8 activation the lowering placed",
                              ts_graph_op_name(nd->op), nd->name);
        if (b && (a->P != b->P || a->C != b->C))
            return ts_err_set(L->err, TS_EINPUT, "Add '%s': the TSP lowering takes two tensors of one shape (no broadcast)",
                              nd->name);
        int fu = nd->op == TS_OP_ADD ? fused_relu(L, out) : -1;
        int yid = fu >= 0 ? ts_graph_get_node(L->g, fu)->out[0] : out;
        if ((rc = place(L, yid, a->P, a->C, nd, false, bank_pref(L, a))) != TS_OK)
            return rc;
        L->t[yid].nonneg = nd->op == TS_OP_RELU || fu >= 0;
        if ((rc = sched_elem(L, nd->op, a, b, &L->t[yid], fu >= 0, ly)) != TS_OK)
            return rc;
        release(L, nd->in[0]);
        if (b && nd->in[1] != nd->in[0])
            release(L, nd->in[1]);
        return TS_OK;
    }
    case TS_OP_MAXPOOL: {
        tens *x = &L->t[nd->in[0]];
        if (!x->placed || !x->nonneg)
            return ts_err_set(L->err, TS_EINPUT,
                              "MaxPool '%s': the TSP lowering takes the output of a Relu (max through subtract and relu "
                              "is exact for 0..127 only)", nd->name);
        int xr, yr;
        const int64_t *xd = dims_of(L, nd->in[0], &xr), *yd = dims_of(L, out, &yr);
        if (xr != 4 || yr != 4)
            return ts_err_set(L->err, TS_EINPUT, "MaxPool '%s': the TSP lowering takes NCHW tensors", nd->name);
        if ((rc = place(L, out, (uint32_t)(yd[2] * yd[3]), (uint32_t)yd[1], nd, false, bank_pref(L, x))) != TS_OK)
            return rc;
        y->nonneg = true;
        if ((rc = sched_pool(L, nd, x, y, (uint32_t)xd[2], (uint32_t)xd[3], (uint32_t)yd[2], (uint32_t)yd[3], ly)) !=
            TS_OK)
            return rc;
        release(L, nd->in[0]);
        return TS_OK;
    }
    case TS_OP_GLOBALAVGPOOL: {
        tens *x = &L->t[nd->in[0]];
        if (!x->placed)
            return ts_err_set(L->err, TS_EINPUT, "GlobalAveragePool '%s': its input is not placed", nd->name);
        if ((rc = place(L, out, 1, x->C, nd, false, bank_pref(L, x))) != TS_OK ||
            (rc = sched_gap(L, nd, x, y, ly)) != TS_OK)
            return rc;
        release(L, nd->in[0]);
        return TS_OK;
    }
    case TS_OP_FLATTEN:
    case TS_OP_RESHAPE: {
        tens *x = &L->t[nd->in[0]];
        uint32_t Pp, C;
        if ((rc = shape_pc(L, nd, out, &Pp, &C)) != TS_OK)
            return rc;
        if (!x->placed || x->P != 1 || Pp != 1 || C != x->C)
            return ts_err_set(L->err, TS_EINPUT,
                              "%s '%s': the TSP lowering only renames one-pixel tensors (no data movement)",
                              ts_graph_op_name(nd->op), nd->name);
        *y = *x;
        y->users = 0;
        y->output = ts_graph_get_tensor(L->g, out)->is_output;
        /* the alias keeps the region: the source is never released */
        x->output = true;
        y->owner = x->owner;
        ly->first = ly->last = 0;
        return TS_OK;
    }
    case TS_OP_SOFTMAX: {
        tens *x = &L->t[nd->in[0]];
        int xr;
        const int64_t *xd = dims_of(L, nd->in[0], &xr);
        if (!x->placed || xr != 2 || (nd->attrs.axis != -1 && nd->attrs.axis != 1) || x->C > L->VL)
            return ts_err_set(L->err, TS_EINPUT,
                              "Softmax '%s': the TSP lowering takes the last axis of a 2-D int8 tensor of at most %u "
                              "columns", nd->name, L->VL);
        if ((rc = place(L, out, x->P, 2 * L->VL, nd, false, bank_pref(L, x))) != TS_OK)
            return rc;
        if ((rc = sched_softmax(L, nd, x, y, (uint32_t)xd[1], ly)) != TS_OK)
            return rc;
        release(L, nd->in[0]);
        return TS_OK;
    }
    default:
        return ts_err_set(L->err, TS_EINPUT,
                          "%s '%s': the TSP lowering does not take this operator (it lowers MatMul, Gemm, Conv, Relu, "
                          "Add, MaxPool, GlobalAveragePool, Flatten, one-pixel Reshape and Softmax)",
                          ts_graph_op_name(nd->op), nd->name);
    }
    (void)P;
}

/* ---- output ---- */

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* a read before the write of the same cycle */
    return (x->in.op == LT_WRITE) - (y->in.op == LT_WRITE);
}

/* ---- instruction fetch (docs/lowering-tsp.md, Instruction fetch) ---- */

#define FETCH_RING 128 /* cycles of headroom history per queue: longer than any text read's lead */

static uint64_t nop_entries(uint64_t gap)
{
    return (gap + 65534) / 65535;
}

/* Queue qi's position on the stream registers. */
static uint32_t queue_pos(const lt *L, uint32_t qi)
{
    const ts_tsp_target *P = L->tg;
    if (qi < P->q_vxm)
        return mem_pos(L, qi);
    if (qi < P->q_mxm)
        return P->pos_vxm;
    return P->pos_mxm_w[(qi - P->q_mxm) / P->mxm_queues > 0];
}

/* The fetch state of one queue during the sweep (plan_fetches). */
typedef struct fq {
    uint64_t e, now;          /* entries issued; the first cycle no issued entry covers */
    uint64_t avail, F;        /* entries landed; landed or in flight */
    uint64_t land[4], pf;     /* landing cycles of the fetches in flight, oldest first; fetch port free */
    int nland;
    bool over;                /* a fetch landed on a full queue */
    size_t i, w;              /* next rec to issue; first rec past the next landing window */
    uint64_t *suf;            /* suf[i]: entries of recs i.. when rec i starts a cycle */
    int64_t room[FETCH_RING]; /* avail - e at the end of each recent cycle */
} fq;

/* Fetches that landed before cycle c join the queue (the simulator lands them before issuing). */
static void land_until(fq *f, uint64_t c, uint64_t A, uint64_t C)
{
    while (f->nland && f->land[0] < c) {
        if (f->avail + A > f->e + C)
            f->over = true;
        f->avail += A;
        memmove(f->land, f->land + 1, (size_t)(f->nland - 1) * sizeof *f->land);
        f->nland--;
    }
}

/* The nops of the gap from f->now to cycle `to`: false if one issues unfetched. */
static bool issue_gap(fq *f, uint64_t to, uint64_t A, uint64_t C)
{
    for (uint64_t c = f->now; c < to; c += 65535) {
        land_until(f, c, A, C);
        if (f->e >= f->avail)
            return false;
        f->e++;
    }
    if (to > f->now)
        f->now = to;
    return true;
}

static bool occupied(const lt *L, uint32_t m, uint64_t t)
{
    return bget(&L->q[m].issue, t) || bget(&L->q[m].wr, t);
}

/* Entries a read at cycle r adds to MEM queue m, whose issued entries cover the cycles before
 * f->now (0 if it may not go there). */
static uint64_t read_delta(const lt *L, uint32_t m, const fq *f, uint64_t r)
{
    if (r >= f->now)
        return bget(&L->q[m].wr, r) ? 0 : nop_entries(r - f->now) + 1;
    if (bget(&L->q[m].wr, r))
        return 1; /* it pairs with the write */
    int64_t p = (int64_t)r - 1;
    while (p >= 0 && !occupied(L, m, (uint64_t)p))
        p--;
    uint64_t nx = r + 1;
    while (nx < f->now && !occupied(L, m, nx))
        nx++;
    uint64_t old = nop_entries(nx - (uint64_t)(p + 1));
    uint64_t nw = nop_entries(r - (uint64_t)(p + 1)) + 1 + nop_entries(nx - r - 1);
    return nw - old;
}

/* Two reads of text words, from two MEM slices upstream of position pos, that put them on streams
 * (dir, s) and (dir, s + 1) at pos at cycle t. Each read adds entries to its slice's queue before
 * t, so only where that queue has room for them at every cycle since. */
static bool fetch_text(lt *L, fq *fs, uint32_t qi, uint64_t t, uint32_t pos, int dir, int s, uint32_t tag,
                       uint32_t *ms, uint64_t *rs)
{
    uint32_t nm = L->nW + L->nE, got = 0;
    for (uint32_t d = 1; d < L->tg->npos && got < 2; d++) {
        if (dir == WEST ? pos + d >= L->tg->npos : d > pos)
            break;
        uint64_t r = t - L->tg->d_func.read - d;
        if (t < L->tg->d_func.read + d || t - r >= FETCH_RING)
            break;
        uint32_t want = dir == WEST ? pos + d : pos - d;
        for (uint32_t m = 0; m < nm && got < 2; m++) {
            if (m == qi || (got && m == ms[0]) || mem_pos(L, m) != want)
                continue;
            uint64_t dl = read_delta(L, m, &fs[m], r);
            if (!dl)
                continue;
            uint64_t x;
            for (x = r; x < t && fs[m].room[x % FETCH_RING] >= (int64_t)dl; x++)
                ;
            if (x < t)
                continue;
            for (uint32_t b = 0; b < 2; b++) {
                uint32_t h = m >= L->nW, word = L->tnext[m][b];
                if (word >= L->al[h][b].limit)
                    continue;
                size_t mark = L->nu, pm = L->npd;
                if (rd(L, m, word, t, pos, dir, s + (int)got, tag, 0)) {
                    L->tnext[m][b]++;
                    ms[got] = m;
                    rs[got++] = r;
                    break;
                }
                undo_to(L, mark, pm);
            }
        }
    }
    return got == 2;
}

/* An ifetch on queue qi at cycle t with its text, if every reservation is free. */
static bool try_fetch(lt *L, fq *fs, uint32_t qi, uint64_t t)
{
    lq *q = &L->q[qi];
    uint32_t pos = queue_pos(L, qi), tag = L->tag % 65535 + 1, ms[2];
    uint64_t rs[2];
    for (int dir = 0; dir < 2; dir++)
        for (int s = 0; s + 1 < 32; s += 2) {
            if (bget(&L->diag[dir][s], diag_key(dir, t, pos)) || bget(&L->diag[dir][s + 1], diag_key(dir, t, pos)))
                continue;
            size_t mark = L->nu, pm = L->npd;
            if (take_stream(L, dir, s, t, pos) && take_stream(L, dir, s + 1, t, pos) && take(L, &q->issue, t) &&
                (qi >= L->tg->q_vxm || take(L, &q->wr, t)) && fetch_text(L, fs, qi, t, pos, dir, s, tag, ms, rs)) {
                /* the reads' entries, counted before the reservations are kept */
                uint64_t dl[2];
                for (int k = 0; k < 2; k++) {
                    bput(&L->q[ms[k]].issue, rs[k], false);
                    dl[k] = read_delta(L, ms[k], &fs[ms[k]], rs[k]);
                    bput(&L->q[ms[k]].issue, rs[k], true);
                }
                E1(L, qi, t, LT_IFETCH, sreg(L, dir, s), (int32_t)tag);
                new_tag(L);
                size_t nl = L->nlayers;
                L->nlayers = 0; /* text reads and ifetches belong to no layer */
                int rc = keep(L);
                L->nlayers = nl;
                for (int k = 0; k < 2; k++) {
                    fq *f = &fs[ms[k]];
                    if (rs[k] >= f->now)
                        f->now = rs[k] + 1;
                    f->e += dl[k];
                    for (uint64_t x = rs[k]; x < t; x++)
                        f->room[x % FETCH_RING] -= (int64_t)dl[k];
                }
                L->fetches++;
                return rc == 0;
            }
            undo_to(L, mark, pm);
            if (L->oom)
                return false;
        }
    return false;
}

/* Replay queue qi's entries (its recs sorted, ifetches included) as the simulator issues them:
 * false, with the cycle, if an entry issues unfetched or a fetch overfills the queue. */
static bool check_queue(lt *L, uint32_t qi, uint64_t *fail_t)
{
    lq *q = &L->q[qi];
    uint64_t C = L->tg->queue_capacity, A = L->tg->ifetch_bytes / L->tg->insn_bytes;
    uint64_t D = (L->tg->ifetch_bytes + L->tg->fetch_bpc - 1) / L->tg->fetch_bpc;
    fq f = {.F = C, .avail = C};
    for (size_t i = 0; i < q->n;) {
        uint64_t tau = q->v[i].t;
        size_t k = i + 1 < q->n && q->v[i + 1].t == tau ? 2 : 1;
        *fail_t = tau;
        if (!issue_gap(&f, tau, A, C))
            return false;
        land_until(&f, tau, A, C);
        if (f.e + k > f.avail || f.over)
            return false;
        if (q->v[i].in.op == LT_IFETCH) {
            if (f.nland == 4)
                return false;
            uint64_t start = tau > f.pf ? tau : f.pf;
            f.land[f.nland++] = start + D - 1;
            f.pf = start + D;
        }
        f.e += k;
        f.now = tau + 1;
        i += k;
    }
    return true;
}

/* Place the ifetches of every queue longer than icu.queue_capacity, their text in MEM words above
 * everything the schedule allocated. One sweep over the cycles keeps every queue's count of
 * issued, landed and requested entries; a queue that wants text takes an ifetch at the first
 * free cycle where the fetch cannot overfill it on landing, a stream pair and two text reads are
 * free. A text read adds entries to a MEM queue before the current cycle, where that queue had
 * room for them. Every queue is then replayed as the simulator issues it. */
static ts_status plan_fetches(lt *L)
{
    const ts_tsp_target *P = L->tg;
    if (!P->queue_capacity)
        return TS_OK;
    L->fwin = 0;
    uint64_t C = P->queue_capacity, A = P->ifetch_bytes / P->insn_bytes;
    uint64_t D = (P->ifetch_bytes + P->fetch_bpc - 1) / P->fetch_bpc;
    uint32_t nm = L->nW + L->nE;
    L->tnext = ts_calloc(nm, sizeof *L->tnext);
    fq *fs = ts_calloc(L->nq, sizeof *fs);
    ts_status rc = TS_OK;
    if (!L->tnext || !fs) {
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t m = 0; m < nm; m++)
        for (int b = 0; b < 2; b++)
            L->tnext[m][b] = L->al[m >= L->nW][b].top;
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        lq *q = &L->q[qi];
        fq *f = &fs[qi];
        if (q->n) /* an empty queue has no array (qsort wants one) */
            qsort(q->v, q->n, sizeof *q->v, cmp_rec);
        f->avail = f->F = C;
        for (int k = 0; k < FETCH_RING; k++)
            f->room[k] = (int64_t)C;
        if (!(f->suf = ts_calloc(q->n + 1, sizeof *f->suf))) {
            rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = q->n; i-- > 0;)
            f->suf[i] = i + 1 < q->n && q->v[i + 1].t == q->v[i].t
                            ? 1 + f->suf[i + 1]
                            : 1 + (i + 1 < q->n ? nop_entries(q->v[i + 1].t - q->v[i].t - 1) + f->suf[i + 1] : 0);
    }
    size_t *nrec = ts_calloc(L->nq, sizeof *nrec); /* the recs of the schedule, before text reads */
    if (!nrec) {
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t qi = 0; qi < L->nq; qi++)
        nrec[qi] = L->q[qi].n;
    uint64_t end = L->last + 1;
    for (uint64_t c = 0; c <= end && rc == TS_OK; c++)
        for (uint32_t qi = 0; qi < L->nq; qi++) {
            lq *q = &L->q[qi];
            fq *f = &fs[qi];
            size_t n = nrec[qi];
            land_until(f, c, A, C);
            while (f->w < n && q->v[f->w].t <= c + D - 1)
                f->w++;
            bool busy = f->i < n && q->v[f->i].t == c;
            if (!busy && f->i < n && f->nland < 4 && !occupied(L, qi, c) &&
                f->F < f->e + nop_entries(q->v[f->i].t - f->now) + f->suf[f->i] + 2) {
                uint64_t g = nop_entries(c - f->now) + 1, pc = f->e + g + (f->w - f->i);
                if (pc + C >= f->F + A && f->e + g <= f->avail && try_fetch(L, fs, qi, c)) {
                    uint64_t start = c > f->pf ? c : f->pf;
                    if (!issue_gap(f, c, A, C) || f->e >= f->avail)
                        rc = ts_err_set(L->err, TS_EINTERNAL, "queue %u: ifetch at cycle %" PRIu64 " unfetched", qi, c);
                    f->e++;
                    f->now = c + 1;
                    f->land[f->nland++] = start + D - 1;
                    f->pf = start + D;
                    f->F += A;
                }
                if (L->oom)
                    rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
            }
            if (busy) {
                size_t k = f->i + 1 < n && q->v[f->i + 1].t == c ? 2 : 1;
                if (!issue_gap(f, c, A, C) || f->e + k > f->avail)
                    if (rc == TS_OK)
                        rc = ts_err_set(L->err, TS_EINPUT,
                                        "queue %u runs dry at cycle %" PRIu64 ": no ifetch could be placed in time "
                                        "(icu.queue_capacity %" PRIu64 ")",
                                        qi, c, C);
                f->e += k;
                f->now = c + 1;
                f->i += k;
            }
            f->room[c % FETCH_RING] = (int64_t)f->avail - (int64_t)f->e;
        }
    ts_free(nrec);
    for (uint32_t qi = 0; qi < L->nq && rc == TS_OK; qi++) {
        lq *q = &L->q[qi];
        if (q->n)
            qsort(q->v, q->n, sizeof *q->v, cmp_rec);
        uint64_t t = 0;
        if (!check_queue(L, qi, &t))
            rc = ts_err_set(L->err, TS_EINPUT,
                            "queue %u runs dry or overfills at cycle %" PRIu64 ": no ifetch could be placed in time "
                            "(icu.queue_capacity %" PRIu64 ")",
                            qi, t, C);
    }
out:
    for (uint32_t qi = 0; fs && qi < L->nq; qi++)
        ts_free(fs[qi].suf);
    ts_free(fs);
    return rc;
}

static ts_status emit_queues(lt *L, ts_lower_tsp_report *rep)
{
    uint64_t maxq = 0, ninsn = 0;
    for (uint32_t qi = 0; qi < L->nq; qi++) {
        lq *q = &L->q[qi];
        if (!q->n)
            continue;
        qsort(q->v, q->n, sizeof *q->v, cmp_rec);
        /* a read/write pair after a lone write starts with a write (docs/tsp.md, Issue) */
        for (size_t i = 1; i + 1 < q->n; i++)
            if (q->v[i].t == q->v[i + 1].t && q->v[i - 1].t + 1 == q->v[i].t &&
                (i < 2 || q->v[i - 2].t != q->v[i - 1].t) && q->v[i - 1].in.op == LT_WRITE) {
                rec tmp = q->v[i];
                q->v[i] = q->v[i + 1];
                q->v[i + 1] = tmp;
            }
        ts_stream *s = ts_program_stream(L->prog, 0, qi);
        if (!s)
            return ts_err_set(L->err, TS_ENOMEM, "out of memory");
        uint64_t now = 0;
        for (size_t i = 0; i < q->n; i++) {
            uint64_t t = q->v[i].t;
            if (t < now) { /* the second of a read/write pair */
                if (t + 1 != now)
                    return ts_err_set(L->err, TS_EINTERNAL, "queue %u: two instructions at cycle %" PRIu64, qi, t);
            }
            while (t > now) {
                uint64_t n = t - now > 65535 ? 65535 : t - now;
                ts_insn *in = ts_stream_emit(s, LT_NOP);
                if (!in)
                    return ts_err_set(L->err, TS_ENOMEM, "out of memory");
                in->a[0] = (int32_t)n;
                now += n;
            }
            ts_insn *in = ts_stream_emit(s, q->v[i].in.op);
            if (!in)
                return ts_err_set(L->err, TS_ENOMEM, "out of memory");
            memcpy(in->a, q->v[i].in.a, sizeof in->a);
            now = t + 1;
        }
        if (s->n > maxq)
            maxq = s->n;
        ninsn += s->n;
    }
    if (rep) {
        rep->instructions = ninsn;
        rep->max_queue = maxq;
    }
    return TS_OK;
}

void ts_lower_tsp_report_free(ts_lower_tsp_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->places);
    ts_free(rep->layers);
    memset(rep, 0, sizeof *rep);
}

ts_status ts_lower_tsp(const ts_graph *g, const void *params, ts_program **out, ts_lower_tsp_report *rep, ts_err *err)
{
    const ts_tsp_target *P = &((const ts_lower_tsp_params *)params)->target;
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (P->streams < 32 || P->mem_west < 16 || P->mem_east < 16 || P->mxm_west < 2 || P->vxm_alus < 5 ||
        P->mxm_dim != P->superlanes * P->lanes || (P->superlanes * P->lanes) % IW_STREAMS)
        return ts_err_set(err, TS_EINPUT, "the TSP lowering needs 32 streams per direction, 16 MEM slices and two MXM "
                                          "planes west, 5 VXM ALUs and planes as wide as a vector of a multiple of 16");
    lt L = {.g = g, .tg = P, .err = err};
    L.VL = P->superlanes * P->lanes;
    L.nW = P->mem_west;
    L.nE = P->mem_east;
    L.nalu = P->vxm_alus > 16 ? 16 : P->vxm_alus;
    L.nq = P->q_mxm + P->mxm_queues * (P->mxm_west + P->mxm_east) + P->sxm_queues * (P->sxm_west + P->sxm_east);
    L.half = P->banks == 2 ? (uint32_t)(P->words / 2) : (uint32_t)P->words;
    for (int h = 0; h < 2; h++) {
        L.al[h][0] = (alloc){.first = 0, .top = 0, .limit = L.half};
        L.al[h][1] = (alloc){.first = L.half, .top = L.half, .limit = (uint32_t)P->words};
    }
    L.al[0][0].first = L.al[0][0].top = 1; /* word 0 of every west slice: zeros */
    if (P->queue_capacity && P->ifetch_bytes && P->fetch_bpc)
        L.fwin = (P->ifetch_bytes + P->fetch_bpc - 1) / P->fetch_bpc;
    L.prog = ts_program_create("tsp");
    L.q = ts_calloc(L.nq, sizeof *L.q);
    L.bank = ts_calloc(L.nW + L.nE, sizeof *L.bank);
    size_t nt = ts_graph_tensor_count(g), nn = ts_graph_node_count(g);
    L.t = ts_calloc(nt ? nt : 1, sizeof *L.t);
    ts_status rc = TS_OK;
    if (!L.prog || !L.q || !L.bank || !L.t) {
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nt; i++) {
        size_t n;
        ts_graph_consumers(g, (int)i, &n);
        L.t[i].users = (int)n;
        L.t[i].output = ts_graph_get_tensor(g, (int)i)->is_output;
        L.t[i].owner = (int)i;
    }
    for (size_t i = 0; i < nn && rc == TS_OK; i++)
        rc = lower_node(&L, (int)i);
    if (rc == TS_OK && L.oom)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK)
        rc = plan_fetches(&L);
    if (rc == TS_OK)
        rc = emit_queues(&L, rep);
    if (rc == TS_OK) {
        char wl[160];
        snprintf(wl, sizeof wl, "%s (int8, lowered for the TSP)", ts_graph_name(g));
        L.prog->workload = ts_malloc(strlen(wl) + 1);
        if (L.prog->workload)
            memcpy(L.prog->workload, wl, strlen(wl) + 1);
        ts_program_canonicalize(L.prog);
    }
    if (rc == TS_OK && rep) {
        rep->cycles = L.last + 1;
        rep->words_used = (uint64_t)(L.al[0][0].top + L.al[0][1].top - L.al[0][1].first) * L.nW +
                          (uint64_t)(L.al[1][0].top + L.al[1][1].top - L.al[1][1].first) * L.nE;
        rep->layers = L.layers;
        rep->nlayers = L.nlayers;
        L.layers = NULL;
        size_t np = 0;
        for (size_t i = 0; i < nt; i++)
            np += L.t[i].placed && L.t[i].ready;
        rep->places = ts_calloc(np ? np : 1, sizeof *rep->places);
        if (!rep->places) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
        } else {
            for (size_t i = 0; i < nt; i++) {
                tens *x = &L.t[i];
                if (!x->placed || !x->ready)
                    continue;
                rep->places[rep->nplaces++] = (ts_lower_tsp_place){.tensor = (int)i, .pixels = x->P, .tiles = x->T,
                    .channels = x->C, .slice0 = 0, .nslices = L.nW, .base = x->base, .off = x->off};
            }
        }
    }
done:
    for (size_t i = 0; L.t && i < nt; i++)
        if (L.t[i].ready && L.t[i].owner == (int)i)
            ts_free(L.t[i].ready);
    ts_free(L.t);
    ts_free(L.tnext);
    for (uint32_t i = 0; L.q && i < L.nq; i++) {
        ts_free(L.q[i].v);
        ts_free(L.q[i].issue.w);
        ts_free(L.q[i].wr.w);
    }
    ts_free(L.q);
    for (uint32_t i = 0; L.bank && i < L.nW + L.nE; i++) {
        ts_free(L.bank[i][0].w);
        ts_free(L.bank[i][1].w);
    }
    ts_free(L.bank);
    for (int i = 0; i < 16; i++)
        ts_free(L.lat[i].w);
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 64; s++)
            ts_free(L.diag[d][s].w);
    ts_free(L.u);
    ts_free(L.pd);
    ts_free(L.layers);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 2; k++)
            ts_free(L.al[h][k].v);
    if (rc == TS_OK) {
        *out = L.prog;
    } else {
        ts_program_destroy(L.prog);
        if (rep) {
            ts_free(rep->places);
            ts_free(rep->layers);
            memset(rep, 0, sizeof *rep);
        }
    }
    return rc;
}

int ts_lower_tsp_locate(const ts_lower_tsp_report *rep, int tensor, uint32_t pixel, uint32_t channel, uint32_t vl,
                        int *slice, uint64_t *addr)
{
    for (size_t i = 0; i < rep->nplaces; i++) {
        const ts_lower_tsp_place *p = &rep->places[i];
        if (p->tensor != tensor)
            continue;
        if (pixel >= p->pixels || channel >= p->channels)
            return -1;
        uint64_t k = p->off + (uint64_t)pixel * p->tiles + channel / vl;
        *slice = (int)(p->slice0 + k % p->nslices);
        *addr = (p->base + k / p->nslices) * (uint64_t)vl + channel % vl;
        return 0;
    }
    return -1;
}

/* ---- parameters from a config ---- */

ts_status ts_lower_tsp_params_from_config(const ts_config *cfg, ts_lower_tsp_params *out, ts_err *err)
{
    ts_tsp_target *t = &out->target;
    ts_status rc = ts_tsp_target_from_config(cfg, t, err);
    if (rc != TS_OK)
        return rc;
    if (t->d_skew.mem || t->d_skew.vxm || t->d_skew.mxm || t->d_skew.sxm)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering assumes d_skew 0 for every unit",
                          ts_config_name(cfg));
    if (t->d_func.abc < t->superlanes)
        return ts_err_set(err, TS_EINPUT, "config '%s': d_func.abc is shorter than the superlanes", ts_config_name(cfg));
    if (t->sr_map)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering takes one stream-register position per slice "
                                          "(an empty streams.sr_map)", ts_config_name(cfg));
    /* the west planes must lie west of every west MEM slice (weights and activations flow west) */
    for (uint32_t j = 0; j < t->mxm_west && j < 2; j++)
        if (t->mem_west && t->pos_mxm_w[j] > t->pos_mem_w[t->mem_west - 1])
            return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering needs the west MXM planes at the west edge",
                              ts_config_name(cfg));
    if (t->mxm_queues < 3)
        return ts_err_set(err, TS_EINPUT, "config '%s': the TSP lowering needs 3 queues per MXM plane",
                          ts_config_name(cfg));
    return TS_OK;
}

/* ---- the lowering interface (workloads/lower/lower.h) ---- */

typedef struct tsp_lowering {
    ts_lower_tsp_params p;
    ts_lower_tsp_report rep;
} tsp_lowering;

static ts_status tsp_create(const ts_config *cfg, const ts_lower_opts *opts, void **state, ts_err *err)
{
    (void)opts;
    tsp_lowering *s = ts_calloc(1, sizeof *s);
    if (!s)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    *state = s;
    return ts_lower_tsp_params_from_config(cfg, &s->p, err);
}

static ts_status tsp_lower(void *state, const ts_graph *g, ts_program **out, ts_err *err)
{
    tsp_lowering *s = state;
    return ts_lower_tsp(g, &s->p, out, &s->rep, err);
}

/* The per-operator table "layers" of a TSP run: cycles, bandwidth and energy from the static
 * schedule, priced with energy. */
static ts_status tsp_attribute(void *state, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const ts_lower_tsp_report *rep = &((const tsp_lowering *)state)->rep;
    if (!rep->nlayers || !res->stats || strcmp(res->arch, "tsp"))
        return TS_OK;
    static const char *const cols[] = {"node", "first", "last", "cycles", "mem_bytes", "bandwidth", "macs",
                                       "mxm_macs", "vxm_ops", "energy"};
    static const char *const units[] = {"", "cycles", "cycles", "cycles", "B", "GB/s", "", "", "", "uJ"};
    int t = ts_stats_table(res->stats, "layers",
                           "per operator, from the static schedule: first and last instruction (operators overlap), "
                           "MEM bytes moved and their rate over its cycles, useful and executed MACs, VXM "
                           "instructions, and its energy priced with the run's table (MXM MACs, MEM bytes, "
                           "instruction issues)", 10, cols, units);
    if (t < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    const ts_energy_entry *mac = energy ? ts_energy_find(energy, "int8_mac") : NULL;
    const ts_energy_entry *rd = energy ? ts_energy_find(energy, "sram_read_64b") : NULL;
    const ts_energy_entry *is = energy ? ts_energy_find(energy, "insn_issue") : NULL;
    for (size_t i = 0; i < rep->nlayers; i++) {
        const ts_lower_tsp_layer *y = &rep->layers[i];
        double cyc = y->instructions ? (double)(y->last - y->first + 1) : 0;
        double secs = res->clock_hz > 0 ? cyc / res->clock_hz : 0;
        double j = (mac ? mac->joules * (double)y->mxm_macs : 0) + (rd ? rd->joules * (double)y->mem_bytes / 8.0 : 0) +
                   (is ? is->joules * (double)y->instructions : 0);
        double row[10] = {(double)y->node, (double)y->first, (double)y->last, cyc, (double)y->mem_bytes,
                          secs > 0 ? (double)y->mem_bytes / secs / 1e9 : 0, (double)y->macs, (double)y->mxm_macs,
                          (double)y->vxm_ops, j * 1e6};
        if (!y->instructions)
            row[1] = row[2] = 0;
        ts_status rc = ts_stats_row(res->stats, t, row);
        if (rc != TS_OK)
            return ts_err_set(err, rc, "out of memory");
    }
    return TS_OK;
}

static void tsp_destroy(void *state)
{
    tsp_lowering *s = state;
    ts_lower_tsp_report_free(&s->rep);
    ts_free(s);
}

const ts_lowering ts_tsp_lowering = {
    .arch = "tsp",
    .name = "TSP static schedule",
    .create = tsp_create,
    .lower = tsp_lower,
    .attribute = tsp_attribute,
    .destroy = tsp_destroy,
};
