/*
 * jsonspan.h -- finding members in JSON text without parsing it: the spans
 * of a top-level object's members, for code that splices or slices encoded
 * objects (the watch cache's resourceVersion, metadata-only views). The text
 * must be valid JSON (it was encoded by us or checked before): these scan,
 * they do not validate. Pure functions, any thread.
 */
#ifndef KP_JSONSPAN_H
#define KP_JSONSPAN_H

/* p past whitespace (at most to end). */
const char *jspan_ws(const char *p, const char *end);

/* Past the JSON value at p, or NULL: strings whole, arrays and objects by
 * their brackets (strings inside skipped whole), scalars to the next
 * delimiter. */
const char *jspan_value(const char *p, const char *end);

/* In the JSON object whose text starts at p (whitespace first is fine), the
 * member `name` (a key needing no escapes): its key's opening quote in *kb
 * (kb may be NULL) and its value's span [*vb, *ve). 0, or -1 when it is
 * absent or p is not an object. Only the object's own members are looked
 * at, never nested ones. */
int jspan_member(const char *p, const char *end, const char *name, const char **kb,
                 const char **vb, const char **ve);

#endif
