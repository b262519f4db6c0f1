/* arch/wse/wse_vec.c — the vector ops over data structure descriptors (DSDs) that run on the main
 * thread and the microthreads (research/cerebras_wse.md §1.3-§1.5): the checks at issue, the
 * elements per cycle the SIMD width, the SRAM banks and the strides allow, and the elements' reads,
 * binary32 or binary16 arithmetic and writes (each cycle's step, which moves them, is in
 * wse_inline.h, inline in the cycle loop).
 */
#include "arch/wse/wse_inline.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* binary16 <-> binary32, round to nearest even */

static float h2f(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f)
        return f32_of(s | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return s ? -v : v;
    }
    return f32_of(s | ((e + 112) << 23) | (m << 13));
}

static uint16_t f2h(float f)
{
    uint32_t x = bits_of(f);
    uint16_t s = (uint16_t)((x >> 16) & 0x8000);
    uint32_t e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff)
        return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
    int32_t he = (int32_t)e - 112;
    if (he >= 0x1f)
        return (uint16_t)(s | 0x7c00);
    if (he <= 0) {
        if (he < -10)
            return s;
        m |= 0x800000;
        uint32_t shift = (uint32_t)(14 - he);
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1)))
            hm++;
        return (uint16_t)(s | hm);
    }
    uint32_t hm = m >> 13, rem = m & 0x1fff;
    uint32_t v = ((uint32_t)he << 10) | hm;
    if (rem > 0x1000 || (rem == 0x1000 && (hm & 1)))
        v++;
    return (uint16_t)(s | v);
}

/* ------------------------------------------------------------------------------------------ */
/* issue */

/* Elements per cycle a 16-bit-unit stride allows (research §1.3, SDK-APX stride rules). */
static inline uint32_t stride_cap(int32_t stride, uint32_t esize)
{
    if (stride == 0 || stride == 1) /* 0 or esize / 2 (1 or 2) 16-bit units: full width */
        return UINT32_MAX;
    int64_t s16 = (int64_t)stride * (int64_t)esize / 2;
    if (s16 == 0 || s16 == 1)
        return UINT32_MAX;
    int64_t md = ((s16 % 8) + 8) % 8;
    if (md == 2 || md == 3 || md == 5 || md == 6)
        return UINT32_MAX;
    if (md == 1 || md == 7 || md == 4)
        return 2; /* md 4: "limited" in SDK-APX; 2 assumed */
    return 1;
}

static uint64_t simd_width(const ts_model *m, const char *key)
{
    if (!key)
        return m->c.simd_fp32_mov;
    if (!strcmp(key, "pe.simd.fp16"))
        return m->c.simd_fp16;
    if (!strcmp(key, "pe.simd.fp32_add"))
        return m->c.simd_fp32_add;
    if (!strcmp(key, "pe.simd.fp32_mul"))
        return m->c.simd_fp32_mul;
    if (!strcmp(key, "pe.simd.fp32_mac"))
        return m->c.simd_fp32_mac;
    return m->c.simd_fp32_mov;
}

/* Once per model: before, each vector issue compared its width key by name and each instruction
 * walked its operand list (4 % of bench_wse_stencil 40 40's host instructions). */
void ts_wse_op_tables(ts_model *m)
{
    for (int op = 0; op < WSE_OP_COUNT; op++) {
        const ts_opinfo *o = &ts_wse_isa.ops[op];
        uint8_t nregs = 0;
        for (int j = 0; j < TS_MAX_OPNDS && o->opnd[j]; j++)
            nregs += (o->opnd[j] & TS_OK_KIND_MASK) == TS_OK_REG;
        m->op_nopnds[op] = (uint8_t)ts_isa_nopnds(o);
        m->op_nregs[op] = nregs;
        m->op_simd[op] = ts_wse_opfacts[op].unit == WSE_U_VEC ? simd_width(m, ts_wse_opfacts[op].width) : 0;
    }
}

/* The DSD kinds an op's destination may have (memory, fabric output) and its sources (memory, fabric
 * input), a bit per kind. */
#define WSE_DSD_DST_OK (1u << DSD_MEM | 1u << DSD_OUT)
#define WSE_DSD_SRC_OK (1u << DSD_MEM | 1u << DSD_IN)

/* A memory DSD of n elements of esize bytes covers only SRAM (any other kind is fine here). */
static inline bool dsd_fits(const ts_model *m, const wse_dsd *d, uint32_t n, uint32_t esize)
{
    if (d->kind != DSD_MEM)
        return true;
    if (d->base < 0 || ((uint32_t)d->base & (esize - 1))) /* esize 2 or 4: a mask, not a division */
        return false;
    if (!n)
        return true;
    int64_t last = (int64_t)d->base + (int64_t)(n - 1) * d->stride * (int64_t)esize;
    int64_t lo = last < d->base ? last : d->base, hi = (last > d->base ? last : d->base) + esize;
    return lo >= 0 && (uint64_t)hi <= m->c.sram_bytes;
}

/* Why memory DSD d does not fit (dsd_fits is false), into why. */
static void dsd_misfit(const ts_model *m, const wse_dsd *d, uint32_t n, uint32_t esize, char *why, size_t nwhy)
{
    if (d->base < 0 || d->base % (int32_t)esize) {
        snprintf(why, nwhy, "memory dsd base %d is negative or not %u-byte aligned", d->base, esize);
        return;
    }
    int64_t last = (int64_t)d->base + (int64_t)(n - 1) * d->stride * (int64_t)esize;
    int64_t lo = last < d->base ? last : d->base, hi = (last > d->base ? last : d->base) + esize;
    snprintf(why, nwhy, "memory dsd [%" PRId64 ", %" PRId64 ") is outside the %" PRIu64 "-byte SRAM", lo, hi,
             m->c.sram_bytes);
}

/* The error of an issue whose operands are bad (kinds, lengths or extent), in the order they are
 * checked; out of the issue's way (it runs a quarter of a million times on bench_wse_stencil 60 60). */
static __attribute__((noinline, cold)) bool vec_bad(ts_model *m, wse_tile *t, wse_band *b, const ts_insn *in,
                                                    uint32_t pc, const wse_dsd *d, const wse_dsd *s0,
                                                    const wse_dsd *s1, uint32_t esize)
{
    const char *name = ts_wse_isa.ops[in->op].mnemonic;
    if (d->kind == DSD_NONE || d->kind == DSD_IN || s0->kind == DSD_NONE || s0->kind == DSD_OUT ||
        (s1 && (s1->kind == DSD_NONE || s1->kind == DSD_OUT))) {
        ts_wse_set_err(b, t, b->now, "%s at pc %u: destination must be a memory or fabric-output dsd and sources "
                       "memory or fabric-input dsds", name, pc);
        return false;
    }
    uint32_t n = d->len;
    if (s0->len != n || (s1 && s1->len != n)) {
        ts_wse_set_err(b, t, b->now, "%s at pc %u: operand lengths differ (%u, %u, %u)", name, pc, n, s0->len,
                       s1 ? s1->len : n);
        return false;
    }
    char why[200];
    const wse_dsd *bad = !dsd_fits(m, d, n, esize) ? d : !dsd_fits(m, s0, n, esize) ? s0 : s1;
    dsd_misfit(m, bad, n, esize, why, sizeof why);
    ts_wse_set_err(b, t, b->now, "%s at pc %u: %s", name, pc, why);
    return false;
}

/* Issue a vector op onto thread th; false (with an error set) if its operands are bad. The thread
 * is idle (exec_insn checks), so on an error it is left as it is. */
bool ts_wse_vec_issue(ts_model *m, wse_tile *t, wse_band *b, const ts_insn *in, uint32_t pc)
{
    wse_ce *ce = t->ce;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    const int32_t *a = in->a;
    int nd = m->op_nopnds[in->op];
    int th = a[nd - 2];
    bool two = f->vop != WSE_V_MOV;
    const wse_dsd *d = &ce->dsd[a[0]], *s0 = &ce->dsd[a[1]], *s1 = two ? &ce->dsd[a[2]] : NULL;
    uint32_t esize = f->dtype / 8, n = d->len;
    bool m0 = s0->kind == DSD_MEM, m1 = two && s1->kind == DSD_MEM, md = d->kind == DSD_MEM;
    /* the kinds by one mask each: a destination in memory or on the fabric's output, sources in memory
     * or on its input (a move's missing s1 checked as s0) */
    uint32_t k1 = two ? s1->kind : s0->kind;
    if (!((WSE_DSD_DST_OK >> d->kind) & (WSE_DSD_SRC_OK >> s0->kind) & (WSE_DSD_SRC_OK >> k1) & 1u) ||
        s0->len != n || (two && s1->len != n) || (md && !dsd_fits(m, d, n, esize)) ||
        (m0 && !dsd_fits(m, s0, n, esize)) || (m1 && !dsd_fits(m, s1, n, esize)))
        return vec_bad(m, t, b, in, pc, d, s0, s1, esize);
    uint64_t w = m->op_simd[in->op];
    if (m0 && m1) {
        /* two reads in one cycle need banks in different halves (§1.3, SDK-APX); else half width (assumed) */
        uint64_t half = m->c.sram_banks / 2 ? m->c.sram_banks / 2 : 1;
        uint64_t b0 = ((uint64_t)s0->base / m->c.bank_interleave) % m->c.sram_banks;
        uint64_t b1 = ((uint64_t)s1->base / m->c.bank_interleave) % m->c.sram_banks;
        if (b0 % half == b1 % half && w > 1)
            w /= 2;
    }
    uint32_t cap = md ? stride_cap(d->stride, esize) : UINT32_MAX, c;
    if (m0 && (c = stride_cap(s0->stride, esize)) < cap)
        cap = c;
    if (m1 && (c = stride_cap(s1->stride, esize)) < cap)
        cap = c;
    if (cap < w)
        w = cap;
    wse_vop *v = &ce->th[th + 1];
    v->busy = n > 0;
    v->op = in->op;
    v->done_task = (int8_t)a[nd - 1];
    v->width = (uint8_t)(w > 255 ? 255 : w);
    v->vop = f->vop;
    v->esize = (uint8_t)esize;
    v->br = (uint8_t)((m0 ? esize : 0) + (m1 ? esize : 0));
    v->bw = (uint8_t)(md ? esize : 0);
    v->ev = f->ev;
    v->fab = md && m0 && (!two || m1) ? WSE_FAB_NONE
             : !two && s0->kind == DSD_IN && md ? WSE_FAB_RECV
             : !two && m0 && d->kind == DSD_OUT ? WSE_FAB_SEND : WSE_FAB_ANY;
    v->q0 = s0->kind == DSD_IN ? t->qmap[5 * m->C + s0->colour] : WSE_NOQ;
    v->q1 = two && s1->kind == DSD_IN ? t->qmap[5 * m->C + s1->colour] : WSE_NOQ;
    v->i = 0;
    v->n = n;
    v->scalar = f->vop == WSE_V_MAC ? (uint32_t)ce->r[a[3]] : 0;
    v->d = *d;
    v->s0 = *s0;
    v->s1 = two ? *s1 : (wse_dsd){0};
    v->pc = pc;
    if (v->busy)
        ce->vbusy |= 1u << (th + 1);
    else if (v->done_task >= 0)
        ce->active |= 1ull << v->done_task;
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* elements (a cycle's step, which calls these, is inline in the cycle loop: wse_inline.h, vec_step) */

/* One element's result from its sources' bits (binary32, or binary16 in the low 16 bits). */
uint32_t ts_wse_vec_elem(const wse_vop *v, uint32_t x0, uint32_t x1)
{
    if (v->esize == 4)
        return vec_elem32(v, x0, x1);
    if (v->vop == WSE_V_MOV)
        return x0 & 0xffff;
    float a0 = h2f((uint16_t)x0), a1 = h2f((uint16_t)x1), r;
    switch (v->vop) {
    case WSE_V_ADD: r = a0 + a1; break;
    case WSE_V_SUB: r = a0 - a1; break;
    case WSE_V_MUL: r = a0 * a1; break;
    default: { /* WSE_V_MAC */
        float p = a1 * h2f(f2h(f32_of(v->scalar)));
        p = h2f(f2h(p));
        r = a0 + p;
        break;
    }
    }
    return f2h(r);
}

/* Elements [v->i, v->i + k) of an op whose operands are all in memory, the ports already counted:
 * each element's sources read, its result computed and written before the next, as the cycle
 * loop does them a cycle at a time, so k elements of several cycles give the same memory. */
void ts_wse_vec_mem_elems(ts_model *m, wse_tile *t, wse_band *b, wse_vop *v, uint32_t k)
{
    if (m->c.timing_only) {
        v->i += k;
        return;
    }
    uint8_t *mem = mem_touch(m, t);
    if (!mem) {
        b->oom = true;
        v->i += k;
        return;
    }
    uint32_t esize = v->esize;
    bool two = v->vop != WSE_V_MOV;
    if (esize == 4) {
        /* binary32: one loop per operation, addresses stepped by their strides (the same elements
         * and the same arithmetic, element by element, as below) */
        int64_t ad = (int64_t)elem_addr(&v->d, v->i, 4), a0 = (int64_t)elem_addr(&v->s0, v->i, 4);
        int64_t a1 = two ? (int64_t)elem_addr(&v->s1, v->i, 4) : 0;
        int64_t sd = (int64_t)v->d.stride * 4, s0 = (int64_t)v->s0.stride * 4, s1 = (int64_t)v->s1.stride * 4;
        float x0, x1, r, sc = f32_of(v->scalar);
        uint32_t w;
        switch (v->vop) {
        case WSE_V_MOV:
            for (uint32_t e = 0; e < k; e++, ad += sd, a0 += s0) {
                memcpy(&w, mem + a0, 4);
                memcpy(mem + ad, &w, 4);
            }
            break;
        case WSE_V_ADD:
            for (uint32_t e = 0; e < k; e++, ad += sd, a0 += s0, a1 += s1) {
                memcpy(&x0, mem + a0, 4);
                memcpy(&x1, mem + a1, 4);
                r = x0 + x1;
                memcpy(mem + ad, &r, 4);
            }
            break;
        case WSE_V_SUB:
            for (uint32_t e = 0; e < k; e++, ad += sd, a0 += s0, a1 += s1) {
                memcpy(&x0, mem + a0, 4);
                memcpy(&x1, mem + a1, 4);
                r = x0 - x1;
                memcpy(mem + ad, &r, 4);
            }
            break;
        case WSE_V_MUL:
            for (uint32_t e = 0; e < k; e++, ad += sd, a0 += s0, a1 += s1) {
                memcpy(&x0, mem + a0, 4);
                memcpy(&x1, mem + a1, 4);
                r = x0 * x1;
                memcpy(mem + ad, &r, 4);
            }
            break;
        default: /* WSE_V_MAC */
            for (uint32_t e = 0; e < k; e++, ad += sd, a0 += s0, a1 += s1) {
                memcpy(&x0, mem + a0, 4);
                memcpy(&x1, mem + a1, 4);
                float p = x1 * sc;
                r = x0 + p;
                memcpy(mem + ad, &r, 4);
            }
            break;
        }
        v->i += k;
        return;
    }
    for (uint32_t e = 0; e < k; e++, v->i++) {
        uint32_t x0 = 0, x1 = 0, y;
        memcpy(&x0, mem + elem_addr(&v->s0, v->i, esize), esize);
        if (two)
            memcpy(&x1, mem + elem_addr(&v->s1, v->i, esize), esize);
        y = ts_wse_vec_elem(v, x0, x1);
        memcpy(mem + elem_addr(&v->d, v->i, esize), &y, esize);
    }
}

/* Step the vector op of a tile asleep while it runs alone (vth, from cycle vfrom) through the cycles
 * before `upto`: each one as its evaluation would have (the rest of the tile stalls through them,
 * using no port). With all the ports each of those cycles moves the same kc elements, so they are
 * done in one go: min(cycles x kc, what is left) elements, one busy cycle each (before, one vec_step
 * a cycle: 7 % of bench_wse_stencil 40 40's host instructions). Its last step is among them only when
 * the core waits on it (wse_pe.c: commit_tile): then the op ends here as the cycle loop ends it
 * (its thread free, its task activated). */
void ts_wse_vec_catch_up(ts_model *m, wse_tile *t, wse_band *b, uint64_t upto)
{
    wse_vop *v = &t->ce->th[t->vth];
    uint64_t cycles = upto > t->vfrom ? upto - t->vfrom : 0;
    t->vfrom = upto;
    if (!cycles)
        return;
    uint32_t rd = (uint32_t)m->c.read_bytes, wr = (uint32_t)m->c.write_bytes;
    uint64_t kc = v->width;
    if (v->br && rd / v->br < kc)
        kc = rd / v->br;
    if (v->bw && wr / v->bw < kc)
        kc = wr / v->bw;
    uint64_t left = v->n - v->i, e = cycles * kc < left ? cycles * kc : left;
    /* the cycles it moves in, its last step's included (kc is at least 1: the op moved in the
     * evaluation that put the tile to sleep, with the ports to itself) */
    uint64_t need = kc ? (left + kc - 1) / kc : cycles;
    if (e) {
        ts_wse_vec_mem_elems(m, t, b, v, (uint32_t)e);
        t->s.sram_rd += e * v->br;
        t->s.sram_wr += e * v->bw;
        t->s.ev[v->ev] += e;
    }
    t->s.busy += cycles < need ? cycles : need;
    if (v->busy && v->i == v->n)
        ts_wse_vop_end(t->ce, t->vth);
}
