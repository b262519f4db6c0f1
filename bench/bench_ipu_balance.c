/* bench/bench_ipu_balance.c — what bounds the IPU model's speed-up on host threads, counted, not
 * timed (the figures are the same on any host, loaded or not).
 *
 * Runs PROGRAM (default `bsp`: the 1216-tile program of bench_ipu_bsp, 100 supersteps; else a
 * program file, e.g. one written by `tessera compile -c ipu_mk1 resnet50 -o r50.bin`) on CONFIG
 * (default ipu_mk1) with one host thread and the model's profile on (ts_ipu_profile_on), which
 * keeps every round's host work per column (instructions issued and words received, plus one per
 * running tile). Prints
 *
 *   - the rounds, the supersteps, rounds and barrier meetings per superstep (the threads meet
 *     at every meeting, so each costs a wake-up on every thread);
 *   - for 2, 4, 8 and 16 threads, the speed-up bound of the parallel phase,
 *     sum over rounds of the work / sum over rounds of the busiest thread's work, when the
 *     columns are split evenly, split evenly with the threads that finish first taking the
 *     others' untaken parts of columns (what the model's run phase does), and split by the
 *     round's own work (the best contiguous split of whole columns, known only after the round).
 *
 * The serial part (the main thread's work between rounds) is measured by bench/ipu_threads.sh
 * with callgrind. A benchmark, not a test.
 *
 * usage: bench_ipu_balance [PROGRAM] [CONFIG] [SUPERSTEPS]
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/registry.h"
#include "bench/ipu_bsp_program.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/program.h"
#include "core/sim.h"

static int fail(const ts_err *e)
{
    char line[1400];
    ts_err_format(e, line, sizeof line);
    fprintf(stderr, "bench_ipu_balance: %s\n", line);
    return 1;
}

/* Run p on one thread with the profile on; m is left for the caller to read and destroy. */
static ts_status run(const ts_family *fam, const ts_config *cfg, const ts_program *p, ts_model **mp, ts_err *e)
{
    ts_run_opts o = {.threads = 1};
    ts_status rc = fam->create(mp, cfg, &o, e);
    if (rc == TS_OK)
        rc = ts_ipu_profile_on(*mp, e);
    if (rc == TS_OK)
        rc = fam->load(*mp, p, e);
    ts_step st = {0};
    while (rc == TS_OK && !st.done)
        rc = fam->step(*mp, UINT64_MAX, &st, e);
    return rc;
}

/* The longest thread of one round whose work per part of a column is w, when k threads each
 * start on the parts of their own even range of columns and then take the next untaken part of
 * the threads after them (the model's take_column), the thread that is free first taking next
 * (ties: the lowest). */
static uint64_t stealing_makespan(const uint64_t *w, const uint32_t *even_cols, uint32_t parts, uint32_t k)
{
    uint64_t t[16] = {0}, max = 0;
    uint32_t cur[16], from[16], even[17];
    bool done[16] = {false};
    for (uint32_t i = 0; i <= k; i++)
        even[i] = even_cols[i] * parts;
    for (uint32_t i = 0; i < k; i++) {
        cur[i] = even[i];
        from[i] = i;
    }
    for (;;) {
        int who = -1;
        for (uint32_t i = 0; i < k; i++)
            if (!done[i] && (who < 0 || t[i] < t[who]))
                who = (int)i;
        if (who < 0)
            return max;
        uint32_t *f = &from[who];
        while (*f < (uint32_t)who + k && cur[*f % k] >= even[*f % k + 1])
            (*f)++;
        if (*f == (uint32_t)who + k) {
            done[who] = true;
            continue;
        }
        t[who] += w[cur[*f % k]++];
        if (t[who] > max)
            max = t[who];
    }
}

/* Sum over rounds of the busiest of k threads' work, the columns split by `how`: 0 evenly (whole
 * columns), 1 evenly with stealing of parts of columns (the model), 2 by the round's own work
 * (the best contiguous split of whole columns, known only after the round). */
static double busiest_sum(const ts_ipu_profile *pr, uint32_t k, int how)
{
    uint64_t *zero = ts_calloc(pr->ncols, sizeof *zero), *w = ts_calloc(pr->ncols, sizeof *w);
    uint32_t even[17], bounds[17];
    double sum = 0;
    ts_ipu_split(zero, pr->ncols, k, even);
    for (uint64_t r = 0; r < pr->rounds; r++) {
        const uint64_t *wp = pr->colw + r * pr->ncols * pr->parts;
        if (how == 1) {
            sum += (double)stealing_makespan(wp, even, pr->parts, k);
            continue;
        }
        for (uint32_t c = 0; c < pr->ncols; c++) { /* the columns' work */
            w[c] = 0;
            for (uint32_t q = 0; q < pr->parts; q++)
                w[c] += wp[c * pr->parts + q];
        }
        memcpy(bounds, even, sizeof even);
        if (how == 2)
            ts_ipu_split(w, pr->ncols, k, bounds);
        uint64_t max = 0;
        for (uint32_t i = 0; i < k; i++) {
            uint64_t s = 0;
            for (uint32_t c = bounds[i]; c < bounds[i + 1]; c++)
                s += w[c];
            if (s > max)
                max = s;
        }
        sum += (double)max;
    }
    ts_free(zero);
    ts_free(w);
    return sum;
}

int main(int argc, char **argv)
{
    const char *prog = argc > 1 ? argv[1] : "bsp";
    const char *cname = argc > 2 ? argv[2] : "ipu_mk1";
    int steps = argc > 3 ? atoi(argv[3]) : 100;
    if (steps < 1)
        return fprintf(stderr, "usage: bench_ipu_balance [PROGRAM] [CONFIG] [SUPERSTEPS]\n"), 2;
    const ts_family *fam = ts_family_find("ipu");
    if (!fam)
        return fprintf(stderr, "bench_ipu_balance: the ipu family is not built\n"), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, cname, &co, &e) != TS_OK)
        return fail(&e);
    ts_program *p = NULL;
    ts_status rc = strcmp(prog, "bsp") ? ts_program_read(&p, prog, fam->isa, &e)
                                       : ts_bench_ipu_bsp_program(steps, fam->isa, "bench_ipu_bsp.s", &p, &e);
    if (rc != TS_OK)
        return fail(&e);
    ts_model *m = NULL;
    if (run(fam, cfg, p, &m, &e) != TS_OK) {
        fam->destroy(m);
        return fail(&e);
    }
    ts_ipu_profile pr;
    ts_ipu_profile_get(m, &pr);
    if (!pr.complete) {
        fam->destroy(m);
        return fprintf(stderr, "bench_ipu_balance: out of memory for the profile\n"), 1;
    }
    double total = 0;
    for (uint64_t i = 0; i < pr.rounds * pr.ncols * pr.parts; i++)
        total += (double)pr.colw[i];
    double ss = pr.supersteps ? (double)pr.supersteps : 1;
    printf("%s on %s: %" PRIu64 " rounds, %" PRIu64 " supersteps: %.1f rounds and %.1f barrier meetings per superstep; "
           "%.4g work units, %u columns of %u tiles\n",
           prog, cname, pr.rounds, pr.supersteps, (double)pr.rounds / ss, (double)pr.meetings / ss, total, pr.ncols,
           pr.tiles_per_column);
    printf("the main thread alone visits %.1f tiles per round, %.0f per superstep (of %u)\n",
           (double)pr.visits / (double)(pr.rounds ? pr.rounds : 1), (double)pr.visits / ss, pr.ncols * pr.tiles_per_column);
    printf("speed-up bound of the parallel phase, sum(work) / sum(busiest thread's work):\n");
    printf("  threads   even columns   even, then stealing %u parts a column (model)   by own round (best contiguous split)\n",
           pr.parts);
    for (uint32_t k = 2; k <= 16; k *= 2) {
        double b[3];
        for (int how = 0; how < 3; how++)
            b[how] = total / busiest_sum(&pr, k, how);
        printf("  %7u   %12.2f   %44.2f   %36.2f\n", k, b[0], b[1], b[2]);
    }
    fam->destroy(m);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    return 0;
}
