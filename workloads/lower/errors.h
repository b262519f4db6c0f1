/* workloads/lower/errors.h — the errors a lowering gives about one operator of the graph. Every
 * lowering names the operator the same way, by its op and its name, then says what is wrong:
 * "Conv 'conv1': groups and dilations are not lowered". */
#ifndef TS_WORKLOADS_LOWER_ERRORS_H
#define TS_WORKLOADS_LOWER_ERRORS_H

#include "core/err.h"
#include "workloads/graph.h"

/* TS_EINPUT with the message "<Op> '<name>': " followed by fmt's text (err may be NULL). */
ts_status ts_lower_fail(ts_err *err, const ts_graph_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
