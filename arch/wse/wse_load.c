/* arch/wse/wse_load.c — creating and destroying a wafer-mesh model, and loading a program into
 * it: each PE stream's configuration prefix applied (routes, switch positions, task bindings,
 * images), its code predecoded once per distinct stream and every operand checked once so the
 * executor never checks it, each tile's live queues and delay lines built and its links checked,
 * the data segments placed, the bands split by weight and the first active set listed.
 */
#include "arch/wse/wse_inline.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

#include "core/alloc.h"

static const char *const port_name[WSE_NPORTS] = {"N", "S", "E", "W", "R"};
static const uint8_t opposite[4] = {WSE_S, WSE_N, WSE_W, WSE_E};

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
    if (t->packed) { /* the rest is in a slab of the model (pack_tiles) */
        ts_free(t->mem);
        return;
    }
    if (t->ce)
        ts_free(t->ce->th);
    ts_free(t->ce);
    ts_free(t->route);
    ts_free(t->qmap);
    ts_free(t->block);
    ts_free(t->mem);
    ts_free(t);
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
    for (size_t i = 0; i < m->nslabs; i++)
        ts_free(m->slabs[i]);
    ts_free(m->slabs);
    if (m->band)
        for (int i = 0; i < m->nthreads; i++) {
            for (int z = 0; z < WSE_NZ; z++) {
                ts_free(m->band[i].act[z].v);
            }
            ts_free(m->band[i].xwake[0]);
            ts_free(m->band[i].xwake[1]);
            ts_free(m->band[i].tm);
            for (int k = 0; k < WSE_WHEEL; k++)
                ts_free(m->band[i].wh[k]);
            ts_free(m->band[i].nbm);
            ts_free(m->band[i].nxt.v);
            ts_free(m->band[i].tr);
            ts_err_free(&m->band[i].err);
        }
    ts_free(m->band);
    ts_free(m->act_prev);
    ts_free(m->split_w);
    ts_free(m);
}

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
    m->vcs = c->routing == WSE_ROUTE_COLOUR ? 0 : (uint32_t)c->vcs;
    /* a router's pipeline stages delay a wavelet before its switch traversal; modelled on the line
     * into the router, which holds its queue slot (line_room) as the stages would */
    m->stages = (uint32_t)(c->route_cycles + c->vc_alloc_cycles + c->switch_alloc_cycles);
    m->hop = (uint32_t)c->hop_latency + m->stages;
    m->up = (uint32_t)(c->ramp_latency + c->pipeline_latency) + m->stages;
    m->npes = c->width * c->height;
    ts_wse_op_tables(m);
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
    for (int i = 0; i < m->nthreads; i++) {
        ts_err_init(&m->band[i].err);
        if (!(m->band[i].nbm = ts_calloc(m->npes / 64 + 1, sizeof *m->band[i].nbm))) {
            uint64_t n = m->npes;
            ts_wse_destroy(m);
            return ts_err_set(err, TS_ENOMEM, "out of memory for a %" PRIu64 "-PE mesh", n);
        }
    }
    ts_wse_split_bands(m, NULL);
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

/* A program the loader rejects is bad input (TS_EINPUT), not a failed simulation: err keeps the PE
 * (ts_err_sim fills it) but takes the status of bad input. */
static ts_status input_err(ts_err *err)
{
    if (err)
        err->status = TS_EINPUT;
    return TS_EINPUT;
}

static ts_status load_err(const ts_stream *s, uint32_t pc, ts_err *err, const char *what, ts_model *m)
{
    ts_err_sim(err, s->index, -1, "PE (%u, %u) pc %u: %s", s->index % m->w, s->index / m->w, pc, what);
    return input_err(err);
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
        if ((uint32_t)a[0] < m->vcs) {
            snprintf(b, sizeof b, "colour %d is a virtual channel of destination routing (fabric.routing): it takes "
                     "no routes", a[0]);
            return load_err(s, pc, err, b, m);
        }
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
    case WSE_OP_STAMP:
        if (a[1] < 0 || a[2] < a[1]) {
            snprintf(b, sizeof b, "stamp window %d .. %d is not a range of cycles from 0", a[1], a[2]);
            return load_err(s, pc, err, b, m);
        }
        t->stampm |= 1u << a[0];
        t->st_from = (uint64_t)a[1];
        t->st_to = (uint64_t)a[2];
        return TS_OK;
    default:
        return ts_err_set(err, TS_EINTERNAL, "wse: op %u is not a configuration op", in->op);
    }
}

/* Operand checks done once so the executor never checks them. */
/* Whether check_insn reads the PE's routes for op: a send or receive, a fabric DSD (the rest of its
 * checks read only the instruction, the stream's length and the config). */
static bool routes_checked(uint16_t op)
{
    return op == WSE_OP_SEND || op == WSE_OP_SENDC || op == WSE_OP_RECV || op == WSE_OP_DSDIN || op == WSE_OP_DSDOUT;
}

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
    case WSE_OP_SENDTO:
        if ((uint32_t)a[0] >= m->vcs) {
            snprintf(b, sizeof b, "sendto on colour %d, which is not a virtual channel of destination routing (%s)",
                     a[0], m->vcs ? "fabric.vcs" : "fabric.routing is colour");
            return load_err(s, pc, err, b, m);
        }
        return TS_OK;
    case WSE_OP_SEND:
    case WSE_OP_SENDC:
    case WSE_OP_RECV: {
        int32_t c = in->op == WSE_OP_RECV ? a[1] : a[0];
        ts_status rc = check_colour(m, s, pc, c, err);
        if (rc)
            return rc;
        if (in->op != WSE_OP_RECV && (uint32_t)c < m->vcs) {
            snprintf(b, sizeof b, "%s on colour %d, a virtual channel of destination routing: send with sendto",
                     ts_wse_isa.ops[in->op].mnemonic, c);
            return load_err(s, pc, err, b, m);
        }
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
    case WSE_OP_FH2S:
        if (a[2] != 0 && a[2] != 1)
            return load_err(s, pc, err, "fh2s half is neither 0 (low) nor 1 (high)", m);
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
            if (in->op == WSE_OP_DSDOUT && (uint32_t)a[1] < m->vcs) {
                snprintf(b, sizeof b, "dsdout on colour %d, a virtual channel of destination routing: send with "
                         "sendto", a[1]);
                return load_err(s, pc, err, b, m);
            }
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
        int nd = m->op_nopnds[in->op];
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
    size_t nlq = 0, nslots = 0, ncq = 0;
    for (uint32_t c = 0; c < C; c++) {
        for (int p = 0; p < WSE_NPORTS; p++)
            if (t->route[c].any_rx >> p & 1) {
                nlq++;
                nslots += p == WSE_R ? m->c.oq_depth : m->c.queue_depth;
            }
        if (t->route[c].any_tx >> WSE_R & 1) {
            nlq++;
            ncq++;
            nslots += m->c.iq_depth;
        }
    }
    if (nlq > 255)
        return ts_err_set(err, TS_EINTERNAL, "wse: %zu live queues at PE %u", nlq, t->id);
    size_t nent = 4 * (size_t)wse_line_cap(m->hop) + wse_line_cap((uint32_t)m->c.ramp_latency) + wse_line_cap(m->up);
    size_t ndst = m->vcs ? nslots : 0; /* destination routing: a destination per slot */
    size_t nlog = ncq * (WSE_ARRIVAL_LOG + 1); /* arrival log and count per core queue */
    size_t sz = nlq * sizeof(wse_lq) + nent * sizeof(wse_ent) + nlog * sizeof(uint64_t) +
                (nslots + ndst) * sizeof(uint32_t) + 2 * nlq + 4 * (size_t)C;
    t->block = ts_calloc(1, sz ? sz : 1);
    t->block_sz = sz;
    if (!t->block)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    char *p0 = t->block;
    t->lq = (wse_lq *)(void *)p0;
    wse_ent *ent = (wse_ent *)(void *)(p0 + nlq * sizeof(wse_lq));
    t->log = (uint64_t *)(void *)(p0 + nlq * sizeof(wse_lq) + nent * sizeof(wse_ent));
    t->narr = t->log + ncq * WSE_ARRIVAL_LOG;
    uint32_t *slots = (uint32_t *)(void *)(t->narr + ncq);
    uint32_t *dsts = slots + nslots;
    t->pops = (uint8_t *)(dsts + ndst);
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
                if (c < m->vcs) {
                    q->dst = dsts;
                    dsts += q->cap;
                }
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
        t->line[l].lat = (uint8_t)(l < 4 ? m->hop : l == WSE_LINE_UP ? m->up : m->c.ramp_latency);
        t->line[l].cap = (uint8_t)wse_line_cap(t->line[l].lat);
        t->line[l].e = ent;
        ent += t->line[l].cap;
    }
    for (int p = 0; p < 4; p++)
        t->nb[p] = tile_at(m, (int64_t)t->x + (p == WSE_E) - (p == WSE_W), (int64_t)t->y + (p == WSE_S) - (p == WSE_N));
    return TS_OK;
}

/* Destination routing: every PE of the mesh takes each virtual channel from every side that has a
 * neighbour and from its core, and may send it to each of them (the router picks by destination,
 * dest_tx()), so every queue a wavelet may need exists. */
static ts_status dest_routes(ts_model *m, ts_err *err)
{
    for (uint32_t id = 0; id < m->npes; id++) {
        wse_tile *t;
        ts_status rc = tile_touch(m, id, &t, err);
        if (rc)
            return rc;
        uint8_t ports = 1u << WSE_R;
        ports |= (uint8_t)((t->y > 0) << WSE_N | (t->y + 1 < m->h) << WSE_S | (t->x + 1 < m->w) << WSE_E |
                           (t->x > 0) << WSE_W);
        for (uint32_t c = 0; c < m->vcs; c++) {
            wse_route *r = &t->route[c];
            r->rx[0] = r->tx[0] = r->any_rx = r->any_tx = ports;
        }
    }
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
            if (!n || n->qmap[opposite[p] * m->C + c] == WSE_NOQ) {
                ts_err_sim(err, t->id, -1, "PE (%u, %u) routes colour %u %s, but PE (%u, %u) takes no colour %u from the %s",
                           t->x, t->y, c, port_name[p], t->x + (p == WSE_E) - (p == WSE_W),
                           t->y + (p == WSE_S) - (p == WSE_N), c, port_name[opposite[p]]);
                return input_err(err);
            }
        }
    return TS_OK;
}

#define WSE_WEIGHT_QUEUE 1
#define WSE_WEIGHT_CORE 1

/* ------------------------------------------------------------------------------------------ */
/* packing */

#define WSE_SLAB ((size_t)16 << 20)

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The bytes of tile t in one piece (pack_tiles). */
static size_t packed_size(const ts_model *m, const wse_tile *t)
{
    size_t n = up64(sizeof *t);
    if (t->ce)
        n += up64(sizeof *t->ce) + up64((1 + (size_t)m->c.microthreads) * sizeof *t->ce->th);
    return n + up64(t->block_sz) + up64(6 * (size_t)m->C) + up64((size_t)m->C * sizeof *t->route);
}

/* Move every allocated tile into one piece of memory, in id order in slabs of WSE_SLAB bytes: the
 * tile, its qmap and routes (which its router reads right after the tile's own lines: there, 4 %
 * less CPU time on bench_wse_stencil 200 200 than at the end of the piece), its core and vector
 * threads, its queues, delay-line entries and slots.
 * A cycle then reads a tile's state from a few consecutive cache lines, and the tiles of the active
 * lists (in id order) from memory in order; before, a tile was six allocations made at different
 * times of loading, and the whole-wafer stencil spent most of its time waiting for their lines. */
static ts_status pack_tiles(ts_model *m, ts_err *err)
{
    char *cur = NULL, *end = NULL;
    for (size_t i = 0; i < m->nalloc; i++) {
        wse_tile *o = m->t[m->alloc_ids[i]];
        size_t sz = packed_size(m, o);
        if ((size_t)(end - cur) < sz) {
            size_t left = 0;
            for (size_t j = i; j < m->nalloc && left < WSE_SLAB; j++)
                left += packed_size(m, m->t[m->alloc_ids[j]]);
            size_t n = (left > sz ? left : sz) + 64;
            void *slab = NULL;
            if (ts_grow((void **)&m->slabs, &m->cap_slabs, m->nslabs + 1, sizeof *m->slabs) || !(slab = ts_malloc(n)))
                return ts_err_set(err, TS_ENOMEM, "out of memory packing PE %u", o->id);
            m->slabs[m->nslabs++] = slab;
            cur = (char *)slab + ((64 - (uintptr_t)slab % 64) % 64);
            end = (char *)slab + n;
#ifdef __GLIBC__
            malloc_trim(0); /* give back the pages of the tiles packed so far */
#endif
        }
        char *p = cur;
        cur += sz;
        wse_tile *t = (wse_tile *)(void *)p;
        memcpy(t, o, sizeof *t);
        p += up64(sizeof *t);
        t->qmap = (uint8_t *)p;
        memcpy(t->qmap, o->qmap, 6 * (size_t)m->C);
        p += up64(6 * (size_t)m->C);
        t->route = (wse_route *)(void *)p;
        memcpy(t->route, o->route, (size_t)m->C * sizeof *t->route);
        p += up64((size_t)m->C * sizeof *t->route);
        if (o->ce) {
            t->ce = (wse_ce *)(void *)p;
            memcpy(t->ce, o->ce, sizeof *t->ce);
            p += up64(sizeof *t->ce);
            size_t nth = (1 + (size_t)m->c.microthreads) * sizeof *t->ce->th;
            t->ce->th = (wse_vop *)(void *)p;
            memcpy(t->ce->th, o->ce->th, nth);
            p += up64(nth);
        }
        /* the block: queues, entries, slots and index arrays point into it */
        char *ob = o->block;
        ptrdiff_t d = p - ob;
        t->block = p;
        memcpy(p, ob, o->block_sz);
        p += up64(o->block_sz);
        t->lq = (wse_lq *)(void *)((char *)o->lq + d);
        for (uint32_t j = 0; j < t->nlq; j++) {
            t->lq[j].slot = (uint32_t *)(void *)((char *)t->lq[j].slot + d);
            if (t->lq[j].dst)
                t->lq[j].dst = (uint32_t *)(void *)((char *)t->lq[j].dst + d);
        }
        for (int l = 0; l < WSE_NLINES; l++)
            t->line[l].e = (wse_ent *)(void *)((char *)o->line[l].e + d);
        t->log = (uint64_t *)(void *)((char *)o->log + d);
        t->narr = (uint64_t *)(void *)((char *)o->narr + d);
        t->pops = o->pops + d;
        t->pidx = o->pidx + d;
        t->tq = o->tq + d;
        t->packed = true;
        m->t[t->id] = t;
        o->mem = NULL; /* moved with the tile */
        tile_free(o);
    }
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    for (size_t i = 0; i < m->nalloc; i++) {
        wse_tile *t = m->t[m->alloc_ids[i]];
        for (int p = 0; p < 4; p++)
            t->nb[p] = tile_at(m, (int64_t)t->x + (p == WSE_E) - (p == WSE_W), (int64_t)t->y + (p == WSE_S) - (p == WSE_N));
    }
    return TS_OK;
}

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
            if (o->n == s->n && o->entry == k &&
                (!s->n || !memcmp(o->insn, s->insn, (size_t)s->n * sizeof *s->insn))) /* empty: no arrays */
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
            if (s->n) /* an empty stream has no array to copy */
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
    if (m->vcs && (rc = dest_routes(m, err)))
        return rc;
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
    /* a PE that runs an image has its code checked against its own routes: the instructions whose
     * checks read the PE's routes (routes_checked) at every such PE, the others once per image,
     * where every PE checked them all again (half of loading bench_wse_stencil's host
     * instructions). ifirst[img] is 1 + the first pc from the entry whose checks fail without the
     * routes (UINT32_MAX: none; 0: not looked at yet), which each PE checks again for its message,
     * so that each PE reports the first failing pc as before */
    const ts_stream **byid = NULL;
    uint32_t *ifirst = NULL;
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        const wse_tile *t = m->t[s->index];
        ts_stream view = *s;
        if (t->ce->image) {
            if (!byid) {
                byid = ts_calloc(m->npes, sizeof *byid);
                ifirst = ts_calloc(m->npes, sizeof *ifirst);
                if (!byid || !ifirst) {
                    ts_free(byid);
                    ts_free(ifirst);
                    return ts_err_set(err, TS_ENOMEM, "out of memory");
                }
                for (size_t j = 0; j < p->nstreams; j++)
                    byid[p->streams[j].index] = &p->streams[j];
            }
            uint32_t img = (uint32_t)s->insn[s->n - 1].a[0];
            view = *byid[img];
            view.index = s->index;
            uint32_t entry = t->ce->code->entry;
            if (!ifirst[img]) {
                ts_err scratch;
                ifirst[img] = UINT32_MAX;
                for (uint32_t k = entry; k < view.n; k++)
                    if (!routes_checked(view.insn[k].op) && check_insn(m, &view, k, &scratch)) {
                        ifirst[img] = k + 1;
                        break;
                    }
            }
            for (uint32_t k = entry; k < view.n; k++)
                if ((routes_checked(view.insn[k].op) || k + 1 == ifirst[img]) && (rc = check_insn(m, &view, k, err))) {
                    size_t l = strlen(err->msg);
                    snprintf(err->msg + l, sizeof err->msg - l, " (in the code of PE (%u, %u), its image)", img % m->w,
                             img / m->w);
                    ts_free(byid);
                    ts_free(ifirst);
                    return rc;
                }
            continue;
        }
        for (uint32_t k = t->ce->code->entry; k < s->n; k++)
            if ((rc = check_insn(m, s, k, err))) {
                ts_free(byid);
                ts_free(ifirst);
                return rc;
            }
    }
    ts_free(byid);
    ts_free(ifirst);
    if ((rc = pack_tiles(m, err)))
        return rc;
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
        ts_wse_split_bands(m, weight);
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
