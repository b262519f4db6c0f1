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
    for (uint32_t i = 0, j = l->head; i < l->n; i++, j = j + 1 == l->cap ? 0 : j + 1)
        k += WSE_ENT_COLOUR(l->e[j].meta) == c;
    return k;
}

/* The queue that output line l of tile t feeds for colour c. */
static inline wse_lq *line_target(const ts_model *m, const wse_tile *t, int l, uint32_t c, wse_tile **owner)
{
    if (l < 4) {
        *owner = t->nb[l];
        return &t->nb[l]->lq[t->tq[(size_t)l * m->C + c]];
    }
    wse_tile *o = m->t[t->id];
    *owner = o;
    return &o->lq[o->qmap[(size_t)(l == WSE_LINE_DOWN ? 5 : WSE_R) * m->C + c]];
}

/* Room for one more wavelet of colour c through line l (phase A: committed counters only). */
static inline bool line_room(const ts_model *m, const wse_tile *t, int l, uint32_t c)
{
    wse_tile *o;
    const wse_lq *q = line_target(m, t, l, c, &o);
    if (t->line[l].n == t->line[l].cap)
        return false;
    return q_occ(q) + line_count(&t->line[l], c) < q->cap;
}

/* Put a wavelet of colour c on line l of tile t in cycle `now`: it lands after the line's latency. */
static inline void line_put(ts_model *m, wse_tile *t, int l, uint32_t data, uint32_t c, bool ctrl, uint32_t dst,
                            uint64_t now)
{
    wse_line *ln = &t->line[l];
    uint64_t lat = l < 4 ? m->hop : l == WSE_LINE_UP ? m->up : m->c.ramp_latency;
    uint32_t j = (uint32_t)ln->head + ln->n++;
    wse_ent *e = &ln->e[j >= ln->cap ? j - ln->cap : j];
    t->lmask |= (uint8_t)(1u << l);
    e->land = now + lat;
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
static inline uint32_t line_free(const ts_model *m, const wse_tile *t, int l, uint32_t c)
{
    wse_tile *o;
    const wse_lq *q = line_target(m, t, l, c, &o);
    uint32_t used = q_occ(q) + line_count(&t->line[l], c);
    return t->line[l].n == t->line[l].cap || used >= q->cap ? 0 : q->cap - used;
}

/* West-first routing (the turn model: no turn into the west, so no cycle of channels): all west
 * hops first; then east, north or south, whichever minimal output has more room downstream (east
 * on a tie), so traffic goes around a congested link. */
static inline uint8_t dest_tx_adaptive(const ts_model *m, const wse_tile *t, uint32_t dst, uint32_t c)
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

#endif
