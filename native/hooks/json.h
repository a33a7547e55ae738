/* Just enough JSON for the OCI state and config.json: one string member of an object.
 * Bounded (nesting, lengths), and total: malformed input is an answer, never a crash. */
#ifndef MOKKA_HOOK_JSON_H
#define MOKKA_HOOK_JSON_H

#include <stddef.h>

/* The string value of member `key` of the top-level object: 1 found (decoded into out,
 * NUL-terminated), 0 absent or not a string, -1 malformed or too long for out. */
int json_string_member(const char *doc, size_t len, const char *key, char *out, size_t size);

/* The string value of member `inner` of the object value of top-level member `outer`. */
int json_nested_string(const char *doc, size_t len, const char *outer, const char *inner,
                       char *out, size_t size);

/* The value of the last "NAME=value" string of config.json's process.env array whose
 * name is `name` (the one the process gets): 1 found (decoded into out), 0 absent (or no
 * such array), -1 malformed (the whole array is read). An entry too long for out is not
 * that variable's. */
int json_process_env(const char *doc, size_t len, const char *name, char *out, size_t size);

#endif
