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
#include "workloads/lower_ipu.h"
#include "workloads/lower_tsp.h"
#include "workloads/lower_wse.h"
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
    return ts_energy_load(out, name, ts_builtin_find, err);
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

const ts_family *cli_program_family(const char *path, ts_err *err)
{
    if (ts_wl_is_model(path)) /* a model runs on the family that has a lowering */
        return ts_family_find("ipu");
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
    *out = NULL;
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
            rc = ts_program_decode(out, path, text, len, pf->isa, err);
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

/* The TSP lowering's report of the last model compiled (per-layer cycles for cmd_run). */
static ts_lower_tsp_report tsp_last;

/* Add tsp_last's per-operator table ("layers": cycles, bandwidth, energy priced with energy) to
 * the results of a TSP run. */
static ts_status tsp_layers(ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    const ts_lower_tsp_report *rep = &tsp_last;
    if (!rep->nlayers || !res->stats || strcmp(res->arch, "tsp"))
        return TS_OK;
    static const char *const cols[] = {"node", "first", "last", "cycles", "mem_bytes", "bandwidth", "macs",
                                       "mxm_macs", "vxm_ops", "energy"};
    static const char *const units[] = {"", "cycles", "cycles", "cycles", "B", "GB/s", "", "", "", "uJ"};
    int t = ts_stats_table(res->stats, "layers",
                           "per operator, from the static schedule: first and last instruction (operators overlap), "
                           "MEM bytes moved and their rate over its cycles, useful and executed MACs, VXM "
                           "instructions, and its energy priced with the run's table (MXM MACs, MEM bytes, "
                           "instruction issues)", 10, cols, units);
    if (t < 0)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    const ts_energy_entry *mac = energy ? ts_energy_find(energy, "int8_mac") : NULL;
    const ts_energy_entry *rd = energy ? ts_energy_find(energy, "sram_read_64b") : NULL;
    const ts_energy_entry *is = energy ? ts_energy_find(energy, "insn_issue") : NULL;
    for (size_t i = 0; i < rep->nlayers; i++) {
        const ts_lower_tsp_layer *y = &rep->layers[i];
        double cyc = y->instructions ? (double)(y->last - y->first + 1) : 0;
        double secs = res->clock_hz > 0 ? cyc / res->clock_hz : 0;
        double j = (mac ? mac->joules * (double)y->mxm_macs : 0) + (rd ? rd->joules * (double)y->mem_bytes / 8.0 : 0) +
                   (is ? is->joules * (double)y->instructions : 0);
        double row[10] = {(double)y->node, (double)y->first, (double)y->last, cyc, (double)y->mem_bytes,
                          secs > 0 ? (double)y->mem_bytes / secs / 1e9 : 0, (double)y->macs, (double)y->mxm_macs,
                          (double)y->vxm_ops, j * 1e6};
        if (!y->instructions)
            row[1] = row[2] = 0;
        ts_status rc = ts_stats_row(res->stats, t, row);
        if (rc != TS_OK)
            return ts_err_set(err, rc, "out of memory");
    }
    return TS_OK;
}

static ts_status cli_lower_tsp(ts_program **out, const char *path, const ts_config *cfg, ts_err *err)
{
    ts_lower_tsp_params p;
    ts_status rc = ts_lower_tsp_params_from_config(cfg, &p, err);
    if (rc != TS_OK)
        return rc;
    ts_graph *g = NULL;
    if ((rc = ts_wl_load_model(path, NULL, NULL, &g, err)) != TS_OK)
        return rc;
    ts_lower_tsp_report_free(&tsp_last);
    rc = ts_lower_tsp(g, &p, out, &tsp_last, err);
    ts_graph_destroy(g);
    return rc;
}

/* The last WSE lowering, for the per-stage table after the run, and its stages as regions. */
static ts_lower_wse_report wse_rep;
static uint32_t wse_width;
static ts_region *wse_regions;

ts_status cli_lowering_regions(ts_run_opts *ro, ts_err *err)
{
    size_t n = 0;
    ts_free(wse_regions);
    wse_regions = NULL;
    ts_status rc = ts_lower_wse_regions(&wse_rep, &wse_regions, &n, err);
    ro->regions = wse_regions;
    ro->nregions = n;
    return rc;
}

ts_status cli_lowering_stats(ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    ts_status rc = tsp_layers(res, energy, err);
    if (rc == TS_OK && wse_rep.nstages && res->stats)
        rc = ts_lower_wse_stage_stats(&wse_rep, wse_width, res, energy, err);
    ts_lower_tsp_report_free(&tsp_last);
    ts_lower_wse_report_free(&wse_rep);
    ts_free(wse_regions);
    wse_regions = NULL;
    return rc;
}

/* The planner of the IPU lowering for the models loaded next (--planner). */
static int ipu_planner = TS_LOWER_PLANNER_LCS;

int cli_set_planner(const char *name)
{
    ts_err err;
    ts_err_init(&err);
    int rc = 0;
    if (ts_lower_ipu_planner(name, &ipu_planner, &err) != TS_OK)
        rc = cli_usage_error("%s", err.msg);
    ts_err_free(&err);
    return rc;
}

ts_status cli_load_workload(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                            ts_err *err)
{
    return cli_load_workload_rep(out, path, cfg, fam, NULL, err);
}

ts_status cli_load_workload_rep(ts_program **out, const char *path, const ts_config *cfg, const ts_family *fam,
                                ts_lower_report *rep, ts_err *err)
{
    if (!ts_wl_is_model(path))
        return cli_load_program(out, path, fam, err);
    *out = NULL;
    if (!cfg)
        return ts_err_set(err, TS_EINPUT, "compiling the model '%s' needs a chip config: give -c CONFIG", path);
    const char *arch = ts_config_arch(cfg);
    if (!strcmp(arch, "tsp"))
        return cli_lower_tsp(out, path, cfg, err);
    if (!strcmp(arch, "wse")) {
        ts_lower_wse_params wp;
        ts_status rc = ts_lower_wse_params_from_config(cfg, &wp, err);
        ts_graph *g = NULL;
        ts_lower_wse_report_free(&wse_rep);
        if (rc == TS_OK && (rc = ts_wl_load_model(path, NULL, NULL, &g, err)) == TS_OK)
            rc = ts_lower_wse(g, &wp, out, &wse_rep, err);
        if (rc == TS_OK)
            wse_width = wp.width;
        ts_graph_destroy(g);
        return rc;
    }
    if (strcmp(arch, "ipu"))
        return ts_err_set(err, TS_EINPUT, "no lowering for arch '%s' yet", arch);
    ts_lower_ipu_params p;
    ts_status rc = ts_lower_ipu_params_from_config(cfg, &p, err);
    if (rc != TS_OK)
        return rc;
    p.planner = ipu_planner;
    ts_graph *g = NULL;
    if ((rc = ts_wl_load_model(path, NULL, NULL, &g, err)) != TS_OK)
        return rc;
    rc = ts_lower_ipu(g, &p, out, rep, err);
    ts_graph_destroy(g);
    return rc;
}
