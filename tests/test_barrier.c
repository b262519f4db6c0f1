/* tests/test_barrier.c — the host threads' barrier (core/barrier.h): threads meeting many times
 * with shared state checked between barriers, in each of its modes (spinning, yielding, sleeping),
 * the sleep and wake-up path forced with tiny budgets, and the abort path. Threads do not call
 * ck_assert (Check's asserts belong to the test's own thread): they count what they saw wrong and
 * the test checks the counts once they are joined. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/barrier.h"

#define MAXT 8

typedef struct meet {
    ts_barrier bar;
    int nthreads, rounds;
    int late;                   /* this thread arrives last each round, once the others sleep (-1: none) */
    _Atomic uint32_t counter;   /* every thread adds 1 per round */
    int slot[MAXT];             /* plain ints: thread t writes its own, every thread reads all after a barrier */
    _Atomic uint32_t wrong;     /* what the threads saw wrong */
    _Atomic uint32_t slept;     /* rounds in which the late thread saw every other thread asleep */
} meet;

/* A thread's argument: the test's shared state and the thread's number. */
typedef struct targ {
    void *g;
    int id;
} targ;

/* fn run by n threads, thread t given {g, t}: the test's own thread is thread 0, the others are
 * started before it and joined after. */
static void run_threads(int n, void *(*fn)(void *), void *g)
{
    pthread_t th[MAXT];
    targ args[MAXT];
    for (int t = 0; t < n; t++)
        args[t] = (targ){g, t};
    for (int t = 1; t < n; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, fn, &args[t]), 0);
    fn(&args[0]);
    for (int t = 1; t < n; t++)
        pthread_join(th[t], NULL);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* The late thread waits (up to about a second) until every other thread counts as a sleeper. */
static bool wait_sleepers(ts_barrier *b, uint32_t n)
{
    for (int i = 0; i < 100000; i++) {
        if (atomic_load(&b->sleepers) == n)
            return true;
        pause_us(10);
    }
    return false;
}

/* Each round: add to the counter and write the own slot; barrier; check the counter and every
 * slot; barrier (so that nobody writes the next round's values while another still reads). */
static void *meet_main(void *p)
{
    targ *a = p;
    meet *g = a->g;
    uint32_t sense = 0;
    for (int r = 0; r < g->rounds; r++) {
        atomic_fetch_add_explicit(&g->counter, 1, memory_order_relaxed);
        g->slot[a->id] = r;
        if (a->id == g->late && wait_sleepers(&g->bar, (uint32_t)g->nthreads - 1))
            atomic_fetch_add(&g->slept, 1);
        if (!ts_barrier_wait(&g->bar, &sense, NULL))
            atomic_fetch_add(&g->wrong, 1);
        if (atomic_load_explicit(&g->counter, memory_order_relaxed) != (uint32_t)(g->nthreads * (r + 1)))
            atomic_fetch_add(&g->wrong, 1);
        for (int t = 0; t < g->nthreads; t++)
            if (g->slot[t] != r)
                atomic_fetch_add(&g->wrong, 1);
        if (!ts_barrier_wait(&g->bar, &sense, NULL))
            atomic_fetch_add(&g->wrong, 1);
    }
    return NULL;
}

/* Run nthreads threads (the test's own thread is thread 0) through `rounds` rounds. */
static void run_meet(meet *g, int nthreads, int rounds, uint32_t spins, uint32_t yields, bool sleep, int late)
{
    ts_err err = {0};
    ck_assert_int_eq(ts_barrier_init(&g->bar, (uint32_t)nthreads, spins, yields, sleep, &err), TS_OK);
    g->nthreads = nthreads;
    g->rounds = rounds;
    g->late = late;
    atomic_init(&g->counter, 0);
    atomic_init(&g->wrong, 0);
    atomic_init(&g->slept, 0);
    run_threads(nthreads, meet_main, g);
    ck_assert_uint_eq(atomic_load(&g->wrong), 0);
    ck_assert_uint_eq(atomic_load(&g->counter), (uint32_t)(nthreads * rounds));
    ts_barrier_destroy(&g->bar);
    ts_err_free(&err);
}

START_TEST(meets_spinning)
{
    static meet g; /* a ts_barrier is a few hundred bytes of padding: keep it off the stack */
    /* pure spinning only with two threads and few rounds: on a loaded 2-core host a spinning
     * thread may wait a whole time slice for the other to be scheduled, every round */
    run_meet(&g, 2, 200, UINT32_MAX, 0, false, -1);
    run_meet(&g, 4, 1000, 4000, 0, false, -1); /* as the wafer mesh: spins, then yields */
}
END_TEST

/* Rounds are few enough that a loaded host, where a yielding thread may hand its core to
 * another process for a whole time slice, still runs them in seconds. */
START_TEST(meets_yielding_and_sleeping)
{
    static meet g;
    run_meet(&g, 4, 1000, 0, 0, false, -1);        /* yields at once */
    run_meet(&g, 3, 1000, 4000, 2000, true, -1);   /* as the IPU: spins, yields, sleeps */
    run_meet(&g, MAXT, 500, 1, 1, true, -1);      /* sleeps almost at once, more threads than cores */
}
END_TEST

/* Tiny budgets and a thread that arrives only once every other thread counts as a sleeper: the
 * last arriver must see the sleepers and wake them, every round. */
START_TEST(sleepers_are_woken)
{
    static meet g;
    run_meet(&g, 4, 200, 1, 1, true, 3);
    ck_assert_uint_eq(atomic_load(&g.slept), 200);
    run_meet(&g, 2, 200, 0, 0, true, 0);
    ck_assert_uint_eq(atomic_load(&g.slept), 200);
}
END_TEST

START_TEST(one_thread_and_no_ops)
{
    static ts_barrier b, zero;
    ts_err err = {0};
    ck_assert_int_eq(ts_barrier_init(&b, 1, 0, 0, true, &err), TS_OK);
    uint32_t sense = 0;
    for (int i = 0; i < 1000; i++)
        ck_assert(ts_barrier_wait(&b, &sense, NULL));
    ck_assert_uint_eq(sense, 0); /* flipped an even number of times */
    ts_barrier_destroy(&b);
    ts_barrier_destroy(&b); /* destroyed: a no-op */
    ts_barrier_destroy(&zero);
    ts_barrier_destroy(NULL);
    ts_barrier_wake(&zero); /* does not sleep: nothing to wake */
    ts_err_free(&err);
}
END_TEST

typedef struct abort_test {
    ts_barrier bar;
    _Atomic uint32_t flag;
    _Atomic uint32_t returned_false, returned_true;
} abort_test;

static void *abort_waiter(void *p)
{
    abort_test *g = p;
    uint32_t sense = 0;
    if (ts_barrier_wait(&g->bar, &sense, &g->flag))
        atomic_fetch_add(&g->returned_true, 1);
    else
        atomic_fetch_add(&g->returned_false, 1);
    return NULL;
}

/* Three threads wait for a fourth that never comes; it sets the abort flag instead (and wakes
 * them when they may sleep). Every waiter returns false; after a reset the barrier works again. */
static void abort_case(abort_test *g, uint32_t spins, uint32_t yields, bool sleep)
{
    enum { N = 4 };
    ts_err err = {0};
    ck_assert_int_eq(ts_barrier_init(&g->bar, N, spins, yields, sleep, &err), TS_OK);
    atomic_init(&g->flag, 0);
    atomic_init(&g->returned_false, 0);
    atomic_init(&g->returned_true, 0);
    pthread_t th[N];
    for (int t = 1; t < N; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, abort_waiter, g), 0);
    if (sleep) /* they are all asleep before the flag is set */
        ck_assert(wait_sleepers(&g->bar, N - 1));
    else
        pause_us(2000);
    atomic_store_explicit(&g->flag, 1u, memory_order_release);
    ts_barrier_wake(&g->bar);
    for (int t = 1; t < N; t++)
        pthread_join(th[t], NULL);
    ck_assert_uint_eq(atomic_load(&g->returned_false), N - 1);
    ck_assert_uint_eq(atomic_load(&g->returned_true), 0);

    /* reset: the flag down, every thread's sense back at 0, and all four meet */
    atomic_store(&g->flag, 0);
    ts_barrier_reset(&g->bar);
    for (int t = 1; t < N; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, abort_waiter, g), 0);
    uint32_t sense = 0;
    ck_assert(ts_barrier_wait(&g->bar, &sense, &g->flag));
    for (int t = 1; t < N; t++)
        pthread_join(th[t], NULL);
    ck_assert_uint_eq(atomic_load(&g->returned_true), N - 1);
    ts_barrier_destroy(&g->bar);
    ts_err_free(&err);
}

START_TEST(abort_ends_the_wait)
{
    static abort_test g;
    abort_case(&g, 4000, 0, false); /* as the wafer mesh */
    abort_case(&g, 0, 0, false);
    abort_case(&g, 1, 1, true);     /* asleep when the flag is set */
}
END_TEST

/* Gather: helpers write their slot (plain) and arrive; the main thread gathers them, reads every
 * slot and writes the round's value alone, then arrives last, which lets them go; the helpers
 * check the main thread's value. In each mode (spinning, yielding, napping). */
typedef struct gather_test {
    ts_barrier bar;
    int nthreads, rounds;
    int slot[MAXT];
    int serial;                 /* written by the main thread alone, between gather and wait */
    _Atomic uint32_t wrong;
} gather_test;

typedef struct garg {
    gather_test *g;
    int id;
} garg;

static void *gather_helper(void *p)
{
    garg *a = p;
    gather_test *g = a->g;
    uint32_t sense = 0;
    for (int r = 0; r < g->rounds; r++) {
        g->slot[a->id] = r;
        ts_barrier_wait(&g->bar, &sense, NULL);
        if (g->serial != r)
            atomic_fetch_add(&g->wrong, 1);
    }
    return NULL;
}

static void gather_case(uint32_t spins, uint32_t yields, bool sleep)
{
    gather_test g = {.nthreads = 4, .rounds = 100, .serial = -1};
    ck_assert_int_eq(ts_barrier_init(&g.bar, 4, spins, yields, sleep, NULL), TS_OK);
    pthread_t th[MAXT];
    garg args[MAXT];
    for (int i = 1; i < g.nthreads; i++) {
        args[i] = (garg){&g, i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, gather_helper, &args[i]), 0);
    }
    uint32_t sense = 0;
    for (int r = 0; r < g.rounds; r++) {
        ts_barrier_gather(&g.bar);
        for (int i = 1; i < g.nthreads; i++)
            if (g.slot[i] != r)
                atomic_fetch_add(&g.wrong, 1);
        g.serial = r;
        ts_barrier_wait(&g.bar, &sense, NULL);
    }
    for (int i = 1; i < g.nthreads; i++)
        pthread_join(th[i], NULL);
    ck_assert_uint_eq(atomic_load(&g.wrong), 0);
    ts_barrier_destroy(&g.bar);
}

START_TEST(gather_then_release)
{
    gather_case(20000, 0, false); /* spins (then yields, so a loaded host cannot stall it) */
    gather_case(0, 1000000, false);
    gather_case(0, 2, true);
}
END_TEST

/* Counters handed on (ts_barrier_await): a ring of threads, thread t waiting each round for thread
 * t - 1's counter (thread 0 for the last thread's of the round before), reading the slot its
 * predecessor wrote (plain) before its counter's release store, then writing its own and storing
 * its counter. With tiny budgets every wait past the first read naps. */
typedef struct ring_test {
    ts_barrier bar;
    int nthreads, rounds;
    _Atomic uint32_t ctr[MAXT];
    int slot[MAXT];
    _Atomic uint32_t wrong;
} ring_test;

static void *ring_main(void *p)
{
    targ *a = p;
    ring_test *g = a->g;
    int t = a->id, prev = (t + g->nthreads - 1) % g->nthreads;
    for (int r = 1; r <= g->rounds; r++) {
        uint32_t need = t ? (uint32_t)r : (uint32_t)r - 1;
        if (!ts_barrier_await(&g->bar, &g->ctr[prev], need, NULL))
            atomic_fetch_add(&g->wrong, 1);
        if ((r > 1 || t) && g->slot[prev] != (t ? r : r - 1))
            atomic_fetch_add(&g->wrong, 1);
        g->slot[t] = r;
        atomic_store_explicit(&g->ctr[t], (uint32_t)r, memory_order_release);
    }
    return NULL;
}

static void ring_case(ring_test *g, int nthreads, int rounds, uint32_t spins, uint32_t yields, bool sleep)
{
    ck_assert_int_eq(ts_barrier_init(&g->bar, (uint32_t)nthreads, spins, yields, sleep, NULL), TS_OK);
    g->nthreads = nthreads;
    g->rounds = rounds;
    for (int t = 0; t < MAXT; t++) {
        atomic_init(&g->ctr[t], 0);
        g->slot[t] = 0;
    }
    atomic_init(&g->wrong, 0);
    run_threads(nthreads, ring_main, g);
    ck_assert_uint_eq(atomic_load(&g->wrong), 0);
    for (int t = 0; t < nthreads; t++)
        ck_assert_uint_eq(atomic_load(&g->ctr[t]), (uint32_t)rounds);
    ts_barrier_destroy(&g->bar);
}

START_TEST(counters_handed_on)
{
    static ring_test g;
    ring_case(&g, 4, 1000, 4000, 0, false);    /* spins, then yields */
    ring_case(&g, 4, 1000, 4000, 2000, true);  /* as the wafer mesh: spins, yields, naps */
    ring_case(&g, MAXT, 200, 0, 0, true);      /* naps at once, more threads than cores */
}
END_TEST

/* A waiter napping on a counter that never moves ends its wait on the abort flag. */
typedef struct await_abort {
    ts_barrier bar;
    _Atomic uint32_t ctr, abort_flag, result, started;
} await_abort;

static void *await_abort_main(void *p)
{
    await_abort *g = p;
    atomic_store(&g->started, 1);
    atomic_store(&g->result, ts_barrier_await(&g->bar, &g->ctr, 1, &g->abort_flag) ? 1u : 2u);
    return NULL;
}

START_TEST(await_ends_on_abort)
{
    static await_abort g;
    ck_assert_int_eq(ts_barrier_init(&g.bar, 2, 0, 0, true, NULL), TS_OK);
    atomic_init(&g.ctr, 0);
    atomic_init(&g.abort_flag, 0);
    atomic_init(&g.result, 0);
    atomic_init(&g.started, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, await_abort_main, &g), 0);
    while (!atomic_load(&g.started))
        pause_us(10);
    pause_us(2000); /* napping by now */
    ck_assert_uint_eq(atomic_load(&g.result), 0);
    atomic_store(&g.abort_flag, 1);
    pthread_join(th, NULL);
    ck_assert_uint_eq(atomic_load(&g.result), 2);
    ck_assert_uint_eq(atomic_load(&g.ctr), 0);
    ts_barrier_destroy(&g.bar);
}
END_TEST

static Suite *barrier_suite(void)
{
    Suite *s = suite_create("barrier");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, meets_spinning);
    tcase_add_test(tc, meets_yielding_and_sleeping);
    tcase_add_test(tc, sleepers_are_woken);
    tcase_add_test(tc, one_thread_and_no_ops);
    tcase_add_test(tc, gather_then_release);
    tcase_add_test(tc, abort_ends_the_wait);
    tcase_add_test(tc, counters_handed_on);
    tcase_add_test(tc, await_ends_on_abort);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(barrier_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
