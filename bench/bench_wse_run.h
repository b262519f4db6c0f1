/* bench/bench_wse_run.h — what the wafer benchmarks share: the host clock, and running a loaded
 * model to its end with the wall and CPU time it took. */
#ifndef TS_BENCH_WSE_RUN_H
#define TS_BENCH_WSE_RUN_H

#include <time.h>

#include "arch/wse/wse.h"

/* Seconds of the monotonic host clock. */
static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Step model m to its end, 65536 cycles a call; *wall and *cpu (process CPU, all threads) seconds. */
static inline ts_status bench_wse_run(ts_model *m, ts_step *st, double *wall, double *cpu, ts_err *err)
{
    double t0 = bench_now_s();
    clock_t c0 = clock();
    *st = (ts_step){0};
    while (!st->done) {
        ts_status rc = ts_wse_family.step(m, st->now + 65536, st, err);
        if (rc)
            return rc;
    }
    *wall = bench_now_s() - t0;
    *cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    return TS_OK;
}

#endif
