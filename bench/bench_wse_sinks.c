/* bench/bench_wse_sinks.c — simulator speed on random single-wavelet traffic to 24 sink PEs.
 *
 *   bench_wse_sinks [RATE] [WAVELETS_PER_PE] [THREADS] [WIDTH] [HEIGHT]
 *
 * A WIDTH x HEIGHT mesh (default 16 x 16) with WSE-2 parameters; 24 sink PEs, one per colour, each
 * colour routed X-then-Y from every PE to its sink (routes are static per colour, so destinations
 * are drawn among the sinks); every other PE sends WAVELETS_PER_PE wavelets (default 4000) on
 * random colours with geometric gaps of mean 1/RATE cycles (default RATE 0.05 wavelets per PE per
 * cycle). Prints simulated cycles, wall time, router-cycles/s (mesh routers x cycles per second,
 * target >= 1e7 per thread) and active PE-cycles/s (PEs busy or stalled; and those the active set
 * evaluated), by
 * wall time and by process CPU time (the latter is what to compare on a shared host). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_kernels.h"
#include "bench/bench_wse_run.h"
#include "core/program.h"

int main(int argc, char **argv)
{
    double rate = argc > 1 ? atof(argv[1]) : 0.05;
    unsigned per = argc > 2 ? (unsigned)atoi(argv[2]) : 4000;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    unsigned w = argc > 4 ? (unsigned)atoi(argv[4]) : 16, h = argc > 5 ? (unsigned)atoi(argv[5]) : 16;
    ts_err err;
    ts_err_init(&err);
    ts_wse_cfg c;
    ts_program *p = NULL;
    ts_model *m = NULL;
    ts_run_opts o = {.threads = threads};
    if (ts_wse_cfg_defaults(&c, &err))
        goto fail;
    c.width = w;
    c.height = h;
    if (ts_wse_sinks_program(&p, w, h, 24, per, rate, 1, &err) || ts_wse_create(&m, &c, &o, &err) ||
        ts_wse_family.load(m, p, &err))
        goto fail;
    ts_step st;
    double dt, cpu;
    if (bench_wse_run(m, &st, &dt, &cpu, &err))
        goto fail;
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    double rc = (double)w * h * (double)k.cycles;
    printf("bench_wse_sinks: %ux%u mesh, rate %.3f, %u wavelets per source, %d thread(s)\n", w, h, rate, per, threads);
    printf("  simulated cycles      %llu\n", (unsigned long long)k.cycles);
    printf("  wavelets delivered    %llu (%.3f per PE per cycle)\n", (unsigned long long)k.wavelets_delivered,
           (double)k.wavelets_delivered / rc);
    printf("  hops                  %llu\n", (unsigned long long)k.hops);
    printf("  wall time             %.3f s\n", dt);
    printf("  router-cycles/s       %.3g (%.3g per thread)\n", rc / dt, rc / dt / threads);
    printf("  active PE-cycles/s    %.3g (PEs busy or stalled; %.3g evaluated)\n", (double)k.pe_working / dt,
           (double)k.tile_cycles / dt);
    printf("  cpu time              %.3f s (all threads): %.3g router-cycles per cpu-second, %.3g active "
           "PE-cycles per cpu-second (%.3g evaluated)\n", cpu, rc / cpu, (double)k.pe_working / cpu,
           (double)k.tile_cycles / cpu);
    ts_wse_family.destroy(m);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 0;
fail:
    fprintf(stderr, "bench_wse_sinks: %s\n", err.msg);
    ts_wse_family.destroy(m);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 1;
}
