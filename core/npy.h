/* core/npy.h — NumPy arrays in and out: .npy files and .npz archives (docs/values.md).
 *
 * A .npy file is a magic string, a version (1.0, 2.0 or 3.0), a header that is a Python dict
 * literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) and the elements. tessera
 * reads little-endian (or byte-order-free) f32, f16, f64, i8, u8, i32, i64 and bool in C order,
 * of rank 0 to TS_NPY_MAX_RANK; anything else is refused with a message naming the file, the entry
 * and what is wrong ("in.npz: entry 'x': big-endian data ('>f4') is not supported"). A .npz file
 * is a zip archive of .npy entries ("x.npy" is the array "x"), stored or deflated (zlib); zip64
 * size fields, as numpy writes them, are understood.
 *
 * Limits: an array's elements and bytes are checked against core/limit.h (tensor_elems,
 * tensor_bytes) before anything is allocated for it, a file against input_bytes, and a deflated
 * entry is inflated only up to the size its header states, so no header makes the reader take
 * more memory than the limits allow. No input makes it crash (fuzz/fuzz_npy.c).
 *
 * Writing: one array as .npy (format 1.0), or a list as .npz with stored entries and fixed
 * timestamps (the same arrays give the same bytes), written atomically (core/fileio.h).
 */
#ifndef TS_CORE_NPY_H
#define TS_CORE_NPY_H

#include <stddef.h>
#include <stdint.h>
#include "core/buf.h"
#include "core/err.h"

/* The largest rank read or written: the graph IR's (workloads/graph.h TS_GRAPH_MAX_RANK). */
#define TS_NPY_MAX_RANK 8

/* Element types, with their NumPy descr. */
typedef enum ts_npy_dtype {
    TS_NPY_F32, /* '<f4' */
    TS_NPY_F16, /* '<f2' */
    TS_NPY_F64, /* '<f8' */
    TS_NPY_I8,  /* '|i1' */
    TS_NPY_U8,  /* '|u1' */
    TS_NPY_I32, /* '<i4' */
    TS_NPY_I64, /* '<i8' */
    TS_NPY_BOOL, /* '|b1' */
    TS_NPY_DTYPE_COUNT
} ts_npy_dtype;

/* Bytes per element, the descr ("<f4") and a short name ("f32"). */
size_t ts_npy_dtype_size(ts_npy_dtype dt);
const char *ts_npy_dtype_descr(ts_npy_dtype dt);
const char *ts_npy_dtype_name(ts_npy_dtype dt);

/* One array. name and data are owned (ts_free) when the array comes from a reader. */
typedef struct ts_npy_array {
    char *name;                    /* the entry's name without ".npy"; a .npy file's stem */
    ts_npy_dtype dtype;
    int rank;                      /* 0..TS_NPY_MAX_RANK */
    int64_t dims[TS_NPY_MAX_RANK];
    void *data;                    /* elements in C order, host (little-endian) byte order */
    size_t nbytes;                 /* elements x element size */
} ts_npy_array;

/* A list of arrays, in the order of the file. */
typedef struct ts_npz {
    ts_npy_array *v; /* owned */
    size_t n;
} ts_npz;

/* Elements of an array (1 for rank 0). */
uint64_t ts_npy_elems(const ts_npy_array *a);
/* Element i converted to double (bool as 0 or 1, f16 widened). */
double ts_npy_get(const ts_npy_array *a, uint64_t i);

/* Parse one .npy image; file and entry (may be NULL) name it in messages. On success *out owns
 * a copy of the elements and its name is entry's copy (or NULL). */
ts_status ts_npy_parse(const void *data, size_t len, const char *file, const char *entry, ts_npy_array *out,
                       ts_err *err);
/* Parse a .npz image into z (empty first). Entries whose names do not end in ".npy" are refused,
 * so are two entries of one name. */
ts_status ts_npz_parse(const void *data, size_t len, const char *file, ts_npz *z, ts_err *err);
/* Read a file: a .npz archive (by its zip magic) or one .npy array (named after the file's stem). */
ts_status ts_npz_read(const char *path, ts_npz *z, ts_err *err);
/* The array of that name, NULL if none. */
const ts_npy_array *ts_npz_find(const ts_npz *z, const char *name);
/* Free the arrays (z itself is the caller's); NULL-safe. */
void ts_npz_free(ts_npz *z);
void ts_npy_array_free(ts_npy_array *a);

/* Append a .npy image (format 1.0, header padded to 64 bytes) of a to out. */
void ts_npy_encode(const ts_npy_array *a, ts_buf *out);
/* Append a .npz image of the n arrays (entries "<name>.npy", stored) to out. Names must be
 * non-empty and shorter than 65,000 bytes (TS_EINPUT). */
ts_status ts_npz_encode(const ts_npy_array *v, size_t n, ts_buf *out, ts_err *err);
/* Write the arrays to path atomically: a .npz archive, or one .npy when path ends in ".npy" and
 * n is 1. */
ts_status ts_npz_write(const char *path, const ts_npy_array *v, size_t n, ts_err *err);

#endif
