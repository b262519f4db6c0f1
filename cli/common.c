/* cli/common.c — shared loading and error printing for the subcommands. */
#include "cli/common.h"
#include "cli/lowering.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/suggest.h"
#include "workloads/workload.h"

int cli_fail(const ts_err *err)
{
    char line[2048];
    ts_err_format(err, line, sizeof line);
    fprintf(stderr, "tessera: %s\n", line);
    if (err->detail && err->detail[0])
        fprintf(stderr, "%s%s", err->detail, err->detail[strlen(err->detail) - 1] == '\n' ? "" : "\n");
    return err->status == TS_ESIM ? TS_EXIT_SIM : TS_EXIT_INPUT;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tessera: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return TS_EXIT_INPUT;
}

ts_config_opts cli_config_opts(const char *const *sets, size_t nsets)
{
    ts_config_opts o = {.schema = ts_registry_schema, .builtin = ts_builtin_find, .sets = sets, .nsets = nsets};
    return o;
}

ts_status cli_load_config(ts_config **out, const char *path, const char *const *sets, size_t nsets,
                          ts_err *err)
{
    ts_config_opts o = cli_config_opts(sets, nsets);
    return ts_config_load(out, path, &o, err);
}

ts_status cli_load_energy(ts_energy_table **out, const ts_config *cfg, const char *override, ts_err *err)
{
    const char *name = override ? override : ts_config_energy_table(cfg);
    ts_status st = ts_energy_load(out, name, ts_builtin_find, err);
    if (st == TS_OK)
        ts_energy_scale(*out, ts_config_node(cfg), ts_config_vdd(cfg), ts_config_sram_array(cfg)); /* docs/energy.md */
    return st;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Find ".arch NAME" in assembly text; copies NAME into arch. */
static int text_arch(const char *text, size_t len, char arch[16])
{
    const char *p = text, *end = text + len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p > 6 && !strncmp(p, ".arch", 5) && (p[5] == ' ' || p[5] == '\t')) {
            p += 5;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            size_t n = 0;
            while (p + n < end && n < 15 && p[n] != '\n' && p[n] != ' ' && p[n] != '\t' && p[n] != '#' &&
                   p[n] != ';' && p[n] != '\r')
                n++;
            memcpy(arch, p, n);
            arch[n] = 0;
            return n ? 0 : -1;
        }
        while (p < end && *p != '\n')
            p++;
        p++;
    }
    return -1;
}

/* Is built-in file i a program (an assembly text naming its family), not a config or energy table? */
static bool builtin_is_program(size_t i)
{
    const char *text;
    size_t len;
    if (ts_builtin_find(ts_builtin_name(i), &text, &len) != 0)
        return false;
    for (size_t k = 0; k + 5 <= len; k++)
        if (!memcmp(text + k, ".arch", 5))
            return true;
    return false;
}

/* The built-in model or program closest to name (the model part before ':' compared), when it
 * is within 2 edits and closer than the name's length; NULL otherwise. */
static const char *suggest_workload(const char *name)
{
    size_t nl = strcspn(name, ":"), best = 3;
    const char *pick = NULL;
    if (strchr(name, '/'))
        return NULL;
    for (size_t i = 0; i < ts_wl_builtin_count() + ts_builtin_count(); i++) {
        bool model = i < ts_wl_builtin_count();
        if (!model && !builtin_is_program(i - ts_wl_builtin_count()))
            continue;
        const char *n = model ? ts_wl_builtin_name(i) : ts_builtin_name(i - ts_wl_builtin_count());
        size_t d = ts_edit_distance(name, nl, n, strlen(n), false);
        if (d < best && d < nl) {
            best = d;
            pick = n;
        }
    }
    return pick;
}

/* Text and length of a workload given by path or built-in name; *owned set when to be freed. */
static ts_status workload_bytes(const char *path, const char **text, size_t *len, char **owned, ts_err *err)
{
    *owned = NULL;
    if (is_file(path)) {
        ts_status rc = ts_read_file(path, owned, len, err);
        *text = *owned;
        return rc;
    }
    if (ts_builtin_find(path, text, len) == 0)
        return TS_OK;
    const char *dot = strrchr(path, '.');
    if (dot && (!strcmp(dot, ".onnx") || !strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
        return ts_err_at(err, TS_EINPUT, path, 0, 0, "no such file");
    return ts_err_set(err, TS_EINPUT, "workload '%s' is neither a file nor a built-in program", path);
}

/* A program of a family's generator (a spec such as "stencil:nz=128"), for fam or, when fam is
 * NULL, the first family with a generator of that name; *out NULL when none has one. */
static ts_status generated_program(ts_program **out, const char *path, const ts_family *fam,
                                   const ts_config *cfg, const ts_family **by, ts_err *err)
{
    *out = NULL;
    if (is_file(path))
        return TS_OK;
    for (size_t i = 0; i < ts_family_count() && !*out; i++) {
        const ts_family *f = ts_family_at(i);
        if (!f->generate || (fam && f != fam))
            continue;
        ts_status rc = f->generate(path, cfg, out, err);
        if (rc != TS_OK)
            return rc;
        if (*out && by)
            *by = f;
    }
    if (*out || !fam)
        return TS_OK;
    /* a generator of another family: say so rather than "neither a file nor a program" */
    const ts_family *other = NULL;
    ts_program *p = NULL;
    ts_err scratch;
    ts_err_init(&scratch);
    ts_status rc = generated_program(&p, path, NULL, NULL, &other, &scratch);
    ts_err_free(&scratch);
    ts_program_destroy(p);
    if (rc != TS_OK) /* not a valid spec there either: the caller's own message stands */
        return TS_OK;
    if (other)
        return ts_err_set(err, TS_EINPUT, "'%s' is a program generator of the %s family, not of %s", path,
                          other->name, fam->name);
    return TS_OK;
}

void cli_workload_hint(const char *name, ts_err *err)
{
    size_t n = strlen(err->msg);
    if (err->status != TS_EINPUT || !strstr(err->msg, "is neither a file nor a built-in program"))
        return;
    const char *pick = suggest_workload(name);
    if (pick)
        snprintf(err->msg + n, sizeof err->msg - n, " (did you mean '%s'?)", pick);
    else
        snprintf(err->msg + n, sizeof err->msg - n, " ('tessera run --list' lists them)");
}

void cli_list_generators(ts_buf *out)
{
    ts_buf_puts(out, "program generators (a workload for run and sweep, keys with their defaults):\n");
    for (size_t i = 0; i < ts_family_count(); i++)
        for (const char *g = ts_family_at(i)->generators; g && *g;) {
            const char *nl = strchr(g, '\n');
            size_t n = nl ? (size_t)(nl - g) : strlen(g);
            ts_buf_printf(out, "  %-6s %.*s\n", ts_family_at(i)->name, (int)n, g);
            g += n + (nl != NULL);
        }
}

const ts_family *cli_program_family(const char *path, ts_err *err)
{
    if (ts_wl_is_model(path)) /* a model runs on the family of the first lowering */
        return ts_lowering_at(0) ? ts_family_find(ts_lowering_at(0)->arch) : NULL;
    ts_program *gen;
    const ts_family *by = NULL;
    if (generated_program(&gen, path, NULL, NULL, &by, err) != TS_OK)
        return NULL;
    if (gen) {
        ts_program_destroy(gen);
        return by;
    }
    const char *text;
    size_t len;
    char *owned;
    if (workload_bytes(path, &text, &len, &owned, err) != TS_OK)
        return NULL;
    char arch[16] = "";
    int found = ts_program_peek_arch(text, len, arch) == 0 || text_arch(text, len, arch) == 0;
    ts_free(owned);
    if (!found) {
        ts_err_at(err, TS_EINPUT, path, 0, 0, "cannot tell which arch this program is for: add '.arch NAME'");
        return NULL;
    }
    const ts_family *f = ts_family_find(arch);
    if (!f)
        ts_err_at(err, TS_EINPUT, path, 0, 0, "unknown arch '%s'", arch);
    return f;
}

ts_status cli_load_program(ts_program **out, const char *path, const ts_family *fam, ts_err *err)
{
    return cli_load_program_for(out, path, fam, NULL, err);
}

ts_status cli_load_program_for(ts_program **out, const char *path, const ts_family *fam, const ts_config *cfg,
                               ts_err *err)
{
    *out = NULL;
    if (generated_program(out, path, fam, cfg, NULL, err) != TS_OK || *out)
        return *out ? TS_OK : TS_EINPUT;
    const char *text;
    size_t len;
    char *owned;
    ts_status rc = workload_bytes(path, &text, &len, &owned, err);
    if (rc != TS_OK)
        return rc;
    char arch[16] = "";
    if (ts_program_peek_arch(text, len, arch) == 0) {
        const ts_family *pf = ts_family_find(arch);
        if (!pf)
            rc = ts_err_at(err, TS_EINPUT, path, 0, 0, "program is for unknown arch '%s'", arch);
        else if (fam && pf != fam)
            rc = ts_err_at(err, TS_EINPUT, path, 0, 0, "program is for arch '%s', not '%s'", arch, fam->name);
        else
            rc = ts_program_decode_opt(out, path, text, len, pf->isa, pf->load_owned != NULL, err);
    } else {
        if (!fam && text_arch(text, len, arch) == 0)
            fam = ts_family_find(arch);
        if (!fam)
            rc = ts_err_at(err, TS_EINPUT, path, 0, 0,
                           "cannot tell which arch this program is for: add '.arch NAME' or give -c CONFIG");
        else
            rc = ts_asm(out, path, text, len, fam->isa, err);
    }
    ts_free(owned);
    return rc;
}

int cli_sets_push(cli_sets *s, const char *kv)
{
    if (ts_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return -1;
    s->v[s->n++] = kv;
    return 0;
}

void cli_sets_free(cli_sets *s)
{
    ts_free(s->v);
    memset(s, 0, sizeof *s);
}

ts_lower_opts cli_lower_opts(ts_lower_setting settings[2], const char *planner, const char *max_tiles)
{
    ts_lower_opts o = {settings, 0};
    if (planner)
        settings[o.n++] = (ts_lower_setting){"planner", planner};
    if (max_tiles)
        settings[o.n++] = (ts_lower_setting){"max_tiles", max_tiles};
    return o;
}

int cli_check_planner(const char *name)
{
    return cli_check_setting("planner", name);
}

int cli_check_setting(const char *setting, const char *value)
{
    ts_err err;
    ts_err_init(&err);
    int rc = 0;
    if (ts_lower_check_setting(setting, value, &err) != TS_OK)
        rc = cli_usage_error("%s", err.msg);
    ts_err_free(&err);
    return rc;
}

ts_status cli_load_workload(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                            const ts_lower_opts *opts, ts_lowered **lowered, ts_err *err)
{
    return cli_load_workload_values(out, path, cfg, fam, opts, NULL, lowered, err);
}

ts_status cli_load_workload_values(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                                   const ts_lower_opts *opts, const ts_lower_values *vals, ts_lowered **lowered,
                                   ts_err *err)
{
    if (lowered)
        *lowered = NULL;
    if (!ts_wl_is_model(path)) {
        if (vals && (vals->given || vals->fill))
            return ts_err_set(err, TS_EINPUT, "'%s' is a program, not a model: values (--inputs, --weights-out) "
                              "apply to models", path);
        return cli_load_program_for(out, path, fam, cfg, err);
    }
    *out = NULL;
    if (!cfg)
        return ts_err_set(err, TS_EINPUT, "compiling the model '%s' needs a chip config: give -c CONFIG", path);
    ts_lowered *l = NULL;
    ts_status rc = ts_lower_model_values(path, cfg, opts, vals, &l, err);
    if (rc != TS_OK)
        return rc;
    *out = ts_lowered_take_program(l);
    if (lowered)
        *lowered = l;
    else
        ts_lowered_destroy(l);
    return TS_OK;
}
