/* arch/wse/wse_sim.c — the wafer-mesh cycle model: routers, cores, tasks, vector ops.
 *
 * Every cycle runs in two phases over the active tiles (research/cerebras_wse.md §8.2 item 1):
 *   A  read committed state, decide: routers forward queue heads into their output delay lines,
 *      cores issue one instruction and advance their vector ops; pops are only recorded;
 *   B  commit: pops are applied, wavelets whose delay is over are pushed into the next queue (only
 *      the single upstream producer writes a queue's tail), tiles pushed to are woken.
 * A producer sees a consumer's pops of cycle t at t + 1 (credit return takes one cycle). Nothing in
 * phase A reads what another tile writes in phase A, and nothing in phase B reads what another tile
 * writes in phase B, so the order of tiles and the number of threads cannot change any result.
 * Threads own bands of mesh rows. A band depends on its neighbours only through the rows within a
 * row of them, one cycle at a time (a pop is seen by the producer one cycle later, on every link,
 * whatever fabric.hop_latency is), so bands meet there and not at a barrier: within a cycle a band
 * waits for its neighbours' edge rows to be through phase A before committing its own, and before
 * the next cycle for their edge rows to be committed (phases(), thread_main()); a band may be a
 * cycle ahead of its neighbour.
 */
#include "arch/wse/wse_int.h"

#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"

static const char *const port_name[WSE_NPORTS] = {"N", "S", "E", "W", "R"};
static const uint8_t opposite[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

/* ------------------------------------------------------------------------------------------ */
/* binary16 <-> binary32, round to nearest even */

static float f32_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

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
/* tiles */

static wse_tile *tile_at(const ts_model *m, int64_t x, int64_t y)
{
    if (x < 0 || y < 0 || x >= m->w || y >= m->h)
        return NULL;
    return m->t[(uint64_t)y * m->w + (uint64_t)x];
}

static ts_status tile_touch(ts_model *m, uint32_t id, wse_tile **out, ts_err *err)
{
    if (m->t[id]) {
        *out = m->t[id];
        return TS_OK;
    }
    wse_tile *t = ts_calloc(1, sizeof *t);
    if (!t || !(t->route = ts_calloc(m->C, sizeof *t->route))) {
        ts_free(t);
        return ts_err_set(err, TS_ENOMEM, "out of memory allocating PE %u", id);
    }
    t->id = id;
    t->x = id % m->w;
    t->y = id / m->w;
    t->stamp = UINT64_MAX;
    for (uint32_t c = 0; c < m->C; c++)
        t->route[c].npos = 1;
    m->t[id] = t;
    *out = t;
    return TS_OK;
}

static void tile_free(wse_tile *t)
{
    if (!t)
        return;
    if (t->ce)
        ts_free(t->ce->th);
    ts_free(t->ce);
    ts_free(t->route);
    ts_free(t->qmap);
    ts_free(t->block);
    ts_free(t->mem);
    ts_free(t->log);
    ts_free(t->narr);
    ts_free(t);
}

static uint8_t *mem_touch(const ts_model *m, wse_tile *t)
{
    if (!t->mem)
        t->mem = ts_calloc(1, m->c.sram_bytes);
    return t->mem;
}

/* ------------------------------------------------------------------------------------------ */
/* create / destroy */

void ts_wse_destroy(ts_model *m)
{
    if (!m)
        return;
    if (m->t)
        for (uint64_t i = 0; i < m->npes; i++)
            tile_free(m->t[i]);
    ts_free(m->t);
    ts_free(m->alloc_ids);
    for (size_t i = 0; i < m->ncodes; i++)
        ts_free((void *)m->codes[i].insn);
    ts_free(m->codes);
    if (m->band)
        for (int i = 0; i < m->nthreads; i++) {
            for (int z = 0; z < WSE_NZ; z++) {
                ts_free(m->band[i].act[z].v);
                ts_free(m->band[i].next[z].v);
            }
            ts_free(m->band[i].xwake[0]);
            ts_free(m->band[i].xwake[1]);
            ts_free(m->band[i].tm);
            ts_err_free(&m->band[i].err);
        }
    ts_free(m->band);
    ts_free(m->act_prev);
    ts_free(m->split_w);
    ts_free(m);
}

/* Give each thread a band of consecutive PE ids (row-major), at least a row long, so a tile's
 * neighbours are in its band or the next one either side: ids of about equal weight (weight[i] for
 * the allocated tile alloc_ids[i]; NULL for equal ids). Any split gives the same results; the
 * weights only balance the work. */
static void split_bands(ts_model *m, const uint64_t *weight)
{
    const uint64_t n = m->npes, w = m->w, nt = (uint64_t)m->nthreads;
    uint64_t total = 0, acc = 0, id = 0;
    size_t j = 0;
    for (size_t i = 0; weight && i < m->nalloc; i++)
        total += weight[i];
    for (uint64_t k = 0; k < nt; k++) {
        wse_band *b = &m->band[k];
        uint64_t id1 = n;
        if (k + 1 < nt && !weight) {
            id1 = n * (k + 1) / nt;
        } else if (k + 1 < nt) {
            uint64_t lo = id + w, hi = n - (nt - 1 - k) * w, goal = total * (k + 1) / nt;
            for (; j < m->nalloc && m->alloc_ids[j] < lo; j++)
                acc += weight[j];
            for (; j < m->nalloc && m->alloc_ids[j] < hi && acc + weight[j] / 2 <= goal; j++)
                acc += weight[j];
            id1 = j < m->nalloc && m->alloc_ids[j] < hi ? m->alloc_ids[j] : hi;
            if (id1 < lo)
                id1 = lo;
        }
        b->id0 = (uint32_t)id;
        b->id1 = (uint32_t)id1;
        b->edge_lo = k > 0 ? b->id0 + m->w : 0;
        b->edge_hi = k + 1 < nt ? b->id1 - m->w : UINT32_MAX;
        b->near_lo = k > 0 ? b->id0 + 2 * m->w : 0;
        b->near_hi = k + 1 == nt ? UINT32_MAX : b->id1 >= 2 * m->w ? b->id1 - 2 * m->w : 0;
        id = id1;
    }
}

static inline uint32_t band_of(const ts_model *m, uint32_t id)
{
    uint32_t k = 0;
    while (k + 1 < (uint32_t)m->nthreads && id >= m->band[k].id1)
        k++;
    return k;
}

/* A tile's zone in band b: E within a row of another band (its thread reads and writes it too), S
 * within two rows, I the rest (see phases()). */
static inline int zone(const wse_band *b, uint32_t id)
{
    if (id < b->edge_lo || id >= b->edge_hi)
        return WSE_ZE;
    return id < b->near_lo || id >= b->near_hi ? WSE_ZS : WSE_ZI;
}

static inline void list_add(wse_band *b, wse_list *l, uint32_t id)
{
    if (l->n == l->cap && ts_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        b->oom = true;
        return;
    }
    l->v[l->n++] = id;
}

/* Tile id of band b joins this cycle's (act_add) or the next cycle's (next_add) active list of its
 * zone, so the phases take the zones in their order without testing every tile. */
static inline void act_add(wse_band *b, uint32_t id) { list_add(b, &b->act[zone(b, id)], id); }

static inline void next_add(wse_band *b, uint32_t id) { list_add(b, &b->next[zone(b, id)], id); }

ts_status ts_wse_create(ts_model **out, const ts_wse_cfg *c, const ts_run_opts *opts, ts_err *err)
{
    *out = NULL;
    ts_model *m = ts_calloc(1, sizeof *m);
    if (!m)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    m->c = *c;
    m->w = (uint32_t)c->width;
    m->h = (uint32_t)c->height;
    m->C = (uint32_t)c->colours;
    m->npes = c->width * c->height;
    m->lockstep = opts && opts->lockstep;
    m->nthreads = opts && opts->threads > 1 ? opts->threads : 1;
    if ((uint32_t)m->nthreads > m->h)
        m->nthreads = (int)m->h;
    m->t = ts_calloc(m->npes, sizeof *m->t);
    m->band = ts_calloc((size_t)m->nthreads, sizeof *m->band);
    if (!m->t || !m->band) {
        uint64_t n = m->npes;
        ts_wse_destroy(m);
        return ts_err_set(err, TS_ENOMEM, "out of memory for a %" PRIu64 "-PE mesh", n);
    }
    for (int i = 0; i < m->nthreads; i++)
        ts_err_init(&m->band[i].err);
    split_bands(m, NULL);
    m->act = opts ? opts->activity : NULL;
    m->regions = opts ? opts->regions : NULL;
    m->nregions = opts ? opts->nregions : 0;
    if (m->act) {
        ts_status rc = ts_wse_act_layout(m, err);
        if (rc) {
            ts_wse_destroy(m);
            return rc;
        }
    }
    *out = m;
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* load: apply configuration instructions, predecode, build live queues, place data */

static ts_status load_err(const ts_stream *s, uint32_t pc, ts_err *err, const char *what, ts_model *m)
{
    return ts_err_sim(err, s->index, -1, "PE (%u, %u) pc %u: %s", s->index % m->w, s->index / m->w, pc, what);
}

static ts_status check_colour(ts_model *m, const ts_stream *s, uint32_t pc, int32_t c, ts_err *err)
{
    if (c < 0 || (uint32_t)c >= m->C) {
        char b[96];
        snprintf(b, sizeof b, "colour %d is outside 0..%u", c, m->C - 1);
        return load_err(s, pc, err, b, m);
    }
    return TS_OK;
}

static ts_status apply_cfg(ts_model *m, wse_tile *t, const ts_stream *s, uint32_t pc, ts_err *err)
{
    const ts_insn *in = &s->insn[pc];
    const int32_t *a = in->a;
    ts_status rc = in->op == WSE_OP_BIND || in->op == WSE_OP_IMAGE ? TS_OK : check_colour(m, s, pc, a[0], err);
    if (rc)
        return rc;
    char b[128];
    switch (in->op) {
    case WSE_OP_ROUTE:
    case WSE_OP_SWPOS: {
        int32_t pos = in->op == WSE_OP_ROUTE ? 0 : a[1];
        int32_t rx = in->op == WSE_OP_ROUTE ? a[1] : a[2], tx = in->op == WSE_OP_ROUTE ? a[2] : a[3];
        if (pos < 0 || pos >= WSE_MAX_POS || (in->op == WSE_OP_SWPOS && pos == 0)) {
            snprintf(b, sizeof b, "switch position %d is outside 1..%d", pos, WSE_MAX_POS - 1);
            return load_err(s, pc, err, b, m);
        }
        if (rx < 0 || rx > WSE_PORT_MASK_ALL || tx < 0 || tx > WSE_PORT_MASK_ALL) {
            snprintf(b, sizeof b, "port mask %d is outside 0..31 (N=1 S=2 E=4 W=8 R=16)", rx < 0 || rx > 31 ? rx : tx);
            return load_err(s, pc, err, b, m);
        }
        wse_route *r = &t->route[a[0]];
        r->rx[pos] = (uint8_t)rx;
        r->tx[pos] = (uint8_t)tx;
        if ((uint8_t)(pos + 1) > r->npos)
            r->npos = (uint8_t)(pos + 1);
        r->any_rx |= (uint8_t)rx;
        r->any_tx |= (uint8_t)tx;
        for (int p = 0; p < 4; p++)
            if ((tx >> p & 1) && !tile_at(m, (int64_t)t->x + (p == WSE_E) - (p == WSE_W),
                                          (int64_t)t->y + (p == WSE_S) - (p == WSE_N))) {
                int64_t nx = (int64_t)t->x + (p == WSE_E) - (p == WSE_W), ny = (int64_t)t->y + (p == WSE_S) - (p == WSE_N);
                if (nx < 0 || ny < 0 || nx >= m->w || ny >= m->h) {
                    snprintf(b, sizeof b, "colour %d is routed %s, off the mesh", a[0], port_name[p]);
                    return load_err(s, pc, err, b, m);
                }
            }
        return TS_OK;
    }
    case WSE_OP_SWMODE:
        t->route[a[0]].ring = a[1] != 0;
        return TS_OK;
    case WSE_OP_BIND:
        if (a[0] < 0 || a[0] >= WSE_NTASKS) {
            snprintf(b, sizeof b, "task %d is outside 0..63", a[0]);
            return load_err(s, pc, err, b, m);
        }
        if (a[2] == 1 && (uint32_t)a[0] >= m->C) {
            snprintf(b, sizeof b, "data task %d has no colour %d (fabric.colours is %u)", a[0], a[0], m->C);
            return load_err(s, pc, err, b, m);
        }
        t->ce->task_pc[a[0]] = (uint32_t)a[1];
        t->ce->bound |= 1ull << a[0];
        if (a[2] == 1)
            t->ce->data_task |= 1ull << a[0];
        else
            t->ce->data_task &= ~(1ull << a[0]);
        return TS_OK;
    case WSE_OP_IMAGE:
        if (a[0] < 0 || (uint64_t)a[0] >= m->npes || (uint32_t)a[0] == s->index) {
            snprintf(b, sizeof b, "image of PE %d: not another PE of the %" PRIu64 "-PE mesh", a[0], m->npes);
            return load_err(s, pc, err, b, m);
        }
        if (pc + 1 != s->n)
            return load_err(s, pc, err, "'image' must be the last instruction of its stream (the code is the image's)", m);
        if (t->ce->bound)
            return load_err(s, pc, err, "'bind' in a stream with 'image': task bindings come with the image's code", m);
        return TS_OK;
    default:
        return ts_err_set(err, TS_EINTERNAL, "wse: op %u is not a configuration op", in->op);
    }
}

/* Operand checks done once so the executor never checks them. */
static ts_status check_insn(ts_model *m, const ts_stream *s, uint32_t pc, ts_err *err)
{
    const ts_insn *in = &s->insn[pc];
    const int32_t *a = in->a;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    char b[160];
    if (ts_wse_isa.ops[in->op].flags & WSE_F_CFG) {
        snprintf(b, sizeof b, "'%s' configures the PE at load and must come before the first executable instruction",
                 ts_wse_isa.ops[in->op].mnemonic);
        return load_err(s, pc, err, b, m);
    }
    for (int j = 0; j < TS_MAX_OPNDS; j++)
        if ((ts_wse_isa.ops[in->op].opnd[j] & TS_OK_KIND_MASK) == TS_OK_LABEL && (a[j] < 0 || (uint32_t)a[j] >= s->n)) {
            snprintf(b, sizeof b, "label operand %d is pc %d, outside the stream", j + 1, a[j]);
            return load_err(s, pc, err, b, m);
        }
    switch (in->op) {
    case WSE_OP_SEND:
    case WSE_OP_SENDC:
    case WSE_OP_RECV: {
        int32_t c = in->op == WSE_OP_RECV ? a[1] : a[0];
        ts_status rc = check_colour(m, s, pc, c, err);
        if (rc)
            return rc;
        wse_tile *t = m->t[s->index];
        if (in->op != WSE_OP_RECV && !(t->route[c].any_rx & (1u << WSE_R))) {
            snprintf(b, sizeof b, "sends on colour %d, but no route of that colour takes wavelets from the ramp", c);
            return load_err(s, pc, err, b, m);
        }
        if (in->op == WSE_OP_RECV && !(t->route[c].any_tx & (1u << WSE_R))) {
            snprintf(b, sizeof b, "receives on colour %d, but no route of that colour sends to the ramp", c);
            return load_err(s, pc, err, b, m);
        }
        return TS_OK;
    }
    case WSE_OP_GET:
        if (a[1] < 0 || a[1] > 4)
            return load_err(s, pc, err, "get selector is outside 0..4", m);
        return TS_OK;
    case WSE_OP_WAIT:
        if (a[0] < 1)
            return load_err(s, pc, err, "wait needs at least 1 cycle", m);
        return TS_OK;
    case WSE_OP_ACTIVATE:
    case WSE_OP_BLOCK:
    case WSE_OP_UNBLOCK:
        if (a[0] < 0 || a[0] >= WSE_NTASKS)
            return load_err(s, pc, err, "task id is outside 0..63", m);
        return TS_OK;
    case WSE_OP_DSDM:
    case WSE_OP_DSDIN:
    case WSE_OP_DSDOUT:
    case WSE_OP_DSDBASE:
    case WSE_OP_DSDLEN:
        if (a[0] < 0 || a[0] >= WSE_NDSD)
            return load_err(s, pc, err, "dsd register is outside 0..15", m);
        if (in->op == WSE_OP_DSDIN || in->op == WSE_OP_DSDOUT) {
            ts_status rc = check_colour(m, s, pc, a[1], err);
            if (rc)
                return rc;
            uint8_t need = in->op == WSE_OP_DSDIN ? m->t[s->index]->route[a[1]].any_tx : m->t[s->index]->route[a[1]].any_rx;
            if (!(need & (1u << WSE_R))) {
                snprintf(b, sizeof b, "fabric dsd on colour %d, but no route of that colour %s the ramp", a[1],
                         in->op == WSE_OP_DSDIN ? "sends to" : "takes wavelets from");
                return load_err(s, pc, err, b, m);
            }
        }
        if ((in->op == WSE_OP_DSDM || in->op == WSE_OP_DSDIN || in->op == WSE_OP_DSDOUT) && (a[2] < 0 || a[2] > 65535))
            return load_err(s, pc, err, "dsd length is outside 0..65535", m);
        return TS_OK;
    default:
        break;
    }
    if (f->unit == WSE_U_VEC) {
        int nd = ts_isa_nopnds(&ts_wse_isa.ops[in->op]);
        int th = a[nd - 2], done = a[nd - 1];
        int nsrc = f->vop == WSE_V_MOV ? 1 : 2;
        for (int j = 0; j <= nsrc; j++)
            if (a[j] < 0 || a[j] >= WSE_NDSD)
                return load_err(s, pc, err, "dsd register is outside 0..15", m);
        if (th < -1 || th >= (int)m->c.microthreads) {
            snprintf(b, sizeof b, "thread %d is neither -1 (main) nor a microthread 0..%d", th, (int)m->c.microthreads - 1);
            return load_err(s, pc, err, b, m);
        }
        if (done < -1 || done >= WSE_NTASKS)
            return load_err(s, pc, err, "completion task is neither -1 nor 0..63", m);
    }
    return TS_OK;
}

/* Build a tile's live queues and delay lines once all routes are known. */
static ts_status finalize_tile(ts_model *m, wse_tile *t, ts_err *err)
{
    uint32_t C = m->C;
    t->qmap = ts_malloc(6 * (size_t)C);
    if (!t->qmap)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    memset(t->qmap, WSE_NOQ, 6 * (size_t)C);
    size_t nlq = 0, nslots = 0;
    for (uint32_t c = 0; c < C; c++) {
        for (int p = 0; p < WSE_NPORTS; p++)
            if (t->route[c].any_rx >> p & 1) {
                nlq++;
                nslots += p == WSE_R ? m->c.oq_depth : m->c.queue_depth;
            }
        if (t->route[c].any_tx >> WSE_R & 1) {
            nlq++;
            nslots += m->c.iq_depth;
        }
    }
    if (nlq > 255)
        return ts_err_set(err, TS_EINTERNAL, "wse: %zu live queues at PE %u", nlq, t->id);
    size_t nent = 4 * m->c.hop_latency + 2 * m->c.ramp_latency + m->c.pipeline_latency;
    size_t sz = nlq * sizeof(wse_lq) + nent * sizeof(wse_ent) + nslots * sizeof(uint32_t) + 2 * nlq + 4 * (size_t)C;
    t->block = ts_calloc(1, sz ? sz : 1);
    if (!t->block)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    char *p0 = t->block;
    t->lq = (wse_lq *)(void *)p0;
    wse_ent *ent = (wse_ent *)(void *)(p0 + nlq * sizeof(wse_lq));
    uint32_t *slots = (uint32_t *)(void *)(p0 + nlq * sizeof(wse_lq) + nent * sizeof(wse_ent));
    t->pops = (uint8_t *)(slots + nslots);
    /* router queues first, ordered by (colour, port), then core queues */
    size_t j = 0;
    for (uint32_t c = 0; c < C; c++)
        for (int p = 0; p < WSE_NPORTS; p++)
            if (t->route[c].any_rx >> p & 1) {
                wse_lq *q = &t->lq[j];
                q->cap = (uint8_t)(p == WSE_R ? m->c.oq_depth : m->c.queue_depth);
                q->port = (uint8_t)p;
                q->colour = (uint8_t)c;
                q->slot = slots;
                slots += q->cap;
                t->qmap[p * C + c] = (uint8_t)j++;
            }
    t->nrq = (uint8_t)j;
    for (uint32_t c = 0; c < C; c++)
        if (t->route[c].any_tx >> WSE_R & 1) {
            wse_lq *q = &t->lq[j];
            q->cap = (uint8_t)m->c.iq_depth;
            q->port = 5;
            q->colour = (uint8_t)c;
            q->slot = slots;
            slots += q->cap;
            t->qmap[5 * C + c] = (uint8_t)j++;
        }
    t->nlq = (uint8_t)j;
    t->pidx = t->pops + nlq;
    t->tq = t->pidx + nlq;
    memset(t->tq, WSE_NOQ, 4 * (size_t)C);
    {
        size_t n = 0;
        for (int p = 0; p <= 5; p++) {
            t->poff[p] = (uint8_t)n;
            for (uint32_t q = 0; q < t->nlq; q++)
                if (t->lq[q].port == p)
                    t->pidx[n++] = (uint8_t)q;
        }
        t->poff[6] = (uint8_t)n;
    }
    for (int l = 0; l < WSE_NLINES; l++) {
        t->line[l].cap = (uint8_t)(l < 4 ? m->c.hop_latency : m->c.ramp_latency + (l == WSE_LINE_UP ? m->c.pipeline_latency : 0));
        t->line[l].e = ent;
        ent += t->line[l].cap;
    }
    for (int p = 0; p < 4; p++)
        t->nb[p] = tile_at(m, (int64_t)t->x + (p == WSE_E) - (p == WSE_W), (int64_t)t->y + (p == WSE_S) - (p == WSE_N));
    return TS_OK;
}

/* Every colour a tile sends to a neighbour must be taken by that neighbour from this side. */
static ts_status check_links(ts_model *m, wse_tile *t, ts_err *err)
{
    for (uint32_t c = 0; c < m->C; c++)
        for (int p = 0; p < 4; p++) {
            if (!(t->route[c].any_tx >> p & 1))
                continue;
            wse_tile *n = t->nb[p];
            if (n)
                t->tq[p * m->C + c] = n->qmap[opposite[p] * m->C + c];
            if (!n || n->qmap[opposite[p] * m->C + c] == WSE_NOQ)
                return ts_err_sim(err, t->id, -1,
                                  "PE (%u, %u) routes colour %u %s, but PE (%u, %u) takes no colour %u from the %s",
                                  t->x, t->y, c, port_name[p], t->x + (p == WSE_E) - (p == WSE_W),
                                  t->y + (p == WSE_S) - (p == WSE_N), c, port_name[opposite[p]]);
        }
    return TS_OK;
}

#define WSE_WEIGHT_QUEUE 1
#define WSE_WEIGHT_CORE 1

ts_status ts_wse_load(ts_model *m, const ts_program *p, ts_err *err)
{
    if (m->loaded)
        return ts_err_set(err, TS_EINPUT, "a program is already loaded");
    ts_status rc = TS_OK;
    /* distinct streams: an open-addressing table of code indices + 1, at most half full */
    size_t hcap = 1024;
    while (hcap < 4 * p->nstreams && hcap < ((size_t)1 << 26))
        hcap *= 2;
    uint32_t *htab = ts_calloc(hcap, sizeof *htab);
    uint32_t *sidx = ts_malloc((p->nstreams ? p->nstreams : 1) * sizeof *sidx);
    if (!htab || !sidx) {
        ts_free(htab);
        ts_free(sidx);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    /* pass 1: tiles, configuration prefixes, code */
    for (size_t i = 0; i < p->nstreams && !rc; i++) {
        const ts_stream *s = &p->streams[i];
        if (s->kind != WSE_KIND_PE) {
            rc = ts_err_set(err, TS_EINPUT, "stream kind %u is not 'pe'", s->kind);
            break;
        }
        if (s->index >= m->npes) {
            rc = ts_err_set(err, TS_EINPUT, "program has code for PE %u, but the %ux%u mesh has %" PRIu64 " PEs",
                            s->index, m->w, m->h, m->npes);
            break;
        }
        for (uint32_t k = 0; k < s->n && !rc; k++)
            if (s->insn[k].op >= WSE_OP_COUNT)
                rc = ts_err_set(err, TS_EINPUT, "PE %u pc %u: op %u is not a wse op", s->index, k, s->insn[k].op);
        wse_tile *t = NULL;
        if (rc || (rc = tile_touch(m, s->index, &t, err)))
            break;
        if (t->ce) {
            rc = ts_err_set(err, TS_EINPUT, "PE %u has two streams", s->index);
            break;
        }
        t->ce = ts_calloc(1, sizeof *t->ce);
        if (!t->ce || !(t->ce->th = ts_calloc(1 + m->c.microthreads, sizeof *t->ce->th))) {
            rc = ts_err_set(err, TS_ENOMEM, "out of memory");
            break;
        }
        uint32_t k = 0;
        for (; k < s->n && (ts_wse_isa.ops[s->insn[k].op].flags & WSE_F_CFG) && !rc; k++)
            rc = apply_cfg(m, t, s, k, err);
        if (rc)
            break;
        if (k && s->insn[k - 1].op == WSE_OP_IMAGE) {
            sidx[i] = UINT32_MAX; /* the image's code, attached below */
            continue;
        }
        /* predecode: one copy per distinct stream (a wafer of identical PEs keeps a few) */
        uint64_t hsh = 1469598103934665603ull;
        const unsigned char *bytes = (const unsigned char *)s->insn;
        for (size_t q = 0; q < (size_t)s->n * sizeof *s->insn; q++)
            hsh = (hsh ^ bytes[q]) * 1099511628211ull;
        size_t slot = (size_t)(hsh & (hcap - 1));
        for (; htab[slot]; slot = (slot + 1) & (hcap - 1)) {
            const wse_code *o = &m->codes[htab[slot] - 1];
            if (o->n == s->n && o->entry == k && !memcmp(o->insn, s->insn, (size_t)s->n * sizeof *s->insn))
                break;
        }
        if (!htab[slot]) {
            if (m->ncodes == hcap / 2) {
                rc = ts_err_set(err, TS_EINPUT, "program has more than %zu distinct PE streams", hcap / 2);
                break;
            }
            if (ts_grow((void **)&m->codes, &m->cap_codes, m->ncodes + 1, sizeof *m->codes)) {
                rc = ts_err_set(err, TS_ENOMEM, "out of memory");
                break;
            }
            ts_insn *copy = ts_malloc((s->n ? s->n : 1) * sizeof *copy);
            if (!copy) {
                rc = ts_err_set(err, TS_ENOMEM, "out of memory");
                break;
            }
            memcpy(copy, s->insn, (size_t)s->n * sizeof *copy);
            wse_code *code = &m->codes[m->ncodes++];
            code->insn = copy;
            code->n = s->n;
            code->entry = k;
            htab[slot] = (uint32_t)m->ncodes;
        }
        sidx[i] = htab[slot] - 1;
    }
    ts_free(htab);
    if (rc) {
        ts_free(sidx);
        return rc;
    }
    /* attach codes once the array stops moving: own code first, then images (which need it) */
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (size_t i = 0; i < p->nstreams; i++) {
            const ts_stream *s = &p->streams[i];
            if ((sidx[i] == UINT32_MAX) != (pass == 1))
                continue;
            wse_ce *ce = m->t[s->index]->ce;
            if (pass == 1) {
                const wse_tile *o = m->t[s->insn[s->n - 1].a[0]];
                if (!o || !o->ce || o->ce->image || !o->ce->code) {
                    rc = load_err(s, s->n - 1, err, o && o->ce ? "its image runs another PE's code itself (one level only)"
                                                               : "its image has no stream", m);
                    break;
                }
                ce->code = o->ce->code;
                ce->image = true;
                ce->bound = o->ce->bound;
                ce->data_task = o->ce->data_task;
                memcpy(ce->task_pc, o->ce->task_pc, sizeof ce->task_pc);
            } else {
                ce->code = &m->codes[sidx[i]];
            }
            ce->pc = ce->code->entry;
            ce->task = -1;
            ce->state = ce->pc < ce->code->n ? CE_RUN : CE_IDLE;
            ce->main_done = ce->state == CE_IDLE;
            if (ce->state == CE_IDLE)
                ce->task = -2;
        }
    ts_free(sidx);
    if (rc)
        return rc;
    /* data segments */
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        if (g->kind != WSE_KIND_PE || g->index >= m->npes || g->addr + g->len > m->c.sram_bytes)
            return ts_err_set(err, TS_EINPUT, "data segment for PE %u at 0x%" PRIx64 " (%u bytes) does not fit its %" PRIu64
                              "-byte SRAM", g->index, g->addr, g->len, m->c.sram_bytes);
        wse_tile *t;
        if ((rc = tile_touch(m, g->index, &t, err)))
            return rc;
        m->offchip += g->len;
        if (!m->c.timing_only && g->len) {
            if (!mem_touch(m, t))
                return ts_err_set(err, TS_ENOMEM, "out of memory for PE %u SRAM", g->index);
            memcpy(t->mem + g->addr, g->bytes, g->len);
        }
    }
    /* live queues, links, then operand checks that need routes */
    size_t n = 0;
    for (uint64_t i = 0; i < m->npes; i++)
        n += m->t[i] != NULL;
    m->alloc_ids = ts_malloc((n ? n : 1) * sizeof *m->alloc_ids);
    if (!m->alloc_ids)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    m->nalloc = 0;
    for (uint64_t i = 0; i < m->npes; i++)
        if (m->t[i])
            m->alloc_ids[m->nalloc++] = (uint32_t)i;
    for (size_t i = 0; i < m->nalloc; i++)
        if ((rc = finalize_tile(m, m->t[m->alloc_ids[i]], err)))
            return rc;
    for (size_t i = 0; i < m->nalloc; i++)
        if ((rc = check_links(m, m->t[m->alloc_ids[i]], err)))
            return rc;
    /* a PE that runs an image has its code checked against its own routes */
    const ts_stream **byid = NULL;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        const wse_tile *t = m->t[s->index];
        ts_stream view = *s;
        if (t->ce->image) {
            if (!byid) {
                if (!(byid = ts_calloc(m->npes, sizeof *byid)))
                    return ts_err_set(err, TS_ENOMEM, "out of memory");
                for (size_t j = 0; j < p->nstreams; j++)
                    byid[p->streams[j].index] = &p->streams[j];
            }
            uint32_t img = (uint32_t)s->insn[s->n - 1].a[0];
            view = *byid[img];
            view.index = s->index;
            for (uint32_t k = t->ce->code->entry; k < view.n; k++)
                if ((rc = check_insn(m, &view, k, err))) {
                    size_t l = strlen(err->msg);
                    snprintf(err->msg + l, sizeof err->msg - l, " (in the code of PE (%u, %u), its image)", img % m->w,
                             img / m->w);
                    ts_free(byid);
                    return rc;
                }
            continue;
        }
        for (uint32_t k = t->ce->code->entry; k < s->n; k++)
            if ((rc = check_insn(m, s, k, err))) {
                ts_free(byid);
                return rc;
            }
    }
    ts_free(byid);
    /* bands of about equal work: a tile weighs its live queues (the routes converging on it) and one
     * for its core */
    if (m->nthreads > 1) {
        uint64_t *weight = ts_malloc((m->nalloc ? m->nalloc : 1) * sizeof *weight);
        if (!weight)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        for (size_t i = 0; i < m->nalloc; i++) {
            const wse_tile *t = m->t[m->alloc_ids[i]];
            weight[i] = WSE_WEIGHT_QUEUE * t->nlq + (t->ce ? WSE_WEIGHT_CORE : 0);
        }
        split_bands(m, weight);
        ts_free(weight);
    }
    /* the first active set: every PE with code */
    for (size_t i = 0; i < m->nalloc; i++) {
        wse_tile *t = m->t[m->alloc_ids[i]];
        if (!t->ce)
            continue;
        wse_band *b = &m->band[band_of(m, t->id)];
        act_add(b, t->id);
        if (b->oom)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        t->stamp = 0;
    }
    m->loaded = true;
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* queues and lines */

static inline uint32_t q_occ(const wse_lq *q) { return q->pushed - q->popped; }

/* Wavelets of colour c in flight on line l. */
static inline uint32_t line_count(const wse_line *l, uint32_t c)
{
    uint32_t k = 0;
    for (uint32_t i = 0, j = l->head; i < l->n; i++, j = j + 1 == l->cap ? 0 : j + 1)
        k += l->e[j].colour == c;
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

static inline void line_put(ts_model *m, wse_tile *t, int l, uint32_t data, uint32_t c, bool ctrl, uint64_t now)
{
    wse_line *ln = &t->line[l];
    uint64_t lat = l < 4 ? m->c.hop_latency : m->c.ramp_latency + (l == WSE_LINE_UP ? m->c.pipeline_latency : 0);
    uint32_t j = (uint32_t)ln->head + ln->n++;
    wse_ent *e = &ln->e[j >= ln->cap ? j - ln->cap : j];
    t->lmask |= (uint8_t)(1u << l);
    e->land = now + lat;
    e->data = data;
    e->colour = (uint8_t)c;
    e->ctrl = ctrl;
}

static inline void q_pop(wse_tile *t, uint8_t j)
{
    t->lq[j].taken = 1;
    t->pops[t->npop++] = j;
}

static inline uint32_t q_head(const wse_lq *q, bool *ctrl)
{
    *ctrl = q->ctrl >> q->rd & 1;
    return q->slot[q->rd];
}

/* ------------------------------------------------------------------------------------------ */
/* phase A: router */

/* Forward queue heads: input ports in round-robin order, and in each port its colours in
 * round-robin order; a multicast goes only when every output it needs is free this cycle and has
 * room downstream. pm has bit p set when input port p holds wavelets. */
static void router_eval(ts_model *m, wse_tile *t, wse_band *b, uint32_t pm)
{
    uint8_t claimed = 0;
    bool fixed = m->c.arbitration == WSE_ARB_FIXED;
    int lastp = -1;
    /* ports with wavelets from rr up, then below rr: the mask rotated right by rr, so bit k is port
     * rr + k (mod 5); bit loops, no division, no idle port visited */
    uint32_t rr = fixed ? 0 : t->rr;
    uint32_t rot = ((pm >> rr) | (pm << (WSE_NPORTS - rr))) & WSE_PORT_MASK_ALL;
    for (; rot; rot &= rot - 1) {
        int p = __builtin_ctz(rot) + (int)rr;
        p -= p >= WSE_NPORTS ? WSE_NPORTS : 0;
        uint32_t start = fixed ? 0 : t->rrc[p];
        /* colours from start up, then below start */
        uint32_t bits[2] = {t->cbits[p] & (uint32_t)(~0ull << start), t->cbits[p] & (uint32_t)((1ull << start) - 1)};
        for (int half = 0; half < 2; half++)
            for (uint32_t cb = bits[half]; cb; cb &= cb - 1) {
                uint32_t c = (uint32_t)__builtin_ctz(cb);
                uint8_t j = t->qmap[(uint32_t)p * m->C + c];
                wse_lq *q = &t->lq[j];
                uint32_t occ = q_occ(q);
                if (!occ) {
                    t->cbits[p] &= ~(1u << c);
                    continue;
                }
                if (q->taken)
                    continue;
                wse_route *r = &t->route[c];
                if (!(r->rx[r->pos] >> p & 1))
                    continue;
                uint8_t tx = r->tx[r->pos];
                if (!tx || (tx & claimed))
                    continue;
                bool ok = true;
                for (uint32_t ob = tx; ob && ok; ob &= ob - 1)
                    ok = line_room(m, t, __builtin_ctz(ob), c);
                if (!ok)
                    continue;
                bool ctrl;
                uint32_t data = q_head(q, &ctrl);
                for (uint32_t ob = tx; ob; ob &= ob - 1) {
                    int o = __builtin_ctz(ob);
                    line_put(m, t, o, data, c, ctrl, b->now);
                    t->s.link[o]++;
                }
                claimed |= tx;
                q_pop(t, j);
                if (occ == q->cap && p < 4)
                    t->wup |= (uint8_t)(1u << p); /* room again: the neighbour feeding it may sleep on it */
                if (occ == 1)
                    t->cbits[p] &= ~(1u << c); /* a push this cycle sets it again next cycle */
                t->pcolour[c]++;
                if (ctrl && r->npos > 1) {
                    if (r->pos + 1 < r->npos)
                        r->pos++;
                    else if (r->ring)
                        r->pos = 0;
                }
                b->progress++;
                lastp = p;
                t->rrc[p] = (uint8_t)(c + 1 == m->C ? 0 : c + 1);
            }
    }
    if (lastp >= 0) {
        t->s.router_busy++;
        t->rr = (uint8_t)(lastp + 1 == WSE_NPORTS ? 0 : lastp + 1);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* phase A: core */

static void set_err(wse_band *b, wse_tile *t, uint64_t now, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void set_err(wse_band *b, wse_tile *t, uint64_t now, const char *fmt, ...)
{
    if (b->err_st && b->err_tile <= (int64_t)t->id)
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->err_st = TS_ESIM;
    b->err_tile = t->id;
    ts_err_sim(&b->err, t->id, (int64_t)now, "PE (%u, %u): %s", t->x, t->y, msg);
}

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
static bool vec_issue(ts_model *m, wse_tile *t, wse_band *b, const ts_insn *in, uint32_t pc)
{
    wse_ce *ce = t->ce;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    const int32_t *a = in->a;
    int nd = ts_isa_nopnds(&ts_wse_isa.ops[in->op]);
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
        set_err(b, t, b->now, "%s at pc %u: destination must be a memory or fabric-output dsd and sources memory or "
                "fabric-input dsds", ts_wse_isa.ops[in->op].mnemonic, pc);
        return false;
    }
    if (v->s0.len != v->n || (f->vop != WSE_V_MOV && v->s1.len != v->n)) {
        set_err(b, t, b->now, "%s at pc %u: operand lengths differ (%u, %u, %u)", ts_wse_isa.ops[in->op].mnemonic, pc,
                v->n, v->s0.len, f->vop != WSE_V_MOV ? v->s1.len : v->n);
        return false;
    }
    if (!dsd_fits(m, &v->d, v->n, esize, why, sizeof why) || !dsd_fits(m, &v->s0, v->n, esize, why, sizeof why) ||
        (f->vop != WSE_V_MOV && !dsd_fits(m, &v->s1, v->n, esize, why, sizeof why))) {
        set_err(b, t, b->now, "%s at pc %u: %s", ts_wse_isa.ops[in->op].mnemonic, pc, why);
        return false;
    }
    uint64_t w = simd_width(m, f->width);
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
    v->busy = v->n > 0;
    if (v->busy)
        ce->vbusy |= 1u << (th + 1);
    if (!v->busy && v->done_task >= 0)
        ce->active |= 1ull << v->done_task;
    return true;
}

/* Advance one vector op by what this cycle's ports allow; returns elements done. */
static uint32_t vec_step(ts_model *m, wse_tile *t, wse_band *b, wse_vop *v, uint32_t *rd, uint32_t *wr, bool *ramp_up,
                         uint8_t *why)
{
    const wse_opfacts *f = &ts_wse_opfacts[v->op];
    uint32_t esize = f->dtype / 8;
    uint32_t k = v->n - v->i;
    if (k > v->width)
        k = v->width;
    bool two = f->vop != WSE_V_MOV;
    const wse_dsd *src[2] = {&v->s0, two ? &v->s1 : NULL};
    uint8_t qin[2] = {WSE_NOQ, WSE_NOQ};
    uint32_t br = 0, bw = v->d.kind == DSD_MEM ? esize : 0;
    for (int s = 0; s < 2; s++) {
        if (!src[s])
            continue;
        if (src[s]->kind == DSD_MEM) {
            br += esize;
        } else {
            k = k > 1 ? 1 : k;
            uint8_t j = t->qmap[5 * m->C + src[s]->colour];
            wse_lq *q = &t->lq[j];
            bool ctrl = false;
            if (!q_occ(q) || q->taken || (q_head(q, &ctrl), ctrl) || (s == 1 && qin[0] == j)) {
                *why = 1;
                return 0;
            }
            qin[s] = j;
        }
    }
    if (v->d.kind == DSD_OUT) {
        k = k > 1 ? 1 : k;
        if (*ramp_up || !line_room(m, t, WSE_LINE_UP, v->d.colour)) {
            *why = 2;
            return 0;
        }
    }
    if (br && *rd / br < k)
        k = *rd / br;
    if (bw && *wr / bw < k)
        k = *wr / bw;
    if (!k) {
        *why = 3;
        return 0;
    }
    *rd -= k * br;
    *wr -= k * bw;
    bool timing = m->c.timing_only;
    for (uint32_t e = 0; e < k; e++, v->i++) {
        uint32_t x[2] = {0, 0};
        for (int s = 0; s < 2; s++) {
            if (!src[s])
                continue;
            if (src[s]->kind == DSD_MEM) {
                if (!timing) {
                    uint64_t a = (uint64_t)((int64_t)src[s]->base + (int64_t)v->i * src[s]->stride * (int64_t)esize);
                    x[s] = esize == 4 ? ld32(t, a) : ld16(t, a);
                }
            } else {
                bool ctrl;
                x[s] = q_head(&t->lq[qin[s]], &ctrl);
                q_pop(t, qin[s]);
            }
        }
        uint32_t y = 0;
        if (!timing) {
            if (esize == 4) {
                float a0 = f32_of(x[0]), a1 = f32_of(x[1]), r;
                switch (f->vop) {
                case WSE_V_ADD: r = a0 + a1; break;
                case WSE_V_SUB: r = a0 - a1; break;
                case WSE_V_MUL: r = a0 * a1; break;
                case WSE_V_MAC: {
                    float p = a1 * f32_of(v->scalar);
                    r = a0 + p;
                    break;
                }
                default: r = a0; break;
                }
                y = f->vop == WSE_V_MOV ? x[0] : bits_of(r);
            } else {
                float a0 = h2f((uint16_t)x[0]), a1 = h2f((uint16_t)x[1]), r;
                switch (f->vop) {
                case WSE_V_ADD: r = a0 + a1; break;
                case WSE_V_SUB: r = a0 - a1; break;
                case WSE_V_MUL: r = a0 * a1; break;
                case WSE_V_MAC: {
                    float p = a1 * h2f(f2h(f32_of(v->scalar)));
                    p = h2f(f2h(p));
                    r = a0 + p;
                    break;
                }
                default: r = a0; break;
                }
                y = f->vop == WSE_V_MOV ? (x[0] & 0xffff) : f2h(r);
            }
        }
        if (v->d.kind == DSD_MEM) {
            if (!timing) {
                uint64_t a = (uint64_t)((int64_t)v->d.base + (int64_t)v->i * v->d.stride * (int64_t)esize);
                uint8_t *mem = mem_touch(m, t);
                if (mem)
                    memcpy(mem + a, &y, esize);
                else
                    b->oom = true;
            }
        } else {
            line_put(m, t, WSE_LINE_UP, y, v->d.colour, v->d.ctrl, b->now);
            *ramp_up = true;
            t->s.injected++;
            t->s.link[WSE_R] += 0; /* the ramp up is counted as injected */
        }
    }
    t->s.sram_rd += (uint64_t)k * br;
    t->s.sram_wr += (uint64_t)k * bw;
    switch (f->vop) {
    case WSE_V_ADD:
    case WSE_V_SUB:
        if (esize == 4)
            t->s.f32_add += k;
        else
            t->s.f16_add += k;
        break;
    case WSE_V_MUL:
        if (esize == 4)
            t->s.f32_mul += k;
        else
            t->s.f16_mul += k;
        break;
    case WSE_V_MAC:
        if (esize == 4)
            t->s.f32_mac += k;
        else
            t->s.f16_mac += k;
        break;
    default: break;
    }
    return k;
}

/* Pick the next task: lowest id among runnable ones (assumed: the priority order is not public). */
static int pick_task(const ts_model *m, wse_tile *t, uint32_t pend5)
{
    wse_ce *ce = t->ce;
    uint64_t ready = ce->active & ~ce->blocked & ce->bound;
    uint64_t data = pend5 ? ce->data_task & ~ce->blocked : 0;
    while (data) {
        int c = __builtin_ctzll(data);
        data &= data - 1;
        uint8_t j = t->qmap[5 * m->C + (uint32_t)c];
        if (j == WSE_NOQ)
            continue;
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (q_occ(q) && !q->taken && (q_head(q, &ctrl), !ctrl))
            ready |= 1ull << c;
    }
    return ready ? __builtin_ctzll(ready) : -1;
}

static void start_task(ts_model *m, wse_tile *t, wse_band *b, int id)
{
    wse_ce *ce = t->ce;
    ce->task = id;
    ce->pc = ce->task_pc[id];
    if (ce->data_task >> id & 1) {
        uint8_t j = t->qmap[5 * m->C + (uint32_t)id];
        bool ctrl;
        ce->r[0] = (int32_t)q_head(&t->lq[j], &ctrl);
        q_pop(t, j);
    } else {
        ce->active &= ~(1ull << id);
    }
    t->s.tasks++;
    if (m->c.task_start_latency) {
        ce->state = CE_START;
        ce->until = b->now + m->c.task_start_latency;
    } else {
        ce->state = CE_RUN;
    }
}

/* Execute the instruction at pc. Returns 1 if issued, 0 if stalled (reason in *why). */
static int exec_insn(ts_model *m, wse_tile *t, wse_band *b, uint32_t *rd, uint32_t *wr, bool *ramp_up, uint8_t *why)
{
    wse_ce *ce = t->ce;
    uint32_t pc = ce->pc;
    if (pc >= ce->code->n) { /* falling off the end ends the task */
        ce->state = CE_IDLE;
        if (ce->task == -1)
            ce->main_done = true;
        ce->task = -2;
        return 1;
    }
    const ts_insn *in = &ce->code->insn[pc];
    const int32_t *a = in->a;
    int32_t *r = ce->r;
    uint32_t next = pc + 1;
    const wse_opfacts *f = &ts_wse_opfacts[in->op];
    switch (in->op) {
    case WSE_OP_NOP: break;
    case WSE_OP_LI:
    case WSE_OP_FLI: r[a[0]] = a[1]; break;
    case WSE_OP_MOV: r[a[0]] = r[a[1]]; break;
    case WSE_OP_ADD: r[a[0]] = (int32_t)((uint32_t)r[a[1]] + (uint32_t)r[a[2]]); break;
    case WSE_OP_ADDI: r[a[0]] = (int32_t)((uint32_t)r[a[1]] + (uint32_t)a[2]); break;
    case WSE_OP_SUB: r[a[0]] = (int32_t)((uint32_t)r[a[1]] - (uint32_t)r[a[2]]); break;
    case WSE_OP_MUL: r[a[0]] = (int32_t)((uint32_t)r[a[1]] * (uint32_t)r[a[2]]); break;
    case WSE_OP_GET: {
        uint32_t v[5] = {t->x, t->y, m->w, m->h, (uint32_t)b->now};
        r[a[0]] = (int32_t)v[a[1]];
        break;
    }
    case WSE_OP_FADD: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) + f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_FSUB: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) - f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_FMUL: r[a[0]] = (int32_t)bits_of(f32_of((uint32_t)r[a[1]]) * f32_of((uint32_t)r[a[2]])); break;
    case WSE_OP_LD:
    case WSE_OP_ST: {
        int64_t addr = (int64_t)r[a[1]] + a[2];
        if (addr < 0 || (uint64_t)addr + 4 > m->c.sram_bytes || addr % 4) {
            set_err(b, t, b->now, "%s at pc %u: address %" PRId64 " is %s", in->op == WSE_OP_LD ? "ld" : "st", pc, addr,
                    addr % 4 ? "not 4-byte aligned" : "outside the SRAM");
            return 1;
        }
        if (in->op == WSE_OP_LD) {
            if (*rd < 4) {
                *why = 3;
                return 0;
            }
            *rd -= 4;
            t->s.sram_rd += 4;
            r[a[0]] = m->c.timing_only ? 0 : (int32_t)ld32(t, (uint64_t)addr);
        } else {
            if (*wr < 4) {
                *why = 3;
                return 0;
            }
            *wr -= 4;
            t->s.sram_wr += 4;
            if (!m->c.timing_only) {
                uint8_t *mem = mem_touch(m, t);
                if (!mem) {
                    b->oom = true;
                    return 1;
                }
                memcpy(mem + addr, &r[a[0]], 4);
            }
        }
        break;
    }
    case WSE_OP_BR: next = (uint32_t)a[0]; break;
    case WSE_OP_BZ: if (!r[a[0]]) next = (uint32_t)a[1]; break;
    case WSE_OP_BNZ: if (r[a[0]]) next = (uint32_t)a[1]; break;
    case WSE_OP_BLT: if (r[a[0]] < r[a[1]]) next = (uint32_t)a[2]; break;
    case WSE_OP_WAIT:
        if (a[0] > 1) {
            ce->state = CE_WAIT;
            ce->until = b->now + (uint64_t)a[0];
        }
        break;
    case WSE_OP_ACTIVATE: ce->active |= 1ull << a[0]; break;
    case WSE_OP_BLOCK: ce->blocked |= 1ull << a[0]; break;
    case WSE_OP_UNBLOCK: ce->blocked &= ~(1ull << a[0]); break;
    case WSE_OP_EXIT:
        if (ce->task == -1)
            ce->main_done = true;
        ce->task = -2;
        ce->state = CE_IDLE;
        break;
    case WSE_OP_SEND:
    case WSE_OP_SENDC:
        if (*ramp_up || !line_room(m, t, WSE_LINE_UP, (uint32_t)a[0])) {
            *why = 2;
            return 0;
        }
        line_put(m, t, WSE_LINE_UP, (uint32_t)r[a[1]], (uint32_t)a[0], in->op == WSE_OP_SENDC, b->now);
        *ramp_up = true;
        t->s.injected++;
        break;
    case WSE_OP_RECV: {
        uint8_t j = t->qmap[5 * m->C + (uint32_t)a[1]];
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (!q_occ(q) || q->taken || (q_head(q, &ctrl), ctrl)) {
            *why = 1;
            return 0;
        }
        r[a[0]] = (int32_t)q_head(q, &ctrl);
        q_pop(t, j);
        break;
    }
    case WSE_OP_DSDM:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_MEM, .base = a[1], .len = (uint32_t)a[2], .stride = a[3]};
        break;
    case WSE_OP_DSDIN:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_IN, .colour = (uint8_t)a[1], .len = (uint32_t)a[2]};
        break;
    case WSE_OP_DSDOUT:
        ce->dsd[a[0]] = (wse_dsd){.kind = DSD_OUT, .colour = (uint8_t)a[1], .len = (uint32_t)a[2], .ctrl = a[3] != 0};
        break;
    case WSE_OP_DSDBASE: ce->dsd[a[0]].base = (int32_t)((uint32_t)r[a[1]] + (uint32_t)a[2]); break;
    case WSE_OP_DSDLEN:
        if (r[a[1]] < 0 || r[a[1]] > 65535) {
            set_err(b, t, b->now, "dsdlen at pc %u: length %d is outside 0..65535", pc, r[a[1]]);
            return 1;
        }
        ce->dsd[a[0]].len = (uint32_t)r[a[1]];
        break;
    default:
        if (f->unit == WSE_U_VEC) {
            int nd = ts_isa_nopnds(&ts_wse_isa.ops[in->op]);
            int th = a[nd - 2];
            if (ce->th[th + 1].busy) {
                *why = 4;
                return 0;
            }
            if (!vec_issue(m, t, b, in, pc))
                return 1;
            if (th == -1 && ce->th[0].busy)
                ce->state = CE_WAITVEC;
            break;
        }
        set_err(b, t, b->now, "op %u has no executor", in->op);
        return 1;
    }
    if (f->unit == WSE_U_ALU && f->energy)
        t->s.int_ops++;
    if (f->unit == WSE_U_FPU) {
        if (in->op == WSE_OP_FMUL)
            t->s.f32_mul++;
        else
            t->s.f32_add++;
    }
    for (int j = 0; j < TS_MAX_OPNDS && ts_wse_isa.ops[in->op].opnd[j]; j++)
        if ((ts_wse_isa.ops[in->op].opnd[j] & TS_OK_KIND_MASK) == TS_OK_REG)
            t->s.regs++;
    if (ce->state != CE_IDLE || in->op == WSE_OP_EXIT)
        ce->pc = next;
    return 1;
}

/* A vector op still running whose operands are all in memory: with the ports to itself, it moves
 * the same number of elements every cycle until its last. */
static inline bool vec_in_memory(const wse_vop *v)
{
    return v->busy && v->d.kind == DSD_MEM && v->s0.kind == DSD_MEM &&
           (ts_wse_opfacts[v->op].vop == WSE_V_MOV || v->s1.kind == DSD_MEM);
}

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

static void ce_eval(ts_model *m, wse_tile *t, wse_band *b, uint32_t pend5)
{
    wse_ce *ce = t->ce;
    uint32_t rd = (uint32_t)m->c.read_bytes, wr = (uint32_t)m->c.write_bytes;
    bool ramp_up = false, busy = false, stalled = false;
    uint8_t why = 0;
    /* control wavelets at the head of core queues activate their task (§1.6 control tasks) */
    for (uint32_t j = t->nrq; j < t->nlq && pend5; j++) {
        wse_lq *q = &t->lq[j];
        bool ctrl = false;
        if (q_occ(q) && !q->taken && (q_head(q, &ctrl), ctrl)) {
            ce->active |= 1ull << (q_head(q, &ctrl) & 63);
            q_pop(t, (uint8_t)j);
            b->progress++;
        }
    }
    /* main thread: pick, start, wait, issue */
    if (ce->state == CE_WAIT && b->now >= ce->until)
        ce->state = CE_RUN;
    if (ce->state == CE_START && b->now >= ce->until)
        ce->state = CE_RUN;
    if (ce->state == CE_WAITVEC && !ce->th[0].busy)
        ce->state = CE_RUN;
    if (ce->state == CE_IDLE) {
        int id = pick_task(m, t, pend5);
        if (id >= 0) {
            start_task(m, t, b, id);
            b->progress++;
        }
    }
    if (ce->state == CE_RUN) {
        if (exec_insn(m, t, b, &rd, &wr, &ramp_up, &why)) {
            busy = true;
            t->s.insns++;
            b->progress++;
        } else {
            stalled = true;
        }
    } else if (ce->state == CE_WAIT || ce->state == CE_START) {
        b->progress++; /* time passes towards a known cycle */
    }
    /* vector ops: main thread's first, then microthreads in id order */
    uint32_t moved = 0, vth = 0, vk = 0;
    for (uint32_t vb = ce->vbusy; vb; vb &= vb - 1) {
        uint32_t i = (uint32_t)__builtin_ctz(vb);
        wse_vop *v = &ce->th[i];
        uint8_t vwhy = 0;
        uint32_t k = vec_step(m, t, b, v, &rd, &wr, &ramp_up, &vwhy);
        if (k) {
            busy = true;
            b->progress += k;
            moved++;
            vth = i;
            vk = k;
            if (v->i == v->n) {
                v->busy = false;
                ce->vbusy &= ~(1u << i);
                if (v->done_task >= 0)
                    ce->active |= 1ull << v->done_task;
            }
        } else {
            stalled = true;
            if (!why)
                why = vwhy;
        }
    }
    if (moved == 1 && vec_in_memory(&ce->th[vth])) {
        t->vth = (uint8_t)vth;
        t->vk = vk;
    }
    if (busy) {
        t->s.busy++;
        t->blk_why = 0;
    } else if (!stalled) {
        t->blk_why = 0;
    } else {
        t->blk_why = why >= 1 && why <= 3 ? why : 4;
        count_stall(t, t->blk_why, 1);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* phase B */

static void log_arrival(ts_model *m, wse_tile *t, uint32_t c, uint64_t when, wse_band *b)
{
    if (!t->log) {
        t->log = ts_calloc((size_t)m->C * WSE_ARRIVAL_LOG, sizeof *t->log);
        t->narr = ts_calloc(m->C, sizeof *t->narr);
        if (!t->log || !t->narr) {
            ts_free(t->log);
            ts_free(t->narr);
            t->log = t->narr = NULL;
            b->oom = true;
            return;
        }
    }
    if (t->narr[c] < WSE_ARRIVAL_LOG)
        t->log[c * WSE_ARRIVAL_LOG + t->narr[c]] = when;
    t->narr[c]++;
}

/* Tile o was pushed to in phase B: a tile of the band joins the next active list at once (its stamp
 * is the band's own), a tile of another band is left on the cross-band list its band merges after
 * the barrier. Lockstep evaluates every tile anyway. */
static inline void wake(const ts_model *m, wse_band *b, wse_tile *o)
{
    if (m->lockstep)
        return;
    if (o->id >= b->id0 && o->id < b->id1) {
        if (o->stamp == b->now + 1)
            return;
        o->stamp = b->now + 1;
        next_add(b, o->id);
        return;
    }
    uint32_t p = b->par;
    if (b->nxwake[p] == b->cap_xwake[p] &&
        ts_grow((void **)&b->xwake[p], &b->cap_xwake[p], b->nxwake[p] + 1, sizeof *b->xwake[p])) {
        b->oom = true;
        return;
    }
    b->xwake[p][b->nxwake[p]++] = o->id;
}

/* Nothing left to do unless woken. In phase B only the tile's own view of its queues (qleft, from
 * phase A) is read: producers push concurrently, and every push wakes the tile anyway. With exact,
 * for single-threaded callers, the queues themselves are read. */
static bool tile_quiet(const ts_model *m, const wse_tile *t, bool exact)
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

static void tile_commit(ts_model *m, wse_tile *t, wse_band *b)
{
    for (uint32_t i = 0; i < t->npop; i++) {
        wse_lq *q = &t->lq[t->pops[i]];
        q->popped++;
        q->rd = (uint8_t)(q->rd + 1 == q->cap ? 0 : q->rd + 1);
        t->ppop[q->port]++;
        q->taken = 0;
    }
    t->npop = 0;
    for (uint32_t wp = t->wup; wp; wp &= wp - 1) {
        wse_tile *o = t->nb[__builtin_ctz(wp)];
        if (o)
            wake(m, b, o);
    }
    t->wup = 0;
    for (uint32_t lm = t->lmask; lm; lm &= lm - 1) {
        int l = __builtin_ctz(lm);
        wse_line *ln = &t->line[l];
        while (ln->n && ln->e[ln->head].land <= b->now + 1) {
            wse_ent *e = &ln->e[ln->head];
            wse_tile *o;
            wse_lq *q = line_target(m, t, l, e->colour, &o);
            uint32_t slot = q->wr;
            q->wr = (uint8_t)(q->wr + 1 == q->cap ? 0 : q->wr + 1);
            q->slot[slot] = e->data;
            if (e->ctrl)
                q->ctrl |= 1ull << slot;
            else
                q->ctrl &= ~(1ull << slot);
            q->pushed++;
            o->ppush[q->port]++;
            o->pbits[q->port] ^= 1u << e->colour;
            if (l == WSE_LINE_DOWN) {
                t->s.delivered++;
                if (!e->ctrl)
                    log_arrival(m, t, e->colour, e->land, b);
            }
            wake(m, b, o); /* also when o is t: its phase-A view (qleft) did not count this push */
            ln->head = (uint8_t)(ln->head + 1 == ln->cap ? 0 : ln->head + 1);
            ln->n--;
            b->progress++;
        }
        if (ln->n)
            b->progress++; /* a wavelet in flight lands at a known cycle */
        else
            t->lmask &= (uint8_t)~(1u << l);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the cycle loop */


static bool tm_less(const wse_timer *a, const wse_timer *b) { return a->at < b->at || (a->at == b->at && a->id < b->id); }

static void tm_push(wse_band *b, uint64_t at, uint32_t id)
{
    if (ts_grow((void **)&b->tm, &b->cap_tm, b->ntm + 1, sizeof *b->tm)) {
        b->oom = true;
        return;
    }
    size_t i = b->ntm++;
    b->tm[i] = (wse_timer){at, id};
    while (i && tm_less(&b->tm[i], &b->tm[(i - 1) / 2])) {
        wse_timer x = b->tm[i];
        b->tm[i] = b->tm[(i - 1) / 2];
        b->tm[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static wse_timer tm_pop(wse_band *b)
{
    wse_timer top = b->tm[0];
    b->tm[0] = b->tm[--b->ntm];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, k = i;
        if (l < b->ntm && tm_less(&b->tm[l], &b->tm[k]))
            k = l;
        if (r < b->ntm && tm_less(&b->tm[r], &b->tm[k]))
            k = r;
        if (k == i)
            break;
        wse_timer x = b->tm[i];
        b->tm[i] = b->tm[k];
        b->tm[k] = x;
        i = k;
    }
    return top;
}

/* A tile whose only business is a core counting down to a known cycle can sleep until then: the
 * cycles between change nothing (a push into its queues wakes it earlier). */
static bool tile_sleeps(const ts_model *m, const wse_band *b, const wse_tile *t, uint64_t *at)
{
    const wse_ce *ce = t->ce;
    if (!ce || (ce->state != CE_WAIT && ce->state != CE_START) || ce->until <= b->now + 1 || t->qleft || t->lmask ||
        ce->vbusy)
        return false;
    *at = ce->until;
    return true;
}

/* Add band b's timers due by cycle `upto` to its active list (stamped for that cycle). */
static void timers_due(ts_model *m, wse_band *b, uint64_t upto, bool now)
{
    while (b->ntm && b->tm[0].at <= upto) {
        wse_timer x = tm_pop(b);
        wse_tile *t = m->t[x.id];
        b->progress++; /* a sleeper wakes: the cycle is not frozen */
        if (t->sleep_at == x.at)
            t->sleep_at = 0;
        if (t->stamp == upto)
            continue;
        t->stamp = upto;
        if (now)
            act_add(b, x.id);
        else
            next_add(b, x.id);
    }
}

static inline bool has_edges(const wse_band *b) { return b->edge_lo > b->id0 || b->edge_hi < b->id1; }

#define WSE_SPINS 4000 /* spins before yielding; a cycle of a 16 x 16 band takes a few microseconds */

static uint64_t host_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Wait until counter a has reached seq, or the run is stopping (false). The host time band b
 * waits is counted for balancing the bands (rebalance()). */
static bool wait_seq(const ts_model *m, wse_band *b, const _Atomic uint32_t *a, uint32_t seq)
{
    if ((int32_t)(atomic_load_explicit(a, memory_order_acquire) - seq) >= 0)
        return true;
    uint64_t t0 = host_ns();
    bool ok = true;
    for (unsigned i = 0; (int32_t)(atomic_load_explicit(a, memory_order_acquire) - seq) < 0; i++) {
        if (atomic_load_explicit(&m->abort, memory_order_acquire)) {
            ok = false;
            break;
        }
        if (i >= WSE_SPINS)
            sched_yield();
    }
    b->waited_ns += host_ns() - t0;
    return ok;
}

/* Wait until the neighbouring bands' counter (a_seq or b_seq, by offset) has reached seq. */
static bool wait_nb(const ts_model *m, int k, size_t off, uint32_t seq)
{
    for (int o = k - 1; o <= k + 1; o += 2)
        if (o >= 0 && o < m->nthreads &&
            !wait_seq(m, &m->band[k], (const _Atomic uint32_t *)((const char *)&m->band[o] + off), seq))
            return false;
    return true;
}

/* Step the vector op of a tile asleep while it runs alone (vth, from cycle vfrom) through the cycles
 * before `upto`: each one as its evaluation would have (the rest of the tile stalls through them,
 * using no port), never its last step. */
static void vec_catch_up(ts_model *m, wse_tile *t, wse_band *b, uint64_t upto)
{
    wse_vop *v = &t->ce->th[t->vth];
    for (uint64_t c = t->vfrom; c < upto; c++) {
        uint32_t rd = (uint32_t)m->c.read_bytes, wr = (uint32_t)m->c.write_bytes;
        bool ramp_up = false;
        uint8_t why = 0;
        vec_step(m, t, b, v, &rd, &wr, &ramp_up, &why);
        t->s.busy++;
    }
    t->vfrom = upto;
}

static void eval_tile(ts_model *m, wse_band *b, wse_tile *t)
{
    uint32_t pend, total = 0, pm = 0;
    uint64_t progress = b->progress;
    t->s.evals++;
    if (__builtin_expect((t->blk | t->vfrom) != 0, 0)) {
        if (t->blk) /* the cycles it slept through, each the same stall as its last evaluation */
            count_stall(t, t->blk_why, b->now - t->blk);
        else /* the cycles its vector op ran alone */
            vec_catch_up(m, t, b, b->now);
        t->blk = t->vfrom = 0;
        b->nblk--;
    }
    t->vth = WSE_NOQ;
    for (int p = 0; p < 6; p++) {
        total += pend = t->ppush[p] - t->ppop[p];
        pm |= (uint32_t)(pend != 0) << p;
        uint32_t arrived = t->pbits[p] ^ t->pseen[p];
        t->pseen[p] = t->pbits[p];
        t->cbits[p] = pend ? t->cbits[p] | arrived : 0;
    }
    if (pm & 31)
        router_eval(m, t, b, pm & 31);
    if (t->ce)
        ce_eval(m, t, b, pend);
    t->qleft = total - t->npop;
    t->still = b->progress == progress;
    if (t->vth != WSE_NOQ && b->progress - progress != t->vk)
        t->vth = WSE_NOQ; /* something else moved too */
}

static void commit_tile(ts_model *m, wse_band *b, wse_tile *t)
{
    tile_commit(m, t, b);
    uint64_t at;
    if (m->lockstep)
        return;
    if (tile_sleeps(m, b, t, &at)) {
        if (t->sleep_at != at) { /* woken by a push and asleep again: the timer is already set */
            tm_push(b, at, t->id);
            t->sleep_at = at;
        }
        b->progress += at - b->now; /* the cycles it sleeps through count as progress */
    } else if (!tile_quiet(m, t, false) && t->stamp != b->now + 1) {
        if (t->still && !t->lmask) {
            /* blocked: the same stall every cycle until a wavelet lands in its queues or one of the
             * queues it waits to push into gets room, and both wake it */
            t->blk = b->now + 1;
            b->nblk++;
            return;
        }
        if (t->vth != WSE_NOQ && !t->lmask) {
            /* only a vector op on memory moved: it moves vk elements a cycle, the rest stays blocked,
             * until its last step at cycle `at` (a push or a pop wakes the tile earlier) */
            const wse_vop *v = &t->ce->th[t->vth];
            at = b->now + (v->n - v->i + t->vk - 1) / t->vk;
            if (at > b->now + 1) {
                if (t->sleep_at != at) {
                    tm_push(b, at, t->id);
                    t->sleep_at = at;
                }
                t->vfrom = b->now + 1;
                b->nblk++;
                b->progress += at - b->now;
                return;
            }
        }
        t->stamp = b->now + 1;
        next_add(b, t->id);
    }
}

static void eval_list(ts_model *m, wse_band *b, const wse_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        eval_tile(m, b, m->t[l->v[i]]);
}

static void commit_list(ts_model *m, wse_band *b, const wse_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        commit_tile(m, b, m->t[l->v[i]]);
}

/* Phases A and B of band b (thread k) in cycle seq. A tile's phase B must follow phase A of each
 * of its neighbours, and its phase A must come before phase B of each of them; only zone E (within
 * a row of another band) has neighbours in other bands, and its neighbours in its own band are in
 * E or S (two rows). So: A of E, published (a_seq); A of S; once the neighbouring bands' E are
 * through A, B of E, published (b_seq): the neighbours' next cycle needs only that; then A of the
 * inner zone I and B of S and I, which no other band reads. False if the run stops meanwhile. */
static bool phases(ts_model *m, wse_band *b, int k, uint32_t seq)
{
    b->nact_done = b->act[WSE_ZE].n + b->act[WSE_ZS].n + b->act[WSE_ZI].n;
    for (int z = 0; z < WSE_NZ; z++)
        b->next[z].n = 0;
    eval_list(m, b, &b->act[WSE_ZE]);
    if (has_edges(b))
        atomic_store_explicit(&b->a_seq, seq, memory_order_release);
    eval_list(m, b, &b->act[WSE_ZS]);
    eval_list(m, b, &b->act[WSE_ZI]);
    if (has_edges(b)) {
        if (!wait_nb(m, k, offsetof(wse_band, a_seq), seq))
            return false;
        b->nxwake[b->par] = 0; /* its readers merged it two cycles ago: they are through A of seq */
    }
    commit_list(m, b, &b->act[WSE_ZE]);
    if (has_edges(b))
        atomic_store_explicit(&b->b_seq, seq, memory_order_release);
    commit_list(m, b, &b->act[WSE_ZS]);
    commit_list(m, b, &b->act[WSE_ZI]);
    return true;
}

/* Band k's next active lists: its own survivors and wakes (listed in phase B), the neighbouring
 * bands' wakes of its tiles, and its timers due. */
static void merge(ts_model *m, int k)
{
    wse_band *b = &m->band[k];
    if (m->lockstep)
        return; /* lockstep: every allocated tile of the band, every cycle */
    uint64_t stamp = b->now + 1;
    for (int o = k - 1; o <= k + 1; o += 2) {
        if (o < 0 || o >= m->nthreads)
            continue;
        const wse_band *ob = &m->band[o];
        for (size_t i = 0; i < ob->nxwake[b->par]; i++) {
            uint32_t id = ob->xwake[b->par][i];
            if (id < b->id0 || id >= b->id1)
                continue;
            wse_tile *t = m->t[id];
            if (t->stamp == stamp)
                continue;
            t->stamp = stamp;
            next_add(b, id);
        }
    }
    timers_due(m, b, stamp, false);
    for (int z = 0; z < WSE_NZ; z++) {
        wse_list tmp = b->act[z];
        b->act[z] = b->next[z];
        b->next[z] = tmp;
        b->next[z].n = 0;
    }
}

static ts_status lockstep_lists(ts_model *m, ts_err *err)
{
    for (int k = 0; k < m->nthreads; k++) {
        wse_band *b = &m->band[k];
        for (int z = 0; z < WSE_NZ; z++)
            b->act[z].n = 0;
        for (size_t i = 0; i < m->nalloc; i++) {
            uint32_t id = m->alloc_ids[i];
            if (id >= b->id0 && id < b->id1)
                act_add(b, id);
        }
        if (b->oom)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    return TS_OK;
}

/* Band k's exact quiet test over its own tiles (lockstep: the lists do not say who is idle). Read
 * after phase B of every band, when no queue changes. */
static bool band_quiet_exact(const ts_model *m, int k)
{
    const wse_band *b = &m->band[k];
    for (size_t i = 0; i < m->nalloc; i++) {
        uint32_t id = m->alloc_ids[i];
        if (id >= b->id0 && id < b->id1 && !tile_quiet(m, m->t[id], true))
            return false;
    }
    return true;
}

/* What a band leaves for the end-of-cycle decision of cycle seq, written by its thread after its
 * phase B and published (s_seq); read by the threads that decide that cycle. Kept in a ring of
 * WSE_NSUM cycles: a band is at most a cycle ahead of its neighbours, so at most nthreads - 1
 * ahead of any band. */
static wse_sum *band_summary(const ts_model *m, wse_band *b, uint32_t seq)
{
    wse_sum *s = &b->sum[seq % WSE_NSUM];
    s->next = b->next[WSE_ZE].n + b->next[WSE_ZS].n + b->next[WSE_ZI].n;
    s->wake = b->nxwake[b->par];
    s->ntm = b->ntm;
    s->tm_first = b->ntm ? b->tm[0].at : UINT64_MAX;
    s->progress = b->progress;
    s->nblk = b->nblk;
    s->nact = b->nact_done;
    s->oom = b->oom;
    s->err_tile = b->err_st ? b->err_tile : -1;
    s->quiet = m->lockstep && m->nthreads == 1 ? band_quiet_exact(m, 0) : s->quiet;
    b->tile_cycles += b->nact_done;
    b->work += b->progress;
    b->progress = 0;
    return s;
}

/* The end-of-cycle decision, a pure function of the bands' summaries of the cycle, so every thread
 * that takes it computes the same one. */
static void decide(const ts_model *m, uint64_t now, uint32_t seq, wse_decision *d)
{
    *d = (wse_decision){.next = now + 1, .eband = -1};
    int64_t etile = -1;
    uint64_t next = 0, wake = 0, ntm = 0, first = UINT64_MAX, progress = 0;
    int64_t nblk = 0;
    bool quiet = true;
    for (int k = 0; k < m->nthreads; k++) {
        const wse_sum *s = &m->band[k].sum[seq % WSE_NSUM];
        progress += s->progress;
        d->oom |= s->oom;
        if (s->err_tile >= 0 && (etile < 0 || s->err_tile < etile)) {
            etile = s->err_tile;
            d->eband = k;
        }
        next += s->next;
        wake += s->wake;
        ntm += s->ntm;
        nblk += s->nblk;
        if (s->tm_first < first)
            first = s->tm_first;
        quiet = quiet && s->quiet;
    }
    if (d->oom || d->eband >= 0) {
        d->stop = true;
        return;
    }
    /* quiet: the merged lists would be empty and no sleeper is left */
    if (m->lockstep ? quiet : !next && !wake && !ntm && !nblk) {
        d->done = d->stop = true;
        return;
    }
    /* fast mode with only sleepers, none due next cycle: jump to the first wake-up */
    if (!m->lockstep && !next && !wake && ntm && first > now + 1) {
        d->jump = true;
        d->next = first > m->limit ? m->limit : first;
        /* sleepers whose counters lag (blocked, or a vector op stepped later) count the cycles
         * jumped over: an activity window's end is not jumped over then, so those cycles fall into
         * the windows they belong to */
        if (nblk && m->act && d->next > (now / m->act_window + 1) * m->act_window)
            d->next = (now / m->act_window + 1) * m->act_window;
        if (d->next < now + 1)
            d->next = now + 1;
        d->stop = d->next >= m->limit;
        return;
    }
    if (!progress && !ntm) {
        /* nothing changed, and no sleeper will wake: nothing ever will (see end_run) */
        d->deadlock_check = d->stop = true;
        return;
    }
    d->stop = d->next >= m->limit;
}

/* Whether a band's own summary settles the decision: decide() goes on to the next cycle, whatever
 * the other bands say, unless one of them failed (an error or no memory stops the run, and what a
 * band did after that cycle does not count). A band with tiles to run next cycle rules out done
 * and a jump; one that made progress or has sleepers rules out a deadlock. */
static bool goes_on(const ts_model *m, const wse_band *b, const wse_sum *s)
{
    return (s->next || s->wake) && (s->progress || s->ntm) && !s->oom && s->err_tile < 0 && b->now + 1 < m->limit;
}

/* After the decision: the band's next list and cycle (every thread for its band). */
static void band_advance(ts_model *m, int k, const wse_decision *d)
{
    wse_band *b = &m->band[k];
    if (!d->oom && d->eband < 0 && !d->done) {
        merge(m, k);
        if (d->jump)
            timers_due(m, b, d->next, true);
    }
    b->now = d->next;
}

/* The model-wide effects of the run's last decision (after every thread has stopped). A cycle of
 * full queues with no progress and no sleeper is a deadlock; anything else quiet-but-unfinished is
 * left to the kernel's hang detector (blocked() says who waits on what). */
static void end_run(ts_model *m, const wse_decision *d)
{
    for (int k = 0; k < m->nthreads; k++) {
        m->tile_cycles += m->band[k].tile_cycles;
        m->work += m->band[k].work;
        m->band[k].tile_cycles = m->band[k].work = 0;
    }
    m->now = d->next;
    m->stop = d->stop;
    m->deadlock = d->deadlock_check;
    if (d->oom) {
        m->run_st = ts_err_set(m->run_err, TS_ENOMEM, "out of memory at cycle %" PRIu64, m->now);
        return;
    }
    if (d->eband >= 0) {
        wse_band *b = &m->band[d->eband];
        ts_err_free(m->run_err);
        *m->run_err = b->err;
        ts_err_init(&b->err);
        m->run_st = TS_ESIM;
        return;
    }
    m->done = d->done;
}

/* Bring the counters of the sleepers that lag up to cycle `upto`: a blocked tile counts its stalls
 * of the cycles before it and counts again from cycle `from` on (from > upto: the cycles between
 * are not simulated); a vector op running alone is stepped through the cycles before it. Run with
 * no thread in phase A or B, so the counters are exact for the cycles simulated (reports, activity
 * windows). */
static void settle_blocked(ts_model *m, uint64_t upto, uint64_t from)
{
    for (size_t i = 0; i < m->nalloc; i++) {
        wse_tile *t = m->t[m->alloc_ids[i]];
        if (t->blk) {
            count_stall(t, t->blk_why, upto - t->blk);
            t->blk = from;
        }
        if (t->vfrom) /* on a timer no later than its last step, so never skips cycles */
            vec_catch_up(m, t, &m->band[0], upto);
    }
}

/* Called after the run when decide() found no progress: by then every thread has stopped. */
static void deadlock_check(ts_model *m)
{
    ts_status rc = ts_wse_deadlock(m, m->run_err);
    if (rc) {
        m->run_st = rc;
    } else {
        settle_blocked(m, m->now, m->limit); /* the cycles up to the limit are not simulated */
        m->now = m->limit;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* threads: a sense-reversing barrier that spins on C11 atomics and yields when spinning long */

static void spin_barrier(ts_model *m, uint32_t *sense)
{
    uint32_t s = *sense ^ 1u;
    *sense = s;
    if (atomic_fetch_add_explicit(&m->bar_count, 1, memory_order_acq_rel) + 1 == (uint32_t)m->nthreads) {
        atomic_store_explicit(&m->bar_count, 0, memory_order_relaxed);
        atomic_store_explicit(&m->bar_sense, s, memory_order_release);
        return;
    }
    for (unsigned i = 0; atomic_load_explicit(&m->bar_sense, memory_order_acquire) != s; i++) {
        if (atomic_load_explicit(&m->abort, memory_order_acquire))
            return; /* a band stopped on an error: the others will not come */
        if (i >= WSE_SPINS)
            sched_yield();
    }
}

#define WSE_REBALANCE_FIRST 1024  /* cycles measured before the first re-split */
#define WSE_REBALANCE_EVERY 8192  /* cycles between re-splits after it */
#define WSE_COST_EVAL 4           /* a tile's evaluation costs about 4 instructions or 2 hops (measured) */
#define WSE_COST_HOP 2

/* Re-split the ids among the threads by the work each tile took so far, and hand every active tile
 * and sleeper to its new band. A tile's work is counted in evaluations, instructions and hops,
 * scaled by the host time its band took per unit of that count since the last split (the time it
 * did not wait), so a band whose tiles cost more per count gets fewer. Run by one thread while the
 * others wait between two barriers, after every band's merge; any split gives the same results. */
static ts_status rebalance(ts_model *m, ts_err *err)
{
    uint64_t *weight = ts_malloc((m->nalloc ? m->nalloc : 1) * sizeof *weight);
    size_t nact = 0, ntm = 0;
    for (int k = 0; k < m->nthreads; k++) {
        for (int z = 0; z < WSE_NZ; z++)
            nact += m->band[k].act[z].n;
        ntm += m->band[k].ntm;
    }
    uint32_t *act = ts_malloc((nact ? nact : 1) * sizeof *act);
    wse_timer *tm = ts_malloc((ntm ? ntm : 1) * sizeof *tm);
    if (!weight || !act || !tm) {
        ts_free(weight);
        ts_free(act);
        ts_free(tm);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    if (!m->split_w && !(m->split_w = ts_calloc(m->nalloc ? m->nalloc : 1, sizeof *m->split_w))) {
        ts_free(weight);
        ts_free(act);
        ts_free(tm);
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    }
    for (int k = 0; k < m->nthreads; k++)
        m->band[k].split_sum = 0;
    for (size_t i = 0; i < m->nalloc; i++) {
        const wse_tile *t = m->t[m->alloc_ids[i]];
        weight[i] = WSE_COST_EVAL * t->s.evals + t->s.insns;
        for (int p = 0; p < WSE_NPORTS; p++)
            weight[i] += WSE_COST_HOP * t->s.link[p];
        m->band[band_of(m, t->id)].split_sum += (double)(weight[i] - m->split_w[i]);
        m->split_w[i] = weight[i];
    }
    uint64_t now = host_ns();
    for (int k = 0; k < m->nthreads; k++) {
        wse_band *b = &m->band[k];
        double busy = (double)(b->busy_ns + (now - b->mark_ns)) - (double)b->waited_ns;
        b->split_sum = busy > 0 && b->split_sum > 0 ? busy / b->split_sum : 1;
        b->busy_ns = b->waited_ns = 0;
        b->mark_ns = now;
    }
    for (size_t i = 0; i < m->nalloc; i++)
        weight[i] = (uint64_t)((double)weight[i] * m->band[band_of(m, m->alloc_ids[i])].split_sum);
    nact = ntm = 0;
    for (int k = 0; k < m->nthreads; k++) {
        wse_band *b = &m->band[k];
        for (int z = 0; z < WSE_NZ; z++) {
            if (b->act[z].n)
                memcpy(act + nact, b->act[z].v, b->act[z].n * sizeof *act);
            nact += b->act[z].n;
            b->act[z].n = 0;
        }
        if (b->ntm)
            memcpy(tm + ntm, b->tm, b->ntm * sizeof *tm);
        ntm += b->ntm;
        b->ntm = 0;
    }
    split_bands(m, weight);
    for (size_t i = 0; i < nact; i++)
        act_add(&m->band[band_of(m, act[i])], act[i]);
    for (size_t i = 0; i < ntm; i++)
        tm_push(&m->band[band_of(m, tm[i].id)], tm[i].at, tm[i].id);
    ts_free(weight);
    ts_free(act);
    ts_free(tm);
    for (int k = 0; k < m->nthreads; k++)
        if (m->band[k].oom)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

typedef struct thr_arg {
    ts_model *m;
    int k;
} thr_arg;

/* One thread's cycle loop. In the fast mode with threads the bands meet only where they touch
 * (phases(): a_seq, b_seq) and before merging the neighbours' wakes (b_seq): a band may be a cycle
 * ahead of its neighbour. Each band decides alone when its own summary settles the decision
 * (goes_on), else it waits for every band's summary of the cycle (s_seq). A band that decides to
 * stop publishes the decision; when it is an error, bands that went on past the cycle see that
 * (abort) while waiting and stop too. Lockstep meets at a barrier every cycle (its quiet test reads every band's tiles). The
 * activity windows and the re-splits meet at barriers too, at cycles every band knows. */
static void *thread_main(void *p)
{
    thr_arg *a = p;
    ts_model *m = a->m;
    int k = a->k;
    wse_band *b = &m->band[k];
    uint32_t sense = 0;
    b->mark_ns = host_ns();
    bool loose = m->nthreads > 1 && m->nthreads <= WSE_NSUM - 2 && !m->lockstep;
    for (uint32_t seq = 1;; seq++) {
        b->par = seq & 1;
        if (!phases(m, b, k, seq))
            break;
        wse_sum *s = band_summary(m, b, seq);
        atomic_store_explicit(&b->s_seq, seq, memory_order_release);
        wse_decision d;
        if (loose) {
            if (goes_on(m, b, s)) {
                d = (wse_decision){.next = b->now + 1, .eband = -1};
            } else {
                bool ok = true;
                for (int o = 0; o < m->nthreads && ok; o++)
                    ok = o == k || wait_seq(m, b, &m->band[o].s_seq, seq);
                if (!ok)
                    break;
                decide(m, b->now, seq, &d);
            }
            if (!wait_nb(m, k, offsetof(wse_band, b_seq), seq))
                break;
        } else {
            if (m->nthreads > 1)
                spin_barrier(m, &sense);
            if (m->lockstep && m->nthreads > 1) {
                s->quiet = band_quiet_exact(m, k);
                spin_barrier(m, &sense);
            }
            decide(m, b->now, seq, &d);
        }
        uint64_t was = b->now;
        band_advance(m, k, &d);
        b->last = d;
        if (d.stop) {
            /* every band that decides this cycle decides the same: the first one publishes it */
            uint32_t none = 0;
            if (atomic_compare_exchange_strong(&m->stop_claim, &none, 1u))
                m->final = d;
            if (d.oom || d.eband >= 0) {
                atomic_store_explicit(&m->abort, 1u, memory_order_release);
                break; /* other bands may be past this cycle: no window is sampled */
            }
        }
        if (m->act && ts_wse_act_due(m, was, d.next)) { /* a window ends: sampled with every thread here */
            if (m->nthreads > 1)
                spin_barrier(m, &sense);
            if (k == 0) {
                settle_blocked(m, d.next, d.next);
                ts_wse_act_window(m, was, d.next);
            }
            if (m->nthreads > 1)
                spin_barrier(m, &sense);
            if (m->act_stop && m->run_st)
                break;
        }
        if (d.stop)
            break;
        if (m->rebalance_at && b->now >= m->rebalance_at) {
            spin_barrier(m, &sense);
            if (k == 0) {
                m->run_st = rebalance(m, m->run_err);
                m->rebalance_at = b->now + WSE_REBALANCE_EVERY;
            }
            spin_barrier(m, &sense);
            if (m->run_st)
                break;
        }
    }
    b->busy_ns += host_ns() - b->mark_ns;
    return NULL;
}

/* Run the cycle loop on every band up to `limit` (or an earlier stop). */
static ts_status run_threads(ts_model *m, uint64_t limit, ts_err *err)
{
    m->limit = limit;
    m->stop = m->done || m->now >= limit;
    m->run_st = TS_OK;
    m->run_err = err;
    m->deadlock = false;
    bool ran = !m->stop;
    for (int k = 0; k < m->nthreads; k++) {
        m->band[k].now = m->now;
        m->band[k].last = (wse_decision){.next = m->now, .eband = -1};
        atomic_store(&m->band[k].a_seq, 0);
        atomic_store(&m->band[k].b_seq, 0);
        atomic_store(&m->band[k].s_seq, 0);
    }
    atomic_store(&m->stop_claim, 0);
    atomic_store(&m->abort, 0);
    if (m->lockstep && !m->stop) {
        ts_status rc = lockstep_lists(m, err);
        if (rc)
            return rc;
    }
    if (!m->stop && m->nthreads == 1) {
        thr_arg a = {m, 0};
        thread_main(&a);
    } else if (!m->stop) {
        pthread_t *tid = ts_calloc((size_t)m->nthreads, sizeof *tid);
        thr_arg *args = ts_calloc((size_t)m->nthreads, sizeof *args);
        if (!tid || !args) {
            ts_free(tid);
            ts_free(args);
            return ts_err_set(err, TS_ENOMEM, "cannot start %d threads", m->nthreads);
        }
        atomic_store(&m->bar_count, 0);
        atomic_store(&m->bar_sense, 0);
        int started = 1;
        for (int k = 0; k < m->nthreads; k++)
            args[k] = (thr_arg){m, k};
        for (int k = 1; k < m->nthreads; k++) {
            if (pthread_create(&tid[k], NULL, thread_main, &args[k]))
                break;
            started++;
        }
        if (started != m->nthreads) {
            /* the started threads would wait at the first barrier for ever: run them alone is not
             * possible, so this is fatal for the run */
            for (int k = 1; k < started; k++)
                pthread_cancel(tid[k]);
            for (int k = 1; k < started; k++)
                pthread_join(tid[k], NULL);
            ts_free(tid);
            ts_free(args);
            return ts_err_set(err, TS_ENOMEM, "cannot start %d threads", m->nthreads);
        }
        thread_main(&args[0]);
        for (int k = 1; k < m->nthreads; k++)
            pthread_join(tid[k], NULL);
        ts_free(tid);
        ts_free(args);
    }
    if (ran)
        end_run(m, atomic_load(&m->stop_claim) ? &m->final : &m->band[0].last);
    return TS_OK;
}

ts_status ts_wse_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *err)
{
    if (!m->loaded)
        return ts_err_set(err, TS_EINPUT, "no program loaded");
    /* with threads in the fast mode, bands are re-split by measured work (thread_main) */
    if (m->nthreads > 1 && !m->lockstep && !m->rebalance_at)
        m->rebalance_at = m->now + WSE_REBALANCE_FIRST;
    ts_status rc = run_threads(m, limit, err);
    if (rc)
        return rc;
    if (m->deadlock)
        deadlock_check(m);
    settle_blocked(m, m->now, m->now);
    if (m->run_st)
        return m->run_st;
    if (m->done && m->act && (rc = ts_wse_act_finish(m, err)) != TS_OK)
        return rc;
    st->now = m->now;
    st->work = m->work;
    st->done = m->done;
    return TS_OK;
}
