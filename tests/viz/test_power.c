/* tests/viz/test_power.c — power per window (priced windows add up to the report's energy), the
 * TSP's east and west stream strips by pixel statistics, and activity traces (one track per PE on
 * a small mesh, per slice on the TSP, per block on a big layout under its size limit). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/act_trace.h"
#include "core/activity.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/program.h"
#include "core/sim.h"
#include "core/trace.h"
#include "viz/render.h"

static ts_program *builtin_program(const ts_family *fam, const char *name)
{
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find(name, &text, &len), 0);
    ts_err e;
    ts_err_init(&e);
    ts_program *p = NULL;
    ck_assert_msg(ts_asm(&p, name, text, len, fam->isa, &e) == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    return p;
}

/* What a run's frames said. */
typedef struct seen {
    double joules, min_watts, clock_hz;
    uint64_t frames, unpriced, bad_watts, flow[TS_ACT_NDIRS];
    uint64_t hash;                 /* FNV-1a of every frame's joules and flows, to compare runs */
    uint64_t bad_strip, strips;    /* flow strips not drawn at their length / drawn */
    ts_viz_image img;
    bool draw;
    ts_act_trace *at;
} seen;

/* Pixels of the network colour in row y of the strip, from x0 for n pixels. */
static uint32_t blue_run(const ts_viz_image *img, uint32_t x0, uint32_t y, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t x = x0; x < x0 + n; x++) {
        const uint8_t *p = img->px + 4 * ((size_t)y * img->w + x);
        k += !memcmp(p, ts_viz_state_rgb[TS_ACT_NETWORK], 3);
    }
    return k;
}

static ts_status on_frame(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    seen *s = ud;
    s->frames++;
    s->unpriced += !f->priced;
    s->joules += f->joules;
    double secs = (double)f->cycles / s->clock_hz;
    s->bad_watts += fabs(f->watts - f->joules / secs) > 1e-9 * (f->watts + 1e-30);
    if (s->frames == 1 || f->watts < s->min_watts)
        s->min_watts = f->watts;
    for (int d = 0; d < TS_ACT_NDIRS; d++)
        s->flow[d] += f->flow[d];
    unsigned char b[sizeof f->joules + sizeof f->flow];
    memcpy(b, &f->joules, sizeof f->joules);
    memcpy(b + sizeof f->joules, f->flow, sizeof f->flow);
    for (size_t i = 0; i < sizeof b; i++)
        s->hash = (s->hash ^ b[i]) * 1099511628211ull;
    if (s->at) {
        ts_status rc = ts_act_trace_frame(s->at, a, f, err);
        if (rc != TS_OK)
            return rc;
    }
    if (!s->draw)
        return TS_OK;
    ts_status rc = ts_viz_render_frame(&s->img, a, f, NULL, err);
    if (rc != TS_OK)
        return rc;
    ts_viz_geom g;
    ts_viz_geometry(a, &g);
    for (int d = 0; d < 2; d++) {
        uint32_t want = ts_viz_flow_len(&g, a, f->flow[d], f->cycles);
        if (f->flow[d] && want < 4)
            want = 4;
        uint32_t y = g.flow_y + (uint32_t)d * TS_VIZ_FLOW_ROW + 3; /* the bar's middle row */
        /* east grows from the west end, west from the east end: the run starts at that end */
        uint32_t got = blue_run(&s->img, g.flow_x, y, g.flow_w);
        uint32_t at_end = d == 0 ? blue_run(&s->img, g.flow_x, y, want)
                                 : blue_run(&s->img, g.flow_x + g.flow_w - want, y, want);
        s->bad_strip += got != want || at_end != want;
        s->strips += want > 0;
    }
    return TS_OK;
}

/* Run a family's default workload with priced windows of `window` cycles. */
static void run_with(const char *family, const char *const *sets, size_t nsets, uint64_t window, bool lockstep,
                     int threads, seen *s, ts_results *res)
{
    const ts_family *fam = ts_family_find(family);
    ck_assert_ptr_nonnull(fam);
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find, .sets = sets, .nsets = nsets};
    ts_config *cfg = NULL;
    ck_assert_msg(ts_config_load(&cfg, fam->default_config, &co, &e) == TS_OK, "%s", e.msg);
    ts_energy_table *t = NULL;
    ck_assert_msg(ts_energy_load(&t, ts_config_energy_table(cfg), ts_builtin_find, &e) == TS_OK, "%s", e.msg);
    ts_program *p = builtin_program(fam, fam->default_workload);
    ts_info info;
    ck_assert_int_eq(fam->info(ts_config_data(cfg), &info, &e), TS_OK);
    s->clock_hz = info.clock_hz;
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, window, on_frame, s, &e), TS_OK);
    ts_run_opts ro = {.activity = a, .lockstep = lockstep, .threads = threads};
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, t, res, &e) == TS_OK, "%s", e.msg);
    ck_assert_double_eq_tol(ts_activity_total_joules(a), s->joules, 1e-12 * s->joules);
    ts_activity_destroy(a);
    ts_program_destroy(p);
    ts_energy_destroy(t);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}

static void run(const char *family, const char *const *sets, size_t nsets, uint64_t window, seen *s,
                ts_results *res)
{
    run_with(family, sets, nsets, window, false, 1, s, res);
}

/* Every window is priced, its watts are its joules over its time, and the windows add up to the
 * report's energy (events priced plus static power x time); with 2 W of static power no window
 * is below 2 W and the report's energy moves by (2 W - the config's own static power) x the run's
 * time, the windows' too. */
static void power_adds_up(const char *family, uint64_t window)
{
    static const char *const sets[] = {"energy.static_power=2 W"};
    seen s = {0}, st = {0};
    ts_results r, rs;
    run(family, NULL, 0, window, &s, &r);
    ck_assert_uint_gt(s.frames, 3);
    ck_assert_uint_eq(s.unpriced, 0);
    ck_assert_uint_eq(s.bad_watts, 0);
    ck_assert(r.energy_j > 0);
    ck_assert_double_eq_tol(s.joules, r.energy_j, 1e-9 * r.energy_j);
    ck_assert(s.min_watts >= 0);
    run(family, sets, 1, window, &st, &rs);
    ck_assert_uint_eq(st.bad_watts, 0);
    ck_assert_double_eq_tol(st.joules, rs.energy_j, 1e-9 * rs.energy_j);
    double secs = (double)rs.cycles / st.clock_hz;
    ck_assert_double_eq_tol(rs.energy_j - r.energy_j, (2.0 - r.static_w) * secs, 1e-9 * r.energy_j);
    ck_assert(st.min_watts >= 2.0 - 1e-9);
    /* the same windows, to the bit, in lockstep and with three host threads */
    seen sl = {0}, s3 = {0};
    ts_results rl, r3;
    run_with(family, NULL, 0, window, true, 1, &sl, &rl);
    run_with(family, NULL, 0, window, false, 3, &s3, &r3);
    ck_assert_uint_eq(sl.frames, s.frames);
    ck_assert_uint_eq(sl.hash, s.hash);
    ck_assert_uint_eq(s3.hash, s.hash);
    ts_results_free(&r);
    ts_results_free(&rs);
    ts_results_free(&rl);
    ts_results_free(&r3);
}

/* The spreading rule on synthetic activity: a family that flushes at a barrier (cycle 40) after
 * unit 0 computed for cycles 0-15 and both units waited until 40, with 30 J spent: the windows of
 * 10 cycles get 20, 10, 0 and 0 J (by the unit-cycles worked in each), plus 1 W of static power;
 * then 8 J spent over cycles 40-60 where nobody worked are spread by cycles, 4 J each. */
typedef struct fake_energy {
    double joules;
} fake_energy;

static ts_status fake_so_far(void *ud, ts_act_energy *out, ts_err *err)
{
    (void)err;
    out->joules = ((fake_energy *)ud)->joules;
    out->clock_hz = 10;
    out->static_w = 1;
    return TS_OK;
}

typedef struct joule_log {
    double j[16];
    int n;
} joule_log;

static ts_status log_joules(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    (void)a;
    (void)err;
    joule_log *l = ud;
    ck_assert(f->priced);
    ck_assert_double_eq_tol(f->watts, f->joules / ((double)f->cycles / 10), 1e-12);
    if (l->n < 16)
        l->j[l->n++] = f->joules;
    return TS_OK;
}

START_TEST(energy_goes_where_units_worked)
{
    ts_err e;
    ts_err_init(&e);
    joule_log l = {0};
    fake_energy fe = {0};
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, 10, log_joules, &l, &e), TS_OK);
    uint32_t x[2] = {0, 1}, y[2] = {0, 0};
    ck_assert_int_eq(ts_activity_layout(a, "two", 2, 2, 1, x, y, &e), TS_OK);
    ts_activity_energy(a, fake_so_far, &fe);
    ts_activity_span(a, 0, TS_ACT_COMPUTE, 0, 15);
    ts_activity_span(a, 0, TS_ACT_SYNC, 15, 40);
    ts_activity_span(a, 1, TS_ACT_SYNC, 0, 40);
    fe.joules = 30;
    ck_assert_int_eq(ts_activity_advance(a, 40, &e), TS_OK);
    ck_assert_int_eq(l.n, 4);
    const double want[4] = {20, 10, 0, 0};
    for (int i = 0; i < 4; i++) /* 10 cycles at 10 Hz: 1 s of 1 W static */
        ck_assert_double_eq_tol(l.j[i], want[i] + 1, 1e-12);
    fe.joules = 38;
    ck_assert_int_eq(ts_activity_finish(a, 60, &e), TS_OK);
    ck_assert_int_eq(l.n, 6);
    ck_assert_double_eq_tol(l.j[4], 4 + 1, 1e-12);
    ck_assert_double_eq_tol(l.j[5], 4 + 1, 1e-12);
    ck_assert_double_eq_tol(ts_activity_total_joules(a), 38 + 6, 1e-12);
    ck_assert_double_eq_tol(ts_activity_seconds(a), 6, 1e-12);
    ts_activity_destroy(a);
    ts_err_free(&e);
}
END_TEST

START_TEST(power_ipu) { power_adds_up("ipu", 97); }
END_TEST
START_TEST(power_tsp) { power_adds_up("tsp", 13); }
END_TEST
START_TEST(power_wse) { power_adds_up("wse", 7); }
END_TEST

/* The TSP's default workload reads from MEM and sends results both ways: every frame's strips are
 * as long as their bytes per cycle over the peak, growing from their own end; the east and west
 * bytes add up to the vectors put on streams (stream register writes x lanes). */
START_TEST(tsp_flow_strips)
{
    seen s = {.draw = true};
    ts_results r;
    run("tsp", NULL, 0, 10, &s, &r);
    ck_assert_uint_eq(s.bad_strip, 0);
    ck_assert_uint_gt(s.strips, 2);
    ck_assert_uint_gt(s.flow[TS_ACT_EAST], 0);
    ck_assert_uint_gt(s.flow[TS_ACT_WEST], 0);
    ck_assert_uint_eq(s.flow[TS_ACT_NORTH] + s.flow[TS_ACT_SOUTH], 0);
    const ts_stat *w = ts_stats_find(r.stats, "streams.values_written"); /* one superlane's vector each */
    ck_assert_ptr_nonnull(w);
    ck_assert_uint_gt(w->u, 0);
    ck_assert_uint_eq(s.flow[TS_ACT_EAST] + s.flow[TS_ACT_WEST], w->u * 16); /* tsp_v1: 16 lanes */
    ts_viz_image_free(&s.img);
    ts_results_free(&r);
}
END_TEST

/* ---- traces ---- */

typedef struct parsed {
    json_t *root;
    size_t tracks, slices, counters, bad_overlap;
    long max_tid;
    double min_last_end, max_last_end; /* over tracks with slices: where their last slice ends */
    long long dropped;
} parsed;

/* Parse a trace; count process 1's tracks, slices and counters, and slices of one track that
 * overlap (they must follow each other). */
static void parse(const char *path, parsed *o)
{
    json_error_t je;
    memset(o, 0, sizeof *o);
    o->root = json_load_file(path, 0, &je);
    ck_assert_msg(o->root != NULL, "%s:%d: %s", path, je.line, je.text);
    json_t *ev = json_object_get(o->root, "traceEvents");
    ck_assert(json_is_array(ev));
    double *last_end = calloc(1 << 20, sizeof *last_end);
    size_t i;
    json_t *x;
    json_array_foreach(ev, i, x) {
        if (json_integer_value(json_object_get(x, "pid")) != 1)
            continue;
        const char *ph = json_string_value(json_object_get(x, "ph"));
        long tid = (long)json_integer_value(json_object_get(x, "tid"));
        if (!strcmp(ph, "M") && !strcmp(json_string_value(json_object_get(x, "name")), "thread_name")) {
            o->tracks++;
            if (tid > o->max_tid)
                o->max_tid = tid;
        } else if (!strcmp(ph, "X")) {
            o->slices++;
            double ts = json_number_value(json_object_get(x, "ts")), dur = json_number_value(json_object_get(x, "dur"));
            ck_assert(tid > 0 && tid < (1 << 20));
            o->bad_overlap += ts + 1e-9 < last_end[tid];
            last_end[tid] = ts + dur;
        } else if (!strcmp(ph, "C")) {
            o->counters++;
        }
    }
    o->min_last_end = 1e300;
    for (long t = 1; t <= o->max_tid && t < (1 << 20); t++)
        if (last_end[t] > 0) {
            if (last_end[t] < o->min_last_end)
                o->min_last_end = last_end[t];
            if (last_end[t] > o->max_last_end)
                o->max_last_end = last_end[t];
        }
    o->dropped = json_integer_value(json_object_get(json_object_get(o->root, "otherData"), "dropped_events"));
    free(last_end);
}

static bool has_track(const parsed *o, const char *name)
{
    json_t *ev = json_object_get(o->root, "traceEvents"), *x;
    size_t i;
    json_array_foreach(ev, i, x) {
        json_t *args = json_object_get(x, "args");
        if (json_integer_value(json_object_get(x, "pid")) == 1 && args &&
            json_string_value(json_object_get(args, "name")) &&
            !strcmp(json_string_value(json_object_get(args, "name")), name))
            return true;
    }
    return false;
}

/* Run a family's default workload writing its activity into a trace. */
static void trace_run(const char *family, const char *path, uint64_t window, seen *s)
{
    const ts_family *fam = ts_family_find(family);
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    ck_assert_msg(ts_config_load(&cfg, fam->default_config, &co, &e) == TS_OK, "%s", e.msg);
    ts_energy_table *t = NULL;
    ck_assert_int_eq(ts_energy_load(&t, ts_config_energy_table(cfg), ts_builtin_find, &e), TS_OK);
    ts_program *p = builtin_program(fam, fam->default_workload);
    ts_info info;
    ck_assert_int_eq(fam->info(ts_config_data(cfg), &info, &e), TS_OK);
    s->clock_hz = info.clock_hz;
    ts_trace *tr = NULL;
    ck_assert_int_eq(ts_trace_open(&tr, path, info.clock_hz, 0, &e), TS_OK);
    ck_assert_int_eq(ts_act_trace_create(&s->at, tr, &e), TS_OK);
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, window, on_frame, s, &e), TS_OK);
    ts_run_opts ro = {.activity = a, .trace = tr};
    ts_results r;
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, t, &r, &e) == TS_OK, "%s", e.msg);
    ts_act_trace_finish(s->at);
    ck_assert_int_eq(ts_trace_close(tr, &e), TS_OK);
    ts_results_free(&r);
    ts_activity_destroy(a);
    ts_program_destroy(p);
    ts_energy_destroy(t);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}

/* The wafer mesh's default workload on wse_32x32: one track per PE, slices in order; the TSP: one
 * track per slice, with the east and west counters; both with power and bandwidth counters. */
START_TEST(trace_per_pe_and_per_slice)
{
    char path[] = "/tmp/ts_trace_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    seen s = {0};
    trace_run("wse", path, 50, &s);
    parsed o;
    parse(path, &o);
    ck_assert_uint_eq(o.tracks, 32 * 32);
    uint32_t bw, bh;
    ts_act_trace_block(s.at, &bw, &bh);
    ck_assert_uint_eq(bw * bh, 1);
    ck_assert(has_track(&o, "unit x 31 y 31"));
    ck_assert_uint_gt(o.slices, 0);
    ck_assert_uint_eq(o.bad_overlap, 0);
    ck_assert_uint_eq(o.counters, 2 * s.frames); /* bandwidth and power per window */
    json_decref(o.root);
    ts_act_trace_destroy(s.at);

    seen t = {0};
    trace_run("tsp", path, 10, &t);
    parse(path, &o);
    ck_assert_uint_eq(o.tracks, 95);
    ck_assert(has_track(&o, "slice x 0") && has_track(&o, "slice x 94"));
    ck_assert_uint_gt(o.slices, 0);
    ck_assert_uint_eq(o.bad_overlap, 0);
    ck_assert_uint_eq(o.counters, 4 * t.frames); /* bandwidth, power, east, west */
    json_decref(o.root);
    ts_act_trace_destroy(t.at);

    /* the IPU: a track per tile, named as the chip's own tracks are ("tile 5") */
    seen u = {0};
    trace_run("ipu", path, 250, &u);
    parse(path, &o);
    ck_assert_uint_eq(o.tracks, 1216);
    ck_assert(has_track(&o, "tile 0") && has_track(&o, "tile 1215"));
    ck_assert(!has_track(&o, "unit x 0 y 0"));
    json_decref(o.root);
    ts_act_trace_destroy(u.at);
    unlink(path);
}
END_TEST

/* A scratch trace file (path filled in) limited to `limit` bytes, its activity tracks in s->at
 * and an activity of `window`-cycle windows feeding them. */
static ts_activity *trace_open_scratch(char *path, uint64_t limit, uint64_t window, seen *s, ts_trace **tr)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_trace_open(tr, path, 1e9, limit, &e), TS_OK);
    s->clock_hz = 1e9;
    ck_assert_int_eq(ts_act_trace_create(&s->at, *tr, &e), TS_OK);
    ts_activity *a = NULL;
    ck_assert_int_eq(ts_activity_create(&a, window, on_frame, s, &e), TS_OK);
    ts_err_free(&e);
    return a;
}

/* A layout of 1,000 x 1,000 units, every unit switching state every window for 40 windows, into
 * a trace limited to 2 MB: 2 MB / 64 KiB = 30 tracks at most, so blocks of 256 x 256 units (16
 * tracks); the file stays under the limit, parses, and every block has slices. */
START_TEST(trace_big_layout_aggregates)
{
    const uint32_t W = 1000, H = 1000, n = W * H;
    const uint64_t limit = 2000000;
    char path[] = "/tmp/ts_trace_XXXXXX";
    ts_err e;
    ts_err_init(&e);
    ts_trace *tr = NULL;
    seen s = {0};
    ts_activity *a = trace_open_scratch(path, limit, 100, &s, &tr);
    uint32_t *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (uint32_t u = 0; u < n; u++) {
        x[u] = u % W;
        y[u] = u / W;
    }
    ck_assert_int_eq(ts_activity_layout(a, "mesh", n, W, H, x, y, &e), TS_OK);
    free(x);
    free(y);
    for (uint64_t k = 0; k < 40; k++) {
        for (uint32_t u = 0; u < n; u += 7) /* a seventh of the units work, the rest idle */
            ts_activity_span(a, u, k % 2 ? TS_ACT_NETWORK : TS_ACT_COMPUTE, k * 100, k * 100 + 100);
        ck_assert_int_eq(ts_activity_advance(a, (k + 1) * 100, &e), TS_OK);
    }
    ck_assert_int_eq(ts_activity_finish(a, 40 * 100, &e), TS_OK);
    ts_act_trace_finish(s.at);
    ck_assert_int_eq(ts_trace_close(tr, &e), TS_OK);
    uint32_t bw, bh;
    ts_act_trace_block(s.at, &bw, &bh);
    ck_assert_uint_eq(bw, 256);
    ck_assert_uint_eq(bh, 256);
    ck_assert_uint_eq(ts_act_trace_tracks(s.at), 16);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_le((uint64_t)st.st_size, limit);
    parsed o;
    parse(path, &o);
    ck_assert_uint_eq(o.tracks, 16);
    ck_assert_uint_eq(o.slices, 16 * 40); /* the busiest state changes every window */
    ck_assert_uint_eq(o.bad_overlap, 0);
    ck_assert(has_track(&o, "unit x 768-999 y 768-999"));
    json_decref(o.root);
    ts_act_trace_destroy(s.at);
    ts_activity_destroy(a);
    ts_err_free(&e);
    unlink(path);
}
END_TEST

/* Numbered units (ts_activity_name_by_index) in blocks: tracks are named by their units' numbers
 * while those make at most four runs, by their cells otherwise. 40 units numbered down 10 columns
 * of 4 into a 2 MB trace (30 tracks at most) go in whole half-columns ("tiles 0-1"); 64 units
 * numbered along 8 rows of 8 into 1 MB (15 tracks) go in whole columns, 8 runs each, so by cells. */
static void numbered_trace(uint32_t cols, uint32_t rows, bool down, uint64_t limit, parsed *o)
{
    const uint32_t n = cols * rows;
    char path[] = "/tmp/ts_trace_XXXXXX";
    ts_err e;
    ts_err_init(&e);
    ts_trace *tr = NULL;
    seen s = {0};
    ts_activity *a = trace_open_scratch(path, limit, 100, &s, &tr);
    uint32_t x[64], y[64];
    for (uint32_t u = 0; u < n; u++) {
        x[u] = down ? u / rows : u % cols;
        y[u] = down ? u % rows : u / cols;
    }
    ck_assert_int_eq(ts_activity_layout(a, "grid", n, cols, rows, x, y, &e), TS_OK);
    ts_activity_group(a, 1, 1, "tile");
    ts_activity_name_by_index(a, "tile", "tiles");
    for (uint32_t u = 0; u < n; u++)
        ts_activity_span(a, u, TS_ACT_COMPUTE, 0, 100);
    ck_assert_int_eq(ts_activity_finish(a, 100, &e), TS_OK);
    ts_act_trace_finish(s.at);
    ck_assert_int_eq(ts_trace_close(tr, &e), TS_OK);
    parse(path, o);
    ts_act_trace_destroy(s.at);
    ts_activity_destroy(a);
    ts_err_free(&e);
    unlink(path);
}

START_TEST(trace_numbered_units)
{
    parsed o;
    numbered_trace(10, 4, true, 2000000, &o);
    ck_assert_uint_eq(o.tracks, 20);
    ck_assert(has_track(&o, "tiles 0-1") && has_track(&o, "tiles 38-39"));
    json_decref(o.root);
    numbered_trace(8, 8, false, 1000000, &o);
    ck_assert_uint_eq(o.tracks, 8);
    ck_assert(has_track(&o, "tile x 0") && has_track(&o, "tile x 7")); /* whole columns: no y */
    json_decref(o.root);
}
END_TEST

/* A long run: 12 x 12 units in blocks of 8 x 8 (a 300 kB limit holds 4 tracks), 50,000 windows of
 * 10 cycles whose busiest state is drawn at random, so slices change all the time: one slice per
 * window would take some 15 MB. The trace coarsens instead: it stays under the limit, drops
 * nothing, and every track's last slice ends at the run's end. */
START_TEST(trace_long_run_coarsens)
{
    const uint32_t W = 12, n = W * W;
    const uint64_t limit = 300000, windows = 50000;
    char path[] = "/tmp/ts_trace_XXXXXX";
    ts_err e;
    ts_err_init(&e);
    ts_trace *tr = NULL;
    seen s = {0};
    ts_activity *a = trace_open_scratch(path, limit, 10, &s, &tr);
    uint32_t x[144], y[144];
    for (uint32_t u = 0; u < n; u++) {
        x[u] = u % W;
        y[u] = u / W;
    }
    ck_assert_int_eq(ts_activity_layout(a, "mesh", n, W, W, x, y, &e), TS_OK);
    static const ts_act_state st[3] = {TS_ACT_COMPUTE, TS_ACT_NETWORK, TS_ACT_MEMORY};
    uint64_t rng = 12345;
    for (uint64_t k = 0; k < windows; k++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        ts_act_state s0 = st[(rng >> 33) % 3];
        for (uint32_t u = 0; u < n; u++)
            ts_activity_span(a, u, s0, k * 10, k * 10 + 10);
        ck_assert_int_eq(ts_activity_advance(a, (k + 1) * 10, &e), TS_OK);
    }
    ck_assert_int_eq(ts_activity_finish(a, windows * 10, &e), TS_OK);
    ts_act_trace_finish(s.at);
    ck_assert_int_eq(ts_trace_close(tr, &e), TS_OK);
    ck_assert_uint_eq(ts_act_trace_tracks(s.at), 4);
    ck_assert_uint_ge(ts_act_trace_merge(s.at), 64);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_le((uint64_t)sb.st_size, limit);
    parsed o;
    parse(path, &o);
    ck_assert_int_eq(o.dropped, 0);
    ck_assert_uint_eq(o.tracks, 4);
    ck_assert_uint_eq(o.bad_overlap, 0);
    ck_assert_uint_gt(o.slices, 500);
    double end_us = (double)(windows * 10) / 1e3; /* 1 GHz: a cycle is 1 ns */
    ck_assert_double_eq_tol(o.min_last_end, end_us, 1e-6);
    ck_assert_double_eq_tol(o.max_last_end, end_us, 1e-6);
    json_decref(o.root);
    ts_act_trace_destroy(s.at);
    ts_activity_destroy(a);
    ts_err_free(&e);
    unlink(path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("power");
    TCase *c = tcase_create("power");
    tcase_set_timeout(c, 240);
    tcase_add_test(c, energy_goes_where_units_worked);
    tcase_add_test(c, power_ipu);
    tcase_add_test(c, power_tsp);
    tcase_add_test(c, power_wse);
    tcase_add_test(c, tsp_flow_strips);
    suite_add_tcase(s, c);
    c = tcase_create("trace");
    tcase_set_timeout(c, 240);
    tcase_add_test(c, trace_per_pe_and_per_slice);
    tcase_add_test(c, trace_big_layout_aggregates);
    tcase_add_test(c, trace_numbered_units);
    tcase_add_test(c, trace_long_run_coarsens);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
