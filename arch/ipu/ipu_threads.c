/* arch/ipu/ipu_threads.c — the model's host threads: which columns each one takes (its own even
 * range, then the others' untaken ones), the two phases of a round (run the tiles; commit their
 * words and summarise them) and the release from a sync, the barrier they meet at
 * (core/barrier.h), the profile of the rounds (bench_ipu_balance), and starting and stopping
 * them. The main thread is thread 0; with one thread there are no helpers and no barrier.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"

typedef struct ipu_thread_arg {
    ts_model *m;
    int id;
} ipu_thread_arg;

void ts_ipu_split(const uint64_t *cost, uint32_t ncols, uint32_t k, uint32_t *bounds)
{
    uint64_t total = 0;
    for (uint32_t c = 0; c < ncols; c++)
        total += cost[c];
    bounds[0] = 0;
    if (!total) {
        for (uint32_t i = 1; i <= k; i++)
            bounds[i] = (uint32_t)((uint64_t)ncols * i / k);
        return;
    }
    /* bound i is the column boundary whose prefix cost is nearest to total * i / k (the prefix
     * sums of the cost are non-decreasing, so are the bounds) */
    uint32_t c = 0;
    uint64_t pre = 0; /* cost of columns [0, c) */
    for (uint32_t i = 1; i < k; i++) {
        double target = (double)total * i / k;
        while (c < ncols && (double)(pre + cost[c]) <= target) {
            pre += cost[c];
            c++;
        }
        /* columns [0, c) cost at most the target; taking column c too may come nearer */
        if (c < ncols && (double)(pre + cost[c]) - target < target - (double)pre) {
            pre += cost[c];
            c++;
        }
        bounds[i] = c;
    }
    bounds[k] = ncols;
}

/* Who runs which tiles. Thread i owns columns split[i] .. split[i + 1] (an even split, set at
 * start) and takes their parts in turn through its cursor (IPU_RUN_PARTS per column in the run
 * phase, whole columns in the commit phase, where a column's spine stage needs all its words);
 * once its own are taken it takes the next untaken ones of the threads after it (stealing): a
 * round's work sits on a few columns when only some tiles are busy (a layer of ResNet-50 on a
 * part of the chip, the receivers of an exchange), and no split fixed before the round knows
 * which (bench_ipu_balance: splitting by the last round's work bounds ResNet-50's 16-thread
 * speed-up at 1.8, evenly at 7.0, stealing quarters at 12.2). Which thread takes a part never
 * changes a result: the rounds are conservative windows, the summaries are sums, maxima and
 * lowest tiles, and errors are ordered by cycle and tile. The cursors are reset by the main
 * thread before the round (the barrier publishes them); relaxed atomics suffice, the barriers
 * order the tiles' state. */
static void cursors_reset(ts_model *m)
{
    for (int i = 0; i < m->nthreads; i++) {
        atomic_store_explicit(&m->cur[i].run, m->split[i] * IPU_RUN_PARTS, memory_order_relaxed);
        atomic_store_explicit(&m->cur[i].fin, m->split[i], memory_order_relaxed);
    }
}

/* The next part of a column for thread id in the run phase (IPU_RUN_PARTS per column), or with
 * `fin` the next column in the commit phase, or UINT32_MAX when every column is taken. *from is the thread whose columns it
 * takes now (id at first); a cursor past its end stays there, so it is not visited again. */
static uint32_t take_column(ts_model *m, int id, bool fin, int *from)
{
    for (; *from < id + m->nthreads; (*from)++) {
        int j = *from % m->nthreads;
        _Atomic uint32_t *c = fin ? &m->cur[j].fin : &m->cur[j].run;
        uint32_t end = m->split[j + 1] * (fin ? 1 : IPU_RUN_PARTS);
        if (atomic_load_explicit(c, memory_order_relaxed) >= end)
            continue; /* a plain read first: a taken range costs no write to another thread's line */
        uint32_t col = atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
        if (col < end)
            return col;
    }
    return UINT32_MAX;
}

/* The tiles [lo, hi) of part u of the columns' parts (IPU_RUN_PARTS per column, of part_tiles
 * tiles each but the last). */
static void part_range(const ts_model *m, uint32_t u, uint32_t *lo, uint32_t *hi)
{
    const uint64_t tpc = m->c.tiles_per_column, per = (tpc + IPU_RUN_PARTS - 1) / IPU_RUN_PARTS;
    uint64_t col = u / IPU_RUN_PARTS, a = col * tpc + (u % IPU_RUN_PARTS) * per, b = a + per;
    if (b > (col + 1) * tpc)
        b = (col + 1) * tpc;
    *lo = (uint32_t)(a < m->ntiles ? a : m->ntiles);
    *hi = (uint32_t)(b < m->ntiles ? b : m->ntiles);
}

/* Run part u's tiles to round_h; keep thread te's first error (lowest cycle, then tile). */
static void run_part(ts_model *m, uint32_t u, ipu_terr *te)
{
    uint32_t lo, hi;
    part_range(m, u, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) {
        if (m->t[i].failed || m->t[i].sup != SUP_RUN)
            continue;
        ts_err *e = &te->scratch;
        if (ts_ipu_tile_run(m, i, m->round_h, e) != TS_OK) {
            m->t[i].failed = true;
            if (!te->failed || e->cycle < te->err.cycle || (e->cycle == te->err.cycle && e->tile < te->err.tile)) {
                ts_err_free(&te->err);
                te->err = *e;
                te->failed = true;
            } else {
                ts_err_free(e);
            }
            ts_err_init(e);
        }
    }
}

/* The run phase of thread id: run the parts of columns it takes. */
static __attribute__((noinline)) void run_range(ts_model *m, int id)
{
    int from = id;
    uint32_t u;
    while ((u = take_column(m, id, false, &from)) != UINT32_MAX)
        if (!m->spine_final[u / IPU_RUN_PARTS]) /* else no tile of its column runs before the release */
            run_part(m, u, &m->terr[id]);
}

/* Commit the words tile t sent this round to its log; false when that runs out of memory. */
static bool commit_words(ipu_tile *t)
{
    if (!t->pend.n)
        return true;
    if (t->log.n + t->pend.n > t->log.cap) {
        void *v = t->log.v;
        if (ts_grow(&v, &t->log.cap, t->log.n + t->pend.n, sizeof(ipu_word)))
            return false;
        t->log.v = v;
    }
    memcpy(t->log.v + t->log.n, t->pend.v, t->pend.n * sizeof(ipu_word));
    t->log.n += t->pend.n;
    t->pend.n = 0;
    return true;
}

/* Add tile i's state to its thread's summary s (the columns come in any order: the summary
 * keeps sums, maxima and lowest tiles). */
static void summarise(const ts_model *m, uint32_t i, const ipu_tile *t, ipu_tsum *s)
{
    s->work += t->work;
    s->uni += t->ss_uni;
    s->claims += t->ss_claims;
    uint64_t at;
    if (ts_ipu_arrived_at(m, t, &at)) { /* what the sync needs: the critical tile, the bytes moved */
        if (!s->arrived || at > s->last_arrival || (at == s->last_arrival && i < s->crit)) {
            s->last_arrival = at;
            s->crit = i;
            s->arrived = true;
        }
        for (size_t k = 0; k < t->nhost; k++)
            s->hbytes += t->host[k].bytes;
        s->xbytes += t->ss_xbytes;
    }
    if (t->sup == SUP_DONE)
        return;
    s->pending |= t->failed;
    s->live++;
    if (t->sup == SUP_RUN && !t->failed && m->tnow[i] < s->run_from)
        s->run_from = m->tnow[i];
    if (t->sup == SUP_SYNC) {
        if (!s->at_sync || i < s->first_sync)
            s->first_sync = i;
        s->at_sync++;
    }
    s->waiting += ts_ipu_tile_waiting(t);
}

/* Add the summary c of some tiles to s, the summary of others: as if summarise had seen c's tiles
 * after s's (sums, maxima and lowest tiles do not depend on the order). */
static void tsum_add(ipu_tsum *s, const ipu_tsum *c)
{
    s->work += c->work;
    s->uni += c->uni;
    s->claims += c->claims;
    if (c->arrived) {
        if (!s->arrived || c->last_arrival > s->last_arrival ||
            (c->last_arrival == s->last_arrival && c->crit < s->crit)) {
            s->last_arrival = c->last_arrival;
            s->crit = c->crit;
            s->arrived = true;
        }
        s->hbytes += c->hbytes;
        s->xbytes += c->xbytes;
    }
    s->pending |= c->pending;
    s->live += c->live;
    if (c->run_from < s->run_from)
        s->run_from = c->run_from;
    if (c->at_sync && (!s->at_sync || c->first_sync < s->first_sync))
        s->first_sync = c->first_sync;
    s->at_sync += c->at_sync;
    s->waiting += c->waiting;
}

/* The commit phase of thread id, column by column, the columns it takes: commit the words their tiles sent this round to
 * their logs (no thread reads a log while this runs: it comes between two barriers), set the
 * spine delays of the column's words, measure the column's work in the round (for the next
 * split and the profile) and summarise the tiles for the main thread's decision. */
static __attribute__((noinline)) void finish_range(ts_model *m, int id)
{
    const uint64_t tpc = m->c.tiles_per_column;
    ipu_tsum s = {.run_from = UINT64_MAX};
    s.nomem = m->tsum[id].nomem;
    int from = id;
    uint32_t col;
    while ((col = take_column(m, id, true, &from)) != UINT32_MAX) {
        if (m->spine_final[col]) {
            /* its tiles were all at the sync or done after an earlier round of this superstep:
             * none ran since (only the release changes them), so its summary is the one kept
             * then, and its parts did no work */
            tsum_add(&s, &m->colsum[col]);
            memset(m->colw + (size_t)col * IPU_RUN_PARTS, 0, IPU_RUN_PARTS * sizeof *m->colw);
            continue;
        }
        ipu_tsum cs = {.run_from = UINT64_MAX};
        uint32_t lo = (uint32_t)(col * tpc), hi = (uint32_t)((col + 1) * tpc < m->ntiles ? (col + 1) * tpc : m->ntiles);
        const uint64_t per = (tpc + IPU_RUN_PARTS - 1) / IPU_RUN_PARTS;
        uint64_t work[IPU_RUN_PARTS] = {0}, run[IPU_RUN_PARTS] = {0}, running = 0;
        for (uint32_t i = lo; i < hi; i++) {
            ipu_tile *t = &m->t[i];
            if (!commit_words(t)) {
                s.nomem = true;
                continue;
            }
            work[(i - lo) / per] += t->work;
            run[(i - lo) / per] += t->sup == SUP_RUN;
            running += t->sup == SUP_RUN;
            summarise(m, i, t, &cs);
        }
        tsum_add(&s, &cs);
        if (!running)
            m->colsum[col] = cs;
        /* a column whose tiles are all at the sync or done sends nothing more this superstep:
         * every word it sent gets its delay now, in parallel, instead of in the sync's pass over
         * every column on the main thread (spine_all skips the column) */
        m->spine_final[col] = !running;
        ts_ipu_spine_column(m, col, running ? m->round_h : UINT64_MAX);
        for (uint32_t k = 0; k < IPU_RUN_PARTS; k++) {
            uint32_t u = col * IPU_RUN_PARTS + k;
            m->colw[u] = work[k] - m->colseen[u] + run[k];
            m->colseen[u] = work[k];
        }
    }
    m->tsum[id] = s;
}

/* The threads' barrier (core/barrier.h): a thread spins for a while (a round takes microseconds, a
 * futex wake-up about as long), then spins yielding the core (on a busy host the thread it waits
 * for may need that core), and then sleeps; the last to arrive wakes the sleepers. */
#ifndef IPU_SPINS
#define IPU_SPINS 4000  /* plain spins (a few microseconds) */
#endif
#ifndef IPU_YIELDS
#define IPU_YIELDS 2000 /* then spins that yield the core (about a millisecond when it is free) */
#endif

static inline void bar_wait(ts_model *m, uint32_t *sense)
{
    ts_barrier_wait(&m->bar, sense, NULL);
}

/* Thread id's share of a release from the sync: its own columns (every tile's work is the same). */
static void release_range(ts_model *m, int id)
{
    uint64_t tpc = m->c.tiles_per_column, lo = m->split[id] * tpc, hi = m->split[id + 1] * tpc;
    ts_ipu_release_tiles(m, (uint32_t)(lo < m->ntiles ? lo : m->ntiles), (uint32_t)(hi < m->ntiles ? hi : m->ntiles));
    for (uint32_t col = m->split[id]; col < m->split[id + 1]; col++)
        m->spine_final[col] = 0;
}

/* The release from a chip-wide sync on every thread: the main thread lets the helpers go with
 * the release job (they wait at the barrier after a round) and waits until all are done and
 * back at the barrier (ts_barrier_gather), where they stay until the next round. */
void ts_ipu_release(ts_model *m)
{
    if (m->nthreads > 1) {
        m->job = IPU_JOB_RELEASE;
        bar_wait(m, &m->main_sense);
        release_range(m, 0);
        ts_barrier_gather(&m->bar);
        m->job = IPU_JOB_ROUND;
    } else {
        release_range(m, 0);
    }
    if (m->prof)
        m->prof->meetings += 1;
}

static void *worker_main(void *arg)
{
    ipu_thread_arg *a = arg;
    ts_model *m = a->m;
    int id = a->id;
    ts_free(a);
    pthread_mutex_lock(&m->gate_mu);
    while (m->gate == 0)
        pthread_cond_wait(&m->gate_cv, &m->gate_mu);
    int gate = m->gate;
    pthread_mutex_unlock(&m->gate_mu);
    if (gate == 2)
        return NULL;
    uint32_t sense = 0;
    for (;;) {
        bar_wait(m, &sense);
        if (m->quit)
            break;
        if (m->job == IPU_JOB_RELEASE) {
            release_range(m, id);
            continue;
        }
        run_range(m, id);
        bar_wait(m, &sense);
        finish_range(m, id);
    }
    return NULL;
}

/* Keep the round's work per column in the profile (main thread, after the round). */
static void profile_round(ts_model *m, uint64_t meetings)
{
    ipu_prof *p = m->prof;
    p->rounds++;
    p->meetings += meetings;
    if (p->nomem)
        return;
    const size_t n = (size_t)m->ncols * IPU_RUN_PARTS;
    if (p->n + n > p->cap) {
        void *v = p->colw;
        if (ts_grow(&v, &p->cap, p->n + n, sizeof *p->colw)) {
            p->nomem = true;
            return;
        }
        p->colw = v;
    }
    memcpy(p->colw + p->n, m->colw, n * sizeof *m->colw);
    p->n += n;
}

/* One round on every thread, to m->round_h: each runs its tiles, then commits their words and
 * summarises them. Two meetings a round: the helpers, done committing, arrive at the barrier
 * that starts the next round and wait there; the main thread waits until all have arrived
 * (ts_barrier_gather), decides alone, and arrives last at the start of the next round, which
 * lets them go (the arrival after the commit and the start of the next round are one meeting). */
void ts_ipu_round(ts_model *m)
{
    if (m->nthreads > 1) {
        cursors_reset(m);
        bar_wait(m, &m->main_sense);
        run_range(m, 0);
        bar_wait(m, &m->main_sense);
        finish_range(m, 0);
        ts_barrier_gather(&m->bar);
    } else {
        cursors_reset(m);
        run_range(m, 0);
        finish_range(m, 0);
    }
    if (m->prof)
        profile_round(m, 2);
}

ts_status ts_ipu_profile_on(ts_model *m, ts_err *err)
{
    if (!m->prof && !(m->prof = ts_calloc(1, sizeof *m->prof)))
        return ts_err_set(err, TS_ENOMEM, "out of memory for the threads' profile");
    return TS_OK;
}

void ts_ipu_profile_get(const ts_model *m, ts_ipu_profile *out)
{
    memset(out, 0, sizeof *out);
    if (!m->prof)
        return;
    out->rounds = m->prof->rounds;
    out->meetings = m->prof->meetings;
    out->visits = m->prof->visits;
    out->supersteps = m->nss;
    out->ncols = m->ncols;
    out->parts = IPU_RUN_PARTS;
    out->tiles_per_column = (uint32_t)m->c.tiles_per_column;
    out->colw = m->prof->colw;
    out->complete = !m->prof->nomem;
}

/* Start threads 1 .. nthreads - 1 (at create). They wait at the gate until every one has started,
 * so that a failure can send them home before the barrier, which counts every thread, is used. */
ts_status ts_ipu_threads_start(ts_model *m, ts_err *err)
{
    m->split = ts_malloc(((size_t)m->nthreads + 1) * sizeof *m->split);
    m->colw = ts_calloc((m->ncols ? m->ncols : 1) * (size_t)IPU_RUN_PARTS, sizeof *m->colw);
    m->colseen = ts_calloc((m->ncols ? m->ncols : 1) * (size_t)IPU_RUN_PARTS, sizeof *m->colseen);
    m->cur = ts_calloc((size_t)m->nthreads, sizeof *m->cur);
    m->spine_final = ts_calloc(m->ncols ? m->ncols : 1, 1);
    m->colsum = ts_calloc(m->ncols ? m->ncols : 1, sizeof *m->colsum);
    if (!m->split || !m->colw || !m->colseen || !m->cur || !m->spine_final || !m->colsum)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the host threads");
    ts_ipu_split(m->colw, m->ncols, (uint32_t)m->nthreads, m->split); /* all zero: evenly */
    if (m->nthreads > 1) {
        ts_status rc = ts_barrier_init(&m->bar, (uint32_t)m->nthreads, IPU_SPINS, IPU_YIELDS, true, err);
        if (rc)
            return rc;
        if (pthread_mutex_init(&m->gate_mu, NULL))
            return ts_err_set(err, TS_ENOMEM, "cannot create a mutex");
        if (pthread_cond_init(&m->gate_cv, NULL)) {
            pthread_mutex_destroy(&m->gate_mu);
            return ts_err_set(err, TS_ENOMEM, "cannot create a condition variable");
        }
        m->gate_init = true;
        m->th = ts_calloc((size_t)m->nthreads, sizeof *m->th);
        int failed_at = m->th ? 0 : 1;
        for (int i = 1; i < m->nthreads && !failed_at; i++) {
            ipu_thread_arg *a = ts_malloc(sizeof *a);
            if (a) {
                a->m = m;
                a->id = i;
            }
            if (!a || pthread_create(&m->th[i], NULL, worker_main, a)) {
                ts_free(a);
                failed_at = i;
                break;
            }
            m->nstarted = i;
        }
        /* open the gate: to work, or, when a thread could not start, to leave before the
         * barrier (which counts every thread) is ever used */
        pthread_mutex_lock(&m->gate_mu);
        m->gate = failed_at ? 2 : 1;
        pthread_cond_broadcast(&m->gate_cv);
        pthread_mutex_unlock(&m->gate_mu);
        if (failed_at) {
            for (int i = 1; i <= m->nstarted; i++)
                pthread_join(m->th[i], NULL);
            m->nstarted = 0;
            return ts_err_set(err, TS_ENOMEM, "cannot start host thread %d", failed_at);
        }
    }
    return TS_OK;
}

/* Send the helpers home through the barrier, join them and free their synchronisation (at destroy). */
void ts_ipu_threads_stop(ts_model *m)
{
    if (m->nstarted) {
        m->quit = true;
        bar_wait(m, &m->main_sense);
        for (int i = 1; i <= m->nstarted; i++)
            pthread_join(m->th[i], NULL);
    }
    ts_free(m->th);
    ts_free(m->split);
    ts_free(m->cur);
    ts_free(m->spine_final);
    ts_free(m->colsum);
    ts_free(m->colw);
    ts_free(m->colseen);
    if (m->prof)
        ts_free(m->prof->colw);
    ts_free(m->prof);
    ts_barrier_destroy(&m->bar);
    if (m->gate_init) {
        pthread_mutex_destroy(&m->gate_mu);
        pthread_cond_destroy(&m->gate_cv);
    }
}
