/* tests/arch/test_conformance.c — the contract every family keeps, checked from outside once for
 * each family of the registry: its default workload, on a config of its own listed below, runs in
 * every mode (tests/arch/arch_modes.h: fast, lockstep, on threads) with the same report, and the
 * harness's reference run gives the report `tessera run` gives (ts_sim_run). A family added to the
 * registry without a config here fails, so none is skipped silently. The harness itself is
 * checked on the toy family (tests/toy): a run that differs in one mode is caught and named. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/report.h"
#include "tests/arch/arch_modes.h"
#include "tests/toy/toy.h"

/* The config each family's default workload runs on here: the smallest that runs it, which must
 * take well under a second in every mode. The IPU's default program is SPMD over tiles 0-1215 and
 * the TSP's is scheduled for tsp_v1's floorplan (its queue 8 is a MEM queue there, a VXM queue on
 * tsp_small), so those two run on their full chips: all six modes of all three families take well
 * under a second together. */
static const struct {
    const char *family, *config;
} small[] = {
    {"ipu", "ipu_mk1"},
    {"tsp", "tsp_v1"},
    {"wse", "wse_4x4"},
};

static const char *small_config(const char *family)
{
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        if (!strcmp(small[i].family, family))
            return small[i].config;
    return NULL;
}

static void ok(ts_status rc, const ts_err *e, const char *what)
{
    if (rc != TS_OK) {
        char line[1400];
        ts_err_format(e, line, sizeof line);
        ck_abort_msg("%s: %s", what, line);
    }
}

START_TEST(family_default_workload)
{
    const ts_family *fam = ts_family_at((size_t)_i);
    ck_assert_ptr_nonnull(fam);
    const char *name = small_config(fam->name);
    ck_assert_msg(name != NULL,
                  "family '%s' is registered but tests/arch/test_conformance.c lists no config for it: add the "
                  "smallest built-in config that runs its default workload", fam->name);
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ok(ts_config_load(&cfg, name, &co, &e), &e, name);
    ck_assert_str_eq(ts_config_arch(cfg), fam->name);
    ck_assert_msg(fam->default_workload != NULL, "family '%s' has no default workload", fam->name);
    const char *text;
    size_t len;
    ck_assert_msg(ts_builtin_find(fam->default_workload, &text, &len) == 0, "default workload '%s' is not built in",
                  fam->default_workload);
    ts_program *p = NULL;
    ok(ts_asm(&p, fam->default_workload, text, len, fam->isa, &e), &e, fam->default_workload);
    ts_energy_table *energy = NULL;
    ok(ts_energy_load(&energy, ts_config_energy_table(cfg), ts_builtin_find, &e), &e, "energy table");

    arch_opts o = {.energy = energy};
    arch_run run;
    arch_modes_check(fam, cfg, p, &o, &run);
    ck_assert_msg(run.rc == TS_OK, "%s on %s: %s", fam->default_workload, name, run.errline);
    ck_assert_str_eq(run.r.arch, fam->name);
    ck_assert_uint_gt(run.r.cycles, 0);
    ck_assert(run.r.energy_j > 0);

    /* the harness runs as the kernel does: the same report */
    ts_results r;
    ok(ts_sim_run(fam, cfg, p, NULL, energy, &r, &e), &e, "ts_sim_run");
    ts_buf json = TS_BUF_INIT;
    ts_report_json(&r, &json);
    ck_assert_str_eq(ts_buf_str(&json), ts_buf_str(&run.text));
    ts_buf_free(&json);
    ts_results_free(&r);

    arch_run_free(&run);
    ts_energy_destroy(energy);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

/* ---- the harness, on the toy family with a fault put in one mode ---- */

static ts_status (*toy_create)(ts_model **, const ts_config *, const ts_run_opts *, ts_err *);
static ts_status (*toy_step)(ts_model *, uint64_t, ts_step *, ts_err *);
static ts_status (*toy_collect)(ts_model *, ts_results *, ts_err *);
static ts_run_opts made; /* the options of the model made last */
static int fault; /* 0: none; 1: cycles + 1 on 3 threads; 2: an error in lockstep; 3: a table cell on 2 threads */

static ts_status faulty_create(ts_model **m, const ts_config *cfg, const ts_run_opts *o, ts_err *e)
{
    made = *o;
    return toy_create(m, cfg, o, e);
}

static ts_status faulty_step(ts_model *m, uint64_t limit, ts_step *st, ts_err *e)
{
    ts_status rc = toy_step(m, limit, st, e);
    if (rc == TS_OK && fault == 2 && made.lockstep && st->now >= 5)
        return ts_err_sim(e, 1, (int64_t)st->now, "a fault put in lockstep");
    return rc;
}

static ts_status faulty_collect(ts_model *m, ts_results *r, ts_err *e)
{
    ts_status rc = toy_collect(m, r, e);
    if (rc == TS_OK && fault == 1 && made.threads == 3 && !made.lockstep)
        r->cycles++;
    if (rc == TS_OK && fault == 3) {
        static const char *const ev[] = {"a", "b"};
        int t = ts_results_events_table(r->stats, "fault.table", "a table", "row", ev, 2);
        ck_assert_int_ge(t, 0);
        ck_assert_int_eq(ts_stats_row(r->stats, t, (double[]){0, 1, made.threads == 2 ? 3 : 2}), TS_OK);
    }
    return rc;
}

static void memory_state(ts_model *m, void *ud, ts_buf *out)
{
    (void)m;
    (void)ud;
    ts_buf_printf(out, "memory %d\n", made.threads == 3 && made.lockstep ? 1 : 0);
}

static const char toy_yaml[] = "arch: toy\nname: toy2\ntiles: 2\n";
static const char toy_prog[] = ".arch toy\n.stream tile 0\n  li r1, 7\n  send r1, 1\n  wait 5\n  sync\n  halt\n"
                               ".stream tile 1\n  recv r2\n  addi r3, r2, 1\n  sync\n  st r3, r0, 0\n  halt\n";

/* Run the toy program with the given fault; the difference found ("" when none). */
static char *toy_diff(int which, void (*state)(ts_model *, void *, ts_buf *))
{
    ts_family f = ts_toy_family;
    toy_create = f.create;
    toy_step = f.step;
    toy_collect = f.collect;
    f.create = faulty_create;
    f.step = faulty_step;
    f.collect = faulty_collect;
    fault = which;
    ts_err e;
    ts_err_init(&e);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_toy_schema_lookup};
    ok(ts_config_load_string(&cfg, "toy.yaml", toy_yaml, strlen(toy_yaml), &co, &e), &e, "toy config");
    ts_program *p = NULL;
    ok(ts_asm(&p, "toy.s", toy_prog, strlen(toy_prog), f.isa, &e), &e, "toy program");
    arch_opts o = {.state = state, .modes = ARCH_MODES_ALL}; /* every mode, under the sanitizers too */
    arch_run run;
    ts_buf diff = TS_BUF_INIT;
    bool same = arch_modes_compare(&f, cfg, p, &o, &run, &diff);
    ck_assert_int_eq(same, diff.len == 0);
    ck_assert_int_eq(run.rc, TS_OK); /* the reference run, whatever the others did */
    ck_assert_uint_eq(run.r.cycles, 20);
    arch_run_free(&run);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
    char *s = strdup(ts_buf_str(&diff));
    ts_buf_free(&diff);
    return s;
}

#define HAS(s, sub) ck_assert_msg(strstr(s, sub) != NULL, "'%s' not in:\n%s", sub, s)

START_TEST(harness_sees_differences)
{
    char *d = toy_diff(0, NULL);
    ck_assert_str_eq(d, "");
    free(d);
    d = toy_diff(1, NULL);
    HAS(d, "fast on 3 threads differs from fast (a successful run, a successful run) at line 6 (cycles):\n");
    HAS(d, "  fast              \"cycles\": 20,\n  fast on 3 threads \"cycles\": 21,\n");
    free(d);
    d = toy_diff(2, NULL);
    HAS(d, "lockstep differs from fast (a successful run, a failed run) at line 1:\n");
    HAS(d, "  lockstep run failed: simulation error: tile 1, cycle ");
    HAS(d, ": a fault put in lockstep\n");
    free(d);
    d = toy_diff(3, NULL);
    HAS(d, "fast on 2 threads differs from fast (a successful run, a successful run) at line ");
    /* the JSON report writes one array element per line */
    HAS(d, " (stats / fault.table / table / rows):\n  fast              2\n  fast on 2 threads 3\n");
    free(d);
    d = toy_diff(0, memory_state);
    HAS(d, "lockstep on 3 threads differs from fast");
    HAS(d, "  fast                  memory 0\n  lockstep on 3 threads memory 1\n");
    free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("conformance");
    TCase *tc = tcase_create("families");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, family_default_workload, 0, (int)ts_family_count());
    tcase_add_test(tc, harness_sees_differences);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
