/*
 * gc_int.h -- the pure part of the garbage collector (garbagecollector.c):
 * how an object's owners are classified, what the collector then does, and
 * the patches it sends. No API, no caches: tests/controllers/test_gc.c calls
 * these directly. JSON arguments are borrowed and read-only; returned JSON
 * is the caller's (json_decref).
 */
#ifndef KP_GC_INT_H
#define KP_GC_INT_H

#include <jansson.h>
#include <stddef.h>

#include "client/informer.h"

#define GC_FIN_ORPHAN     "orphan"
#define GC_FIN_FOREGROUND "foregroundDeletion"

/* What an ownerReference points at, after a look in the caches and, when
 * the cache does not have it, a live GET (name and uid compared). */
typedef enum gc_owner_state {
    GC_OWNER_SOLID = 0, /* there, and not waiting for its dependents */
    GC_OWNER_DANGLING,  /* gone (or another object under that name) */
    GC_OWNER_WAITING,   /* there, deleted in the foreground: waits for its dependents */
} gc_owner_state_t;

/* What to do with a dependent, given its owners' states (Kubernetes'
 * attemptToDeleteItem). */
typedef enum gc_action {
    GC_KEEP = 0,    /* every owner solid (or no owners) */
    GC_REMOVE_REFS, /* a solid owner remains: drop the refs to dangling and waiting ones */
    GC_DELETE_FG,   /* a waiting owner and dependents of its own: delete in the foreground */
    GC_DELETE,      /* no solid owner: delete (policy from its own finalizers) */
} gc_action_t;

gc_action_t gc_decide(const gc_owner_state_t *states, size_t n, int has_dependents);

/* Is `fin` in obj's metadata.finalizers? */
int gc_has_finalizer(const json_t *obj, const char *fin);
/* Is obj deleted in the foreground (deletionTimestamp and foregroundDeletion)? */
int gc_deleting_dependents(const json_t *obj);
/* The propagationPolicy for deleting obj when no owner waits for it: its
 * own GC finalizer's, else "Background". */
const char *gc_policy_of(const json_t *obj);
/* Does dep's ownerReference to owner_uid have blockOwnerDeletion true? */
int gc_blocks(const json_t *dep, const char *owner_uid);

/* Index function "gc-owners": the uids of every ownerReference. */
size_t gc_index_owners(const json_t *obj, char vals[][KC_INDEX_VALUE_MAX], size_t max);

/* A strategic merge patch dropping the ownerReferences with these uids from
 * the object whose uid is dep_uid (the uid makes it a precondition). */
json_t *gc_patch_drop_refs(const char *dep_uid, const char *const *uids, size_t n);
/* A strategic merge patch setting blockOwnerDeletion false on these refs. */
json_t *gc_patch_unblock(const char *dep_uid, const char *const *uids, size_t n);
/* A merge patch of obj's finalizers without `fin`, conditional on obj's
 * resourceVersion. */
json_t *gc_patch_drop_finalizer(const json_t *obj, const char *fin);

#endif
