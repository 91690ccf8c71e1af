/*
 * faultio.h -- fail the Nth write or sync call on demand (tests only).
 *
 * faultio.c defines pwrite, pwrite64, write, writev, pwritev, fsync, fdatasync,
 * msync, fallocate and fstatvfs in the test executable. The executable's definitions come first in
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

/* A full disk, on (1) or off (0), independent of faultio_arm(): a write to a
 * regular file succeeds as far as the file's current size (overwriting, as
 * on tmpfs) and no further: a write that would extend it is cut short there
 * (as the kernel does when the disk fills mid-write) or, if no byte fits,
 * fails with ENOSPC. fallocate fails with ENOSPC and statvfs/fstatvfs report
 * no free block. faultio_full_hits() counts the writes it cut or failed. */
void faultio_full(int on);
long faultio_full_hits(void);

#endif
