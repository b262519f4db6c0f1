/* cli/cmd_run.c — `tessera run`: load config and workload, simulate, write the report. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/common.h"
#include "cli/layers.h"
#include "cli/lowering.h"
#include "core/report.h"
#include "core/sim.h"
#include "core/trace.h"
#include "core/activity.h"
#include "core/act_trace.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/npy.h"
#include "core/ytree.h"
#include "configs/builtin.h"
#include "workloads/workload.h"
#include "viz/render.h"
#include "viz/links.h"
#include "viz/roofline.h"
#include "viz/view.h"

static const char run_usage[] =
    "usage: tessera run [-c CONFIG] [WORKLOAD] [options]\n"
    "\n"
    "Simulate WORKLOAD on the chip described by CONFIG and write a report.\n"
    "CONFIG is a YAML file or a built-in config name (ipu_mk1, ...). WORKLOAD is a binary\n"
    "program, an assembly file (.s), a built-in program name, a program generator such as\n"
    "the wafer's stencil:nz=128 (`tessera run --list` names them) or a model (an ONNX\n"
    "file, a workload YAML, resnet50, matmul:m=256,k=256,n=256). With neither, the built-in\n"
    "default workload runs on the default config of the first family.\n"
    "\n"
    "options:\n"
    "  -c, --config CONFIG     chip config (file or built-in name)\n"
    "  -o, --output FILE       write the report to FILE (default: standard output)\n"
    "  -f, --format FMT        text (default), json or csv\n"
    "      --list              list the built-in models (with their parameters) and programs\n"
    "      --trace FILE        write a Perfetto / Chrome trace of the run: unit tracks (blocks\n"
    "                          of units on big layouts), bandwidth and power per window\n"
    "      --trace-limit MB    the trace's size limit (default 200)\n"
    "      --frames DIR        write a PNG picture of the chip's activity every window\n"
    "                          (DIR/frame_000000.png, ...; DIR is created)\n"
    "      --view              show the frames live in a window (SDL2): space pauses,\n"
    "                          n steps N cycles, s a superstep, + and - change the speed,\n"
    "                          z and x zoom (a right click zooms in there), arrows pan,\n"
    "                          q closes; the mouse shows a unit\n"
    "      --frame-every N     cycles per frame or trace window (default 1000)\n"
    "      --summary-png FILE  write one PNG of the run: per-unit utilization and supersteps\n"
    "      --roofline FILE     write a roofline PNG: ops per cycle against ops per SRAM byte\n"
    "                          under the chip's peak and SRAM bandwidth, the run and its layers\n"
    "      --links-png FILE    write a heat map PNG of the mesh's links, each coloured by its\n"
    "                          utilisation (the wafer only; docs/noc.md)\n"
    "  -s, --set KEY=VALUE     override a config key (repeatable)\n"
    "      --inputs FILE       a model's values: a .npz archive (or one .npy) whose arrays\n"
    "                          name its data inputs (all of them) and any of its weights\n"
    "                          (docs/values.md)\n"
    "      --outputs FILE      write the model's outputs, read back after the run, to FILE\n"
    "                          (.npz, f32); the report shows their checksums either way\n"
    "      --energy TABLE      energy table (file or built-in name) instead of the config's\n"
    "      --layers-simulated K  a decoder workload (gpt, llama3-8b, ...) of N layers: simulate K\n"
    "                          (2 or more) in full and scale to N by the difference of K and K - 1\n"
    "                          layers; the report says so and adds scaled_* figures\n"
    "      --planner NAME      how a model is lowered for the IPU: auto (the cheapest plan per\n"
    "                          operator by the cost model, the default), lcs (load-compute-\n"
    "                          store), t10 (compute-shift MatMul, Gemm, 1x1 Conv) or split\n"
    "                          (t10's partitions, nothing rotating)\n"
    "      --max-tiles N       a model's plan uses at most the first N tiles (IPU; default all)\n"
    "  -j, --threads N         host threads (results do not depend on it)\n"
    "      --lockstep          step every cycle of every unit (reference mode)\n"
    "      --warn              record hazards and go on, where the family has them\n"
    "      --max-cycles N      stop with an error after N simulated cycles (default\n"
    "                          1000000000; 0 for no limit)\n"
    "      --hang-cycles N     cycles without progress that count as a hang (default 1000000)\n"
    "  -q, --quiet             no progress bar\n"
    "  -h, --help              this text\n";

typedef struct progress {
    bool enabled;
    struct timespec start;
    bool shown;
    uint64_t max;
} progress;

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void on_progress(void *ud, uint64_t cycle)
{
    progress *p = ud;
    if (!p->enabled)
        return;
    double s = since(&p->start);
    if (s < 1.0)
        return;
    p->shown = true;
    if (p->max) {
        int w = 30, k = (int)((double)w * (double)cycle / (double)p->max);
        if (k > w)
            k = w;
        fprintf(stderr, "\r[%.*s%*s] cycle %" PRIu64 " (%.1f s)", k, "==============================",
                w - k, "", cycle, s);
    } else {
        fprintf(stderr, "\rsimulating: cycle %" PRIu64 " (%.1f s, %.3g cycles/s)", cycle, s,
                (double)cycle / s);
    }
    fflush(stderr);
}

/* Frames: one PNG per activity window, drawn by viz. */
typedef struct frames {
    const char *dir;    /* write PNG frames here, or NULL */
    ts_view *view;      /* show them live, or NULL */
    ts_act_trace *at;   /* write them into the trace, or NULL */
    ts_viz_image img;
} frames;

static ts_status on_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    frames *fr = ud;
    if (fr->at) {
        ts_status rc = ts_act_trace_frame(fr->at, a, f, err);
        if (rc != TS_OK)
            return rc;
    }
    if (!fr->dir && (!fr->view || ts_view_closed(fr->view)))
        return TS_OK;
    ts_status rc = fr->view ? ts_view_frame(fr->view, a, f, err) : TS_OK;
    if (rc == TS_OK && fr->dir)
        rc = ts_viz_render_frame(&fr->img, a, f, NULL, err);
    if (rc != TS_OK || !fr->dir)
        return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/frame_%06" PRIu64 ".png", fr->dir, f->index);
    return ts_viz_png_write(&fr->img, path, err);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s[0] || s[0] == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end)
        return -1;
    *out = v;
    return 0;
}

/* --roofline FILE: the run (2 ops per useful MAC, per SRAM byte and per cycle) and each layer,
 * from the columns every family's layers table has: macs, share (of the run's cycles) and
 * sram_bytes (docs/report-schema.md). */
static ts_status write_roofline(const ts_results *res, const char *path, ts_err *err)
{
    const ts_stat *t = ts_stats_find(res->stats, "layers");
    size_t cm = SIZE_MAX, cc = SIZE_MAX, cb = SIZE_MAX, n = 0;
    for (size_t c = 0; t && t->kind == TS_STAT_TABLE && c < t->ncols; c++) {
        cm = strcmp(t->cols[c], "macs") ? cm : c;
        cc = strcmp(t->cols[c], "share") ? cc : c;
        cb = strcmp(t->cols[c], "sram_bytes") ? cb : c;
    }
    bool layers = t && cm != SIZE_MAX && cc != SIZE_MAX && cb != SIZE_MAX;
    double *x = ts_calloc(layers && t->nrows ? t->nrows : 1, sizeof *x);
    double *y = ts_calloc(layers && t->nrows ? t->nrows : 1, sizeof *y);
    if (!x || !y) {
        ts_free(x);
        ts_free(y);
        return ts_err_set(err, TS_ENOMEM, "out of memory drawing the roofline");
    }
    for (size_t r = 0; layers && r < t->nrows; r++) {
        const double *row = t->rows + r * t->ncols;
        double cyc = row[cc] * (double)res->cycles; /* NAN share: not drawn */
        x[n] = row[cb] > 0 ? 2 * row[cm] / row[cb] : 0;
        y[n++] = cyc > 0 ? 2 * row[cm] / cyc : 0;
    }
    char title[300];
    snprintf(title, sizeof title, "roofline: %s on %s", res->workload, res->config);
    double mac2 = 2.0 * (double)res->macs;
    ts_roofline rl = {
        .title = title, .peak_ops = 2 * ts_results_peak_macs(res), .bw = res->peak_sram_bytes_per_cycle,
        .x = x, .y = y, .n = n,
        .run_x = res->bytes[TS_LEVEL_SRAM] ? mac2 / (double)res->bytes[TS_LEVEL_SRAM] : 0,
        .run_y = res->cycles ? mac2 / (double)res->cycles : 0,
        .note = t && !layers ? "layers: this family's layers table gives no per-layer SRAM traffic" : NULL,
    };
    ts_status st = ts_roofline_write_png(&rl, path, err);
    ts_free(x);
    ts_free(y);
    return st;
}

/* --links-png FILE: the wafer's per-link counts (fabric.link_*, a value per PE) as a heat map.
 * The counts are in the report only for meshes up to report.pe_array_limit PEs. */
static ts_status write_links(const ts_results *res, const ts_config *cfg, const char *path, ts_err *err)
{
    static const char *const name[TS_LINK_DIRS] = {"fabric.link_north", "fabric.link_south", "fabric.link_east",
                                                   "fabric.link_west"};
    uint64_t w = 0, h = 0;
    if (ts_config_u64(cfg, "mesh.width", &w) || ts_config_u64(cfg, "mesh.height", &h) || !w || !h)
        return ts_err_set(err, TS_EINPUT, "--links-png: config %s gives no mesh.width and mesh.height", res->config);
    char title[300];
    snprintf(title, sizeof title, "links: %s on %s", res->workload, res->config);
    ts_links l = {.title = title, .mw = (uint32_t)w, .mh = (uint32_t)h, .cycles = (double)res->cycles};
    for (int d = 0; d < TS_LINK_DIRS; d++) {
        const ts_stat *s = ts_stats_find(res->stats, name[d]);
        if (!s || s->kind != TS_STAT_ARRAY || s->n != w * h)
            return ts_err_set(err, TS_EINPUT, "--links-png: the report has no per-link counts (a mesh of %" PRIu64
                              " PEs is over report.pe_array_limit: raise it with --set)", w * h);
        l.sent[d] = s->v;
    }
    return ts_links_write_png(&l, path, err);
}

/* A track of the trace with a slice per layer, from the first to the last cycle the layers table
 * gives it (the IPU's and TSP's tables; the wafer's stages run all at once and have none), named
 * by its operator type and node name, with its node, type and name as arguments. */
static void trace_layers(ts_trace *t, const ts_results *res)
{
    const ts_stat *s = ts_stats_find(res->stats, "layers");
    if (!s || s->kind != TS_STAT_TABLE || !s->labels || s->nlabels < 2)
        return;
    size_t cf = SIZE_MAX, cl = SIZE_MAX, cn = SIZE_MAX;
    for (size_t c = 0; c < s->ncols; c++) {
        cf = strcmp(s->cols[c], "first") ? cf : c;
        cl = strcmp(s->cols[c], "last") ? cl : c;
        cn = strcmp(s->cols[c], "node") ? cn : c;
    }
    if (cf == SIZE_MAX || cl == SIZE_MAX || cn == SIZE_MAX)
        return;
    /* layers that overlap (the TSP's static schedule) get a track each, in-order ones share one */
    bool overlap = false;
    for (size_t r = 1; r < s->nrows; r++)
        overlap |= s->rows[r * s->ncols + cf] <= s->rows[(r - 1) * s->ncols + cl];
    enum { PID_LAYERS = 2 }; /* the chip's tracks are process 0, the activity's 1 */
    ts_trace_process(t, PID_LAYERS, "layers");
    if (!overlap)
        ts_trace_thread(t, PID_LAYERS, 1, "layers (the report's layers table)");
    ts_buf args = TS_BUF_INIT;
    for (size_t r = 0; r < s->nrows; r++) {
        const double *row = s->rows + r * s->ncols;
        const char *op = s->labels[r * s->nlabels], *name = s->labels[r * s->nlabels + 1];
        if (!(row[cl] >= row[cf]) || row[cf] < 0 || (row[cf] == 0 && row[cl] == 0))
            continue; /* a layer that ran no instruction */
        json_t *a = json_object();
        json_object_set_new(a, "node", ts_json_num(row[cn]));
        json_object_set_new(a, "op_type", ts_json_str(op));
        json_object_set_new(a, "name", ts_json_str(name));
        ts_buf_reset(&args);
        ts_buf_json(&args, a, JSON_COMPACT);
        json_decref(a);
        char label[300];
        snprintf(label, sizeof label, "%s %s", op, name);
        int tid = overlap ? (int)r + 1 : 1;
        if (overlap)
            ts_trace_thread(t, PID_LAYERS, tid, label);
        ts_trace_slice(t, PID_LAYERS, tid, label, "layer", (uint64_t)row[cf], (uint64_t)(row[cl] - row[cf] + 1),
                       ts_buf_str(&args));
    }
    ts_buf_free(&args);
}

/* One built-in model for --list: its name, its description and its parameters with their
 * defaults, read from its YAML. */
static void list_model(size_t i, ts_buf *out)
{
    size_t len;
    const char *text = ts_wl_builtin_text(i, &len), *name = ts_wl_builtin_name(i);
    ts_ynode *root = NULL;
    ts_err e;
    ts_err_init(&e);
    ts_ytree_opts yo = {.max_depth = TS_YTREE_MAX_DEPTH};
    ts_buf_printf(out, "  %s\n", name);
    if (ts_ytree_parse(name, text, len, &yo, &root, &e) == TS_OK && root) {
        const ts_ynode *d = ts_ynode_get(root, "description"), *p = ts_ynode_get(root, "params");
        const ts_ynode *b = ts_ynode_get(root, "base");
        if (d && d->kind == TS_Y_SCALAR)
            ts_buf_printf(out, "      %s\n", d->text);
        if (b && b->kind == TS_Y_SCALAR)
            ts_buf_printf(out, "      %s with these defaults (and %s's other parameters):\n", b->text, b->text);
        if (p && p->kind == TS_Y_MAP && p->n) {
            ts_buf_puts(out, "      ");
            for (size_t k = 0; k + 1 < p->n; k += 2) {
                const ts_ynode *v = p->kids[k + 1], *def = ts_ynode_get(v, "default"),
                               *ch = ts_ynode_get(v, "choices");
                if (def && def->kind == TS_Y_SCALAR)
                    v = def; /* a choice: its default, then [the choices] */
                ts_buf_printf(out, "%s%s=%s", k ? " " : "", p->kids[k]->text ? p->kids[k]->text : "",
                              v->text ? v->text : "");
                for (size_t j = 0; ch && ch->kind == TS_Y_SEQ && j < ch->n; j++)
                    ts_buf_printf(out, "%s%s%s", j ? "|" : "[", ch->kids[j]->text ? ch->kids[j]->text : "",
                                  j + 1 == ch->n ? "]" : "");
            }
            ts_buf_putc(out, '\n');
        }
    }
    ts_ynode_destroy(root);
    ts_err_free(&e);
}

/* `tessera run --list`: the built-in models, then the built-in programs with their family. */
static int list_workloads(void)
{
    ts_buf out = TS_BUF_INIT;
    ts_buf_puts(&out, "built-in models (run one as NAME or NAME:KEY=VALUE,...; parameters with defaults):\n");
    for (size_t i = 0; i < ts_wl_builtin_count(); i++)
        list_model(i, &out);
    ts_buf_puts(&out, "built-in programs (for a config of their family):\n");
    for (size_t i = 0; i < ts_builtin_count(); i++) {
        const char *text, *name = ts_builtin_name(i);
        size_t len;
        if (ts_builtin_find(name, &text, &len) != 0)
            continue;
        for (size_t k = 0; k + 6 <= len; k++) /* the ".arch FAMILY" line names a program */
            if (!memcmp(text + k, ".arch ", 6) && (k == 0 || text[k - 1] == '\n')) {
                size_t w = strcspn(text + k + 6, " \t\r\n");
                ts_buf_printf(&out, "  %-14s %.*s\n", name, (int)(w < len - k - 6 ? w : len - k - 6), text + k + 6);
                break;
            }
    }
    cli_list_generators(&out);
    fputs(ts_buf_str(&out), stdout);
    ts_buf_free(&out);
    return 0;
}

int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, 0, 'c'},   {"output", required_argument, 0, 'o'},
        {"format", required_argument, 0, 'f'},   {"trace", required_argument, 0, 'T'},
        {"set", required_argument, 0, 's'},      {"energy", required_argument, 0, 'E'},
        {"threads", required_argument, 0, 'j'},  {"lockstep", no_argument, 0, 'L'},
        {"warn", no_argument, 0, 'W'},           {"max-cycles", required_argument, 0, 'M'},
        {"hang-cycles", required_argument, 0, 'H'}, {"quiet", no_argument, 0, 'q'},
        {"frames", required_argument, 0, 'F'},   {"frame-every", required_argument, 0, 'N'},
        {"summary-png", required_argument, 0, 'P'}, {"view", no_argument, 0, 'V'},
        {"trace-limit", required_argument, 0, 'Z'}, {"planner", required_argument, 0, 'R'},
        {"max-tiles", required_argument, 0, 'U'}, {"inputs", required_argument, 0, 'X'},
        {"outputs", required_argument, 0, 'Y'},  {"list", no_argument, 0, 'l'},
        {"roofline", required_argument, 0, 'O'}, {"links-png", required_argument, 0, 'K'},
        {"layers-simulated", required_argument, 0, 'G'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *config = NULL, *output = NULL, *trace_path = NULL, *energy_name = NULL, *planner = NULL;
    const char *max_tiles = NULL;
    const char *frames_dir = NULL, *summary_png = NULL, *inputs = NULL, *outputs = NULL, *roofline = NULL;
    const char *links_png = NULL;
    uint64_t frame_every = 0, trace_bytes = 0, layers_sim = 0;
    bool view = false;
    int format = TS_FMT_TEXT;
    bool quiet = false;
    cli_sets sets = {0};
    ts_run_opts ro = {0};
    bool max_given = false;
    int c, rc = TS_EXIT_OK;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:o:f:s:j:qh", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'c': config = optarg; break;
        case 'o': output = optarg; break;
        case 'f':
            format = ts_format_parse(optarg);
            if (format < 0) {
                cli_sets_free(&sets);
                return cli_usage_error("unknown report format '%s' (text, json or csv)", optarg);
            }
            break;
        case 'T': trace_path = optarg; break;
        case 'X': inputs = optarg; break;
        case 'Y': outputs = optarg; break;
        case 'F': frames_dir = optarg; break;
        case 'P': summary_png = optarg; break;
        case 'O': roofline = optarg; break;
        case 'K': links_png = optarg; break;
        case 'V': view = true; break;
        case 'Z':
        {
            /* MB, decimals allowed down to 1 kB (small limits serve tests of the bound) */
            char *endp = NULL;
            errno = 0;
            double mb = strtod(optarg, &endp);
            if (endp == optarg || *endp || errno || !(mb >= 0.001) || mb > 1000000) {
                cli_sets_free(&sets);
                return cli_usage_error("--trace-limit takes a size in MB from 0.001 to 1000000, got '%s'", optarg);
            }
            trace_bytes = (uint64_t)(mb * 1e6 + 0.5);
            break;
        }
        case 'N':
            if (parse_u64(optarg, &v) || v == 0) {
                cli_sets_free(&sets);
                return cli_usage_error("--frame-every takes a positive number of cycles, got '%s'", optarg);
            }
            frame_every = v;
            break;
        case 's':
            if (!strchr(optarg, '=')) {
                cli_sets_free(&sets);
                return cli_usage_error("--set takes KEY=VALUE, got '%s'", optarg);
            }
            cli_sets_push(&sets, optarg);
            break;
        case 'E': energy_name = optarg; break;
        case 'R':
            if (cli_check_planner(optarg)) {
                cli_sets_free(&sets);
                return TS_EXIT_INPUT;
            }
            planner = optarg;
            break;
        case 'G':
            if (parse_u64(optarg, &layers_sim) || layers_sim < 2 || layers_sim > 4096) {
                cli_sets_free(&sets);
                return cli_usage_error("--layers-simulated takes 2 to 4096 (the per-layer figure is the difference "
                                       "of K and K - 1 layers), not '%s'", optarg);
            }
            break;
        case 'U':
            if (cli_check_setting("max_tiles", optarg)) {
                cli_sets_free(&sets);
                return TS_EXIT_INPUT;
            }
            max_tiles = optarg;
            break;
        case 'j':
            if (parse_u64(optarg, &v) || v < 1 || v > 1024) {
                cli_sets_free(&sets);
                return cli_usage_error("--threads takes a number from 1 to 1024, got '%s'", optarg);
            }
            ro.threads = (int)v;
            break;
        case 'L': ro.lockstep = true; break;
        case 'W': ro.warn = true; break;
        case 'M':
            if (parse_u64(optarg, &v)) {
                cli_sets_free(&sets);
                return cli_usage_error("--max-cycles takes a number of cycles (0 for no limit), got '%s'", optarg);
            }
            ro.max_cycles = v;
            max_given = true;
            break;
        case 'H':
            if (parse_u64(optarg, &v) || v == 0) {
                cli_sets_free(&sets);
                return cli_usage_error("--hang-cycles takes a positive number, got '%s'", optarg);
            }
            ro.hang_cycles = v;
            break;
        case 'q': quiet = true; break;
        case 'h': fputs(run_usage, stdout); cli_sets_free(&sets); return 0;
        case 'l': cli_sets_free(&sets); return list_workloads();
        case ':': cli_sets_free(&sets); return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cli_sets_free(&sets); return cli_usage_error("unknown option '%s' (see 'tessera run --help')", argv[optind - 1]);
        }
    }
    if (frame_every && !frames_dir && !view && !trace_path) {
        cli_sets_free(&sets);
        return cli_usage_error("--frame-every needs --frames DIR, --view or --trace FILE");
    }
    if (trace_bytes && !trace_path) {
        cli_sets_free(&sets);
        return cli_usage_error("--trace-limit needs --trace FILE");
    }
    const char *workload = NULL;
    if (optind < argc)
        workload = argv[optind++];
    if (optind < argc) {
        cli_sets_free(&sets);
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    }

    ts_err err;
    ts_err_init(&err);
    ts_config *cfg = NULL;
    ts_program *prog = NULL;
    ts_lowered *lowered = NULL;
    ts_lower_setting settings[2];
    ts_lower_opts lopts = cli_lower_opts(settings, planner, max_tiles);
    ts_energy_table *energy = NULL;
    ts_trace *trace = NULL;
    ts_activity *act = NULL;
    frames fr = {.dir = frames_dir};
    ts_results res;
    bool have_res = false;
    const ts_family *fam = NULL;
    ts_npz given = {0};
    cli_outputs co = {NULL, outputs != NULL};
    cli_layers lay = {0};

    /* Pick the family: from the config, else from the workload, else the first registered. */
    if (!config) {
        if (workload) {
            fam = cli_program_family(workload, &err);
            if (!fam) {
                cli_workload_hint(workload, &err);
                rc = cli_fail(&err);
                goto out;
            }
        } else {
            fam = ts_family_at(0);
            if (!fam) {
                rc = cli_usage_error("this build has no chip family");
                goto out;
            }
        }
        config = fam->default_config;
        if (!config) {
            rc = cli_usage_error("family '%s' has no default config: give -c CONFIG", fam->name);
            goto out;
        }
    }
    /* Outputs that cannot be written fail now, not after the simulation (the trace opens below). */
    if (ts_check_writable(output, &err) != TS_OK || ts_check_writable(summary_png, &err) != TS_OK ||
        ts_check_writable(roofline, &err) != TS_OK || ts_check_writable(links_png, &err) != TS_OK ||
        ts_check_writable(outputs, &err) != TS_OK || (inputs && ts_npz_read(inputs, &given, &err) != TS_OK)) {
        rc = cli_fail(&err);
        goto out;
    }
    if (cli_load_config(&cfg, config, sets.v, sets.n, &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    fam = ts_family_find(ts_config_arch(cfg));
    if (links_png && strcmp(fam->name, "wse")) {
        rc = cli_usage_error("--links-png draws a mesh's links: the wafer's (wse), not %s's", fam->name);
        goto out;
    }
    if (!workload)
        workload = fam->default_workload;
    if (!workload) {
        rc = cli_usage_error("family '%s' has no default workload: give one", fam->name);
        goto out;
    }
    ts_lower_values vals = {inputs ? &given : NULL, inputs, inputs != NULL};
    if (layers_sim) { /* the run of one layer fewer first; then this one with K layers */
        if (cli_load_energy(&energy, cfg, energy_name, &err) != TS_OK ||
            cli_layers_prepare(&lay, workload, layers_sim, cfg, fam, &lopts, energy, &ro, &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        workload = lay.spec;
    }
    if (cli_load_workload_values(&prog, workload, cfg, fam, &lopts, &vals, &lowered, &err) != TS_OK ||
        (!energy && cli_load_energy(&energy, cfg, energy_name, &err) != TS_OK) ||
        ts_lowered_prepare(lowered, &ro, &err) != TS_OK) {
        cli_workload_hint(workload, &err);
        rc = cli_fail(&err);
        goto out;
    }
    if (trace_path) {
        ts_info info = {0};
        if (fam->info(ts_config_data(cfg), &info, &err) != TS_OK ||
            ts_trace_open(&trace, trace_path, info.clock_hz, trace_bytes, &err) != TS_OK ||
            ts_lowered_trace_layers(lowered, trace, &err) != TS_OK || /* the chip's slices name their layer */
            ts_act_trace_create(&fr.at, trace, &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        ro.trace = trace;
    }
    if (view && ts_view_open(&fr.view, "tessera", &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (frames_dir || summary_png || view || trace) {
        if (frames_dir && mkdir(frames_dir, 0777) && errno != EEXIST) {
            ts_err_set(&err, TS_EIO, "cannot create %s: %s", frames_dir, strerror(errno));
            rc = cli_fail(&err);
            goto out;
        }
        /* without frames, one window per 65536 cycles keeps the sampler's cost low */
        uint64_t window = frames_dir || view || trace ? (frame_every ? frame_every : 1000) : 65536;
        if (ts_activity_create(&act, window, on_frame, &fr, &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        char title[200];
        snprintf(title, sizeof title, "%s on %s", workload, ts_config_name(cfg));
        ts_activity_set_title(act, title);
        ro.activity = act;
    }
    if (!max_given) { /* a program that never ends stops, with its own message */
        ro.max_cycles = TS_SIM_DEFAULT_MAX_CYCLES;
        ro.max_cycles_hint = "a longer run needs --max-cycles N (0 for no limit)";
    }
    progress pr = {.enabled = !quiet && isatty(2), .max = max_given ? ro.max_cycles : 0};
    clock_gettime(CLOCK_MONOTONIC, &pr.start);
    ro.progress = on_progress;
    ro.progress_ud = &pr;
    if (outputs && !lowered) {
        rc = cli_usage_error("--outputs needs a model, not the program '%s'", workload);
        goto out;
    }
    co.lowered = lowered;
    ro.finished = cli_read_outputs;
    ro.finished_ud = &co;
    ts_status st = ts_sim_run_owned(fam, cfg, &prog, &ro, energy, &res, &err); /* prog destroyed once loaded */
    if (pr.shown)
        fputs("\r\033[K", stderr);
    if (st != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    have_res = true;
    if (ts_lowered_attribute(lowered, &res, energy, &err) != TS_OK || /* a lowered model's layers */
        cli_layers_finish(&lay, &res, &err) != TS_OK || cli_report_outputs(lowered, &res, outputs, &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (act && !ts_activity_nunits(act)) {
        ts_err_set(&err, TS_EINPUT, "family '%s' does not report activity yet (--frames, --summary-png, --view, --trace)", fam->name);
        rc = cli_fail(&err);
        goto out;
    }
    if (summary_png) {
        ts_viz_image img = {0};
        ts_viz_geom g;
        ts_viz_geometry(act, &g);
        ts_viz_port fit;
        ts_viz_port_fit(act, &fit); /* a layout drawn in blocks (the wafer): the units that ran */
        ts_status vs = ts_viz_render_summary(&img, act, g.agg > 1 ? &fit : NULL, &err);
        if (vs == TS_OK)
            vs = ts_viz_png_write(&img, summary_png, &err);
        ts_viz_image_free(&img);
        if (vs != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
    }
    if ((roofline && write_roofline(&res, roofline, &err) != TS_OK) ||
        (links_png && write_links(&res, cfg, links_png, &err) != TS_OK) ||
        ts_report_write(&res, (ts_format)format, output, &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (trace) {
        ts_trace *t = trace;
        trace = NULL;
        trace_layers(t, &res);
        ts_act_trace_finish(fr.at);
        uint64_t dropped = ts_trace_dropped(t), limit = ts_trace_limit(t);
        if (ts_trace_close(t, &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        if (dropped) /* the file records it too (otherData.dropped_events) */
            fprintf(stderr, "tessera: warning: trace %s reached its limit of %g MB: %" PRIu64
                    " events were dropped (raise it with --trace-limit MB)\n",
                    trace_path, (double)limit / 1e6, dropped);
    }
out:
    if (trace)
        ts_trace_abort(trace);
    if (have_res)
        ts_results_free(&res);
    ts_activity_destroy(act);
    ts_act_trace_destroy(fr.at);
    ts_viz_image_free(&fr.img);
    ts_view_close(fr.view);
    ts_energy_destroy(energy);
    ts_program_destroy(prog);
    ts_lowered_destroy(lowered);
    ts_npz_free(&given);
    ts_config_destroy(cfg);
    ts_err_free(&err);
    cli_sets_free(&sets);
    cli_layers_free(&lay);
    return rc;
}
