/* core/ytree.h — a YAML document as a small tree of scalars, maps and sequences with positions.
 *
 * The front of every YAML reader (chip configs, workloads, sweep specs): libyaml's events become
 * nodes that carry their file, line and column (1-based; libyaml counts from 0), so a reader that
 * walks the tree reports `file:line:col: what is wrong`. Anchors and aliases are refused. A map
 * holds its keys and values alternating in kids; a key is always a scalar.
 *
 * The readers walk a node's fields directly (they are read-only to them); only this module
 * creates and changes nodes. A tree is owned by its root: ts_ynode_destroy frees it all.
 */
#ifndef TS_CORE_YTREE_H
#define TS_CORE_YTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

typedef enum ts_ykind { TS_Y_SCALAR, TS_Y_MAP, TS_Y_SEQ } ts_ykind;

typedef struct ts_ynode {
    ts_ykind kind;
    const char *file;       /* borrowed: the name the node was made with, for messages */
    int line, col;          /* 1-based */
    char *text;             /* owned; scalars only ("" for an empty one) */
    bool plain;             /* a scalar written without quotes (so it may be YAML null) */
    struct ts_ynode **kids; /* owned; sequence items, or map keys and values alternating */
    size_t n, cap;          /* kids in use and allocated */
} ts_ynode;

/* The deepest nesting any reader may ask for (the parser's stack is this deep). */
#define TS_YTREE_MAX_DEPTH 64

/* How a reader wants its YAML read. The readers' messages differ in small ways and each keeps
 * its own; a zeroed field is the plainer choice. */
typedef struct ts_ytree_opts {
    int max_depth;       /* collections nested deeper are refused; 1..TS_YTREE_MAX_DEPTH */
    bool depth_all;      /* a scalar inside max_depth collections is refused too, as
                            "yaml nested too deep" (else "yaml nested deeper than N levels") */
    const char *one_doc; /* borrowed: message for a second document; NULL lets a later document
                            replace the earlier one */
    bool detail;         /* libyaml's context ("while parsing ... at line L, col C") and reader
                            errors at their offset in "bad yaml" messages, anchors in alias ones */
    bool key_kind;       /* a collection used as a map key is named ("..., not a list") */
} ts_ytree_opts;

/* Parse one YAML text (len bytes, not NUL-terminated) into a tree; file names it in messages and
 * in every node (borrowed: it must outlive the tree). *root is the tree (owned by the caller) or
 * NULL for an empty stream; NULL too on failure. Errors: TS_EINPUT as `file:line:col: ...`
 * ("bad yaml: <libyaml's problem>" for YAML libyaml refuses; a document of more nodes than the
 * yaml_nodes limit of core/limit.h, at the first node past it), TS_ENOMEM. */
ts_status ts_ytree_parse(const char *file, const char *text, size_t len, const ts_ytree_opts *opts,
                         ts_ynode **root, ts_err *err);

/* A new node with no text and no kids, or NULL without memory. file is borrowed. */
ts_ynode *ts_ynode_create(ts_ykind kind, const char *file, int line, int col);
/* A new scalar holding a copy of text[0..len), or NULL without memory. file is borrowed. */
ts_ynode *ts_ynode_scalar(const char *file, int line, int col, const char *text, size_t len, bool plain);
/* Append kid to parent's kids; parent owns it after a success. 0, or -1 without memory (kid is
 * then still the caller's). */
int ts_ynode_add(ts_ynode *parent, ts_ynode *kid);
/* Free a node and everything under it; NULL is a no-op. */
void ts_ynode_destroy(ts_ynode *nd);

/* The value of key in map (borrowed from map), or NULL when map is NULL, not a map or has no
 * such key. The first of duplicate keys wins. */
const ts_ynode *ts_ynode_get(const ts_ynode *map, const char *key);
/* The first repeated key of a map, in document order: 1 with *dup the kid index of the key that
 * repeats an earlier one (the earliest such key) and *first the kid index of that earlier one; 0
 * when every key is unique or nd is not a map; -1 without memory. O(n log n) in the keys. */
int ts_ynode_first_dup(const ts_ynode *map, size_t *dup, size_t *first);
/* Whether nd is a plain scalar that YAML reads as null: nothing, "~" or "null" (any of YAML's
 * three spellings). */
bool ts_ynode_is_null(const ts_ynode *nd);
/* "a map", "a list" or "text", for messages like "expected ..., got a list". */
const char *ts_ynode_kind_name(const ts_ynode *nd);
/* Set err to TS_EINPUT at nd's file, line and column; returns TS_EINPUT. */
ts_status ts_ynode_err(ts_err *err, const ts_ynode *nd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
