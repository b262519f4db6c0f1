/* workloads/lower/lower.c — the lowering interface's wrapper: load a model, lower it with its
 * family's lowering, and carry the program and the lowering's state to the run and back. */
#include "workloads/lower/lower.h"

#include <string.h>

#include "core/alloc.h"
#include "workloads/workload.h"

struct ts_lowered {
    const ts_lowering *lw; /* borrowed: static */
    void *state;           /* owned by lw */
    ts_program *prog;      /* owned until taken */
};

const char *ts_lower_opts_get(const ts_lower_opts *opts, const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; opts && i < opts->n; i++)
        if (!strcmp(opts->v[i].name, name))
            v = opts->v[i].value;
    return v;
}

void *ts_lower_state_new(size_t size, void **state, ts_err *err)
{
    *state = ts_calloc(1, size);
    if (!*state)
        ts_err_set(err, TS_ENOMEM, "out of memory");
    return *state;
}

ts_status ts_lower_check_setting(const char *name, const char *value, ts_err *err)
{
    const ts_lower_param *first = NULL;
    for (size_t i = 0; ts_lowering_at(i); i++) {
        const ts_lowering *lw = ts_lowering_at(i);
        for (size_t j = 0; j < lw->nparams; j++) {
            const ts_lower_param *p = &lw->params[j];
            if (strcmp(p->name, name))
                continue;
            if (!first)
                first = p;
            ts_err e;
            ts_err_init(&e);
            ts_status rc = p->check(value, &e);
            ts_err_free(&e);
            if (rc == TS_OK)
                return TS_OK;
        }
    }
    if (!first)
        return ts_err_set(err, TS_EINPUT, "no lowering takes the setting '%s'", name);
    return first->check(value, err);
}

ts_status ts_lower_model(const char *path, const ts_config *cfg, const ts_lower_opts *opts, ts_lowered **out,
                         ts_err *err)
{
    *out = NULL;
    const ts_lowering *lw = ts_lowering_find(ts_config_arch(cfg));
    if (!lw)
        return ts_err_set(err, TS_EINPUT, "no lowering for arch '%s' yet", ts_config_arch(cfg));
    ts_lowered *l = ts_calloc(1, sizeof *l);
    if (!l)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    l->lw = lw;
    ts_graph *g = NULL;
    ts_status rc = lw->create(cfg, opts, &l->state, err);
    if (rc == TS_OK)
        rc = ts_wl_load_model(path, NULL, NULL, &g, err);
    if (rc == TS_OK)
        rc = lw->lower(l->state, g, &l->prog, err);
    ts_graph_destroy(g);
    if (rc != TS_OK) {
        ts_lowered_destroy(l);
        return rc;
    }
    *out = l;
    return TS_OK;
}

ts_program *ts_lowered_take_program(ts_lowered *l)
{
    ts_program *p = l->prog;
    l->prog = NULL;
    return p;
}

void *ts_lowered_state(const ts_lowered *l) { return l->state; }

ts_status ts_lowered_prepare(ts_lowered *l, ts_run_opts *ro, ts_err *err)
{
    return l && l->lw->prepare ? l->lw->prepare(l->state, ro, err) : TS_OK;
}

ts_status ts_lowered_attribute(ts_lowered *l, ts_results *res, const ts_energy_table *energy, ts_err *err)
{
    return l && l->lw->attribute ? l->lw->attribute(l->state, res, energy, err) : TS_OK;
}

void ts_lowered_destroy(ts_lowered *l)
{
    if (!l)
        return;
    if (l->state)
        l->lw->destroy(l->state);
    ts_program_destroy(l->prog);
    ts_free(l);
}
