/* tests/test_layering.c — the direction of dependencies (DESIGN.md "The flow", "The compiler's
 * rooms"): nothing includes upward. core knows no chip; a family knows core and itself; the
 * compiler's front end (the files directly in workloads/) and the lowering interface
 * (workloads/lower/) know no chip; a family's lowering (workloads/<family>/) knows core, the front end, the lowering interface, its
 * own folder and, of its chip, only arch/<family>/<family>_target.h and the ISA table; viz knows
 * core; only cli and tests may include everything. Beside the includes: no lowering reads a
 * config key by string, and cli keeps no file-scope mutable state. */
#include <check.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The family a path under workloads/ or arch/ belongs to ("ipu", "tsp" or "wse": its first
 * folder), NULL for the others. */
static const char *family_folder(const char *sub)
{
    static const char *const fams[] = {"ipu/", "tsp/", "wse/"};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(sub, fams[i], 4))
            return fams[i];
    return NULL;
}

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
        if (!strncmp(inc, "core/", 5) || !strcmp(inc, "ts_build.h"))
            return 1;
        const char *fam = family_folder(rel + 10); /* "ipu/..." -> "ipu", else NULL */
        if (!strcmp(rel, "workloads/lower/registry.c")) /* the one place that knows every lowering */
            return !strncmp(inc, "workloads/", 10) && !strncmp(inc + 10, "lower", 5) ? 1
                   : family_folder(inc + 10) != NULL;
        if (!strncmp(inc, "workloads/", 10)) {
            const char *ifam = family_folder(inc + 10);
            return !ifam || (fam && !strncmp(ifam, fam, 3));
        }
        if (!fam || strncmp(inc, "arch/", 5) || strncmp(inc + 5, fam, 3) || inc[8] != '/')
            return 0;
        /* of its chip: <f>_target.h and the ISA table (<f>_isa.h, <f>_isa.def) */
        const char *base = inc + 9;
        return !strncmp(base, fam, 3) && (!strcmp(base + 3, "_target.h") || !strncmp(base + 3, "_isa.", 5));
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

/* A lowering reads a chip only through its target: no by-string config access. */
static const char *const config_by_string[] = {"ts_config_u64(", "ts_config_key(", "ts_config_data("};

/* cli keeps no state between calls: at file scope only constants, functions and the signal
 * flag of a handler (volatile sig_atomic_t). */
static bool cli_state(const char *line)
{
    if (!(line[0] >= 'a' && line[0] <= 'z') || strchr(line, '(') || !strchr(line, ' '))
        return false; /* not a declaration at file scope (a label, a function, a call) */
    if (!strncmp(line, "static const ", 13) || !strncmp(line, "const ", 6) || strstr(line, "sig_atomic_t") ||
        !strncmp(line, "typedef ", 8) || !strncmp(line, "struct ", 7) || !strncmp(line, "enum ", 5) ||
        !strncmp(line, "return", 6) || !strncmp(line, "else", 4))
        return false;
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
        n--;
    return n && (line[n - 1] == ';' || line[n - 1] == '=' || line[n - 1] == '{');
}

static int rule_breaks;

static void scan_rules(const char *path, const char *rel)
{
    bool lowering = !strncmp(rel, "workloads/", 10) && (family_folder(rel + 10) || !strncmp(rel + 10, "lower/", 6));
    bool cli = !strncmp(rel, "cli/", 4) && strstr(rel, ".c");
    if (!lowering && !cli)
        return;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        for (size_t i = 0; lowering && i < sizeof config_by_string / sizeof config_by_string[0]; i++)
            if (strstr(line, config_by_string[i])) {
                fprintf(stderr, "%s:%d: a lowering reads the config by key (%s): use the family's _target.h\n", rel,
                        n, config_by_string[i]);
                rule_breaks++;
            }
        if (cli && cli_state(line)) {
            fprintf(stderr, "%s:%d: file-scope mutable state in cli/: %s", rel, n, line);
            rule_breaks++;
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
            if (L > 2 && (!strcmp(e->d_name + L - 2, ".c") || !strcmp(e->d_name + L - 2, ".h"))) {
                scan_file(full, r);
                scan_rules(full, r);
            }
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

START_TEST(lowerings_and_cli_keep_the_rules)
{
    rule_breaks = 0;
    scan_dir(root(), "workloads");
    scan_dir(root(), "cli");
    ck_assert_int_eq(rule_breaks, 0);
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
    tcase_add_test(t, lowerings_and_cli_keep_the_rules);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
