/* The node's compute processes as NVML counts them (processes.c). */
#ifndef MOKKA_NVML_PROCESSES_H
#define MOKKA_NVML_PROCESSES_H

struct mock_gpu;

/* The most compute processes one GPU lists. */
#define MOCK_PROCESS_MAX 256

struct mock_process {
    unsigned int pid;                  /* as this process's PID namespace numbers it, when it can */
    unsigned long long used_bytes;
    char name[256];
};

typedef void (*each_process)(const struct mock_process *p, void *arg);

/* `each` for every live record of GPU `g`, this process's own first; returns how many. */
unsigned int mock_processes_each(const struct mock_gpu *g, each_process each, void *arg);
/* The bytes they hold, summed (saturating). */
unsigned long long mock_processes_used(const struct mock_gpu *g);

#endif
