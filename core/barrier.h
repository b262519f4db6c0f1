/* core/barrier.h — the host threads' barrier.
 *
 * A family that runs its model on several host threads meets them at a ts_barrier: sense-reversing
 * on C11 atomics. Each thread keeps its own sense (a uint32_t, 0 before the first wait) and flips it
 * on entry; the last of nthreads to arrive resets the count and publishes its sense, which lets the
 * others go. A waiting thread
 *
 *   1. spins `spins` times on the shared sense (a round of a model takes microseconds, a futex
 *      wake-up about as long, so spinning is cheapest when every thread has a core),
 *   2. then spins `yields` more times calling sched_yield() between reads (on a busy host the
 *      thread it waits for may need its core),
 *   3. then, when `sleep` is set, sleeps on a condition variable until the last arriver wakes it;
 *      without `sleep` it keeps yielding.
 *
 * Both families sleep after their budgets, so no waiting thread burns a core for long. The wafer
 * mesh also passes an abort flag: a thread that sets it (a band stopped on an error) makes every
 * waiter return at once, because the others will not come.
 *
 * Counters beside the barrier. Threads that meet only where they touch (the wafer's bands) wait
 * for a neighbour's counter rather than for all: ts_barrier_await waits until a counter reaches a
 * value with the barrier's budgets, then naps (as ts_barrier_gather does), so that the counter's
 * owner, which advances it every cycle, pays one plain store and never a wake-up.
 *
 * Memory ordering. The last arriver stores the count (relaxed) and then the sense (release): a
 * waiter that reads the new sense (acquire) sees everything every thread did before arriving, and
 * sees the count back at 0 before it can arrive at the next barrier. When sleeping is allowed two
 * more things happen, and they form a Dekker pair with sequentially consistent operations on both
 * sides:
 *
 *   last arriver:  store sense = s      (seq_cst)    sleeper:  sleepers += 1        (seq_cst)
 *                  load sleepers        (seq_cst)              load sense           (seq_cst)
 *
 * There is a single total order of these four operations consistent with each thread's program
 * order. If the last arriver's load of sleepers comes before the sleeper's increment, then its
 * store of the sense comes before it too, and so before the sleeper's load of the sense: the
 * sleeper sees s and does not wait. Otherwise the last arriver sees sleepers > 0, takes the mutex
 * and broadcasts. The sleeper read the sense and went to cond_wait while holding that mutex, and
 * cond_wait releases it atomically, so the broadcast cannot fall between its test and its wait.
 * Either way no sleeper is left behind. A broadcast for a sleeper of an earlier barrier that had
 * not yet decremented sleepers is only a spurious wake-up (the sleeper re-tests the sense).
 *
 * Abort. The flag is read (acquire) on every spin and, when sleeping, under the mutex before each
 * wait; whoever sets it on a barrier that may sleep calls ts_barrier_wake() after the store, which
 * broadcasts under the mutex, so a sleeper either sees the flag or is woken. A wait that returns
 * because of the flag leaves the barrier's count mid-way: ts_barrier_reset() (with no thread in
 * the barrier) makes it usable again, with every thread's sense back at 0.
 *
 * A barrier is embedded in its owner's struct (the fast path below is inline and reads its fields);
 * ts_barrier_init / ts_barrier_destroy pair up, and destroying a zeroed, never-initialised barrier
 * is a no-op.
 */
#ifndef TS_CORE_BARRIER_H
#define TS_CORE_BARRIER_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

/* Bytes between fields written by different threads, so that the arrivals' count and the sense
 * the waiters spin on sit on different cache lines (two lines: adjacent-line prefetch). */
#define TS_BARRIER_PAD 128

typedef struct ts_barrier {
    _Atomic uint32_t count;    /* threads arrived at the current barrier */
    char pad0[TS_BARRIER_PAD];
    _Atomic uint32_t sense;    /* flips when the last thread arrives; waiters spin on it */
    _Atomic uint32_t sleepers; /* threads asleep (or about to be) on cv */
    char pad1[TS_BARRIER_PAD];
    /* read-only after init */
    uint32_t nthreads;         /* threads that meet at each barrier */
    uint32_t spins, yields;    /* the budgets of plain spins, then spins that yield */
    bool sleep;                /* sleep on cv after the budgets (else keep yielding) */
    bool sync_init;            /* mu and cv exist (sleep was asked for and they were created) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} ts_barrier;

/* Set b up for nthreads (>= 1) threads with the given budgets; with `sleep` a waiter sleeps after
 * spins + yields reads, else it yields after `spins` reads for as long as it waits (`yields` is then
 * unused). TS_ENOMEM (with err set) when the mutex or the condition variable cannot be created; b
 * is then as after ts_barrier_destroy. Without `sleep` nothing is created and this cannot fail.
 * Initialising again a barrier that does not sleep (with no thread in it) is allowed and resets it. */
ts_status ts_barrier_init(ts_barrier *b, uint32_t nthreads, uint32_t spins, uint32_t yields, bool sleep,
                          ts_err *err);

/* Free b's synchronisation; b must have no waiter. A zeroed or destroyed barrier is a no-op; NULL too. */
void ts_barrier_destroy(ts_barrier *b);

/* Make b usable again after a wait returned early on its abort flag: count and sense back to 0, so
 * every thread starts again with its sense at 0. No thread may be inside the barrier. */
void ts_barrier_reset(ts_barrier *b);

/* Wake every sleeper so that it re-tests the sense and the abort flag: called after setting an
 * abort flag that sleepers of b may be reading. A no-op on a barrier that does not sleep. */
void ts_barrier_wake(ts_barrier *b);

/* Wait until every thread but the caller has arrived at b's current barrier; the caller then
 * arrives last with ts_barrier_wait, which lets them all go. Between the two it acts alone while
 * the others wait (a serial step between two parallel ones, for one meeting instead of two). The
 * load that sees nthreads - 1 arrivals (acquire) reads the last of the arrivals' read-modify-
 * writes, which continue the release sequence of each earlier one: the caller sees everything
 * every other thread did before arriving. It spins `spins` times, then yields `yields` times,
 * then (with `sleep`) naps a few microseconds at a time: no thread wakes the caller, and the
 * others arrive within a phase of work. Not with an abort flag. */
void ts_barrier_gather(ts_barrier *b);

/* Slow paths of ts_barrier_wait, ts_barrier_gather and ts_barrier_await (core/barrier.c), kept out
 * of line. */
void ts_barrier_wake_sleepers_(ts_barrier *b);
bool ts_barrier_sleep_(ts_barrier *b, uint32_t s, const _Atomic uint32_t *abort_flag);
void ts_barrier_nap_(void);

/* The i-th read of a wait that did not end (i from 0) with the budgets spins and budget = spins +
 * yields: nothing while spinning, then a yield, then (with sleep) a nap; ts_barrier_gather and
 * ts_barrier_await back off by it. The budgets are passed in: read from b after each acquire load,
 * the compiler would load them again. */
static inline void ts_barrier_backoff_(uint32_t i, uint32_t spins, uint32_t budget, bool sleep)
{
    if (i < spins)
        return;
    if (sleep && i >= budget)
        ts_barrier_nap_();
    else
        sched_yield();
}

/* Whether counter c has reached v, counting modulo 2^32 (v at most 2^31 ahead of c). */
static inline bool ts_barrier_reached(uint32_t c, uint32_t v) { return (int32_t)(c - v) >= 0; }

/* Wait until counter *a (set by its owner with a release store) has reached v, or until *abort_flag
 * (when not NULL) is non-zero, with b's budgets: spins, then yields, then (on a barrier that sleeps)
 * naps of ts_barrier_nap_ until it has. The owner wakes nobody, so a counter costs its owner one
 * plain store; a waiter past its budgets has waited a millisecond or so, and a nap's 20 us more is
 * little beside it. True when the counter reached v (its load is an acquire: the caller sees what
 * the owner did before the store). */
static inline bool ts_barrier_await(const ts_barrier *b, const _Atomic uint32_t *a, uint32_t v,
                                    const _Atomic uint32_t *abort_flag)
{
    const uint32_t spins = b->spins, budget = b->spins + b->yields;
    const bool sleep = b->sleep;
    for (uint32_t i = 0; !ts_barrier_reached(atomic_load_explicit(a, memory_order_acquire), v); i++) {
        if (abort_flag && atomic_load_explicit(abort_flag, memory_order_acquire))
            return false;
        ts_barrier_backoff_(i, spins, budget, sleep);
    }
    return true;
}

/* Wait until all b->nthreads threads have called this, or until *abort_flag (when not NULL) is
 * non-zero. *sense is the calling thread's own sense (0 before its first wait, and after a reset);
 * this flips it. Returns true when every thread arrived, false when the wait ended on the abort
 * flag (then the barrier needs ts_barrier_reset before it is used again). */
static inline bool ts_barrier_wait(ts_barrier *b, uint32_t *sense, const _Atomic uint32_t *abort_flag)
{
    uint32_t s = *sense ^ 1u;
    *sense = s;
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->nthreads) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        if (b->sleep) {
            atomic_store_explicit(&b->sense, s, memory_order_seq_cst);
            if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst))
                ts_barrier_wake_sleepers_(b);
        } else {
            atomic_store_explicit(&b->sense, s, memory_order_release);
        }
        return true;
    }
    /* the budgets in locals: every acquire load below would make the compiler read them again */
    const uint32_t spins = b->spins, budget = b->spins + b->yields;
    const bool sleep = b->sleep;
    for (uint32_t i = 0; atomic_load_explicit(&b->sense, memory_order_acquire) != s; i++) {
        if (abort_flag && atomic_load_explicit(abort_flag, memory_order_acquire))
            return false; /* the others will not come */
        if (i >= spins) {
            if (sleep && i >= budget)
                return ts_barrier_sleep_(b, s, abort_flag);
            sched_yield(); /* let a thread we wait for run if it shares our core */
        }
    }
    return true;
}

#endif
