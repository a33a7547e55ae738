/* The node's compute processes as NVML counts them (processes.c states the rules,
 * process_scan.c reads them). */
#ifndef MOKKA_NVML_PROCESSES_H
#define MOKKA_NVML_PROCESSES_H

#include <stddef.h>

struct mock_gpu;
struct mock_node;

struct mock_process {
    unsigned int pid;                  /* as this process's PID namespace numbers it */
    unsigned long long used_bytes;     /* at most the GPU's total memory */
    const char *name;                  /* printable UTF-8 */
};

/* Called with the records' lock held: it must not call back into the records. */
typedef void (*each_process)(const struct mock_process *p, void *arg);

/* `each` for every listed process of GPU `g`'s records, this process's own first, at
 * most MOKKA_MAX_GPU_PROCESSES; returns how many. */
unsigned int mock_processes_each(const struct mock_gpu *g, each_process each, void *arg);
/* The bytes the records of GPU `g` count for, summed, at most its total memory. */
unsigned long long mock_processes_used(const struct mock_gpu *g);
/* 1 when some live record holds GPU `g` (this process's own, or another's, listed or not,
 * whatever bytes it claims): the GPU is in use. */
int mock_processes_hold(const struct mock_gpu *g);
/* 1 and the name of process `pid` (printable UTF-8, cut to `length` bytes with its NUL
 * on a character's boundary) when a record of a visible GPU lists it; 0 when none does. */
int mock_processes_name(const struct mock_node *node, unsigned int pid, char *name, size_t length);

#endif
