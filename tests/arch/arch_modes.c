/* tests/arch/arch_modes.c — see arch_modes.h. */
#include "tests/arch/arch_modes.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/report.h"

const arch_mode arch_modes[ARCH_NMODES] = {
    [ARCH_FAST] = {"fast", false, 1},
    [ARCH_LOCKSTEP] = {"lockstep", true, 1},
    [ARCH_THREADS2] = {"fast on 2 threads", false, 2},
    [ARCH_THREADS3] = {"fast on 3 threads", false, 3},
    [ARCH_LOCKSTEP_THREADS2] = {"lockstep on 2 threads", true, 2},
    [ARCH_LOCKSTEP_THREADS3] = {"lockstep on 3 threads", true, 3},
};

unsigned arch_modes_default = ARCH_MODES_ALL;
unsigned arch_modes_address;

bool arch_tsan(void)
{
    const char *san = getenv("TS_SANITIZER");
    return san && !strcmp(san, "thread");
}

/* The kernel's figures (core/sim.c): a hang is this many cycles without work; steps of at most
 * this many cycles. */
#define HANG_CYCLES 1000000ull
#define WINDOW_CYCLES 65536ull

/* The kernel's loop (core/sim.c run_loop) with the same messages, so that a run here fails where
 * and as `tessera run` would; written out because the kernel destroys the model, which tests read
 * after the run. */
static ts_status run_loop(const ts_family *fam, ts_model *m, const ts_run_opts *o, ts_err *err)
{
    uint64_t hang = o->hang_cycles ? o->hang_cycles : HANG_CYCLES;
    uint64_t window = hang < WINDOW_CYCLES ? hang : WINDOW_CYCLES;
    ts_step st = {0};
    uint64_t last_work = 0, last_work_cycle = 0;
    bool first = true;
    for (;;) {
        uint64_t limit = st.now + window;
        if (o->max_cycles && limit > o->max_cycles)
            limit = o->max_cycles;
        ts_status rc = fam->step(m, limit, &st, err);
        if (rc != TS_OK || st.done)
            return rc;
        if (first || st.work != last_work) {
            last_work = st.work;
            last_work_cycle = st.now;
            first = false;
        } else if (st.now - last_work_cycle >= hang) {
            ts_err_sim(err, -1, (int64_t)st.now,
                       "no progress for %" PRIu64 " cycles (since cycle %" PRIu64 "): the program is hung",
                       st.now - last_work_cycle, last_work_cycle);
            if (fam->blocked) {
                ts_buf b = TS_BUF_INIT;
                fam->blocked(m, &b);
                ts_err_append_detail(err, ts_buf_str(&b));
                ts_buf_free(&b);
            }
            return TS_ESIM;
        }
        if (o->max_cycles && st.now >= o->max_cycles)
            return ts_err_sim(err, -1, (int64_t)st.now,
                              "cycle limit of %" PRIu64 " reached before the program finished", o->max_cycles);
        if (st.now < limit)
            return ts_err_set(err, TS_EINTERNAL,
                              "family '%s' stopped at cycle %" PRIu64 " before limit %" PRIu64 " without finishing",
                              fam->name, st.now, limit);
    }
}

/* Collect, name and price the results as ts_sim_run does. */
static ts_status collect(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                         arch_run *out)
{
    ts_results *r = &out->r;
    ts_results_init(r);
    if (!r->stats)
        return ts_err_set(&out->err, TS_ENOMEM, "out of memory collecting results");
    ts_status rc = fam->collect(out->m, r, &out->err);
    if (rc != TS_OK)
        return rc;
    snprintf(r->arch, sizeof r->arch, "%s", fam->name);
    snprintf(r->config, sizeof r->config, "%s", ts_config_name(cfg));
    if (!r->workload[0] && p->workload)
        snprintf(r->workload, sizeof r->workload, "%s", p->workload);
    if (ts_config_static_power(cfg) > 0)
        r->static_w = ts_config_static_power(cfg);
    ts_sim_results_peak(fam, cfg, r);
    return opts && opts->energy ? ts_results_price(r, opts->energy, &out->err) : TS_OK;
}

ts_status arch_run_mode(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                        bool lockstep, int threads, arch_run *out)
{
    memset(out, 0, sizeof *out);
    ts_err_init(&out->err);
    out->fam = fam;
    ts_run_opts o = opts ? opts->run : (ts_run_opts){0};
    o.lockstep = lockstep;
    o.threads = threads;
    o.trace = NULL;
    o.activity = NULL;
    o.progress = NULL;
    ts_status rc = TS_OK;
    out->stage = "input";
    if (strcmp(fam->name, ts_config_arch(cfg)))
        rc = ts_err_set(&out->err, TS_EINPUT, "config '%s' is for arch '%s', not '%s'", ts_config_name(cfg),
                        ts_config_arch(cfg), fam->name);
    else if (strcmp(p->arch, fam->name))
        rc = ts_err_set(&out->err, TS_EINPUT, "program is for arch '%s', but config '%s' is for '%s'", p->arch,
                        ts_config_name(cfg), fam->name);
    else
        rc = ts_program_check_config(p, ts_config_fingerprint(cfg), ts_config_name(cfg), &out->err);
    if (rc == TS_OK) {
        out->stage = "create";
        if ((rc = fam->create(&out->m, cfg, &o, &out->err)) != TS_OK)
            out->m = NULL; /* a family frees what it made when create fails */
    }
    if (rc == TS_OK) {
        out->stage = "load";
        rc = fam->load(out->m, p, &out->err);
    }
    if (rc == TS_OK) {
        out->stage = "run";
        rc = run_loop(fam, out->m, &o, &out->err);
    }
    if (rc == TS_OK) {
        out->stage = "collect";
        if ((rc = collect(fam, cfg, p, opts, out)) != TS_OK)
            ts_results_free(&out->r);
    }
    out->rc = rc;
    if (rc == TS_OK) {
        out->stage = NULL;
        ts_report_json(&out->r, &out->text);
        if (opts && opts->state)
            opts->state(out->m, opts->ud, &out->text);
    } else {
        ts_err_format(&out->err, out->errline, sizeof out->errline);
        ts_buf_printf(&out->text, "%s failed: %s: %s\n", out->stage, ts_status_name(rc), out->errline);
        if (out->err.detail)
            ts_buf_puts(&out->text, out->err.detail);
    }
    return rc;
}

void arch_run_free(arch_run *r)
{
    if (r->m)
        r->fam->destroy(r->m);
    ts_results_free(&r->r);
    ts_err_free(&r->err);
    ts_buf_free(&r->text);
    memset(r, 0, sizeof *r);
}

static size_t indent(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && s[i] == ' ')
        i++;
    return i;
}

/* Where the line at s in a JSON report lies: the keys of the members that enclose it ("stats /
 * x.y / table / rows"), found from the indentation of the lines above. Empty for other text. */
static void json_path(const char *text, const char *s, ts_buf *out)
{
    const char *keys[32];
    size_t klen[32], nk = 0;
    size_t ind = indent(s, strcspn(s, "\n")) + 1;
    for (;;) {
        size_t len = strcspn(s, "\n"), i = indent(s, len);
        if (i < ind && i < len && s[i] == '"' && nk < 32) {
            ind = i;
            keys[nk] = s + i + 1;
            klen[nk] = strcspn(keys[nk], "\"\n");
            nk++;
        }
        if (s == text || !ind)
            break;
        for (s--; s > text && s[-1] != '\n'; s--) /* the line above */
            ;
    }
    while (nk--)
        ts_buf_printf(out, "%.*s%s", (int)klen[nk], keys[nk], nk ? " / " : "");
}

/* One line of a difference: the mode's name padded to w, the line (or "(end)") without its
 * indentation, shortened. */
static void diff_line(ts_buf *diff, const char *mode, int w, const char *s)
{
    const size_t most = 400; /* a table row may be long */
    while (s && *s == ' ')
        s++;
    size_t len = s ? strcspn(s, "\n") : 0;
    ts_buf_printf(diff, "  %-*s %.*s%s\n", w, mode, s ? (int)(len < most ? len : most) : 5, s ? s : "(end)",
                  len > most ? "..." : "");
}

/* Compare run b (mode mb) with the reference a (mode ma); on a difference describe the first
 * differing line in diff (when not NULL) and return false. */
static bool same_run(const arch_mode *ma, const arch_run *a, const arch_mode *mb, const arch_run *b, ts_buf *diff)
{
    const char *ta = ts_buf_str(&a->text), *tb = ts_buf_str(&b->text);
    if (!strcmp(ta, tb))
        return true;
    if (!diff)
        return false;
    const char *sa = ta, *sb = tb;
    size_t n = 1;
    for (;;) { /* to the first line that differs */
        size_t la = strcspn(sa, "\n"), lb = strcspn(sb, "\n");
        if (la != lb || memcmp(sa, sb, la) || !sa[la] || !sb[lb])
            break;
        sa += la + 1;
        sb += lb + 1;
        n++;
    }
    ts_buf_printf(diff, "%s differs from %s (%s run, %s run) at line %zu", mb->name, ma->name,
                  a->rc == TS_OK ? "a successful" : "a failed", b->rc == TS_OK ? "a successful" : "a failed", n);
    ts_buf path = TS_BUF_INIT;
    if (*sa && a->rc == TS_OK)
        json_path(ta, sa, &path);
    if (path.len)
        ts_buf_printf(diff, " (%s)", ts_buf_str(&path));
    ts_buf_free(&path);
    ts_buf_puts(diff, ":\n");
    int w = (int)(strlen(ma->name) > strlen(mb->name) ? strlen(ma->name) : strlen(mb->name));
    diff_line(diff, ma->name, w, *sa ? sa : NULL);
    diff_line(diff, mb->name, w, *sb ? sb : NULL);
    return false;
}

bool arch_modes_compare(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                        arch_run *out, ts_buf *diff)
{
    unsigned modes = opts && opts->modes ? opts->modes : arch_modes_default;
    const char *san = getenv("TS_SANITIZER");
    if (!(opts && opts->modes) && arch_modes_address && san && !strcmp(san, "address"))
        modes = arch_modes_address; /* arch_modes.h */
    /* Under the sanitizers (scripts/test.sh sets TS_SANITIZED) the default set leaves out lockstep on
     * one thread where it runs lockstep on threads or other modes: the lockstep code runs there on
     * threads in the tests that take every mode, and the normal build compares every mode the test
     * asks for. A test that names its modes (opts->modes) gets them all. docs/testing.md. */
    if (!(opts && opts->modes) && getenv("TS_SANITIZED") && (modes & ~(1u << ARCH_FAST | 1u << ARCH_LOCKSTEP)))
        modes &= ~(1u << ARCH_LOCKSTEP);
    /* Under ThreadSanitizer (scripts/test.sh sets TS_SANITIZER=thread) only the modes on threads
     * run, the first of them the reference the others are compared with, and of the fast and of
     * the lockstep modes on threads the one on 3 threads where the set has it, not the one on 2
     * (3 bands run the code 2 do, and a middle band beside two others): a run on one thread has
     * no race to find, and the normal and ASan + UBSan builds compare every mode with the one
     * thread's. A set without threads runs its reference alone. docs/testing.md. */
    size_t first = 0;
    if (arch_tsan()) {
        modes &= ~(1u << ARCH_FAST | 1u << ARCH_LOCKSTEP);
        if (modes & 1u << ARCH_THREADS3)
            modes &= ~(1u << ARCH_THREADS2);
        if (modes & 1u << ARCH_LOCKSTEP_THREADS3)
            modes &= ~(1u << ARCH_LOCKSTEP_THREADS2);
        while (modes && !(modes & 1u << first))
            first++;
    }
    const arch_mode *ref = &arch_modes[first];
    arch_run_mode(fam, cfg, p, opts, ref->lockstep, ref->threads, out);
    bool same = true;
    for (size_t i = first + 1; i < ARCH_NMODES && same; i++) {
        if (!(modes & 1u << i))
            continue;
        arch_run o;
        arch_run_mode(fam, cfg, p, opts, arch_modes[i].lockstep, arch_modes[i].threads, &o);
        same = same_run(ref, out, &arch_modes[i], &o, diff);
        arch_run_free(&o);
    }
    return same;
}

void arch_modes_check(const ts_family *fam, const ts_config *cfg, const ts_program *p, const arch_opts *opts,
                      arch_run *out)
{
    ts_buf diff = TS_BUF_INIT;
    if (!arch_modes_compare(fam, cfg, p, opts, out, &diff))
        ck_abort_msg("%s on %s: %s", fam->name, ts_config_name(cfg), ts_buf_str(&diff));
    ts_buf_free(&diff);
}
