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
static uint32_t stride_cap(int32_t stride, uint32_t esize)
{
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

/* Check a memory DSD covers only SRAM; returns false with a reason. */
static bool dsd_fits(const ts_model *m, const wse_dsd *d, uint32_t n, uint32_t esize, char *why, size_t nwhy)
{
    if (d->kind != DSD_MEM)
        return true;
    if (d->base < 0 || d->base % (int32_t)esize) {
        snprintf(why, nwhy, "memory dsd base %d is negative or not %u-byte aligned", d->base, esize);
        return false;
    }
    if (!n)
        return true;
    int64_t last = (int64_t)d->base + (int64_t)(n - 1) * d->stride * (int64_t)esize;
    int64_t lo = last < d->base ? last : d->base, hi = (last > d->base ? last : d->base) + esize;
    if (lo < 0 || (uint64_t)hi > m->c.sram_bytes) {
        snprintf(why, nwhy, "memory dsd [%" PRId64 ", %" PRId64 ") is outside the %" PRIu64 "-byte SRAM", lo, hi,
                 m->c.sram_bytes);
        return false;
    }
    return true;
}

/* Issue a vector op onto thread th; false (with an error set) if its operands are bad. */
bool ts_wse_vec_issue(ts_model *m, wse_tile *t, wse_band *b, const ts_insn *in, uint32_t pc)
{
    wse_ce *ce = t->ce;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    const int32_t *a = in->a;
    int nd = m->op_nopnds[in->op];
    int th = a[nd - 2];
    wse_vop *v = &ce->th[th + 1];
    memset(v, 0, sizeof *v);
    v->op = in->op;
    v->pc = pc;
    v->done_task = (int8_t)a[nd - 1];
    v->d = ce->dsd[a[0]];
    v->s0 = ce->dsd[a[1]];
    if (f->vop != WSE_V_MOV)
        v->s1 = ce->dsd[a[2]];
    if (f->vop == WSE_V_MAC)
        v->scalar = (uint32_t)ce->r[a[3]];
    uint32_t esize = f->dtype / 8;
    v->n = v->d.len;
    char why[200];
    if (v->d.kind == DSD_NONE || v->d.kind == DSD_IN || v->s0.kind == DSD_NONE || v->s0.kind == DSD_OUT ||
        (f->vop != WSE_V_MOV && (v->s1.kind == DSD_NONE || v->s1.kind == DSD_OUT))) {
        ts_wse_set_err(b, t, b->now, "%s at pc %u: destination must be a memory or fabric-output dsd and sources "
                       "memory or fabric-input dsds", ts_wse_isa.ops[in->op].mnemonic, pc);
        return false;
    }
    if (v->s0.len != v->n || (f->vop != WSE_V_MOV && v->s1.len != v->n)) {
        ts_wse_set_err(b, t, b->now, "%s at pc %u: operand lengths differ (%u, %u, %u)",
                       ts_wse_isa.ops[in->op].mnemonic, pc, v->n, v->s0.len, f->vop != WSE_V_MOV ? v->s1.len : v->n);
        return false;
    }
    if (!dsd_fits(m, &v->d, v->n, esize, why, sizeof why) || !dsd_fits(m, &v->s0, v->n, esize, why, sizeof why) ||
        (f->vop != WSE_V_MOV && !dsd_fits(m, &v->s1, v->n, esize, why, sizeof why))) {
        ts_wse_set_err(b, t, b->now, "%s at pc %u: %s", ts_wse_isa.ops[in->op].mnemonic, pc, why);
        return false;
    }
    uint64_t w = m->op_simd[in->op];
    if (v->s0.kind == DSD_MEM && f->vop != WSE_V_MOV && v->s1.kind == DSD_MEM) {
        /* two reads in one cycle need banks in different halves (§1.3, SDK-APX); else half width (assumed) */
        uint64_t half = m->c.sram_banks / 2 ? m->c.sram_banks / 2 : 1;
        uint64_t b0 = ((uint64_t)v->s0.base / m->c.bank_interleave) % m->c.sram_banks;
        uint64_t b1 = ((uint64_t)v->s1.base / m->c.bank_interleave) % m->c.sram_banks;
        if (b0 % half == b1 % half && w > 1)
            w /= 2;
    }
    const wse_dsd *ops[3] = {&v->d, &v->s0, f->vop != WSE_V_MOV ? &v->s1 : NULL};
    for (int i = 0; i < 3; i++)
        if (ops[i] && ops[i]->kind == DSD_MEM) {
            uint32_t cap = stride_cap(ops[i]->stride, esize);
            if (cap < w)
                w = cap;
        }
    v->width = (uint8_t)(w > 255 ? 255 : w);
    v->vop = f->vop;
    v->esize = (uint8_t)esize;
    v->ev = f->ev;
    v->br = (uint8_t)((v->s0.kind == DSD_MEM ? esize : 0) + (f->vop != WSE_V_MOV && v->s1.kind == DSD_MEM ? esize : 0));
    v->bw = (uint8_t)(v->d.kind == DSD_MEM ? esize : 0);
    v->q0 = v->s0.kind == DSD_IN ? t->qmap[5 * m->C + v->s0.colour] : WSE_NOQ;
    v->q1 = f->vop != WSE_V_MOV && v->s1.kind == DSD_IN ? t->qmap[5 * m->C + v->s1.colour] : WSE_NOQ;
    v->fab = v->d.kind != DSD_MEM || v->s0.kind != DSD_MEM || (f->vop != WSE_V_MOV && v->s1.kind != DSD_MEM);
    v->busy = v->n > 0;
    if (v->busy)
        ce->vbusy |= 1u << (th + 1);
    if (!v->busy && v->done_task >= 0)
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
 * using no port), never its last step. With all the ports each of those cycles moves the same kc
 * elements, so they are done in one go: min(cycles x kc, what is left) elements, one busy cycle
 * each (before, one vec_step a cycle: 7 % of bench_wse_stencil 40 40's host instructions). */
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
    if (e) {
        ts_wse_vec_mem_elems(m, t, b, v, (uint32_t)e);
        t->s.sram_rd += e * v->br;
        t->s.sram_wr += e * v->bw;
        t->s.ev[v->ev] += e;
    }
    t->s.busy += cycles;
}
