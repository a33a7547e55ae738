/* The public libibverbs ABI the mock verbs provider answers through: the
 * structures applications see (IBVERBS_1.0/1.1, unchanged since OFED 1.x), as
 * laid out on LP64 Linux. Written from the documented interface, not copied:
 * only what libibmockverbs fills in or hands back. */
#ifndef MOKKA_VERBS_ABI_H
#define MOKKA_VERBS_ABI_H

#include <pthread.h>
#include <stdint.h>

#define MOCK_IBV_SYSFS_NAME_MAX 64
#define MOCK_IBV_SYSFS_PATH_MAX 256

struct ibv_context;

struct ibv_device {
    struct {
        struct ibv_context *(*_dummy1)(struct ibv_device *device, int cmd_fd);
        void (*_dummy2)(struct ibv_context *context);
    } _ops;
    int node_type;                      /* enum ibv_node_type: 1, a CA */
    int transport_type;                 /* enum ibv_transport_type: 0, IB */
    char name[MOCK_IBV_SYSFS_NAME_MAX];
    char dev_name[MOCK_IBV_SYSFS_NAME_MAX];
    char dev_path[MOCK_IBV_SYSFS_PATH_MAX];
    char ibdev_path[MOCK_IBV_SYSFS_PATH_MAX];
};

/* struct ibv_context: the device, then the legacy ops table (32 pointers), the
 * fds, the mutex and abi_compat. A context of ours is handed out inside a
 * larger zeroed block, so abi_compat reads NULL ("not extended") and every
 * inline wrapper of verbs.h falls back to the exported functions below. */
#define MOCK_IBV_CONTEXT_OPS 32
struct ibv_context {
    struct ibv_device *device;
    void *ops[MOCK_IBV_CONTEXT_OPS];
    int cmd_fd;
    int async_fd;
    int num_comp_vectors;
    pthread_mutex_t mutex;
    void *abi_compat;
};

struct ibv_device_attr {
    char fw_ver[64];
    uint64_t node_guid;                 /* big-endian */
    uint64_t sys_image_guid;            /* big-endian */
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_ver;
    int max_qp;
    int max_qp_wr;
    unsigned int device_cap_flags;
    int max_sge;
    int max_sge_rd;
    int max_cq;
    int max_cqe;
    int max_mr;
    int max_pd;
    int max_qp_rd_atom;
    int max_ee_rd_atom;
    int max_res_rd_atom;
    int max_qp_init_rd_atom;
    int max_ee_init_rd_atom;
    int atomic_cap;
    int max_ee;
    int max_rdd;
    int max_mw;
    int max_raw_ipv6_qp;
    int max_raw_ethy_qp;
    int max_mcast_grp;
    int max_mcast_qp_attach;
    int max_total_mcast_qp_attach;
    int max_ah;
    int max_fmr;
    int max_map_per_fmr;
    int max_srq;
    int max_srq_wr;
    int max_srq_sge;
    uint16_t max_pkeys;
    uint8_t local_ca_ack_delay;
    uint8_t phys_port_cnt;
};

/* The exported ibv_query_port fills this much of struct ibv_port_attr (its
 * compat prefix); newer fields stay as the caller's inline wrapper zeroed them. */
struct mock_ibv_port_attr {
    int state;
    int max_mtu;
    int active_mtu;
    int gid_tbl_len;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint16_t pkey_tbl_len;
    uint16_t lid;
    uint16_t sm_lid;
    uint8_t lmc;
    uint8_t max_vl_num;
    uint8_t sm_sl;
    uint8_t subnet_timeout;
    uint8_t init_type_reply;
    uint8_t active_width;
    uint8_t active_speed;
    uint8_t phys_state;
    uint8_t link_layer;
    uint8_t flags;
};

union ibv_gid {
    uint8_t raw[16];
};

#endif
