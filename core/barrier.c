/* core/barrier.c — the host threads' barrier: set-up and the slow paths (sleeping, waking). The
 * ordering argument is in core/barrier.h. */
#include "core/barrier.h"

#include <string.h>
#include <time.h>

ts_status ts_barrier_init(ts_barrier *b, uint32_t nthreads, uint32_t spins, uint32_t yields, bool sleep,
                          ts_err *err)
{
    memset(b, 0, sizeof *b);
    atomic_init(&b->count, 0);
    atomic_init(&b->sense, 0);
    atomic_init(&b->sleepers, 0);
    b->nthreads = nthreads;
    b->spins = spins;
    b->yields = yields;
    b->sleep = sleep;
    if (sleep) {
        if (pthread_mutex_init(&b->mu, NULL))
            return ts_err_set(err, TS_ENOMEM, "cannot create a mutex");
        if (pthread_cond_init(&b->cv, NULL)) {
            pthread_mutex_destroy(&b->mu);
            return ts_err_set(err, TS_ENOMEM, "cannot create a condition variable");
        }
        b->sync_init = true;
    }
    return TS_OK;
}

void ts_barrier_destroy(ts_barrier *b)
{
    if (!b || !b->sync_init)
        return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    b->sync_init = false;
}

void ts_barrier_reset(ts_barrier *b)
{
    atomic_store(&b->count, 0);
    atomic_store(&b->sense, 0);
}

void ts_barrier_wake(ts_barrier *b)
{
    if (b->sync_init)
        ts_barrier_wake_sleepers_(b);
}

/* The last arriver saw a sleeper: broadcast under the mutex (a sleeper tests the sense holding it). */
void ts_barrier_wake_sleepers_(ts_barrier *b)
{
    pthread_mutex_lock(&b->mu);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* A waiter out of budget: count itself among the sleepers (seq_cst, the other half of the pair in
 * core/barrier.h), then wait until the sense is s or the abort flag is set. */
bool ts_barrier_sleep_(ts_barrier *b, uint32_t s, const _Atomic uint32_t *abort_flag)
{
    bool arrived;
    pthread_mutex_lock(&b->mu);
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    for (;;) {
        if ((arrived = atomic_load_explicit(&b->sense, memory_order_seq_cst) == s))
            break;
        if (abort_flag && atomic_load_explicit(abort_flag, memory_order_acquire))
            break;
        pthread_cond_wait(&b->cv, &b->mu);
    }
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&b->mu);
    return arrived;
}

/* 20 us: a round of the IPU model on 16 threads takes tens of microseconds */
void ts_barrier_nap_(void)
{
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
}

void ts_barrier_gather(ts_barrier *b)
{
    const uint32_t spins = b->spins, budget = b->spins + b->yields, others = b->nthreads - 1;
    const bool sleep = b->sleep;
    for (uint32_t i = 0; atomic_load_explicit(&b->count, memory_order_acquire) < others; i++)
        ts_barrier_backoff_(i, spins, budget, sleep);
}
