/* cli/cmd_sweep.c — `tessera sweep`: run every point of a sweep spec in worker processes and
 * collect one CSV row (and one JSON-lines report) per point.
 *
 * The parent forks at most N workers at once; a worker runs one point (config with the point's
 * overrides, workload, ts_sim_run), renders its row and report and sends both back through a
 * pipe, then exits. Only the parent writes the outputs: each report line and each row is one
 * write() on an O_APPEND descriptor, report first, so a sweep killed at any moment leaves whole
 * rows behind (a torn last line is dropped on the next run). A re-run skips points whose rows
 * exist; at the end both files are sorted by point id and rewritten atomically, so an interrupted
 * and resumed sweep ends with the same bytes as one that ran straight through.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common.h"
#include "arch/wse/wse_traffic.h"
#include "cli/lowering.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/report.h"
#include "core/sim.h"
#include "core/suggest.h"
#include "core/sweep.h"
#include "ts_build.h"
#include "workloads/workload.h"
#if TS_HAVE_MPI
#include <mpi.h>
#endif

static const char sweep_usage[] =
    "usage: tessera sweep SPEC -o RESULTS.csv [options]\n"
    "\n"
    "Run every point of the sweep spec SPEC (YAML: base config, workloads, axes, filters,\n"
    "metrics; see docs/sweep.md) in parallel worker processes. Writes one CSV row per point\n"
    "(point id, workload, axis values, metrics, error) and every full JSON report, one per line.\n"
    "A sweep run again with the same spec and output skips the points already done.\n"
    "A workload that is a model (a built-in such as resnet50 or matmul:m=256,k=256,n=256, a\n"
    "workload YAML or an ONNX file) is compiled for each point's config; points that differ only\n"
    "in keys no lowering reads (clock, energy.*, power.*) share one compile.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE       the CSV to write (required)\n"
    "      --jsonl FILE        the JSON-lines reports (default: FILE.jsonl beside the CSV)\n"
    "  -j, --jobs N            worker processes at once (default: the number of cores)\n"
    "      --list              print the points (as CSV, without metrics) and run nothing\n"
    "  -q, --quiet             no progress line\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 every point ran, 1 a point failed (its row says why) or the sweep was\n"
    "interrupted, 2 a bad spec or usage.\n";

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    g_stop = sig;
}

/* Write all of buf with one write() where the kernel allows it (a regular file does). */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * One point, in a worker. */

/* A model compiled once for the points that share its compile key (ts_sweep_compile_key). The
 * parent compiles before it starts a point's worker, which inherits the entry; a compile that
 * failed is kept as its message, and every point of its key fails with it. */
typedef struct compiled {
    char *key;           /* owned */
    ts_config *cfg;      /* owned: the config of the first point of this key */
    ts_lowered *lowered; /* owned */
    ts_program *prog;    /* owned: taken from lowered */
    ts_status st;
    char *msg;           /* owned: the failure, or NULL */
} compiled;

typedef struct compile_cache {
    compiled *v;
    size_t n, cap;
} compile_cache;

static void cache_free(compile_cache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        ts_free(c->v[i].key);
        ts_program_destroy(c->v[i].prog);
        ts_lowered_destroy(c->v[i].lowered);
        ts_config_destroy(c->v[i].cfg);
        ts_free(c->v[i].msg);
    }
    ts_free(c->v);
    memset(c, 0, sizeof *c);
}

/* Point i's overrides as --set values (axes that are lowering settings left out). sets has naxes
 * entries; returns how many are used. */
static size_t point_sets(const ts_sweep *s, size_t i, ts_buf *buf, size_t *off, const char **sets)
{
    size_t n = 0;
    ts_sweep_point_sets(s, i, buf, off);
    for (size_t a = 0; a < ts_sweep_naxes(s); a++)
        if (!ts_sweep_axis_is_setting(s, a))
            sets[n++] = buf->data + off[a];
    return n;
}

/* Compile point i's model for its config into e. */
static void compile_point(const ts_sweep *s, size_t i, compiled *e)
{
    ts_err err;
    ts_err_init(&err);
    size_t na = ts_sweep_naxes(s);
    ts_buf setbuf = TS_BUF_INIT;
    size_t *off = ts_calloc(na + 1, sizeof *off);
    const char **sets = ts_calloc(na + 1, sizeof *sets);
    const char *planner = ts_sweep_point_planner(s, i);
    ts_lower_setting settings[] = {{"planner", planner}};
    ts_lower_opts lopts = {settings, planner ? 1 : 0};
    if (!off || !sets) {
        e->st = ts_err_set(&err, TS_ENOMEM, "out of memory");
    } else {
        size_t ns = point_sets(s, i, &setbuf, off, sets);
        if ((e->st = cli_load_config(&e->cfg, ts_sweep_config(s), sets, ns, &err)) == TS_OK &&
            (e->st = ts_lower_model(ts_sweep_workload_path(s, ts_sweep_point_workload(s, i)), e->cfg, &lopts,
                                    &e->lowered, &err)) == TS_OK)
            e->prog = ts_lowered_take_program(e->lowered);
    }
    if (e->st != TS_OK) {
        char msg[2048];
        ts_err_format(&err, msg, sizeof msg);
        e->msg = ts_strdup(msg);
    }
    ts_buf_free(&setbuf);
    ts_free(off);
    ts_free(sets);
    ts_err_free(&err);
}

/* The compiled model for point i (compiled now unless its key has been), or NULL when its
 * workload is a program. *fresh tells whether this call compiled. */
static const compiled *cache_get(compile_cache *c, const ts_sweep *s, size_t i, bool *fresh)
{
    *fresh = false;
    if (!ts_wl_is_model(ts_sweep_workload_path(s, ts_sweep_point_workload(s, i))))
        return NULL;
    ts_buf key = TS_BUF_INIT;
    ts_sweep_compile_key(s, i, &key);
    for (size_t k = 0; k < c->n; k++)
        if (!strcmp(c->v[k].key, ts_buf_str(&key))) {
            ts_buf_free(&key);
            return &c->v[k];
        }
    if (ts_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v)) {
        ts_buf_free(&key);
        return NULL;
    }
    compiled *e = &c->v[c->n++];
    memset(e, 0, sizeof *e);
    e->key = ts_strdup(ts_buf_str(&key));
    ts_buf_free(&key);
    compile_point(s, i, e);
    *fresh = true;
    return e;
}

/* Add the fields a sweep row adds to a run's report (docs/sweep.md, "rows"), as a member "sweep"
 * before the report's closing brace: the planner, the plan (the report's workload line: what the
 * lowering chose, units used, supersteps), runs (inferences of the model's batch) per
 * second and per joule, the chip's peak MACs per cycle (the dtype with the most) and the share of
 * it the run's MACs used. */
static void add_sweep_fields(ts_buf *json, const ts_results *res, const ts_family *fam, const ts_config *cfg,
                             const char *planner)
{
    while (json->len && (json->data[json->len - 1] == '\n' || json->data[json->len - 1] == ' '))
        json->len--;
    if (!json->len || json->data[json->len - 1] != '}')
        return;
    json->len--;
    double peak = 0;
    ts_info in = {0};
    ts_err err;
    ts_err_init(&err);
    if (fam->info && fam->info(ts_config_data(cfg), &in, &err) == TS_OK)
        for (size_t k = 0; k < in.npeak; k++)
            if (in.peak[k].macs > peak)
                peak = in.peak[k].macs;
    ts_err_free(&err);
    double t = res->clock_hz > 0 ? (double)res->cycles / res->clock_hz : 0;
    ts_buf_puts(json, ",\n  \"sweep\": {\"planner\": ");
    ts_buf_json_str(json, planner ? planner : "");
    ts_buf_puts(json, ", \"plan\": ");
    ts_buf_json_str(json, res->workload);
    ts_buf_puts(json, ", \"runs_per_s\": ");
    ts_buf_json_num(json, t > 0 ? 1 / t : 0);
    ts_buf_puts(json, ", \"runs_per_j\": ");
    ts_buf_json_num(json, res->energy_j > 0 ? 1 / res->energy_j : 0);
    ts_buf_puts(json, ", \"peak_macs_per_cycle\": ");
    ts_buf_json_num(json, peak);
    ts_buf_puts(json, ", \"mac_share\": ");
    ts_buf_json_num(json, peak > 0 && res->cycles ? (double)res->macs / (peak * (double)res->cycles) : 0);
    ts_buf_puts(json, "}\n}\n");
}

/* Run point i; the row goes to row, the report (one JSON line, or nothing on error) to jline. A
 * model runs the program of `comp` (compiled for a config that differs from this point's only in
 * keys no lowering reads), or, with comp NULL, is compiled here. */
static void run_point(const ts_sweep *s, size_t i, const compiled *comp, ts_buf *row, ts_buf *jline)
{
    ts_err err;
    ts_err_init(&err);
    size_t na = ts_sweep_naxes(s);
    ts_buf setbuf = TS_BUF_INIT;
    size_t *off = ts_calloc(na + 1, sizeof *off);
    const char **sets = ts_calloc(na + 1, sizeof *sets);
    ts_config *cfg = NULL;
    ts_program *prog = NULL, *own_prog = NULL;
    ts_lowered *lowered = NULL, *own_lowered = NULL;
    ts_energy_table *energy = NULL;
    ts_results res;
    bool have_res = false;
    ts_buf json = TS_BUF_INIT;
    ts_status st = TS_OK;
    const char *wl = ts_sweep_workload_path(s, ts_sweep_point_workload(s, i));
    if (!off || !sets) {
        st = ts_err_set(&err, TS_ENOMEM, "out of memory");
        goto done;
    }
    size_t ns = point_sets(s, i, &setbuf, off, sets);
    if ((st = cli_load_config(&cfg, ts_sweep_config(s), sets, ns, &err)) != TS_OK)
        goto done;
    const ts_family *fam = ts_family_find(ts_config_arch(cfg));
    if (comp) {
        if ((st = comp->st) != TS_OK) {
            st = ts_err_set(&err, st, "%s", comp->msg ? comp->msg : "out of memory");
            goto done;
        }
        prog = comp->prog;
        lowered = comp->lowered;
        prog->config_fp = ts_config_fingerprint(cfg); /* the same program this config compiles to */
    } else {
        const char *planner = ts_sweep_point_planner(s, i);
        ts_lower_setting settings[] = {{"planner", planner}};
        ts_lower_opts lopts = {settings, planner ? 1 : 0};
        if ((st = cli_load_workload(&own_prog, wl, cfg, fam, &lopts, &own_lowered, &err)) != TS_OK)
            goto done;
        prog = own_prog;
        lowered = own_lowered;
    }
    if ((st = cli_load_energy(&energy, cfg, NULL, &err)) != TS_OK)
        goto done;
    ts_run_opts ro = {.max_cycles = ts_sweep_max_cycles(s)};
    if (!ro.max_cycles) { /* one point that never ends must not hold the sweep */
        ro.max_cycles = TS_SIM_DEFAULT_MAX_CYCLES;
        ro.max_cycles_hint = "a longer point needs max_cycles in the sweep spec";
    }
    if ((st = ts_lowered_prepare(lowered, &ro, &err)) != TS_OK)
        goto done;
    if ((st = ts_sim_run(fam, cfg, prog, &ro, energy, &res, &err)) != TS_OK)
        goto done;
    have_res = true;
    if ((st = ts_lowered_attribute(lowered, &res, energy, &err)) != TS_OK)
        goto done;
    ts_report_json(&res, &json);
    add_sweep_fields(&json, &res, fam, cfg, ts_sweep_point_planner(s, i));
done:;
    char msg[2048] = "";
    if (st != TS_OK)
        ts_err_format(&err, msg, sizeof msg);
    ts_sweep_csv_row(s, i, st == TS_OK ? ts_buf_str(&json) : NULL, st == TS_OK ? NULL : msg, row);
    ts_buf_printf(jline, "{\"point\":%llu,\"report\":", (unsigned long long)ts_sweep_point_id(s, i));
    if (st == TS_OK) {
        ts_json_compact(json.data, json.len, jline);
    } else {
        ts_buf_puts(jline, "null,\"error\":");
        ts_buf_json_str(jline, msg);
    }
    ts_buf_puts(jline, "}\n");
    if (have_res)
        ts_results_free(&res);
    ts_buf_free(&json);
    ts_energy_destroy(energy);
    ts_program_destroy(own_prog);
    ts_lowered_destroy(own_lowered);
    ts_config_destroy(cfg);
    ts_buf_free(&setbuf);
    ts_free(off);
    ts_free(sets);
    ts_err_free(&err);
}

/* ---------------------------------------------------------------------------------------------
 * Checks at load: every workload loads (a did-you-mean for a name close to a built-in), every
 * planner is one a lowering takes. */

typedef struct check_ctx {
    const ts_family *fam; /* borrowed: the base config's */
} check_ctx;

static ts_status check_workload(void *ud, const char *path, ts_err *err)
{
    const check_ctx *c = ud;
    if (!strncmp(path, "traffic:", 8)) { /* synthetic traffic (docs/noc.md): the spec; the mesh when a point runs */
        ts_wse_traffic t;
        ts_wse_traffic_defaults(&t);
        return ts_wse_traffic_parse(&t, path + 8, err);
    }
    if (ts_wl_is_model(path)) {
        ts_graph *g = NULL;
        ts_status st = ts_wl_load_model(path, NULL, NULL, &g, err);
        ts_graph_destroy(g);
        return st;
    }
    ts_program *p = NULL;
    ts_status st = cli_load_program(&p, path, c->fam, err);
    ts_program_destroy(p);
    if (st != TS_OK && !strchr(path, '/')) {
        size_t best = 3, pl = strlen(path);
        const char *pick = NULL;
        for (size_t i = 0; i < ts_wl_builtin_count(); i++) {
            const char *n = ts_wl_builtin_name(i);
            size_t d = ts_edit_distance(path, pl, n, strlen(n), false);
            if (d < best && d < pl) {
                best = d;
                pick = n;
            }
        }
        if (pick) {
            char msg[1200];
            ts_err_format(err, msg, sizeof msg);
            ts_err_free(err);
            ts_err_init(err);
            return ts_err_set(err, TS_EINPUT, "%s (did you mean the model '%s'?)", msg, pick);
        }
    }
    return st;
}

static ts_status check_setting(void *ud, const char *name, const char *value, ts_err *err)
{
    (void)ud;
    return ts_lower_check_setting(name, value, err);
}

/* ---------------------------------------------------------------------------------------------
 * Reading what an earlier run left. */

typedef struct line_set {
    char **v;      /* owned lines without their newline */
    uint64_t *id;
    size_t n, cap;
} line_set;

static void lines_free(line_set *l)
{
    for (size_t i = 0; i < l->n; i++)
        ts_free(l->v[i]);
    ts_free(l->v);
    ts_free(l->id);
    memset(l, 0, sizeof *l);
}

static int lines_push(line_set *l, const char *p, size_t n, uint64_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **v = ts_realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        uint64_t *ids = ts_realloc(l->id, cap * sizeof *ids);
        if (!ids)
            return -1;
        l->id = ids;
        l->cap = cap;
    }
    char *c = ts_malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, p, n);
    c[n] = 0;
    l->v[l->n] = c;
    l->id[l->n++] = id;
    return 0;
}

/* Leading unsigned number of a line, after skip chars; -1 when there is none. */
static int lead_id(const char *p, size_t n, size_t skip, uint64_t *id)
{
    if (n <= skip || p[skip] < '0' || p[skip] > '9')
        return -1;
    uint64_t v = 0;
    for (size_t i = skip; i < n && p[i] >= '0' && p[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(p[i] - '0');
    *id = v;
    return 0;
}

/* Read the CSV an earlier run left: check its header, keep each whole row that belongs to a
 * point of this spec (later rows of one point win). done[i] is set for point i. */
static int read_rows(const ts_sweep *s, const char *path, const char *header, line_set *rows, bool *done)
{
    char *text = NULL;
    size_t len = 0;
    ts_err err;
    ts_err_init(&err);
    struct stat stt;
    if (stat(path, &stt) != 0)
        return 0;
    if (ts_read_file(path, &text, &len, &err) != TS_OK) {
        int rc = cli_fail(&err);
        ts_err_free(&err);
        return rc;
    }
    ts_err_free(&err);
    int rc = 0;
    size_t hl = strlen(header);
    if (len && (len < hl || memcmp(text, header, hl))) {
        ts_free(text);
        return cli_usage_error("%s: the header differs from this spec's columns (written by another spec?): "
                               "remove it or write elsewhere", path);
    }
    ts_buf prefix = TS_BUF_INIT;
    for (size_t p = hl; p < len && !rc;) {
        const char *nl = memchr(text + p, '\n', len - p);
        if (!nl)
            break; /* a torn last line: the point runs again */
        size_t n = (size_t)(nl - (text + p));
        uint64_t id;
        long k = lead_id(text + p, n, 0, &id) == 0 ? ts_sweep_find(s, id) : -1;
        if (k < 0) {
            rc = cli_usage_error("%s: a row that is not a point of this spec: remove the file or write elsewhere",
                                 path);
            break;
        }
        ts_buf_reset(&prefix);
        ts_sweep_csv_prefix(s, (size_t)k, &prefix);
        if (n < prefix.len || memcmp(text + p, prefix.data, prefix.len)) {
            rc = cli_usage_error("%s: point %llu has other axis values than this spec gives it: remove the file "
                                 "or write elsewhere", path, (unsigned long long)id);
            break;
        }
        if (lines_push(rows, text + p, n, id)) {
            rc = cli_usage_error("out of memory");
            break;
        }
        done[k] = true;
        p += n + 1;
    }
    ts_buf_free(&prefix);
    ts_free(text);
    return rc;
}

/* Whole lines of the JSON-lines file ({"point":N,...}) for points marked done; a done point
 * without its report is marked not done, so it runs again (its newer row wins at the end). */
static void read_reports(const ts_sweep *s, const char *path, bool *done, line_set *out)
{
    size_t np = ts_sweep_npoints(s);
    bool *have = ts_calloc(np + 1, sizeof *have);
    char *text = NULL;
    size_t len = 0;
    ts_err err;
    ts_err_init(&err);
    struct stat stt;
    if (stat(path, &stt) == 0 && ts_read_file(path, &text, &len, &err) == TS_OK) {
        for (size_t p = 0; p < len;) {
            const char *nl = memchr(text + p, '\n', len - p);
            if (!nl)
                break;
            size_t n = (size_t)(nl - (text + p));
            uint64_t id;
            long k;
            if (n > 9 && !memcmp(text + p, "{\"point\":", 9) && lead_id(text + p, n, 9, &id) == 0 &&
                (k = ts_sweep_find(s, id)) >= 0 && done[k] && !lines_push(out, text + p, n, id) && have)
                have[k] = true;
            p += n + 1;
        }
    }
    for (size_t i = 0; i < np; i++)
        done[i] = done[i] && have && have[i];
    ts_free(have);
    ts_free(text);
    ts_err_free(&err);
}

/* Sort by id, keep the last line of each id (stable merge by index), join with newlines. */
typedef struct keyed { uint64_t id; size_t at; } keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* ... and counts, in *failed when not NULL, the kept lines that are failed CSV rows (a row whose
 * error field, the last, is not empty). */
static void lines_sorted(const line_set *l, const char *header, ts_buf *out, size_t *failed)
{
    ts_buf_puts(out, header);
    keyed *k = ts_malloc((l->n + 1) * sizeof *k);
    if (!k) {
        out->oom = true;
        return;
    }
    for (size_t i = 0; i < l->n; i++)
        k[i] = (keyed){l->id[i], i};
    qsort(k, l->n, sizeof *k, cmp_keyed);
    for (size_t i = 0; i < l->n; i++) {
        if (i + 1 < l->n && k[i + 1].id == k[i].id)
            continue;
        const char *v = l->v[k[i].at];
        size_t n = strlen(v);
        if (failed)
            *failed += !(n && v[n - 1] == ',');
        ts_buf_puts(out, v);
        ts_buf_putc(out, '\n');
    }
    ts_free(k);
}

static int write_sorted(const line_set *l, const char *header, const char *path, size_t *failed)
{
    ts_buf b = TS_BUF_INIT;
    lines_sorted(l, header, &b, failed);
    ts_err err;
    ts_err_init(&err);
    int rc = 0;
    if (b.oom)
        rc = cli_usage_error("out of memory");
    else if (ts_write_file_atomic(path, ts_buf_str(&b), b.len, &err) != TS_OK)
        rc = cli_fail(&err);
    ts_err_free(&err);
    ts_buf_free(&b);
    return rc;
}

/* Read back a file the run appended to: whole lines with their ids (CSV: after the header). */
static int reread(const char *path, size_t skip_header, bool json, line_set *out)
{
    char *text = NULL;
    size_t len = 0;
    ts_err err;
    ts_err_init(&err);
    if (ts_read_file(path, &text, &len, &err) != TS_OK) {
        int rc = cli_fail(&err);
        ts_err_free(&err);
        return rc;
    }
    ts_err_free(&err);
    for (size_t p = skip_header; p < len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (text + p));
        uint64_t id;
        if (lead_id(text + p, n, json ? 9 : 0, &id) == 0 && lines_push(out, text + p, n, id)) {
            ts_free(text);
            return cli_usage_error("out of memory");
        }
        p += n + 1;
    }
    ts_free(text);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The workers. */

typedef struct worker {
    pid_t pid;
    int fd;        /* read end of its pipe */
    size_t point;
    ts_buf in;     /* what it sent: the report line, a NUL, the row */
} worker;

static int start_worker(const ts_sweep *s, size_t i, const compiled *comp, worker *w, int keep_fds[2])
{
    int p[2];
    if (pipe(p))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(p[0]);
        close(keep_fds[0]);
        close(keep_fds[1]);
        ts_buf row = TS_BUF_INIT, jline = TS_BUF_INIT;
        run_point(s, i, comp, &row, &jline);
        ts_buf_putc(&jline, 0);
        int bad = row.oom || jline.oom || write_all(p[1], jline.data, jline.len) ||
                  write_all(p[1], ts_buf_str(&row), row.len);
        _exit(bad ? 3 : 0);
    }
    close(p[1]);
    w->pid = pid;
    w->fd = p[0];
    w->point = i;
    ts_buf_reset(&w->in);
    return 0;
}

/* A worker has finished sending: reap it and append its report and row. Returns 1 when the
 * point failed, 0 when it ran, 2 when the worker was stopped by SIGINT, SIGTERM or SIGHUP (the
 * user's Ctrl-C reaches the whole process group, the sweep's workers included): then nothing is
 * written, and the point runs again next time, as docs/sweep.md says of an interrupted sweep;
 * -1 when the outputs could not be written. */
static int finish_worker(const ts_sweep *s, worker *w, int csv_fd, int jsonl_fd)
{
    close(w->fd);
    int status = 0;
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
        ;
    w->pid = 0;
    if (WIFSIGNALED(status) &&
        (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGHUP))
        return 2;
    const char *data = ts_buf_str(&w->in);
    size_t jl = strnlen(data, w->in.len);
    ts_buf row = TS_BUF_INIT;
    bool ok_msg = WIFEXITED(status) && WEXITSTATUS(status) == 0 && jl < w->in.len && w->in.len > jl + 1 &&
                  data[w->in.len - 1] == '\n';
    int rc;
    if (ok_msg) {
        ts_buf_put(&row, data + jl + 1, w->in.len - jl - 1);
        if (write_all(jsonl_fd, data, jl))
            return -1;
    } else {
        char why[128];
        if (WIFSIGNALED(status))
            snprintf(why, sizeof why, "worker killed by signal %d", WTERMSIG(status));
        else
            snprintf(why, sizeof why, "worker exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        ts_sweep_csv_row(s, w->point, NULL, why, &row);
    }
    /* A failed point's row ends with a non-empty error field, i.e. not with ",\n". */
    rc = !(row.len >= 2 && row.data[row.len - 2] == ',');
    if (row.oom || write_all(csv_fd, row.data, row.len))
        rc = -1;
    ts_buf_free(&row);
    return rc;
}

static long default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

static int run_all(const ts_sweep *s, const bool *done, long jobs, const char *csv, const char *jsonl, bool quiet,
                   size_t *ninterrupted, size_t *ncompiles)
{
    compile_cache cache = {0};
    int csv_fd = open(csv, O_WRONLY | O_APPEND | O_CLOEXEC);
    int jsonl_fd = open(jsonl, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (csv_fd < 0 || jsonl_fd < 0) {
        if (csv_fd >= 0)
            close(csv_fd);
        if (jsonl_fd >= 0)
            close(jsonl_fd);
        return cli_usage_error("%s: cannot open for appending: %s", csv_fd < 0 ? csv : jsonl, strerror(errno));
    }
    size_t np = ts_sweep_npoints(s), todo = 0, ran = 0;
    for (size_t i = 0; i < np; i++)
        todo += !done[i];
    worker *ws = ts_calloc((size_t)jobs, sizeof *ws);
    struct pollfd *pf = ts_calloc((size_t)jobs, sizeof *pf);
    int keep[2] = {csv_fd, jsonl_fd};
    int rc = 0;
    size_t next = 0, running = 0;
    bool progress = !quiet && isatty(2);
    if (!ws || !pf) {
        rc = cli_usage_error("out of memory");
        goto out;
    }
    for (;;) {
        while (!g_stop && !rc && running < (size_t)jobs) {
            while (next < np && done[next])
                next++;
            if (next >= np)
                break;
            size_t slot = 0;
            while (ws[slot].pid)
                slot++;
            bool fresh = false;
            const compiled *comp = cache_get(&cache, s, next, &fresh);
            *ncompiles += fresh;
            if (start_worker(s, next, comp, &ws[slot], keep)) {
                rc = cli_usage_error("cannot start a worker process: %s", strerror(errno));
                break;
            }
            next++;
            running++;
        }
        if (!running)
            break;
        size_t nfd = 0;
        for (long k = 0; k < jobs; k++)
            if (ws[k].pid)
                pf[nfd++] = (struct pollfd){.fd = ws[k].fd, .events = POLLIN};
        if (poll(pf, nfd, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = cli_usage_error("poll: %s", strerror(errno));
            break;
        }
        for (size_t f = 0; f < nfd; f++) {
            if (!pf[f].revents)
                continue;
            worker *w = NULL;
            for (long k = 0; k < jobs && !w; k++)
                if (ws[k].pid && ws[k].fd == pf[f].fd)
                    w = &ws[k];
            char buf[65536];
            ssize_t got = read(w->fd, buf, sizeof buf);
            if (got > 0) {
                ts_buf_put(&w->in, buf, (size_t)got);
                continue;
            }
            if (got < 0 && errno == EINTR)
                continue;
            int r = finish_worker(s, w, csv_fd, jsonl_fd);
            running--;
            ran++;
            if (r < 0)
                rc = cli_usage_error("%s: cannot append a row: %s", csv, strerror(errno));
            else
                *ninterrupted += r == 2;
            if (progress)
                fprintf(stderr, "\rsweep: %zu of %zu points", ran, todo);
        }
        if (g_stop || rc) {
            /* Stop the workers this sweep started; their points run again next time. */
            for (long k = 0; k < jobs; k++)
                if (ws[k].pid) {
                    kill(ws[k].pid, SIGTERM);
                    close(ws[k].fd);
                    while (waitpid(ws[k].pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                    ws[k].pid = 0;
                }
            running = 0;
            break;
        }
    }
    if (progress && ran)
        fputs("\r\033[K", stderr);
out:
    cache_free(&cache);
    if (ws)
        for (long k = 0; k < jobs; k++)
            ts_buf_free(&ws[k].in);
    ts_free(ws);
    ts_free(pf);
    close(csv_fd);
    close(jsonl_fd);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Across hosts: under `mpirun`, rank 0 hands out points one at a time and appends what the other
 * ranks send back (the same outputs as a local sweep); every other rank runs the points it is
 * given, one at a time, in its own process. */

#if TS_HAVE_MPI
enum { TAG_WORK = 1, TAG_STOP = 2, TAG_RESULT = 3 };

/* Launched by mpirun with more than one rank (Open MPI or a PMI launcher)? */
static bool mpi_launched(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v)
        v = getenv("PMI_SIZE");
    return v && atoi(v) > 1;
}

static void mpi_worker(const ts_sweep *s)
{
    ts_buf row = TS_BUF_INIT, jline = TS_BUF_INIT;
    for (;;) {
        unsigned long long idx = 0;
        MPI_Status st;
        MPI_Recv(&idx, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG != TAG_WORK || idx >= ts_sweep_npoints(s))
            break;
        ts_buf_reset(&row);
        ts_buf_reset(&jline);
        run_point(s, (size_t)idx, NULL, &row, &jline);
        ts_buf_putc(&jline, 0);
        ts_buf_put(&jline, ts_buf_str(&row), row.len);
        MPI_Send(ts_buf_str(&jline), (int)jline.len, MPI_CHAR, 0, TAG_RESULT, MPI_COMM_WORLD);
    }
    ts_buf_free(&row);
    ts_buf_free(&jline);
}

static void mpi_stop(int rank)
{
    unsigned long long none = 0;
    MPI_Send(&none, 1, MPI_UNSIGNED_LONG_LONG, rank, TAG_STOP, MPI_COMM_WORLD);
}

/* Rank 0: hand out the points not done, append the results. Stops every other rank. */
static int mpi_run_all(const ts_sweep *s, const bool *done, int nranks, const char *csv, const char *jsonl)
{
    int csv_fd = open(csv, O_WRONLY | O_APPEND | O_CLOEXEC);
    int jsonl_fd = open(jsonl, O_WRONLY | O_APPEND | O_CLOEXEC);
    size_t np = ts_sweep_npoints(s), next = 0;
    size_t *busy = ts_calloc((size_t)nranks, sizeof *busy);
    int rc = 0, active = 0;
    if (csv_fd < 0 || jsonl_fd < 0 || !busy)
        rc = cli_usage_error("%s: cannot open for appending", csv_fd < 0 ? csv : jsonl);
    for (int r = 1; r < nranks; r++) {
        while (next < np && done[next])
            next++;
        if (rc || next >= np || g_stop) {
            mpi_stop(r);
            continue;
        }
        unsigned long long idx = next;
        busy[r] = next++;
        MPI_Send(&idx, 1, MPI_UNSIGNED_LONG_LONG, r, TAG_WORK, MPI_COMM_WORLD);
        active++;
    }
    while (active) {
        MPI_Status st;
        int n = 0;
        MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &n);
        char *msg = ts_malloc((size_t)n + 1);
        if (!msg) {
            char c;
            MPI_Recv(&c, 0, MPI_CHAR, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            rc = cli_usage_error("out of memory");
        } else {
            MPI_Recv(msg, n, MPI_CHAR, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            msg[n] = 0;
            size_t jl = strnlen(msg, (size_t)n);
            const char *row = msg + jl + 1;
            size_t rl = jl < (size_t)n ? (size_t)n - jl - 1 : 0;
            if (!rc && (jl >= (size_t)n || !rl || write_all(jsonl_fd, msg, jl) || write_all(csv_fd, row, rl)))
                rc = cli_usage_error("%s: cannot append the row of point %zu", csv, busy[st.MPI_SOURCE]);
            ts_free(msg);
        }
        while (next < np && done[next])
            next++;
        if (rc || next >= np || g_stop) {
            mpi_stop(st.MPI_SOURCE);
            active--;
        } else {
            unsigned long long idx = next;
            busy[st.MPI_SOURCE] = next++;
            MPI_Send(&idx, 1, MPI_UNSIGNED_LONG_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
        }
    }
    ts_free(busy);
    if (csv_fd >= 0)
        close(csv_fd);
    if (jsonl_fd >= 0)
        close(jsonl_fd);
    return rc;
}
#endif

/* Whether two paths name one file: the same inode when both exist, else the same directory (by
 * its real path) and the same name. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[PATH_MAX], db[PATH_MAX];
    const char *sl_a = strrchr(a, '/'), *sl_b = strrchr(b, '/');
    const char *na = sl_a ? sl_a + 1 : a, *nb = sl_b ? sl_b + 1 : b;
    if (strcmp(na, nb))
        return false;
    char pa[PATH_MAX], pb[PATH_MAX];
    snprintf(pa, sizeof pa, "%.*s", sl_a ? (int)(sl_a - a + (sl_a == a)) : 1, sl_a ? a : ".");
    snprintf(pb, sizeof pb, "%.*s", sl_b ? (int)(sl_b - b + (sl_b == b)) : 1, sl_b ? b : ".");
    if (!realpath(pa, da) || !realpath(pb, db))
        return !strcmp(a, b);
    return !strcmp(da, db);
}

/* ---------------------------------------------------------------------------------------------
 * The command. */

static int sweep_main(int argc, char **argv, int rank, int nranks);

int cmd_sweep(int argc, char **argv)
{
#if TS_HAVE_MPI
    if (mpi_launched()) {
        int rank = 0, nranks = 1;
        MPI_Init(NULL, NULL);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &nranks);
        int rc = sweep_main(argc, argv, rank, nranks);
        MPI_Finalize();
        return rank ? 0 : rc;
    }
#endif
    return sweep_main(argc, argv, 0, 1);
}

static int sweep_main(int argc, char **argv, int rank, int nranks)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"jsonl", required_argument, 0, 'J'},
        {"jobs", required_argument, 0, 'j'},   {"list", no_argument, 0, 'l'},
        {"quiet", no_argument, 0, 'q'},        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *output = NULL, *jsonl_opt = NULL;
    long jobs = 0;
    bool list = false, quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'J': jsonl_opt = optarg; break;
        case 'j': {
            char *end;
            jobs = strtol(optarg, &end, 10);
            if (*end || !optarg[0] || jobs < 1 || jobs > 4096)
                return cli_usage_error("--jobs takes a number from 1 to 4096, got '%s'", optarg);
            break;
        }
        case 'l': list = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(sweep_usage, stdout); return 0;
        case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option '%s' (see 'tessera sweep --help')", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("sweep needs a spec file (see 'tessera sweep --help')");
    const char *spec = argv[optind++];
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if (!output && !list)
        return cli_usage_error("sweep needs -o RESULTS.csv");
    if (!jobs)
        jobs = default_jobs();

    ts_err err;
    ts_err_init(&err);
    ts_config_opts copts = cli_config_opts(NULL, 0);
    ts_sweep *s = NULL;
    ts_status lst = ts_sweep_load(&s, spec, &copts, &err);
    if (lst == TS_OK) {
        ts_config *base = NULL;
        check_ctx cc = {NULL};
        ts_sweep_checks chk = {&cc, check_workload, check_setting};
        if ((lst = cli_load_config(&base, ts_sweep_config(s), NULL, 0, &err)) == TS_OK) {
            cc.fam = ts_family_find(ts_config_arch(base));
            lst = ts_sweep_check(s, &chk, &err);
        }
        ts_config_destroy(base);
    }
    if (lst != TS_OK) {
        int rc = rank ? TS_EXIT_INPUT : cli_fail(&err);
        ts_err_free(&err);
        ts_sweep_destroy(s);
        return rc;
    }
    ts_err_free(&err);

    size_t np = ts_sweep_npoints(s);
    ts_buf header = TS_BUF_INIT;
    ts_sweep_csv_header(s, &header);
    int rc = 0;
    char *jsonl = NULL;
    bool *done = NULL;
    line_set rows = {0}, reports = {0};
    bool stopped = nranks < 2 || list;
    if (list && rank)
        goto out;
    if (list) {
        ts_buf b = TS_BUF_INIT;
        ts_buf_puts(&b, "point,workload");
        for (size_t a = 0; a < ts_sweep_naxes(s); a++) {
            ts_buf_putc(&b, ',');
            ts_csv_field(&b, ts_sweep_axis_key(s, a));
        }
        ts_buf_putc(&b, '\n');
        for (size_t i = 0; i < np; i++) {
            ts_sweep_csv_prefix(s, i, &b);
            if (!b.oom)
                b.data[b.len - 1] = '\n'; /* the prefix ends with a comma */
        }
        fputs(ts_buf_str(&b), stdout);
        ts_buf_free(&b);
        goto out;
    }
#if TS_HAVE_MPI
    if (rank) {
        mpi_worker(s);
        goto out;
    }
#endif
    if (jsonl_opt) {
        jsonl = ts_strdup(jsonl_opt);
    } else if ((jsonl = ts_malloc(strlen(output) + 7))) {
        sprintf(jsonl, "%s.jsonl", output);
    }
    done = ts_calloc(np + 1, sizeof *done);
    if (!jsonl || !done) {
        rc = cli_usage_error("out of memory");
        goto out;
    }
    if (same_file(jsonl, output)) { /* the reports would be appended to the CSV, then overwrite it */
        rc = cli_usage_error("--jsonl %s is the CSV given with -o: give the reports a file of their own", jsonl);
        goto out;
    }
    /* What an earlier run left: whole rows of this spec, and their reports. Both files are
     * rewritten with only those, so appending starts after a whole line. */
    if ((rc = read_rows(s, output, ts_buf_str(&header), &rows, done)) != 0)
        goto out;
    read_reports(s, jsonl, done, &reports);
    if ((rc = write_sorted(&rows, ts_buf_str(&header), output, NULL)) != 0 ||
        (rc = write_sorted(&reports, "", jsonl, NULL)) != 0)
        goto out;

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    signal(SIGPIPE, SIG_IGN);
    size_t nfailed = 0, ninterrupted = 0, ncompiles = 0;
#if TS_HAVE_MPI
    if (nranks > 1) {
        stopped = true;
        rc = mpi_run_all(s, done, nranks, output, jsonl);
    } else
#endif
        rc = run_all(s, done, jobs, output, jsonl, quiet, &ninterrupted, &ncompiles);
    sigaction(SIGINT, &old_int, NULL); /* the CLI's: it removes the temporary file of a rewrite */
    sigaction(SIGTERM, &old_term, NULL);
    if (rc)
        goto out;
    if (g_stop) {
        rc = TS_EXIT_SIM;
        fprintf(stderr, "tessera: sweep interrupted: run it again to finish the remaining points\n");
        goto out;
    }
    /* Normalise: rows and reports sorted by point id, written atomically. */
    lines_free(&rows);
    lines_free(&reports);
    /* Failures are counted on the rows kept, one per point: a point that failed in an earlier run
     * (a worker killed) and ran again has two rows in the file until now, and only the later
     * one counts. */
    if ((rc = reread(output, header.len, false, &rows)) != 0 || (rc = reread(jsonl, 0, true, &reports)) != 0 ||
        (rc = write_sorted(&rows, ts_buf_str(&header), output, &nfailed)) != 0 ||
        (rc = write_sorted(&reports, "", jsonl, NULL)) != 0)
        goto out;
    if (ncompiles && !quiet)
        fprintf(stderr, "tessera: sweep: %zu compile%s for %zu point%s (points that differ only in keys no lowering "
                "reads share one)\n", ncompiles, ncompiles == 1 ? "" : "s", np, np == 1 ? "" : "s");
    if (nfailed) {
        fprintf(stderr, "tessera: %zu of %zu points failed (see the error column of %s)\n", nfailed, np, output);
        rc = TS_EXIT_SIM;
    }
    if (ninterrupted) {
        fprintf(stderr, "tessera: %zu point%s stopped by a signal: run the sweep again to finish %s\n",
                ninterrupted, ninterrupted == 1 ? " was" : "s were", ninterrupted == 1 ? "it" : "them");
        rc = TS_EXIT_SIM;
    }
out:
#if TS_HAVE_MPI
    if (!rank && !stopped)
        for (int r = 1; r < nranks; r++)
            mpi_stop(r); /* rank 0 gave up before handing out points */
#endif
    (void)stopped;
    lines_free(&rows);
    lines_free(&reports);
    ts_free(done);
    ts_free(jsonl);
    ts_buf_free(&header);
    ts_sweep_destroy(s);
    return rc;
}
