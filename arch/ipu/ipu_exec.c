/* arch/ipu/ipu_exec.c — the executor: one tile's cycles (ts_ipu_tile_run), its barrel of a
 * supervisor and W workers, every instruction's semantics and timing (exec_op, bundles, repeat
 * loops), receives as words arrive, and the fast mode's shortcuts: the jump over cycles in which
 * nothing can happen (next_event), workers in step (a turn's instruction done for all of them at
 * once: in_step_run) and repeat loops in closed form. This is the hot path: all of
 * it is one translation unit so that exec inlines into the loops that call it (the time model is
 * described at the top of ipu_model.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"
#include "core/sim.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline float rf(uint32_t v) { float f; memcpy(&f, &v, 4); return f; }
static inline uint32_t fr(float f) { uint32_t v; memcpy(&v, &f, 4); return v; }
/* ampget: accumulator pair p of acc into registers r0 and r0 + 1 of r */
static inline void amp_get(uint32_t *r, uint32_t r0, const float *acc, int32_t p)
{
    r[r0] = fr(acc[2 * p]);
    r[r0 + 1] = fr(acc[2 * p + 1]);
}

/* f16 -> f32, exactly as ts_f16_to_f32: normal numbers (exponent 1 to 30, the usual weights and
 * activations) by moving the bits, in a few operations; zeros, subnormals, infinities and NaNs
 * by ts_f16_to_f32. */
static inline float h2f(uint16_t h)
{
    if ((uint16_t)((h & 0x7c00u) - 0x0400u) < 0x7800u)
        return rf((uint32_t)(h & 0x8000u) << 16 | (((uint32_t)(h & 0x7fffu) << 13) + 0x38000000u));
    return ts_f16_to_f32(h);
}

#if defined(__SSE2__)
/* h2f of four halves at once, one in the low 16 bits of each 32-bit lane of x (the rest zero):
 * the f32 bits of normal numbers and zeros by moving the bits; *odd gets a bit per lane that is
 * neither (subnormal, infinity, NaN), whose bits the caller takes from ts_f16_to_f32. */
static inline __m128i h4_bits(__m128i x, int *odd)
{
    const __m128i mag = _mm_and_si128(x, _mm_set1_epi32(0x7fff));
    const __m128i sign = _mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x8000)), 16);
    const __m128i zero = _mm_cmpeq_epi32(mag, _mm_setzero_si128());
    const __m128i bits = _mm_add_epi32(_mm_slli_epi32(mag, 13), _mm_set1_epi32(0x38000000));
    /* exponent 0 with a fraction (a zero's magnitude is 0, which `zero` took), or 31 */
    const __m128i ex = _mm_and_si128(x, _mm_set1_epi32(0x7c00));
    const __m128i o = _mm_or_si128(_mm_andnot_si128(zero, _mm_cmpeq_epi32(ex, _mm_setzero_si128())),
                                   _mm_cmpeq_epi32(ex, _mm_set1_epi32(0x7c00)));
    *odd = _mm_movemask_ps(_mm_castsi128_ps(o));
    return _mm_or_si128(sign, _mm_andnot_si128(zero, bits));
}
#endif

/* Four halves (lo, then hi, the low half first in each) as f32 into v, exactly as h2f: with SSE2
 * the four at once (h4_bits), a lane that is not a normal number or a zero by ts_f16_to_f32. The
 * f16 AMP's inputs come through here. */
static inline void h4_to_f32(uint32_t lo, uint32_t hi, float *v)
{
#if defined(__SSE2__)
    int odd;
    const uint64_t both = (uint64_t)hi << 32 | lo;
    const __m128i x = _mm_loadl_epi64((const __m128i *)(const void *)&both); /* (a 32-bit host has no cvtsi64) */
    _mm_storeu_si128((__m128i *)(void *)v, h4_bits(_mm_unpacklo_epi16(x, _mm_setzero_si128()), &odd));
    if (__builtin_expect(odd != 0, 0)) {
        const uint16_t h[4] = {(uint16_t)lo, (uint16_t)(lo >> 16), (uint16_t)hi, (uint16_t)(hi >> 16)};
        for (; odd; odd &= odd - 1) {
            int k = __builtin_ctz((unsigned)odd);
            v[k] = ts_f16_to_f32(h[k]);
        }
    }
#else
    v[0] = h2f((uint16_t)lo);
    v[1] = h2f((uint16_t)(lo >> 16));
    v[2] = h2f((uint16_t)hi);
    v[3] = h2f((uint16_t)(hi >> 16));
#endif
}

/* Count [a, b) as cycles of exchange activity (send port busy, a receive armed, a delay),
 * without counting a cycle twice when intervals overlap. */
static void xch_busy(ipu_tile *t, uint64_t a, uint64_t b, uint64_t bytes)
{
    if (a < t->xch_until)
        a = t->xch_until;
    if (b > a) {
        t->xch_cycles += b - a;
        t->xch_until = b;
    }
    if (t->rec) /* the activity sampler is on: keep the span (one test when off) */
        ts_ipu_xspan_add(t, a, b, bytes);
}

/* Cold path, kept out of line so the executor's hot loop stays small (inlined, it tripled the
 * executor's stack frame and cost about a fifth of bench_ipu_bsp's time). */
static ts_status fail(ipu_tile *t, uint32_t ti, int ctx, uint32_t pc, uint64_t c, ts_err *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8), noinline, cold));

static ts_status fail(ipu_tile *t, uint32_t ti, int ctx, uint32_t pc, uint64_t c, ts_err *err, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char who[32];
    if (ctx == 0)
        snprintf(who, sizeof who, "supervisor");
    else
        snprintf(who, sizeof who, "worker %d", ctx - 1);
    (void)t;
    return ts_err_sim(err, ti, (int64_t)c, "%s: %s at pc %u", what, who, pc);
}

/* Everything done on the tile that a context's registers do not hold: the issues of instructions
 * with an effect (ipu_opfacts.effect: summed from the per-op counts of the ops the tile's code
 * holds, a few dozen at most, so the issue path counts nothing more) and the words and bulk
 * copies written into its memory (t->effects). */
static uint64_t tile_effects(const ipu_tile *t)
{
    uint64_t n = t->effects;
    for (uint32_t k = 0; k < t->neffops; k++)
        n += t->opcnt[t->ops[k]];
    return n;
}

static bool alone(const ts_model *m, const ipu_tile *t, int ctx);

/* ts_loop_step at a taken backward branch said k: take a mark, or, when the state is the mark's,
 * stop the run if nothing happened since and nothing else can act on the tile from now on. */
static ts_status loop_back(ts_model *m, ipu_tile *t, uint32_t ti, int ctx, ipu_ctx *x, uint32_t pc, int k,
                           uint64_t c, ts_err *err) __attribute__((noinline));

static ts_status loop_back(ts_model *m, ipu_tile *t, uint32_t ti, int ctx, ipu_ctx *x, uint32_t pc, int k,
                           uint64_t c, ts_err *err)
{
    if (k == TS_LOOP_MATCH && !alone(m, t, ctx)) /* the mark stays; no need to count the effects */
        return TS_OK;
    if (!ts_loop_settle(&x->loop, k, pc, x->r, IPU_NREGS, tile_effects(t), c))
        return TS_OK;
    return fail(t, ti, ctx, pc, c, err, "endless loop: this branch comes back to the state it had at cycle %" PRIu64
                " (every register the same, nothing written since to tile memory, accumulators or the exchange), "
                "so it repeats forever", x->loop.at);
}

/* Check a data access: in range and aligned to its width. */
#define CHECK_ADDR(addr, width, name)                                                               \
    do {                                                                                            \
        if ((addr) < 0 || (uint64_t)(addr) + (width) > m->c.sram_bytes)                             \
            return fail(t, ti, ctx, pc, c, err, "%s address %" PRId64 " is out of range (tile memory is %" PRIu64 " bytes)", \
                        name, (int64_t)(addr), m->c.sram_bytes);                                    \
        if ((addr) % (width))                                                                       \
            return fail(t, ti, ctx, pc, c, err, "%s address %" PRId64 " is not %u-byte aligned", name, \
                        (int64_t)(addr), (unsigned)(width));                                        \
    } while (0)

/* A coefficient slot changed: its f32 view at once (a copy), its f16 view converted when an f16
 * AMP op next reads it (w16_stale), so f32 work converts nothing. */
static void coef_update(ipu_tile *t, uint32_t slot)
{
    memcpy(t->w32 + 4 * slot, t->coef + 16 * slot, 16);
    t->w16_stale |= (uint16_t)(1u << slot);
}

/* ld128putcs's effect: the 16 bytes at src into coefficient slot `slot`, converted only when they
 * differ (the workers of a routine load the same block one after another). */
static inline void coef_put(ipu_tile *t, uint32_t slot, const uint8_t *src)
{
    if (memcmp(t->coef + 16 * slot, src, 16)) {
        memcpy(t->coef + 16 * slot, src, 16);
        coef_update(t, slot);
    }
}

/* f32v2amp: every f32 AMP unit's two coefficients times the inputs i0, i1, into its accumulator. */
static inline void amp_f32(const ts_model *m, const ipu_tile *t, ipu_ctx *x, float i0, float i1)
{
    const float *w = t->w32;
    for (uint32_t u = 0; u < m->c.amp_units_f32; u++) {
        float s = w[2 * u] * i0 + w[2 * u + 1] * i1;
        x->acc[u] += s;
    }
}

static void w16_refresh(ipu_tile *t) __attribute__((noinline));

static void w16_refresh(ipu_tile *t)
{
    for (uint32_t st = t->w16_stale; st; st &= st - 1) {
        uint32_t slot = (uint32_t)__builtin_ctz(st);
#if defined(__SSE2__)
        { /* the slot's eight halves at once, stored as pairs (v[j], v[4 + j]) at 32 j + 2 slot */
            const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(t->coef + 16 * slot));
            int o0, o1;
            const __m128i lo = h4_bits(_mm_unpacklo_epi16(x, _mm_setzero_si128()), &o0);
            const __m128i hi = h4_bits(_mm_unpackhi_epi16(x, _mm_setzero_si128()), &o1);
            if (__builtin_expect(!(o0 | o1), 1)) {
                const __m128i p = _mm_unpacklo_epi32(lo, hi), q = _mm_unpackhi_epi32(lo, hi);
                float *w = t->w16 + 2 * slot;
                _mm_storel_epi64((__m128i *)(void *)w, p);
                _mm_storel_epi64((__m128i *)(void *)(w + 32), _mm_unpackhi_epi64(p, p));
                _mm_storel_epi64((__m128i *)(void *)(w + 64), q);
                _mm_storel_epi64((__m128i *)(void *)(w + 96), _mm_unpackhi_epi64(q, q));
                continue;
            }
        }
#endif
        uint32_t h[4];
        float v[8];
        memcpy(h, t->coef + 16 * slot, 16);
        h4_to_f32(h[0], h[1], v);
        h4_to_f32(h[2], h[3], v + 4);
        for (uint32_t j = 0; j < 4; j++) { /* half j of unit u at 32 j + u: the slot holds units 2 slot, 2 slot + 1 */
            t->w16[32 * j + 2 * slot] = v[j];
            t->w16[32 * j + 2 * slot + 1] = v[4 + j];
        }
    }
    t->w16_stale = 0;
}

/* f16v4amp's units: acc[u] += ((w0 x0 + w1 x1) + w2 x2) + w3 x3 with unit u's weights at
 * w[32 j + u], so that the loop over the units runs over consecutive floats (and the compiler
 * can do several units at once: each lane rounds as the scalar code does). */
static inline void amp_f16(const float *w, uint32_t units, float i0, float i1, float i2, float i3, float *acc)
{
    const float *w0 = w, *w1 = w + 32, *w2 = w + 64, *w3 = w + 96;
#if defined(__SSE2__)
    /* four units at once, each lane the scalar code's operations in its order (SSE2 rounds every
     * single-precision operation as the scalar code does; nothing is contracted in ISO C) */
    if ((units & 3) == 0) {
        const __m128 x0 = _mm_set1_ps(i0), x1 = _mm_set1_ps(i1), x2 = _mm_set1_ps(i2), x3 = _mm_set1_ps(i3);
        for (uint32_t u = 0; u < units; u += 4) {
            __m128 s = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(w0 + u), x0), _mm_mul_ps(_mm_loadu_ps(w1 + u), x1));
            s = _mm_add_ps(s, _mm_mul_ps(_mm_loadu_ps(w2 + u), x2));
            s = _mm_add_ps(s, _mm_mul_ps(_mm_loadu_ps(w3 + u), x3));
            _mm_storeu_ps(acc + u, _mm_add_ps(_mm_loadu_ps(acc + u), s));
        }
        return;
    }
#endif
    for (uint32_t u = 0; u < units; u++) {
        float s = w0[u] * i0 + w1[u] * i1;
        s += w2[u] * i2;
        s += w3[u] * i3;
        acc[u] += s;
    }
}

static inline uint32_t h2op(uint32_t a, uint32_t b, int op)
{
    uint32_t out = 0;
    for (int l = 0; l < 2; l++) {
        float x = ts_f16_to_f32((uint16_t)(a >> (16 * l))), y = ts_f16_to_f32((uint16_t)(b >> (16 * l)));
        float z = op == 0 ? x + y : op == 1 ? x - y : x * y;
        out |= (uint32_t)ts_f32_to_f16(z) << (16 * l);
    }
    return out;
}

static bool sup_can_issue(const ts_model *m, const ipu_tile *t)
{
    switch (t->sup_op) {
    case IPU_OP_COUNT: return t->running == 0; /* past the end: the supervisor halts */
    case IPU_OP_RUN: return t->running != (1u << m->W) - 1;
    case IPU_OP_RUNALL:
    case IPU_OP_SYNC:
    case IPU_OP_HALT: return t->running == 0;
    case IPU_OP_RXWAIT: return t->rx_left == 0;
    default: return true; /* not an op left unhandled: every other op issues in any free slot */
    }
}

/* Whether nothing but context ctx can change tile t from now on: every other context has ended
 * or waits on something only ctx can bring about (its exit), and no receive is armed. With the
 * tile's effect count unchanged since an earlier pass, ctx's memory, accumulators and
 * coefficients are then fixed, and a state of ctx that comes back comes back forever. */
static bool alone(const ts_model *m, const ipu_tile *t, int ctx)
{
    if (t->rx_left)
        return false;
    if (ctx == 0)
        return t->running == 0;
    return (t->running & ~(1u << (ctx - 1))) == 0 && !(t->sup == SUP_RUN && sup_can_issue(m, t));
}

/* The integer ops LDCONST .. CMPSLT and `get` of instruction in on registers r (exec_op, and
 * body_issue and in_step_run for the codes F_LDCONST .. F_GET); worker is the context's worker
 * number (UINT32_MAX for the supervisor). False for a `get` of no control register. */
static inline bool int_op(const ts_model *m, uint32_t ti, const ipu_insn *in, uint32_t *r, uint32_t worker)
{
    const uint32_t a1 = r[in->r1], a2 = r[in->r2], imm = (uint32_t)in->imm;
    uint32_t v;
    switch ((enum ipu_op)in->op) {
    case IPU_OP_LDCONST: v = imm; break;
    case IPU_OP_SUB: v = a1 - a2; break;
    case IPU_OP_MUL: v = a1 * a2; break;
    case IPU_OP_MULI: v = a1 * imm; break;
    case IPU_OP_AND: v = a1 & a2; break;
    case IPU_OP_ANDI: v = a1 & imm; break;
    case IPU_OP_OR: v = a1 | a2; break;
    case IPU_OP_XOR: v = a1 ^ a2; break;
    case IPU_OP_SHL: v = a1 << (a2 & 31); break;
    case IPU_OP_SHLI: v = a1 << (imm & 31); break;
    case IPU_OP_SHR: v = a1 >> (a2 & 31); break;
    case IPU_OP_SHRI: v = a1 >> (imm & 31); break;
    case IPU_OP_CMPEQ: v = a1 == a2; break;
    case IPU_OP_CMPULT: v = a1 < a2; break;
    case IPU_OP_CMPSLT: v = (int32_t)a1 < (int32_t)a2; break;
    default: /* IPU_OP_GET */
        switch (in->imm) {
        case IPU_CSR_TILE: v = ti; break;
        case IPU_CSR_NTILES: v = m->ntiles; break;
        case IPU_CSR_WORKER: v = worker; break;
        case IPU_CSR_NWORKERS: v = m->W; break;
        default: return false;
        }
        break;
    }
    r[in->r0] = v;
    return true;
}

/* Execute one instruction, `in` at pc, for ctx at cycle c; *nextp is the pc that follows it
 * (pc + 1 unless it branches or stays). */
static inline __attribute__((always_inline)) ts_status exec_op(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c,
                                                             ipu_ctx *x, ipu_insn *in, uint32_t pc, uint32_t *nextp,
                                                             ts_err *err)
{
    uint32_t *r = x->r;
    uint32_t next = *nextp;
    if (!(in->ctx_ok & (ctx ? 2 : 1)))
        return fail(t, ti, ctx, pc, c, err, "%s may only run in %s", ts_ipu_isa.ops[in->op].mnemonic,
                    ctx == 0 ? "a worker" : "the supervisor");
    x->ready = c + 1;
    t->opcnt[in->op]++;
    t->work++;
/* a taken branch back: look for a state that comes back (core/loopmark.h, loop_back) */
#define BACK(hint)                                                                                  \
    do {                                                                                            \
        int k_;                                                                                     \
        if (in->tgt <= pc && (k_ = ts_loop_step(&x->loop, pc, r, IPU_NREGS, hint)) != TS_LOOP_PASS) { \
            ts_status rc_ = loop_back(m, t, ti, ctx, x, pc, k_, c, err);                            \
            if (rc_ != TS_OK)                                                                       \
                return rc_;                                                                         \
        }                                                                                           \
    } while (0)
/* operand registers, read where a case needs them */
#define a0 (r[in->r0])
#define a1 (r[in->r1])
#define a2 (r[in->r2])
    int64_t addr;
    switch ((enum ipu_op)in->op) {
    case IPU_OP_SETZI: r[in->r0] = (uint32_t)in->imm; break;
    case IPU_OP_MOV: r[in->r0] = a1; break;
    case IPU_OP_ADD: r[in->r0] = a1 + a2; break;
    case IPU_OP_ADDI: r[in->r0] = a1 + (uint32_t)in->imm; break;
    case IPU_OP_LDCONST: case IPU_OP_SUB: case IPU_OP_MUL: case IPU_OP_MULI: case IPU_OP_AND: case IPU_OP_ANDI:
    case IPU_OP_OR: case IPU_OP_XOR: case IPU_OP_SHL: case IPU_OP_SHLI: case IPU_OP_SHR: case IPU_OP_SHRI:
    case IPU_OP_CMPEQ: case IPU_OP_CMPULT: case IPU_OP_CMPSLT: case IPU_OP_GET:
        if (!int_op(m, ti, in, r, ctx ? (uint32_t)(ctx - 1) : UINT32_MAX))
            return fail(t, ti, ctx, pc, c, err, "get: no control register %d", in->imm);
        break;
    case IPU_OP_NOP: break;
    case IPU_OP_BR: BACK(0); next = in->tgt; break;
    case IPU_OP_BRZ: if (a0 == 0) { BACK(in->r0); next = in->tgt; } break;
    case IPU_OP_BRNZ: if (a0 != 0) { BACK(in->r0); next = in->tgt; } break;
    case IPU_OP_BRNEG: if ((int32_t)a0 < 0) { BACK(in->r0); next = in->tgt; } break;
    case IPU_OP_BRNZDEC:
        if (a0 != 0) {
            BACK(in->r0);
            r[in->r0] = a0 - 1;
            next = in->tgt;
        }
        break;
    case IPU_OP_RPT:
    case IPU_OP_RPTI: {
        uint32_t count = in->op == IPU_OP_RPT ? a0 : (uint32_t)in->imm;
        uint32_t len = (uint32_t)(in->op == IPU_OP_RPT ? in->imm : in->imm2);
        if (x->rpt_left)
            return fail(t, ti, ctx, pc, c, err, "rpt inside a repeat body");
        if (count == 0) {
            next = pc + 1 + len;
        } else {
            x->rpt_start = pc + 1;
            x->rpt_end = pc + 1 + len;
            x->rpt_left = count;
            if (ctx)
                t->in_rpt |= 1u << (ctx - 1);
        }
        break;
    }
    case IPU_OP_LD32:
    case IPU_OP_LD32STEP:
        addr = in->op == IPU_OP_LD32 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 4, "ld32");
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 4);
        if (in->op == IPU_OP_LD32STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LD64:
    case IPU_OP_LD64STEP:
        if (m->c.load_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "ld64 needs tile.load_bytes_per_cycle >= 8");
        addr = in->op == IPU_OP_LD64 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 8, "ld64");
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 8);
        if (in->op == IPU_OP_LD64STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LD128:
    case IPU_OP_LD128STEP:
        if (m->c.load_bpc < 16)
            return fail(t, ti, ctx, pc, c, err, "ld128 needs tile.load_bytes_per_cycle >= 16");
        addr = in->op == IPU_OP_LD128 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 16, "ld128");
        if ((uint64_t)addr < m->c.interleaved_base)
            return fail(t, ti, ctx, pc, c, err, "ld128 address %" PRId64 " is below the interleaved memory at %" PRIu64,
                        addr, m->c.interleaved_base);
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)addr), 16);
        if (in->op == IPU_OP_LD128STEP) /* the base as read: the load may have written the same register */
            r[in->r1] = (uint32_t)addr + (uint32_t)in->imm;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_LDZ16:
    case IPU_OP_LDB16: {
        addr = (int64_t)(int32_t)a1 + in->imm;
        CHECK_ADDR(addr, 2, in->op == IPU_OP_LDZ16 ? "ldz16" : "ldb16");
        uint16_t h;
        memcpy(&h, rd_ptr(m, t, (uint64_t)addr), 2);
        r[in->r0] = in->op == IPU_OP_LDZ16 ? h : ((uint32_t)h << 16 | h);
        x->ready = c + m->c.load_latency;
        break;
    }
    case IPU_OP_LDZ8:
        addr = (int64_t)(int32_t)a1 + in->imm;
        CHECK_ADDR(addr, 1, "ldz8");
        r[in->r0] = *rd_ptr(m, t, (uint64_t)addr);
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_ST32:
    case IPU_OP_ST32STEP: {
        addr = in->op == IPU_OP_ST32 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 4, "st32");
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 4);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, &a0, 4);
        if (in->op == IPU_OP_ST32STEP)
            r[in->r1] = a1 + (uint32_t)in->imm;
        break;
    }
    case IPU_OP_ST64:
    case IPU_OP_ST64STEP: {
        if (m->c.store_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "st64 needs tile.store_bytes_per_cycle >= 8");
        addr = in->op == IPU_OP_ST64 ? (int64_t)(int32_t)a1 + in->imm : (int64_t)(int32_t)a1;
        CHECK_ADDR(addr, 8, "st64");
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 8);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, &r[in->r0], 8);
        if (in->op == IPU_OP_ST64STEP)
            r[in->r1] = a1 + (uint32_t)in->imm;
        break;
    }
    case IPU_OP_F32ADD: r[in->r0] = fr(rf(a1) + rf(a2)); break;
    case IPU_OP_F32SUB: r[in->r0] = fr(rf(a1) - rf(a2)); break;
    case IPU_OP_F32MUL: r[in->r0] = fr(rf(a1) * rf(a2)); break;
    case IPU_OP_F32MAX: r[in->r0] = fr(fmaxf(rf(a1), rf(a2))); break;
    case IPU_OP_F32MIN: r[in->r0] = fr(fminf(rf(a1), rf(a2))); break;
    case IPU_OP_F32MAC: { float p = rf(a1) * rf(a2); r[in->r0] = fr(rf(a0) + p); break; }
    case IPU_OP_F32V2ADD:
    case IPU_OP_F32V2SUB:
    case IPU_OP_F32V2MUL:
    case IPU_OP_F32V2MAC:
        for (int l = 0; l < 2; l++) {
            float y = rf(r[in->r1 + l]), z = rf(r[in->r2 + l]), o;
            switch (in->op) {
            case IPU_OP_F32V2ADD: o = y + z; break;
            case IPU_OP_F32V2SUB: o = y - z; break;
            case IPU_OP_F32V2MUL: o = y * z; break;
            case IPU_OP_F32V2MAC: { float p = y * z; o = rf(r[in->r0 + l]) + p; break; }
            default: /* an op the cases above let in without a case here: a ts_err (TS_ESIM) */
                return fail(t, ti, ctx, pc, c, err, "%s has no case in the f32v2 executor",
                            ts_ipu_isa.ops[in->op].mnemonic);
            }
            r[in->r0 + l] = fr(o);
        }
        break;
    case IPU_OP_F16V2ADD: r[in->r0] = h2op(a1, a2, 0); break;
    case IPU_OP_F16V2MUL: r[in->r0] = h2op(a1, a2, 2); break;
    case IPU_OP_F16V4ADD:
    case IPU_OP_F16V4SUB:
    case IPU_OP_F16V4MUL: {
        int o = in->op == IPU_OP_F16V4ADD ? 0 : in->op == IPU_OP_F16V4SUB ? 1 : 2;
        uint32_t lo = h2op(r[in->r1], r[in->r2], o), hi = h2op(r[in->r1 + 1], r[in->r2 + 1], o);
        r[in->r0] = lo;
        r[in->r0 + 1] = hi;
        break;
    }
    case IPU_OP_F16V2TOF32: {
        uint32_t v = a1;
        r[in->r0] = fr(ts_f16_to_f32((uint16_t)v));
        r[in->r0 + 1] = fr(ts_f16_to_f32((uint16_t)(v >> 16)));
        break;
    }
    case IPU_OP_F32V2TOF16:
        r[in->r0] = (uint32_t)ts_f32_to_f16(rf(r[in->r1])) | (uint32_t)ts_f32_to_f16(rf(r[in->r1 + 1])) << 16;
        break;
    case IPU_OP_F32V4TOF16: {
        uint32_t lo = (uint32_t)ts_f32_to_f16(rf(r[in->r1])) | (uint32_t)ts_f32_to_f16(rf(r[in->r1 + 1])) << 16;
        uint32_t hi = (uint32_t)ts_f32_to_f16(rf(r[in->r1 + 2])) | (uint32_t)ts_f32_to_f16(rf(r[in->r1 + 3])) << 16;
        r[in->r0] = lo;
        r[in->r0 + 1] = hi;
        break;
    }
    case IPU_OP_F32TOI32: {
        float v = rf(a1);
        int32_t o = v != v ? 0 : v >= 2147483647.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : (int32_t)v;
        r[in->r0] = (uint32_t)o;
        break;
    }
    case IPU_OP_F32FROMI32: r[in->r0] = fr((float)(int32_t)a1); break;
    case IPU_OP_LD128PUTCS:
    case IPU_OP_LD128PUTCSSTEP:
        addr = (int64_t)(int32_t)a0;
        if (in->imm < 0 || in->imm >= 16)
            return fail(t, ti, ctx, pc, c, err, "ld128putcs: coefficient slot %d is not in 0..15", in->imm);
        CHECK_ADDR(addr, 16, "ld128putcs");
        coef_put(t, (uint32_t)in->imm, rd_ptr(m, t, (uint64_t)addr));
        if (in->op == IPU_OP_LD128PUTCSSTEP)
            r[in->r0] = (uint32_t)addr + 16;
        x->ready = c + m->c.load_latency;
        break;
    case IPU_OP_F32V2AMP: amp_f32(m, t, x, rf(r[in->r0]), rf(r[in->r0 + 1])); break;
    case IPU_OP_F16V4AMP: {
        float in4[4];
        h4_to_f32(r[in->r0], r[in->r0 + 1], in4);
        if (t->w16_stale)
            w16_refresh(t);
        amp_f16(t->w16, m->c.amp_units_f16, in4[0], in4[1], in4[2], in4[3], x->acc);
        break;
    }
    case IPU_OP_AMPZERO: memset(x->acc, 0, sizeof x->acc); break;
    case IPU_OP_AMPGET:
        if (in->imm < 0 || in->imm >= IPU_ACC_MAX / 2)
            return fail(t, ti, ctx, pc, c, err, "ampget: accumulator pair %d is not in 0..%d", in->imm, IPU_ACC_MAX / 2 - 1);
        amp_get(r, in->r0, x->acc, in->imm);
        break;
    case IPU_OP_RUN:
    case IPU_OP_RUNALL: {
        uint32_t all = (1u << m->W) - 1;
        uint32_t start = in->op == IPU_OP_RUNALL ? all : 0;
        if (!start)
            for (uint32_t w = 0; w < m->W; w++)
                if (!(t->running >> w & 1)) {
                    start = 1u << w;
                    break;
                }
        for (uint32_t w = 0; w < m->W; w++)
            if (start >> w & 1) {
                ipu_ctx *wx = &t->cx[1 + w];
                memset(wx->r, 0, sizeof wx->r);
                wx->r[0] = a0; /* the "lm" classes put the register in r0 */
                wx->pc = in->tgt;
                wx->rpt_left = 0;
                t->in_rpt &= ~(1u << w);
                wx->ready = c + 1;
            }
        t->running |= start;
        break;
    }
    case IPU_OP_EXIT:
        t->running &= ~(1u << (ctx - 1));
        next = pc; /* stays put; the context is idle */
        break;
    case IPU_OP_SYNC:
        if (in->imm == 1) {
            if (t->rx_left)
                return fail(t, ti, ctx, pc, c, err,
                            "receive with nothing sent: %u of %u words from tile %d (armed at cycle %" PRIu64 ") never came before sync",
                            t->rx_left, t->rx_n, t->rx_src, t->rx_armed);
            t->sup = SUP_SYNC;
            t->arrival = c;
        } else if (in->imm != 0) {
            return fail(t, ti, ctx, pc, c, err, "sync: zone %d is neither 0 (tile) nor 1 (chip)", in->imm);
        }
        break;
    case IPU_OP_HALT:
        if (t->rx_left)
            return fail(t, ti, ctx, pc, c, err, "receive with nothing sent: %u of %u words from tile %d never came before halt",
                        t->rx_left, t->rx_n, t->rx_src);
        if (t->nhost)
            return fail(t, ti, ctx, pc, c, err, "halt with host transfers pending: they complete at a chip-wide sync");
        t->sup = SUP_DONE;
        t->finish = c + 1;
        next = pc;
        break;
    case IPU_OP_SEND: {
        int32_t dst = (int32_t)a1;
        uint32_t nw = (uint32_t)in->imm;
        addr = (int64_t)(int32_t)a0;
        if (in->imm < 1)
            return fail(t, ti, ctx, pc, c, err, "send of %d words", in->imm);
        if (dst < -1 || dst >= (int32_t)m->ntiles)
            return fail(t, ti, ctx, pc, c, err, "send to tile %d, which does not exist", dst);
        CHECK_ADDR(addr, 4, "send");
        if ((uint64_t)addr + 4ull * nw > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "send of %u words from %" PRId64 " runs past the tile memory", nw, addr);
        if (t->pend.n + nw > t->pend.cap) {
            void *v = t->pend.v;
            if (ts_grow(&v, &t->pend.cap, t->pend.n + nw, sizeof(ipu_word)))
                return ts_err_set(err, TS_ENOMEM, "out of memory for exchange words");
            t->pend.v = v;
        }
        uint32_t wpc = m->c.words_per_cycle;
        for (uint32_t i = 0; i < nw; i++) {
            ipu_word *w = &t->pend.v[t->pend.n++];
            w->t = c + i / wpc;
            memcpy(&w->val, rd_ptr(m, t, (uint64_t)addr + 4ull * i), 4);
            w->dst = dst;
            w->claimed = 0;
            w->rest = (uint16_t)(nw - 1 - i < UINT16_MAX ? nw - 1 - i : UINT16_MAX);
            w->delay = 0;
        }
        uint64_t cyc = (nw + wpc - 1) / wpc;
        t->tx_t0 = c;
        t->tx_end = c + cyc;
        t->tx_addr = (uint32_t)addr;
        t->tx_n = nw;
        x->ready = c + cyc; /* the supervisor holds the send port */
        t->xsent += 4ull * nw;
        t->ss_xbytes += 4ull * nw;
        t->xport += cyc;
        xch_busy(t, c, t->tx_end, 4ull * nw);
        if (dst >= 0) {
            t->ss_uni += nw;
            t->wire_bit_mm += 32.0 * nw * wire_mm(&m->c, ti, (uint32_t)dst);
        } else { /* a broadcast is charged to the far corner of the chip */
            t->wire_bit_mm += 32.0 * nw * wire_mm(&m->c, 0, m->ntiles - 1);
        }
        break;
    }
    case IPU_OP_RXPTR:
        addr = (int64_t)(int32_t)a0;
        CHECK_ADDR(addr, 4, "rxptr");
        if ((uint64_t)addr + 4ull * t->rx_left > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "rxptr %" PRId64 ": the %u words still due run past the tile memory",
                        addr, t->rx_left);
        t->rx_addr = (uint32_t)addr;
        break;
    case IPU_OP_RECV:
    case IPU_OP_RXSEL: {
        int32_t src = (int32_t)(in->op == IPU_OP_RECV ? a1 : a0);
        addr = in->op == IPU_OP_RECV ? (int64_t)(int32_t)a0 : (int64_t)t->rx_addr;
        if (t->rx_left)
            return fail(t, ti, ctx, pc, c, err, "%s switches the input from tile %d while %u of its %u words are still due",
                        ts_ipu_isa.ops[in->op].mnemonic, t->rx_src, t->rx_left, t->rx_n);
        if (src < 0 || src >= (int32_t)m->ntiles)
            return fail(t, ti, ctx, pc, c, err, "recv from tile %d, which does not exist", src);
        if (in->imm < 1)
            return fail(t, ti, ctx, pc, c, err, "%s of %d words", ts_ipu_isa.ops[in->op].mnemonic, in->imm);
        CHECK_ADDR(addr, 4, ts_ipu_isa.ops[in->op].mnemonic);
        if ((uint64_t)addr + 4ull * (uint32_t)in->imm > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "%s of %d words at %" PRId64 " runs past the tile memory",
                        ts_ipu_isa.ops[in->op].mnemonic, in->imm, addr);
        t->rx_src = src;
        t->rx_addr = (uint32_t)addr;
        t->rx_left = t->rx_n = (uint32_t)in->imm;
        t->rx_armed = c;
        t->rx_lat = (uint32_t)ts_ipu_latency(&m->c, (uint32_t)src, ti);
        /* words that left before now - latency - the largest spine delay arrived before the mux
         * was set: not ours. (The log is in send order; arrivals are not, since a word to another
         * column group may wait in the spine stage while a later one to this group does not, so
         * the search is on send cycles, and rx_arrivals passes over the rest that came before.
         * A spine delay is at most spine_buffer_cycles: see ts_ipu_spine_column.) */
        const ipu_wlog *lg = &m->t[src].log;
        size_t lo = 0, hi = lg->n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (lg->v[mid].t + m->c.spine_buffer_cycles + t->rx_lat < c)
                lo = mid + 1;
            else
                hi = mid;
        }
        t->rx_cursor = lo;
        break;
    }
    case IPU_OP_RXWAIT:
    case IPU_OP_DELAY:
        if (in->op == IPU_OP_DELAY) {
            if (in->imm < 0)
                return fail(t, ti, ctx, pc, c, err, "delay of %d cycles", in->imm);
            x->ready = c + (uint64_t)in->imm + 1;
            xch_busy(t, c, x->ready, 0);
        }
        break;
    case IPU_OP_HOSTRD:
    case IPU_OP_HOSTWR: {
        addr = (int64_t)(int32_t)a0;
        uint64_t h = a1, nb = (uint64_t)(uint32_t)in->imm;
        if (in->imm < 1 || addr < 0 || (uint64_t)addr + nb > m->c.sram_bytes)
            return fail(t, ti, ctx, pc, c, err, "host transfer of %d bytes at tile address %" PRId64 " is out of range",
                        in->imm, addr);
        if (h + nb > m->c.host_bytes)
            return fail(t, ti, ctx, pc, c, err, "host transfer of %" PRIu64 " bytes at host address %" PRIu64
                        " is beyond host.buffer (%" PRIu64 " bytes)", nb, h, m->c.host_bytes);
        if (t->nhost == t->cap_host) {
            void *v = t->host;
            if (ts_grow(&v, &t->cap_host, t->nhost + 1, sizeof *t->host))
                return ts_err_set(err, TS_ENOMEM, "out of memory for host transfers");
            t->host = v;
        }
        t->host[t->nhost++] = (ipu_hostop){(uint32_t)addr, h, (uint32_t)nb, in->op == IPU_OP_HOSTWR};
        break;
    }
    case IPU_OP_LDST64PACE:
    case IPU_OP_LD2XST64PACE: {
        bool two = in->op == IPU_OP_LD2XST64PACE;
        const char *name = ts_ipu_isa.ops[in->op].mnemonic;
        if (m->c.load_bpc < (two ? 16 : 8) || m->c.store_bpc < 8)
            return fail(t, ti, ctx, pc, c, err, "%s needs tile.load_bytes_per_cycle >= %d and tile.store_bytes_per_cycle >= 8",
                        name, two ? 16 : 8);
        uint8_t rs = two ? in->r4 : in->r3; /* the store pointer */
        int64_t la = (int64_t)(int32_t)a2, lb = two ? (int64_t)(int32_t)r[in->r3] : 0;
        addr = (int64_t)(int32_t)r[rs];
        CHECK_ADDR(la, 8, name);
        if (two) {
            CHECK_ADDR(lb, 8, name);
            if ((uint64_t)la < m->c.interleaved_base || (uint64_t)lb < m->c.interleaved_base)
                return fail(t, ti, ctx, pc, c, err, "%s: two loads in one cycle need interleaved memory, at or above %" PRIu64,
                            name, m->c.interleaved_base);
        }
        CHECK_ADDR(addr, 8, name);
        uint32_t v[2] = {r[in->r1], r[in->r1 + 1]}; /* the pair to store, as it was at issue */
        memcpy(&r[in->r0], rd_ptr(m, t, (uint64_t)la), 8);
        if (two)
            memcpy(&r[in->r0 + 2], rd_ptr(m, t, (uint64_t)lb), 8);
        uint8_t *p = wr_ptr(t, (uint64_t)addr, 8);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, v, 8);
        r[in->r2] = (uint32_t)la + 8;
        if (two)
            r[in->r3] = (uint32_t)lb + 8;
        r[rs] = (uint32_t)addr + 8;
        x->ready = c + m->c.load_latency;
        break;
    }
    case IPU_OP_BUNDLE:
    case IPU_OP_BUNDLE_END: /* never issued on their own: check_bundles keeps branches out */
        return fail(t, ti, ctx, pc, c, err, "%s issued outside a bundle", ts_ipu_isa.ops[in->op].mnemonic);
    case IPU_OP_COUNT: /* no default: -Wswitch names an opcode of the table without a case */
        return ts_err_set(err, TS_EINTERNAL, "ipu: opcode %u has no executor", in->op);
    }
    *nextp = next;
    return TS_OK;
#undef a0
#undef a1
#undef a2
#undef BACK
}

/* A bundle at pc (`{` main aux `}`): one issue. The auxiliary instruction runs first, then the
 * main one; neither sees the other's results (check_bundles), so this is "both read their
 * registers at issue". Out of line: the common path (no bundle) keeps exec as small as before
 * (callgrind: the bundle inside exec cost about a tenth more host instructions per issue). */
static ts_status exec_bundle(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, uint32_t pc, ts_err *err)
    __attribute__((noinline));

static ts_status exec_bundle(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, uint32_t pc, ts_err *err)
{
    ipu_ctx *x = &t->cx[ctx];
    uint32_t next = 0; /* members never branch (check_bundles): exec moves on to pc + 4 */
    t->opcnt[IPU_OP_BUNDLE]++;
    ts_status rc = exec_op(m, ti, t, ctx, c, x, &t->code[pc + 2], pc + 2, &next, err);
    if (rc == TS_OK)
        rc = exec_op(m, ti, t, ctx, c, x, &t->code[pc + 1], pc + 1, &next, err);
    return rc;
}

/* Execute the instruction (or bundle) at ctx's pc at cycle c. */
/* Inlined into its callers, ts_ipu_tile_run and closed_form_run, so the tile's hot state stays in
 * registers across issues (callgrind: about a fifth fewer host instructions per simulated
 * issue). */
static inline __attribute__((always_inline)) ts_status exec(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c,
                                                          ts_err *err)
{
    ipu_ctx *x = &t->cx[ctx];
    uint32_t pc = x->pc;
    if (pc >= t->n) {
        if (ctx)
            return fail(t, ti, ctx, pc, c, err, "worker ran past the end of the code");
        t->sup = SUP_DONE; /* falling off the end is a halt */
        t->finish = c;
        return TS_OK;
    }
    ipu_insn *in = &t->code[pc];
    uint32_t next = pc + 1;
    ts_status rc;
    if (__builtin_expect(in->op == IPU_OP_BUNDLE, 0)) {
        rc = exec_bundle(m, ti, t, ctx, c, pc, err);
        next = pc + 4;
    } else {
        rc = exec_op(m, ti, t, ctx, c, x, in, pc, &next, err);
    }
    if (rc != TS_OK)
        return rc;
    if (x->rpt_left && next == x->rpt_end) {
        if (--x->rpt_left > 0)
            next = x->rpt_start;
        else if (ctx)
            t->in_rpt &= ~(1u << (ctx - 1));
    }
    x->pc = next;
    return TS_OK;
}

/* exec out of line: body_issue's way for what it does not do itself, so that the closed form's
 * loops stay small enough to keep their state in registers (inlined, the whole executor came
 * with them and the loops spilled to the stack). */
static ts_status exec_slow(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, ts_err *err)
    __attribute__((noinline));

static ts_status exec_slow(ts_model *m, uint32_t ti, ipu_tile *t, int ctx, uint64_t c, ts_err *err)
{
    return exec(m, ti, t, ctx, c, err);
}

/* The ops body_issue does itself, numbered densely so that its switch is one jump table. */
enum {
    F_SLOW, F_SETZI, F_MOV, F_ADD, F_ADDI, F_NOP, F_LD32, F_LD32STEP, F_LD64, F_LD64STEP, F_ST32, F_ST32STEP,
    F_F32ADD, F_F32MAX, F_F32V2ADD, F_F32V2TOF16, F_LD128PUTCS, F_F32V2AMP, F_F16V4AMP, F_AMPZERO, F_AMPGET,
    F_LD128, F_LD128STEP, F_ST64, F_ST64STEP,
    /* done by body_issue only (in_step_run hands it to exec) */
    F_BUNDLE,
    /* done by in_step_run only (body_issue hands them to exec) */
    F_RPT, F_BR, F_BRZ, F_BRNZ, F_BRNEG, F_BRNZDEC,
    /* the rest of the integer ops (a routine's setup: its rows, pointers and counts), done by both */
    F_LDCONST, F_SUB, F_MUL, F_MULI, F_AND, F_ANDI, F_OR, F_XOR, F_SHL, F_SHLI, F_SHR, F_SHRI, F_CMPEQ, F_CMPULT,
    F_CMPSLT, F_GET
};
static const uint8_t ipu_fast[256] = {
    [IPU_OP_SETZI] = F_SETZI, [IPU_OP_MOV] = F_MOV, [IPU_OP_ADD] = F_ADD, [IPU_OP_ADDI] = F_ADDI,
    [IPU_OP_NOP] = F_NOP, [IPU_OP_LD32] = F_LD32, [IPU_OP_LD32STEP] = F_LD32STEP, [IPU_OP_LD64] = F_LD64,
    [IPU_OP_LD64STEP] = F_LD64STEP, [IPU_OP_ST32] = F_ST32, [IPU_OP_ST32STEP] = F_ST32STEP,
    [IPU_OP_F32ADD] = F_F32ADD, [IPU_OP_F32MAX] = F_F32MAX, [IPU_OP_F32V2ADD] = F_F32V2ADD,
    [IPU_OP_F32V2TOF16] = F_F32V2TOF16, [IPU_OP_F32V4TOF16] = F_F32V2TOF16, [IPU_OP_LD128PUTCS] = F_LD128PUTCS,
    [IPU_OP_LD128PUTCSSTEP] = F_LD128PUTCS,
    [IPU_OP_F32V2AMP] = F_F32V2AMP,
    [IPU_OP_F16V4AMP] = F_F16V4AMP, [IPU_OP_AMPZERO] = F_AMPZERO, [IPU_OP_AMPGET] = F_AMPGET,
    [IPU_OP_LD128] = F_LD128, [IPU_OP_LD128STEP] = F_LD128STEP, [IPU_OP_ST64] = F_ST64, [IPU_OP_ST64STEP] = F_ST64STEP,
    [IPU_OP_RPT] = F_RPT, [IPU_OP_RPTI] = F_RPT, [IPU_OP_BR] = F_BR, [IPU_OP_BRZ] = F_BRZ, [IPU_OP_BRNZ] = F_BRNZ,
    [IPU_OP_BRNEG] = F_BRNEG, [IPU_OP_BRNZDEC] = F_BRNZDEC,
    [IPU_OP_LDCONST] = F_LDCONST, [IPU_OP_SUB] = F_SUB, [IPU_OP_MUL] = F_MUL, [IPU_OP_MULI] = F_MULI,
    [IPU_OP_AND] = F_AND, [IPU_OP_ANDI] = F_ANDI, [IPU_OP_OR] = F_OR, [IPU_OP_XOR] = F_XOR, [IPU_OP_SHL] = F_SHL,
    [IPU_OP_SHLI] = F_SHLI, [IPU_OP_SHR] = F_SHR, [IPU_OP_SHRI] = F_SHRI, [IPU_OP_CMPEQ] = F_CMPEQ,
    [IPU_OP_CMPULT] = F_CMPULT, [IPU_OP_CMPSLT] = F_CMPSLT, [IPU_OP_GET] = F_GET,
};

/* Whether the access of main-pipeline op `in` (fast code f) on registers r is one body_issue does
 * in place: in range, aligned, 128-bit loads in the interleaved memory, a store's page already
 * there; true for an op without access. The same tests as body_issue's own, made before a
 * bundle's auxiliary op runs, so that a bundle goes slow before it has done anything. */
static inline bool fast_access_ok(const ts_model *m, const ipu_tile *t, const ipu_insn *in, uint8_t f,
                                  const uint32_t *r)
{
    uint32_t width;
    bool store = false;
    switch (f) {
    case F_LD32: case F_LD32STEP: width = 4; break;
    case F_LD64: case F_LD64STEP: width = 8; if (m->c.load_bpc < 8) return false; break;
    case F_LD128: case F_LD128STEP: width = 16; if (m->c.load_bpc < 16) return false; break;
    case F_ST32: case F_ST32STEP: width = 4; store = true; break;
    case F_ST64: case F_ST64STEP: width = 8; store = true; if (m->c.store_bpc < 8) return false; break;
    default: return true;
    }
    const bool off = f == F_LD32 || f == F_LD64 || f == F_LD128 || f == F_ST32 || f == F_ST64;
    const int64_t a = (int64_t)(int32_t)r[in->r1] + (off ? in->imm : 0);
    if (a < 0 || (uint64_t)a + width > m->c.sram_bytes || (a & (width - 1)))
        return false;
    if (width == 16 && (uint64_t)a < m->c.interleaved_base)
        return false;
    return !store || t->page[(uint64_t)a >> IPU_PAGE_SHIFT];
}

/* One issue of worker ctx at cycle c (workers_run, closed_form_run): the ops that fill ResNet-50's
 * loops, each as exec_op does it, with its memory reached directly once the access is in range,
 * aligned and, for a store, on a page already there, and bundles of them (the auxiliary op, which
 * has no access, then the main one, once the main one's access passes fast_access_ok); anything
 * else (another op, a branch, an access that fails or needs a page, a pc past the code) goes
 * through exec. */
static inline __attribute__((always_inline)) ts_status body_issue(ts_model *m, uint32_t ti, ipu_tile *t, int ctx,
                                                                uint64_t c, ts_err *err, bool *slowp)
{
    ipu_ctx *x = &t->cx[ctx];
    uint32_t pc = x->pc;
    if (pc >= t->n)
        goto slow;
    ipu_insn *in = &t->code[pc];
    uint32_t *r = x->r;
    const uint64_t sram = m->c.sram_bytes;
    int64_t a;
    uint8_t *p;
    uint64_t ready;
    uint32_t len = 1;   /* instructions the issue takes: 4 for a bundle */
    ipu_insn *op = in;  /* the op being done: the instruction, or a bundle's auxiliary then main op */
    uint8_t fast = in->fast; /* ts_ipu_fast_code: an out-of-range immediate already F_SLOW */
    if (fast == F_BUNDLE) {
        if (!fast_access_ok(m, t, in + 1, in[1].fast, r))
            goto slow;
        t->opcnt[IPU_OP_BUNDLE]++;
        len = 4;
        op = in + 2;
        fast = op->fast;
    }
/* a load or store of `width` bytes at a (an int64_t), else the slow path */
#define FAST_ADDR(width) if (a < 0 || (uint64_t)a + (width) > sram || (a & ((width) - 1))) goto slow
next_op:
    ready = c + 1;
    switch (fast) {
    case F_SETZI: r[op->r0] = (uint32_t)op->imm; break;
    case F_MOV: r[op->r0] = r[op->r1]; break;
    case F_ADD: r[op->r0] = r[op->r1] + r[op->r2]; break;
    case F_ADDI: r[op->r0] = r[op->r1] + (uint32_t)op->imm; break;
    case F_NOP: break;
    case F_LD32:
        a = (int64_t)(int32_t)r[op->r1] + op->imm;
        FAST_ADDR(4);
        memcpy(&r[op->r0], rd_ptr(m, t, (uint64_t)a), 4);
        ready = c + m->c.load_latency;
        break;
    case F_LD32STEP:
        a = (int64_t)(int32_t)r[op->r1];
        FAST_ADDR(4);
        memcpy(&r[op->r0], rd_ptr(m, t, (uint64_t)a), 4);
        r[op->r1] = (uint32_t)a + (uint32_t)op->imm; /* the base as read: the load may have written it */
        ready = c + m->c.load_latency;
        break;
    case F_LD64:
    case F_LD64STEP:
        if (m->c.load_bpc < 8)
            goto slow;
        a = (int64_t)(int32_t)r[op->r1] + (fast == F_LD64 ? op->imm : 0);
        FAST_ADDR(8);
        memcpy(&r[op->r0], rd_ptr(m, t, (uint64_t)a), 8);
        if (fast == F_LD64STEP)
            r[op->r1] = (uint32_t)a + (uint32_t)op->imm;
        ready = c + m->c.load_latency;
        break;
    case F_LD128:
    case F_LD128STEP:
        if (m->c.load_bpc < 16)
            goto slow;
        a = (int64_t)(int32_t)r[op->r1] + (fast == F_LD128 ? op->imm : 0);
        FAST_ADDR(16);
        if ((uint64_t)a < m->c.interleaved_base)
            goto slow;
        memcpy(&r[op->r0], rd_ptr(m, t, (uint64_t)a), 16);
        if (fast == F_LD128STEP)
            r[op->r1] = (uint32_t)a + (uint32_t)op->imm;
        ready = c + m->c.load_latency;
        break;
    case F_ST32:
    case F_ST32STEP:
    case F_ST64:
    case F_ST64STEP: {
        const bool wide = fast == F_ST64 || fast == F_ST64STEP, step = fast == F_ST32STEP || fast == F_ST64STEP;
        const uint32_t w = wide ? 8 : 4;
        if (wide && m->c.store_bpc < 8)
            goto slow;
        a = (int64_t)(int32_t)r[op->r1] + (step ? 0 : op->imm);
        FAST_ADDR(w);
        if (!(p = t->page[(uint64_t)a >> IPU_PAGE_SHIFT]))
            goto slow;
        if ((uint64_t)a + w > t->mem_hi)
            t->mem_hi = (uint64_t)a + w;
        if (wide)
            memcpy(p + (a & (IPU_PAGE_SIZE - 1)), &r[op->r0], 8);
        else
            memcpy(p + (a & (IPU_PAGE_SIZE - 1)), &r[op->r0], 4);
        if (step)
            r[op->r1] = r[op->r1] + (uint32_t)op->imm;
        break;
    }
    case F_F32ADD: r[op->r0] = fr(rf(r[op->r1]) + rf(r[op->r2])); break;
    case F_F32MAX: r[op->r0] = fr(fmaxf(rf(r[op->r1]), rf(r[op->r2]))); break;
    case F_F32V2ADD: {
        float y0 = rf(r[op->r1]) + rf(r[op->r2]), y1 = rf(r[op->r1 + 1]) + rf(r[op->r2 + 1]);
        r[op->r0] = fr(y0);
        r[op->r0 + 1] = fr(y1);
        break;
    }
    case F_F32V2TOF16: { /* and f32v4tof16: the second word from lanes 2 and 3 */
        uint32_t lo = (uint32_t)ts_f32_to_f16(rf(r[op->r1])) | (uint32_t)ts_f32_to_f16(rf(r[op->r1 + 1])) << 16;
        if (op->op == IPU_OP_F32V4TOF16)
            r[op->r0 + 1] =
                (uint32_t)ts_f32_to_f16(rf(r[op->r1 + 2])) | (uint32_t)ts_f32_to_f16(rf(r[op->r1 + 3])) << 16;
        r[op->r0] = lo;
        break;
    }
    case F_LD128PUTCS: {
        a = (int64_t)(int32_t)r[op->r0];
        FAST_ADDR(16);
        coef_put(t, (uint32_t)op->imm, rd_ptr(m, t, (uint64_t)a));
        if (op->op == IPU_OP_LD128PUTCSSTEP)
            r[op->r0] = (uint32_t)a + 16;
        ready = c + m->c.load_latency;
        break;
    }
    case F_F32V2AMP: amp_f32(m, t, x, rf(r[op->r0]), rf(r[op->r0 + 1])); break;
    case F_F16V4AMP: {
        float in4[4];
        h4_to_f32(r[op->r0], r[op->r0 + 1], in4);
        if (t->w16_stale)
            w16_refresh(t);
        amp_f16(t->w16, m->c.amp_units_f16, in4[0], in4[1], in4[2], in4[3], x->acc);
        break;
    }
    case F_AMPZERO: memset(x->acc, 0, sizeof x->acc); break;
    case F_AMPGET:
        amp_get(r, op->r0, x->acc, op->imm);
        break;
    case F_LDCONST: case F_SUB: case F_MUL: case F_MULI: case F_AND: case F_ANDI: case F_OR: case F_XOR:
    case F_SHL: case F_SHLI: case F_SHR: case F_SHRI: case F_CMPEQ: case F_CMPULT: case F_CMPSLT: case F_GET:
        int_op(m, ti, op, r, (uint32_t)(ctx - 1));
        break;
    default:
        goto slow;
    }
#undef FAST_ADDR
    t->opcnt[op->op]++;
    t->work++;
    if (op == in + 2) { /* a bundle's auxiliary op done: its main one (checked, so it cannot go slow) */
        op = in + 1;
        fast = op->fast;
        goto next_op;
    }
    x->ready = ready;
    pc += len;
    if (pc == x->rpt_end && x->rpt_left) {
        if (--x->rpt_left > 0)
            pc = x->rpt_start;
        else
            t->in_rpt &= ~(1u << (ctx - 1));
    }
    x->pc = pc;
    return TS_OK;
slow:
    *slowp = true;
    return exec_slow(m, ti, t, ctx, c, err);
}

/* ---- workers in step: every running worker at one pc ---- */

static uint8_t fast_code_one(const ipu_insn *in)
{
    uint8_t f = ipu_fast[in->op];
    if (!(in->ctx_ok & 2))
        return F_SLOW;
    if (f == F_LD128PUTCS && (in->imm < 0 || in->imm >= 16))
        return F_SLOW;
    if (f == F_AMPGET && (in->imm < 0 || in->imm >= IPU_ACC_MAX / 2))
        return F_SLOW;
    if (f == F_GET && (in->imm < IPU_CSR_TILE || in->imm > IPU_CSR_NWORKERS))
        return F_SLOW;
    return f;
}

/* A bundle's `{` (in, with its members after it, as check_bundles has checked them) is F_BUNDLE
 * when body_issue does both members: a main op whose only way to fail is the access fast_access_ok
 * tests, an auxiliary op that cannot fail. A member keeps its own code, which only its bundle
 * reads (no context is ever at a member's pc). */
uint8_t ts_ipu_fast_code(const ipu_insn *in)
{
    if (in->op != IPU_OP_BUNDLE)
        return fast_code_one(in);
    const uint8_t fm = fast_code_one(&in[1]), fa = fast_code_one(&in[2]);
    const bool main_ok = (fm >= F_SETZI && fm <= F_ST32STEP) || (fm >= F_LD128 && fm <= F_ST64STEP) || fm >= F_LDCONST;
    const bool aux_ok = fa == F_NOP || (fa >= F_F32ADD && fa <= F_F32V2TOF16) || (fa >= F_F32V2AMP && fa <= F_AMPGET);
    return main_ok && aux_ok ? F_BUNDLE : F_SLOW;
}

static inline bool fast_load(uint8_t f)
{
    return f == F_LD32 || f == F_LD32STEP || f == F_LD64 || f == F_LD64STEP || f == F_LD128PUTCS || f == F_LD128 ||
           f == F_LD128STEP;
}

/* Whether the workers xs (worker i in slot d[i] of the turn from c) are in step at c: all at
 * xs[0]'s pc, each ready by its slot's cycle, all in xs[0]'s repeat body or all outside one. */
static inline bool workers_in_step(ipu_ctx *const *xs, const uint32_t *d, uint32_t nw, uint64_t c)
{
    const ipu_ctx *x0 = xs[0];
    const bool body = x0->rpt_left > 0;
    for (uint32_t i = 0; i < nw; i++) {
        const ipu_ctx *x = xs[i];
        if (x->pc != x0->pc || x->ready > c + d[i] || (x->rpt_left > 0) != body ||
            (body && (x->rpt_start != x0->rpt_start || x->rpt_end != x0->rpt_end)))
            return false;
    }
    return true;
}

/* After turns done in step, the last at cycle `last` with op lastf (none: UINT64_MAX): when each
 * worker may issue again. */
static inline void step_ready(const ts_model *m, ipu_ctx *const *xs, const uint32_t *d, uint32_t nw, uint64_t last,
                              uint8_t lastf)
{
    if (last == UINT64_MAX)
        return;
    const uint64_t lat = fast_load(lastf) ? m->c.load_latency : 1;
    for (uint32_t i = 0; i < nw; i++)
        xs[i]->ready = last + d[i] + lat;
}

/* ---- repeat bodies in step, pass after pass ----
 *
 * A repeat body of the ops in_step_run does in place (no branch, no `rpt`, no bundle), whose
 * accesses each go through a pointer that the body only steps by constants (the step forms,
 * `addi $r, $r, imm`, ld128putcsstep) and that nothing else reads or writes, takes the same turns
 * at every pass: each turn is one instruction for every worker, W cycles after the one before, and
 * a worker's address at an access is its address at the first pass plus the pointer's step per
 * pass times the passes since. So for k passes together every access of every worker can be
 * checked at once (in range, aligned, in the interleaved memory, a store's pages there: the first
 * and the last pass bound a linear sequence), and the passes then run as a plain loop over the
 * body: no tests, no counts, no repeat bookkeeping per turn; the pointer steps are not done one
 * by one (an access's address at pass j is its first pass's plus j steps) but added once at the
 * end, the registers' values as the steps one by one leave them (sums modulo 2^32). Each op runs
 * as in_step_run runs it, in the same order (turn by turn, the workers in their slots' order), on
 * the same bytes, so the tile ends exactly as the turns one by one leave it. Anything else (a body with another op, a
 * pointer also read or written otherwise, an access that fails at some pass) runs turn by turn
 * as before. */

#define SPAN_OPS 64 /* the longest body run so (the lowered ones are a few instructions) */

typedef struct span_op {
    const ipu_insn *in;
    uint8_t f;
    int8_t acc; /* its access's row in the addresses, -1 without */
} span_op;

/* Per body, the registers: their constant steps per pass (inc; stepped: there are some), whether
 * read or written by anything but an access as its pointer and those steps (other). */
typedef struct span_regs {
    int64_t inc[IPU_NREGS + 4];
    bool stepped[IPU_NREGS + 4];
    bool other[IPU_NREGS + 4];
} span_regs;

static inline void span_rd(span_regs *g, uint32_t r, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++)
        g->other[r + j] = true;
}

/* The access of op f (width, pointer register, offset, whether a store, whether it steps the
 * pointer), false when it has none. */
static inline bool span_access(const ipu_insn *in, uint8_t f, uint32_t *w, uint32_t *b, int64_t *off, bool *st,
                               bool *step)
{
    *off = 0;
    *st = false;
    *step = false;
    *b = in->r1;
    switch (f) {
    case F_LD32: *w = 4; *off = in->imm; return true;
    case F_LD32STEP: *w = 4; *step = true; return true;
    case F_LD64: *w = 8; *off = in->imm; return true;
    case F_LD64STEP: *w = 8; *step = true; return true;
    case F_LD128: *w = 16; *off = in->imm; return true;
    case F_LD128STEP: *w = 16; *step = true; return true;
    case F_ST32: *w = 4; *st = true; *off = in->imm; return true;
    case F_ST32STEP: *w = 4; *st = true; *step = true; return true;
    case F_ST64: *w = 8; *st = true; *off = in->imm; return true;
    case F_ST64STEP: *w = 8; *st = true; *step = true; return true;
    case F_LD128PUTCS: *w = 16; *b = in->r0; *step = in->op == IPU_OP_LD128PUTCSSTEP; return true;
    default: return false;
    }
}

/* The registers body [rs, re) reads and writes (span_regs); false when an op is not one the span
 * runs. */
static bool span_scan(const ts_model *m, const ipu_insn *code, uint32_t rs, uint32_t re, span_regs *g)
{
    memset(g, 0, sizeof *g);
    for (uint32_t p = rs; p < re; p++) {
        const ipu_insn *in = &code[p];
        const uint8_t f = in->fast;
        const uint32_t r0 = in->r0, r1 = in->r1, r2 = in->r2;
        uint32_t w, b;
        int64_t off;
        bool st, step;
        if (in->member)
            return false;
        if (span_access(in, f, &w, &b, &off, &st, &step)) {
            if ((w == 8 && (st ? m->c.store_bpc : m->c.load_bpc) < 8) || (w == 16 && m->c.load_bpc < 16))
                return false;
            if (f != F_LD128PUTCS) /* the register stored, or those loaded */
                span_rd(g, r0, w / 4);
            if (step) {
                g->inc[b] += f == F_LD128PUTCS ? 16 : in->imm;
                g->stepped[b] = true;
            }
            continue;
        }
        switch (f) {
        case F_SETZI: span_rd(g, r0, 1); break;
        case F_MOV: span_rd(g, r1, 1); span_rd(g, r0, 1); break;
        case F_ADDI:
            if (r0 == r1) {
                g->inc[r0] += in->imm;
                g->stepped[r0] = true;
            } else {
                span_rd(g, r1, 1);
                span_rd(g, r0, 1);
            }
            break;
        case F_NOP: case F_AMPZERO: break;
        case F_ADD: case F_F32ADD: case F_F32MAX:
        case F_LDCONST: case F_SUB: case F_MUL: case F_MULI: case F_AND: case F_ANDI: case F_OR: case F_XOR:
        case F_SHL: case F_SHLI: case F_SHR: case F_SHRI: case F_CMPEQ: case F_CMPULT: case F_CMPSLT: case F_GET:
            span_rd(g, r1, 1); span_rd(g, r2, 1); span_rd(g, r0, 1); break;
        case F_F32V2ADD: span_rd(g, r1, 2); span_rd(g, r2, 2); span_rd(g, r0, 2); break;
        case F_F32V2TOF16: span_rd(g, r1, 4); span_rd(g, r0, 2); break;
        case F_F32V2AMP: case F_F16V4AMP: span_rd(g, r0, 2); break;
        case F_AMPGET: span_rd(g, r0, 2); break;
        default: return false;
        }
    }
    return true;
}

/* A register-only float or AMP op `in` (fast code f: f32add, f32max, f32v2add, f32v2tof16 and
 * f32v4tof16, f32v2amp, f16v4amp, ampzero, ampget) of the nw workers xs, in turn, as one turn in step
 * of in_step_run or one pass of span_run does it. The f16 coefficients are refreshed once when
 * stale: no coefficient changes within a turn. */
static inline void reg_each(const ts_model *m, ipu_tile *t, ipu_ctx *const *xs, uint32_t nw, int f,
                            const ipu_insn *in)
{
    const uint32_t r0 = in->r0, r1 = in->r1, r2 = in->r2;
    const int32_t imm = in->imm;
    switch (f) {
    case F_F32ADD:
        for (uint32_t i = 0; i < nw; i++)
            xs[i]->r[r0] = fr(rf(xs[i]->r[r1]) + rf(xs[i]->r[r2]));
        break;
    case F_F32MAX:
        for (uint32_t i = 0; i < nw; i++)
            xs[i]->r[r0] = fr(fmaxf(rf(xs[i]->r[r1]), rf(xs[i]->r[r2])));
        break;
    case F_F32V2ADD:
        for (uint32_t i = 0; i < nw; i++) {
            uint32_t *r = xs[i]->r;
            float y0 = rf(r[r1]) + rf(r[r2]), y1 = rf(r[r1 + 1]) + rf(r[r2 + 1]);
            r[r0] = fr(y0);
            r[r0 + 1] = fr(y1);
        }
        break;
    case F_F32V2TOF16: /* and f32v4tof16 */
        for (uint32_t i = 0; i < nw; i++) {
            uint32_t *r = xs[i]->r;
            uint32_t lo = (uint32_t)ts_f32_to_f16(rf(r[r1])) | (uint32_t)ts_f32_to_f16(rf(r[r1 + 1])) << 16;
            if (in->op == IPU_OP_F32V4TOF16)
                r[r0 + 1] = (uint32_t)ts_f32_to_f16(rf(r[r1 + 2])) | (uint32_t)ts_f32_to_f16(rf(r[r1 + 3])) << 16;
            r[r0] = lo;
        }
        break;
    case F_F32V2AMP:
        for (uint32_t i = 0; i < nw; i++)
            amp_f32(m, t, xs[i], rf(xs[i]->r[r0]), rf(xs[i]->r[r0 + 1]));
        break;
    case F_F16V4AMP:
        if (t->w16_stale)
            w16_refresh(t);
        for (uint32_t i = 0; i < nw; i++) {
            const uint32_t *r = xs[i]->r;
            float in4[4];
            h4_to_f32(r[r0], r[r0 + 1], in4);
            amp_f16(t->w16, m->c.amp_units_f16, in4[0], in4[1], in4[2], in4[3], xs[i]->acc);
        }
        break;
    case F_AMPZERO:
        for (uint32_t i = 0; i < nw; i++)
            memset(xs[i]->acc, 0, sizeof xs[i]->acc);
        break;
    case F_AMPGET:
        for (uint32_t i = 0; i < nw; i++)
            amp_get(xs[i]->r, r0, xs[i]->acc, imm);
        break;
    default: break;
    }
}

/* Run k passes of repeat body [rs, re) for the workers xs (nw of them, in step at its start, each
 * with at least k passes left), as turns in step one by one would, when span_scan takes the body
 * and every access of every pass passes the tests of in_step_run's turns; returns the passes run
 * (k, or 0 when nothing was done). Counts the ops (opcnt) and moves the pointers; the caller
 * counts the turns, the cycles and the repeats left. */
static __attribute__((noinline)) uint64_t span_run(ts_model *m, uint32_t ti, ipu_tile *t, ipu_ctx *const *xs,
                                                  uint32_t nw, uint32_t rs, uint32_t re, uint64_t k)
{
    const uint32_t len = re - rs;
    if (len > SPAN_OPS || k < 2)
        return 0;
    span_regs g;
    if (!span_scan(m, t->code, rs, re, &g))
        return 0;
    for (uint32_t r = 0; r < IPU_NREGS; r++)
        if (g.stepped[r] && g.other[r])
            return 0;
    span_op ops[SPAN_OPS];
    int64_t ad[SPAN_OPS][IPU_MAX_CTX], as[SPAN_OPS];
    int64_t dlt[IPU_NREGS + 4] = {0};
    uint32_t nops = 0, nacc = 0;
    uint64_t hi = 0;
    const uint64_t sram = m->c.sram_bytes;
    uint8_t *const *const pages = t->page;
    for (uint32_t p = rs; p < re; p++) {
        const ipu_insn *in = &t->code[p];
        const uint8_t f = in->fast;
        uint32_t w, b;
        int64_t off;
        bool st, step;
        if (!span_access(in, f, &w, &b, &off, &st, &step)) {
            if (f == F_ADDI && in->r0 == in->r1) { /* a pointer's step: added at the end */
                dlt[in->r0] += in->imm;
                continue;
            }
            if (f != F_NOP)
                ops[nops++] = (span_op){in, f, -1};
            continue;
        }
        if (g.other[b])
            return 0;
        const int64_t s = g.inc[b], last = (int64_t)(k - 1) * s;
        if (s > INT32_MAX || s < INT32_MIN || ((uint64_t)s & (w - 1)))
            return 0;
        for (uint32_t i = 0; i < nw; i++) {
            /* the pointer's value as an int32 at the first and the last pass, exact (no wrap) */
            const int64_t e0 = (int64_t)(int32_t)xs[i]->r[b] + dlt[b], e1 = e0 + last;
            if (e0 < INT32_MIN || e0 > INT32_MAX || e1 < INT32_MIN || e1 > INT32_MAX)
                return 0;
            const int64_t a0 = e0 + off, a1 = e1 + off, lo = a0 < a1 ? a0 : a1, top = a0 < a1 ? a1 : a0;
            if (lo < 0 || (uint64_t)top + w > sram || ((uint64_t)a0 & (w - 1)))
                return 0;
            if (w == 16 && f != F_LD128PUTCS && (uint64_t)lo < m->c.interleaved_base)
                return 0;
            if (st) {
                const uint64_t pg1 = ((uint64_t)top + w - 1) >> IPU_PAGE_SHIFT;
                for (uint64_t pg = (uint64_t)lo >> IPU_PAGE_SHIFT; pg <= pg1; pg++)
                    if (!pages[pg])
                        return 0;
                if ((uint64_t)top + w > hi)
                    hi = (uint64_t)top + w;
            }
            ad[nacc][i] = a0;
        }
        as[nacc] = s;
        ops[nops++] = (span_op){in, f, (int8_t)nacc++};
        if (step)
            dlt[b] += f == F_LD128PUTCS ? 16 : in->imm;
    }
    /* every access of every pass checked: the passes, op by op, each for the workers in turn */
    if (hi > t->mem_hi)
        t->mem_hi = hi;
    const uint8_t *const zero_page = m->zero_page;
#define EACH for (uint32_t i = 0; i < nw; i++)
    for (uint64_t j = 0; j < k; j++) {
        for (uint32_t u = 0; u < nops; u++) {
            const span_op *o = &ops[u];
            const ipu_insn *in = o->in;
            const uint32_t r0 = in->r0, r1 = in->r1, r2 = in->r2;
            const int32_t imm = in->imm;
            /* an access's address at pass j: the first pass's plus j steps (checked exact) */
            const int64_t *a = o->acc >= 0 ? ad[o->acc] : NULL, jo = a ? (int64_t)j * as[o->acc] : 0;
#define AT(i) ((uint64_t)(a[i] + jo))
            switch (o->f) {
            case F_SETZI: EACH xs[i]->r[r0] = (uint32_t)imm; break;
            case F_MOV: EACH xs[i]->r[r0] = xs[i]->r[r1]; break;
            case F_ADD: EACH xs[i]->r[r0] = xs[i]->r[r1] + xs[i]->r[r2]; break;
            case F_ADDI: EACH xs[i]->r[r0] = xs[i]->r[r1] + (uint32_t)imm; break;
            case F_LD32: case F_LD32STEP: EACH memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, AT(i)), 4); break;
            case F_LD64: case F_LD64STEP: EACH memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, AT(i)), 8); break;
            case F_LD128: case F_LD128STEP: EACH memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, AT(i)), 16); break;
            case F_ST32: case F_ST32STEP:
                EACH memcpy(pages[AT(i) >> IPU_PAGE_SHIFT] + (AT(i) & (IPU_PAGE_SIZE - 1)), &xs[i]->r[r0], 4);
                break;
            case F_ST64: case F_ST64STEP:
                EACH memcpy(pages[AT(i) >> IPU_PAGE_SHIFT] + (AT(i) & (IPU_PAGE_SIZE - 1)), &xs[i]->r[r0], 8);
                break;
            case F_LD128PUTCS: {
                int64_t prev = -1;
                EACH {
                    if (a[i] != prev)
                        coef_put(t, (uint32_t)imm, page_rd(pages, zero_page, AT(i)));
                    prev = a[i]; /* (the same pass: equal first-pass addresses are equal now) */
                }
                break;
            }
            case F_F32ADD:
            case F_F32MAX:
            case F_F32V2ADD:
            case F_F32V2TOF16:
            case F_F32V2AMP:
            case F_F16V4AMP:
            case F_AMPZERO:
            case F_AMPGET: reg_each(m, t, xs, nw, o->f, in); break;
            default: /* the rest of the integer ops and get (span_scan takes no other) */
                EACH int_op(m, ti, in, xs[i]->r, (uint32_t)(xs[i] - t->cx - 1));
                break;
            }
#undef AT
        }
    }
    /* the pointers' steps, and the ops' counts */
    for (uint32_t r = 0; r < IPU_NREGS; r++)
        if (g.stepped[r])
            EACH xs[i]->r[r] += (uint32_t)((uint64_t)k * (uint64_t)g.inc[r]);
    for (uint32_t p = rs; p < re; p++)
        t->opcnt[t->code[p].op] += (uint64_t)nw * k;
#undef EACH
    return k;
}

/* The running workers are in step at cycle c when they are all at one pc, in one repeat body or
 * none, each ready by its slot's cycle in the turn of W cycles from c (runall starts them so, and
 * code whose workers issue as many instructions as each other keeps them so). Then, while every
 * slot not theirs is idle (the caller's test: every slot a running worker's, or the supervisor
 * waiting for a worker's exit), no receive is armed and they stay in step, each turn has every
 * worker issue the same instruction, in the order of their slots from c's.
 *
 * in_step_run does a turn's instruction for all of them at once, in that order: one fetch, one
 * dispatch and one count of ops and work per turn instead of one per worker, the registers
 * of each worker as the op defines them. The order is the cycle-by-cycle order (a store comes
 * before a later slot's load of the same bytes, coefficients are loaded in order and an AMP op
 * sees those loaded before it), so whatever the workers read and write, the tile ends as issue
 * cycle by cycle leaves it. A turn's accesses are all checked first (in range, aligned, a store's
 * page there); a turn that is not safe so, or whose op is not one of body_issue's (a branch, a
 * `rpt`, an exit, a bundle), goes through the full executor worker by worker at their cycles
 * (exec_slow: errors, loop marks, pages as ever). After such a turn, or at the end of a repeat
 * body, the run goes on only while the workers are still in step and none has exited.
 *
 * Runs from *cp up to `limit`; *cp is where it stopped, a turn's start unless a worker exited.
 * Returns TS_OK, or a worker's error (the first in cycle order, as issue cycle by cycle gives). */
static ts_status in_step_run(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t *cp, uint64_t limit, ts_err *err)
{
    const uint32_t W = m->W, run0 = t->running;
    uint64_t c = *cp;
    const uint32_t slot = (uint32_t)(c % W);
    ipu_ctx *xs[IPU_MAX_CTX];
    uint32_t d[IPU_MAX_CTX], nw = 0, wmask = 0;
    for (uint32_t i = 0; i < W; i++) {
        uint32_t w = slot + i < W ? slot + i : slot + i - W;
        if (!(run0 >> w & 1))
            continue;
        xs[nw] = &t->cx[1 + w];
        d[nw++] = i;
        wmask |= 1u << w;
    }
    if (!nw || !workers_in_step(xs, d, nw, c))
        return TS_OK;
    uint32_t pc = xs[0]->pc;
    bool body = xs[0]->rpt_left > 0;
    uint32_t rs = xs[0]->rpt_start, re = xs[0]->rpt_end;
    if (pc >= t->n || limit < c + W || m->c.sram_bytes < 16) /* (STEP_ADDRS subtracts up to 16) */
        return TS_OK;
    const uint64_t sram = m->c.sram_bytes;
    uint64_t *const opcnt = t->opcnt;
    /* what the turns read and no turn changes, in locals: the stores into registers and memory
     * (built with -fno-strict-aliasing) would make the compiler read them again at every turn */
    ipu_insn *const code = t->code;
    const uint32_t ncode = t->n;
    uint8_t *const *const pages = t->page; /* the array is the tile's for the run; its pages come and go */
    const uint8_t *const zero_page = m->zero_page;
    const uint32_t load_bpc = m->c.load_bpc, store_bpc = m->c.store_bpc;
    const uint64_t interleaved_base = m->c.interleaved_base;
    uint64_t last = UINT64_MAX, turns = 0, fast = 0; /* the cycle of the last turn done in step; turns
                                                    * run, those of them done here */
    uint8_t lastf = F_NOP;                  /* that turn's op (its latency) */
    int64_t a[IPU_MAX_CTX];
    ts_status rc = TS_OK;
/* the turn's accesses of `width` bytes: each in range (a negative one is a large unsigned) and
 * aligned, else the turn goes slow; one test for all of them */
#define STEP_ADDRS(width, base, off)                                                                \
    {                                                                                               \
        uint64_t any_ = 0;                                                                          \
        bool out_ = false;                                                                          \
        for (uint32_t i = 0; i < nw; i++) {                                                         \
            a[i] = (int64_t)(int32_t)xs[i]->r[base] + (off);                                        \
            out_ |= (uint64_t)a[i] > sram - (width);                                                \
            any_ |= (uint64_t)a[i];                                                                 \
        }                                                                                           \
        if (out_ || (any_ & ((width) - 1)))                                                         \
            goto slow;                                                                              \
    }
#define EACH for (uint32_t i = 0; i < nw; i++)
/* the turn's stores of `width` bytes from r0 at r1 (+ imm, or stepped by imm after): the addresses
 * by STEP_ADDRS, their pages found in one pass, then the stores in the workers' order; a page not
 * there yet sends the turn slow before anything is written */
#define STEP_STORE(width, step)                                                                     \
    {                                                                                               \
        uint8_t *at_[IPU_MAX_CTX];                                                                  \
        uint64_t hi_ = 0;                                                                           \
        STEP_ADDRS(width, r1, (step) ? 0 : imm);                                                    \
        for (uint32_t i = 0; i < nw; i++) {                                                         \
            uint8_t *pg_ = pages[(uint64_t)a[i] >> IPU_PAGE_SHIFT];                                 \
            if (!pg_)                                                                               \
                goto slow;                                                                          \
            at_[i] = pg_ + ((uint64_t)a[i] & (IPU_PAGE_SIZE - 1));                                  \
            hi_ = (uint64_t)a[i] > hi_ ? (uint64_t)a[i] : hi_;                                      \
        }                                                                                           \
        if (hi_ + (width) > t->mem_hi)                                                              \
            t->mem_hi = hi_ + (width);                                                              \
        for (uint32_t i = 0; i < nw; i++) {                                                         \
            memcpy(at_[i], &xs[i]->r[r0], (width));                                                 \
            if (step)                                                                               \
                xs[i]->r[r1] += (uint32_t)imm;                                                      \
        }                                                                                           \
    }
    uint32_t span_no = UINT32_MAX; /* a body span_run did not take in this call */
    while (c + W <= limit) {
        if (pc >= ncode) /* past the end of the code: the full executor reports it, at this turn */
            break;
        if (body && pc == rs && re > rs && rs != span_no) { /* a pass begins: the passes together */
            uint64_t kmin = UINT64_MAX;
            bool same = true;
            EACH kmin = xs[i]->rpt_left < kmin ? xs[i]->rpt_left : kmin;
            EACH same &= xs[i]->rpt_left == kmin;
            /* passes that no worker leaves the body in, unless all leave it together, that fit */
            uint64_t k = same ? kmin : kmin - 1;
            const uint64_t len = re - rs, fit = (limit - c) / (len * W);
            if (k > fit)
                k = fit;
            if (k >= 2 && (k = span_run(m, ti, t, xs, nw, rs, re, k)) == 0)
                span_no = rs;
            if (k >= 2) {
                const uint64_t n = k * len;
                c += n * W;
                turns += n;
                fast += n;
                last = c - W;
                lastf = code[re - 1].fast;
                t->span_passes += k;
                EACH xs[i]->rpt_left -= (uint32_t)k;
                if (same && k == kmin) {
                    body = false;
                    t->in_rpt &= ~wmask;
                    pc = re;
                }
                continue;
            }
        }
        ipu_insn *in = &code[pc];
        const uint8_t f = in->fast;
        uint32_t next = pc + 1;
        const uint8_t r0 = in->r0, r1 = in->r1, r2 = in->r2;
        const int32_t imm = in->imm;
        switch (f) {
        case F_SETZI: EACH xs[i]->r[r0] = (uint32_t)imm; break;
        case F_MOV: EACH xs[i]->r[r0] = xs[i]->r[r1]; break;
        case F_ADD: EACH xs[i]->r[r0] = xs[i]->r[r1] + xs[i]->r[r2]; break;
        case F_ADDI: EACH xs[i]->r[r0] = xs[i]->r[r1] + (uint32_t)imm; break;
        case F_NOP: break;
        case F_LD32:
        case F_LD32STEP:
            STEP_ADDRS(4, r1, f == F_LD32 ? imm : 0);
            EACH {
                memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, (uint64_t)a[i]), 4);
                if (f == F_LD32STEP) /* the base as read: the load may have written it */
                    xs[i]->r[r1] = (uint32_t)a[i] + (uint32_t)imm;
            }
            break;
        case F_LD64:
        case F_LD64STEP:
            if (load_bpc < 8)
                goto slow;
            STEP_ADDRS(8, r1, f == F_LD64 ? imm : 0);
            EACH {
                memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, (uint64_t)a[i]), 8);
                if (f == F_LD64STEP)
                    xs[i]->r[r1] = (uint32_t)a[i] + (uint32_t)imm;
            }
            break;
        case F_ST32: STEP_STORE(4, false); break;
        case F_ST32STEP: STEP_STORE(4, true); break;
        case F_ST64:
            if (store_bpc < 8)
                goto slow;
            STEP_STORE(8, false);
            break;
        case F_ST64STEP:
            if (store_bpc < 8)
                goto slow;
            STEP_STORE(8, true);
            break;
        case F_LD128:
        case F_LD128STEP:
            if (load_bpc < 16)
                goto slow;
            STEP_ADDRS(16, r1, f == F_LD128 ? imm : 0);
            EACH if ((uint64_t)a[i] < interleaved_base)
                goto slow;
            EACH {
                memcpy(&xs[i]->r[r0], page_rd(pages, zero_page, (uint64_t)a[i]), 16);
                if (f == F_LD128STEP)
                    xs[i]->r[r1] = (uint32_t)a[i] + (uint32_t)imm;
            }
            break;
        case F_LD128PUTCS: {
            STEP_ADDRS(16, r0, 0);
            /* workers that load the bytes the one before them loaded change nothing (coef_put) */
            int64_t prev = -1;
            EACH {
                if (a[i] != prev)
                    coef_put(t, (uint32_t)imm, page_rd(pages, zero_page, (uint64_t)a[i]));
                prev = a[i];
            }
            if (in->op == IPU_OP_LD128PUTCSSTEP)
                EACH xs[i]->r[r0] = (uint32_t)a[i] + 16;
            break;
        }
        case F_AMPGET: /* (the most frequent of the register-only ops: here, not through reg_each) */
            EACH amp_get(xs[i]->r, r0, xs[i]->acc, imm);
            break;
        case F_F32ADD:
        case F_F32MAX:
        case F_F32V2ADD:
        case F_F32V2TOF16: /* and f32v4tof16 */
        case F_F32V2AMP:
        case F_F16V4AMP:
        case F_AMPZERO: reg_each(m, t, xs, nw, f, in); break;
        case F_LDCONST: case F_SUB: case F_MUL: case F_MULI: case F_AND: case F_ANDI: case F_OR: case F_XOR:
        case F_SHL: case F_SHLI: case F_SHR: case F_SHRI: case F_CMPEQ: case F_CMPULT: case F_CMPSLT: case F_GET:
            EACH int_op(m, ti, in, xs[i]->r, (uint32_t)(xs[i] - t->cx - 1));
            break;
        case F_RPT: { /* every worker enters the body, or every one skips it */
            const bool reg = in->op == IPU_OP_RPT;
            const uint32_t rlen = (uint32_t)(reg ? imm : in->imm2);
            uint32_t zeros = 0;
            EACH zeros += (reg ? xs[i]->r[r0] : (uint32_t)imm) == 0;
            if (body || (zeros && zeros != nw)) /* the error, or workers that part: as exec does */
                goto slow;
            if (zeros) {
                next = pc + 1 + rlen;
                break;
            }
            EACH {
                xs[i]->rpt_start = pc + 1;
                xs[i]->rpt_end = pc + 1 + rlen;
                xs[i]->rpt_left = reg ? xs[i]->r[r0] : (uint32_t)imm;
            }
            t->in_rpt |= wmask;
            body = true;
            rs = pc + 1;
            re = pc + 1 + rlen;
            break;
        }
        case F_BR:
        case F_BRZ:
        case F_BRNZ:
        case F_BRNEG:
        case F_BRNZDEC: { /* every worker takes the branch, or none does */
            uint32_t taken = 0;
            EACH {
                const uint32_t v = xs[i]->r[r0];
                taken += f == F_BR || (f == F_BRZ ? v == 0 : f == F_BRNEG ? (int32_t)v < 0 : v != 0);
            }
            if (taken && taken != nw)
                goto slow;
            if (!taken)
                break;
            const uint32_t hint = f == F_BR ? 0 : r0;
            EACH {
                ipu_ctx *x = xs[i];
                int k;
                if (in->tgt <= pc && (k = ts_loop_step(&x->loop, pc, x->r, IPU_NREGS, hint)) != TS_LOOP_PASS &&
                    (rc = loop_back(m, t, ti, (int)(x - t->cx), x, pc, k, c + d[i], err)) != TS_OK)
                    goto out;
                if (f == F_BRNZDEC)
                    x->r[r0]--;
            }
            next = in->tgt;
            break;
        }
        default:
            goto slow;
        }
        opcnt[in->op] += nw;
        last = c;
        lastf = f;
        c += W;
        turns++;
        fast++;
        if (next == re && body) { /* the end of the body: each worker's repeats */
            uint32_t ended = 0;
            EACH ended += --xs[i]->rpt_left == 0;
            if (ended == 0) {
                next = rs;
            } else if (ended == nw) {
                body = false;
                t->in_rpt &= ~wmask;
            } else { /* some leave the body, the others go round again: no longer in step */
                EACH {
                    xs[i]->pc = xs[i]->rpt_left ? rs : re;
                    if (!xs[i]->rpt_left)
                        t->in_rpt &= ~(1u << (xs[i] - t->cx - 1));
                }
                pc = UINT32_MAX;
                break;
            }
        }
        pc = next;
        continue;
    slow: /* this turn through the full executor, worker by worker at their cycles */
        span_no = UINT32_MAX; /* it may add the page a span lacked */
        step_ready(m, xs, d, nw, last, lastf);
        EACH xs[i]->pc = pc;
        last = UINT64_MAX;
        for (uint32_t i = 0; i < nw; i++) {
            int ctx = (int)(xs[i] - t->cx);
            rc = exec_slow(m, ti, t, ctx, c + d[i], err);
            if (rc != TS_OK)
                goto out;
            if (t->running != run0) { /* an exit: the slots after it may change hands */
                c += d[i] + 1;
                pc = UINT32_MAX;
                break;
            }
        }
        if (pc == UINT32_MAX)
            break;
        c += W;
        turns++;
        pc = xs[0]->pc;
        body = xs[0]->rpt_left > 0;
        rs = xs[0]->rpt_start;
        re = xs[0]->rpt_end;
        if (pc >= t->n || !workers_in_step(xs, d, nw, c)) {
            pc = UINT32_MAX;
            break;
        }
    }
    /* the state of a turn done in step that is not in the contexts yet: their pc, when they are
     * still together, and when each may issue again */
    if (last != UINT64_MAX && pc != UINT32_MAX)
        EACH xs[i]->pc = pc;
    step_ready(m, xs, d, nw, last, lastf);
#undef EACH
#undef STEP_ADDRS
#undef STEP_STORE
out: /* the turns' counts (on an error too: the tests read them) */
    t->work += (uint64_t)nw * fast;
    t->step_turns += turns;
    t->cf_turns += turns;
    *cp = c;
    return rc;
}

/* Word w, its own or a broadcast, reaches tile ti at cycle c while its input selects the sender:
 * into the tile's memory. */
static inline ts_status rx_take(ts_model *m, uint32_t ti, ipu_tile *t, ipu_word *w, uint64_t c, ts_err *err)
{
    /* a send of this tile reading the element this word writes, in the same cycle */
    if (c >= t->tx_t0 && c < t->tx_end) {
        uint64_t i = (c - t->tx_t0) * m->c.words_per_cycle;
        uint64_t raddr = t->tx_addr + 4 * i;
        const uint64_t eb = m->c.element_bytes;
        /* one element: for a power of two (the configs' 32 KiB), the addresses agree above its
         * bits, without the two divisions per word received while the tile sends */
        if ((eb & (eb - 1)) == 0 ? (raddr ^ t->rx_addr) < eb : raddr / eb == t->rx_addr / eb)
            return ts_err_sim(err, ti, (int64_t)c,
                              "memory element conflict: the word from tile %d is written at %u while this tile's send reads %" PRIu64
                              " in the same element", t->rx_src, t->rx_addr, raddr);
    }
    uint8_t *p = wr_ptr(t, t->rx_addr, 4);
    if (!p)
        return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
    memcpy(p, &w->val, 4);
    if (w->dst == (int32_t)ti) {
        w->claimed = 1;
        t->ss_claims++;
    }
    t->rx_addr += 4;
    t->rx_left--;
    t->xrecv += 4;
    t->work++;
    t->effects++;
    if (!t->rx_left)
        xch_busy(t, t->rx_armed, c + 1, 0);
    return TS_OK;
}

/* From index k of a sender's log, past the words meant for other tiles than ti (a send's rest
 * goes to the same tile as its first word): the index of the next word to ti (its own or a
 * broadcast), or the log's length. */
static inline size_t rx_next_own(const ipu_wlog *lg, size_t k, int32_t ti)
{
    while (k < lg->n && lg->v[k].dst != -1 && lg->v[k].dst != ti)
        k += 1 + (size_t)lg->v[k].rest;
    return k;
}

/* The cycle the next word to tile ti from its receive's sender arrives at, or UINT64_MAX when the
 * sender's log holds none: its send cycle + spine delay + latency (a delay not set yet is 0 and
 * only grows, so a bound until the sender's round commits). Moves the receive's cursor to that
 * word: rx_arrivals passes over the others whenever they arrive, so they need not be looked at
 * again. */
static inline uint64_t rx_next_arrival(const ts_model *m, ipu_tile *t, int32_t ti)
{
    const ipu_wlog *lg = &m->t[t->rx_src].log;
    size_t k = t->rx_cursor = rx_next_own(lg, t->rx_cursor, ti);
    return k < lg->n ? lg->v[k].t + lg->v[k].delay + t->rx_lat : UINT64_MAX;
}

/* Words that reach tile ti at cycle c while its input selects their sender. */
static ts_status rx_arrivals(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t c, ts_err *err)
{
    ipu_tile *s = &m->t[t->rx_src];
    ipu_wlog *lg = &s->log;
    while (t->rx_left) {
        /* words to other tiles: their arrival is no order for ours */
        if ((t->rx_cursor = rx_next_own(lg, t->rx_cursor, (int32_t)ti)) >= lg->n)
            break;
        ipu_word *w = &lg->v[t->rx_cursor];
        uint64_t a = w->t + w->delay + t->rx_lat;
        if (a > c)
            break;
        t->rx_cursor++;
        if (a < c)
            continue;
        ts_status rc = rx_take(m, ti, t, w, c, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

/* rx_arrivals at every cycle a word reaches tile t from *cp on, while nothing else can happen on
 * the tile before h: no worker runs and the supervisor waits at `rxwait` for this receive (it
 * issues again only once the last word is in; h is the round's horizon) or cannot issue before
 * cycle h (its ready cycle, before the horizon: a send holding the port while words come in, a
 * delay). Stops at the cycle the receive completes (*cp that cycle: the supervisor may issue in
 * it), or at h when the next word arrives at or after it (*cp = h, the receive still armed). One pass over the sender's log, with what
 * rx_arrivals does at each cycle (cycle c takes the words that arrive at c and passes over those
 * that arrived before it) and the main loop between (next_event: the next cycle is the next
 * word's arrival, or h), so the same words at the same cycles. */
static ts_status rx_drain(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t *cp, uint64_t h, ts_err *err)
{
    uint64_t c = *cp;
    ipu_wlog *lg = &m->t[t->rx_src].log;
    size_t k = t->rx_cursor;
    ts_status rc = TS_OK;
    while (t->rx_left) {
        if ((k = rx_next_own(lg, k, (int32_t)ti)) >= lg->n) {
            c = h;
            break;
        }
        ipu_word *w = &lg->v[k];
        uint64_t a = w->t + w->delay + t->rx_lat;
        if (a > c) {
            if (a >= h) {
                c = h;
                break;
            }
            c = a;
        }
        k++;
        if (a < c)
            continue;
        if ((rc = rx_take(m, ti, t, w, c, err)) != TS_OK)
            break;
    }
    t->rx_cursor = k;
    *cp = c;
    return rc;
}

/* The next cycle >= c at which something can happen on tile t (fast mode), at most h. */
/* r mod W for r >= c, from cs = c mod W: no division when r is within W cycles of c (a
 * division costs tens of cycles, and this runs on every cycle a tile does not issue). */
static inline uint32_t slot_of(uint64_t r, uint64_t c, uint32_t cs, uint32_t W)
{
    if (r - c >= W)
        return (uint32_t)(r % W);
    uint32_t s = cs + (uint32_t)(r - c);
    return s >= W ? s - W : s;
}

static uint64_t next_event(const ts_model *m, ipu_tile *t, uint64_t c, uint32_t cs, uint64_t h)
{
    uint64_t best = h;
    uint32_t W = m->W;
    for (uint32_t w = 0; w < W; w++) {
        if (!(t->running >> w & 1))
            continue;
        uint64_t r = t->cx[1 + w].ready > c ? t->cx[1 + w].ready : c;
        uint32_t d = w + W - slot_of(r, c, cs, W); /* cycles to w's next turn, in [1, 2W) */
        uint64_t k = r + (d >= W ? d - W : d);
        if (k < best)
            best = k;
    }
    if (t->sup == SUP_RUN && sup_can_issue(m, t)) {
        uint64_t r = t->cx[0].ready > c ? t->cx[0].ready : c;
        uint32_t ks = slot_of(r, c, cs, W);
        for (uint64_t k = r; k < r + W && k < best; k++, ks = ks + 1 == W ? 0 : ks + 1)
            if (!(t->running >> ks & 1)) {
                best = k;
                break;
            }
    }
    if (t->rx_left) { /* the next word to this tile */
        uint64_t a = rx_next_arrival(m, t, (int32_t)(t - m->t));
        if (a < best)
            best = a < c ? c : a;
    }
    return best;
}

/* A receiver that stopped at the round's horizon with nothing to do but wait for its words
 * (the supervisor at `rxwait`, no worker running, a receive armed) can do nothing until the next
 * word to it arrives. Every word sent in the next round (at or after this round's horizon)
 * arrives after that round, so only words already in the sender's log can: the first of them to
 * this tile (as rx_arrivals and next_event find it, passing those to other tiles) arrives at
 * its send cycle + spine delay + latency or later (a delay not set yet is 0 and only grows).
 * ts_ipu_tile_run skips the tile for as long as that bound is past the round's horizon and the
 * sender's log has not grown, which is what running it would do: no issue, no arrival, the
 * tile's cycle brought to the horizon. */
static void park(const ts_model *m, ipu_tile *t, int32_t ti)
{
    t->rx_park = rx_next_arrival(m, t, ti);
    t->rx_park_n = m->t[t->rx_src].log.n;
}

/* How far a tile may run past the round's horizon when it does not read another tile's words:
 * bounded so that the kernel still sees progress (or a hang) this often. */
#define IPU_RUN_AHEAD 65536u

/* A tile must stay within the round's horizon while it reads other tiles' words: with a receive
 * armed, or when its supervisor is about to arm one. Everything else it does (compute, sends,
 * reaching a sync) depends on nothing another tile does in the same round, so it may run ahead:
 * its sends are committed at the round's end, and no receiver reads a word before the cycle it
 * arrives, at least a window after it left. */
static bool reads_others(const ipu_tile *t)
{
    return t->rx_left || t->sup_op == IPU_OP_RECV || t->sup_op == IPU_OP_RXSEL;
}

/* Closed form for repeat loops. When every slot belongs to a running worker (so the supervisor
 * cannot issue), no receive is armed (so tile memory changes only by the workers' own stores) and
 * every worker is inside a repeat body that stores nothing and loads no coefficients, the workers
 * cannot see each other for as long as they all stay in their bodies: worker w issues at cycle
 * c + ((w - c) mod W) + j W for j = 0, 1, ... (loads are ready by its next turn because
 * tile.load_latency <= W). So the next k turns can be run worker by worker, each with its exact
 * issue cycles, and give what cycle-by-cycle issue gives. Returns k (0 when the form does not
 * apply), at most what keeps the tile below `limit`. (Other bodies, and the code around them,
 * run in workers_run.) */
static uint64_t body_issues(const ipu_tile *t, uint32_t from, uint32_t to)
{
    uint64_t n = 0;
    for (uint32_t p = from; p < to; p++)
        n += !t->code[p].member;
    return n;
}

static uint64_t closed_form_turns(const ts_model *m, const ipu_tile *t, uint64_t c, uint64_t limit)
{
    const uint32_t W = m->W;
    uint64_t k = limit > c ? (limit - c) / W : 0;
    uint32_t slot = (uint32_t)(c % W);
    for (uint32_t w = 0; w < W && k >= 2; w++) {
        const ipu_ctx *x = &t->cx[1 + w];
        if (!x->rpt_left || !t->code[x->rpt_start - 1].pure || x->pc < x->rpt_start || x->pc >= x->rpt_end)
            return 0;
        if (x->ready > c + (w + W - slot) % W)
            return 0;
        uint64_t rem = (uint64_t)(x->rpt_end - x->pc) + (uint64_t)(x->rpt_left - 1) * (x->rpt_end - x->rpt_start);
        if (t->code[x->rpt_start - 1].bundled) /* issues, not instructions: a bundle is one */
            rem = body_issues(t, x->pc, x->rpt_end) +
                  (uint64_t)(x->rpt_left - 1) * body_issues(t, x->rpt_start, x->rpt_end);
        if (rem < k)
            k = rem;
    }
    return k >= 2 ? k : 0;
}

/* Workers run, no receive is armed and the supervisor cannot issue until one of them exits
 * (every slot is a running worker's, or the supervisor waits for the workers at `sync`, `runall`
 * or `halt`, or for a free one at `run`): nothing arrives, a worker cannot arm a receive or stall
 * past its next turn (its longest wait is a load's, tile.load_latency <= W), so each cycle's
 * worker, if it runs, issues when it is ready, and nothing else happens: cycle-by-cycle issue
 * without the barrel's other tests (its supervisor, receive and idle-jump checks, and the whole
 * executor inlined, cost more than most instructions). Runs from *cp to `limit`, or to the cycle
 * after a worker exits or the last one enters a repeat body; *cp is where it stopped. */
static ts_status workers_run(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t *cp, uint64_t limit, ts_err *err)
{
    const uint32_t W = m->W, run0 = t->running;
    uint64_t c = *cp, c0 = c;
    uint32_t w = (uint32_t)(c % W);
    ts_status rc = TS_OK;
    while (c < limit) {
        if (run0 >> w & 1 && t->cx[1 + w].ready <= c) {
            bool slow = false;
            rc = body_issue(m, ti, t, 1 + (int)w, c, err, &slow);
            if (rc != TS_OK)
                return rc;
            /* a worker ended, or all of them are in repeat bodies after an op that body_issue
             * does not do itself (a `rpt` is one): back to the caller, which runs pure bodies
             * worker by worker (closed_form_run) */
            if (t->running != run0 || (slow && t->in_rpt == m->all_workers)) {
                c++;
                break;
            }
        }
        c++;
        if (++w == W)
            w = 0;
    }
    t->cf_turns += (c - c0) / W;
    *cp = c;
    return rc;
}

/* Run k turns in closed form, worker by worker (every body pure: see closed_form_turns). An error
 * stops its worker; the earliest one over all workers is reported, as cycle-by-cycle issue would. */
static ts_status closed_form_run(ts_model *m, uint32_t ti, ipu_tile *t, uint64_t c, uint64_t k, ts_err *err)
{
    const uint32_t W = m->W;
    uint32_t slot = (uint32_t)(c % W);
    ts_status first = TS_OK;
    t->cf_turns += k;
    for (uint32_t w = 0; w < W; w++) {
        uint64_t at = c + (w + W - slot) % W;
        for (uint64_t j = 0; j < k; j++, at += W) {
            ts_err later;
            ts_err *dst = err;
            if (first != TS_OK) {
                ts_err_init(&later);
                dst = &later;
            }
            bool slow = false;
            ts_status rc = body_issue(m, ti, t, 1 + (int)w, at, dst, &slow);
            if (rc == TS_OK)
                continue;
            if (first == TS_OK) {
                first = rc;
            } else if (later.cycle < err->cycle) {
                ts_err_free(err);
                *err = later;
            } else {
                ts_err_free(&later);
            }
            break;
        }
    }
    return first;
}

/* Advance tile ti to cycle h, or beyond while it reads nothing from other tiles, until it
 * blocks at a sync or halts. */
ts_status ts_ipu_tile_run(ts_model *m, uint32_t ti, uint64_t h, ts_err *err)
{
    ipu_tile *t = &m->t[ti];
    uint64_t c = m->tnow[ti];
    if (t->rx_park_n != SIZE_MAX) { /* parked at a receive in the round before */
        if (t->rx_park_n == m->t[t->rx_src].log.n && t->rx_park >= h && c < h) {
            m->tnow[ti] = h; /* no new word, and none of the old ones arrives before h */
            return TS_OK;
        }
        t->rx_park_n = SIZE_MAX;
    }
    const uint32_t W = m->W;
    const bool lock = m->lockstep;
    uint64_t cap = lock ? h : h + IPU_RUN_AHEAD;
    if (cap > m->act_cap) /* frames: no tile passes the window boundary (h is never past it) */
        cap = m->act_cap;
    uint32_t slot = (uint32_t)(c % W);
    const bool cf = m->closed_form;
    const uint32_t all = m->all_workers;
    /* where the tile stops: the horizon while it reads other tiles' words (ro), else the cap
     * (cap >= h); ro changes only when the supervisor issues or a receive completes */
    bool ro = reads_others(t);
    uint64_t stop = ro ? h : cap;
    while (t->sup == SUP_RUN) {
        if (c >= stop)
            break;
        if (t->rx_left) {
            /* only words can come: the supervisor waits at `rxwait`, or cannot issue before its
             * ready cycle (a send holding its port, a delay), and no worker runs */
            const bool rxw = t->sup_op == IPU_OP_RXWAIT;
            if (!lock && !t->running && (rxw || t->cx[0].ready > c)) {
                uint64_t c0 = c;
                ts_status rc = rx_drain(m, ti, t, &c, rxw || t->cx[0].ready > h ? h : t->cx[0].ready, err);
                if (rc != TS_OK)
                    return rc;
                slot = slot_of(c, c0, slot, W);
                if (t->rx_left) /* at the horizon or the supervisor's ready cycle, still waiting */
                    continue;
            } else {
                ts_status rc = rx_arrivals(m, ti, t, c, err);
                if (rc != TS_OK)
                    return rc;
            }
            ro = reads_others(t);
            stop = ro ? h : cap;
        }
        if (cf && t->running && t->rx_left && c < stop && (t->running == all || !sup_can_issue(m, t))) {
            /* workers run and the supervisor cannot issue while the receive waits for its next
             * word: up to that word's arrival (a bound: a spine delay not set yet is 0) nothing
             * but the workers acts on the tile, as in workers_run */
            uint64_t lim = rx_next_arrival(m, t, (int32_t)ti);
            if (lim > stop)
                lim = stop;
            if (lim > c + 1) {
                ts_status rc = workers_run(m, ti, t, &c, lim, err);
                if (rc != TS_OK)
                    return rc;
                slot = (uint32_t)(c % W);
                continue;
            }
        }
        if (cf && t->running && !t->rx_left && c < stop && (t->running == all || !sup_can_issue(m, t))) {
            uint64_t k = 0, lim = stop, c0 = c;
            ts_status rc = in_step_run(m, ti, t, &c, stop, err);
            if (rc != TS_OK)
                return rc;
            if (c != c0) {
                t->step_at = slot + 1;
                slot = (uint32_t)(c % W);
                continue;
            }
            if (c + W > stop) /* the round's end: its last cycles one by one, the turns' slot kept */
                ;
            else if (t->step_at && t->step_at != slot + 1) /* in step from another slot: up to it */
                lim = c + (t->step_at - 1 + W - slot) % W;
            else
                t->step_at = 0;
            if (lim == stop && t->in_rpt == all && t->running == all)
                k = closed_form_turns(m, t, c, stop);
            if (k) {
                rc = closed_form_run(m, ti, t, c, k, err);
                c += k * W;
            } else {
                rc = workers_run(m, ti, t, &c, lim, err);
            }
            if (rc != TS_OK)
                return rc;
            slot = (uint32_t)(c % W);
            continue;
        }
        int ctx = -1;
        if (t->running >> slot & 1) {
            if (t->cx[1 + slot].ready <= c)
                ctx = 1 + (int)slot;
        } else if (t->cx[0].ready <= c && sup_can_issue(m, t)) {
            ctx = 0;
        }
        bool issued = ctx >= 0;
        if (issued) {
            ts_status rc = exec(m, ti, t, ctx, c, err);
            if (ctx == 0)
                ipu_sup_op(t);
            if (rc != TS_OK)
                return rc;
            if (ctx == 0) {
                ro = reads_others(t);
                stop = ro ? h : cap;
            }
        }
        c++;
        if (++slot == W)
            slot = 0;
        if (!issued && !lock && t->sup == SUP_RUN) {
            uint64_t bound = ro ? (c > h ? c : h) : cap;
            uint64_t n = next_event(m, t, c, slot, bound);
            if (n != c) {
                slot = slot_of(n, c, slot, W);
                c = n;
            }
        }
    }
    m->tnow[ti] = t->sup == SUP_RUN && c < h ? h : c;
    if (!lock && t->sup == SUP_RUN && c == h && t->rx_left && !t->running && t->sup_op == IPU_OP_RXWAIT)
        park(m, t, (int32_t)ti);
    return TS_OK;
}
