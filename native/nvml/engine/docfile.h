/* The node's runtime documents the library itself writes (docfile.c): mig.nvml (../mig/)
 * and settings.nvml (settings.c). Lines of Mokka's companion format under a header
 * naming their kind and a digest of every line after it, so a truncated or edited
 * file is refused whole:
 *
 *     # mokka-nvml <kind> 1
 *     digest sha256:<hex of every line after this one>
 *     <key> <value>                 sorted by key as bytes, each key once
 *
 * Any process of the node, and every injected container, may write the directory:
 * reading never follows a link, never opens a FIFO or a device, never reads past a
 * bound; writing goes through a temp file renamed over the document, under the
 * directory's flock taken with a bounded wait. */
#ifndef MOKKA_NVML_DOCFILE_H
#define MOKKA_NVML_DOCFILE_H

#include <stddef.h>

/* The longest line a document of this format holds. */
#define DOCFILE_LINE_MAX 256

/* What docfile_read and docfile_write answer besides NULL (success) and a reason. */
extern const char DOCFILE_ABSENT[];
extern const char DOCFILE_NO_PERMISSION[];

/* `name` in directory `dirfd`, at most `max` bytes (`max_text` says it in words): NULL
 * and *text (malloc'd, NUL-terminated), DOCFILE_ABSENT, or why it cannot be read. */
const char *docfile_read(int dirfd, const char *name, size_t max, const char *max_text, char **text,
                         size_t *len);

/* One "<key> <value>" line of a document: NULL, or what the line holds that it may not. */
typedef const char *(*docfile_line)(const char *key, const char *value, void *ctx);

/* The text of a document of `kind` (text is cut up), each line handed to `line`: NULL, or
 * what is wrong with it, to follow "it" ("has no digest line"), or with *holds set what
 * `line` said a line holds. */
const char *docfile_parse(char *text, size_t len, const char *kind, docfile_line line, void *ctx, int *holds);

/* Digits only, at most `max`: 1 and *out. */
int docfile_number(const char *s, size_t len, unsigned long long max, unsigned int *out);
/* "<a><sep>" at *p: the number, *p past the separator (sep '\0': to the end). */
int docfile_field(const char **p, char sep, unsigned long long max, unsigned int *out);

/* `n` lines of at most DOCFILE_LINE_MAX bytes as a document of `kind` named `name` in
 * `dirfd` (sorted here): a temp file beside it, then a rename. NULL, or why not. */
const char *docfile_write(int dirfd, const char *name, const char *kind, char (*lines)[DOCFILE_LINE_MAX],
                          size_t n, size_t max);

/* The directory's flock within `wait_ms`: 1, else 0 (a workload may hold it). */
int docfile_lock(int dirfd, int wait_ms);

#endif
