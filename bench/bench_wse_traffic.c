/* bench/bench_wse_traffic.c — simulator speed on synthetic network-on-chip traffic (docs/noc.md).
 *
 *   bench_wse_traffic [SPEC] [THREADS] [WIDTH] [HEIGHT] [KEY=VALUE...]
 *
 * Runs `traffic:SPEC` (default pattern=uniform,rate=0.05,warmup=1000,measure=10000) on a WIDTH x
 * HEIGHT mesh (default 16 x 16) of WSE-2 parameters routed X then Y by destination, with config
 * overrides KEY=VALUE (e.g. fabric.routing=colour, fabric.vcs=1), to the end of its drain. Prints simulated cycles, the mean packet latency,
 * wall time and router-cycles/s (mesh routers x cycles per second; the target is 1e7 on one thread)
 * by wall time and by process CPU time (the latter is what to compare on a shared host). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_traffic.h"
#include "bench/bench_wse_run.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/report.h"
#include "core/results.h"
#include "core/stats.h"

static const ts_schema *lookup(const char *arch) { return strcmp(arch, "wse") ? NULL : &ts_wse_schema; }

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "pattern=uniform,rate=0.05,warmup=1000,measure=10000";
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    unsigned w = argc > 3 ? (unsigned)atoi(argv[3]) : 16, h = argc > 4 ? (unsigned)atoi(argv[4]) : 16;
    ts_err err;
    ts_err_init(&err);
    ts_buf yaml = TS_BUF_INIT;
    ts_buf_printf(&yaml, "arch: wse\nname: bench\nmesh: {width: %u, height: %u}\nfabric: {routing: xy}\n", w, h);
    ts_config *cfg = NULL;
    ts_program *p = NULL;
    ts_model *m = NULL;
    ts_results r;
    ts_results_init(&r);
    ts_run_opts o = {.threads = threads};
    ts_config_opts co = {.schema = lookup, .sets = (const char *const *)argv + 5, .nsets = argc > 5 ? (size_t)argc - 5 : 0};
    ts_step st;
    double dt = 0, cpu = 0;
    int rc = ts_config_load_string(&cfg, "bench.yaml", ts_buf_str(&yaml), yaml.len, &co, &err) ||
             ts_wse_traffic_load(&p, spec, cfg, &err) || ts_wse_create(&m, ts_config_data(cfg), &o, &err) ||
             ts_wse_family.load(m, p, &err) || bench_wse_run(m, &st, &dt, &cpu, &err) ||
             ts_wse_family.collect(m, &r, &err);
    if (rc) {
        fprintf(stderr, "bench_wse_traffic: %s\n", err.msg);
    } else {
        const ts_stat *lat = ts_stats_find(r.stats, "traffic.latency.avg");
        const ts_stat *acc = ts_stats_find(r.stats, "traffic.accepted");
        double rcs = (double)w * h * (double)st.now;
        printf("bench_wse_traffic: %ux%u mesh, %s, %d thread(s)\n", w, h, spec, threads);
        printf("  simulated cycles      %llu\n", (unsigned long long)st.now);
        printf("  mean packet latency   %.3f cycles\n", lat ? lat->f : 0);
        printf("  accepted              %.4f flits/node/cycle\n", acc ? acc->f : 0);
        printf("  wall time             %.3f s\n", dt);
        printf("  router-cycles/s       %.3g (%.3g per thread)\n", rcs / dt, rcs / dt / threads);
        printf("  cpu time              %.3f s (all threads): %.3g router-cycles per cpu-second\n", cpu, rcs / cpu);
    }
    ts_results_free(&r);
    ts_wse_family.destroy(m);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_buf_free(&yaml);
    ts_err_free(&err);
    return rc;
}
