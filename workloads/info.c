/* workloads/info.c — the model summary behind `tessera info MODEL`. */
#include "workloads/info.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/units.h"
#include "workloads/workload.h"

static void shape_json(const ts_graph_tensor *t, ts_buf *b)
{
    ts_buf_putc(b, '[');
    for (int i = 0; i < t->rank; i++)
        ts_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    ts_buf_putc(b, ']');
}

static void shape_text(const ts_graph_tensor *t, ts_buf *b)
{
    ts_buf_putc(b, '[');
    for (int i = 0; i < t->rank; i++)
        ts_buf_printf(b, "%s%lld", i ? "x" : "", (long long)t->dims[i]);
    ts_buf_putc(b, ']');
}

/* Tensors of the graph's interface: data inputs (want_out false) or outputs. */
static void io_json(const ts_graph *g, bool want_out, ts_buf *b)
{
    bool first = true;
    ts_buf_putc(b, '[');
    for (size_t i = 0; i < ts_graph_tensor_count(g); i++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)i);
        if (want_out ? !t->is_output : t->kind != TS_TENSOR_INPUT)
            continue;
        ts_buf_puts(b, first ? "{\"name\": " : ", {\"name\": ");
        first = false;
        ts_buf_json_str(b, t->name);
        ts_buf_puts(b, ", \"dtype\": ");
        ts_buf_json_str(b, ts_dtype_name(t->dtype));
        ts_buf_puts(b, ", \"shape\": ");
        shape_json(t, b);
        ts_buf_putc(b, '}');
    }
    ts_buf_putc(b, ']');
}

void ts_wl_info_render(const ts_graph *g, bool json, ts_buf *b)
{
    ts_graph_totals t;
    ts_graph_get_totals(g, &t);
    if (json) {
        ts_buf_puts(b, "{\n  \"model\": ");
        ts_buf_json_str(b, ts_graph_name(g));
        ts_buf_printf(b, ",\n  \"nodes\": %llu,\n  \"nodes_by_op\": {", (unsigned long long)t.nodes);
        bool first = true;
        for (int op = 0; op < TS_OP_COUNT; op++) {
            if (!t.nodes_by_op[op])
                continue;
            ts_buf_puts(b, first ? "" : ", ");
            first = false;
            ts_buf_json_str(b, ts_graph_op_name((ts_graph_op)op));
            ts_buf_printf(b, ": %llu", (unsigned long long)t.nodes_by_op[op]);
        }
        ts_buf_printf(b,
                      "},\n  \"macs\": %llu,\n  \"params\": %llu,\n  \"param_bytes\": %llu,\n"
                      "  \"activation_bytes\": %llu,\n  \"input_bytes\": %llu,\n  \"output_bytes\": %llu,\n"
                      "  \"inputs\": ",
                      (unsigned long long)t.macs, (unsigned long long)t.params, (unsigned long long)t.param_bytes,
                      (unsigned long long)t.activation_bytes, (unsigned long long)t.input_bytes,
                      (unsigned long long)t.output_bytes);
        io_json(g, false, b);
        ts_buf_puts(b, ",\n  \"outputs\": ");
        io_json(g, true, b);
        ts_buf_puts(b, "\n}\n");
        return;
    }
    char q[64];
    ts_buf_printf(b, "%s\n", ts_graph_name(g));
    ts_buf_printf(b, "  %-20s %llu\n", "nodes", (unsigned long long)t.nodes);
    for (int op = 0; op < TS_OP_COUNT; op++)
        if (t.nodes_by_op[op])
            ts_buf_printf(b, "    %-18s %llu\n", ts_graph_op_name((ts_graph_op)op),
                          (unsigned long long)t.nodes_by_op[op]);
    ts_buf_printf(b, "  %-20s %llu  (%.4g GMACs)\n", "MACs", (unsigned long long)t.macs, (double)t.macs / 1e9);
    ts_unit_format((double)t.param_bytes, TS_UNIT_BYTES, q, sizeof q);
    ts_buf_printf(b, "  %-20s %llu  (%s)\n", "parameters", (unsigned long long)t.params, q);
    ts_unit_format((double)t.activation_bytes, TS_UNIT_BYTES, q, sizeof q);
    ts_buf_printf(b, "  %-20s %llu  (%s)\n", "activation bytes", (unsigned long long)t.activation_bytes, q);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ts_graph_tensor_count(g); i++) {
            const ts_graph_tensor *tt = ts_graph_get_tensor(g, (int)i);
            if (pass ? !tt->is_output : tt->kind != TS_TENSOR_INPUT)
                continue;
            ts_buf_printf(b, "  %-20s %s %s ", pass ? "output" : "input", tt->name, ts_dtype_name(tt->dtype));
            shape_text(tt, b);
            ts_buf_putc(b, '\n');
        }
}

void ts_wl_graph_dump(const ts_graph *g, ts_buf *b)
{
    for (size_t i = 0; i < ts_graph_node_count(g); i++) {
        const ts_graph_node *n = ts_graph_get_node(g, (int)i);
        ts_buf_printf(b, "%4zu %s %s:", i, ts_graph_op_name(n->op), n->name);
        for (size_t j = 0; j < n->nin + n->nout; j++) {
            bool is_in = j < n->nin;
            const ts_graph_tensor *t = ts_graph_get_tensor(g, is_in ? n->in[j] : n->out[j - n->nin]);
            ts_buf_puts(b, j == n->nin ? " -> " : " ");
            ts_buf_puts(b, t->name);
            shape_text(t, b);
            if (t->kind == TS_TENSOR_WEIGHT)
                ts_buf_putc(b, 'w');
            else if (t->kind == TS_TENSOR_CONST)
                ts_buf_putc(b, 'c');
        }
        uint64_t macs = ts_graph_node_macs(g, (int)i);
        if (macs)
            ts_buf_printf(b, "  %llu MACs", (unsigned long long)macs);
        ts_buf_putc(b, '\n');
    }
}

ts_status ts_wl_info(const char *model, const char *inputs, const char *dims, bool json, ts_buf *out, ts_err *err)
{
    ts_graph *g = NULL;
    ts_status st = ts_wl_load_model(model, inputs, dims, &g, err);
    if (st)
        return st;
    ts_wl_info_render(g, json, out);
    ts_graph_destroy(g);
    return out->oom ? ts_err_set(err, TS_ENOMEM, "out of memory") : TS_OK;
}
