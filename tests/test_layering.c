/* tests/test_layering.c — the direction of dependencies (DESIGN.md "The flow"): nothing includes
 * upward. core knows no chip; a family knows core and itself; workloads know core and the ISA
 * tables of each family; viz knows core; only cli and tests may include everything. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *root(void)
{
    const char *r = getenv("TS_SOURCE_ROOT");
    return r ? r : ".";
}

/* Is `inc` (a quoted include path) allowed from file `rel` (path relative to the root)? */
static int allowed(const char *rel, const char *inc)
{
    if (!strncmp(rel, "core/", 5))
        return !strncmp(inc, "core/", 5) || !strcmp(inc, "ts_build.h");
    if (!strncmp(rel, "configs/", 8))
        return !strncmp(inc, "configs/", 8);
    if (!strncmp(rel, "viz/", 4))
        return !strncmp(inc, "core/", 5) || !strncmp(inc, "viz/", 4) || !strcmp(inc, "ts_build.h");
    if (!strncmp(rel, "workloads/", 10)) {
        if (!strncmp(inc, "core/", 5) || !strncmp(inc, "workloads/", 10) || !strcmp(inc, "ts_build.h"))
            return 1;
        /* ISA tables only: arch/<f>/<f>_isa.h or .def */
        return !strncmp(inc, "arch/", 5) && strstr(inc, "_isa.");
    }
    if (!strcmp(rel, "arch/registry.c") || !strcmp(rel, "arch/registry.h"))
        return !strncmp(inc, "core/", 5) || !strncmp(inc, "arch/registry.h", 15);
    if (!strncmp(rel, "arch/", 5)) {
        const char *slash = strchr(rel + 5, '/');
        size_t fam = slash ? (size_t)(slash - rel) + 1 : 0; /* "arch/ipu/" */
        return !strncmp(inc, "core/", 5) || (fam && !strncmp(inc, rel, fam)) || !strcmp(inc, "ts_build.h");
    }
    return 1;
}

static int violations;

static void scan_file(const char *path, const char *rel)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "#include \"", 10))
            continue;
        char inc[512];
        if (sscanf(p + 10, "%511[^\"]", inc) != 1)
            continue;
        if (!allowed(rel, inc)) {
            fprintf(stderr, "%s:%d: includes \"%s\" against the layering\n", rel, n, inc);
            violations++;
        }
    }
    fclose(f);
}

static void scan_dir(const char *dir, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char r[1024], full[2048];
        snprintf(r, sizeof r, "%s/%s", rel, e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, r);
        struct stat st;
        if (stat(full, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            scan_dir(dir, r);
        else {
            size_t L = strlen(e->d_name);
            if (L > 2 && (!strcmp(e->d_name + L - 2, ".c") || !strcmp(e->d_name + L - 2, ".h")))
                scan_file(full, r);
        }
    }
    closedir(d);
}

START_TEST(nothing_includes_upward)
{
    violations = 0;
    const char *dirs[] = {"core", "arch", "workloads", "viz", "configs"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        scan_dir(root(), dirs[i]);
    ck_assert_int_eq(violations, 0);
}
END_TEST

START_TEST(rules_reject_known_bad_includes)
{
    ck_assert(!allowed("core/sim.c", "arch/ipu/ipu.h"));
    ck_assert(!allowed("arch/ipu/tile.c", "arch/tsp/tsp.h"));
    ck_assert(!allowed("viz/view.c", "arch/wse/wse.h"));
    ck_assert(!allowed("workloads/ipu/lower_ipu.c", "arch/ipu/ipu_model.h"));
    ck_assert(allowed("workloads/ipu/lower_ipu.c", "arch/ipu/ipu_isa.h"));
    ck_assert(allowed("arch/ipu/tile.c", "arch/ipu/ipu.h"));
    ck_assert(allowed("cli/tessera.c", "arch/registry.h"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layering");
    TCase *t = tcase_create("includes");
    tcase_add_test(t, nothing_includes_upward);
    tcase_add_test(t, rules_reject_known_bad_includes);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
