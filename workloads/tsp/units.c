/* workloads/tsp/units.c — the TSP's units as the scheduler uses them (see lower_tsp_int.h): MEM
 * reads and writes (read and write ports, banks, the rule that pairs a read with an adjacent
 * write) and VXM operations (the ALUs' queues and latches, chaining through a latch).
 */
#include "workloads/tsp/lower_tsp_int.h"

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
    if (!lt_take(L, &L->q[mem].issue, (uint64_t)r) || !lt_take(L, bk, (uint64_t)r))
        return false;
    E1(L, mem, (uint64_t)r, LT_READ, (int32_t)word, lt_sreg(L, dir, s), (int32_t)tag);
    if ((uint64_t)r > L->rdmax)
        L->rdmax = (uint64_t)r;
    return true;
}

/* The same from any slice of a hemisphere that holds the word (replicated constants, zeros). */
bool lt_rd_any(lt *L, int hemi, uint32_t word, uint64_t ta, uint32_t pc, int dir, int s, uint32_t tag)
{
    uint32_t n = hemi ? L->nE : L->nW, b = hemi ? L->nW : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mem = b + (L->rot + i) % n;
        size_t mark = L->nu, pm = L->npd;
        if (lt_rd(L, mem, word, ta, pc, dir, s, tag, 0)) {
            L->rot++;
            return true;
        }
        lt_undo_to(L, mark, pm);
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
    if (!lt_take(L, &L->q[mem].wr, w) || !lt_take(L, bk, w + L->tg->d_func.write))
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
        if (!lt_take(L, &L->lat[v->alu], c))
            return false;
    if (t > v->held)
        v->held = t;
    return true;
}

/* The register that names v as an operand. */
static int32_t vreg(const lt *L, const val *v)
{
    return v->alu >= 0 ? lt_areg(L, v->alu) : lt_sreg(L, v->dir, v->s);
}

/* Issue a VXM instruction at cycle t on some free ALU. op is ADD/ADDS/SUBS/MUL (binary), RELU or
 * CVT (unary; to/from types). pool is the destination stream pool or -1 for the latch only; w the
 * destination width. *out gets the latch value; *ds the destination stream. */
bool lt_vop(lt *L, uint16_t op, int32_t type, int32_t from, uint64_t t, val *a, val *b, int pool, int w,
            uint32_t tag, val *out, int *ds)
{
    const ts_tsp_dfunc *f = &L->tg->d_func;
    uint32_t d = op == LT_MUL ? f->mul : op == LT_RELU ? f->relu : op == LT_CVT ? f->cvt
               : op == LT_EXP ? f->exp : op == LT_RSQRT ? f->rsqrt : f->add;
    if (!hold(L, a, t) || (b && !hold(L, b, t)))
        return false;
    int s = -1;
    if (pool >= 0 && !lt_take_group(L, pool, w, t + d, L->tg->pos_vxm, &s))
        return false;
    for (uint32_t i = 0; i < L->nalu; i++) {
        uint32_t alu = (L->rot + i) % L->nalu, q = L->tg->q_vxm + alu;
        size_t mark = L->nu, pm = L->npd;
        if (lt_bget(&L->q[q].issue, t) || lt_bget(&L->lat[alu], t + d))
            continue;
        if (lt_take(L, &L->q[q].issue, t) && lt_take(L, &L->lat[alu], t + d)) {
            int32_t dst = s >= 0 ? lt_sreg(L, lt_pools[pool].dir, s) : L->tg->reg.nul;
            if (op == LT_CVT)
                E1(L, q, t, op, type, from, dst, vreg(L, a), (int32_t)tag, (int32_t)tag);
            else if (b)
                E1(L, q, t, op, type, dst, vreg(L, a), vreg(L, b), (int32_t)tag, (int32_t)tag);
            else
                E1(L, q, t, op, type, dst, vreg(L, a), (int32_t)tag, (int32_t)tag);
            *out = (val){.alu = (int)alu, .t = t + d, .held = t + d};
            if (ds)
                *ds = s;
            L->rot++;
            return true;
        }
        lt_undo_to(L, mark, pm);
    }
    return false;
}

/* A stream value read from W MEM reaching the VXM at cycle ta (pool P_W2V_E). */
bool lt_vin_w(lt *L, uint32_t mem, uint32_t word, uint64_t ta, uint32_t tag, uint64_t lb, val *v)
{
    int s;
    if (!lt_take_group(L, P_W2V_E, 1, ta, L->tg->pos_vxm, &s) ||
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
        if (lt_take(L, &L->q[q].issue, ta - d) && lt_take(L, &L->lat[alu], ta)) {
            E1(L, q, ta - d, LT_MASK, L->tg->reg.i8, L->tg->reg.nul, vreg(L, &raw), 0xff, (int32_t)tag, (int32_t)tag);
            *v = (val){.alu = (int)alu, .t = ta, .held = ta};
            L->rot++;
            return true;
        }
        lt_undo_to(L, mark, pm);
    }
    return false;
}

/* An f32 scale, replicated in words sword..sword + 3 of every east MEM slice (one byte plane each),
 * reaching the VXM at cycle t on a group of 4 streams (pool P_E2V_W). */
bool lt_scale_in(lt *L, uint32_t sword, uint64_t t, uint32_t tag, val *v)
{
    uint32_t pv = L->tg->pos_vxm;
    int sc;
    if (!lt_take_group(L, P_E2V_W, 4, t, pv, &sc))
        return false;
    for (int b = 0; b < 4; b++)
        if (!lt_rd_any(L, 1, sword + (uint32_t)b, t, pv, WEST, sc + b, tag))
            return false;
    *v = (val){.alu = -1, .dir = WEST, .s = sc, .t = t};
    return true;
}
