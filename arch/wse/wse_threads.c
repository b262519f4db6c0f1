/* arch/wse/wse_threads.c — running the model up to a cycle (ts_wse_step) on threads.
 *
 * Threads own bands of mesh rows (wse_band.c). A band depends on its neighbours only through the
 * rows within a row of them, one cycle at a time (a pop is seen by the producer one cycle later, on
 * every link, whatever fabric.hop_latency is), so bands meet there and not at a barrier: within a
 * cycle a band waits for its neighbours' edge rows to be through phase A before committing its own,
 * and before the next cycle for their edge rows to be committed (phases(), thread_main()); a band
 * may be a cycle ahead of its neighbour. Each band leaves a summary of its cycle, and the
 * end-of-cycle decision (go on, jump over idle cycles to the first sleeper, done, deadlock, error)
 * is a pure function of the summaries, so every thread that takes it takes the same one. A
 * barrier (core/barrier.h) serves lockstep, activity windows and the re-splits of the bands by
 * measured work; the bands' counters are awaited with its budgets (ts_barrier_await). A waiting
 * thread spins, then yields, then naps, so a band that waits long (another band's cycle is much
 * more work, or the host's cores are fewer than the threads) does not burn a core.
 */
#include "arch/wse/wse_inline.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"

/* ------------------------------------------------------------------------------------------ */
/* bands meeting where they touch */

static inline bool has_edges(const wse_band *b) { return b->edge_lo > b->id0 || b->edge_hi < b->id1; }

#define WSE_SPINS 4000  /* spins before yielding; a cycle of a 16 x 16 band takes a few microseconds */
#define WSE_YIELDS 2000 /* yields before sleeping: about a millisecond on an idle core */

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
    if (ts_barrier_reached(atomic_load_explicit(a, memory_order_acquire), seq))
        return true;
    uint64_t t0 = host_ns();
    bool ok = ts_barrier_await(&m->bar, a, seq, &m->abort);
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

/* Phases A and B of band b (thread k) in cycle seq. A tile's phase B must follow phase A of each
 * of its neighbours, and its phase A must come before phase B of each of them; only zone E (within
 * a row of another band) has neighbours in other bands, and its neighbours in its own band are in
 * E or S (two rows). So: A of E, published (a_seq); A of S; A and B of the inner zone I in one
 * wavefront (its neighbours are in S or I; no other band reads it); once the neighbouring bands'
 * E are through A, B of E, published (b_seq): the neighbours' next cycle needs only that; then B
 * of S. False if the run stops meanwhile. */
static bool phases(ts_model *m, wse_band *b, int k, uint32_t seq)
{
    b->nact_done = b->act[WSE_ZE].n + b->act[WSE_ZS].n + b->act[WSE_ZI].n;
    b->nxt.n = 0; /* left by a run that stopped (it never is: a stop that merges nothing leaves none) */
    ts_wse_eval_list(m, b, &b->act[WSE_ZE]);
    if (has_edges(b))
        atomic_store_explicit(&b->a_seq, seq, memory_order_release);
    ts_wse_eval_list(m, b, &b->act[WSE_ZS]);
    /* I's neighbours are in S or I, through phase A or in the wavefront: its phase B goes with
     * its phase A (wse_pe.c: ts_wse_eval_commit_list), before E's and S's, which it does not read */
    ts_wse_eval_commit_list(m, b, &b->act[WSE_ZI]);
    if (has_edges(b)) {
        if (!wait_nb(m, k, offsetof(wse_band, a_seq), seq))
            return false;
        b->nxwake[b->par] = 0; /* its readers merged it two cycles ago: they are through A of seq */
    }
    ts_wse_commit_list(m, b, &b->act[WSE_ZE]);
    if (has_edges(b))
        atomic_store_explicit(&b->b_seq, seq, memory_order_release);
    ts_wse_commit_list(m, b, &b->act[WSE_ZS]);
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* the end-of-cycle decision */

/* What a band leaves for the end-of-cycle decision of cycle seq, written by its thread after its
 * phase B and published (s_seq); read by the threads that decide that cycle. Kept in a ring of
 * WSE_NSUM cycles: a band is at most a cycle ahead of its neighbours, so at most nthreads - 1
 * ahead of any band. */
static wse_sum *band_summary(const ts_model *m, wse_band *b, uint32_t seq)
{
    wse_sum *s = &b->sum[seq % WSE_NSUM];
    s->next = b->nxt.n;
    s->wake = b->nxwake[b->par];
    s->ntm = ts_wse_tm_count(b);
    s->tm_first = ts_wse_tm_first(b);
    s->progress = b->progress;
    s->nblk = b->nblk;
    s->nact = b->nact_done;
    s->oom = b->oom;
    s->err_tile = b->err_st ? b->err_tile : -1;
    s->quiet = m->lockstep && m->nthreads == 1 ? ts_wse_band_quiet_exact(m, 0) : s->quiet;
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

/* Called after the run when decide() found no progress: by then every thread has stopped. */
static void deadlock_check(ts_model *m)
{
    ts_status rc = ts_wse_deadlock(m, m->run_err);
    if (rc) {
        m->run_st = rc;
    } else {
        ts_wse_settle_blocked(m, m->now, m->limit); /* the cycles up to the limit are not simulated */
        m->now = m->limit;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* threads: the barrier (core/barrier.h) spins, then yields, then sleeps (a cycle of a band takes
 * microseconds, so most waits end while spinning); a wait ends early when a band stopped on an
 * error (abort), since the others will not come (ts_barrier_wake: a sleeper re-reads the flag) */

static inline void spin_barrier(ts_model *m, uint32_t *sense)
{
    ts_barrier_wait(&m->bar, sense, &m->abort);
}

#define WSE_REBALANCE_FIRST 1024  /* cycles measured before the first re-split */
#define WSE_REBALANCE_EVERY 8192  /* cycles between re-splits after it */
#define WSE_COST_EVAL 4           /* a tile's evaluation costs about 4 instructions or 2 hops (measured) */
#define WSE_COST_HOP 2

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

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
        ntm += ts_wse_tm_count(&m->band[k]);
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
        size_t n = ts_wse_tm_count(b);
        ts_wse_tm_take(b, tm + ntm);
        ntm += n;
    }
    ts_wse_split_bands(m, weight);
    qsort(act, nact, sizeof *act, cmp_id); /* the lists in id order (ts_wse_eval_commit_list) */
    for (size_t i = 0; i < nact; i++)
        act_add(&m->band[band_of(m, act[i])], act[i]);
    for (size_t i = 0; i < ntm; i++)
        ts_wse_tm_push(&m->band[band_of(m, tm[i].id)], tm[i].at, tm[i].id);
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
                s->quiet = ts_wse_band_quiet_exact(m, k);
                spin_barrier(m, &sense);
            }
            decide(m, b->now, seq, &d);
        }
        uint64_t was = b->now;
        ts_wse_band_advance(m, k, &d);
        b->last = d;
        if (d.stop) {
            /* every band that decides this cycle decides the same: the first one publishes it */
            uint32_t none = 0;
            if (atomic_compare_exchange_strong(&m->stop_claim, &none, 1u))
                m->final = d;
            if (d.oom || d.eband >= 0) {
                atomic_store_explicit(&m->abort, 1u, memory_order_release);
                ts_barrier_wake(&m->bar); /* sleepers re-read the flag */
                break; /* other bands may be past this cycle: no window is sampled */
            }
        }
        if (m->act && ts_wse_act_due(m, was, d.next)) { /* a window ends: sampled with every thread here */
            if (m->nthreads > 1)
                spin_barrier(m, &sense);
            if (k == 0) {
                ts_wse_settle_blocked(m, d.next, d.next);
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

/* A started thread's entry: wait at the gate until every thread has started (without the barrier,
 * so that a run whose threads could not all start sends the others home before any meets it). */
static void *thread_entry(void *p)
{
    const thr_arg *a = p;
    uint32_t g;
    while ((g = atomic_load_explicit(&a->m->gate, memory_order_acquire)) == 0)
        sched_yield();
    return g == 1 ? thread_main(p) : NULL;
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
        ts_status rc = ts_wse_lockstep_lists(m, err);
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
        /* a barrier of its own for each run: one left mid-way by an abort is not reused */
        ts_status brc = ts_barrier_init(&m->bar, (uint32_t)m->nthreads, WSE_SPINS, WSE_YIELDS, true, err);
        if (brc) {
            ts_free(tid);
            ts_free(args);
            return brc;
        }
        int started = 1;
        for (int k = 0; k < m->nthreads; k++)
            args[k] = (thr_arg){m, k};
        atomic_store(&m->gate, 0);
        for (int k = 1; k < m->nthreads; k++) {
            if (pthread_create(&tid[k], NULL, thread_entry, &args[k]))
                break;
            started++;
        }
        atomic_store_explicit(&m->gate, started == m->nthreads ? 1u : 2u, memory_order_release);
        if (started != m->nthreads) {
            /* the started threads leave at the gate: the run cannot go on without its bands' threads,
             * so this is fatal for the run */
            for (int k = 1; k < started; k++)
                pthread_join(tid[k], NULL);
            ts_barrier_destroy(&m->bar);
            ts_free(tid);
            ts_free(args);
            return ts_err_set(err, TS_ENOMEM, "cannot start %d threads", m->nthreads);
        }
        thread_main(&args[0]);
        for (int k = 1; k < m->nthreads; k++)
            pthread_join(tid[k], NULL);
        ts_barrier_destroy(&m->bar);
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
    ts_wse_settle_blocked(m, m->now, m->now);
    if (m->run_st)
        return m->run_st;
    if (m->done && m->act && (rc = ts_wse_act_finish(m, err)) != TS_OK)
        return rc;
    st->now = m->now;
    st->work = m->work;
    st->done = m->done;
    return TS_OK;
}
