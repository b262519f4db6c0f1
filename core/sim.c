/* core/sim.c — the run loop: create, load, step in windows, watch for hangs, collect, price.
 *
 * The kernel knows no chip. It advances the model in windows of at most `window` cycles so that
 * it can report progress and notice a hang: if the model's work counter does not move for
 * opts->hang_cycles cycles, the run stops with TS_ESIM and the family's description of what every
 * blocked unit waits on.
 */
#include "core/sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/activity.h"
#include "core/alloc.h"

#define TS_DEFAULT_HANG_CYCLES 1000000ull
#define TS_WINDOW_CYCLES 65536ull

/* The last progress is known to lie in cycles (lo, hi], or at hi exactly when exact. */
static ts_status hang_error(const ts_family *fam, ts_model *m, uint64_t now, uint64_t lo, uint64_t hi, bool exact,
                            ts_err *err)
{
    if (exact || lo == hi)
        ts_err_sim(err, -1, (int64_t)now, "no progress since cycle %" PRIu64 " (%" PRIu64 " cycles): the program is hung",
                   hi, now - hi);
    else
        ts_err_sim(err, -1, (int64_t)now,
                   "no progress for at least %" PRIu64 " cycles: the program is hung (its last progress was between "
                   "cycles %" PRIu64 " and %" PRIu64 ")", now - hi, lo, hi);
    if (fam->blocked) {
        ts_buf b = TS_BUF_INIT;
        fam->blocked(m, &b);
        ts_err_append_detail(err, ts_buf_str(&b));
        ts_buf_free(&b);
    }
    return TS_ESIM;
}

/* The run in windows. The first windows are short (1, 2, 4, ... cycles) and double up to the
 * full window, so a program that stops early (a unit stuck from cycle 2) is placed within a few
 * cycles at the cost of sixteen more calls; after that a window is the hang bound or 65,536
 * cycles, whichever is smaller. */
static ts_status run_loop(const ts_family *fam, ts_model *m, const ts_run_opts *o, ts_err *err)
{
    uint64_t hang = o->hang_cycles ? o->hang_cycles : TS_DEFAULT_HANG_CYCLES;
    uint64_t full = hang < TS_WINDOW_CYCLES ? hang : TS_WINDOW_CYCLES, window = 1;
    ts_step st = {0};
    uint64_t last_work = 0;
    uint64_t seen_lo = 0, seen_hi = 0; /* the last progress lies in (seen_lo, seen_hi] */
    bool exact = true;                 /* ... or at seen_hi exactly (none yet: cycle 0) */
    for (;;) {
        uint64_t start = st.now, limit = st.now + window;
        if (o->max_cycles && limit > o->max_cycles)
            limit = o->max_cycles;
        st.has_work_at = false;
        ts_status rc = fam->step(m, limit, &st, err);
        if (rc != TS_OK)
            return rc;
        if (st.done)
            return TS_OK;
        if (st.work != last_work) {
            last_work = st.work;
            exact = st.has_work_at && st.work_at <= st.now;
            seen_hi = exact ? st.work_at : st.now;
            seen_lo = exact ? seen_hi : start;
        } else if (st.now - seen_hi >= hang) {
            return hang_error(fam, m, st.now, seen_lo, seen_hi, exact, err);
        }
        window = window * 2 < full ? window * 2 : full;
        if (o->max_cycles && st.now >= o->max_cycles && o->max_cycles_hint)
            return ts_err_sim(err, -1, (int64_t)st.now,
                              "reached the default cycle limit of %" PRIu64 " before the program finished: %s",
                              o->max_cycles, o->max_cycles_hint);
        if (o->max_cycles && st.now >= o->max_cycles)
            return ts_err_sim(err, -1, (int64_t)st.now,
                              "cycle limit of %" PRIu64 " reached before the program finished",
                              o->max_cycles);
        if (st.now < limit && !st.done)
            return ts_err_set(err, TS_EINTERNAL,
                              "family '%s' stopped at cycle %" PRIu64 " before limit %" PRIu64
                              " without finishing", fam->name, st.now, limit);
        if (o->progress)
            o->progress(o->progress_ud, st.now);
    }
}

/* What the activity sampler needs to price its windows: the family's results so far. */
typedef struct sim_pricer {
    const ts_family *fam;
    ts_model *m;
    const ts_config *cfg;
    const ts_energy_table *table;
} sim_pricer;

/* The energy of every event so far: the family's collect() on the model as it stands, priced with
 * the run's table, static power left out (the sampler adds it per window). The same figures the
 * report is made of, so the windows add up to the report's energy. */
static ts_status energy_so_far(void *ud, ts_act_energy *out, ts_err *err)
{
    const sim_pricer *p = ud;
    ts_results r;
    ts_results_init(&r);
    if (!r.stats)
        return ts_err_set(err, TS_ENOMEM, "out of memory pricing an activity window");
    ts_status rc = p->fam->collect(p->m, &r, err);
    double static_w = ts_config_static_power(p->cfg) > 0 ? ts_config_static_power(p->cfg) : r.static_w;
    r.static_w = 0;
    if (rc == TS_OK)
        rc = ts_results_price(&r, p->table, err);
    if (rc == TS_OK) {
        out->joules = r.energy_j;
        out->clock_hz = r.clock_hz;
        out->static_w = static_w;
    }
    ts_results_free(&r);
    return rc;
}

void ts_sim_results_peak(const ts_family *fam, const ts_config *cfg, ts_results *res)
{
    res->macs_executed = res->macs; /* a lowered model's attribution sets the useful ones */
    ts_info info = {0};
    ts_err ierr;
    ts_err_init(&ierr);
    if (fam->info && fam->info(ts_config_data(cfg), &info, &ierr) == TS_OK)
        for (size_t k = 0; k < info.npeak && res->npeak < TS_MAX_PEAK; k++) {
            snprintf(res->peak[res->npeak].dtype, sizeof res->peak[0].dtype, "%s", info.peak[k].dtype);
            res->peak[res->npeak++].macs_per_cycle = info.peak[k].macs;
        }
    for (size_t k = 0; k < info.nbw; k++)
        if (info.bw[k].name && (strstr(info.bw[k].name, "sram") || strstr(info.bw[k].name, "memory")))
            res->peak_sram_bytes_per_cycle += info.bw[k].bytes_per_cycle;
    ts_err_free(&ierr);
}

static bool any_packed(const ts_program *p)
{
    for (size_t i = 0; i < p->nstreams; i++)
        if (p->streams[i].packed)
            return true;
    return false;
}

/* The run, of prog (borrowed) or of *own (taken: destroyed once loaded). */
static ts_status sim_run(const ts_family *fam, const ts_config *cfg, const ts_program *prog, ts_program **own,
                         const ts_run_opts *opts, const ts_energy_table *energy, ts_results *res, ts_err *err)
{
    ts_run_opts defaults = {0};
    const ts_run_opts *o = opts ? opts : &defaults;
    if (strcmp(fam->name, ts_config_arch(cfg)))
        return ts_err_set(err, TS_EINPUT, "config '%s' is for arch '%s', not '%s'",
                          ts_config_name(cfg), ts_config_arch(cfg), fam->name);
    if (strcmp(prog->arch, fam->name))
        return ts_err_set(err, TS_EINPUT, "program is for arch '%s', but config '%s' is for '%s'",
                          prog->arch, ts_config_name(cfg), fam->name);
    ts_status rc = ts_program_check_config(prog, ts_config_fingerprint(cfg), ts_config_name(cfg), err);
    if (rc != TS_OK)
        return rc;

    if (!fam->load_owned && any_packed(prog)) {
        if (!own)
            return ts_err_set(err, TS_EINTERNAL, "family '%s' does not load packed streams", fam->name);
        if ((rc = ts_program_unpack(*own, err)) != TS_OK)
            return rc;
    }
    char workload[sizeof res->workload] = "";
    if (prog->workload)
        snprintf(workload, sizeof workload, "%s", prog->workload);

    ts_model *m = NULL;
    rc = fam->create(&m, cfg, o, err);
    if (rc != TS_OK)
        return rc;
    sim_pricer pricer = {fam, m, cfg, energy};
    if (o->activity && energy)
        ts_activity_energy(o->activity, energy_so_far, &pricer);
    if (own && fam->load_owned) { /* a family without it may borrow the program through the run */
        rc = fam->load_owned(m, *own, err);
        ts_program_destroy(*own);
        *own = NULL;
        prog = NULL;
    } else {
        rc = fam->load(m, prog, err);
    }
    if (rc == TS_OK)
        rc = run_loop(fam, m, o, err);
    if (o->activity)
        ts_activity_energy(o->activity, NULL, NULL);
    if (rc == TS_OK) {
        ts_results_init(res); /* creates res->stats */
        if (!res->stats)
            rc = ts_err_set(err, TS_ENOMEM, "out of memory collecting results");
        else
            rc = fam->collect(m, res, err);
        if (rc == TS_OK) {
            snprintf(res->arch, sizeof res->arch, "%s", fam->name);
            snprintf(res->config, sizeof res->config, "%s", ts_config_name(cfg));
            if (!res->workload[0] && workload[0])
                snprintf(res->workload, sizeof res->workload, "%s", workload);
            if (ts_config_static_power(cfg) > 0) /* the config overrides the family's figure */
                res->static_w = ts_config_static_power(cfg);
            ts_sim_results_peak(fam, cfg, res);
            if (energy)
                rc = ts_results_price(res, energy, err);
        }
        if (rc == TS_OK && o->finished)
            rc = o->finished(o->finished_ud, fam, m, err);
        if (rc != TS_OK)
            ts_results_free(res);
    }
    fam->destroy(m);
    if (own) {
        ts_program_destroy(*own);
        *own = NULL;
    }
    return rc;
}

ts_status ts_sim_run(const ts_family *fam, const ts_config *cfg, const ts_program *prog,
                     const ts_run_opts *opts, const ts_energy_table *energy, ts_results *res,
                     ts_err *err)
{
    return sim_run(fam, cfg, prog, NULL, opts, energy, res, err);
}

ts_status ts_sim_run_owned(const ts_family *fam, const ts_config *cfg, ts_program **prog,
                           const ts_run_opts *opts, const ts_energy_table *energy, ts_results *res,
                           ts_err *err)
{
    return sim_run(fam, cfg, *prog, prog, opts, energy, res, err);
}
