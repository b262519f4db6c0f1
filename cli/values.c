/* cli/values.c — a run's values: the outputs read back after the run, into the report and an
 * archive (docs/values.md). */
#include "cli/lowering.h"

#include <stdio.h>

#include "core/npy.h"

ts_status cli_read_outputs(void *ud, const struct ts_family *fam, ts_model *m, ts_err *err)
{
    cli_outputs *o = ud;
    if (!o->lowered || (!o->required && !ts_lowered_reads_outputs(o->lowered)))
        return TS_OK;
    if (o->required)
        return ts_lowered_read_outputs(o->lowered, fam, m, err);
    /* for the report only: a run that cannot read its outputs back still reports the rest */
    ts_err e;
    ts_err_init(&e);
    if (ts_lowered_read_outputs(o->lowered, fam, m, &e) != TS_OK) {
        char line[1400];
        ts_err_format(&e, line, sizeof line);
        fprintf(stderr, "tessera: warning: the outputs were not read back: %s\n", line);
        ts_lowered_clear_outputs(o->lowered);
    }
    ts_err_free(&e);
    return TS_OK;
}

ts_status cli_report_outputs(const ts_lowered *l, ts_results *res, const char *path, ts_err *err)
{
    const ts_npz *z = l ? ts_lowered_outputs(l) : NULL;
    for (size_t i = 0; z && i < z->n; i++) {
        const ts_npy_array *a = &z->v[i];
        ts_status rc = ts_results_output(res, a->name, a->rank, a->dims, a->data, ts_npy_elems(a), err);
        if (rc != TS_OK)
            return rc;
    }
    if (!path)
        return TS_OK;
    if (!z || !z->n)
        return ts_err_set(err, TS_EINPUT, "--outputs needs a model whose outputs the lowering reads back");
    return ts_npz_write(path, z->v, z->n, err);
}
