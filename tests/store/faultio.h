/*
 * faultio.h -- fail the Nth write or sync call on demand (tests only).
 *
 * faultio.c defines pwrite, pwrite64, write, writev, pwritev, fsync, fdatasync
 * and msync in the test executable. The executable's definitions come first in
 * symbol lookup, so liblmdb.so (and the store, linked statically) call them
 * instead of libc's; each one passes through to the real call (dlsym
 * RTLD_NEXT) unless it is the armed one. Write calls count only when the fd is
 * a regular file, so test output on pipes and terminals never fires a fault.
 *
 * A failed call does no I/O at all: it returns -1 with errno set, as if the
 * kernel had refused it. All functions are safe from any thread.
 */
#ifndef KP_TEST_FAULTIO_H
#define KP_TEST_FAULTIO_H

enum {
    FAULTIO_WRITE = 1, /* pwrite, pwrite64, write, writev, pwritev (regular files) */
    FAULTIO_SYNC = 2,  /* fsync, fdatasync, msync */
};

/* Start counting the calls of `kinds` (a FAULTIO_* mask) from zero and make
 * call number `nth` (1-based) fail with `err` (an errno value). Only that one
 * call fails; the ones after it pass through. nth <= 0 only counts. */
void faultio_arm(unsigned kinds, long nth, int err);

/* Stop failing and counting. faultio_count() keeps its value. */
void faultio_disarm(void);

/* Calls of the armed kinds since the last faultio_arm(); the armed fault has
 * fired iff this is >= nth. */
long faultio_count(void);

#endif
