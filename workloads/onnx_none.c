/* workloads/onnx_none.c — the ONNX importer of a tessera built without protobuf-c. */
#include "workloads/onnx.h"

#include <string.h>

bool ts_onnx_available(void)
{
    return false;
}

ts_status ts_onnx_load(const char *path, const ts_onnx_opts *opts, ts_graph **out, ts_err *err)
{
    (void)opts;
    *out = NULL;
    return ts_err_at(err, TS_EINPUT, path, 0, 0, "this tessera was built without ONNX support");
}

ts_status ts_onnx_load_mem(const void *data, size_t len, const char *name, const ts_onnx_opts *opts,
                           ts_graph **out, ts_err *err)
{
    (void)data;
    (void)len;
    return ts_onnx_load(name, opts, out, err);
}

ts_status ts_onnx_load_hooked(const char *path, const ts_onnx_opts *opts, const ts_onnx_hook *hook, ts_graph **out,
                              ts_err *err)
{
    (void)hook;
    return ts_onnx_load(path, opts, out, err);
}
