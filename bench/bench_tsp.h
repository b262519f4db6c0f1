/* bench/bench_tsp.h — what the TSP benchmarks share: a host clock, the error line, and one run of
 * a program with its JSON report. */
#ifndef TS_BENCH_TSP_H
#define TS_BENCH_TSP_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "core/buf.h"
#include "core/program.h"
#include "core/report.h"
#include "core/sim.h"

/* Seconds of host clock id: CLOCK_MONOTONIC (wall) or CLOCK_PROCESS_CPUTIME_ID (the process's
 * CPU, all its threads: on a shared host the figure the other processes change least). */
static inline double bench_clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Print e as "<prog>: <message>" on stderr; 1. */
static inline int bench_fail(const char *prog, const ts_err *e)
{
    char line[1400];
    ts_err_format(e, line, sizeof line);
    fprintf(stderr, "%s: %s\n", prog, line);
    return 1;
}

/* Run p on cfg (fast or lockstep, on `threads` host threads): its JSON report appended to json,
 * the seconds of clock id it took, its cycles and MACs. 0, or 1 after printing the error. */
static inline int bench_tsp_run(const char *prog, const ts_family *fam, const ts_config *cfg, const ts_program *p,
                                bool lockstep, int threads, clockid_t id, ts_buf *json, double *secs,
                                uint64_t *cycles, uint64_t *macs)
{
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ts_run_opts o = {.lockstep = lockstep, .threads = threads};
    double t0 = bench_clock_s(id);
    if (ts_sim_run(fam, cfg, p, &o, NULL, &r, &e) != TS_OK)
        return bench_fail(prog, &e);
    *secs = bench_clock_s(id) - t0;
    *cycles = r.cycles;
    *macs = r.macs;
    ts_report_json(&r, json);
    ts_results_free(&r);
    return 0;
}

#endif
