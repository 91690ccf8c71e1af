/*
 * lab_int.h -- what the files of src/lab share beyond lab.h:
 *   - the text of tables and of the `@lab` event lines (lab_text.c): pure
 *     functions, checked byte for byte by tests/lab/test_lab.c; each
 *     appends to a caller's buf_t (lib/buf.h) and keeps no pointer to its
 *     arguments; errors are the buf_t's (KP_ETOOLARGE at its cap,
 *     KP_ENOMEM), after which the buffer holds part of the text;
 *   - reading objects and waiting for the cluster (lab_kit.c), for the
 *     labs: the readers are pure (any thread), the waits are the lab's
 *     thread's and say why they fail through lab_say.
 */
#ifndef KP_LAB_INT_H
#define KP_LAB_INT_H

#include <jansson.h>
#include <stddef.h>

#include "lab/lab.h"
#include "lib/buf.h"

/* `s` as a JSON string, quotes included: '"', '\\' and the bytes below 0x20
 * and 0x7f escaped (\n, \t, \r, \b, \f, else \u00XX); other bytes (UTF-8)
 * as they are. NULL is "". */
int lab__json_str(buf_t *b, const char *s);

/* The machine lines, each "@lab {...}\n" (lab.h, OUTPUT): */
int lab__event_say(buf_t *b, const char *text);
int lab__event_table(buf_t *b, const char *title, const char *const *cols, size_t ncols);
int lab__event_row(buf_t *b, const char *const *cells, size_t ncells);
int lab__event_end(buf_t *b, const char *title);
/* {"done":1} or {"done":0,"error":"..."} (error NULL: "failed"). */
int lab__event_done(buf_t *b, int ok, const char *error);

/* How wide `s` prints: its UTF-8 code points (continuation bytes do not
 * count). NULL is 0. */
size_t lab__text_width(const char *s);

/* A table as aligned text: "TITLE\n", the column names, a rule of '-' under
 * each, then one line per row; columns two spaces apart, each as wide as its
 * widest cell, the last one not padded (no trailing spaces). `cells` holds
 * nrows * ncols strings, row after row (NULL prints as ""). */
int lab__table_text(buf_t *b, const char *title, const char *const *cols, size_t ncols,
                    const char *const *cells, size_t nrows);

/* ---- a run (lab.c) ---- */

/* Run one lab as `kplane lab run` does (lab_main calls it): its exit
 * status (0, 1, or 130 after SIGINT/SIGTERM, when the process ends there).
 * kplane: the binary the lab starts as lab_kplane(); NULL: this process's
 * own (/proc/self/exe). Tests run labs of their own with the kplane they
 * built. The lab's thread; one run at a time per process. */
int lab__run(const lab_def_t *def, int keep, const char *kplane);

/* ---- reading objects (lab_kit.c; pure, any thread) ---- */

/* The string at a dotted path ("metadata.name") of o; "" when absent or not
 * a string. Borrowed from o. */
const char *lab__jstr(const json_t *o, const char *path);
/* The integer at a dotted path, also from a decimal string
 * ("metadata.resourceVersion"); dflt when absent or neither. */
long long lab__jint(const json_t *o, const char *path, long long dflt);
/* The ownerReference of obj with controller: true (borrowed), or NULL. */
const json_t *lab__controller_ref(const json_t *obj);

/* ---- waiting for the cluster (lab_kit.c; the lab's thread) ---- */

/* 1 when Deployment ns/name has `replicas` (its spec's when < 0) updated,
 * available and in total for its current generation, else 0; why (may be
 * NULL) gets the status read. Errors: kc_get's. */
int lab__deployment_converged(kc_client_t *c, const char *ns, const char *name, int replicas,
                              char *why, size_t size);
/* Wait until Deployment ns/name has `replicas` (its spec's when < 0)
 * updated, available and in total, for its current generation; *ms: how
 * long it took. Polls every 50 ms. KP_ETIMEDOUT after timeout_ms (said,
 * with the status last seen); other errors of kc_get. */
int lab__wait_deployment(lab_t *lab, kc_client_t *c, const char *ns, const char *name, int replicas,
                         int timeout_ms, double *ms);
/* Wait until the object exists (a namespace's default ServiceAccount, which
 * pods need). KP_ETIMEDOUT after timeout_ms (said). */
int lab__wait_object(lab_t *lab, kc_client_t *c, const kc_resource_t *r, const char *ns,
                     const char *name, int timeout_ms);
/* Wait until `n` nodes are Ready. KP_ETIMEDOUT after timeout_ms (said). */
int lab__wait_nodes(lab_t *lab, kc_client_t *c, int n, int timeout_ms);

#endif
