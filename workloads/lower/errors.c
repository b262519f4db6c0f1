/* workloads/lower/errors.c — errors naming an operator (errors.h). */
#include "workloads/lower/errors.h"

#include <stdarg.h>
#include <stdio.h>

ts_status ts_lower_fail(ts_err *err, const ts_graph_node *n, const char *fmt, ...)
{
    char b[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    return ts_err_set(err, TS_EINPUT, "%s '%s': %s", ts_graph_op_name(n->op), n->name, b);
}
