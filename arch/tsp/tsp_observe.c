/* arch/tsp/tsp_observe.c — what a run shows besides its report: the trace (one row of slices
 * per queue, merged when they would not fit the trace's limit) and the activity sampler (one
 * unit per slice and superlane, the supersteps between barriers, the stream flows). */
#include "arch/tsp/tsp_model.h"

#include <stdio.h>
#include <string.h>

#include "core/activity.h"
#include "core/alloc.h"
#include "core/trace.h"

/* ---- trace ------------------------------------------------------------------------------- */

/* Write queue q's merged slices: from the first one's start to the latest end, named by the
 * instruction when they all are one, else "instructions", with their count in args. */
void ts_tsp_trace_flush(ts_model *m, uint32_t q)
{
    tsp_queue *Q = &m->q[q];
    if (!Q->tr_n)
        return;
    char args[40];
    snprintf(args, sizeof args, "{\"count\":%u}", Q->tr_n);
    ts_trace_slice(m->trace, 0, (int)q + 1, Q->tr_name ? Q->tr_name : "instructions", Q->tr_cat, Q->tr_start,
                   Q->tr_end - Q->tr_start, args);
    Q->tr_n = 0;
}

/* A trace slice on queue q's row (thread q + 1; process 0 is the chip); merged trace_merge at a
 * time, in the order they are recorded, on runs too big for the limit. */
void ts_tsp_trace_insn(ts_model *m, uint32_t q, const char *name, const char *cat, uint64_t start, uint64_t dur)
{
    if (!m->trace || !dur)
        return;
    if (m->trace_merge <= 1) {
        ts_trace_slice(m->trace, 0, (int)q + 1, name, cat, start, dur, NULL);
        return;
    }
    tsp_queue *Q = &m->q[q];
    if (!Q->tr_n) {
        Q->tr_start = start;
        Q->tr_end = start + dur;
        Q->tr_name = name;
        Q->tr_cat = cat;
    } else {
        if (start < Q->tr_start)
            Q->tr_start = start;
        if (start + dur > Q->tr_end)
            Q->tr_end = start + dur;
        if (Q->tr_name && strcmp(Q->tr_name, name))
            Q->tr_name = NULL;
        if (Q->tr_cat && strcmp(Q->tr_cat, cat))
            Q->tr_cat = NULL;
    }
    if (++Q->tr_n == m->trace_merge)
        ts_tsp_trace_flush(m, q);
}

/* Queue slices per trace slice: 1 while a slice per instruction (repeats counted) fits half the
 * trace's limit (the rest is for the activity tracks and counters), else as many as it takes. A
 * repeat counts as the copies it issues.
 * Sync waits and nops are counted as the instructions they are. */
#define TRACE_SLICE_BYTES 100 /* {"name":"read","cat":"mem","ph":"X","ts":...,"dur":...,"pid":0,"tid":..} and args */
uint32_t ts_tsp_trace_plan(const ts_model *m)
{
    uint64_t n = 0;
    for (uint32_t qi = 0; qi < m->nq; qi++)
        for (uint32_t pc = 0; pc < m->q[qi].n; pc++)
            n += m->q[qi].code[pc].op != TSP_OP_REPEAT ? 1 : m->q[qi].code[pc].a[0] > 0 ? (uint64_t)m->q[qi].code[pc].a[0] : 0;
    uint64_t budget = ts_trace_limit(m->trace) / 2, need = n * TRACE_SLICE_BYTES;
    if (need <= budget)
        return 1;
    uint64_t k = (need + budget - 1) / budget;
    return k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
}

/* ---- activity sampler -------------------------------------------------------------------- */

/* Every slice-superlane is a unit of the activity sampler. A superlane step of an in-flight
 * instruction is one cycle of work for the slice at that superlane: compute on VXM, MXM and SXM
 * slices, network (stream traffic) on MEM slices; the superlanes of a slice with a queue waiting
 * at a sync are in sync; every other cycle is idle (left out: the sampler counts it). */
#define NOPARK UINT64_MAX

/* Record unit u's cycles since it was last recorded, up to `upto`: sync while its slice waits. */
static void act_gap(ts_model *m, uint32_t u, uint64_t upto)
{
    uint64_t from = m->act_upto[u], park = m->act_park[u / m->S];
    if (from >= upto)
        return;
    if (park != NOPARK)
        ts_activity_span(m->act, u, TS_ACT_SYNC, from > park ? from : park, upto);
    m->act_upto[u] = upto;
}

/* The in-flight instruction f steps its superlane at cycle m->now. */
void ts_tsp_act_step(ts_model *m, const tsp_fl *f)
{
    uint32_t u = m->q[f->q].slice * m->S + f->k;
    if (m->act_upto[u] > m->now)
        return; /* another queue of the slice already stepped this superlane this cycle */
    act_gap(m, u, m->now);
    ts_activity_span(m->act, u, f->d.unit == TSP_U_MEM || f->d.unit == TSP_U_C2C ? TS_ACT_NETWORK : TS_ACT_COMPUTE,
                     m->now, m->now + 1);
    m->act_upto[u] = m->now + 1;
}

/* Queue qi parks at a sync at cycle m->now. */
void ts_tsp_act_on_park(ts_model *m, uint32_t qi)
{
    uint32_t sl = m->q[qi].slice;
    if (m->act_park[sl] != NOPARK)
        return;
    for (uint32_t k = 0; k < m->S; k++)
        act_gap(m, sl * m->S + k, m->now);
    m->act_park[sl] = m->now;
}

/* A barrier releases at cycle m->now (before its queues run again): the slices of the queues it
 * releases leave sync, and the timeline gets a step from the previous release: compute until the
 * first of them parked, then sync. */
void ts_tsp_act_on_release(ts_model *m)
{
    uint64_t first = UINT64_MAX;
    for (uint32_t qi = 0; qi < m->nq; qi++) {
        const tsp_queue *q = &m->q[qi];
        if (q->state != Q_PARKED || q->park >= m->now)
            continue;
        if (q->park < first)
            first = q->park;
        uint32_t sl = q->slice;
        if (m->act_park[sl] == NOPARK)
            continue;
        for (uint32_t k = 0; k < m->S; k++)
            act_gap(m, sl * m->S + k, m->now);
        m->act_park[sl] = NOPARK;
    }
    if (first == UINT64_MAX)
        return; /* nobody waited */
    if (first < m->act_ss_start)
        first = m->act_ss_start;
    ts_act_superstep ss = {m->act_ss_start, first - m->act_ss_start, 0, m->now - first};
    m->act_ss_start = m->now;
    ts_err e;
    ts_err_init(&e);
    if (ts_activity_superstep(m->act, &ss, &e) != TS_OK)
        m->act_nomem = true; /* reported by the next flush */
    ts_err_free(&e);
}

void ts_tsp_act_cycle_flows(ts_model *m)
{
    for (int d = 0; d < 2; d++)
        if (m->act_flow[d]) {
            ts_activity_flow(m->act, m->now, d == 0 ? TS_ACT_EAST : TS_ACT_WEST, m->act_flow[d]);
            m->act_flow[d] = 0;
        }
}

/* Every unit is recorded up to `upto`: flush the windows that end by then (the last one too when
 * the run is over). */
ts_status ts_tsp_act_flush(ts_model *m, uint64_t upto, bool last, ts_err *err)
{
    if (m->act_nomem)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the activity timeline");
    for (uint32_t sl = 0; sl < m->lay->nslices; sl++)
        if (m->act_park[sl] != NOPARK)
            for (uint32_t k = 0; k < m->S; k++)
                act_gap(m, sl * m->S + k, upto);
    if (last)
        return ts_activity_finish(m->act, upto, err);
    uint64_t w = ts_activity_window(m->act);
    m->act_next = (upto / w + 1) * w;
    return ts_activity_advance(m->act, upto, err);
}

/* Unit u (a slice at one superlane) in words, for the live view: the slice, its queues' pc and
 * state, and the instructions of the slice still sweeping the superlanes. */
static void act_describe(void *ud, uint32_t u, char *buf, size_t n)
{
    static const char *const st[] = {"RUN", "SYNC", "DONE"};
    const ts_model *m = ud;
    uint32_t sl = u / m->S;
    char name[32];
    ts_tsp_slice_name(m->lay, sl, name, sizeof name);
    size_t k = (size_t)snprintf(buf, n, "%s SUPERLANE %u", name, u % m->S);
    uint32_t shown = 0, fl = 0;
    for (uint32_t qi = 0; qi < m->nq && k < n; qi++)
        if (m->q[qi].slice == sl && shown++ < 4)
            k += (size_t)snprintf(buf + k, n - k, " Q%u PC %u/%u %s", qi, m->q[qi].pc, m->q[qi].n,
                                  st[m->q[qi].state]);
    for (size_t i = 0; i < m->nfl; i++)
        fl += !m->fl[i].done && m->q[m->fl[i].q].slice == sl;
    if (k < n)
        snprintf(buf + k, n - k, " IN FLIGHT %u", fl);
}

/* The slice tiles for the view: x = the slice's rank west to east (by stream position), y = the
 * superlane (0 at the top). */
ts_status ts_tsp_act_layout(ts_model *m, ts_err *err)
{
    const tsp_layout *l = m->lay;
    uint32_t n = l->nslices * m->S;
    uint32_t *x = ts_malloc((size_t)n * sizeof *x), *y = ts_malloc((size_t)n * sizeof *y);
    m->act_upto = ts_calloc(n, sizeof *m->act_upto);
    m->act_park = ts_malloc(l->nslices * sizeof *m->act_park);
    if (!x || !y || !m->act_upto || !m->act_park) {
        ts_free(x);
        ts_free(y);
        return ts_err_set(err, TS_ENOMEM, "out of memory declaring the slice layout");
    }
    for (uint32_t s = 0; s < l->nslices; s++) {
        m->act_park[s] = NOPARK;
        uint32_t rank = 0; /* slices west of s, ties broken by slice number */
        for (uint32_t t = 0; t < l->nslices; t++)
            rank += l->pos[t] < l->pos[s] || (l->pos[t] == l->pos[s] && t < s);
        for (uint32_t k = 0; k < m->S; k++) {
            x[s * m->S + k] = rank;
            y[s * m->S + k] = k;
        }
    }
    ts_status rc = ts_activity_layout(m->act, "tsp superlanes", n, l->nslices, m->S, x, y, err);
    /* column labels: each slice's type and hemisphere ("MEM W", "VXM", "MXM E"), its name
     * without the number, so the pictures label each run of one type once */
    char (*lab)[16] = rc == TS_OK ? ts_calloc(l->nslices, sizeof *lab) : NULL;
    const char **labp = lab ? ts_calloc(l->nslices, sizeof *labp) : NULL;
    if (rc == TS_OK && !labp)
        rc = ts_err_set(err, TS_ENOMEM, "out of memory labelling the slices");
    for (uint32_t s = 0; rc == TS_OK && s < l->nslices; s++) {
        uint32_t rank = x[s * m->S];
        ts_tsp_slice_name(l, s, lab[rank], sizeof lab[rank]);
        size_t e = strlen(lab[rank]);
        while (e && lab[rank][e - 1] >= '0' && lab[rank][e - 1] <= '9')
            lab[rank][--e] = 0;
        labp[rank] = lab[rank];
    }
    if (rc == TS_OK)
        rc = ts_activity_column_labels(m->act, labp, err);
    ts_free(labp);
    ts_free(lab);
    ts_free(x);
    ts_free(y);
    ts_activity_describer(m->act, act_describe, m);
    /* full scale of the flow strips: every stream of one direction taking a new vector at every
     * superlane in one cycle */
    ts_activity_flows(m->act, (double)m->NS * m->S * m->L);
    ts_activity_group(m->act, 1, m->S, "slice"); /* trace tracks: one per slice */
    m->act_next = ts_activity_window(m->act);
    return rc;
}

