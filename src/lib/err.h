/*
 * err.h -- the one error convention of kplane.
 *
 * Every fallible call returns an `int rc`: 0 on success or one of the negative
 * codes below. Results come back through out-parameters. err_str() gives the
 * text; exactly one table (in the API server) maps codes to HTTP status.
 */
#ifndef KP_ERR_H
#define KP_ERR_H

enum {
    KP_OK = 0,
    KP_ENOMEM = -1,       /* an allocation failed */
    KP_EINVAL = -2,       /* a bad argument: empty key, key too long, ... */
    KP_ENOTFOUND = -3,    /* the key (or object) does not exist */
    KP_EEXIST = -4,       /* create of a key that exists */
    KP_ECONFLICT = -5,    /* expected mod_revision differs from the stored one */
    KP_ECOMPACTED = -6,   /* the revision asked for was compacted away */
    KP_EFUTURE = -7,      /* the revision asked for is newer than the store's */
    KP_EIO = -8,          /* an I/O call failed; nothing was acknowledged */
    KP_ENOSPC = -9,       /* the disk or the store's map is full */
    KP_EPOISONED = -10,   /* an earlier write failed half-way; reopen first */
    KP_ECLOSED = -11,     /* the handle was closed or cancelled */
    KP_ETIMEDOUT = -12,   /* nothing happened within the time asked for */
    KP_ETOOLARGE = -13,   /* a value or request is over its documented cap */
    KP_EUNAVAILABLE = -14, /* a backend cannot be reached */
    KP_ECORRUPT = -15,    /* stored data does not have the expected form */
    KP_EBUSY = -16,       /* the resource is in use */
    KP_EAGAIN = -17,      /* nothing yet: ask again (a producer with nothing to send) */
};

/* Text for an rc (never NULL; static storage). */
const char *err_str(int rc);

#endif
