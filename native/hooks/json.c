/* Just enough JSON: a cursor over a document, skipping values it does not want. */
#include "json.h"

#include <string.h>

#define DEPTH_MAX 64

struct cursor {
    const char *p, *end;
};

static void blank(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hex(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* A string at the cursor, decoded into out (NULL: skipped). -1 malformed or too long. */
static int string(struct cursor *c, char *out, size_t size)
{
    size_t n = 0;
    if (c->p >= c->end || *c->p != '"')
        return -1;
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') {
            if (out)
                out[n] = '\0';
            return 0;
        }
        if (ch < 0x20)
            return -1;
        unsigned code = ch;
        if (ch == '\\') {
            if (c->p >= c->end)
                return -1;
            char e = *c->p++;
            switch (e) {
            case '"': case '\\': case '/': code = (unsigned char)e; break;
            case 'b': code = '\b'; break;
            case 'f': code = '\f'; break;
            case 'n': code = '\n'; break;
            case 'r': code = '\r'; break;
            case 't': code = '\t'; break;
            case 'u':
                if (c->end - c->p < 4)
                    return -1;
                code = 0;
                for (int i = 0; i < 4; i++) {
                    int h = hex(*c->p++);
                    if (h < 0)
                        return -1;
                    code = code << 4 | (unsigned)h;
                }
                if (code == 0 || (code >= 0xD800 && code <= 0xDFFF))
                    return -1;               /* no NUL in a path; no surrogate pairs needed */
                break;
            default:
                return -1;
            }
        }
        char bytes[3];
        size_t k = 0;
        if (ch == '\\' && code >= 0x80) {   /* an escaped code point: UTF-8 */
            if (code < 0x800) {
                bytes[k++] = (char)(0xC0 | code >> 6);
            } else {
                bytes[k++] = (char)(0xE0 | code >> 12);
                bytes[k++] = (char)(0x80 | (code >> 6 & 0x3F));
            }
            bytes[k++] = (char)(0x80 | (code & 0x3F));
        } else {
            bytes[k++] = (char)code;
        }
        if (out) {
            if (n + k >= size)
                return -1;
            memcpy(out + n, bytes, k);
        }
        n += k;
    }
    return -1;
}

static int value(struct cursor *c, int depth);

/* An object or array at the cursor, skipped. */
static int container(struct cursor *c, int depth)
{
    char close = *c->p == '{' ? '}' : ']';
    int object = close == '}';
    if (depth >= DEPTH_MAX)
        return -1;
    c->p++;
    blank(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        if (object) {
            blank(c);
            if (string(c, NULL, 0) != 0)
                return -1;
            blank(c);
            if (c->p >= c->end || *c->p++ != ':')
                return -1;
        }
        if (value(c, depth + 1) != 0)
            return -1;
        blank(c);
        if (c->p >= c->end)
            return -1;
        char ch = *c->p++;
        if (ch == close)
            return 0;
        if (ch != ',')
            return -1;
    }
}

static int word(struct cursor *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

static int value(struct cursor *c, int depth)
{
    blank(c);
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '"':
        return string(c, NULL, 0);
    case '{': case '[':
        return container(c, depth);
    case 't':
        return word(c, "true");
    case 'f':
        return word(c, "false");
    case 'n':
        return word(c, "null");
    default:
        if (*c->p != '-' && (*c->p < '0' || *c->p > '9'))
            return -1;
        c->p++;
        while (c->p < c->end && strchr("0123456789+-.eE", *c->p) && *c->p)
            c->p++;
        return 0;
    }
}

/* Moves the cursor, at an object, to the value of member `key`: 1 found, 0 absent, -1 malformed. */
static int member(struct cursor *c, const char *key)
{
    char name[256];
    blank(c);
    if (c->p >= c->end || *c->p != '{')
        return -1;
    c->p++;
    blank(c);
    if (c->p < c->end && *c->p == '}')
        return 0;
    for (;;) {
        blank(c);
        struct cursor at = *c;
        int fits = string(c, name, sizeof name) == 0;
        if (!fits) {                         /* a longer name than any key: skip it */
            *c = at;
            if (string(c, NULL, 0) != 0)
                return -1;
        }
        blank(c);
        if (c->p >= c->end || *c->p++ != ':')
            return -1;
        blank(c);
        if (fits && strcmp(name, key) == 0)
            return 1;
        if (value(c, 1) != 0)
            return -1;
        blank(c);
        if (c->p >= c->end)
            return -1;
        char ch = *c->p++;
        if (ch == '}')
            return 0;
        if (ch != ',')
            return -1;
    }
}

static int string_at(struct cursor *c, char *out, size_t size)
{
    if (c->p >= c->end || *c->p != '"')
        return 0;
    return string(c, out, size) == 0 ? 1 : -1;
}

int json_string_member(const char *doc, size_t len, const char *key, char *out, size_t size)
{
    struct cursor c = {doc, doc + len};
    int found = member(&c, key);
    return found == 1 ? string_at(&c, out, size) : found;
}

int json_nested_string(const char *doc, size_t len, const char *outer, const char *inner,
                       char *out, size_t size)
{
    struct cursor c = {doc, doc + len};
    int found = member(&c, outer);
    if (found != 1)
        return found;
    blank(&c);
    if (c.p >= c.end || *c.p != '{')
        return 0;
    found = member(&c, inner);
    return found == 1 ? string_at(&c, out, size) : found;
}

int json_process_env(const char *doc, size_t len, const char *name, char *out, size_t size)
{
    struct cursor c = {doc, doc + len};
    int found = member(&c, "process");
    if (found != 1)
        return found;
    blank(&c);
    if (c.p >= c.end || *c.p != '{')
        return 0;
    found = member(&c, "env");
    if (found != 1)
        return found;
    blank(&c);
    if (c.p >= c.end || *c.p != '[')
        return 0;
    c.p++;
    size_t name_len = strlen(name);
    blank(&c);
    if (c.p < c.end && *c.p == ']')
        return 0;
    /* The last entry of the name is the one the process gets (runc, like Go's os/exec,
     * keeps the last of a repeated key): the walk goes to the end, then decodes that one. */
    struct cursor last = c;
    int matched = 0;
    for (;;) {
        blank(&c);
        if (c.p >= c.end)
            return -1;
        if (*c.p == '"') {
            struct cursor at = c;
            int fits = string(&c, out, size) == 0;
            if (!fits) {                     /* longer than out: not the variable asked for */
                c = at;
                if (string(&c, NULL, 0) != 0)
                    return -1;
            } else if (strncmp(out, name, name_len) == 0 && out[name_len] == '=') {
                last = at;
                matched = 1;
            }
        } else if (value(&c, 1) != 0) {
            return -1;
        }
        blank(&c);
        if (c.p >= c.end)
            return -1;
        char ch = *c.p++;
        if (ch == ']')
            break;
        if (ch != ',')
            return -1;
    }
    if (!matched)
        return 0;
    if (string(&last, out, size) != 0)
        return -1;
    memmove(out, out + name_len + 1, strlen(out + name_len + 1) + 1);
    return 1;
}
