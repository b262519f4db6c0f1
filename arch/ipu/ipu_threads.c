/* arch/ipu/ipu_threads.c — the model's host threads: which tiles each one runs (whole columns),
 * the two phases of a round each runs (run its tiles; commit their words and summarise them), the
 * barrier they meet at (core/barrier.h), and starting and stopping them. The main thread is
 * thread 0; with one thread there are no helpers and no barrier.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "arch/ipu/ipu_int.h"
#include "core/alloc.h"

typedef struct ipu_thread_arg {
    ts_model *m;
    int id;
} ipu_thread_arg;

/* The tiles of thread id: whole columns (so that a column's spine stage is one thread's), split
 * as evenly as columns allow. */
static void thread_range(const ts_model *m, int id, uint32_t *lo, uint32_t *hi)
{
    uint64_t k = (uint64_t)m->nthreads, tpc = m->c.tiles_per_column;
    uint64_t a = m->ncols * (uint64_t)id / k * tpc, b = m->ncols * ((uint64_t)id + 1) / k * tpc;
    *lo = (uint32_t)(a < m->ntiles ? a : m->ntiles);
    *hi = (uint32_t)(b < m->ntiles ? b : m->ntiles);
}

/* Run tiles [lo, hi) to round_h; record the first error of each thread (lowest cycle, then tile). */
static void run_range(ts_model *m, int id)
{
    uint32_t lo, hi;
    thread_range(m, id, &lo, &hi);
    ipu_terr *te = &m->terr[id];
    for (uint32_t i = lo; i < hi; i++) {
        if (m->t[i].failed || m->t[i].sup != SUP_RUN)
            continue;
        ts_err *e = &te->scratch;
        if (ts_ipu_tile_run(m, i, m->round_h, e) != TS_OK) {
            m->t[i].failed = true;
            if (!te->failed || e->cycle < te->err.cycle) {
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

/* Tiles [lo, hi) of thread id: commit the words they sent this round to their logs (no thread
 * reads a log while this runs: it comes between two barriers) and summarise their state for the
 * main thread's decision. */
static void finish_range(ts_model *m, int id)
{
    uint32_t lo, hi;
    thread_range(m, id, &lo, &hi);
    ipu_tsum s = {0};
    s.nomem = m->tsum[id].nomem;
    for (uint32_t i = lo; i < hi; i++) {
        ipu_tile *t = &m->t[i];
        if (t->pend.n) {
            if (t->log.n + t->pend.n > t->log.cap) {
                void *v = t->log.v;
                if (ts_grow(&v, &t->log.cap, t->log.n + t->pend.n, sizeof(ipu_word))) {
                    s.nomem = true;
                    continue;
                }
                t->log.v = v;
            }
            memcpy(t->log.v + t->log.n, t->pend.v, t->pend.n * sizeof(ipu_word));
            t->log.n += t->pend.n;
            t->pend.n = 0;
        }
        if (i + 1 == hi || (i + 1) % m->c.tiles_per_column == 0)
            ts_ipu_spine_column(m, (uint32_t)(i / m->c.tiles_per_column), m->round_h);
        s.work += t->work;
        s.uni += t->ss_uni;
        s.claims += t->ss_claims;
        uint64_t at;
        if (t->sup == SUP_DONE) { /* halted during this superstep: arrived from its halt */
            if (ts_ipu_arrived_at(m, t, &at) && at > s.last_arrival)
                s.last_arrival = at;
            continue;
        }
        s.pending |= t->failed;
        s.live++;
        if (t->sup == SUP_SYNC) {
            s.at_sync++;
            if (t->arrival > s.last_arrival)
                s.last_arrival = t->arrival;
        }
        s.waiting += t->sup == SUP_RUN && !t->running && t->rx_left && t->cx[0].pc < t->n &&
                     t->code[t->cx[0].pc].op == IPU_OP_RXWAIT;
    }
    m->tsum[id] = s;
}

/* The threads' barrier (core/barrier.h): a thread spins for a while (a round takes microseconds, a
 * futex wake-up about as long), then spins yielding the core (on a busy host the thread it waits
 * for may need that core), and then sleeps; the last to arrive wakes the sleepers. */
#define IPU_SPINS 4000  /* plain spins (a few microseconds) */
#define IPU_YIELDS 2000 /* then spins that yield the core (about a millisecond when it is free) */

static inline void bar_wait(ts_model *m, uint32_t *sense)
{
    ts_barrier_wait(&m->bar, sense, NULL);
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
        run_range(m, id);
        bar_wait(m, &sense);
        finish_range(m, id);
        bar_wait(m, &sense);
    }
    return NULL;
}

/* One round on every thread, to m->round_h: each runs its tiles, then commits their words and
 * summarises them; the helpers and the main thread (thread 0) meet at the barrier before each
 * phase and after the last. */
void ts_ipu_round(ts_model *m)
{
    if (m->nthreads > 1) {
        bar_wait(m, &m->main_sense);
        run_range(m, 0);
        bar_wait(m, &m->main_sense);
        finish_range(m, 0);
        bar_wait(m, &m->main_sense);
    } else {
        run_range(m, 0);
        finish_range(m, 0);
    }
}

/* Start threads 1 .. nthreads - 1 (at create). They wait at the gate until every one has started,
 * so that a failure can send them home before the barrier, which counts every thread, is used. */
ts_status ts_ipu_threads_start(ts_model *m, ts_err *err)
{
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
    ts_barrier_destroy(&m->bar);
    if (m->gate_init) {
        pthread_mutex_destroy(&m->gate_mu);
        pthread_cond_destroy(&m->gate_cv);
    }
}
