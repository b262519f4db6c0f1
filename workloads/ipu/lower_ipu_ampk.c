/* workloads/ipu/lower_ipu_ampk.c — the AMP kernel whose coefficient loads serve all the workers.
 *
 * lwi_emit_mm's routine (lower_ipu_matmul.c) has every worker load the coefficients of each input
 * step before its own AMP op: U/2 + U/2 + 2 issues per op, so the AMP is busy one cycle in 6 at
 * best (f32 on MK1). The coefficients are tile state and the barrel is exact (worker w issues only
 * in the cycles = w mod W, docs/ipu.md), so one load can serve every worker if each issues the
 * right instruction in the right cycle. Here a coefficient set (the nl = U/2 16-byte loads of one
 * input step of one group of U outputs) takes nl + W consecutive cycles: its nl loads, then the W
 * workers' AMP ops on it, each on the worker's own row. Counting from a cycle that is worker 0's,
 * cycle c belongs to set c / (nl + W); worker w's i-th issue is cycle W i + w, which is a load of
 * the set (slot c mod (nl + W)) or its AMP op. On MK1 in f32 (U 4, nl 2, W 6) every worker issues
 * 4 instructions per 3 sets and the AMP is busy 6 cycles in 8 (75 %); in f16 (U 8, nl 4) 6 in 10,
 * less one issue per 6 sets for the pointer steps that do not fit the bundles (55 %).
 *
 * What makes it exact:
 * - the workers are aligned first: runall starts them one barrel turn apart or two; each stores
 *   its number to a shared word and reads it back (every worker reads the number of the last to
 *   start); those that started a turn early issue one nop more;
 * - from there every worker issues the same number of instructions between any two points, none
 *   stalls (loads are ready by the next turn: tile.load_latency <= W, else the kernel is refused),
 *   and the code that differs between workers (which issue is a load) is in one copy per worker,
 *   reached by a dispatch whose length is the same for all;
 * - a body is B super-periods (lcm(nl + W, W) cycles each; B makes its sets even): at its end
 *   every worker has issued the same count, so the row and group code between bodies (zeroing,
 *   the first input loads, reading and storing the sums) shifts every worker alike;
 * - each AMP op is bundled with a main-pipeline instruction: on odd sets the 128-bit load of the
 *   next body's two input pairs, on even sets the step of a coefficient pointer (one pointer per
 *   load of the body, stepped once a body); steps that do not fit follow the body.
 * Used where the input step count of a group is a whole number of bodies, the rows are 16-byte
 * aligned in interleaved memory and the tile loads 16 bytes a cycle; lwi_emit_mm's routine
 * otherwise. With a table (planner (b): one routine for the steps of a kind), the addresses come
 * from it and its last word is the repeat count, bodies - 1 (lwi_mm_shared_count), not k.
 *
 * More than 8 units (MK2's 16 f16 units: U/2 = 8 loads a set, 14 cycles, the AMP busy 6 in 14 at
 * 64 MACs an op where 8 units are busy 6 in 11 at 32): a worker would need a pointer per load of a
 * body (8), more than it has. There the coefficient blocks of a group lie worker by worker (worker
 * v's loads of the group's bodies one after another, in the order it issues them; lwi_amp_wchunk)
 * and ld128putcsstep post-increments one pointer ($m5), as the published ld128putcs steps its
 * address ($CCCSLOAD) by 16: no pointer steps in the body, one between groups ($m6, from the
 * bodies of the step), the worker's start in each row from $m7.
 */
#include "workloads/ipu/lower_ipu_int.h"

#define AK_MAXW 16   /* workers the dispatch handles */
#define AK_MAXP 4    /* coefficient pointers ($m5..$m8) */
#define AK_MAXN 64   /* issues in a body */

/* The schedule of one shape. */
typedef struct ak {
    uint32_t W, nl, len;    /* workers, loads per set, cycles per set (nl + W) */
    uint32_t S, I;          /* a super-period: S sets, I issues per worker */
    uint32_t nA, nP, nb;    /* a body: nA sets (AMP ops per worker), nP loads per worker; bodies a group */
    int32_t setb, bodyb;    /* coefficient bytes per set and per body */
} ak;

/* One worker's body: per issue a load (slot) or an AMP op (set), and the pointer a bundle steps. */
typedef struct ak_body {
    uint32_t n;
    uint8_t load[AK_MAXN], arg[AK_MAXN];
    int8_t step[AK_MAXN];    /* AMP op: the pointer its bundle steps, -1 none; load: its pointer */
    int64_t init[AK_MAXP];   /* each pointer's first value, from the group's coefficients */
    uint32_t extra;          /* pointers stepped after the body: nP - extra .. nP - 1 */
} ak_body;

static uint32_t gcd32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The schedule of W workers on U units without the group's k (ak_plan's). */
static bool ak_shape(uint32_t W, uint32_t U, ak *k);

/* The schedule of m on this tile; false when the kernel does not apply. */
static bool ak_plan(const lw *L, const mm_args *m, ak *k)
{
    const ts_ipu_target *tg = &L->p->target;
    uint32_t W = L->workers, U = m->units;
    if (m->taps || !m->rows || !m->nq_real || (U > 8 && m->out16) || !ak_shape(W, U, k))
        return false;
    if (tg->load_latency > W || tg->load_bytes < 16) /* a stalled worker would miss its slot */
        return false;
    if (!m->kp || m->kp % k->nA)
        return false;
    k->nb = m->kp / k->nA;
    return m->a % 16 == 0 && m->a_stride % 16 == 0 && m->a >= tg->interleaved_base;
}

static bool ak_shape(uint32_t W, uint32_t U, ak *k)
{
    if (U < 2 || U > 16 || U % 2 || W < 2 || W > AK_MAXW)
        return false;
    k->W = W;
    k->nl = U / 2;
    k->len = k->nl + W;
    uint32_t P = k->len / gcd32(k->len, W) * W;
    k->S = P / k->len;
    k->I = P / W;
    uint32_t B = k->S % 2 ? 2 : 1;
    k->nA = B * k->S;
    k->nP = B * (k->I - k->S);
    if ((U <= 8 && k->nP > AK_MAXP) || B * k->I > AK_MAXN || 2 * k->nA > 16)
        return false;
    k->setb = (int32_t)(16 * k->nl);
    k->bodyb = k->setb * (int32_t)k->nA;
    return true;
}

bool lwi_amp_wchunk(uint32_t W, uint32_t U, uint64_t steps, uint64_t k2, uint32_t pos, uint64_t *chunk)
{
    ak k;
    if (U <= 8 || !ak_shape(W, U, &k) || pos >= k.nl || steps % k.nA || k2 >= steps)
        return false;
    uint64_t b = k2 / k.nA, nb = steps / k.nA;
    uint32_t c = (uint32_t)(k2 % k.nA) * k.len + pos, v = c % W, j = 0; /* its cycle in the body, its worker */
    for (uint32_t d = v; d < c; d += W) /* the worker's loads before it in the body */
        j += d % k.len < k.nl;
    *chunk = ((uint64_t)v * nb + b) * k.nP + j;
    return true;
}

/* Worker v's body: which issue loads which slot of which set, and where its pointers step. */
static void ak_body_plan(const ak *k, uint32_t v, ak_body *b)
{
    uint32_t nL = 0, at[AK_MAXP] = {0};
    b->n = k->nA / k->S * k->I;
    b->extra = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        uint32_t c = k->W * i + v, set = c / k->len, pos = c % k->len;
        b->load[i] = pos < k->nl;
        b->arg[i] = (uint8_t)(pos < k->nl ? pos : set);
        b->step[i] = -1;
        if (k->nl > 4) { /* one post-incremented pointer (ld128putcsstep) */
            b->step[i] = b->load[i] ? 0 : -1;
            continue;
        }
        if (pos < k->nl) {
            b->step[i] = (int8_t)nL;
            at[nL] = i;
            b->init[nL++] = (int64_t)set * k->setb + 16 * pos;
        }
    }
    if (k->nl > 4)
        return;
    uint32_t p = 0;
    for (uint32_t i = 0; i < b->n && p < nL; i++)
        if (!b->load[i] && b->arg[i] % 2 == 0) {
            b->step[i] = (int8_t)p;
            if (i < at[p]) /* stepped before its load in the body: starts a body back */
                b->init[p] -= k->bodyb;
            p++;
        }
    b->extra = nL - p;
}

/* How a body's odd sets load: not at all, the next body's input pairs (through $m4, stepped), or
 * the next group's first (from the row's start, $m2; ak_prefetch). */
enum { AK_NOLOAD, AK_LOAD, AK_NEXT };

/* The body; its odd sets' bundles load as `loads` says. */
static void ak_emit_body(lw *L, uint32_t t, const mm_args *m, const ak *k, const ak_body *b, int loads)
{
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->load[i]) {
            if (k->nl > 4)
                W(t, LD128PUTCSSTEP, RM(5), b->arg[i], 0);
            else
                W(t, LD128PUTCS, RM(5 + b->step[i]), b->arg[i], 0);
            continue;
        }
        uint32_t s = b->arg[i];
        bool ld = loads != AK_NOLOAD && s % 2, st = !ld && s % 2 == 0 && b->step[i] >= 0;
        if (ld || st)
            W(t, BUNDLE, 0, 0, 0);
        if (ld && loads == AK_NEXT)
            W(t, LD128, RA(4 * (s / 2)), RM(2), (int32_t)(16 * (s / 2)));
        else if (ld)
            W(t, LD128STEP, RA(4 * (s / 2)), RM(4), 16);
        else if (st)
            W(t, ADDI, RM(5 + b->step[i]), RM(5 + b->step[i]), k->bodyb);
        if (m->half)
            W(t, F16V4AMP, RA(2 * s), 0, 0);
        else
            W(t, F32V2AMP, RA(2 * s), 0, 0);
        if (ld || st)
            W(t, BUNDLE_END, 0, 0, 0);
    }
    for (uint32_t p = k->nP - b->extra; p < k->nP && b->extra; p++)
        W(t, ADDI, RM(5 + p), RM(5 + p), k->bodyb);
}

/* A whole group's sums out (lwi_emit_group_out's work in fewer issues): the pairs read from the
 * AMP, each in a bundle with the 64-bit load of its bias or partial sums through $m10, added, and
 * stored 64 bits at a time through $m11, each store in a bundle with the next pair's add: U + 1
 * issues with bias or partial sums (U / 2 + 1 without) where lwi_emit_group_out takes 2U + 2
 * (3U / 2 + 1). Only for f32 sums whose U outputs lie one after the other, 8-byte aligned (every
 * allocation is 16-byte aligned, so a table's other steps are too); false (nothing emitted)
 * otherwise. */
static bool ak_group_out16(lw *L, uint32_t t, const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units, n = U / 2;
    if (nstore != U || U % 4 || m->out_u != 2 || m->out_q != 2 * (int64_t)U || m->out % 8 || m->out_row % 8 ||
        ((m->bias || m->acc) && (m->acc ? m->acc % 8 || m->acc_row % 8 : m->bias % 8)))
        return false;
    if (m->bias || m->acc) {
        for (uint32_t s = 0; s < n; s++) {
            W(t, BUNDLE, 0, 0, 0);
            W(t, LD64STEP, RA(8 + 2 * s), RM(10), 8);
            W(t, AMPGET, RA(2 * s), (int32_t)s, 0);
            W(t, BUNDLE_END, 0, 0, 0);
        }
        for (uint32_t s = 0; s < n; s++)
            W(t, F32V2ADD, RA(2 * s), RA(2 * s), RA(8 + 2 * s));
    }
    /* the halves of pairs 2h and 2h + 1 in $a(8 + 2h), $a(9 + 2h), stored 64 bits at a time */
    for (uint32_t h = 0; h < n / 2; h++) {
        bool got = m->bias || m->acc;
        if (!got) {
            W(t, AMPGET, RA(4 * h), (int32_t)(2 * h), 0);
            W(t, AMPGET, RA(4 * h + 2), (int32_t)(2 * h + 1), 0);
        }
        W(t, F32V2TOF16, RA(8 + 2 * h), RA(4 * h), 0);
        bool last = h + 1 == n / 2;
        if (h && !last)
            W(t, ST64STEP, RA(8 + 2 * (h - 1)), RM(11), 8);
        if (h && last) { /* the previous store in a bundle with this pair's second conversion */
            W(t, BUNDLE, 0, 0, 0);
            W(t, ST64STEP, RA(8 + 2 * (h - 1)), RM(11), 8);
            W(t, F32V2TOF16, RA(9 + 2 * h), RA(4 * h + 2), 0);
            W(t, BUNDLE_END, 0, 0, 0);
        } else
            W(t, F32V2TOF16, RA(9 + 2 * h), RA(4 * h + 2), 0);
    }
    W(t, ST64STEP, RA(8 + 2 * (n / 2 - 1)), RM(11), 8);
    return true;
}

/* Whether the groups of m prefetch: f16 outputs without bias or partial sums, stored 64 bits at a
 * time (ak_group_out16's layout). The last body of a group loads the next group's first input pairs
 * from the row's start (its odd sets' bundles, which otherwise load nothing), the group's sums go
 * out through $a12..$a15 so those inputs stay, and a row loads its first group's inputs before its
 * groups: 1 + sets / 2 issues fewer a group where the prologue loaded them. */
static bool ak_prefetch(const mm_args *m)
{
    uint32_t U = m->units;
    return m->half && m->out16 && !m->bias && !m->acc && U % 4 == 0 && m->out_u == 2 &&
           m->out_q == 2 * (int64_t)U && m->out % 8 == 0 && m->out_row % 8 == 0;
}

/* ak_group_out16 for a prefetching group: the U / 2 pairs through $a12..$a15, 2U + 1 / 2 issues. */
static void ak_group_out_pf(lw *L, uint32_t t, const mm_args *m)
{
    uint32_t n = m->units / 2;
    for (uint32_t h = 0; h < n / 2; h++) {
        uint32_t a = h % 2 ? 14 : 12, b = h % 2 ? 12 : 14; /* this half's pairs land in $a(a), $a(b) */
        if (!h)
            W(t, AMPGET, RA(a), 0, 0);
        W(t, AMPGET, RA(b), (int32_t)(2 * h + 1), 0);
        W(t, F32V2TOF16, RA(a), RA(a), 0);
        W(t, F32V2TOF16, RA(a + 1), RA(b), 0);
        if (h + 1 < n / 2) { /* the store in a bundle with the next half's first read */
            W(t, BUNDLE, 0, 0, 0);
            W(t, ST64STEP, RA(a), RM(11), 8);
            W(t, AMPGET, RA(b), (int32_t)(2 * h + 2), 0);
            W(t, BUNDLE_END, 0, 0, 0);
        } else
            W(t, ST64STEP, RA(a), RM(11), 8);
    }
}

/* Whether ak_group_out takes a group of nstore outputs of f32 sums (else lwi_emit_group_out). */
static bool ak_out32(const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units;
    return !m->out16 && nstore == U && m->out_u == 4 && m->out_q == 4 * (int64_t)U && m->out % 8 == 0 &&
           m->out_row % 8 == 0 && (!(m->bias || m->acc) || (m->acc ? m->acc % 8 == 0 && m->acc_row % 8 == 0 : m->bias % 8 == 0));
}

/* The bytes a whole group's sums out steps $m11 by where ak_group_out, ak_group_out16 or
 * ak_group_out_pf take them (their stores, 64 bits each, one after the other: U f32 sums or U
 * halves; $m10, the partial sums read, 4U with acc), 0 where lwi_emit_group_out does. */
static int32_t ak_out_bytes(const mm_args *m)
{
    uint32_t U = m->units;
    if (ak_out32(m, U))
        return (int32_t)(4 * U);
    bool o16 = m->out16 && U % 4 == 0 && m->out_u == 2 && m->out_q == 2 * (int64_t)U && m->out % 8 == 0 &&
               m->out_row % 8 == 0 &&
               (!(m->bias || m->acc) || (m->acc ? m->acc % 8 == 0 && m->acc_row % 8 == 0 : m->bias % 8 == 0));
    return o16 ? (int32_t)(2 * U) : 0;
}

static bool ak_group_out(lw *L, uint32_t t, const mm_args *m, uint32_t nstore)
{
    uint32_t U = m->units, n = U / 2;
    if (m->out16)
        return ak_group_out16(L, t, m, nstore);
    if (!ak_out32(m, nstore))
        return false;
    if (!(m->bias || m->acc)) {
        W(t, AMPGET, RA(0), 0, 0);
        for (uint32_t s = 1; s < n; s++) {
            W(t, BUNDLE, 0, 0, 0);
            W(t, ST64STEP, RA(2 * (s - 1)), RM(11), 8);
            W(t, AMPGET, RA(2 * s), (int32_t)s, 0);
            W(t, BUNDLE_END, 0, 0, 0);
        }
        W(t, ST64STEP, RA(2 * (n - 1)), RM(11), 8);
        return true;
    }
    for (uint32_t h = 0; h < n; h += 4) { /* four pairs at a time ($a0..$a7 and $a8..$a15) */
        uint32_t c = n - h < 4 ? n - h : 4;
        for (uint32_t s = 0; s < c; s++) {
            W(t, BUNDLE, 0, 0, 0);
            W(t, LD64STEP, RA(8 + 2 * s), RM(10), 8);
            W(t, AMPGET, RA(2 * s), (int32_t)(h + s), 0);
            W(t, BUNDLE_END, 0, 0, 0);
        }
        W(t, F32V2ADD, RA(0), RA(0), RA(8));
        for (uint32_t s = 1; s < c; s++) {
            W(t, BUNDLE, 0, 0, 0);
            W(t, ST64STEP, RA(2 * (s - 1)), RM(11), 8);
            W(t, F32V2ADD, RA(2 * s), RA(2 * s), RA(8 + 2 * s));
            W(t, BUNDLE_END, 0, 0, 0);
        }
        W(t, ST64STEP, RA(2 * (c - 1)), RM(11), 8);
    }
    return true;
}

/* One group of U outputs (nstore stored) of the row at $m2: zeroed, the first body's inputs
 * loaded, the bodies (the last without loads), the sums out through $m10 and $m11; `last`: the
 * row's last group (after it the row sets the coefficient pointer again). */
static void ak_group(lw *L, uint32_t t, const mm_args *m, const ak *k, const ak_body *b, uint32_t nstore, bool last)
{
    bool pf = ak_prefetch(m);
    W(t, BUNDLE, 0, 0, 0);
    if (pf) /* the first body's inputs are in: the row's start and the sets' pairs after it */
        W(t, ADDI, RM(4), RM(2), (int32_t)(16 * (k->nA / 2)));
    else
        W(t, MOV, RM(4), RM(2), 0);
    W(t, AMPZERO, 0, 0, 0);
    W(t, BUNDLE_END, 0, 0, 0);
    for (uint32_t q = 0; !pf && q < k->nA / 2; q++)
        W(t, LD128STEP, RA(4 * q), RM(4), 16);
    if (m->tab || k->nb > 1) { /* the table's count ($m13, 0 skips), or nb - 1 */
        size_t r = m->tab ? W(t, RPT, RM(13), 0, 0) : W(t, RPTI, (int32_t)k->nb - 1, 0, 0);
        size_t s0 = LWT(t).wrk.n;
        ak_emit_body(L, t, m, k, b, AK_LOAD);
        if (r < LWT(t).wrk.n)
            LWT(t).wrk.v[r].a[1] = (int32_t)(LWT(t).wrk.n - s0);
    }
    ak_emit_body(L, t, m, k, b, pf ? AK_NEXT : AK_NOLOAD);
    if (pf && nstore == m->units)
        ak_group_out_pf(L, t, m);
    else if (!ak_group_out(L, t, m, nstore))
        lwi_emit_group_out(L, t, m, nstore, RM(10), RM(11));
    if (k->nl > 4 && !last) /* the pointer past the other workers' blocks of this group */
        W(t, ADD, RM(5), RM(5), RM(6));
}

/* r := the routine's address word at byte off of the table ($m0), or v when it has none. */
static void ak_word(lw *L, uint32_t t, const mm_args *m, int32_t r, int32_t off, uint64_t v)
{
    if (m->tab)
        W(t, LD32, r, RM(0), off);
    else
        W(t, SETZI, r, (int32_t)v, 0);
}

/* Worker v's copy: its rows (as lwi_emit_mm's), per row its coefficient pointers set and the
 * groups in turn. */
static void ak_variant(lw *L, uint32_t t, const mm_args *m, const ak *k, uint32_t v)
{
    ak_body b;
    ak_body_plan(k, v, &b);
    uint32_t rw = (uint32_t)ts_geom_cdiv(m->rows, k->W), U = m->units;
    uint32_t full = (uint32_t)(m->nq_real / U), tail = (uint32_t)(m->nq_real % U);
    lwi_emit_start_row(L, t, m->rows, rw);
    W(t, MULI, RM(2), RM(1), (int32_t)m->a_stride);
    ak_word(L, t, m, RM(3), 0, m->a);
    W(t, ADD, RM(2), RM(2), RM(3));
    W(t, MULI, RM(3), RM(1), (int32_t)m->out_row);
    ak_word(L, t, m, RM(4), 8, m->out);
    W(t, ADD, RM(3), RM(3), RM(4));
    if (m->acc) {
        W(t, MULI, RM(12), RM(1), (int32_t)m->acc_row);
        ak_word(L, t, m, RM(4), 12, m->acc);
        W(t, ADD, RM(12), RM(12), RM(4));
    }
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    if (m->tab) { /* $m15 := w, $m14 := bias, $m13 := the repeat count */
        W(t, LD32, RM(15), RM(0), 4);
        W(t, LD32, RM(14), RM(0), 16);
        W(t, LD32, RM(13), RM(0), 20);
    }
    bool post = k->nl > 4; /* blocks worker by worker: $m7 this worker's start, $m6 the step a group */
    int32_t wb = (int32_t)(16 * k->nP);
    if (post && m->tab) {
        W(t, ADDI, RM(7), RM(13), 1);
        W(t, MULI, RM(7), RM(7), wb);
        W(t, MULI, RM(6), RM(7), (int32_t)k->W - 1);
        W(t, MULI, RM(7), RM(7), (int32_t)v);
    } else if (post)
        W(t, SETZI, RM(6), (int32_t)((k->W - 1) * k->nb) * wb, 0);
    /* own: a row of one group whose sums out step $m11 (and $m10 with acc) by a known count: those
     * pointers run on from row to row, set once here, where each row set them from $m3 ($m12) */
    int32_t ob = full == 1 && !tail ? ak_out_bytes(m) : 0;
    bool own = ob != 0;
    if (own) {
        W(t, MOV, RM(11), RM(3), 0);
        if (m->acc)
            W(t, MOV, RM(10), RM(12), 0);
    }
    size_t row = LWT(t).wrk.n;
    if (post && m->tab) /* the one pointer at this worker's blocks */
        W(t, ADD, RM(5), RM(15), RM(7));
    else if (post)
        W(t, SETZI, RM(5), (int32_t)(m->w + (uint64_t)v * k->nb * (uint64_t)wb), 0);
    for (uint32_t p = 0; !post && p < k->nP; p++)
        if (m->tab)
            W(t, ADDI, RM(5 + p), RM(15), (int32_t)b.init[p]);
        else
            W(t, SETZI, RM(5 + p), (int32_t)((int64_t)m->w + b.init[p]), 0);
    if (m->acc && !own)
        W(t, MOV, RM(10), RM(12), 0);
    else if (m->bias && m->tab)
        W(t, MOV, RM(10), RM(14), 0);
    else if (m->bias)
        W(t, SETZI, RM(10), (int32_t)m->bias, 0);
    if (!own)
        W(t, MOV, RM(11), RM(3), 0);
    for (uint32_t q = 0; ak_prefetch(m) && q < k->nA / 2; q++) /* the first group's inputs */
        W(t, LD128, RA(4 * q), RM(2), (int32_t)(16 * q));
    if (full == 1) /* one group: no loop, and no pointer step after it (3 issues a row fewer) */
        ak_group(L, t, m, k, &b, U, !tail);
    else if (full) {
        W(t, SETZI, RM(9), (int32_t)full - 1, 0);
        size_t q = LWT(t).wrk.n;
        ak_group(L, t, m, k, &b, U, false);
        W(t, BRNZDEC, RM(9), (int32_t)q, 0);
    }
    if (tail)
        ak_group(L, t, m, k, &b, tail, true);
    W(t, ADDI, RM(2), RM(2), (int32_t)m->a_stride);
    if (own)
        W(t, ADDI, RM(11), RM(11), (int32_t)(m->out_row - ob));
    else
        W(t, ADDI, RM(3), RM(3), (int32_t)m->out_row);
    if (m->acc && own)
        W(t, ADDI, RM(10), RM(10), (int32_t)(m->acc_row - 4 * (int64_t)U));
    else if (m->acc)
        W(t, ADDI, RM(12), RM(12), (int32_t)m->acc_row);
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
}

/* The workers aligned: each stores its number to the output's first word (the kernel writes it
 * later) and reads back that of the last to start; those that started before it issue a nop. */
static void ak_align(lw *L, uint32_t t, const mm_args *m)
{
    lw_code *c = &LWT(t).wrk;
    ak_word(L, t, m, RM(13), 8, m->out);
    W(t, GET, RM(1), TS_IPU_CSR_WORKER, 0);
    W(t, ST32, RM(1), RM(13), 0);
    W(t, LD32, RM(14), RM(13), 0);
    W(t, CMPULT, RM(14), RM(14), RM(1));
    size_t br = W(t, BRZ, RM(14), 0, 0);
    W(t, NOP, 0, 0, 0);
    if (br < c->n)
        c->v[br].a[1] = (int32_t)c->n;
}

uint32_t lwi_mm_shared_count(const lw *L, const mm_args *m)
{
    ak k;
    return ak_plan(L, m, &k) ? k.nb : 0;
}

bool lwi_emit_mm_shared(lw *L, uint32_t t, const mm_args *m)
{
    ak k;
    if (!ak_plan(L, m, &k))
        return false;
    lw_code *c = &LWT(t).wrk;
    ak_align(L, t, m);
    /* dispatch: worker v takes 2v + 1 issues to its copy (the last 2W - 2), then nops to 2W - 1 */
    size_t to[AK_MAXW], end[AK_MAXW];
    W(t, GET, RM(14), TS_IPU_CSR_WORKER, 0);
    for (uint32_t v = 0; v + 1 < k.W; v++) {
        to[v] = W(t, BRZ, RM(14), 0, 0);
        W(t, ADDI, RM(14), RM(14), -1);
    }
    for (uint32_t n = 0; n < k.W; n++) { /* the last worker's copy first: it falls through */
        uint32_t v = (n + k.W - 1) % k.W;
        if (v + 1 < k.W && to[v] < c->n)
            c->v[to[v]].a[1] = (int32_t)c->n;
        for (uint32_t p = v + 1 < k.W ? 2 * (k.W - 1 - v) : 1; p > 0; p--)
            W(t, NOP, 0, 0, 0);
        ak_variant(L, t, m, &k, v);
        if (n + 1 < k.W) /* every copy but the last emitted goes on after the routine */
            end[n] = W(t, BR, 0, 0, 0);
    }
    for (uint32_t n = 0; n + 1 < k.W; n++)
        if (end[n] < c->n)
            c->v[end[n]].a[0] = (int32_t)c->n;
    return true;
}
