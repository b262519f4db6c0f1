/* arch/wse/wse_inline.h — the small helpers on the model's state that several of the model's files
 * use every cycle: SRAM and binary32 words, bands, zones and active lists, live queues and delay
 * lines, stall counts and the quiet test. They are static inline so that the model's split into
 * files costs the cycle loop no call.
 */
#ifndef TS_ARCH_WSE_INLINE_H
#define TS_ARCH_WSE_INLINE_H

#include "arch/wse/wse_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"

/* ------------------------------------------------------------------------------------------ */
/* SRAM and binary32 */

/* Tile t's SRAM, allocated (zeroed) on its first touch; NULL when out of memory. */
static inline uint8_t *mem_touch(const ts_model *m, wse_tile *t)
{
    if (!t->mem)
        t->mem = ts_calloc(1, m->c.sram_bytes);
    return t->mem;
}

/* The 32-bit (ld32) or 16-bit (ld16) word of tile t's SRAM at byte a: zero where never written. */
static inline uint32_t ld32(const wse_tile *t, uint64_t a)
{
    uint32_t v = 0;
    if (t->mem)
        memcpy(&v, t->mem + a, 4);
    return v;
}

static inline uint16_t ld16(const wse_tile *t, uint64_t a)
{
    uint16_t v = 0;
    if (t->mem)
        memcpy(&v, t->mem + a, 2);
    return v;
}

/* A binary32 from its bits (f32_of) and its bits (bits_of). */
static inline float f32_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static inline uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* ------------------------------------------------------------------------------------------ */
/* bands, zones, active lists */

/* The band that holds PE id. */
static inline uint32_t band_of(const ts_model *m, uint32_t id)
{
    uint32_t k = 0;
    while (k + 1 < (uint32_t)m->nthreads && id >= m->band[k].id1)
        k++;
    return k;
}

/* A tile's zone in band b: E within a row of another band (its thread reads and writes it too), S
 * within two rows, I the rest (see phases() in wse_threads.c). */
static inline int zone(const wse_band *b, uint32_t id)
{
    if (id < b->edge_lo || id >= b->edge_hi)
        return WSE_ZE;
    return id < b->near_lo || id >= b->near_hi ? WSE_ZS : WSE_ZI;
}

/* Append id to list l of band b (b->oom when out of memory). */
static inline void list_add(wse_band *b, wse_list *l, uint32_t id)
{
    if (l->n == l->cap && ts_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        b->oom = true;
        return;
    }
    l->v[l->n++] = id;
}

/* Tile id of band b joins this cycle's active list of its zone (act_add), so the phases take the
 * zones in their order without testing every tile, or the next cycle's (next_add; every caller
 * adds a tile once a cycle, by its stamp). */
static inline void act_add(wse_band *b, uint32_t id) { list_add(b, &b->act[zone(b, id)], id); }

static inline void next_add(wse_band *b, uint32_t id) { list_add(b, &b->nxt, id); }

/* ------------------------------------------------------------------------------------------ */
/* queues and lines */

/* Wavelets in queue q by its committed counters. */
static inline uint32_t q_occ(const wse_lq *q) { return q->pushed - q->popped; }

/* Wavelets of colour c in flight on line l. */
static inline uint32_t line_count(const wse_line *l, uint32_t c)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->cap; i++)
        k += l->e[i].land && WSE_ENT_COLOUR(l->e[i].meta) == c;
    return k;
}

/* The entry of line l that holds the wavelet landing in cycle `land` (land % cap, cap a power of two;
 * a hop's line has one entry, a ramp's two or four). */
static inline wse_ent *line_ent(const wse_line *l, uint64_t land)
{
    return &l->e[(uint32_t)land & (l->cap - 1u)];
}

/* The queue that output line l of tile t feeds for colour c (its owner: the neighbour, or t itself
 * for the ramps, where m->t[t->id] was read again before). */
static inline wse_lq *line_target(const ts_model *m, wse_tile *t, int l, uint32_t c, wse_tile **owner)
{
    if (l < 4) {
        *owner = t->nb[l];
        return &t->nb[l]->lq[t->tq[(size_t)l * m->C + c]];
    }
    *owner = t;
    return &t->lq[t->qmap[(size_t)(l == WSE_LINE_DOWN ? 5 : WSE_R) * m->C + c]];
}

/* Room for one more wavelet of colour c through line l (phase A: committed counters only); a full
 * line is known without finding the queue it feeds. */
static inline bool line_room(const ts_model *m, wse_tile *t, int l, uint32_t c)
{
    if (t->line[l].n == t->line[l].lat)
        return false;
    wse_tile *o;
    const wse_lq *q = line_target(m, t, l, c, &o);
    return q_occ(q) + (t->line[l].n ? line_count(&t->line[l], c) : 0) < q->cap;
}

/* Put a wavelet of colour c on line l of tile t in cycle `now`: it lands after the line's latency. */
static inline void line_put(ts_model *m, wse_tile *t, int l, uint32_t data, uint32_t c, bool ctrl, uint32_t dst,
                            uint64_t now)
{
    wse_line *ln = &t->line[l];
    uint64_t land = now + ln->lat;
    wse_ent *e = line_ent(ln, land);
    ln->n++;
    t->lmask |= (uint8_t)(1u << l);
    e->land = land;
    e->data = data;
    e->meta = (c & 31) | (uint32_t)ctrl << 5 | (dst & 0xffffff) << 8;
}

/* Destination routing: the output port of a wavelet of virtual channel c at tile t on its way to
 * dst (x | y << 12), in dimension order: X first, or Y first under yx and on the upper half of the
 * channels under o1turn; the ramp at its destination. (Under westfirst: the dimension-order choice,
 * for the deadlock report; the router chooses with dest_tx_adaptive.) */
static inline uint8_t dest_tx(const ts_model *m, const wse_tile *t, uint32_t dst, uint32_t c)
{
    uint32_t dx = dst & 0xfff, dy = dst >> 12;
    bool yfirst = m->c.routing == WSE_ROUTE_YX || (m->c.routing == WSE_ROUTE_O1TURN && c >= m->vcs / 2);
    uint8_t xs = dx > t->x ? 1u << WSE_E : dx < t->x ? 1u << WSE_W : 0;
    uint8_t ys = dy > t->y ? 1u << WSE_S : dy < t->y ? 1u << WSE_N : 0;
    if (yfirst)
        return ys ? ys : xs ? xs : 1u << WSE_R;
    return xs ? xs : ys ? ys : 1u << WSE_R;
}

/* Pop live queue j of tile t this cycle (phase A; applied in phase B). */
static inline void q_pop(wse_tile *t, uint8_t j)
{
    t->lq[j].taken = 1;
    t->pops[t->npop++] = j;
}

/* The payload at the head of queue q, and whether it is a control wavelet. */
static inline uint32_t q_head(const wse_lq *q, bool *ctrl)
{
    *ctrl = q->ctrl >> q->rd & 1;
    return q->slot[q->rd];
}

/* ------------------------------------------------------------------------------------------ */
/* stalls and the quiet test */

/* n stalled cycles of kind why (1 input, 2 output, 3 memory, 4 thread; 0 counts nothing). */
static inline void count_stall(wse_tile *t, uint8_t why, uint64_t n)
{
    if (!why)
        return;
    t->s.stall += n;
    if (why == 1)
        t->s.stall_in += n;
    else if (why == 2)
        t->s.stall_out += n;
    else if (why == 3)
        t->s.stall_mem += n;
    else
        t->s.stall_thread += n;
}

/* n cycles a tile slept through, each like its last evaluation: its router's stalled input ports. */
static inline void count_router_sleep(wse_tile *t, uint64_t n)
{
    for (uint32_t pm = t->pstall; pm; pm &= pm - 1)
        t->s.port_stall[__builtin_ctz(pm)] += n;
}

/* Room for more wavelets of colour c through line l of tile t: free slots in the queue it feeds,
 * less what is on the line (phase A: committed counters only); 0 when the line is full. */
static inline uint32_t line_free(const ts_model *m, wse_tile *t, int l, uint32_t c)
{
    wse_tile *o;
    const wse_lq *q = line_target(m, t, l, c, &o);
    uint32_t used = q_occ(q) + line_count(&t->line[l], c);
    return t->line[l].n == t->line[l].lat || used >= q->cap ? 0 : q->cap - used;
}

/* West-first routing (the turn model: no turn into the west, so no cycle of channels): all west
 * hops first; then east, north or south, whichever minimal output has more room downstream (east
 * on a tie), so traffic goes around a congested link. */
static inline uint8_t dest_tx_adaptive(const ts_model *m, wse_tile *t, uint32_t dst, uint32_t c)
{
    uint32_t dx = dst & 0xfff, dy = dst >> 12;
    if (dx < t->x)
        return 1u << WSE_W;
    int ox = dx > t->x ? WSE_E : -1, oy = dy > t->y ? WSE_S : dy < t->y ? WSE_N : -1;
    if (ox < 0 || oy < 0)
        return ox >= 0 ? 1u << ox : oy >= 0 ? 1u << oy : 1u << WSE_R;
    return line_free(m, t, oy, c) > line_free(m, t, ox, c) ? 1u << oy : 1u << ox;
}

/* Nothing left to do unless woken. In phase B only the tile's own view of its queues (qleft, from
 * phase A) is read: producers push concurrently, and every push wakes the tile anyway. With exact,
 * for single-threaded callers, the queues themselves are read. */
static inline bool tile_quiet(const ts_model *m, const wse_tile *t, bool exact)
{
    if (t->lmask)
        return false;
    if (!exact && t->qleft)
        return false;
    for (uint32_t j = 0; exact && j < t->nlq; j++)
        if (q_occ(&t->lq[j]))
            return false;
    if (!t->ce)
        return true;
    const wse_ce *ce = t->ce;
    if (ce->state != CE_IDLE || ce->vbusy)
        return false;
    return !(ce->active & ~ce->blocked & ce->bound);
}

/* ------------------------------------------------------------------------------------------ */
/* a vector op's step (wse_vec.c has the issue and the memory-only elements): inline in the cycle
 * loop, where a call with its sources and ports through pointers cost about 20 host instructions
 * a step */

/* The byte address of element i of memory DSD d (in the SRAM: checked at issue for every element). */
static inline uint64_t elem_addr(const wse_dsd *d, uint32_t i, uint32_t esize)
{
    return (uint64_t)((int64_t)d->base + (int64_t)i * d->stride * (int64_t)esize);
}

/* The byte address of the next element of memory DSD d of an op with a fabric operand, which then
 * moves on to the one after (WSE_FAB_*: such an op's base bytes advance as its elements go). */
static inline uint64_t fab_addr(wse_dsd *d, uint32_t esize)
{
    uint64_t a = (uint64_t)(int64_t)d->base;
    /* in 32 bits without a sign: the step past the last element (whose address the op never
     * uses) may leave int32's range where a one-element op's stride is any */
    d->base = (int32_t)((uint32_t)d->base + (uint32_t)d->stride * esize);
    return a;
}

/* A source of the next element of an op with a fabric operand: the head of its core queue j,
 * popped, or its memory word (0 in timing-only mode). */
static inline uint32_t fab_src(const ts_model *m, wse_tile *t, wse_dsd *d, uint8_t j, uint32_t esize)
{
    if (d->kind != DSD_MEM) {
        bool ctrl;
        uint32_t x = q_head(&t->lq[j], &ctrl);
        q_pop(t, j);
        return x;
    }
    uint64_t a = fab_addr(d, esize);
    if (m->c.timing_only)
        return 0;
    return esize == 4 ? ld32(t, a) : ld16(t, a);
}

/* One binary32 element's result from its sources' bits (ts_wse_vec_elem has binary16 too). */
static inline uint32_t vec_elem32(const wse_vop *v, uint32_t x0, uint32_t x1)
{
    float a0 = f32_of(x0), a1 = f32_of(x1), r;
    switch (v->vop) {
    case WSE_V_MOV: return x0;
    case WSE_V_ADD: r = a0 + a1; break;
    case WSE_V_SUB: r = a0 - a1; break;
    case WSE_V_MUL: r = a0 * a1; break;
    default: { /* WSE_V_MAC, the only other VOP (asserted in wse_isa.c) */
        float p = a1 * f32_of(v->scalar);
        r = a0 + p;
        break;
    }
    }
    return bits_of(r);
}

/* Element v->i of an op with a fabric operand (one a cycle), the ports already counted: the
 * sources in order (s0, then s1 unless a move), the result to memory or onto the ramp. */
static inline void vec_fab_elem(ts_model *m, wse_tile *t, wse_band *b, wse_vop *v, bool *ramp_up)
{
    bool timing = m->c.timing_only;
    uint32_t esize = v->esize;
    uint32_t x0 = fab_src(m, t, &v->s0, v->q0, esize);
    uint32_t x1 = v->vop != WSE_V_MOV ? fab_src(m, t, &v->s1, v->q1, esize) : 0;
    uint32_t y = timing ? 0 : esize == 4 ? vec_elem32(v, x0, x1) : ts_wse_vec_elem(v, x0, x1);
    if (v->d.kind == DSD_MEM) {
        uint64_t a = fab_addr(&v->d, esize);
        if (!timing) {
            uint8_t *mem = mem_touch(m, t);
            if (mem)
                memcpy(mem + a, &y, esize);
            else
                b->oom = true;
        }
    } else {
        line_put(m, t, WSE_LINE_UP, y, v->d.colour, v->d.ctrl, 0, b->now);
        *ramp_up = true;
        t->s.injected++;
    }
    v->i++;
}

/* Element v->i of a binary32 op on memory, in a tile whose SRAM exists: as ts_wse_vec_mem_elems
 * does one (a product's multiply-adds run one a cycle beside the row received from the fabric, and
 * a call each cost more than the element). */
static inline void vec_mem_elem32(wse_tile *t, wse_vop *v)
{
    uint32_t x0, x1 = 0, y;
    memcpy(&x0, t->mem + elem_addr(&v->s0, v->i, 4), 4);
    if (v->vop != WSE_V_MOV)
        memcpy(&x1, t->mem + elem_addr(&v->s1, v->i, 4), 4);
    y = vec_elem32(v, x0, x1);
    memcpy(t->mem + elem_addr(&v->d, v->i, 4), &y, 4);
    v->i++;
}

/* A fabric source's core queue holds a data wavelet not yet taken this cycle. */
static inline bool fab_ready(const wse_tile *t, uint8_t j)
{
    const wse_lq *q = &t->lq[j];
    return q_occ(q) && !q->taken && !(q->ctrl >> q->rd & 1);
}

/* Advance vector op v by what this cycle's ports allow (rd, wr: SRAM bytes left to read and write
 * this cycle; ramp_up: the ramp took a wavelet this cycle); the elements done (0: stalled, the
 * reason in *why: 1 input, 2 output, 3 memory). */
static inline __attribute__((always_inline)) uint32_t vec_step(ts_model *m, wse_tile *t, wse_band *b, wse_vop *v,
                                                               uint32_t *rd, uint32_t *wr, bool *ramp_up, uint8_t *why)
{
    if (v->fab == WSE_FAB_RECV) {
        /* a core queue into memory: no SRAM read, bw bytes written (vec_fab_elem's move, its
         * stalls in the same order) */
        uint32_t bw = v->bw;
        if (!fab_ready(t, v->q0)) {
            *why = 1;
            return 0;
        }
        if (*wr < bw) {
            *why = 3;
            return 0;
        }
        *wr -= bw;
        bool ctrl;
        uint32_t x = q_head(&t->lq[v->q0], &ctrl), esize = v->esize;
        q_pop(t, v->q0);
        uint64_t a = fab_addr(&v->d, esize);
        if (!m->c.timing_only) {
            uint8_t *mem = mem_touch(m, t);
            if (mem) {
                uint32_t y = esize == 4 ? x : x & 0xffff;
                if (esize == 4) /* a copy of a known size: no call */
                    memcpy(mem + a, &y, 4);
                else
                    memcpy(mem + a, &y, esize);
            } else {
                b->oom = true;
            }
        }
        v->i++;
        t->s.sram_wr += bw;
        t->s.ev[v->ev]++;
        return 1;
    }
    if (v->fab == WSE_FAB_SEND) {
        /* memory onto the ramp: br bytes read, no SRAM write */
        uint32_t br = v->br;
        if (*ramp_up || !line_room(m, t, WSE_LINE_UP, v->d.colour)) {
            *why = 2;
            return 0;
        }
        if (*rd < br) {
            *why = 3;
            return 0;
        }
        *rd -= br;
        uint32_t esize = v->esize;
        uint64_t a = fab_addr(&v->s0, esize);
        uint32_t y = m->c.timing_only ? 0 : esize == 4 ? ld32(t, a) : ld16(t, a);
        line_put(m, t, WSE_LINE_UP, y, v->d.colour, v->d.ctrl, 0, b->now);
        *ramp_up = true;
        t->s.injected++;
        v->i++;
        t->s.sram_rd += br;
        t->s.ev[v->ev]++;
        return 1;
    }
    uint32_t k = v->n - v->i;
    if (k > v->width)
        k = v->width;
    if (v->fab) {
        k = k > 1 ? 1 : k; /* a fabric operand moves at most one wavelet a cycle */
        /* each fabric source needs a data wavelet at its queue's head, both sources not one queue */
        if ((v->s0.kind != DSD_MEM && !fab_ready(t, v->q0)) ||
            (v->vop != WSE_V_MOV && v->s1.kind != DSD_MEM &&
             ((v->s0.kind != DSD_MEM && v->q0 == v->q1) || !fab_ready(t, v->q1)))) {
            *why = 1;
            return 0;
        }
        if (v->d.kind == DSD_OUT && (*ramp_up || !line_room(m, t, WSE_LINE_UP, v->d.colour))) {
            *why = 2;
            return 0;
        }
    }
    uint32_t br = v->br, bw = v->bw;
    /* rd / br < k exactly when rd < k * br: the division only when the ports cut k */
    if (br && *rd < k * br)
        k = *rd / br;
    if (bw && *wr < k * bw)
        k = *wr / bw;
    if (!k) {
        *why = 3;
        return 0;
    }
    *rd -= k * br;
    *wr -= k * bw;
    if (v->fab)
        vec_fab_elem(m, t, b, v, ramp_up); /* k is 1 */
    else if (k == 1 && v->esize == 4 && !m->c.timing_only && t->mem)
        vec_mem_elem32(t, v);
    else
        ts_wse_vec_mem_elems(m, t, b, v, k);
    t->s.sram_rd += (uint64_t)k * br;
    t->s.sram_wr += (uint64_t)k * bw;
    t->s.ev[v->ev] += k; /* its .def energy event per element (a move names none) */
    return k;
}

#endif
