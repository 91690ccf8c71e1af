/*
 * par.h -- a few independent calls at once, each on a thread of its own.
 *
 * For calls that wait more than they compute: creates made at once share
 * the store's group commit (one commit and its fsyncs for all of them, not
 * one each), as a start's default objects do. Thread-safe as fn is; no
 * state of its own.
 */
#ifndef KP_LIB_PAR_H
#define KP_LIB_PAR_H

#include <stddef.h>

/* Calls at most this many at once; the rest wait for the first ones. */
#define PAR_MAX 32

/* fn(arg, i) for every i in [0, n), at once, up to PAR_MAX at a time (on
 * this thread when no thread can be had); returns when all have returned. */
void par_each(size_t n, void (*fn)(void *arg, size_t i), void *arg);

#endif
