/* bench/bench_tsp_resnet.c — lowering and simulator speed on a whole model on the TSP.
 *
 * Compiles MODEL (default the built-in resnet50: ResNet-50, batch 1, 224 x 224, int8 with fill
 * values, as `tessera compile -c tsp_v1 resnet50` does) for configs/tsp_v1, then runs the program
 * on one host thread (and on THREADS, default 1, when more). Prints the lowering's CPU time and
 * the instructions it emitted per CPU second, the run's CPU time and the simulated cycles per CPU
 * second, and the sum of both; with THREADS > 1 checks that the reports are identical (the CPU time
 * of a threaded run is that of all its threads). CPU seconds on a shared machine still vary from
 * run to run: callgrind's instruction counts are the repeatable figure (docs/lowering-tsp.md,
 * *The search*).
 *
 * usage: bench_tsp_resnet [MODEL] [THREADS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "bench/bench_tsp.h"
#include "configs/builtin.h"
#include "workloads/lower/lower.h"

#define CPU CLOCK_PROCESS_CPUTIME_ID

static int run(const ts_family *fam, const ts_config *cfg, const ts_program *p, int threads, ts_buf *json,
               double *secs, uint64_t *cycles)
{
    uint64_t macs;
    return bench_tsp_run("bench_tsp_resnet", fam, cfg, p, false, threads, CPU, json, secs, cycles, &macs);
}

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "resnet50";
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1)
        return fprintf(stderr, "usage: bench_tsp_resnet [MODEL] [THREADS]\n"), 2;
    const ts_family *fam = ts_family_find("tsp");
    if (!fam)
        return fprintf(stderr, "bench_tsp_resnet: the tsp family is not built\n"), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, "tsp_v1", &co, &e) != TS_OK)
        return bench_fail("bench_tsp_resnet", &e);
    ts_lowered *l = NULL;
    double t0 = bench_clock_s(CPU);
    if (ts_lower_model_values(model, cfg, NULL, &(ts_lower_values){.fill = true}, &l, &e) != TS_OK) {
        ts_config_destroy(cfg);
        return bench_fail("bench_tsp_resnet", &e);
    }
    double lower_s = bench_clock_s(CPU) - t0;
    ts_program *p = ts_lowered_take_program(l);
    uint64_t insns = 0;
    for (size_t i = 0; i < p->nstreams; i++)
        insns += p->streams[i].n;
    printf("lowering %-10s %llu instructions in %.3f s of CPU: %.3g instructions/s\n", model, (unsigned long long)insns,
           lower_s, (double)insns / lower_s);
    ts_buf a = TS_BUF_INIT, b = TS_BUF_INIT;
    double s;
    uint64_t cycles;
    int rc = run(fam, cfg, p, 1, &a, &s, &cycles);
    if (!rc)
        printf("run, 1 thread       %llu cycles in %.3f s of CPU: %.3g cycles/s; compile and run %.3f s\n",
               (unsigned long long)cycles, s, (double)cycles / s, lower_s + s);
    if (!rc && threads > 1) {
        rc = run(fam, cfg, p, threads, &b, &s, &cycles);
        if (!rc)
            printf("run, %2d threads     %llu cycles in %.3f s of CPU: %.3g cycles/s\n", threads, (unsigned long long)cycles,
                   s, (double)cycles / s);
        if (!rc && strcmp(ts_buf_str(&a), ts_buf_str(&b)))
            rc = fprintf(stderr, "bench_tsp_resnet: the %d-thread report differs\n", threads) > 0;
        if (!rc)
            printf("reports identical\n");
    }
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_program_destroy(p);
    ts_lowered_destroy(l);
    ts_config_destroy(cfg);
    return rc;
}
